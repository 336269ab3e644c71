"""The papers' analyses, composed from the store (issue: interactive views).

Each function takes a :class:`~core.store.Store` and names, pulls the frames
it needs through the store's queries, and returns a result object from the
analysis module that does the statistics.  The CLI (``alignment``,
``aggregation``, ``budget``, ``languages``) and the Analyses page call these.
"""

from __future__ import annotations

from collections.abc import Callable

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
