"""Residuals: where and by how much the judge's Elo misses the human Elo (each model held out).

The leave-one-out table is cached per (dataset, judge); the α slider only
changes q̂ and the split evaluation (:func:`residual_view`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core.app.leaderboard import smallest_alpha
from core.stats.conformal import calibrate, evaluate_splits, min_pool
from core.stats.heldout import HeldoutResult, residual_ramp

__all__ = ["ResidualView", "residual_ramp", "residual_view"]


@dataclass(frozen=True)
class ResidualView:
    summary: pd.DataFrame  # method, MAE, Spearman, Kendall, median SE, q̂ and σ̂ at α, coverage/width over splits
    per_split: pd.DataFrame  # method, split, qhat, coverage, median_width
    splits_defined: bool  # half the models are enough for α: split coverage means something
    notes: tuple[str, ...] = ()


def residual_view(held: HeldoutResult, alpha: float, n_splits: int = 50, seed: int = 42) -> ResidualView:
    """q̂ at α on all held-out models and the coverage/width of random half/half splits (cheap).

    When half the models are too few for α, every split's interval is
    unbounded: coverage is then trivially 1 and is reported as undefined.
    """
    table = held.table
    methods = [m for m in held.methods if f"{m}_elo" in table]
    summary = held.summary()
    summary = summary[summary["method"].isin(methods)].reset_index(drop=True)
    rows, per = [], []
    notes: list[str] = []
    for m in summary["method"]:
        q = calibrate(table[f"{m}_resid"], table[f"{m}_se"], alpha)
        ev = evaluate_splits(table[f"{m}_resid"], table[f"{m}_se"], alpha, n_splits=n_splits, seed=seed)
        all_infinite = ev.n_infinite == ev.n_splits
        se = table[f"{m}_se"].to_numpy(float)
        rows.append(
            {
                "qhat": q.qhat,
                "sigma": q.sigma,
                # the median of the scale q̂ multiplies, √(SE² + σ̂²): the width is 2·q̂·scale
                "median_scale": float(np.nanmedian(q.scale(se))) if np.isfinite(se).any() else np.nan,
                "coverage": np.nan if all_infinite else ev.coverage_mean,
                "coverage_min": np.nan if all_infinite else ev.coverage_min,
                "coverage_max": np.nan if all_infinite else ev.coverage_max,
                "median_width": ev.width_mean,
                "unbounded_splits": ev.n_infinite,
            }
        )
        per.append(ev.per_split.assign(method=m))
    out = pd.concat([summary, pd.DataFrame(rows)], axis=1)
    per_split = (
        pd.concat(per, ignore_index=True)
        if per
        else pd.DataFrame(columns=["method", "split", "qhat", "sigma", "coverage", "median_width"])
    )
    n = len(table)
    n_cal = int(round(n / 2))
    splits_defined = n_cal >= min_pool(alpha)
    if not splits_defined:
        notes.append(
            f"Half/half splits calibrate on {n_cal} of the {n} held-out models, fewer than the "
            f"{min_pool(alpha)} that α = {alpha:.2f} needs: every split's interval is unbounded, so "
            "coverage is undefined. "
            + (
                f"Raise α to at least {smallest_alpha(n_cal):.2f} to evaluate splits."
                if n_cal >= 1
                else "Splits need at least two held-out models."
            )
        )
    if not np.isfinite(out["qhat"]).all():
        notes.append(
            f"With all {n} held-out models as the calibration pool, α = {alpha:.2f} needs at least "
            f"{min_pool(alpha)} models: q̂ is unbounded."
        )
    return ResidualView(out, per_split, splits_defined, tuple(notes))


def heldout_report(frame: pd.DataFrame, alpha: float = 0.1, n_splits: int = 5, seed: int = 42) -> dict:
    """The held-out protocol with conformal intervals as plain data (the CLI's ``heldout``).

    Raises ``ValueError`` for an α outside (0, 1) or a frame without human votes.
    """
    import math

    from core.stats.heldout import leave_one_model_out

    if not 0 < alpha < 1:
        raise ValueError(f"--alpha must be in (0, 1), got {alpha}")
    if frame["human_y"].notna().sum() == 0:
        raise ValueError("no battle has a human vote: the held-out protocol compares judge Elo with human Elo")
    res = leave_one_model_out(frame)
    table, summary = res.table, res.summary().set_index("method")
    methods = {}
    fold_taus = pd.to_numeric(table["tau"], errors="coerce") if "tau" in table else pd.Series(dtype=float)
    for name in res.methods:
        if name not in summary.index:
            continue
        s = summary.loc[name]
        if int(s["n_models"]) == 0:
            # e.g. Soft-Elo where τ cannot be fitted: say why instead of a row of NaN (and keep the others)
            methods[name] = {
                "n_models": 0,
                "undefined": f"τ undefined: {res.tau_reason}"
                if name == "soft" and res.tau_full is None
                else f"no held-out model has a {name} Elo",
            }
            continue
        ev = evaluate_splits(table[f"{name}_resid"], table[f"{name}_se"], alpha, n_splits=n_splits, seed=seed)
        q = calibrate(table[f"{name}_resid"], table[f"{name}_se"], alpha)
        n_cal = int(round(q.n / 2))
        conf: dict[str, Any] = {
            "alpha": alpha,
            # q̂ for deployment: every held-out model is the calibration pool
            "qhat_all_models": q.qhat if math.isfinite(q.qhat) else None,
            "n_models_for_qhat": q.n,
            # the interval is judge Elo ± q̂·√(SE² + σ̂²) (METHODS §4): σ̂, the judge–human disagreement SD (Elo)
            "score": q.score,
            "sigma_all_models": q.sigma,
            "sigma_moments_all_models": q.sigma_moments,
            # coverage and width: random half/half splits, each calibrating its own q̂ on one half
            "splits": {
                "n_splits": ev.n_splits,
                "n_calibration": n_cal,
                "n_test": q.n - n_cal,
                "coverage_mean": ev.coverage_mean,
                "coverage_min": ev.coverage_min,
                "coverage_max": ev.coverage_max,
                "median_width_mean": ev.width_mean,
                "unbounded": ev.n_infinite,
            },
        }
        if not math.isfinite(q.qhat):
            conf["reason"] = q.reason
        if ev.n_infinite:
            conf["splits"]["note"] = (
                f"{ev.n_infinite} of {ev.n_splits} splits had a calibration half too small for "
                f"α = {alpha:g} (unbounded intervals; widths averaged over the others)"
            )
        methods[name] = {
            "n_models": int(s["n_models"]),
            "mae": s["mae"],
            "spearman": s["spearman"],
            "kendall": s["kendall"],
            "median_se": s["median_se"],
            "conformal": conf,
        }
    models = [
        {
            "model": r["model"],
            "human_elo": r["human_elo"],
            "hard_elo": r.get("hard_elo"),
            "soft_elo": r.get("soft_elo"),
            "hard_se": r.get("hard_se"),
            "soft_se": r.get("soft_se"),
            "n_target_battles": int(r["n_target_battles"]),
            "tau": r["tau"],
        }
        for r in table.to_dict("records")
    ]
    out: dict = {
        "tau": {"full": res.tau_full, "heldout_mean": float(fold_taus.mean()) if fold_taus.notna().any() else None},
        "methods": methods,
        "models": models,
        "skipped": res.skipped,
    }
    if res.tau_full is None:
        out["tau"]["reason"] = res.tau_reason
    return out
