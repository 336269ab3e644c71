"""Overview: what the store holds, and for the selected dataset its models, judges, languages and coverage.

dataset selector → core.app.overview.overview → Store.info / models_frame / pair_coverage
                 → core.charts.coverage_heatmap
"""

from functools import partial

import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import display as show
from core.app import overview
from core.app.availability import ADD_VOTES, RUN_JUDGE

st.title("Overview")


def load_overview(dataset: str) -> overview.Overview:
    return load_result(overview.overview, dataset)


with page_guard("The overview"):
    ctx = require_selection()
    ov = load_overview(ctx.dataset)
    info = ov.info
    c = st.columns(6)
    c[0].metric("Models", info["n_models"])
    c[1].metric("Battles", f"{info['n_battles']:,}")
    c[2].metric("Human votes", f"{info['n_human_votes']:,}")
    c[3].metric("Annotators", info["n_annotators"])
    c[4].metric("Prompts", info["n_prompts"])
    c[5].metric("Judges", len(info["judges"]))
    if info["n_human_votes"] == 0:
        notice(
            "this dataset has no human votes: human Elo, τ calibration and conformal intervals need them. "
            "Judge-only views (Hard-Elo, bias, consistency) still work.",
            fix=ADD_VOTES,
        )
    if not info["judges"]:
        notice("no judge has judged this dataset yet.", fix=RUN_JUDGE)

    with st.expander(f"Datasets in the store ({len(ov.datasets)})", expanded=len(ov.datasets) > 1):
        show_table(
            show.columns(ov.datasets, extra={"name": "dataset"}),
            hide_index=True,
            width="stretch",
        )

    left, right = st.columns([1, 1])
    with left:
        st.subheader("Models")
        models = show.columns(ov.models)
        if models[show.header("true_elo")].isna().all():
            models = models.drop(columns=[show.header("true_elo")])
        show_table(
            models,
            hide_index=True,
            width="stretch",
            column_config={
                show.header("true_elo"): st.column_config.NumberColumn(
                    format="%.0f",
                    help="the Bradley–Terry Elo an unlimited crowd of the simulated annotators would give on these "
                    "battles: exactly what the human fit estimates (the latent strength behind the answers is "
                    "about twice as spread)",
                )
            },
        )
    with right:
        st.subheader("Judges")
        if ov.judges.empty:
            st.caption("No judgments in this dataset yet.")
        else:
            j = ov.judges[["judge", "family", "template", "n_judgments", "orders", "n_parse_errors"]].copy()
            j["orders"] = j["orders"].map(lambda o: ", ".join(o))
            show_table(
                show.columns(j),
                hide_index=True,
                width="stretch",
            )
        st.subheader("Languages")
        if ov.languages.empty:
            st.caption("No battles.")
        else:
            show_chart(
                partial(
                    charts.count_bars,
                    ov.languages.head(20),
                    "language",
                    "n_battles",
                    "Battles per language",
                    "prompt language",
                    "battles (count)",
                ),
                key="languages",
                how_to_read="each bar counts the battles whose prompt is in that language (top 20).",
            )

    st.subheader("Battle-graph coverage")
    if ov.pairs.empty:
        notice("no battles in this dataset.")
    else:
        show_chart(
            partial(charts.coverage_heatmap, ov.pairs, sorted(ov.models["model"])),
            key="coverage",
            how_to_read="each cell counts battles between two models (hover for the number); blank cells "
            "are pairs never compared. Bradley–Terry needs a connected graph, not a full one.",
        )
