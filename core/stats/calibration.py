"""Calibration of the judge's soft targets (METHODS.md §2 and §5).

``fit_tau``: the maximum-likelihood temperature of ``P(human prefers a) =
σ(τ·Δ)`` on battles with a decisive human vote and a finite score gap, with
its profile likelihood and a likelihood-ratio 95% interval.

``reliability``: equal-mass reliability bins and the expected calibration
error of the confidence a target puts on the judge's side, for soft targets
at any τ, hard labels (τ = ∞) and label smoothing ``q``.

``gap_agreement``: how often humans agree with the sign of the gap as the gap
grows, and the low-τ warning (the Soft-Elo paper's ComparIA failure mode:
the gap stops carrying signal, τ collapses and the curve goes flat).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import optimize, stats

from core.domain import sigmoid, wilson
from core.stats.solvers import maximise_concave, maximise_concave_1d

LN_TAU_BOUNDS = (np.log(1e-3), np.log(50.0))
MIN_BATTLES = 8
CHI2_95 = stats.chi2.ppf(0.95, 1)
# Low-signal rule: a fitted τ below LOW_TAU, or an agreement curve whose slope in
# |gap| is not significantly positive (one-sided z < SLOPE_Z), triggers the warning.
LOW_TAU = 0.1
SLOPE_Z = 1.645


def _decisive(gap: ArrayLike, human_y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    g, y = np.asarray(gap, float), np.asarray(human_y, float)
    ok = np.isfinite(g) & ((y == 0.0) | (y == 1.0))
    return g[ok], y[ok]


_PROFILE_BLOCK = 1 << 21  # elements of the (τ × battle) grid held at once by neg_loglik


def neg_loglik(ln_tau: float | np.ndarray, gap: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """−Σ [y ln σ(τΔ) + (1−y) ln σ(−τΔ)] for one or many values of ln τ (``w``: counts per (Δ, y))."""
    # y·ln(1+e^{-z}) + (1−y)·ln(1+e^{z}) = ln(1+e^{z}) − y·z: one softplus per battle, and Σ w·y·Δ once
    tau = np.exp(np.atleast_1d(np.asarray(ln_tau, float)))
    w = np.ones_like(gap, dtype=float) if w is None else np.asarray(w, float)
    linear = float(np.sum(w * y * gap))
    out = np.empty(len(tau))
    step = max(1, _PROFILE_BLOCK // max(len(gap), 1))  # rows of the (τ × battle) grid per block: bounded memory
    for start in range(0, len(tau), step):
        block = tau[start : start + step, None]
        out[start : start + step] = np.logaddexp(0.0, block * gap[None, :]) @ w
    return out - tau * linear


def decisive_cells(gap: ArrayLike, human_y: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The decisive battles with a gap as distinct (Δ, y) cells with counts: τ's sufficient statistics.

    Rubric gaps take few values (means of integer score differences), so a
    million battles make a few hundred cells.
    """
    g, y = _decisive(gap, human_y)
    if not len(g):
        return g, y, np.empty(0)
    cells, counts = np.unique(np.stack([g, y]), axis=1, return_counts=True)
    return cells[0], cells[1], counts.astype(float)


@dataclass(frozen=True)
class TauFit:
    tau: float | None
    lower: float | None
    upper: float | None
    n_battles: int
    reason: str | None = None
    at_bound: str | None = None  # 'lower' or 'upper' when the optimum sits on a search bound
    profile: pd.DataFrame | None = None  # tau, neg_loglik, delta (twice the log-likelihood drop)

    @property
    def ok(self) -> bool:
        return self.tau is not None

    def caption(self) -> str:
        if not self.ok:
            return f"τ undefined: {self.reason}"
        if self.lower is None and self.upper is None:
            interval = "95% interval reaches both search bounds"
        elif self.lower is None:
            interval = f"95% interval: τ ≤ {self.upper:.3f}"
        elif self.upper is None:
            interval = f"95% interval: τ ≥ {self.lower:.3f}"
        else:
            interval = f"95% interval {self.lower:.3f} – {self.upper:.3f}"
        return f"fitted τ = {self.tau:.3f} ({interval}, {self.n_battles} decisive battles)"


def tau_mle(g: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
    """MLE of τ in P(a ≻ b) = σ(τ·g) for targets ``y`` in [0, 1] (votes, or expected votes).

    The log-likelihood is concave in τ (a one-feature logistic regression
    without intercept): a bracketed Newton solve on the search interval
    [1e-3, 50] from τ = 1 converges in a few iterations, and returns the
    bound where the maximum lies beyond it.  ``w``: counts
    of identical (g, y) battles (sufficient statistics; None = one each).
    """
    lo, hi = np.exp(LN_TAU_BOUNDS[0]), np.exp(LN_TAU_BOUNDS[1])
    g = np.asarray(g, dtype=float)
    gw = g if w is None else g * w

    def grad_hess(t: np.ndarray, _rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = sigmoid(t[0] * g)
        return np.array([np.sum(gw * (y - p))]), np.array([np.sum(gw * g * p * (1 - p))])

    # Safeguarded Newton on the search interval (METHODS §10): a derivative of one sign over the whole
    # interval puts the answer at that bound, which fit_tau reports as such.
    out = maximise_concave_1d(grad_hess, np.array([lo]), np.array([hi]), np.array([1.0]), tol=1e-12)
    if not out.all_converged:
        raise ArithmeticError("the τ likelihood has no finite derivative on these battles")
    return float(out.x[0])


def fit_tau(gap: ArrayLike, human_y: ArrayLike, profile_points: int = 81, interval: bool = True) -> TauFit:
    """Maximum-likelihood τ on human-decisive battles with a finite gap.

    ``interval=False`` skips the likelihood-ratio interval and the profile
    (the held-out folds only need the point estimate).
    """
    g, y, w = decisive_cells(gap, human_y)
    n = int(w.sum())
    if n < MIN_BATTLES:
        return TauFit(
            None,
            None,
            None,
            n,
            reason=f"only {n} battles have both a decisive human vote and a score gap (need at least {MIN_BATTLES})",
        )
    if np.all(g == 0):
        return TauFit(None, None, None, n, reason="every score gap is zero: the gap carries no signal")
    tau_hat = tau_mle(g, y, w)
    lt_hat = float(np.log(tau_hat))
    at_bound = None
    if lt_hat - LN_TAU_BOUNDS[0] < 1e-6:
        at_bound = "lower"
    elif LN_TAU_BOUNDS[1] - lt_hat < 1e-6:
        at_bound = "upper"
    if not interval:
        return TauFit(tau_hat, None, None, n, at_bound=at_bound)
    f = lambda lt: float(neg_loglik(lt, g, y, w)[0])
    best = f(lt_hat)

    def crossing(lo: float, hi: float) -> float | None:
        h = lambda lt: 2 * (f(lt) - best) - CHI2_95
        if h(lo) < 0:
            return None  # the interval runs into the search bound
        return float(np.exp(optimize.brentq(h, lo, hi, xtol=1e-10)))

    lower = crossing(LN_TAU_BOUNDS[0], lt_hat) if lt_hat > LN_TAU_BOUNDS[0] else None
    upper = crossing(LN_TAU_BOUNDS[1], lt_hat) if lt_hat < LN_TAU_BOUNDS[1] else None
    grid = np.linspace(max(LN_TAU_BOUNDS[0], lt_hat - 2.5), min(LN_TAU_BOUNDS[1], lt_hat + 2.5), profile_points)
    nll = neg_loglik(grid, g, y, w)
    profile = pd.DataFrame({"tau": np.exp(grid), "neg_loglik": nll, "delta": 2 * (nll - best)})
    return TauFit(tau_hat, lower, upper, n, at_bound=at_bound, profile=profile)


def tau_point_from_counts(g: np.ndarray, y: np.ndarray, w: np.ndarray) -> float | None:
    """``fit_tau(..., interval=False).tau`` from decisive (gap, vote) cells with counts ``w``.

    The same rules (at least MIN_BATTLES battles, not every gap zero), on the
    table of distinct cells: the held-out folds refit τ from sufficient
    statistics instead of every battle.
    """
    keep = w > 0
    g, y, w = g[keep], y[keep], w[keep]
    if w.sum() < MIN_BATTLES or np.all(g == 0):
        return None
    return tau_mle(g, y, w)


# ---------------------------------------------------------- reliability
@dataclass(frozen=True)
class Reliability:
    label: str
    bins: pd.DataFrame  # bin, n, confidence, accuracy, lower, upper
    ece: float
    n: int
    accuracy: float


def reliability_from_confidence(conf: np.ndarray, correct: np.ndarray, label: str, n_bins: int = 10) -> Reliability:
    """Equal-mass bins of the confidence; ECE = Σ n_b/N |acc_b − conf_b| (METHODS §5)."""
    conf = np.asarray(conf, float)
    correct = np.asarray(correct, float)
    n = len(conf)
    if n == 0:
        return Reliability(
            label,
            pd.DataFrame(columns=["bin", "n", "confidence", "accuracy", "lower", "upper"]),
            float("nan"),
            0,
            float("nan"),
        )
    order = np.argsort(conf, kind="stable")
    bin_of = np.empty(n, int)
    bin_of[order] = np.minimum((np.arange(n) * n_bins) // n, n_bins - 1)
    counts = np.bincount(bin_of, minlength=n_bins)
    used = counts > 0
    mean_conf = np.bincount(bin_of, weights=conf, minlength=n_bins)[used] / counts[used]
    hits = np.bincount(bin_of, weights=correct, minlength=n_bins)[used]
    acc = hits / counts[used]
    lo, hi = wilson(hits, counts[used])
    bins = pd.DataFrame(
        {
            "bin": np.flatnonzero(used),
            "n": counts[used],
            "confidence": mean_conf,
            "accuracy": acc,
            "lower": lo,
            "upper": hi,
        }
    )
    ece = float(np.sum(counts[used] / n * np.abs(acc - mean_conf)))
    return Reliability(label, bins, ece, n, float(correct.mean()))


def reliability(
    gap: ArrayLike,
    human_y: ArrayLike,
    judge_hard: ArrayLike | None = None,
    tau: float | None = None,
    q: float | None = None,
    n_bins: int = 10,
    label: str | None = None,
) -> Reliability:
    """Reliability of the judge's targets on battles where judge and human are both decisive.

    * ``tau`` finite: soft targets, judge's side = sign(Δ), confidence σ(τ|Δ|);
    * ``tau = inf``: hard labels, confidence 1 on the judge's side;
    * ``q``: label smoothing, confidence q on the judge's side.
    Hard and smoothed labels use ``judge_hard`` (or the sign of Δ when absent).
    """
    gap = np.asarray(gap, float)
    human_y = np.asarray(human_y, float)
    human_dec = (human_y == 0.0) | (human_y == 1.0)
    if q is None and tau is not None and np.isfinite(tau):
        ok = human_dec & np.isfinite(gap) & (gap != 0)
        side = np.sign(gap[ok])
        conf = sigmoid(tau * np.abs(gap[ok]))
        lab = label or f"soft targets (τ = {tau:.3f})"
    else:
        jh = (
            np.asarray(judge_hard, float)
            if judge_hard is not None
            else np.where(gap > 0, 1.0, np.where(gap < 0, 0.0, 0.5))
        )
        ok = human_dec & ((jh == 0.0) | (jh == 1.0))
        side = np.where(jh[ok] == 1.0, 1.0, -1.0)
        conf = np.full(ok.sum(), 1.0 if q is None else float(q))
        lab = label or ("hard labels (τ = ∞)" if q is None else f"label smoothing (q = {q})")
    correct = (np.where(human_y[ok] == 1.0, 1.0, -1.0) == side).astype(float)
    return reliability_from_confidence(conf, correct, lab, n_bins=n_bins)


# --------------------------------------------------------- gap agreement
@dataclass(frozen=True)
class GapAgreement:
    bins: pd.DataFrame  # abs_gap_mid, n, agreement, lower, upper
    slope: float  # logit of agreement per point of |gap|
    slope_z: float
    warning: str | None


def gap_agreement(gap: ArrayLike, human_y: ArrayLike, tau: float | None = None, n_bins: int = 8) -> GapAgreement:
    """Human agreement with the sign of the gap, by |gap| (equal-mass bins)."""
    g, y = _decisive(gap, human_y)
    keep = g != 0
    g, y = g[keep], y[keep]
    if len(g) < MIN_BATTLES:
        return GapAgreement(
            pd.DataFrame(columns=["abs_gap_mid", "n", "agreement", "lower", "upper"]),
            float("nan"),
            float("nan"),
            f"only {len(g)} decisive battles with a non-zero gap: no curve",
        )
    agree = ((g > 0) == (y == 1.0)).astype(float)
    ag = np.abs(g)
    rel = reliability_from_confidence(ag, agree, "gap", n_bins=n_bins)
    bins = rel.bins.rename(columns={"confidence": "abs_gap_mid", "accuracy": "agreement"})
    # logistic regression of agreement on |gap| (two parameters, damped Newton: METHODS §10)
    X = np.column_stack([np.ones_like(ag), ag])

    def value_grad_hess(b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        eta = X @ b
        q = sigmoid(eta)
        value = float(np.sum(agree * eta - np.logaddexp(0.0, eta)))
        return value, X.T @ (agree - q), -(X.T @ (X * (q * (1 - q))[:, None]))

    solve = maximise_concave(value_grad_hess, np.zeros(2), max_iter=100)
    # Separated agreement has no finite MLE: the damped iterate is kept for the curve, the slope gets no z.
    beta = solve.x if np.all(np.isfinite(solve.x)) else np.zeros(2)
    p = 1 / (1 + np.exp(-X @ beta))
    slope, z = float(beta[1]), float("nan")
    # The slope's z needs an information matrix that can be inverted: with one |gap| value, or agreement
    # that the gap separates perfectly, the slope has no standard error and no z is stated.
    info = X.T @ (X * (p * (1 - p))[:, None])
    if solve.converged and np.ptp(ag) > 0 and np.all(np.isfinite(beta)) and np.linalg.cond(info) < 1e12:
        var = float(np.linalg.inv(info)[1, 1])
        if var > 0:
            z = slope / math.sqrt(var)
    if math.isfinite(z):
        evidence = f"agreement slope z = {z:.1f}"
    elif np.ptp(ag) == 0:
        evidence = "every decisive battle has the same |gap|, so agreement cannot rise with it"
    else:
        evidence = "the agreement slope has no standard error on these battles"
    warning = None
    if (tau is not None and tau < LOW_TAU) or (math.isfinite(z) and z < SLOPE_Z) or np.ptp(ag) == 0:
        warning = (
            f"the score gap carries little signal here (τ = {tau:.3f}, {evidence}): "
            if tau is not None
            else f"the score gap carries little signal ({evidence}): "
        )
        warning += (
            "human agreement barely rises with the gap, so σ(τ·Δ) is close to 0.5 everywhere and Soft-Elo "
            "compresses the leaderboard. Check this judge on this data before trusting Soft-Elo."
        )
    return GapAgreement(bins, slope, z, warning)
