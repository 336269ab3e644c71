"""Coverage of the conformal intervals when a new model is judged on more (or fewer) battles (METHODS §4).

The two-component model of a held-out residual: ``r_i = b_i + e_i`` with ``b_i ~ N(0, σ²)`` the judge–human
disagreement of model i (it does not shrink with judge calls) and ``e_i ~ N(0, SE_i²)`` the judge Elo's sampling
error.  Calibration models draw ``SE_i ~ U(se_low, se_high)``; a new model judged on k times as many battles has
``SE/√k`` (SE drawn the same way).  For each score and form the interval's coverage of the new models and its mean
width are averaged over ``reps`` independent calibration pools, with the Monte-Carlo SE of the coverage.

Forms: ``se`` (``±q̂·SE``, the old score); ``floor`` (``±q̂·√(SE² + σ̂²)``, σ̂² the largest of the 80% upper
bound and the leave-one-out moment estimates: the drawn one); ``floor-moments`` (the same with the moment estimate
alone); ``jackknife+`` and ``full`` (:func:`core.stats.conformal.jackknife_plus_half_width`,
:func:`~core.stats.conformal.full_conformal_half_width`, both with moment estimates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.stats.conformal import (
    conformal_rank,
    deploy_variance,
    full_conformal_half_width,
    jackknife_plus_half_width,
    loo_disagreement_variance,
)

FORMS = ("se", "floor", "floor-moments", "jackknife+", "full")


def simulate_coverage(
    n_cal: int = 20,
    sigma: float = 20.0,
    se_low: float = 10.0,
    se_high: float = 30.0,
    multipliers: Sequence[float] = (0.1, 1.0, 4.0, 10.0),
    alphas: Sequence[float] = (0.1, 0.2),
    reps: int = 2000,
    n_new: int = 10,
    seed: int = 0,
    forms: Sequence[str] = FORMS,
) -> pd.DataFrame:
    """One row per (α, form, multiplier): coverage, its Monte-Carlo SE, mean width (Elo), and for ``floor`` the
    share of pools with q̂ < 1 (where the drawn interval need not contain the full-conformal one)."""
    rng = np.random.default_rng(seed)
    se = rng.uniform(se_low, se_high, (reps, n_cal))
    r = rng.normal(0.0, sigma, (reps, n_cal)) + rng.normal(0.0, 1.0, (reps, n_cal)) * se
    mult = np.asarray(multipliers, float)
    base = rng.uniform(se_low, se_high, (reps, len(mult), n_new))
    se_new = base / np.sqrt(mult)[None, :, None]
    r_new = rng.normal(0.0, sigma, se_new.shape) + rng.normal(0.0, 1.0, se_new.shape) * se_new
    flat_se = se_new.reshape(reps, -1)
    v_loo = loo_disagreement_variance(r, se)
    sigma2 = np.maximum(np.mean(r**2 - se**2, axis=1), 0.0)  # the moment estimate (condition C, the checks)
    sigma2_deploy = deploy_variance(r, se)
    rows = []
    for alpha in alphas:
        k = conformal_rank(n_cal, alpha)
        if k > n_cal:
            raise ValueError(f"{n_cal} calibration models are too few for α = {alpha}")
        q_se = np.sort(np.abs(r) / se, axis=1)[:, k - 1]
        q_floor = np.sort(np.abs(r) / np.sqrt(se**2 + v_loo), axis=1)[:, k - 1]
        fails_c = q_floor < 1  # the drawn interval need not contain the full-conformal one
        for form in forms:
            if form == "se":
                half = q_se[:, None] * flat_se
            elif form == "floor":
                half = q_floor[:, None] * np.sqrt(flat_se**2 + sigma2_deploy[:, None])
            elif form == "floor-moments":
                half = q_floor[:, None] * np.sqrt(flat_se**2 + sigma2[:, None])
            elif form == "jackknife+":
                half = jackknife_plus_half_width(r, se, flat_se, k)
            elif form == "full":
                half = full_conformal_half_width(r, se, flat_se, k)
            else:
                raise ValueError(f"unknown form {form!r}; one of {FORMS}")
            half = half.reshape(se_new.shape)
            covered = np.abs(r_new) <= half
            for j, m in enumerate(mult):
                per_rep = covered[:, j, :].mean(axis=1)
                rows.append(
                    {
                        "alpha": alpha,
                        "form": form,
                        "multiplier": float(m),
                        "coverage": float(per_rep.mean()),
                        "mc_se": float(per_rep.std(ddof=1) / np.sqrt(reps)),
                        "mean_width": float(2 * half[:, j, :].mean()),
                        "c_fails": float(fails_c.mean()) if form == "floor" else np.nan,
                    }
                )
    return pd.DataFrame(rows)
