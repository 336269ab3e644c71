"""Judges & annotators: judge consistency vs judge Elo, am-ELO annotator abilities, online-Elo instability.

δ slider        → core.app.app_judges.annotator_abilities → Store.votes_frame → core.charts.annotator_abilities
shuffles slider → core.app.app_judges.shuffle_study       → Store.votes_frame → core.charts.shuffle_instability
each section's texts and rows: core.app.judges.consistency_view, amelo_view, …
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import Unavailable
from core.app import judges as app_judges
from core.app.judges import AgreementFigure
from core.app.page_view import Notice
from core.app.precompute import AMELO_MIN_RECORDS, SHUFFLES
from core.app.safe_text import escape_markdown as esc

st.title("Judges & annotators")

CONSISTENCY_TABLE_COLUMNS = {
    "judge": st.column_config.TextColumn("Judge"),
    "consistency": st.column_config.NumberColumn("Consistency", format="%.3f"),
    "n_contests": st.column_config.NumberColumn(
        "Contests", help="the judge's verdicts (contests) that enter its consistency", format="%d"
    ),
    "arena_elo": st.column_config.NumberColumn("arena Elo", format="%.0f"),
    "predicted_elo": st.column_config.NumberColumn("Elo predicted from consistency", format="%.0f"),
    "first_position_win_rate": st.column_config.NumberColumn("first-position win rate", format="%.3f"),
}


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


def show_notice(why: Notice) -> None:
    notice(why.text, fix=why.fix)


def consistency(dataset: str) -> None:
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
        return
    view = app_judges.consistency_view(cs, elo_source)
    if view.with_elo is not None:
        show_chart(
            partial(charts.consistency_vs_elo, view.with_elo, cs.slope, cs.intercept, cs.pearson_r),
            key="consistency_elo",
            how_to_read=view.how_to_read,
        )
    else:
        if view.few_elo_notice:
            notice(view.few_elo_notice)
        show_chart(
            partial(charts.consistency_bars, cs.judges),
            key="consistency_bars",
            how_to_read="consistency = 1 − 4 × the contest-weighted variance of each matchup's outcome "
            "(METHODS §8): 1 means the judge always picks the same winner for a matchup.",
        )
    show_table(view.table, hide_index=True, width="stretch", column_config=CONSISTENCY_TABLE_COLUMNS)


def agreement(dataset: str, judge: str) -> None:
    st.subheader(app_judges.agreement_heading(judge))
    figures = load_agreement(dataset, judge)
    if isinstance(figures, Unavailable):
        notice(figures.reason)
        return
    show_table(app_judges.agreement_table(figures), hide_index=True, width="stretch")
    st.caption(app_judges.AGREEMENT_CAPTION)


def annotator_reliability(dataset: str, total_votes: int, n_annotators: int) -> None:
    st.subheader("Annotator reliability (am-ELO)")
    if missing := app_judges.amelo_missing(total_votes, n_annotators):
        show_notice(missing)
        return
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
        return
    view = app_judges.amelo_view(ann, min_records)
    show_chart(partial(charts.annotator_abilities, ann), key="amelo", how_to_read=view.how_to_read)
    for column, m in zip(st.columns(3), view.metrics, strict=True):
        column.metric(m.label, m.value, help=m.help)
    if view.truth:
        st.caption(view.truth)
    st.download_button(
        "Annotator abilities (CSV)",
        view.csv,
        f"annotator_abilities_{dataset}.csv",
        "text/csv",
        key="amelo_csv",
        icon=":material/download:",
    )


def online_elo_instability(dataset: str, total_votes: int) -> None:
    st.subheader("Online Elo instability")
    if missing := app_judges.replay_missing(total_votes):
        show_notice(missing)
        return
    n = st.select_slider("shuffled battle orders", [20, 50, 100], value=SHUFFLES, key="shuffles")
    study = load_shuffles(dataset, n)
    if isinstance(study, Unavailable):
        notice(study.reason)
        st.stop()
    show_chart(
        partial(charts.shuffle_instability, study.frame),
        key="shuffles_chart",
        how_to_read=app_judges.shuffle_how_to_read(study, n),
    )
    if (said := study.statement()) is not None:
        st.caption(said)


with page_guard("The judges & annotators page", page="judges"):
    ctx = require_selection()
    consistency(ctx.dataset)
    if ctx.judge is not None:
        agreement(ctx.dataset, ctx.judge)
    total_votes, n_annotators = n_votes(ctx.dataset)
    annotator_reliability(ctx.dataset, total_votes, n_annotators)
    online_elo_instability(ctx.dataset, total_votes)
