"""The MT-Bench score (a dataset's single-answer grades): the leaderboard of a dataset of grades only."""

from typing import NoReturn

import streamlit as st

from app_pages._loaders import compute
from app_pages._widgets import export_buttons, notice, show_table
from core.app import Unavailable, mtbench
from core.app import leaderboard as lb
from core.app.safe_text import escape_markdown as esc


def load_mtbench(dataset: str, judge: str | None) -> mtbench.MTBenchView | Unavailable:
    return compute(mtbench.mtbench_view, dataset, judge)


def mtbench_section(dataset: str, lead: bool = False) -> bool:
    """The MT-Bench score table when the dataset has single-answer grades; whether it had.  ``lead``: the
    page's first answer (FastChat's headline number), its sentence as the page's headline."""
    first = load_mtbench(dataset, None)
    if isinstance(first, Unavailable):
        return False
    if lead:
        st.markdown(f"### {first.headline(lambda x: esc(x, at_line_start=False))}")
    st.subheader("MT-Bench score")
    grader = first.judge
    if len(first.judges) > 1:
        grader = st.selectbox("Grading judge", first.judges, index=first.judges.index(first.judge), key="mt_judge")
    view = first if grader == first.judge else load_mtbench(dataset, grader)
    if isinstance(view, Unavailable):
        notice(esc(view.reason))
        return True
    table = mtbench.display_table(view)
    show_table(table, hide_index=True, width="stretch")
    st.caption(esc(view.caption()))
    export_buttons(
        lambda: table,
        mtbench.file_stem(view),
        f"MT-Bench score of {dataset}",
        key="mt_export",
    )
    return True


def grades_only(dataset: str) -> NoReturn:
    """A dataset without battles: its grades' score is the leaderboard, or nothing ranks it; the page ends."""
    notice(lb.no_battles_notice(dataset, mtbench_section(dataset, lead=True)))
    st.stop()
