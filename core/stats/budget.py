"""Budget curves: Hard- vs Soft-Elo held-out accuracy as the judged battles per model grow (Soft-Elo paper App. C)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from core.stats.conformal import evaluate_splits
from core.stats.heldout import Predictor, leave_one_model_out


@dataclass(frozen=True)
class BudgetCurves:
    runs: pd.DataFrame  # budget, repeat, method, mae, spearman, median_width, tau_mean, tau_sd, n_battles
    summary: pd.DataFrame  # budget, method, mae_mean, mae_lo, mae_hi, spearman_mean, width_mean, ...
    tau_summary: pd.DataFrame  # budget, tau_mean, tau_sd (across folds and repeats), tau_full


def balanced_subsample(frame: pd.DataFrame, budget: int, rng: np.random.Generator) -> pd.DataFrame:
    """Battles in random order, kept while either model is still under ``budget`` battles.

    Spreads the judged budget over models as evenly as the comparison graph allows
    (the Soft-Elo paper's balanced sampling).
    """
    order = rng.permutation(len(frame))
    a = frame["model_a"].to_numpy()[order]
    b = frame["model_b"].to_numpy()[order]
    counts: dict[str, int] = {}
    keep = np.zeros(len(order), bool)
    for k, (x, y) in enumerate(zip(a, b)):
        if counts.get(x, 0) < budget or counts.get(y, 0) < budget:
            keep[k] = True
            counts[x] = counts.get(x, 0) + 1
            counts[y] = counts.get(y, 0) + 1
    return frame.iloc[np.sort(order[keep])]


def budget_curves(
    frame: pd.DataFrame,
    budgets: Sequence[int],
    repeats: int = 5,
    alpha: float = 0.1,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> BudgetCurves:
    """Hard vs Soft held-out accuracy as the judged budget per model grows (paper App. C).

    The human reference is the full data's held-out human Elo; only the judged
    battles are subsampled.  τ is refitted in every fold of every run.
    """
    methods = (Predictor("hard", "hard"), Predictor("soft", "soft"))
    full = leave_one_model_out(frame, methods)
    human = full.table.set_index("model")["human_elo"]
    rng = np.random.default_rng(seed)
    rows, total, step = [], len(budgets) * repeats, 0
    for budget in budgets:
        for rep in range(repeats):
            sub = balanced_subsample(frame, int(budget), rng)
            judged = sub.copy()
            res = leave_one_model_out(judged, methods)
            t = res.table.set_index("model")
            for m in ("hard", "soft"):
                est = t[f"{m}_elo"].reindex(human.index)
                ok = est.notna() & human.notna()
                resid = (est - human)[ok]
                se = t[f"{m}_se"].reindex(human.index)[ok]
                ev = evaluate_splits(resid.to_numpy(), se.to_numpy(), alpha, n_splits=5, seed=seed)
                rows.append(
                    {
                        "budget": budget,
                        "repeat": rep,
                        "method": m,
                        "n_battles": len(sub),
                        "mae": float(resid.abs().mean()) if ok.any() else np.nan,
                        "spearman": float(stats.spearmanr(est[ok], human[ok])[0]) if ok.sum() >= 3 else np.nan,
                        "median_width": ev.width_mean,
                        "tau_mean": float(t["tau"].mean()),
                        "tau_sd": float(t["tau"].std(ddof=1)),
                    }
                )
            step += 1
            if progress:
                progress(step, total)
    runs = pd.DataFrame(rows)
    g = runs.groupby(["budget", "method"])
    summary = g.agg(
        mae_mean=("mae", "mean"),
        mae_lo=("mae", "min"),
        mae_hi=("mae", "max"),
        spearman_mean=("spearman", "mean"),
        spearman_lo=("spearman", "min"),
        spearman_hi=("spearman", "max"),
        width_mean=("median_width", "mean"),
        n_battles=("n_battles", "mean"),
    ).reset_index()
    soft = runs[runs["method"] == "soft"]
    tau_summary = (
        soft.groupby("budget")
        .agg(
            tau_mean=("tau_mean", "mean"),
            tau_sd_across_folds=("tau_sd", "mean"),
            tau_sd_across_repeats=("tau_mean", "std"),
        )
        .reset_index()
    )
    tau_summary["tau_full"] = full.tau_full
    return BudgetCurves(runs, summary, tau_summary)
