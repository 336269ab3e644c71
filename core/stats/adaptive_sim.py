"""Simulated arenas with known truth for the adaptive and the fixed design (METHODS §4, benchmarks/bench_adaptive.py).

An arena: ``n_rated`` human-rated models (the anchors and the calibration models) with human Elo spread over
``spread`` Elo; each has a judge Elo ``g = h + b``, ``b ~ N(0, σ²)`` the judge–human disagreement, known to the
design (the anchors' judge Elo comes from the whole arena's judged battles).  The conformal calibration is the
one the Leaderboard draws (:func:`core.stats.conformal.calibrate`, floor score) on the rated models' held-out
residuals ``r_i = b_i + e_i``, ``e_i ~ N(0, SE_i²)``, with ``SE_i`` the sampling error of ``cal_calls`` judge
calls at the information a model gets against opponents spread over the arena.

A hidden new model has human Elo ``h`` (drawn over the arena's range widened by ``beyond`` on both sides, so
some are stronger or weaker than every anchor) and judge Elo ``g = h + b``.  A judge call against anchor ``j``
in order ``o`` is a win with probability ``σ((g − g_j)/s + (−1)^o·δ)``, ``δ`` a position bias that both orders
cancel.  Each design's prediction is :func:`core.stats.adaptive.fit_rating` on its calls, and its interval
``± q̂·√(SE² + σ̂²)`` (the Leaderboard's form).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.domain import ELO_PER_LOGIT
from core.stats.adaptive import (
    AdaptiveConfig,
    AdaptiveResult,
    Round,
    decide,
    fit_rating,
    placement,
    prompt_order,
    rank_interval,
    win_probability,
)
from core.stats.conformal import Quantile, calibrate

FIXED_ANCHORS = 10


@dataclass(frozen=True)
class Arena:
    names: list[str]
    human: np.ndarray
    judge: np.ndarray
    shared: dict[str, list[int]]  # the prompts each rated model shares with a new model
    quantiles: dict[float, Quantile]
    cal_calls: float  # median judge calls of a calibration model


def make_arena(
    rng: np.random.Generator,
    n_rated: int = 47,
    n_prompts: int = 600,
    sigma: float = 20.0,
    spread: float = 600.0,
    cal_calls: float = 2456.0,
    answered: float = 0.87,
    alphas: Sequence[float] = (0.1, 0.2),
) -> Arena:
    """An arena shaped like the demo's by default (48 models, 600 prompts, ~520 shared prompts per model,
    a calibration model judged on ~1,228 battles in both orders)."""
    human = np.sort(rng.uniform(1500 - spread / 2, 1500 + spread / 2, n_rated))[::-1]
    b = rng.normal(0.0, sigma, n_rated)
    judge = human + b
    names = [f"m{i:03d}" for i in range(n_rated)]
    shared = {m: sorted(rng.choice(n_prompts, int(answered * n_prompts), replace=False).tolist()) for m in names}
    calls = cal_calls * rng.uniform(0.5, 1.5, n_rated)
    # the mean p(1 − p) against opponents spread over the arena: a calibration model's information per call
    info = win_probability(judge[:, None], judge[None, :])
    per_call = (info * (1 - info)).mean(axis=1)
    se = ELO_PER_LOGIT / np.sqrt(calls * per_call)
    residual = b + rng.normal(0.0, 1.0, n_rated) * se
    quantiles = {float(a): calibrate(residual, se, float(a), score="floor") for a in alphas}
    return Arena(names, human, judge, shared, quantiles, float(np.median(calls)))


def _calls(rng: np.random.Generator, g_new: float, g_anchor: np.ndarray, bias: float) -> np.ndarray:
    """Both orders of each battle: the new model's score in each call (the first order favours it by ``bias``)."""
    p1 = win_probability(g_new + bias * ELO_PER_LOGIT, g_anchor)
    p2 = win_probability(g_new - bias * ELO_PER_LOGIT, g_anchor)
    return np.stack([rng.random(g_anchor.size) < p1, rng.random(g_anchor.size) < p2], axis=1).astype(float)


@dataclass(frozen=True)
class Placed:
    design: str
    calls: int
    estimate: float
    se: float
    stop: str
    result: AdaptiveResult | None = None


def run_fixed(
    arena: Arena, g_new: float, rng: np.random.Generator, budget: int | None = None, bias: float = 0.3
) -> Placed:
    """``core.app.newmodel.plan_battles``: 10 anchors evenly spaced in human Elo, every shared prompt (or
    budget ÷ 20 of them each), both orders."""
    k = min(FIXED_ANCHORS, len(arena.names))
    picks = np.unique(np.round(np.linspace(0, len(arena.names) - 1, k)).astype(int))
    per = None if budget is None else max(1, budget // (2 * len(picks)))
    opp = np.concatenate(
        [np.full(len(arena.shared[arena.names[i]][:per] if per else arena.shared[arena.names[i]]), i) for i in picks]
    ).astype(int)
    y = _calls(rng, g_new, arena.judge[opp], bias)
    est, se = fit_rating(np.repeat(arena.judge[opp], 2), y.ravel())
    return Placed("fixed", int(y.size), est, se, "every planned battle")


def fixed_calls(arena: Arena, budget: int | None = None) -> int:
    k = min(FIXED_ANCHORS, len(arena.names))
    picks = np.unique(np.round(np.linspace(0, len(arena.names) - 1, k)).astype(int))
    per = None if budget is None else max(1, budget // (2 * len(picks)))
    return 2 * sum(len(arena.shared[arena.names[i]][:per] if per else arena.shared[arena.names[i]]) for i in picks)


def run_adaptive(
    arena: Arena,
    g_new: float,
    rng: np.random.Generator,
    cfg: AdaptiveConfig,
    budget: int | None = None,
    alpha: float = 0.1,
    bias: float = 0.3,
    seed: int = 0,
) -> Placed:
    """The sequential design, each round's interval the Leaderboard's form at ``alpha``; the budget defaults to
    the fixed design's calls, so it never spends more."""
    q = arena.quantiles[alpha]
    human = dict(zip(arena.names, arena.human, strict=True))
    judge = dict(zip(arena.names, arena.judge, strict=True))
    ordered = prompt_order(arena.shared, seed)
    cap = fixed_calls(arena, budget) if budget is None else min(budget, fixed_calls(arena, budget))
    used: set[tuple[str, int]] = set()
    opp: list[float] = []
    ys: list[np.ndarray] = []
    result = AdaptiveResult(fixed_calls=fixed_calls(arena, budget))
    batch = placement(human, ordered, cfg)
    batch = batch[: max(1, cap // cfg.orders)]
    est, se = float("nan"), float("inf")
    while True:
        if batch:
            g = np.array([judge[m] for m, _ in batch])
            ys.append(_calls(rng, g_new, g, bias).ravel())
            opp += np.repeat(g, 2).tolist()
            used |= set(batch)
        est, se = fit_rating(np.array(opp), np.concatenate(ys))
        half = float(q.half_width(se)) if q.finite else float("inf")
        spent = len(opp)
        result.rounds.append(Round(spent, est, se, q.sigma, half, rank_interval(est - half, est + half, arena.human)))
        remaining = sum(len(v) for v in ordered.values()) - len(used)
        reason, batch = decide(result.rounds, judge, ordered, used, cfg, cap, remaining)
        if reason is not None:
            result.stop_reason = reason
            result.calls = spent
            break
    return Placed("adaptive", result.calls, est, se, result.stop_reason, result)


def compare(
    n_arenas: int = 4,
    n_hidden: int = 25,
    sigma: float = 20.0,
    multipliers: Sequence[float | None] = (None,),
    cfg: AdaptiveConfig | None = None,
    alphas: Sequence[float] = (0.1, 0.2),
    beyond: float = 150.0,
    seed: int = 0,
    arena_kw: dict | None = None,
) -> pd.DataFrame:
    """One row per (arena, hidden model, budget multiplier, design): calls, estimate, truth, and per α the
    interval's half-width and whether it covers the human Elo.  A multiplier ``m`` sets the budget to ``m`` ×
    a calibration model's calls (None: the fixed design's full plan, the adaptive design's stopping rule)."""
    cfg = cfg or AdaptiveConfig()
    rng = np.random.default_rng(seed)
    rows = []
    for a in range(n_arenas):
        arena = make_arena(rng, sigma=sigma, alphas=alphas, **(arena_kw or {}))
        lo, hi = arena.human.min() - beyond, arena.human.max() + beyond
        for h_i in range(n_hidden):
            h = float(rng.uniform(lo, hi))
            g = h + float(rng.normal(0.0, sigma))
            for m in multipliers:
                budget = None if m is None else max(2, int(round(m * arena.cal_calls)))
                for placed in (
                    run_fixed(arena, g, rng, budget),
                    run_adaptive(arena, g, rng, cfg, budget, alpha=alphas[0], seed=seed + h_i),
                ):
                    row = {
                        "arena": a,
                        "hidden": h_i,
                        "multiplier": np.nan if m is None else float(m),
                        "design": placed.design,
                        "calls": placed.calls,
                        "fixed_calls": fixed_calls(arena, budget),
                        "truth": h,
                        "estimate": placed.estimate,
                        "se": placed.se,
                        "stop": placed.stop,
                        "error": abs(placed.estimate - h),
                        "outside": bool(h < arena.human.min() or h > arena.human.max()),
                    }
                    for alpha in alphas:
                        q = arena.quantiles[float(alpha)]
                        half = float(q.half_width(placed.se)) if q.finite else float("inf")
                        row[f"half_{alpha}"] = half
                        row[f"covered_{alpha}"] = bool(abs(placed.estimate - h) <= half)
                    rows.append(row)
    return pd.DataFrame(rows)
