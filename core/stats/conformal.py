"""Split conformal intervals for a model's human Elo (METHODS.md §4).

Score of calibration model i: ``s_i = |r_i| / SE_i`` (judge Elo − human Elo
over the judge Elo's bootstrap SE; SE ≤ 1e-6 excluded).  With n scores and
miscoverage α, ``k = ⌈(n+1)(1−α)⌉`` and ``q̂`` is the k-th smallest score;
when ``k > n`` the pool is too small for α and ``q̂ = ∞`` (reported, never
clipped).  A new model's interval is ``judge_elo ± q̂·SE``; coverage ≥ 1−α
holds marginally under exchangeability of models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

SE_FLOOR = 1e-6


@dataclass(frozen=True)
class Quantile:
    alpha: float
    n: int
    k: int
    qhat: float  # math.inf when the pool is too small
    reason: str | None = None

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


def scores(residual: ArrayLike, se: ArrayLike) -> np.ndarray:
    """Nonconformity scores |r| / SE of the models with a finite residual and an SE above the floor."""
    r, s = np.asarray(residual, float), np.asarray(se, float)
    ok = np.isfinite(r) & np.isfinite(s) & (s > SE_FLOOR)
    return np.abs(r[ok]) / s[ok]


def conformal_quantile(s: np.ndarray, alpha: float) -> Quantile:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    s = np.sort(np.asarray(s, float))
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
    return Quantile(alpha, n, k, float(s[k - 1]))


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
    residual: ArrayLike, se: ArrayLike, alpha: float, n_splits: int = 5, seed: int = 42, calibration_share: float = 0.5
) -> SplitEvaluation:
    """Coverage and median width over random model-level calibration/test splits."""
    r_all, se_all = np.asarray(residual, float), np.asarray(se, float)
    ok = np.isfinite(r_all) & np.isfinite(se_all) & (se_all > SE_FLOOR)
    r, s = r_all[ok], se_all[ok]
    n = len(r)
    rng = np.random.default_rng(seed)
    rows = []
    for split in range(n_splits):
        perm = rng.permutation(n)
        n_cal = int(round(calibration_share * n))
        cal, test = perm[:n_cal], perm[n_cal:]
        q = conformal_quantile(np.abs(r[cal]) / s[cal], alpha)
        covered = np.abs(r[test]) <= q.qhat * s[test]
        width = 2 * q.qhat * s[test]
        rows.append(
            {
                "split": split,
                "qhat": q.qhat,
                "coverage": float(covered.mean()) if len(test) else np.nan,
                "median_width": float(np.median(width)) if len(test) else np.nan,
                "n_calibration": len(cal),
                "n_test": len(test),
            }
        )
    per = pd.DataFrame(rows)
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
    calibration_residual: ArrayLike, calibration_se: ArrayLike, judge: pd.DataFrame, alpha: float
) -> tuple[pd.DataFrame, Quantile]:
    """Calibrate on every held-out model; give every model in ``judge`` (model, elo, se) an interval."""
    q = conformal_quantile(scores(calibration_residual, calibration_se), alpha)
    out = judge.copy()
    se = out["se"].to_numpy(float)
    if math.isinf(q.qhat):
        # too few calibration models for α: every interval is unbounded, a zero SE's too (∞ · 0 is not a width)
        half = np.where(np.isnan(se), np.nan, np.inf)
    else:
        half = q.qhat * se
    out["lower"] = out["elo"] - half
    out["upper"] = out["elo"] + half
    out["half_width"] = half
    return out, q
