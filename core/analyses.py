"""The papers' analyses, composed from the store (issue: interactive views).

Each function takes a :class:`~core.store.Store` and names, pulls the frames
it needs through the store's queries, and returns a result object from the
analysis module that does the statistics.  The CLI (``alignment``,
``aggregation``, ``budget``, ``languages``) and the Analyses page call these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd


class AnalysisUnavailable(ValueError):
    """The data cannot support this analysis (message says why)."""


def alignment_from_store(store, dataset: str, judge: str | None, n_boot: int = 100, seed: int = 0,
                         progress: Callable[[int, int], None] | None = None):
    from core.alignment import accuracy_alignment

    comps = store.completions_frame(dataset)
    if comps.empty or comps["correct"].notna().sum() == 0:
        raise AnalysisUnavailable(
            f"dataset {dataset!r} has no completions with correctness labels: accuracy alignment needs "
            "verifiable prompts (the demo arena has them) or an imported benchmark with ground truth")
    bf = store.battle_frame(dataset, judge)
    labels = {}
    if judge is not None and bf["judge_hard"].notna().any():
        labels[f"{judge} (hard)"] = "judge_hard"
    if bf["human_y"].notna().any():
        labels["human"] = "human_y"
    if not labels:
        raise AnalysisUnavailable("no judge labels or human votes on battles with graded completions")
    return accuracy_alignment(bf, comps, labels, n_boot=n_boot, seed=seed, progress=progress)


def reference_scores(store, dataset: str, reference: str = "auto") -> tuple[pd.Series, str]:
    """Reference ranking: simulator truth, accuracy, or human Elo (in that order for 'auto')."""
    models = store.models_frame(dataset).set_index("model")
    if reference in ("auto", "truth") and models["true_elo"].notna().all():
        return models["true_elo"].astype(float), "true strength (simulated)"
    if reference == "truth":
        raise AnalysisUnavailable(f"dataset {dataset!r} has no stored true strengths (only the demo arena does)")
    if reference in ("auto", "accuracy"):
        from core.alignment import model_accuracy

        comps = store.completions_frame(dataset)
        if not comps.empty and comps["correct"].notna().sum() > 0:
            acc = model_accuracy(comps).set_index("model")["accuracy"]
            if len(acc) >= 3:
                return acc, "accuracy"
        if reference == "accuracy":
            raise AnalysisUnavailable(f"dataset {dataset!r} has no correctness labels")
    from core.leaderboard import bradley_terry_leaderboard

    try:
        lb = bradley_terry_leaderboard(store, dataset, "human", ci=None)
    except ValueError as exc:
        raise AnalysisUnavailable(f"no reference ranking available: {exc}") from None
    return lb.frame.set_index("model")["elo"], "human Elo"


def aggregation_from_store(store, dataset: str, judge: str | None, reference: str = "auto",
                           n_shuffles: int = 50, seed: int = 0,
                           progress: Callable[[int, int], None] | None = None):
    from core.aggregation import compare_aggregations

    ref, ref_name = reference_scores(store, dataset, reference)
    bf = store.battle_frame(dataset, judge)
    col = "judge_hard" if judge is not None else "human_y"
    bf = bf[bf[col].notna()]
    if bf.empty:
        raise AnalysisUnavailable(f"no {'judgments by ' + judge if judge else 'human votes'} in {dataset!r}")
    return compare_aggregations(bf["model_a"].to_numpy(), bf["model_b"].to_numpy(), bf[col].to_numpy(float),
                                ref, ref_name, n_shuffles=n_shuffles, seed=seed, progress=progress)


def battle_frame_for(store, dataset: str, judge: str) -> pd.DataFrame:
    bf = store.battle_frame(dataset, judge)
    if bf["human_y"].notna().sum() == 0:
        raise AnalysisUnavailable(f"dataset {dataset!r} has no human votes: held-out Elo needs them")
    if bf["gap"].notna().sum() == 0:
        raise AnalysisUnavailable(f"judge {judge!r} has no rubric scores on {dataset!r}: Soft-Elo needs score gaps")
    return bf


# ------------------------------------------------------------ budget curves


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


def budget_curves(frame: pd.DataFrame, budgets, repeats: int = 5, alpha: float = 0.1, seed: int = 0,
                  progress: Callable[[int, int], None] | None = None) -> BudgetCurves:
    """Hard vs Soft held-out accuracy as the judged budget per model grows (paper App. C).

    The human reference is the full data's held-out human Elo; only the judged
    battles are subsampled.  τ is refitted in every fold of every run.
    """
    from scipy import stats

    from core.conformal import evaluate_splits
    from core.heldout import Method, leave_one_model_out

    methods = (Method("hard", "hard"), Method("soft", "soft"))
    full = leave_one_model_out(frame, methods, n_boot=20, seed=seed)
    human = full.table.set_index("model")["human_elo"]
    rng = np.random.default_rng(seed)
    rows, total, step = [], len(budgets) * repeats, 0
    for budget in budgets:
        for rep in range(repeats):
            sub = balanced_subsample(frame, int(budget), rng)
            judged = sub.copy()
            res = leave_one_model_out(judged, methods, n_boot=20, seed=seed + rep)
            t = res.table.set_index("model")
            for m in ("hard", "soft"):
                est = t[f"{m}_elo"].reindex(human.index)
                ok = est.notna() & human.notna()
                resid = (est - human)[ok]
                se = t[f"{m}_se"].reindex(human.index)[ok]
                ev = evaluate_splits(resid.to_numpy(), se.to_numpy(), alpha, n_splits=5, seed=seed)
                rows.append({"budget": budget, "repeat": rep, "method": m, "n_battles": len(sub),
                             "mae": float(resid.abs().mean()) if ok.any() else np.nan,
                             "spearman": float(stats.spearmanr(est[ok], human[ok])[0]) if ok.sum() >= 3 else np.nan,
                             "median_width": ev.width_mean, "tau_mean": float(t["tau"].mean()),
                             "tau_sd": float(t["tau"].std(ddof=1))})
            step += 1
            if progress:
                progress(step, total)
    runs = pd.DataFrame(rows)
    g = runs.groupby(["budget", "method"])
    summary = g.agg(mae_mean=("mae", "mean"), mae_lo=("mae", "min"), mae_hi=("mae", "max"),
                    spearman_mean=("spearman", "mean"), spearman_lo=("spearman", "min"),
                    spearman_hi=("spearman", "max"), width_mean=("median_width", "mean"),
                    n_battles=("n_battles", "mean")).reset_index()
    soft = runs[runs["method"] == "soft"]
    tau_summary = soft.groupby("budget").agg(tau_mean=("tau_mean", "mean"), tau_sd_across_folds=("tau_sd", "mean"),
                                             tau_sd_across_repeats=("tau_mean", "std")).reset_index()
    tau_summary["tau_full"] = full.tau_full
    return BudgetCurves(runs, summary, tau_summary)


def budget_from_store(store, dataset: str, judge: str, budgets, repeats: int = 5, alpha: float = 0.1, seed: int = 0,
                      progress=None) -> BudgetCurves:
    return budget_curves(battle_frame_for(store, dataset, judge), budgets, repeats, alpha, seed, progress)


# ---------------------------------------------------------------- languages
@dataclass(frozen=True)
class LanguageBreakdown:
    table: pd.DataFrame  # language, n_battles, n_decisive, tau, tau_lo, tau_hi, hard_mae, soft_mae, spearman...
    pooled_tau: float | None
    warnings: tuple[str, ...]


def language_breakdown(frame: pd.DataFrame, min_decisive: int = 50) -> LanguageBreakdown:
    """Per language: counts, own τ next to the pooled τ, Hard/Soft Elo vs the global human Elo.

    Per the paper (App. E) each language's Hard- and Soft-Elo are fitted on that
    language's battles with the *pooled* τ and compared with the human Elo from
    all battles.
    """
    from scipy import stats

    from core import bt
    from core.calibration import fit_tau
    from core.heldout import soft_targets

    pooled = fit_tau(frame["gap"], frame["human_y"])
    hv = frame[frame["human_y"].notna()]
    human = bt.fit_bt(bt.comparisons_from_battles(hv["model_a"].to_numpy(), hv["model_b"].to_numpy(),
                                                  hv["human_y"].to_numpy(float)), lam=0.01)
    human_elo = pd.Series(human.elo, index=human.models)
    rows, warnings = [], []
    lang = frame["language"].fillna("unknown")
    for language, f in frame.groupby(lang):
        dec = f["human_y"].isin([0.0, 1.0]) & f["gap"].notna()
        own = fit_tau(f["gap"], f["human_y"])
        row = {"language": language, "n_battles": len(f), "n_decisive": int(dec.sum()), "tau": own.tau,
               "tau_lo": own.lower, "tau_hi": own.upper}
        for m, y in (("hard", f["judge_hard"].to_numpy(float)),
                     ("soft", soft_targets(f["gap"].to_numpy(float), pooled.tau) if pooled.tau else None)):
            if y is None:
                continue
            ok = np.isfinite(y)
            if ok.sum() < 2:
                row[f"{m}_mae"] = row[f"{m}_spearman"] = np.nan
                continue
            fit = bt.fit_bt(bt.comparisons_from_battles(f["model_a"].to_numpy()[ok], f["model_b"].to_numpy()[ok],
                                                        y[ok]), lam=0.01)
            est = pd.Series(fit.elo, index=fit.models)
            ref = human_elo.reindex(est.index)
            # compare on a common centring: both relative to the models present in this language
            good = ref.notna()
            d = (est[good] - est[good].mean()) - (ref[good] - ref[good].mean())
            row[f"{m}_mae"] = float(d.abs().mean())
            varied = good.sum() >= 3 and np.ptp(est[good]) > 0 and np.ptp(ref[good]) > 0
            row[f"{m}_spearman"] = float(stats.spearmanr(est[good], ref[good])[0]) if varied else np.nan
        if row["n_decisive"] < min_decisive:
            warnings.append(f"{language}: only {row['n_decisive']} decisive human battles, too few for its own τ "
                            "(use the pooled τ, as the paper recommends)")
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("n_battles", ascending=False).reset_index(drop=True)
    return LanguageBreakdown(table, pooled.tau, tuple(warnings))


def languages_from_store(store, dataset: str, judge: str, min_decisive: int = 50) -> LanguageBreakdown:
    return language_breakdown(battle_frame_for(store, dataset, judge), min_decisive)
