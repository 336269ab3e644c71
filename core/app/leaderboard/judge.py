"""The judge's side of the view: its Elo, the leave-one-model-out table behind the intervals, τ's grid, the default
judge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.methods import method_label
from core.stats.heldout import HeldoutResult, Predictor, full_judge_elo, leave_one_model_out
from core.store import Store

HARD_SOFT = (Predictor("hard", "hard"), Predictor("soft", "soft"))


SOFT_ONLY = (Predictor("soft", "soft"),)


def heldout(
    frame: pd.DataFrame,
    all_methods: bool = False,
    tau: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeldoutResult | Unavailable:
    """The leave-one-model-out table (expensive: cache it per dataset, judge, τ and data stamp).

    ``tau=None``: τ refitted on every fold (the procedure behind intervals at
    the fitted τ), Hard- and Soft-Elo.  A given ``tau`` is held fixed in every
    fold (the procedure behind intervals drawn at that τ); only Soft-Elo
    depends on τ, so only it is computed.  ``all_methods`` adds the
    label-smoothing baselines (the Residuals page).
    """
    from core.stats.heldout import DEFAULT_PREDICTORS

    if frame["human_y"].notna().sum() == 0:
        return Unavailable("no battle has a human vote: the held-out protocol compares judge Elo with human Elo")
    if tau is not None:
        methods: tuple[Predictor, ...] = SOFT_ONLY
    else:
        methods = DEFAULT_PREDICTORS if all_methods else HARD_SOFT
    return leave_one_model_out(frame, methods, progress=progress, tau=tau)


def heldout_of(
    store: Store,
    dataset: str,
    judge: str,
    all_methods: bool = False,
    tau: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeldoutResult | Unavailable:
    """:func:`heldout` of a judge's battle frame, read from the store (the persisted form's key)."""
    return heldout(store.battle_frame(dataset, judge), all_methods=all_methods, tau=tau, progress=progress)


@dataclass(frozen=True)
class JudgeCoverage:
    """What a judge's battles carry: rubric score gaps (Soft-Elo) and human votes (intervals, τ)."""

    has_gap: bool
    has_votes: bool


def judge_coverage(store: Store, dataset: str, judge: str) -> JudgeCoverage:
    frame = store.battle_frame(dataset, judge)
    return JudgeCoverage(bool(frame["gap"].notna().any()), bool(frame["human_y"].notna().any()))


def judge_elo_of(store: Store, dataset: str, judge: str, method: str, tau: float | None) -> pd.DataFrame:
    """:func:`judge_elo` of a judge's battle frame, read from the store."""
    return judge_elo(store.battle_frame(dataset, judge), method, tau)


def judge_elo(frame: pd.DataFrame, method: str, tau: float | None) -> pd.DataFrame:
    """Deployment-mode judge Elo and sandwich SE for every model (cheap: one fit).

    The SE is the same kind the conformal quantile was calibrated with in the
    leave-one-out table, which is what makes q̂·SE an interval for human Elo.
    """
    return full_judge_elo(frame, Predictor(method, method), tau)


TAU_BOUNDS = (0.02, 5.0)


def tau_grid(fitted: float | None, points: int = 49) -> list[float]:
    """The τ values the slider offers: log-spaced over ``TAU_BOUNDS`` (3 significant digits) plus the fitted τ.

    A log scale puts as many steps between 0.1 and 1 as between 1 and 10,
    where a linear track spends most of its length on τ that no judge fits.
    """
    lo, hi = np.log(TAU_BOUNDS[0]), np.log(TAU_BOUNDS[1])
    grid = {float(f"{v:.3g}") for v in np.exp(np.linspace(lo, hi, points))}
    if fitted is not None and math.isfinite(fitted) and fitted > 0:
        grid.add(round(float(fitted), 3))
    return sorted(grid)


def snap_tau(tau: float, grid: list[float]) -> float:
    """The grid value nearest to ``tau`` on the log scale."""
    return min(grid, key=lambda g: abs(math.log(g) - math.log(tau)))


def default_judge(store: Store, dataset: str) -> tuple[str, str] | None:
    """The judge a view should start with, and why: the one whose Elo best predicts the human Elo.

    With human votes, each judge's leave-one-model-out MAE against the human
    Elo (Soft-Elo when the judge gave rubric scores, else Hard-Elo) decides;
    without them, the first judge by name.  One held-out pass per judge:
    cache the answer per data stamp.
    """
    from core.app import persist

    names = [str(n) for n in store.judges_frame(dataset)["judge"]]
    if not names:
        return None
    stamps = persist.Stamps.of(store)
    scored: list[tuple[float, str, str]] = []
    for name in names:
        # The Leaderboard's own leave-one-model-out table (persisted once computed): its residuals are
        # the ones a held-out run of this method alone would give.
        held = persist.load_or_compute(store, heldout_of, (dataset, name, False), stamps.judge(dataset, name))
        if isinstance(held, Unavailable):
            continue
        coverage = persist.load_or_compute(store, judge_coverage, (dataset, name), stamps.judge(dataset, name))
        method = Predictor("soft", "soft") if coverage.has_gap else Predictor("hard", "hard")
        resid = held.table.get(f"{method.name}_resid")
        if resid is not None and resid.notna().any():
            scored.append((float(resid.abs().mean()), name, method_label(method.name)))
    if not scored:
        return names[0], "the first judge by name (no human votes to compare judges with)"
    mae, best, label = min(scored)
    return best, (
        f"the judge whose {label} best predicts the human Elo of models held out of the fit "
        f"(mean error {mae:.1f} Elo; {len(names)} judges compared)"
    )
