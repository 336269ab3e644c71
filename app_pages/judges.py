"""Judges & annotators: judge consistency vs judge Elo, am-ELO annotator abilities, online-Elo instability.

δ slider        → core.app.app_judges.annotator_abilities → Store.votes_frame → core.charts.annotator_abilities
shuffles slider → core.app.app_judges.shuffle_study       → Store.votes_frame → core.charts.shuffle_instability
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import Unavailable
from core.app import display as show
from core.app import judges as app_judges
from core.app.availability import ADD_VOTES
from core.app.judges import AgreementFigure
from core.app.precompute import AMELO_MIN_RECORDS, SHUFFLES
from core.app.safe_text import escape_markdown as esc

st.title("Judges & annotators")


def load_judge_elo(dataset: str) -> app_judges.JudgeElo | Unavailable:
    return load_result(app_judges.judge_arena_elo, dataset)


def load_consistency(dataset: str, judge_elo: pd.Series | None) -> app_judges.ConsistencyStudy | Unavailable:
    with st.spinner("Scoring judge consistency…"):
        return load_result(app_judges.consistency_study, dataset, judge_elo)


def load_agreement(dataset: str, judge: str) -> dict[str, AgreementFigure] | Unavailable:
    return load_result(app_judges.human_agreement, dataset, judge)


def load_amelo(dataset: str, min_records: int) -> pd.DataFrame | Unavailable:
    with st.spinner("Fitting am-ELO…"):
        return load_result(app_judges.annotator_abilities, dataset, min_records)


def load_shuffles(dataset: str, n: int) -> app_judges.ShuffleStudy | Unavailable:
    with st.spinner("Replaying online Elo in shuffled orders…"):
        return load_result(app_judges.shuffle_study, dataset, n)


def n_votes(dataset: str) -> tuple[int, int]:
    # persisted: counting 3M votes and their distinct annotators takes 0.2 s of a first visit
    return load_result(app_judges.vote_counts, dataset)


with page_guard("The judges & annotators page", page="judges"):
    ctx = require_selection()
    dataset = ctx.dataset

    # --------------------------------------------------------- consistency
    st.subheader("Judge consistency vs judge Elo")
    known = load_judge_elo(dataset)
    elo, elo_source = (None, None) if isinstance(known, Unavailable) else known
    with st.expander("Use other judge Elo values (CSV with columns judge, arena_elo)", expanded=False):
        upload = st.file_uploader("Judges' own arena Elo", type="csv", key="judge_elo_csv")
    if upload is not None:
        try:
            elo, elo_source = app_judges.read_judge_elo(upload, upload.name)
        except ValueError as exc:
            st.warning(esc(f"{exc}."))
    cs = load_consistency(dataset, elo)
    if isinstance(cs, Unavailable):
        notice(cs.reason)
    else:
        judges = cs.judges
        with_elo = judges.dropna(subset=["arena_elo"]) if "arena_elo" in judges else judges.iloc[0:0]
        if len(with_elo) >= 3 and pd.notna(cs.pearson_r):
            show_chart(
                partial(charts.consistency_vs_elo, with_elo, cs.slope, cs.intercept, cs.pearson_r),
                key="consistency_elo",
                how_to_read="each point is a judge; the dashed line is the least-squares fit. If more "
                "consistent judges (same winner for the same matchup) are stronger models, "
                f"consistency is a cheap proxy for Elo. Judge Elo from {esc(elo_source)}; "
                f"line MAE {cs.elo_mae:.1f} Elo in-sample, {cs.elo_mae_loo:.1f} leaving each "
                "judge out.",
            )
        else:
            if len(with_elo) < 3:
                notice(
                    "The judges' own arena Elo is known for fewer than three of them, so consistency is shown "
                    "alone. Upload a CSV (judge, arena_elo) above to correlate the two."
                )
            show_chart(
                partial(charts.consistency_bars, judges),
                key="consistency_bars",
                how_to_read="consistency = 1 − 4 × the contest-weighted variance of each matchup's outcome "
                "(METHODS §8): 1 means the judge always picks the same winner for a matchup.",
            )
        cols = [
            c
            for c in ("judge", "consistency", "arena_elo", "predicted_elo", "n_contests", "first_position_win_rate")
            # a column with no value at all (no judge's arena Elo is known) says nothing: left out, not "None"
            if c in judges and judges[c].notna().any()
        ]
        show_table(
            judges[cols].sort_values("consistency", ascending=False),
            hide_index=True,
            width="stretch",
            column_config={
                "judge": st.column_config.TextColumn("Judge"),
                "consistency": st.column_config.NumberColumn("Consistency", format="%.3f"),
                "n_contests": st.column_config.NumberColumn(
                    "Contests", help="the judge's verdicts (contests) that enter its consistency", format="%d"
                ),
                "arena_elo": st.column_config.NumberColumn("arena Elo", format="%.0f"),
                "predicted_elo": st.column_config.NumberColumn("Elo predicted from consistency", format="%.0f"),
                "first_position_win_rate": st.column_config.NumberColumn("first-position win rate", format="%.3f"),
            },
        )

    # ------------------------------------------------------- agreement with humans
    if ctx.judge is not None:
        st.subheader(f"Agreement of {esc(ctx.judge)} with the human votes")
        agreement = load_agreement(dataset, ctx.judge)
        if isinstance(agreement, Unavailable):
            notice(agreement.reason)
        else:
            show_table(app_judges.agreement_table(agreement), hide_index=True, width="stretch")
            st.caption(
                "The MT-Bench paper's two setups (vote level, with and without ties) beside the battle-level figure "
                "on unanimous human votes; each counts different pairs, so the three differ on the same data."
            )

    total_votes, n_annotators = n_votes(dataset)
    # --------------------------------------------------------------- am-ELO
    st.subheader("Annotator reliability (am-ELO)")
    if total_votes == 0 or n_annotators == 0:
        notice(
            "no human votes with annotator ids: am-ELO estimates each annotator's ability from who voted what.",
            fix=f"votes that name their annotator: {ADD_VOTES} (each voter is named there)",
        )
    else:
        min_records = st.slider(
            "minimum votes per annotator (δ)",
            10,
            200,
            AMELO_MIN_RECORDS,
            step=10,
            key="amelo_delta",
            help="Annotators with fewer votes are left out of the fit (am-ELO's δ).",
        )
        ann = load_amelo(dataset, min_records)
        if isinstance(ann, Unavailable):
            st.warning(esc(ann.reason))
        else:
            kept = ann[~ann["excluded"]]
            n_reliable = int((kept["status"] == "reliable").sum())
            show_chart(
                partial(charts.annotator_abilities, ann),
                key="amelo",
                how_to_read=(
                    f"the {n_reliable:,} reliable annotators are drawn as a density (the darker a cell, the more "
                    "of them voted about that often with about that ability; as points they would only cover each "
                    "other, and the CSV below lists each with its interval); each flagged annotator is a point "
                    "with its 95% interval"
                    if n_reliable > charts.WEBGL_ABOVE
                    else "each point is an annotator with its 95% interval"
                )
                + "; ability says how strongly their votes "
                "follow the consensus ranking (1 = average). Entirely below zero: they vote against it "
                "(adversarial, orange ×); straddling zero: their votes carry no information about the "
                "ranking (uninformative, grey ◆); the paper's rule flags ability ≤ 0.",
            )
            c1, c2, c3 = st.columns(3)
            c1.metric(
                "adversarial", int((kept["status"] == "adversarial").sum()), help="ability significantly below zero"
            )
            c2.metric(
                "uninformative",
                int((kept["status"] == "uninformative").sum()),
                help="ability indistinguishable from zero given the annotator's votes",
            )
            c3.metric(
                "anomalous (paper's rule, ability ≤ 0)",
                f"{int(kept['anomalous'].sum())} of {len(kept)}",
                help=f"{int(ann['excluded'].sum())} annotators with fewer than {min_records} votes left out",
            )
            if truth := app_judges.annotator_truth_caption(kept):
                st.caption(truth)
            st.download_button(
                "Annotator abilities (CSV)",
                lambda: app_judges.annotator_table(kept).to_csv(index=False),
                f"annotator_abilities_{dataset}.csv",
                "text/csv",
                key="amelo_csv",
                icon=":material/download:",
            )

    # ------------------------------------------------------- online Elo
    st.subheader("Online Elo instability")
    if total_votes == 0:
        notice("no human votes to replay.", fix=ADD_VOTES)
    else:
        n = st.select_slider("shuffled battle orders", [20, 50, 100], value=SHUFFLES, key="shuffles")
        study = load_shuffles(dataset, n)
        if isinstance(study, Unavailable):
            notice(study.reason)
            st.stop()
        show_chart(
            partial(charts.shuffle_instability, study.frame),
            key="shuffles_chart",
            how_to_read=f"online Elo (K = 4) replayed in {n} random orders of the same votes moves each model "
            f"by {study.online_spread:.1f} Elo on average (sd; bars span min–max); the "
            f"maximum-likelihood fit (m-ELO) {show.movement(study.mle_spread)}.",
        )
        if (said := study.statement()) is not None:
            st.caption(said)
