"""The answer: the headline, the line about τ, the ranking caption, then the table with its search, rows and
pins (presentation mode: the top rows in large type)."""

import pandas as pd
import streamlit as st

from app_pages._leaderboard.controls import Controls
from app_pages._loaders import default_judge, load_heldout_lagged
from app_pages._selection import selection
from app_pages._widgets import notice, show_table
from core.app import leaderboard as lb
from core.app.persist import Lagged

TOP_N = {"top 10": 10, "top 20": 20, "top 50": 50, "all": None}
# How often a page showing intervals from before the newest votes looks for the current ones.  Streamlit can
# drop a visitor's widget change that meets one of these polls on a loaded machine (1-2 changes in 20 with a
# 0.5 s poll beside three CPU hogs, none without the poll), so a page people work with polls rarely; a
# projector in presentation mode, which nobody touches, polls often.
REFRESH_POLL_S = 10.0
PRESENT_REFRESH_POLL_S = 2.0


def _rerun_when_current(dataset: str, judge: str, tau: float | None) -> None:
    """While the intervals come from before the newest votes: redraw the page once the current table is in."""
    if load_heldout_lagged(dataset, judge, tau).current:
        st.rerun(scope="app")


_poll_interactive = st.fragment(run_every=REFRESH_POLL_S)(_rerun_when_current)
_poll_presenting = st.fragment(run_every=PRESENT_REFRESH_POLL_S)(_rerun_when_current)


def rerun_when_current(dataset: str, judge: str, tau: float | None) -> None:
    (_poll_presenting if selection().present else _poll_interactive)(dataset, judge, tau)


def headline(
    dataset: str, judge: str | None, view: lb.LeaderboardView, c: Controls, held: Lagged | None, peer_first: bool
) -> None:
    """The headline and what ranks it; the page ends here when the slice ranks no model."""
    st.markdown(lb.headline_markdown(view, peer_first, bool(c.where)))
    tau_note = lb.tau_notice(view, c.tau, c.fit.reason if c.fit is not None else None)
    if tau_note is not None:
        level, text = tau_note
        if level == "notice":
            notice(text)
        else:
            (st.warning if level == "warning" else st.info)(text, icon=":material/tune:")
    choice = default_judge(dataset) if judge is not None else None
    current = True
    if held is not None and not held.current and judge is not None:
        rerun_when_current(dataset, judge, c.tau.heldout_key)
        current = False
    behind = held.votes_behind if held is not None else 0
    st.caption(lb.ranking_caption(view, judge, c.alpha, choice, c.where, current=current, votes_behind=behind))
    empty = lb.empty_slice_notice(view, c.where)
    if empty is not None:
        notice(empty)
        st.stop()


def _rows(view: lb.LeaderboardView) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The rows a search, the rows picker and the pins keep, and the pinned models."""
    c1, c2, c3 = st.columns([2, 1, 3])
    query = c1.text_input("Search", key="lb_search", placeholder="model or organisation", label_visibility="collapsed")
    top = c2.selectbox("Rows", list(TOP_N), index=1, key="lb_top", label_visibility="collapsed")
    pinned = tuple(
        c3.multiselect(
            "Pin",
            view.table["model"].tolist(),
            key="lb_pins",
            placeholder="pin models to keep them in view",
            label_visibility="collapsed",
        )
    )
    return lb.select_rows(view.table, query=query, pinned=pinned, top_n=TOP_N[top]), pinned


def table_section(
    view: lb.LeaderboardView, methods: tuple[str, ...], present: bool, issues: tuple[str, ...]
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The table and the lines under it; the rows shown and the pinned models (the chart draws the same)."""
    rows, pinned = (lb.select_rows(view.table, top_n=10), ()) if present else _rows(view)
    part = lb.table_part(view, rows, methods, present, issues)
    if present:  # a static table takes the projector's large type (the interactive grid draws on a canvas)
        st.table(part.table.set_index("Rank"))
    else:
        show_table(
            part.table,
            hide_index=True,
            width="stretch",
            height=part.height,
            column_config={c: st.column_config.Column(help=part.help.get(c)) for c in part.table.columns},
        )
    if part.rows_note:
        st.caption(part.rows_note)
    if part.apart:
        st.caption(part.apart)
    if part.issues:
        with st.expander(part.issues_title, icon="⚠️"):
            for line in part.issues:
                st.markdown(line)
    return rows, pinned
