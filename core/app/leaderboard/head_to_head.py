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
    # the direct battles of each compared pair as the method labels them, once per unordered pair: lo < hi index
    # ``models``, n battles, s_lo the score of model ``lo`` (a tie counts half); indices, not names: a fit of
    # 250 models has 31,000 pairs, and with names each of its persisted copies took 1.6 s to decode
    pairs: pd.DataFrame


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
        _unordered(pairs, comps.models),
    )


def _unordered(pairs: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """``pairs`` (model_a, model_b, n, s: ordered) as lo, hi, n, s_lo: one row per unordered pair."""
    index = {str(m): k for k, m in enumerate(models)}
    i = pairs["model_a"].astype(str).map(index).to_numpy(np.int32)
    j = pairs["model_b"].astype(str).map(index).to_numpy(np.int32)
    n = pairs["n"].to_numpy(float)
    s = pairs["s"].to_numpy(float)
    frame = pd.DataFrame({"lo": np.minimum(i, j), "hi": np.maximum(i, j), "n": n, "s_lo": np.where(i < j, s, n - s)})
    return frame.groupby(["lo", "hi"], as_index=False, sort=True).sum()


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
        lo, hi = min(ia, ib), max(ia, ib)
        direct = pairs[(pairs["lo"] == lo) & (pairs["hi"] == hi)]
        n = float(direct["n"].sum())
        s_lo = float(direct["s_lo"].sum())
        s_a = s_lo if ia == lo else n - s_lo
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


def head_to_head_table(h2h: HeadToHead) -> pd.DataFrame:
    """The head-to-head table as the page shows it, one row per method: P(a beats b) and its 95% interval as
    percentages, the direct battles, and a's mean score in them ("—" when they had none), under column names
    that name the two models."""
    a, b, t = h2h.model_a, h2h.model_b, h2h.table
    return pd.DataFrame(
        {
            "method": t["method"],
            f"P({a} beats {b})": t["p_a"].map("{:.1%}".format),
            "95% CI": [f"{lo:.1%}–{hi:.1%}" for lo, hi in zip(t["lower"], t["upper"])],
            "battles between them": t["battles"],
            f"{a}'s mean score in them": t["a_score"].map(lambda x: "—" if x != x else f"{x:.2f}"),
        }
    )
