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

st.title("Overview")
TRUE_ELO_HELP = (
    "the Bradley–Terry Elo an unlimited crowd of the simulated annotators would give on these battles: exactly "
    "what the human fit estimates (the latent strength behind the answers is about twice as spread)"
)


def load_overview(dataset: str) -> overview.Overview:
    return load_result(overview.overview, dataset)


def counts(ov: overview.Overview) -> None:
    """The dataset's counts across the top, then what it lacks for some pages."""
    for column, (label, value) in zip(st.columns(6), overview.headline(ov), strict=True):
        column.metric(label, value)
    for text, fix in overview.missing(ov):
        notice(text, fix=fix)
    with st.expander(f"Datasets in the store ({len(ov.datasets)})", expanded=len(ov.datasets) > 1):
        show_table(show.columns(ov.datasets, extra={"name": "dataset"}), hide_index=True, width="stretch")


def models_section(ov: overview.Overview) -> None:
    st.subheader("Models")
    true_elo = show.header("true_elo")
    show_table(
        show.columns(overview.models_table(ov)),
        hide_index=True,
        width="stretch",
        column_config={true_elo: st.column_config.NumberColumn(format="%.0f", help=TRUE_ELO_HELP)},
    )


def judges_and_languages(ov: overview.Overview) -> None:
    st.subheader("Judges")
    if ov.judges.empty:
        st.caption("No judgments in this dataset yet.")
    else:
        show_table(show.columns(overview.judges_table(ov)), hide_index=True, width="stretch")
    st.subheader("Languages")
    if ov.languages.empty:
        st.caption("No battles.")
        return
    bars = partial(
        charts.count_bars,
        ov.languages.head(20),
        "language",
        "n_battles",
        "Battles per language",
        "prompt language",
        "battles (count)",
    )
    how = "each bar counts the battles whose prompt is in that language (top 20)."
    show_chart(bars, key="languages", how_to_read=how)


def coverage_section(ov: overview.Overview) -> None:
    st.subheader("Battle-graph coverage")
    if ov.pairs.empty:
        notice("no battles in this dataset.")
        return
    show_chart(
        partial(charts.coverage_heatmap, ov.pairs, sorted(ov.models["model"])),
        key="coverage",
        how_to_read="each cell counts battles between two models (hover for the number); blank cells "
        "are pairs never compared. Bradley–Terry needs a connected graph, not a full one.",
    )


with page_guard("The overview"):
    ov = load_overview(require_selection().dataset)
    counts(ov)
    left, right = st.columns([1, 1])
    with left:
        models_section(ov)
    with right:
        judges_and_languages(ov)
    coverage_section(ov)
