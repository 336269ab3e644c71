"""Page results derived from other declared results at a slider's value (τ, α, q): cheap once their inputs are
read, so never persisted, and declared like every other result (``core.app.results``, ``from_results=True``).

Each takes ``read`` first: ``read(fn, *args)`` is the declared result ``fn(store, *args)`` as the caller keeps
it (the pages' in-server caches; :func:`core.app.results.compute` with a store), so a slider's move recomputes
only the step the slider enters, never the fits under it.  A derived result's declared scope must cover its
inputs' scopes (``tests/test_results_registry.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from core.app import Unavailable, calibration, residuals, selective
from core.app import data as app_data
from core.app import leaderboard as lb
from core.methods import RATING_METHODS
from core.stats.heldout import HeldoutResult

Read = Callable[..., Any]


def agreement(read: Read, dataset: str, judge: str) -> calibration.GapAgreement:
    frame = read(app_data.sample_frame, dataset, judge).frame
    return calibration.agreement(frame, read(app_data.tau_fit_of, dataset, judge).tau)


def tau_profile(read: Read, dataset: str, judge: str, tau: float | None) -> pd.DataFrame:
    frame = read(app_data.sample_frame, dataset, judge).frame
    return calibration.tau_profile(frame, read(app_data.tau_fit_of, dataset, judge), tau)


def reliability(read: Read, dataset: str, judge: str, tau: float, q: float) -> list[calibration.Reliability]:
    frame = read(app_data.sample_frame, dataset, judge).frame
    return calibration.reliability_curves(frame, read(app_data.tau_fit_of, dataset, judge).tau, tau, q)


def label_reliability(read: Read, dataset: str, judge: str, q: float) -> list[calibration.Reliability]:
    return calibration.label_reliability(read(app_data.sample_frame, dataset, judge).frame, q)


def residual_view(read: Read, dataset: str, judge: str, alpha: float) -> residuals.ResidualView:
    held = read(lb.heldout_of, dataset, judge, True)
    assert not isinstance(held, Unavailable)  # the page checked it before asking
    return residuals.residual_view(held, alpha)


def scope_at_alpha(
    read: Read, dataset: str, judge: str, source: str, alpha: float
) -> selective.ScopeAtAlpha | Unavailable:
    return selective.scope_at_alpha(read(app_data.sample_frame, dataset, judge).frame, source, alpha)


def leaderboard_view(
    read: Read,
    dataset: str,
    judge: str | None,
    tau: float | None,
    tau_fitted: bool,
    alpha: float,
    held_at: str | None,
    tau_reference: lb.TauReference | None = None,
    others: tuple[str, ...] = (),
    *,
    held: HeldoutResult | Unavailable | None,
) -> lb.LeaderboardView:
    """The joined leaderboard at (τ, α); ``held`` is the leave-one-out table computed at data stamp ``held_at``
    (it may be from before the newest votes, so its stamp is an argument: it keys the table in its place);
    ``others``: the other registered methods drawn."""
    human_fit = read(lb.human_ratings, dataset)
    human = None if isinstance(human_fit, Unavailable) else human_fit.frame
    hard = soft = None
    if judge is not None:
        has_gap = read(lb.judge_coverage, dataset, judge).has_gap
        hard = read(lb.judge_elo_of, dataset, judge, "hard", None)
        soft = read(lb.judge_elo_of, dataset, judge, "soft", tau) if has_gap and tau is not None else None
    models = read(app_data.models_frame, dataset)
    rated = {}
    for name in others:
        got = read(lb.method_ratings, dataset, name, judge if RATING_METHODS[name].needs_judge else None, tau)
        if not isinstance(got, Unavailable):
            rated[name] = got
    return lb.leaderboard_view(human, hard, soft, held, alpha, tau, tau_fitted, models, tau_reference, rated)
