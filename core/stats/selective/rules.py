"""The threshold rules (SCOPE, Learn-then-Test, naive, heuristic, vanilla): calibrating λ̂ and accepting."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from core.methods import SCOPE_RULES, THRESHOLD_RULES
from core.stats.selective.uncertainty import Uncertainty

# α·n is not exact in binary floating point (0.1·30 = 3.0000000000000004); error
# counts are integers and α has a few decimals, so a tolerance far below any
# real gap between the two sides decides the boundary cases the intended way.
_TOL = 1e-9


METHODS: tuple[str, ...] = tuple(SCOPE_RULES)
THRESHOLD_METHODS = THRESHOLD_RULES


def ltt_min_accepted(alpha: float, delta: float) -> int:
    """⌈ln δ / ln(1 − α)⌉: below this many accepted instances even zero errors cannot pass."""
    return math.ceil(math.log(delta) / math.log(1.0 - alpha))


def _ltt_critical(n_max: int, alpha: float, delta: float) -> np.ndarray:
    """kstar[n] = the largest e with P(Bin(n, α) ≤ e) ≤ δ, or −1 when none; n = 0…n_max.

    The p-value is monotone in e, so LTT's test at (n, e) is ``e ≤ kstar[n]``:
    n_max + 1 binomial quantiles replace one CDF per (split, threshold).
    """
    n = np.arange(n_max + 1)
    k0 = stats.binom.ppf(delta, n, alpha)  # the smallest e with CDF ≥ δ
    k0 = np.where(np.isfinite(k0), k0, 0).astype(np.int64)
    kstar = np.full(n_max + 1, -1, dtype=np.int64)
    # ppf is computed in floating point: check its neighbours with the CDF itself
    for shift in (-2, -1, 0, 1):
        k = k0 + shift
        ok = (k >= 0) & (k <= n) & (stats.binom.cdf(k, n, alpha) <= delta)
        kstar = np.where(ok, np.maximum(kstar, k), kstar)
    return kstar


def _last_true(mask: np.ndarray) -> np.ndarray:
    """Index of the last True in each row, −1 for rows without one."""
    k = mask.shape[1]
    last = k - 1 - np.argmax(mask[:, ::-1], axis=1)
    return np.where(mask.any(axis=1), last, -1)


def _acceptance_bounds(
    k_max: int, alpha: float, method: str, delta: float, kstar: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """Each rule as "accept the k smallest iff (errors among them) ≤ bound[k−1]", k = 1…k_max.

    Returns (bound, k_min): the rule only considers k ≥ k_min.  scope:
    Σ(E − α) ≤ −1 ⇔ e ≤ αk − 1; naive: e ≤ αk; ltt: e ≤ k*(k), the binomial
    critical value, from k_min = ⌈ln δ / ln(1 − α)⌉ upwards.
    """
    k = np.arange(1, k_max + 1, dtype=float)
    if method == "scope":
        return alpha * k - 1.0 + _TOL, 1
    if method == "naive":
        return alpha * k + _TOL, 1
    if method == "ltt":
        if kstar is None:
            kstar = _ltt_critical(k_max, alpha, delta)
        return kstar[1 : k_max + 1].astype(float), ltt_min_accepted(alpha, delta)
    raise ValueError(f"unknown threshold method {method!r}; expected one of {THRESHOLD_METHODS}")


def _last_feasible(
    cum_e: np.ndarray,
    valid: np.ndarray | None,
    alpha: float,
    method: str,
    delta: float,
    kstar: np.ndarray | None = None,
) -> np.ndarray:
    """Column of λ̂ per row (−1: abstain on all).

    ``cum_e[r, k−1]``: errors among the k lowest-scored calibration instances
    of row r; ``valid``: the column ends a tie group of scores (None: no ties),
    so that equal scores enter together.  scope and naive take the last
    feasible column; LTT walks up its candidates and stops at the first failure.
    """
    n_cols = cum_e.shape[1]
    bound, k_min = _acceptance_bounds(n_cols, alpha, method, delta, kstar)
    passes = cum_e <= bound[None, :]
    if method != "ltt":
        return _last_true(passes if valid is None else passes & valid)
    cand = np.zeros(n_cols, dtype=bool)
    cand[k_min - 1 :] = True
    cand = np.broadcast_to(cand, cum_e.shape) if valid is None else valid & cand[None, :]
    fail = cand & ~passes
    first_fail = np.where(fail.any(axis=1), np.argmax(fail, axis=1), n_cols)
    return _last_true(cand & (np.arange(n_cols)[None, :] < first_fail[:, None]))


def _check_alpha_delta(alpha: float, delta: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    if not 0 < delta < 1:
        raise ValueError(f"δ must be in (0, 1), got {delta}")


def thresholds(score: ArrayLike, errors: ArrayLike, alpha: float, method: str, delta: float = 0.1) -> np.ndarray:
    """λ̂ for each row of calibration scores and errors (1-D input: one row); −inf = abstain on all.

    ``heuristic`` and ``vanilla`` are not calibrated: +inf (their acceptance
    rule is applied by :func:`accept`).
    """
    _check_alpha_delta(alpha, delta)
    s = np.atleast_2d(np.asarray(score, dtype=float))
    if method in ("vanilla", "heuristic"):
        return np.full(s.shape[0], np.inf)
    e = np.atleast_2d(np.asarray(errors, dtype=float))
    if e.shape != s.shape:
        raise ValueError(f"scores {s.shape} and errors {e.shape} differ in shape")
    if s.shape[1] == 0:
        return np.full(s.shape[0], -np.inf)
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, axis=1)
    cum_e = np.cumsum(np.take_along_axis(e, order, axis=1), axis=1)
    group_end = np.ones(s.shape, dtype=bool)  # instances with equal s enter together
    group_end[:, :-1] = ss[:, 1:] != ss[:, :-1]
    col = _last_feasible(cum_e, group_end, alpha, method, delta)
    return np.where(col >= 0, ss[np.arange(s.shape[0]), np.maximum(col, 0)], -np.inf)


def accept(score: ArrayLike, confidence: ArrayLike, lam: ArrayLike, alpha: float, method: str) -> np.ndarray:
    """Which instances a method accepts: s ≤ λ̂ (threshold rules), c ≥ 1 − α (heuristic), all (vanilla)."""
    score = np.asarray(score, dtype=float)
    if method == "heuristic":
        return np.asarray(confidence, dtype=float) >= 1.0 - alpha - 1e-12
    if method == "vanilla":
        return np.ones(score.shape, dtype=bool)
    lam = np.asarray(lam, dtype=float)
    return score <= (lam[..., None] if score.ndim > lam.ndim else lam)


@dataclass(frozen=True)
class Threshold:
    """λ̂ fitted on one calibration set, with what it means on that set."""

    method: str
    alpha: float
    delta: float
    lam: float  # −inf: abstain on all; +inf: no threshold (heuristic, vanilla)
    n_calibration: int
    n_accepted: int
    n_errors: int
    reason: str | None = None

    @property
    def feasible(self) -> bool:
        return self.lam > -np.inf

    @property
    def calibration_risk(self) -> float:
        return self.n_errors / self.n_accepted if self.n_accepted else float("nan")

    @property
    def calibration_coverage(self) -> float:
        return self.n_accepted / self.n_calibration if self.n_calibration else float("nan")


def fit_threshold(u: Uncertainty, alpha: float, method: str = "scope", delta: float = 0.1) -> Threshold:
    """Calibrate one threshold on every instance of ``u`` (e.g. all battles with a human vote)."""
    lam = float(thresholds(u.score, u.errors, alpha, method, delta)[0])
    acc = accept(u.score, u.confidence, lam, alpha, method)
    n_acc, n_err = int(acc.sum()), int((acc & ~u.correct).sum())
    reason = None
    if lam == -np.inf:
        n = len(u)
        if method == "scope":
            reason = (
                f"no threshold satisfies Σ(E − α) ≤ −1 on the {n} calibration instances at α = {alpha:g} "
                f"(even an error-free accepted set needs at least {math.ceil(1 / alpha - _TOL)} instances): "
                "abstain on all"
            )
        elif method == "ltt":
            reason = (
                f"the first candidate threshold fails the binomial test at α = {alpha:g}, δ = {delta:g} "
                f"(at least {ltt_min_accepted(alpha, delta)} accepted instances are needed even with no "
                f"errors; {n} calibration instances): abstain on all"
            )
        else:
            reason = f"no threshold keeps the calibration error at or below α = {alpha:g}: abstain on all"
    return Threshold(method, float(alpha), float(delta), lam, len(u), n_acc, n_err, reason)
