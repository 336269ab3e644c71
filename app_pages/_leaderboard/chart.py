"""The chart: what the conformal bars promise, the method toggles, every method's Elo with one interval, and
the Hard → Soft rank changes."""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._selection import selection, update
from app_pages._widgets import notice, show_chart
from core import charts
from core.app import leaderboard as lb
from core.methods import RATING_METHODS

SLOPE_HOW_TO_READ = (
    "each line joins a model's rank under hard labels (left) to its rank under soft targets (right), among every "
    "model; green ▲ moved up, orange ▼ moved down, grey kept its rank. It draws the models the table above shows."
)


def shown_methods(available: list[str]) -> list[str]:
    """The method toggles (``Selection.show``, in the URL as ``?show=human,hard``): every registered method the
    data can be rated by; the ones not drawn by default (``dashboard``) are rated when first drawn."""
    key = "show"
    st.session_state[key] = [m for m in selection().show if m in available]

    def write_home() -> None:
        picked = st.session_state[key] or []
        kept = selection().show  # a method not offered here (no judge, no votes) keeps its place for later
        update(show=tuple(m for m in RATING_METHODS if m in picked or (m not in available and m in kept)))

    picked = st.pills(
        "Draw",
        available,
        selection_mode="multi",
        key=key,
        on_change=write_home,
        format_func=lambda m: RATING_METHODS[m].label,
        help="Which leaderboards the chart draws; the table has human, Hard- and Soft-Elo always, and any other "
        "method when it is drawn.",
    )
    return [m for m in available if m in (picked or [])]


def chart_section(
    view: lb.LeaderboardView, offered: list[str], rows: pd.DataFrame, pinned: tuple[str, ...], present: bool
) -> None:
    """The promise of the bars, then the interval chart of the methods drawn (the toggles' choice; presentation
    mode: every method rated), in the table's order with the pins highlighted."""
    banner = lb.coverage_banner(view, present)
    if banner is not None:
        level, text = banner
        (st.success if level == "success" else st.warning)(text)
    available = lb.drawable_methods(view, offered)
    drawn = lb.chart_input(view, lb.drawable_methods(view) if present else shown_methods(available), rows)
    if not drawn.methods:
        notice("select at least one leaderboard to draw.")
        return
    fig = partial(
        charts.leaderboard_intervals,
        drawn.frame,
        drawn.methods,
        interval=drawn.interval,
        interval_label=drawn.interval_label,
        highlight=pinned,
    )
    show_chart(fig, key="leaderboard_chart", how_to_read=None if present else lb.chart_how_to_read(drawn))


def rank_slope(view: lb.LeaderboardView, rows: pd.DataFrame) -> None:
    """Each model's rank under hard labels and under soft targets, when the view has both."""
    if not lb.has_rank_slope(view):
        return
    show_chart(
        # only the columns it draws: the chart (shared across sessions) is not rebuilt when α moves
        partial(
            charts.rank_slope,
            view.table[["model", "hard_elo", "soft_elo"]],
            "hard_elo",
            "soft_elo",
            "Hard-Elo",
            "Soft-Elo",
            lb.slope_models(view, rows),  # the table's rows (top N, a search, pins), ranked among every model
        ),
        key="rank_slope",
        how_to_read=SLOPE_HOW_TO_READ,
    )
