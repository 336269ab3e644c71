"""Split conformal intervals for a model's human Elo (METHODS.md §4).

r_i is judge Elo − human Elo of held-out model i and SE_i the judge Elo's
sandwich SE (SE ≤ 1e-6 or a non-finite value excluded).  Two scores:

``"floor"`` (the default)
    ``s_i = |r_i| / √(SE_i² + σ̂²₍ᵢ₎)``, where σ̂²₍ᵢ₎ is the judge–human
    disagreement variance estimated on the *other* calibration models by
    moments, ``mean_j(r_j²) − mean_j(SE_j²)`` floored at 0.  A new model's
    interval is ``judge_elo ± q̂·√(SE² + σ̂²)`` with σ̂² from every
    calibration model, the largest of its Q-profile 80% upper bound and the
    leave-one-out moment estimates: it cannot shrink below ``±q̂·σ̂`` however many battles
    the judge saw, because the disagreement does not shrink with judge calls.
``"se"``
    ``s_i = |r_i| / SE_i`` and ``judge_elo ± q̂·SE`` (σ̂ = 0): valid only when
    a new model's SE is like the calibration models'; it undercovers a model
    judged on many more battles than they were.

With n scores and miscoverage α, ``k = ⌈(n+1)(1−α)⌉`` and ``q̂`` is the k-th
smallest score; when ``k > n`` the pool is too small for α and ``q̂ = ∞``
(reported, never clipped).  Guarantees (METHODS §4): "se", coverage ≥ 1−α
marginally under exchangeability of models; "floor", ≥ 1−α for the
full-conformal form (:func:`full_conformal_half_width`), which the drawn
interval contains whenever q̂ ≥ 1 (:func:`contains_full_conformal`), and
≥ 1−2α always (it contains the jackknife+ form, :func:`jackknife_plus_half_width`).
Both hold for a new model exchangeable with the calibration models; for one
judged on many more battles the coverage rests on the variance model
r ~ (0, σ² + SE²) and is measured (benchmarks/bench_conformal_floor.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

SE_FLOOR = 1e-6
SCORES = ("floor", "se")
DEFAULT_SCORE = "floor"
UPPER_LEVEL = 0.8  # the confidence level of the upper bound on σ² that a new model's interval uses (METHODS §4)


@dataclass(frozen=True)
class Quantile:
    alpha: float
    n: int
    k: int
    qhat: float  # math.inf when the pool is too small
    reason: str | None = None
    score: str = "se"  # "floor": scale √(SE² + σ̂²); "se": scale SE
    sigma: float = 0.0  # σ̂ (Elo) in a new model's scale: max(80% upper bound, every σ̂₍ᵢ₎) (deploy_variance)
    sigma_moments: float = 0.0  # the moment estimate of the disagreement SD (Elo) over every calibration model

    def scale(self, se: ArrayLike) -> np.ndarray:
        """The scale q̂ multiplies for a model with judge-Elo SE ``se``: √(SE² + σ̂²) (SE for "se")."""
        s = np.asarray(se, float)
        return np.sqrt(s**2 + self.sigma**2) if self.score == "floor" else s

    def half_width(self, se: ArrayLike) -> np.ndarray:
        """q̂ × scale; ∞ for any known SE when q̂ = ∞ (∞ · 0 is not a width), NaN where the SE is unknown."""
        s = np.asarray(se, float)
        if math.isinf(self.qhat):
            return np.where(np.isnan(s), np.nan, np.inf)
        return self.qhat * self.scale(s)

    @property
    def finite(self) -> bool:
        return math.isfinite(self.qhat)


def _exact(alpha: float) -> Fraction:
    """α as the decimal the user typed (0.18 → 18/100): the ceilings below are then exact.

    In binary floating point (n + 1)·(1 − α) can land a hair above a whole
    number and round k one too high (114 of the 19,800 pools n ≤ 200 and α on
    the 0.01 grid, e.g. n = 149, α = 0.18), which needlessly widens the interval.
    """
    return Fraction(repr(float(alpha)))


def conformal_rank(n: int, alpha: float) -> int:
    """k = ⌈(n + 1)(1 − α)⌉ in exact rational arithmetic (METHODS §4)."""
    return math.ceil((n + 1) * (1 - _exact(alpha)))


def min_pool(alpha: float) -> int:
    """Smallest calibration pool with a finite q̂ at this α: ⌈1/α⌉ − 1 (exact)."""
    return math.ceil(1 / _exact(alpha)) - 1


def _pool(residual: ArrayLike, se: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The calibration models: a finite residual and an SE above the floor."""
    r, s = np.asarray(residual, float), np.asarray(se, float)
    ok = np.isfinite(r) & np.isfinite(s) & (s > SE_FLOOR)
    return r[ok], s[ok]


def _check_score(score: str) -> None:
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")


def disagreement_variance(residual: ArrayLike, se: ArrayLike) -> float:
    """σ̂²: the judge–human disagreement variance by moments, mean(r²) − mean(SE²) floored at 0.

    E r_i² = σ² + SE_i² when r_i = b_i + e_i with b_i ~ (0, σ²) the model's disagreement and e_i ~ (0, SE_i²)
    the judge's sampling error (uncorrelated): an unbiased estimate before the floor.  r² is not centred, so a
    judge that over-rates every model counts its mean bias as disagreement (the interval is not re-centred).
    0 without a calibration model.
    """
    r, s = _pool(residual, se)
    if not len(r):
        return 0.0
    return max(float(np.mean(r**2) - np.mean(s**2)), 0.0)


def disagreement_upper(r: np.ndarray, s: np.ndarray, level: float = 0.8, iterations: int = 60) -> np.ndarray:
    """The Q-profile upper confidence bound for σ² at ``level`` on clean pools (..., n) (Viechtbauer 2007).

    Under r_i ~ N(0, σ² + SE_i²) independent, Q(σ²) = Σ r_i²/(σ² + SE_i²) is χ²_n and decreasing in σ²; the bound
    solves Q(σ²_U) = the (1 − level) quantile of χ²_n (0 when even Q(0) is below it), so P(σ²_U ≥ σ²) = level.
    """
    from scipy import stats

    r2, v = np.asarray(r, float) ** 2, np.asarray(s, float) ** 2
    n = r2.shape[-1]
    if n == 0:
        return np.zeros(r2.shape[:-1])
    target = float(stats.chi2.ppf(1 - level, n))

    def q(s2: np.ndarray) -> np.ndarray:
        return np.sum(r2 / (s2[..., None] + v), axis=-1)

    lo = np.zeros(r2.shape[:-1])
    hi = r2.sum(axis=-1) / target + 1.0  # Q(hi) < Σr²/hi < target
    for _ in range(iterations):
        mid = (lo + hi) / 2
        above = q(mid) >= target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(q(np.zeros_like(lo)) >= target, lo, 0.0)


def deploy_variance(r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """σ̂² a new model's interval uses, on clean pools (..., n): the largest of the Q-profile 80% upper bound and
    the leave-one-out moment estimates σ̂²₍ᵢ₎ (which include the moment estimate over all).

    The upper bound keeps the floor from being under-estimated for a model judged on many more battles than the
    calibration models (its scale is then σ̂ alone); being at least every σ̂²₍ᵢ₎ makes the interval contain the
    jackknife+ one (≥ 1 − 2α) and, when q̂ ≥ 1, the full-conformal one (≥ 1 − α) (METHODS §4).
    """
    r, s = np.asarray(r, float), np.asarray(s, float)
    if r.shape[-1] == 0:
        return np.zeros(r.shape[:-1])
    loo = loo_disagreement_variance(r, s).max(axis=-1)
    moments = np.maximum(np.mean(r**2 - s**2, axis=-1), 0.0)
    return np.maximum(np.maximum(loo, moments), disagreement_upper(r, s, UPPER_LEVEL))


def loo_disagreement_variance(r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """σ̂²₍ᵢ₎ of every model of a pool (already filtered): the moment estimate over the others (0 when alone).

    Works along the last axis, so a stack of pools (reps, n) is one call.
    """
    d = np.asarray(r, float) ** 2 - np.asarray(s, float) ** 2
    n = d.shape[-1]
    if n < 2:
        return np.zeros_like(d)
    return np.maximum((d.sum(axis=-1, keepdims=True) - d) / (n - 1), 0.0)


def scores(residual: ArrayLike, se: ArrayLike, score: str = DEFAULT_SCORE) -> np.ndarray:
    """Nonconformity scores of the models with a finite residual and an SE above the floor.

    ``"floor"``: |r_i| / √(SE_i² + σ̂²₍ᵢ₎), σ̂²₍ᵢ₎ from the other models (each score a symmetric function of the
    others, METHODS §4); ``"se"``: |r_i| / SE_i.
    """
    _check_score(score)
    return _scores(*_pool(residual, se), score)


def _scores(r: np.ndarray, s: np.ndarray, score: str) -> np.ndarray:
    """:func:`scores` of pools along the last axis (one pool, or one per row of a stack of pools)."""
    if score == "se":
        return np.abs(r) / s
    return np.abs(r) / np.sqrt(s**2 + loo_disagreement_variance(r, s))


def _kth_smallest(scores: np.ndarray, k: int) -> np.ndarray:
    """The k-th smallest score along the last axis (1-based); +∞ where the pool has fewer than k."""
    n = scores.shape[-1]
    return np.sort(scores, axis=-1)[..., k - 1] if k <= n else np.full(scores.shape[:-1], math.inf)


def conformal_quantile(s: np.ndarray, alpha: float) -> Quantile:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    s = np.asarray(s, float)
    n = len(s)
    k = conformal_rank(n, alpha)
    if k > n:
        return Quantile(
            alpha,
            n,
            k,
            math.inf,
            f"the calibration pool has {n} models, too few for α = {alpha:g} "
            f"(need at least {min_pool(alpha)}): the interval is unbounded",
        )
    return Quantile(alpha, n, k, float(_kth_smallest(s, k)))


def calibrate(residual: ArrayLike, se: ArrayLike, alpha: float, score: str = DEFAULT_SCORE) -> Quantile:
    """q̂ at α over the calibration models' scores, with the score and σ̂ a new model's interval needs."""
    q = conformal_quantile(scores(residual, se, score), alpha)
    if score == "se":
        return replace(q, score=score)
    r, s = _pool(residual, se)
    return replace(
        q,
        score=score,
        sigma=math.sqrt(float(deploy_variance(r, s))),
        sigma_moments=math.sqrt(disagreement_variance(r, s)),
    )


def contains_full_conformal(q: Quantile) -> bool:
    """The drawn "floor" interval contains the full-conformal one for a new model of any SE: q̂ ≥ 1 (METHODS §4).

    With σ̂² ≥ every σ̂²₍ᵢ₎ (:func:`deploy_variance`), a candidate residual t beyond q̂·√(SE² + σ̂²) has
    t² − SE² ≥ q̂²σ̂² ≥ σ̂²₍ᵢ₎ when q̂ ≥ 1, so adding it to the others cannot lower any calibration model's σ̂²:
    every full-conformal calibration score is at most its leave-one-out one and t is rejected there too.
    Always true for "se" (its split-conformal interval is exact); False when q̂ is infinite.
    """
    if q.score == "se":
        return True
    return q.finite and q.qhat >= 1


def jackknife_plus_half_width(r: np.ndarray, s: np.ndarray, se_new: np.ndarray, k: int) -> np.ndarray:
    """The jackknife+ form of the "floor" half-width, on clean pools ``r``, ``s`` (..., n) for SEs ``se_new``
    (..., m): the k-th smallest over i of |r_i|·√(SE_new² + σ̂²₍ᵢ₎)/√(SE_i² + σ̂²₍ᵢ₎), each term putting the new
    model on the scale calibration model i was scored with.  Coverage ≥ 1 − 2α for exchangeable models
    (Barber et al. 2021's tournament argument, METHODS §4).  ∞ when k > n."""
    r, s, new = np.asarray(r, float), np.asarray(s, float), np.asarray(se_new, float)
    if k > r.shape[-1]:
        return np.full(new.shape, np.inf)
    v = loo_disagreement_variance(r, s)[..., None, :]
    terms = np.abs(r)[..., None, :] * np.sqrt(new[..., None] ** 2 + v) / np.sqrt(s[..., None, :] ** 2 + v)
    return np.sort(terms, axis=-1)[..., k - 1]


def full_conformal_half_width(
    r: np.ndarray, s: np.ndarray, se_new: np.ndarray, k: int, iterations: int = 60
) -> np.ndarray:
    """The full-conformal form of the "floor" interval (exact coverage ≥ 1 − α), on clean pools (..., n).

    For a candidate |r_new| = t, every calibration model is scored with σ̂² over the n others *including the
    new model at t*, and the new model with σ̂² over the n calibration models: each score is then the same
    symmetric function of its model and the multiset of the other n, so the scores are exchangeable.  t is
    accepted when the new model's score is at most the k-th smallest calibration score; the new score grows
    with t and the others shrink, so the accepted set is [0, t*], found by bisection.  ∞ when k > n.
    """
    r, s, new = np.asarray(r, float), np.asarray(s, float), np.asarray(se_new, float)
    n = r.shape[-1]
    if k > n:
        return np.full(new.shape, np.inf)
    d = r**2 - s**2
    total = d.sum(axis=-1, keepdims=True)
    scale_new = np.sqrt(new**2 + np.maximum(total / n, 0.0))
    others = (total - d)[..., None, :]
    abs_r, s2 = np.abs(r)[..., None, :], (s**2)[..., None, :]

    def accepted(t: np.ndarray) -> np.ndarray:
        v = np.maximum((others + (t**2 - new**2)[..., None]) / n, 0.0)
        kth = np.sort(abs_r / np.sqrt(s2 + v), axis=-1)[..., k - 1]
        return t / scale_new <= kth

    lo = np.zeros(np.broadcast_shapes(new.shape, scale_new.shape))
    hi = scale_new * (1.0 + np.max(np.abs(r) / s, axis=-1, keepdims=True))
    for _ in range(64):
        grow = accepted(hi)
        if not grow.any():
            break
        hi = np.where(grow, 2 * hi, hi)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        ok = accepted(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return lo


@dataclass(frozen=True)
class SplitEvaluation:
    alpha: float
    coverage_mean: float
    coverage_min: float
    coverage_max: float
    width_mean: float
    width_min: float
    width_max: float
    n_splits: int
    n_infinite: int  # splits whose calibration half was too small for α
    per_split: pd.DataFrame

    def as_dict(self) -> dict:
        return {
            "alpha": self.alpha,
            "coverage": self.coverage_mean,
            "coverage_min": self.coverage_min,
            "coverage_max": self.coverage_max,
            "median_width": self.width_mean,
            "width_min": self.width_min,
            "width_max": self.width_max,
            "n_splits": self.n_splits,
            "n_infinite": self.n_infinite,
        }


def evaluate_splits(
    residual: ArrayLike,
    se: ArrayLike,
    alpha: float,
    n_splits: int = 5,
    seed: int = 42,
    calibration_share: float = 0.5,
    score: str = DEFAULT_SCORE,
) -> SplitEvaluation:
    """Coverage and median width over random model-level calibration/test splits (q̂ and σ̂ from each
    calibration half).

    Every split is :func:`calibrate` on its calibration half, computed for all splits as one stack of pools
    (the halves have one size): one χ² quantile and one bisection for the lot instead of one per split, which
    took 2 s of the Residuals page's first visit at 50 splits × 5 methods.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    _check_score(score)
    r, s = _pool(residual, se)
    n = len(r)
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(n) for _ in range(n_splits)], dtype=int).reshape(n_splits, n)
    n_cal = int(round(calibration_share * n))
    cal, test = perms[:, :n_cal], perms[:, n_cal:]
    r_cal, s_cal = r[cal], s[cal]
    sigma = np.zeros(n_splits) if score == "se" else np.sqrt(deploy_variance(r_cal, s_cal))
    qhat = _kth_smallest(_scores(r_cal, s_cal, score), conformal_rank(n_cal, alpha))
    s_test = s[test]
    scale = np.sqrt(s_test**2 + sigma[:, None] ** 2) if score == "floor" else s_test
    half = np.where(np.isinf(qhat)[:, None], np.inf, qhat[:, None] * scale)
    n_test = test.shape[1]
    covered = np.abs(r[test]) <= half
    per = pd.DataFrame(
        {
            "split": np.arange(n_splits),
            "qhat": qhat,
            "sigma": sigma,
            "coverage": covered.mean(axis=1) if n_test else np.full(n_splits, np.nan),
            "median_width": np.median(2 * half, axis=1) if n_test else np.full(n_splits, np.nan),
            "n_calibration": n_cal,
            "n_test": n_test,
        }
    )
    fin = per[np.isfinite(per["median_width"])]
    agg = lambda s, f: float(f(s)) if len(s) else float("nan")
    return SplitEvaluation(
        alpha,
        agg(per["coverage"], np.mean),
        agg(per["coverage"], np.min),
        agg(per["coverage"], np.max),
        agg(fin["median_width"], np.mean),
        agg(fin["median_width"], np.min),
        agg(fin["median_width"], np.max),
        n_splits,
        int((~np.isfinite(per["qhat"])).sum()),
        per,
    )


def deploy(
    calibration_residual: ArrayLike,
    calibration_se: ArrayLike,
    judge: pd.DataFrame,
    alpha: float,
    score: str = DEFAULT_SCORE,
) -> tuple[pd.DataFrame, Quantile]:
    """Calibrate on every held-out model; give every model in ``judge`` (model, elo, se) an interval,
    ``elo ± q̂·√(SE² + σ̂²)`` ("floor") or ``elo ± q̂·SE`` ("se")."""
    q = calibrate(calibration_residual, calibration_se, alpha, score)
    out = judge.copy()
    # too few calibration models for α: every interval is unbounded, a zero SE's too (∞ · 0 is not a width)
    half = q.half_width(out["se"].to_numpy(float))
    out["lower"] = out["elo"] - half
    out["upper"] = out["elo"] + half
    out["half_width"] = half
    return out, q
