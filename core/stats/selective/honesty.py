"""How often each rule's population risk at λ̂ exceeds α, against a known (simulated) population."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special

from core.stats.selective.evaluation import DEFAULT_ALPHAS
from core.stats.selective.rules import THRESHOLD_METHODS, accept, thresholds
from core.stats.selective.uncertainty import Uncertainty, bpe, single_order


def simulate_judge(
    n: int, rng: np.random.Generator, signal: float = 1.5, position_bias: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A position-biased judge over a known population (for honesty checks and demos).

    Latent preference ``z ~ N(0, signal²)``; the human prefers a with
    probability σ(z); the judge reports ``p_fwd = σ(z + b)`` and
    ``p_rev = σ(z − b)`` (it favours whichever answer is shown first by b
    logits).  Returns (p_fwd, p_rev, human_a).
    """
    z = rng.normal(0.0, signal, n)
    human_a = rng.random(n) < special.expit(z)
    return special.expit(z + position_bias), special.expit(z - position_bias), human_a


def violation_rates(
    cal_score: np.ndarray,
    cal_errors: np.ndarray,
    population: Uncertainty,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    methods: Sequence[str] = THRESHOLD_METHODS,
    delta: float = 0.1,
) -> pd.DataFrame:
    """How often the population risk at λ̂ exceeds α, over many calibration sets.

    ``cal_score``/``cal_errors``: (sets × n_cal) independent calibration sets;
    ``population``: a large independent sample standing in for the true
    distribution.  Columns: method, alpha, violation_rate (share of
    calibration sets whose λ̂ has population risk > α; abstaining on all is
    not a violation, as in LTT's guarantee P(risk(λ̂) > α) ≤ δ),
    violation_rate_when_accepting, abstain_all, mean_population_risk (over
    sets that accept something), pooled_population_risk (Σ errors / Σ
    accepted over all sets: the marginal ratio SCOPE's theorem claims to
    bound), mean_population_coverage, mc_se (binomial Monte-Carlo standard
    error of violation_rate), exceeds_alpha (mean_population_risk > α) and
    pooled_exceeds_alpha.
    """
    cal_score = np.atleast_2d(np.asarray(cal_score, float))
    cal_errors = np.atleast_2d(np.asarray(cal_errors, float))
    n_sets = cal_score.shape[0]
    order = np.argsort(population.score, kind="stable")
    pop_s = population.score[order]
    pop_cum_e = np.cumsum(population.errors[order])
    n_pop = len(pop_s)
    rows = []
    for m in methods:
        for a in alphas:
            if m in THRESHOLD_METHODS:
                lam = thresholds(cal_score, cal_errors, a, m, delta)
                k = np.searchsorted(pop_s, lam, side="right")  # population instances with s ≤ λ̂
                e = np.where(k > 0, pop_cum_e[np.maximum(k, 1) - 1], 0.0)
            else:  # calibration-free: the same accepted set for every calibration draw
                acc = accept(population.score, population.confidence, np.inf, a, m)
                k = np.full(n_sets, int(acc.sum()))
                e = np.full(n_sets, float((acc & ~population.correct).sum()))
            ok = k > 0
            risk = np.where(ok, e / np.maximum(k, 1), np.nan)
            violated = ok & (np.nan_to_num(risk) > a + 1e-12)
            rate = float(violated.mean())
            mean_risk = float(np.nanmean(risk)) if ok.any() else float("nan")
            rows.append(
                {
                    "method": m,
                    "alpha": float(a),
                    "violation_rate": rate,
                    "violation_rate_when_accepting": float(violated[ok].mean()) if ok.any() else float("nan"),
                    "abstain_all": float((~ok).mean()),
                    "mean_population_risk": mean_risk,
                    # the ratio of expectations the paper's theorem bounds (pooled over calibration draws)
                    "pooled_population_risk": float(e.sum() / k.sum()) if k.sum() else float("nan"),
                    "mean_population_coverage": float((k / n_pop).mean()),
                    "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / n_sets),
                    "exceeds_alpha": bool(ok.any() and mean_risk > a + 1e-12),
                    "pooled_exceeds_alpha": bool(k.sum() > 0 and e.sum() / k.sum() > a + 1e-12),
                }
            )
    return pd.DataFrame(rows)


def simulated_violation_rates(
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_cal: int = 500,
    n_sets: int = 500,
    signal: float = 1.0,
    position_bias: float = 1.0,
    delta: float = 0.1,
    n_population: int = 200_000,
    seed: int = 0,
    both_orders: bool = True,
    methods: Sequence[str] = THRESHOLD_METHODS,
) -> pd.DataFrame:
    """:func:`violation_rates` for the simulated judge of :func:`simulate_judge`.

    Every calibration set is a fresh draw, the population an independent one.
    """
    rng = np.random.default_rng(seed)
    pf, pr, h = simulate_judge(n_population, rng, signal, position_bias)
    population = bpe(pf, pr, h) if both_orders else single_order(pf, h)
    pf, pr, h = simulate_judge(n_cal * n_sets, rng, signal, position_bias)
    cal = bpe(pf, pr, h) if both_orders else single_order(pf, h)
    return violation_rates(
        cal.score.reshape(n_sets, n_cal), cal.errors.reshape(n_sets, n_cal), population, alphas, methods, delta
    )
