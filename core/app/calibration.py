"""Calibration: is σ(τ·score gap) a trustworthy probability that humans prefer a?

The page caches the battle frame and the τ fit per (dataset, judge); the τ
slider only changes :func:`tau_profile`'s marker and one reliability curve.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.domain import wilson
from core.stats.calibration import (
    GapAgreement,
    Reliability,
    TauFit,
    decisive_cells,
    gap_agreement,
    neg_loglik,
    reliability,
)

__all__ = [
    "GapAgreement",
    "Reliability",
    "agreement",
    "label_reliability",
    "pool_tied_bins",
    "reliability_curves",
    "tau_profile",
]


def tau_profile(frame: pd.DataFrame, fit: TauFit, user_tau: float | None = None, points: int = 161) -> pd.DataFrame:
    """Profile deviance 2·(ℓ(τ̂) − ℓ(τ)) on a grid that frames the interval (and the user's τ).

    The fit's own profile spans ±2.5 in ln τ, where a well-determined τ is a
    spike; this grid spans about three interval half-widths on each side.
    """
    if fit.tau is None:
        raise ValueError(f"no fitted τ to profile: {fit.reason}")
    # the distinct (Δ, y) cells with counts: the same likelihood, and few cells where gaps take few values
    g, y, w = decisive_cells(frame["gap"], frame["human_y"])
    lt = math.log(fit.tau)
    lo = math.log(fit.lower) if fit.lower else lt - 1.0
    hi = math.log(fit.upper) if fit.upper else lt + 1.0
    half = max(lt - lo, hi - lt, 0.02)
    a, b = lt - 3 * half, lt + 3 * half
    if user_tau is not None and user_tau > 0:
        a, b = min(a, math.log(user_tau) - 0.5 * half), max(b, math.log(user_tau) + 0.5 * half)
    grid = np.linspace(a, b, points)
    nll = neg_loglik(grid, g, y, w)
    best = float(neg_loglik(lt, g, y, w)[0])
    return pd.DataFrame({"tau": np.exp(grid), "delta": 2 * (nll - best)})


def pool_tied_bins(rel: Reliability) -> Reliability:
    """Merge reliability bins that share one confidence value (hard labels, label smoothing).

    Equal-mass bins cut a constant confidence into arbitrary groups whose
    spread is noise, not miscalibration; one bin per distinct confidence shows
    (and scores) what the target claims.  ECE is recomputed on the pooled bins.
    """
    b = rel.bins
    if len(b) < 2 or b["confidence"].round(12).nunique() == len(b):
        return rel
    hits = b["accuracy"] * b["n"]
    grouped = (
        pd.DataFrame({"confidence": b["confidence"].round(12), "n": b["n"], "hits": hits})
        .groupby("confidence", as_index=False)
        .sum()
    )
    acc = grouped["hits"] / grouped["n"]
    lower, upper = wilson(grouped["hits"].to_numpy(float), grouped["n"].to_numpy(float))
    bins = pd.DataFrame(
        {
            "bin": np.arange(len(grouped)),
            "n": grouped["n"].astype(int),
            "confidence": grouped["confidence"],
            "accuracy": acc,
            "lower": lower,
            "upper": upper,
        }
    )
    ece = float(np.sum(bins["n"] / bins["n"].sum() * np.abs(bins["accuracy"] - bins["confidence"])))
    return Reliability(rel.label, bins, ece, rel.n, rel.accuracy)


def reliability_curves(frame: pd.DataFrame, fitted_tau: float, user_tau: float, q: float) -> list[Reliability]:
    """Reliability at the fitted τ, the user's τ, hard labels (τ = ∞) and label smoothing q."""
    gap, human, hard = frame["gap"], frame["human_y"], frame["judge_hard"]
    curves = [
        reliability(gap, human, hard, tau=fitted_tau, label=f"fitted τ = {fitted_tau:.3f}"),
        reliability(gap, human, hard, tau=user_tau, label=f"slider τ = {user_tau:.2f}"),
        reliability(gap, human, hard, tau=math.inf),
        reliability(gap, human, hard, q=q),
    ]
    return [pool_tied_bins(c) for c in curves]


def label_reliability(frame: pd.DataFrame, q: float) -> list[Reliability]:
    """Reliability of a verdict-only judge: its hard labels (τ = ∞) and label smoothing q, nothing soft."""
    gap, human, hard = frame["gap"], frame["human_y"], frame["judge_hard"]
    curves = [reliability(gap, human, hard, tau=math.inf), reliability(gap, human, hard, q=q)]
    return [pool_tied_bins(c) for c in curves]


def agreement(frame: pd.DataFrame, tau: float | None) -> GapAgreement:
    """Human agreement with the judge by score-gap bin (and the low-τ warning)."""
    return gap_agreement(frame["gap"], frame["human_y"], tau)
