"""Two models compared under each method: P(a beats b) with its interval and their direct battles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.domain import Z95, sigmoid
from core.store import Store


@dataclass(frozen=True)
class HeadToHead:
    """Two models compared under each method: P(a beats b) with a 95% interval, and their direct battles."""

    model_a: str
    model_b: str
    table: pd.DataFrame  # method, p_a, lower, upper, battles, a_score (mean target of a in direct battles)


@dataclass(frozen=True)
class PairModel:
    """One method's Bradley–Terry fit as head-to-head comparisons need it (persisted: any two models are then
    compared without touching the battles)."""

    label: str
    models: tuple[str, ...]
    theta: np.ndarray  # logit scale
    cov: np.ndarray  # sandwich covariance of θ (models × models)
    pairs: pd.DataFrame  # model_a, model_b, n, s: the direct battles, as the method labels them


def pair_model(
    store: Store, dataset: str, target: str, judge: str | None, tau: float | None
) -> PairModel | Unavailable:
    """The fit of ``target`` ('human', 'hard', 'soft' at ``tau``) with its sandwich covariance."""
    from core.stats import bt

    pairs = store.pair_stats(dataset, target, judge=judge, tau=tau)
    if pairs.empty:
        return Unavailable(f"no {target} labels on {dataset!r}")
    comps = bt.comparisons_from_pair_table(pairs)
    fit = bt.fit_bt(comps)
    m = comps.n_models
    label = {"human": "human votes", "hard": f"{judge} (hard labels)"}.get(target) or f"{judge} (soft, τ = {tau:.3g})"
    return PairModel(
        label,
        tuple(str(x) for x in comps.models),
        np.asarray(fit.theta, float),
        bt.sandwich_cov(comps, fit)[:m, :m],
        pairs[["model_a", "model_b", "n", "s"]].reset_index(drop=True),
    )


def head_to_head_targets(judge: str | None, tau: float | None) -> list[tuple[str, str | None, float | None]]:
    """The (target, judge, τ) fits a head-to-head comparison shows: human votes, and the judge's when chosen."""
    targets: list[tuple[str, str | None, float | None]] = [("human", None, None)]
    if judge is not None:
        targets.append(("hard", judge, None))
        if tau is not None:
            targets.append(("soft", judge, tau))
    return targets


def compare(
    fits: Sequence[PairModel | Unavailable], model_a: str, model_b: str, dataset: str
) -> HeadToHead | Unavailable:
    """P(a ≻ b) = σ(θ_a − θ_b) under each fit (:func:`pair_model`, one per :func:`head_to_head_targets`), with
    a 95% interval from the sandwich covariance of the contrast; no store access."""
    if model_a == model_b:
        raise ValueError("choose two different models")
    rows = []
    for fit in fits:
        if isinstance(fit, Unavailable) or model_a not in fit.models or model_b not in fit.models:
            continue
        ia, ib = fit.models.index(model_a), fit.models.index(model_b)
        diff = fit.theta[ia] - fit.theta[ib]
        se = math.sqrt(max(fit.cov[ia, ia] + fit.cov[ib, ib] - 2 * fit.cov[ia, ib], 0.0))
        pairs = fit.pairs
        a_first = (pairs["model_a"] == model_a) & (pairs["model_b"] == model_b)
        b_first = (pairs["model_a"] == model_b) & (pairs["model_b"] == model_a)
        n = float(pairs.loc[a_first | b_first, "n"].sum())
        s_a = float(pairs.loc[a_first, "s"].sum() + (pairs.loc[b_first, "n"] - pairs.loc[b_first, "s"]).sum())
        rows.append(
            {
                "method": fit.label,
                "p_a": float(sigmoid(diff)),
                "lower": float(sigmoid(diff - Z95 * se)),
                "upper": float(sigmoid(diff + Z95 * se)),
                "battles": int(round(n)),
                "a_score": s_a / n if n else math.nan,
            }
        )
    if not rows:
        return Unavailable(f"{model_a} and {model_b} are not both rated under any method on {dataset!r}")
    return HeadToHead(model_a, model_b, pd.DataFrame(rows))
