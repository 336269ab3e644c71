"""The peer's own numbers on a star design (every battle against one baseline): Arena-Hard's score, AlpacaEval's
win rates, and whether they (or the MT-Bench score) lead the page."""

from dataclasses import dataclass

import streamlit as st

from app_pages._leaderboard.mtbench import mtbench_section
from app_pages._loaders import compute
from app_pages._widgets import notice, show_table
from core.app import Unavailable, winrate
from core.app import arena_hard as app_arena_hard
from core.app import leaderboard as lb
from core.app.safe_text import escape_markdown as esc
from core.domain import Slice


def load_win_rates(dataset: str, judge: str | None) -> winrate.WinRateView | Unavailable:
    return compute(winrate.baseline_view, dataset, judge)


def load_arena_hard(dataset: str, judge: str | None) -> app_arena_hard.BaselineScores | Unavailable:
    return compute(app_arena_hard.baseline_scores, dataset, judge, spinner="Bootstrapping the Arena-Hard score…")


def baseline_section(
    rates: winrate.WinRateView, scores: app_arena_hard.BaselineScores | Unavailable | None, judge: str | None
) -> None:
    """The peer's own numbers on a star design: the Arena-Hard score (an Arena-Hard import), then AlpacaEval's
    win rates against the baseline."""
    if scores is not None and not isinstance(scores, Unavailable):
        st.subheader(f"Arena-Hard score against {esc(scores.plain.baseline)}")
        show_table(app_arena_hard.table(scores), hide_index=True, width="stretch")
        st.caption(scores.plain.method + (" " + scores.styled.style_note if scores.styled else ""))
    st.subheader(f"Against the baseline, {esc(rates.baseline)}")
    show_table(winrate.table(rates), hide_index=True, width="stretch")
    st.caption(lb.baseline_caption(judge, rates.n_battles, rates.method))
    for note in rates.notes:
        notice(esc(note))


@dataclass(frozen=True)
class Led:
    """What the page led with: the win rates against a baseline (None: not a star design, or on a slice) and
    Arena-Hard's score; whether the Elo leaderboards follow a peer's answer, and whether it was the grades."""

    against: winrate.WinRateView | None
    scores: app_arena_hard.BaselineScores | Unavailable | None
    peer_first: bool
    graded_first: bool


def lead_section(dataset: str, judge: str | None, where: Slice, has_human: bool) -> Led:
    """The peer's answer first when it leads (core.app.leaderboard.lead), then the Elo leaderboards' heading."""
    against = None if where else lb.usable_baseline(load_win_rates(dataset, judge))
    scores = load_arena_hard(dataset, judge) if against is not None and judge else None
    lead = lb.lead(against is not None, has_human, bool(where))
    graded_first = lead.grades_may_lead and mtbench_section(dataset, True)
    if graded_first:
        st.subheader("Elo leaderboards")
    if against is not None and lead.peer_first:
        plain = None if isinstance(scores, Unavailable | None) else scores.plain
        st.markdown("### " + winrate.peer_headline(against, plain))
        baseline_section(against, scores, judge)
        st.subheader("Elo leaderboards")
    return Led(against, scores, lead.peer_first or graded_first, graded_first)
