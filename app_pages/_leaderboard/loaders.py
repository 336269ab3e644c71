"""The page's results: every load goes through the generic loaders (``load_result`` for a kept result,
``compute`` for one a slider's value derives)."""

from typing import TYPE_CHECKING

import streamlit as st

from app_pages._loaders import compute, load_heldout_lagged, load_result
from app_pages._selection import update
from app_pages._widgets import notice
from core.app import Unavailable, derived
from core.app import leaderboard as lb
from core.app.persist import Lagged
from core.app.safe_text import escape_markdown as esc
from core.domain import Ratings, Slice

if TYPE_CHECKING:  # the controls import these loaders
    from app_pages._leaderboard.controls import Controls


def load_human(dataset: str) -> Ratings | None:
    res = load_result(lb.human_ratings, dataset)
    return None if isinstance(res, Unavailable) else res


def load_coverage(dataset: str, judge: str) -> lb.JudgeCoverage:
    return load_result(lb.judge_coverage, dataset, judge)


def load_slice_parts(
    dataset: str, judge: str | None, tau: float | None, where: Slice, others: tuple[str, ...] = ()
) -> lb.ViewParts:
    """The view's parts on a slice (τ None: fitted on the slice); α applies after, for free."""
    return compute(lb.view_parts, dataset, judge, tau, where, others, spinner="Fitting every method on the slice…")


def load_view(
    dataset: str,
    judge: str | None,
    tau: float | None,
    tau_fitted: bool,
    alpha: float,
    held: Lagged | None,
    tau_reference: lb.TauReference | None = None,
    others: tuple[str, ...] = (),
) -> lb.LeaderboardView:
    """The joined leaderboard at (τ, α), shared by every session showing it; ``held``: the leave-one-out table,
    possibly from before the newest votes (keyed by its data stamp); ``others``: the other registered methods
    drawn (each rated on first use)."""
    held_at, table = (None, None) if held is None else (held.stamp, held.value)
    args = (dataset, judge, tau, tau_fitted, alpha, held_at, tau_reference, others)
    return compute(derived.leaderboard_view, *args, held=table)


def leaderboard(
    dataset: str, judge: str | None, c: "Controls", others: tuple[str, ...], human: Ratings | None
) -> tuple[lb.LeaderboardView, Lagged | None, Ratings | None]:
    """The view at the controls, the leave-one-out table behind its intervals, and the human fit it shows.

    On a slice every method is fitted on the slice's battles alone (τ fitted there unless the slider chose one).
    Else the leave-one-model-out table: τ refitted per fold at the fitted τ, else held at the slider's; during a
    voting round possibly from before the newest votes (Lagged), never computed while the page waits when an
    earlier one exists."""
    if c.where:
        try:
            parts = load_slice_parts(dataset, judge, c.tau.slice_key, c.where, others)
        except ValueError as exc:  # a shared link naming a key this dataset does not have
            update(slice=())
            notice(esc(str(exc)) + " The slice is cleared.")
            st.stop()
        return parts.view(c.alpha), None, parts.human
    held = load_heldout_lagged(dataset, judge, c.tau.heldout_key) if judge is not None and c.has_votes else None
    reference = lb.TauReference.of(c.fit) if c.fit is not None else None
    view = load_view(dataset, judge, c.tau.key, c.tau.fitted, c.alpha, held, reference, others)
    return view, held, human
