"""The conformal interval's floor (issue #46, METHODS §4): a new model judged on many more battles than the
calibration models keeps its coverage, because the judge–human disagreement does not shrink with judge calls.

Known answers: the simulation of ``core.stats.conformal_sim`` (r_i = b_i + e_i, b_i ~ N(0, σ²), e_i ~ N(0, SE_i²))
at fixed seeds; the estimators and the containments of METHODS §4 by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.stats.conformal import (
    calibrate,
    conformal_rank,
    contains_full_conformal,
    deploy,
    deploy_variance,
    disagreement_upper,
    disagreement_variance,
    evaluate_splits,
    full_conformal_half_width,
    jackknife_plus_half_width,
    loo_disagreement_variance,
    scores,
)
from core.stats.conformal_sim import simulate_coverage

MULTIPLIERS = (0.1, 1.0, 4.0, 10.0)


def _coverage(sigma: float) -> pd.DataFrame:
    # 20 calibration models with SE ~ U(10, 30); 1,500 pools × 10 new models per multiplier: MC-SE ≈ 0.003
    return simulate_coverage(
        n_cal=20, sigma=sigma, multipliers=MULTIPLIERS, alphas=(0.1, 0.2), reps=1500, seed=46, forms=("se", "floor")
    )


@pytest.fixture(scope="module")
def coverage() -> pd.DataFrame:
    """Disagreement σ = 20, about the SEs (the demo's Soft-Elo: σ̂ ≈ 2 SE)."""
    return _coverage(20.0)


@pytest.fixture(scope="module")
def coverage_small_sigma() -> pd.DataFrame:
    """σ = 5, a quarter of a typical SE: σ² is hardly identified from 20 models, the floor's hard case."""
    return _coverage(5.0)


@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize("k", MULTIPLIERS)
def test_the_floor_score_holds_nominal_coverage_at_every_battle_multiplier(coverage, coverage_small_sigma, alpha, k):
    for sigma, table in ((20, coverage), (5, coverage_small_sigma)):
        row = table[(table["form"] == "floor") & (table["alpha"] == alpha) & (table["multiplier"] == k)]
        got, mc = float(row["coverage"].iloc[0]), float(row["mc_se"].iloc[0])
        assert got >= 1 - alpha - 3 * mc, (sigma, alpha, k, got, mc)


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_the_se_score_undercovers_a_model_judged_on_ten_times_the_battles(coverage, alpha):
    old = coverage[(coverage["form"] == "se") & (coverage["alpha"] == alpha)].set_index("multiplier")
    assert old.loc[1.0, "coverage"] >= 1 - alpha - 3 * old.loc[1.0, "mc_se"]  # exchangeable: exact
    for k in (4.0, 10.0):
        assert old.loc[k, "coverage"] < 1 - alpha - 10 * old.loc[k, "mc_se"], (alpha, k)
    # and the floor keeps the width from collapsing with the SE
    new = coverage[(coverage["form"] == "floor") & (coverage["alpha"] == alpha)].set_index("multiplier")
    assert new.loc[10.0, "mean_width"] > 2 * old.loc[10.0, "mean_width"]


def test_moment_estimates_by_hand():
    r = np.array([3.0, -4.0, 0.0, 5.0])
    se = np.array([1.0, 2.0, 1.0, 1.0])
    # mean r² = 50/4 = 12.5, mean SE² = 7/4: σ̂² = 10.75; r² − SE² = 8, 12, −1, 24
    assert disagreement_variance(r, se) == pytest.approx(10.75)
    np.testing.assert_allclose(loo_disagreement_variance(r, se), [35 / 3, 31 / 3, 44 / 3, 19 / 3])
    np.testing.assert_allclose(scores(r, se, "floor"), np.abs(r) / np.sqrt(se**2 + [35 / 3, 31 / 3, 44 / 3, 19 / 3]))
    np.testing.assert_allclose(scores(r, se, "se"), [3.0, 2.0, 0.0, 5.0])
    assert disagreement_variance([0.1, -0.1], [1.0, 1.0]) == 0.0  # floored at 0
    assert disagreement_variance([], []) == 0.0 and loo_disagreement_variance(np.array([2.0]), np.ones(1)) == [0.0]
    with pytest.raises(ValueError):
        scores(r, se, "sd")


def test_the_upper_bound_solves_the_q_profile_equation():
    from scipy import stats

    rng = np.random.default_rng(0)
    se = rng.uniform(10, 30, 30)
    r = rng.normal(0, 20, 30) + rng.normal(0, 1, 30) * se
    u = float(disagreement_upper(r, se, 0.8))
    assert np.sum(r**2 / (u + se**2)) == pytest.approx(stats.chi2.ppf(0.2, 30), rel=1e-9)
    assert u > disagreement_variance(r, se)  # here the 80% bound is above the point estimate
    # coverage of the bound itself: P(σ²_U ≥ σ²) = 0.8
    se_b = rng.uniform(10, 30, (4000, 20))
    r_b = rng.normal(0, 20, (4000, 20)) + rng.normal(0, 1, (4000, 20)) * se_b
    assert abs(float(np.mean(disagreement_upper(r_b, se_b, 0.8) >= 400.0)) - 0.8) < 0.02
    assert float(disagreement_upper(np.zeros(5), np.ones(5), 0.8)) == 0.0  # Q(0) below the quantile: 0


def test_deploy_draws_q_hat_times_the_floored_scale():
    rng = np.random.default_rng(1)
    se = rng.uniform(5, 10, 19)
    r = rng.normal(0, 15, 19) + rng.normal(0, 1, 19) * se
    judge = pd.DataFrame({"model": ["new", "tiny", "none"], "elo": [1500.0, 1400.0, 1450.0], "se": [8.0, 0.0, np.nan]})
    out, q = deploy(r, se, judge, 0.1)
    assert q.score == "floor" and q.k == 18
    assert q.qhat == pytest.approx(np.sort(np.abs(r) / np.sqrt(se**2 + loo_disagreement_variance(r, se)))[17])
    assert q.sigma**2 == pytest.approx(float(deploy_variance(r, se)))
    assert q.sigma**2 >= loo_disagreement_variance(r, se).max() and q.sigma_moments**2 == pytest.approx(
        disagreement_variance(r, se)
    )
    np.testing.assert_allclose(out["half_width"].iloc[:2], q.qhat * np.sqrt(np.array([64.0, 0.0]) + q.sigma**2))
    assert out["half_width"].iloc[1] == pytest.approx(q.qhat * q.sigma) and q.sigma > 0  # a zero SE gets the floor
    assert math.isnan(out["half_width"].iloc[2])
    old, q_se = deploy(r, se, judge, 0.1, score="se")
    assert q_se.sigma == 0.0 and old["half_width"].iloc[1] == 0.0
    assert old["half_width"].iloc[0] == pytest.approx(8.0 * np.sort(np.abs(r) / se)[17])


def test_the_drawn_interval_contains_the_jackknife_plus_and_the_full_conformal_ones():
    rng = np.random.default_rng(2)
    for n, sigma in ((12, 0.0), (20, 10.0), (30, 30.0)):
        se = rng.uniform(5, 20, (200, n))
        r = rng.normal(0, sigma, (200, n)) + rng.normal(0, 1, (200, n)) * se
        se_new = rng.uniform(0.5, 40, (200, 6))
        k = conformal_rank(n, 0.1)
        jk = jackknife_plus_half_width(r, se, se_new, k)
        full = full_conformal_half_width(r, se, se_new, k)
        for b in range(200):
            q = calibrate(r[b], se[b], 0.1)
            drawn = q.half_width(se_new[b])
            assert np.all(drawn >= jk[b] - 1e-9)  # always: σ̂² ≥ every σ̂²₍ᵢ₎
            if contains_full_conformal(q):
                assert np.all(drawn >= full[b] - 1e-6 * drawn)


def test_a_too_small_pool_is_unbounded_for_every_form():
    judge = pd.DataFrame({"model": ["a", "b"], "elo": [1.0, 2.0], "se": [0.0, np.nan]})
    out, q = deploy(np.arange(1.0, 9.0), np.ones(8), judge, 0.1)
    assert math.isinf(q.qhat) and not contains_full_conformal(q)
    assert out["half_width"].iloc[0] == math.inf and math.isnan(out["half_width"].iloc[1])
    assert np.isinf(jackknife_plus_half_width(np.ones(8), np.ones(8), np.ones(2), 9)).all()
    assert np.isinf(full_conformal_half_width(np.ones(8), np.ones(8), np.ones(2), 9)).all()


@pytest.mark.parametrize("score", ["floor", "se"])
@pytest.mark.parametrize("n, alpha", [(40, 0.1), (31, 0.18), (12, 0.2), (6, 0.1), (1, 0.5)])
def test_each_split_is_calibrate_on_its_calibration_half(score, n, alpha):
    """The split evaluation (computed for all splits as one stack) is, split by split, :func:`calibrate` on the
    split's calibration half and its interval on the test half, with the splits drawn as documented."""
    rng = np.random.default_rng(n)
    r, se = rng.normal(0, 50, n), rng.uniform(5, 40, n)
    r[0], se[-1] = np.nan, 0.0  # outside the pool: no finite residual, an SE at the floor
    ev = evaluate_splits(r, se, alpha, n_splits=7, seed=3, score=score)
    keep = np.isfinite(r) & (se > 1e-6)
    r, se = r[keep], se[keep]
    draws = np.random.default_rng(3)
    for row in ev.per_split.itertuples():
        perm = draws.permutation(len(r))
        cal, test = perm[: round(len(r) / 2)], perm[round(len(r) / 2) :]
        q = calibrate(r[cal], se[cal], alpha, score)
        assert row.qhat == pytest.approx(q.qhat, rel=1e-12) and row.sigma == pytest.approx(q.sigma, rel=1e-12)
        if len(test) and q.finite:
            half = q.half_width(se[test])
            assert row.coverage == pytest.approx(np.mean(np.abs(r[test]) <= half))
            assert row.median_width == pytest.approx(np.median(2 * half), rel=1e-12)
    assert ev.n_infinite == int((~np.isfinite(ev.per_split["qhat"])).sum())
