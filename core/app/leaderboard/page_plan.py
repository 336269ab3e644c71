"""The Leaderboard page's decisions, from plain values: which τ each result is keyed by, which answer leads, which
notices and banners are shown at which level, what the table section shows and what the chart may draw.

The page draws what these return; its sentences are composed in :mod:`.page_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from core.app import Unavailable
from core.app.leaderboard.page_text import rows_caption, tau_undefined_notice
from core.app.leaderboard.tables import column_help, display_table
from core.app.leaderboard.view import LeaderboardView
from core.app.safe_text import escape_markdown as esc
from core.app.winrate import WinRateView
from core.domain import Slice, slice_label
from core.methods import RATING_METHODS

TABLE_ROWS_SHOWN = 10  # the interactive table's height: this many rows before it scrolls
ROW_PX = 35  # one row of Streamlit's data grid, header included


@dataclass(frozen=True)
class TauUse:
    """The τ the page draws Soft-Elo at, and the keys each result is read with.

    ``tau``: None when there is no Soft-Elo (no judge, no rubric scores, or τ cannot be fitted and none was
    chosen); ``fitted``: it is the fitted τ (the slider not moved); ``has_gap``: the judge has rubric scores.
    """

    tau: float | None
    fitted: bool
    has_gap: bool

    @property
    def key(self) -> float | None:
        """τ as the results are keyed (rounded, so that one slider stop is one key)."""
        return None if self.tau is None else round(self.tau, 4)

    @property
    def heldout_key(self) -> float | None:
        """The leave-one-out table's τ: None (refitted per fold) at the fitted τ or without rubric scores."""
        return None if self.fitted or not self.has_gap else self.key

    @property
    def slice_key(self) -> float | None:
        """τ on a slice: None (fitted on the slice's battles) unless the slider chose one."""
        return None if self.fitted else self.key

    @property
    def report_tau(self) -> float | None:
        """The report's τ: None (the fitted one) unless the slider chose one."""
        return None if self.fitted else self.tau

    @property
    def named(self) -> float | None:
        """The τ the exported files hold, in their names; None without rubric scores."""
        return self.tau if self.has_gap else None

    @property
    def pair_key(self) -> float | None:
        """The head-to-head fits' τ: the Soft-Elo pair model is fitted only with rubric scores and a τ."""
        return self.key if self.has_gap else None


def tau_use(
    slider: tuple[float | None, bool] | None,
    fitted_tau: float | None,
    fit_ok: bool,
    chosen: float | None,
    has_gap: bool,
) -> TauUse:
    """The slider's (τ, fitted), or without one (presentation mode: None) the chosen τ, else the fitted one; none
    when τ cannot be fitted and nobody chose one (the slider's resting place is not a τ)."""
    if slider is not None:
        tau, fitted = slider
    elif chosen is not None:
        tau, fitted = chosen, False
    else:
        tau, fitted = fitted_tau, True
    if not fit_ok and chosen is None:
        tau, fitted = None, False
    return TauUse(tau, fitted, has_gap)


NO_JUDGE_TAU = TauUse(None, True, False)  # a dataset of human votes alone: no τ anywhere


@dataclass(frozen=True)
class Lead:
    """What comes first: the peer's own numbers (``peer_first``: win rates against the baseline, Arena-Hard's
    score) or, ``grades_may_lead``, the MT-Bench score when the dataset has single-answer grades."""

    peer_first: bool
    grades_may_lead: bool


def lead(has_baseline: bool, has_human: bool, on_slice: bool) -> Lead:
    """A star design without human votes (AlpacaEval, Arena-Hard) leads with the peer's metric, the number its
    users compare with; FastChat's headline is the single-answer grade: a dataset with neither human votes nor
    a baseline leads with it (the grades are of the whole dataset, never of a slice)."""
    return Lead(
        peer_first=has_baseline and not has_human,
        grades_may_lead=not on_slice and not has_human and not has_baseline,
    )


def usable_baseline(rates: WinRateView | Unavailable | None) -> WinRateView | None:
    """The win rates against a baseline when there are some (a star design), else None: no view (on a slice),
    an unavailable one, or one without a result."""
    return None if rates is None or isinstance(rates, Unavailable) or rates.result is None else rates


def tau_notice(view: LeaderboardView, tau: TauUse, reason: str | None) -> tuple[str, str] | None:
    """(level, text) of the line beside the headline about τ: Soft-Elo at a chosen τ ('warning' far from the
    fitted one, else 'info'), or ('notice', why) when the judge has rubric scores but no τ is in use."""
    note = view.tau_note()
    if note:
        return ("warning" if view.tau_far else "info"), note
    if tau.has_gap and tau.tau is None:
        return "notice", tau_undefined_notice(reason)
    return None


def empty_slice_notice(view: LeaderboardView, where: Slice) -> str | None:
    """Why the page stops after the headline: on a slice, no model can be ranked (the view's note, else a
    sentence naming the slice); None when there is a table to show."""
    if not where or not view.table.empty:
        return None
    return esc(view.note or f"no model can be ranked on the slice {slice_label(where)}.")


@dataclass(frozen=True)
class TablePart:
    """The table section: the table, its columns' help, its height, and the lines under it."""

    table: pd.DataFrame
    help: dict[str, str]
    height: int
    issues: tuple[str, ...]  # the human fit's caveats, each escaped (none in presentation mode)
    issues_title: str
    apart: str | None  # the models set apart from the ranking (None in presentation mode)
    rows_note: str | None  # how many of the models the rows show (None: every one)


def table_part(
    view: LeaderboardView, rows: pd.DataFrame, methods: Sequence[str], present: bool, issues: Sequence[str] = ()
) -> TablePart:
    """What the table section shows of ``rows``: the display table (``methods`` drawn add their columns), a height
    of at most :data:`TABLE_ROWS_SHOWN` rows, and in the interactive page the caveats and the set-apart models."""
    table = display_table(view, rows, methods=methods)
    height = min(ROW_PX * (len(table) + 1) + 3, ROW_PX * (TABLE_ROWS_SHOWN + 1) + 3)
    apart = None if present else view.set_apart_statement()
    shown = () if present else tuple(f"- {esc(i)}" for i in issues)
    return TablePart(
        table,
        column_help(view),
        height,
        shown,
        f"Read the human Elo with care ({len(issues)})",
        esc(apart) if apart else None,
        rows_caption(len(rows), len(view.table), present),
    )


def coverage_banner(view: LeaderboardView, present: bool) -> tuple[str, str] | None:
    """(level, text) above the chart: what the conformal bars promise ('success', or 'warning' at a τ the data
    does not support), else the view's note as a warning; nothing in presentation mode."""
    if present:
        return None
    statement = view.coverage_statement()
    if statement:
        return view.coverage_level(), statement
    return ("warning", view.note) if view.note else None


def drawable_methods(view: LeaderboardView, offered: Sequence[str] = ()) -> list[str]:
    """The methods the chart may draw, in the registry's order: those the view rated, and those ``offered`` (rated
    on first use; presentation mode, with no toggles, draws the rated ones)."""
    return [m for m in RATING_METHODS if f"{m}_elo" in view.table or m in offered]


def slope_models(view: LeaderboardView, rows: pd.DataFrame) -> tuple[str, ...] | None:
    """The models the Hard → Soft rank chart draws (the table's rows, ranked among every model); None: all of
    them (also when the chart cannot be drawn)."""
    return tuple(rows["model"]) if len(rows) < len(view.table) else None


def has_rank_slope(view: LeaderboardView) -> bool:
    """The Hard → Soft rank chart needs both Elos."""
    return "soft_elo" in view.table and "hard_elo" in view.table


def turn_method(has_human: bool, judge: str | None, on_slice: bool) -> str | None:
    """The Elo the by-turn table fits per turn group ('human', else the judge's 'hard'); None on a slice (the
    turn groups are slices of their own) or with neither."""
    if on_slice:
        return None
    return "human" if has_human else "hard" if judge else None
