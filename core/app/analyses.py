"""The papers' analyses from the store: accuracy alignment, aggregation methods, budget curves, languages.

The CLI (``alignment``, ``aggregation``, ``budget``, ``languages``) and the
Analyses page call these; the statistics live in ``core.stats.alignment``,
``aggregation``, ``budget`` and ``languages``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pandas as pd

from core.app import Unavailable
from core.app.data import REPLAY_SAMPLE
from core.app.leaderboard import ratings
from core.methods import method_label
from core.stats.aggregation import AggregationResult, compare_aggregations
from core.stats.alignment import AlignmentResult, accuracy_alignment, model_accuracy
from core.stats.budget import BudgetCurves, budget_curves
from core.stats.languages import LanguageBreakdown, language_breakdown
from core.store import Store

__all__ = [
    "AggregationResult",
    "AlignmentResult",
    "BudgetCurves",
    "LanguageBreakdown",
    "aggregation",
    "alignment",
    "budget",
    "languages",
    "reference_scores",
]

REFERENCES = ("auto", "truth", "accuracy", "human")
Progress = Callable[[int, int], None] | None


def alignment(
    store: Store, dataset: str, judge: str | None, n_boot: int = 100, seed: int = 0, progress: Progress = None
) -> AlignmentResult | Unavailable:
    """Kendall's τ between the accuracy ranking and the judge's / humans' pairwise rankings."""
    comps = store.completions_frame(dataset)
    if comps.empty or comps["correct"].notna().sum() == 0:
        return Unavailable(
            f"dataset {dataset!r} has no completions with correctness labels: accuracy alignment "
            "needs verifiable prompts (the demo arena has them) or an imported benchmark with "
            "ground truth"
        )
    bf = store.battle_frame(dataset, judge)
    labels = {}
    if judge is not None and bf["judge_hard"].notna().any():
        labels[f"{judge} (hard)"] = "judge_hard"
    if bf["human_y"].notna().any():
        labels["human"] = "human_y"
    if not labels:
        return Unavailable("no judge labels or human votes on battles with graded completions")
    res = accuracy_alignment(bf, comps, labels, n_boot=n_boot, seed=seed, progress=progress)
    return Unavailable(res.reason) if res.reason else res


def reference_scores(store: Store, dataset: str, reference: str = "auto") -> tuple[pd.Series, str] | Unavailable:
    """Reference ranking: simulator truth, accuracy, or human Elo (in that order for 'auto')."""
    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}; expected one of {', '.join(REFERENCES)}")
    models = store.models_frame(dataset).set_index("model")
    if reference in ("auto", "truth") and models["true_elo"].notna().all():
        return models["true_elo"].astype(float), "true human Elo (simulated: an unlimited crowd's Bradley–Terry Elo)"
    if reference == "truth":
        return Unavailable(f"dataset {dataset!r} has no stored true strengths (only the demo arena does)")
    if reference in ("auto", "accuracy"):
        comps = store.completions_frame(dataset)
        if not comps.empty and comps["correct"].notna().sum() > 0:
            acc = model_accuracy(comps).set_index("model")["accuracy"]
            if len(acc) >= 3:
                return acc, "accuracy"
        if reference == "accuracy":
            return Unavailable(f"dataset {dataset!r} has no correctness labels")
    human = ratings(store, dataset, "human", ci=None)
    if isinstance(human, Unavailable):
        return Unavailable(f"no reference ranking available: {human.reason}")
    return human.frame.set_index("model")["elo"], method_label("human")


def aggregation(
    store: Store,
    dataset: str,
    judge: str | None,
    reference: str = "auto",
    n_shuffles: int = 50,
    seed: int = 0,
    progress: Progress = None,
) -> AggregationResult | Unavailable:
    """Win rate, Bradley–Terry, online Elo and TrueSkill on the same battles, against a reference ranking."""
    ref = reference_scores(store, dataset, reference)
    if isinstance(ref, Unavailable):
        return ref
    if judge is not None:
        population = store.n_judged_battles(dataset, judge)
    else:
        population = next(d["n_battles"] for d in store.info()["datasets"] if d["name"] == dataset)
    sampled = population > REPLAY_SAMPLE
    bf = (
        store.battle_frame(dataset, judge, sample=REPLAY_SAMPLE, seed=seed)
        if sampled
        else store.battle_frame(dataset, judge)
    )
    col = "judge_hard" if judge is not None else "human_y"
    bf = bf[bf[col].notna()]
    if bf.empty:
        return Unavailable(f"no {'judgments by ' + judge if judge else 'human votes'} in {dataset!r}")
    result = compare_aggregations(
        bf["model_a"].to_numpy(),
        bf["model_b"].to_numpy(),
        bf[col].to_numpy(float),
        ref[0],
        ref[1],
        n_shuffles=n_shuffles,
        seed=seed,
        progress=progress,
    )
    return replace(result, n_population=int(population)) if sampled else result


def _heldout_frame(store: Store, dataset: str, judge: str) -> pd.DataFrame | Unavailable:
    bf = store.battle_frame(dataset, judge)
    if bf["human_y"].notna().sum() == 0:
        return Unavailable(f"dataset {dataset!r} has no human votes: held-out Elo needs them")
    if bf["gap"].notna().sum() == 0:
        return Unavailable(f"judge {judge!r} has no rubric scores on {dataset!r}: Soft-Elo needs score gaps")
    return bf


def budget(
    store: Store,
    dataset: str,
    judge: str,
    budgets: Sequence[int],
    repeats: int = 5,
    alpha: float = 0.1,
    seed: int = 0,
    progress: Progress = None,
) -> BudgetCurves | Unavailable:
    """Held-out Hard/Soft accuracy at each judged budget per model (balanced subsamples)."""
    if not budgets or min(budgets) < 2:
        raise ValueError("budgets need at least one budget of 2 or more battles per model")
    bf = _heldout_frame(store, dataset, judge)
    if isinstance(bf, Unavailable):
        return bf
    return budget_curves(bf, budgets, repeats, alpha, seed, progress)


def languages(store: Store, dataset: str, judge: str, min_decisive: int = 50) -> LanguageBreakdown | Unavailable:
    """Per language: its own τ beside the pooled τ, and Hard/Soft-Elo against the global human Elo."""
    bf = _heldout_frame(store, dataset, judge)
    if isinstance(bf, Unavailable):
        return bf
    return language_breakdown(bf, min_decisive)
