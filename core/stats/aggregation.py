"""Aggregation methods compared on the same battles (``correct-looks-better.txt`` App. C).

Win rate, Bradley–Terry, online Elo (mean over shuffled battle orders) and
TrueSkill (the Thurstone–Mosteller full-pairing model of the ``openskill``
package, the TrueSkill family) each rank the models; each ranking is then
compared with a reference (human Elo, accuracy or the simulator's true
strength) by Kendall's τ, K_D and Spearman's ρ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.stats.agreement import agreement

METHODS = ("win_rate", "bradley_terry", "online_elo", "trueskill")


@dataclass(frozen=True)
class AggregationResult:
    scores: pd.DataFrame  # model, method, score, reference
    table: pd.DataFrame  # method, kendall, kendall_distance, spearman, pearson, n_models
    reference_name: str
    n_battles: int
    n_population: int | None = None  # battles the compared ones were sampled from (None: not a sample)


def win_rate(a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str]) -> np.ndarray:
    """Share of a model's battles it won (ties count half)."""
    idx = {m: i for i, m in enumerate(models)}
    ia = np.array([idx[m] for m in a])
    ib = np.array([idx[m] for m in b])
    wins = np.bincount(ia, weights=y, minlength=len(models)) + np.bincount(ib, weights=1 - y, minlength=len(models))
    games = np.bincount(ia, minlength=len(models)) + np.bincount(ib, minlength=len(models))
    with np.errstate(invalid="ignore", divide="ignore"):
        return wins / games


def trueskill_scores(a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str], seed: int = 0) -> np.ndarray:
    """TrueSkill-family ratings (μ) from one pass over the battles in a seeded random order.

    Soft or tie targets: y > 0.5 is a win for a, y < 0.5 for b, 0.5 a draw.
    """
    from openskill.models import ThurstoneMostellerFull

    model = ThurstoneMostellerFull()
    ratings = {m: model.rating(name=m) for m in models}
    order = np.random.default_rng(seed).permutation(len(a))
    for k in order:
        ra, rb = ratings[a[k]], ratings[b[k]]
        ranks = [0.0, 1.0] if y[k] > 0.5 else ([1.0, 0.0] if y[k] < 0.5 else [0.0, 0.0])
        [[ra], [rb]] = model.rate([[ra], [rb]], ranks=ranks)
        ratings[a[k]], ratings[b[k]] = ra, rb
    return np.array([ratings[m].mu for m in models])


def compare_aggregations(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    reference: pd.Series,
    reference_name: str,
    n_shuffles: int = 50,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> AggregationResult:
    """Rank models by each method on battles (a, b, y) and compare with ``reference``.

    ``reference`` is indexed by model name (higher = better).
    """
    from core.stats.bt import comparisons_from_battles, fit_bt
    from core.stats.ratings import online_elo_shuffles

    a, b, y = np.asarray(a, dtype=object), np.asarray(b, dtype=object), np.asarray(y, float)
    ok = np.isfinite(y)
    a, b, y = a[ok], b[ok], y[ok]
    models = sorted(set(a) | set(b))
    scores: dict[str, np.ndarray] = {}
    scores["win_rate"] = win_rate(a, b, y, models)
    if progress:
        progress(1, 4)
    fit = fit_bt(comparisons_from_battles(a, b, y, models=models), lam=1e-6)
    scores["bradley_terry"] = np.asarray(fit.elo)
    if progress:
        progress(2, 4)
    battles = pd.DataFrame({"model_a": a, "model_b": b, "y": y})
    study = online_elo_shuffles(battles, n_shuffles=n_shuffles, seed=seed)
    scores["online_elo"] = study.frame.set_index("model")["mean"].reindex(models).to_numpy(float)
    if progress:
        progress(3, 4)
    scores["trueskill"] = trueskill_scores(a, b, y, models, seed=seed)
    if progress:
        progress(4, 4)
    ref = reference.reindex(models).to_numpy(float)
    rows, long = [], []
    for method in METHODS:
        agr = agreement(ref, scores[method])
        rows.append({"method": method, **agr.as_dict()})
        long.append(pd.DataFrame({"model": models, "method": method, "score": scores[method], "reference": ref}))
    return AggregationResult(pd.concat(long, ignore_index=True), pd.DataFrame(rows), reference_name, int(len(a)))
