"""Bradley–Terry engine: derivatives, known answers, invariances, coverage, failure modes, CLI.

Reference values are computed independently in the tests (finite differences,
a generic optimiser on the raw battle likelihood, per-battle gradient outer
products, simulation from known θ), never by the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from core.domain import ELO_PER_LOGIT
from core.stats import bt
from core.stats.bt import resampling
from tests.conftest import ROOT


def _simulate(rng, m=8, n=3000, tie=0.1, spread=1.0):
    theta = rng.normal(0, spread, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = np.where(rng.random(n) < tie, 0.5, (rng.random(n) < p).astype(float))
    names = np.array([f"m{k}" for k in range(m)])
    return theta, names[a], names[b], y


def _battle_design(c: bt.Comparisons, a, b, x=None):
    """Per-battle rows of (e_a − e_b, x) in the model order of ``c``."""
    ia = pd.Categorical(a, categories=c.models).codes
    ib = pd.Categorical(b, categories=c.models).codes
    d = np.zeros((len(ia), c.n_models))
    d[np.arange(len(ia)), ia] += 1
    d[np.arange(len(ib)), ib] -= 1
    return d if x is None else np.hstack([d, x])


# ------------------------------------------------------------------ derivatives
def test_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(1)
    _, a, b, y = _simulate(rng, m=5, n=400)
    x = rng.normal(size=(len(y), 2))
    c = bt.comparisons_from_battles(a, b, y, x=x, feature_names=("f1", "f2"), aggregate=False)
    beta = rng.normal(0, 0.5, c.n_models + 2)
    lam = 0.3
    g = bt.gradient(c, beta, lam)
    h = -bt.information(c, beta, lam)
    eps = 1e-6
    for k in range(len(beta)):
        e = np.zeros_like(beta)
        e[k] = eps
        num_g = (bt.loglik(c, beta + e, lam) - bt.loglik(c, beta - e, lam)) / (2 * eps)
        assert num_g == pytest.approx(g[k], rel=1e-6, abs=1e-6)
        num_h = (bt.gradient(c, beta + e, lam) - bt.gradient(c, beta - e, lam)) / (2 * eps)
        np.testing.assert_allclose(num_h, h[:, k], rtol=1e-5, atol=1e-5)


def test_newton_matches_a_generic_optimiser_and_converges_fast():
    rng = np.random.default_rng(2)
    _, a, b, y = _simulate(rng, m=6, n=2000)
    c = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(c)
    assert fit.converged and fit.iterations <= 8 and fit.well_defined and fit.grad_norm < 1e-10
    ia = pd.Categorical(a, categories=c.models).codes
    ib = pd.Categorical(b, categories=c.models).codes

    def nll(t):  # the raw battle likelihood, one model pinned at 0
        th = np.concatenate([[0.0], t])
        z = th[ia] - th[ib]
        return -np.sum(y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z))

    ref = minimize(nll, np.zeros(c.n_models - 1), method="BFGS", options={"gtol": 1e-9}).x
    ref = np.concatenate([[0.0], ref])
    np.testing.assert_allclose(fit.theta, ref - ref.mean(), atol=1e-5)
    assert fit.theta.mean() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(fit.elo, 1500 + ELO_PER_LOGIT * fit.theta)


def test_ridge_fit_solves_the_penalised_equations():
    rng = np.random.default_rng(21)
    _, a, b, y = _simulate(rng, m=7, n=500)
    c = bt.comparisons_from_battles(a, b, y)
    lam = 2.0
    fit = bt.fit_bt(c, lam=lam)
    # stationarity written out by hand: Σ_battles (y − p)(e_a − e_b) = λθ
    d = _battle_design(c, a, b)
    p = 1 / (1 + np.exp(-(d @ fit.theta)))
    np.testing.assert_allclose(d.T @ (y - p), lam * fit.theta, atol=1e-8)
    assert fit.lam == lam and abs(fit.theta.sum()) < 1e-12


# ------------------------------------------------------------- sufficient stats
def test_aggregation_levels_give_the_same_fit_and_sandwich():
    rng = np.random.default_rng(3)
    _, a, b, y = _simulate(rng)
    cs = [bt.comparisons_from_battles(a, b, y, aggregate=agg) for agg in (True, "pair", False)]
    pairs = (
        pd.DataFrame({"model_a": a, "model_b": b, "y": y})
        .assign(y2=y**2)
        .groupby(["model_a", "model_b"])
        .agg(n=("y", "size"), s=("y", "sum"), ss=("y2", "sum"))
        .reset_index()
    )
    cs.append(bt.comparisons_from_pair_table(pairs))
    fits = [bt.fit_bt(c) for c in cs]
    ses = [bt.sandwich_intervals(c, f).se_elo for c, f in zip(cs, fits)]
    for f, se in zip(fits[1:], ses[1:]):
        np.testing.assert_allclose(f.theta, fits[0].theta, atol=1e-9)
        np.testing.assert_allclose(se, ses[0], rtol=1e-9)
    assert len(cs[0].n) <= 3 * len(pairs)  # hard labels: at most win/tie/loss cells per pair


def test_sandwich_equals_per_battle_outer_products_written_out():
    rng = np.random.default_rng(31)
    _, a, b, y = _simulate(rng, m=6, n=1500, tie=0.2)
    y = np.where(rng.random(len(y)) < 0.3, rng.random(len(y)), y)  # some soft targets
    x = rng.normal(size=(len(y), 1))
    c = bt.comparisons_from_battles(a, b, y, x=x, feature_names=("len",), aggregate="pair")
    fit = bt.fit_bt(c)
    d = _battle_design(c, a, b, x)
    p = 1 / (1 + np.exp(-(d @ fit.beta)))
    grads = d * (y - p)[:, None]
    meat = grads.T @ grads
    hess = d.T @ (d * (p * (1 - p))[:, None])
    hinv = np.linalg.pinv(hess)  # Moore–Penrose: the inverse on the centred subspace
    ref = hinv @ meat @ hinv
    np.testing.assert_allclose(bt.sandwich_cov(c, fit), ref, rtol=1e-6, atol=1e-12)


def test_pair_table_without_second_moment_falls_back_to_cell_clusters():
    rng = np.random.default_rng(32)
    _, a, b, y = _simulate(rng, m=6, n=4000)
    pairs = (
        pd.DataFrame({"model_a": a, "model_b": b, "y": y})
        .groupby(["model_a", "model_b"])["y"]
        .agg(n="size", s="sum")
        .reset_index()
    )
    c = bt.comparisons_from_pair_table(pairs)
    fit = bt.fit_bt(c)
    iv = bt.sandwich_intervals(c, fit)
    assert "clusters" in iv.note
    exact = bt.sandwich_intervals(bt.comparisons_from_battles(a, b, y), fit)
    # cluster-robust by pair is consistent too: same size, noisier
    np.testing.assert_allclose(iv.se_elo, exact.se_elo, rtol=0.35)
    with pytest.raises(ValueError, match="identical battles"):
        bt.bootstrap(c, fit, n_boot=10)


def test_soft_targets_at_zero_and_one_reproduce_the_hard_fit():
    rng = np.random.default_rng(4)
    _, a, b, y = _simulate(rng, tie=0.15)
    winner = np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie"))
    # hard path: a win/tie/loss table built by hand
    df = pd.DataFrame({"model_a": a, "model_b": b, "w": winner == "model_a", "t": winner == "tie"})
    table = df.groupby(["model_a", "model_b"]).agg(n=("w", "size"), wins=("w", "sum"), ties=("t", "sum"))
    table["s"] = table["wins"] + 0.5 * table["ties"]
    hard = bt.fit_bt(bt.comparisons_from_pair_table(table.reset_index()))
    # soft path: a float target per battle, 1 − 1e-12 etc. mapped back to exactly 0/½/1
    soft_y = np.clip(y + rng.choice([-1e-13, 0.0, 1e-13], len(y)), 0, 1)
    soft_y = np.round(soft_y * 2) / 2
    soft = bt.fit_bt(bt.comparisons_from_battles(a, b, soft_y, aggregate=False))
    np.testing.assert_allclose(soft.theta, hard.theta, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_invariant_to_battle_order_and_side_swaps(seed):
    rng = np.random.default_rng(seed)
    _, a, b, y = _simulate(rng, m=5, n=300)
    y = np.where(rng.random(len(y)) < 0.3, rng.random(len(y)), y)  # some soft targets
    base = bt.fit_bt(bt.comparisons_from_battles(a, b, y, aggregate=False), lam=0.01)
    perm = rng.permutation(len(y))
    shuffled = bt.fit_bt(bt.comparisons_from_battles(a[perm], b[perm], y[perm]), lam=0.01)
    swap = rng.random(len(y)) < 0.5
    a2, b2 = np.where(swap, b, a), np.where(swap, a, b)
    y2 = np.where(swap, 1 - y, y)
    swapped = bt.fit_bt(bt.comparisons_from_battles(a2, b2, y2, aggregate="pair"), lam=0.01)
    np.testing.assert_allclose(shuffled.theta, base.theta, atol=1e-9)
    np.testing.assert_allclose(swapped.theta, base.theta, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), reps=st.lists(st.integers(1, 4), min_size=200, max_size=200))
def test_integer_weights_equal_repeated_battles(seed, reps):
    rng = np.random.default_rng(seed)
    _, a, b, y = _simulate(rng, m=5, n=200, tie=0.2)
    w = np.array(reps, dtype=float)
    weighted = bt.comparisons_from_battles(a, b, y, weight=w)
    idx = np.repeat(np.arange(len(y)), reps)
    repeated = bt.comparisons_from_battles(a[idx], b[idx], y[idx])
    fw, fr = bt.fit_bt(weighted, lam=0.05), bt.fit_bt(repeated, lam=0.05)
    np.testing.assert_allclose(fw.theta, fr.theta, atol=1e-9)
    np.testing.assert_allclose(fw.n_battles, fr.n_battles)


# -------------------------------------------------------------------- features
def test_feature_coefficient_is_recovered_with_valid_intervals():
    rng = np.random.default_rng(5)
    m, n = 10, 20000
    theta = rng.normal(0, 0.8, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    x = np.column_stack([rng.normal(0, 1, n), rng.integers(0, 2, n) * 2 - 1.0])
    w = np.array([0.4, -0.25])
    y = (rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b] + x @ w)))).astype(float)
    names = np.array([f"m{k}" for k in range(m)])
    c = bt.comparisons_from_battles(names[a], names[b], y, x=x, feature_names=("len", "bold"))
    res = bt.fit_with_ci(c, ci="sandwich")
    coef = res.coef_frame().set_index("feature")
    for name, true in zip(("len", "bold"), w):
        assert coef.loc[name, "lower"] < true < coef.loc[name, "upper"]
        assert coef.loc[name, "se"] < 0.03
    np.testing.assert_allclose(res.fit.theta, theta - theta.mean(), atol=0.1)
    boot = bt.bootstrap(c, res.fit, n_boot=200, seed=1)
    np.testing.assert_allclose(boot.coef_se, res.intervals.coef_se, rtol=0.25)
    np.testing.assert_allclose(boot.se_elo, res.intervals.se_elo, rtol=0.25)


# --------------------------------------------------------------- uncertainty
def _arena_replicates(rng, theta, per_pair, reps, tie=0.15):
    """Replicate arenas with a fixed design: (pair, outcome) cell counts ~ Multinomial per pair.

    Ties at rate t keep E[y] = σ(θ_a − θ_b): wins happen with q = (p − t/2)/(1 − t).
    """
    m = len(theta)
    i, j = np.triu_indices(m, 1)
    p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
    t = np.minimum(tie, 2 * np.minimum(p, 1 - p))
    q = (p - t / 2) / (1 - t)
    probs = np.stack([(1 - t) * q, t, (1 - t) * (1 - q)], axis=1)
    counts = np.stack([rng.multinomial(per_pair, pr, size=reps) for pr in probs], axis=1)  # (reps, pairs, 3)
    n = counts.reshape(reps, -1).astype(float)
    yv = np.tile([1.0, 0.5, 0.0], len(i))
    cells = (np.repeat(i, 3), np.repeat(j, 3), yv)
    return cells, n, n * yv


@pytest.mark.slow
def test_95_percent_intervals_cover_the_truth():
    """Sandwich over 400 and bootstrap over 200 simulated arenas: 93–97% of true Elos covered."""
    rng = np.random.default_rng(6)
    m = 8
    theta = rng.normal(0, 0.7, m)
    true_elo = ELO_PER_LOGIT * (theta - theta.mean()) + 1500
    (ci, cj, yv), n, s = _arena_replicates(rng, theta, per_pair=90, reps=400)
    models = tuple(range(m))
    expected = bt.Comparisons(models, ci, cj, n.mean(axis=0), s.mean(axis=0), ss=s.mean(axis=0) * yv)
    batch = bt.fit_bt_batch(expected, n, s)
    assert batch.converged.all() and not batch.regularised.any()
    hits = {"sandwich": [], "bootstrap": []}
    for r in range(len(n)):
        c = bt.Comparisons(models, ci, cj, n[r], s[r], ss=s[r] * yv)
        fit = bt.fit_bt(c)
        np.testing.assert_allclose(batch.theta[r], fit.theta, atol=1e-7)  # batch solver == one-by-one
        sw = bt.sandwich_intervals(c, fit)
        hits["sandwich"].extend((sw.lower_elo <= true_elo) & (true_elo <= sw.upper_elo))
        if r < 200:
            bs = bt.bootstrap(c, fit, n_boot=400, seed=r)
            hits["bootstrap"].extend((bs.lower_elo <= true_elo) & (true_elo <= bs.upper_elo))
    assert 0.93 <= np.mean(hits["sandwich"]) <= 0.97, np.mean(hits["sandwich"])
    assert 0.93 <= np.mean(hits["bootstrap"]) <= 0.97, np.mean(hits["bootstrap"])


def test_bootstrap_is_seeded_vectorised_and_agrees_with_sandwich():
    rng = np.random.default_rng(7)
    _, a, b, y = _simulate(rng, m=10, n=20000)
    c = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(c)
    calls = []
    b1 = bt.bootstrap(c, fit, n_boot=300, seed=11, progress=lambda d, t: calls.append((d, t)), chunk=100)
    b2 = bt.bootstrap(c, fit, n_boot=300, seed=11, chunk=100)
    np.testing.assert_array_equal(b1.samples_elo, b2.samples_elo)  # seeded: two threads, same draws
    b3 = bt.bootstrap(c, fit, n_boot=300, seed=12, chunk=100)
    assert not np.array_equal(b1.samples_elo, b3.samples_elo)
    # each chunk of replicates has a stream of its own: chunks that repeated one another would still agree
    # with the sandwich, so this is said separately
    assert not np.array_equal(b1.samples_elo[:100], b1.samples_elo[100:200])
    assert calls == [(100, 300), (200, 300), (300, 300)]
    sw = bt.sandwich_intervals(c, fit)
    np.testing.assert_allclose(b1.se_elo, sw.se_elo, rtol=0.2)
    assert np.allclose(b1.samples_elo.mean(axis=1), 1500)
    assert np.all(b1.lower_elo < fit.elo) and np.all(fit.elo < b1.upper_elo)
    poisson = bt.bootstrap(c, fit, n_boot=200, seed=3, kind="poisson")  # per-battle Poisson(1) weights
    np.testing.assert_allclose(poisson.se_elo, sw.se_elo, rtol=0.2)


def test_bootstrap_replicates_are_optima_of_the_resampled_data():
    rng = np.random.default_rng(71)
    _, a, b, y = _simulate(rng, m=6, n=3000, tie=0.2)
    c = bt.comparisons_from_battles(a, b, y)
    # the same bootstrap counts, fitted one by one with the full Newton solver
    counts = resampling._multinomial_rows(np.random.default_rng(5), int(c.n.sum()), c.n, 5)
    batch = bt.fit_bt_batch(c, counts, counts * c.cell_mean())
    for r in range(5):
        one = bt.fit_bt(bt.Comparisons(c.models, c.i, c.j, counts[r], counts[r] * c.cell_mean()))
        np.testing.assert_allclose(batch.theta[r], one.theta, atol=1e-7)


def test_exact_multinomial_sampler_moments():
    rng = np.random.default_rng(8)
    p = np.array([0.5, 0.2, 0.2, 0.05, 0.05, 0.0])
    n_trials, reps = 1000, 40000
    draws = resampling._multinomial_rows(rng, n_trials, p * 7, reps)  # unnormalised counts are fine
    assert np.all(draws.sum(axis=1) == n_trials) and np.all(draws >= 0) and np.all(draws[:, -1] == 0)
    mean_se = np.sqrt(n_trials * p * (1 - p) / reps)
    assert np.all(np.abs(draws.mean(axis=0) - n_trials * p) <= 4 * mean_se + 1e-12)
    cov = np.cov(draws[:, :5].T)
    ref = n_trials * (np.diag(p[:5]) - np.outer(p[:5], p[:5]))
    np.testing.assert_allclose(cov, ref, rtol=0.05, atol=0.05 * n_trials * 0.05)


def test_bootstrap_splits_hard_pair_tables_and_resamples_battles_not_weight():
    rng = np.random.default_rng(9)
    _, a, b, y = _simulate(rng, m=8, n=8000, tie=0.2)
    cells = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(cells)
    ref = bt.bootstrap(cells, fit, n_boot=400, seed=1)
    pair = bt.comparisons_from_battles(a, b, y, aggregate="pair")  # mixed cells with ss
    assert not pair.is_homogeneous()
    split = bt.bootstrap(pair, bt.fit_bt(pair), n_boot=400, seed=2)
    np.testing.assert_allclose(split.se_elo, ref.se_elo, rtol=0.2)
    # doubling every weight changes neither the MLE nor the spread of a battle bootstrap
    heavy = bt.comparisons_from_battles(a, b, y, weight=np.full(len(y), 2.0))
    hfit = bt.fit_bt(heavy)
    np.testing.assert_allclose(hfit.theta, fit.theta, atol=1e-9)
    hb = bt.bootstrap(heavy, hfit, n_boot=400, seed=1)
    np.testing.assert_allclose(hb.se_elo, ref.se_elo, rtol=0.2)
    hs = bt.sandwich_intervals(heavy, hfit)
    np.testing.assert_allclose(hs.se_elo, bt.sandwich_intervals(cells, fit).se_elo, rtol=1e-9)


# -------------------------------------------------------------- ill-posedness
def test_disconnected_graph_is_reported():
    a = np.array(["a", "b", "a", "c", "d", "e", "d"])
    b = np.array(["b", "a", "b", "d", "e", "c", "e"])
    y = np.array([1, 1, 0, 1, 0, 1, 0.5])
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y), min_battles=1)
    issue = next(i for i in fit.issues if i.kind == "disconnected")
    assert set(issue.models) == {"a", "b"}  # the smaller component is named
    assert np.all(np.isfinite(fit.elo)) and fit.well_defined
    comp_of = dict(zip(fit.models, fit.components))
    assert comp_of["a"] == comp_of["b"] != comp_of["c"] == comp_of["d"] == comp_of["e"]
    for comp in set(fit.components):  # each component is centred on its own
        assert fit.theta[fit.components == comp].mean() == pytest.approx(0, abs=1e-9)
    iv = bt.sandwich_intervals(bt.comparisons_from_battles(a, b, y), fit)
    assert np.all(np.isfinite(iv.se_elo))


def test_perfect_records_are_reported_not_infinite():
    a = np.array(["top", "top", "mid", "low", "mid", "low"])
    b = np.array(["mid", "low", "low", "mid", "top", "top"])
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # 'top' never loses, 'low' never wins
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y), min_battles=1)
    assert not fit.well_defined
    no_mle = next(i for i in fit.issues if i.kind == "no_mle")
    assert set(no_mle.models) == {"top", "low"}
    assert "top" in no_mle.message and "low" in no_mle.message
    assert any(i.kind == "regularised" for i in fit.issues)
    assert np.all(np.isfinite(fit.elo)) and fit.lam == bt.FALLBACK_LAM
    assert fit.elo[fit.models.index("top")] > fit.elo[fit.models.index("mid")] > fit.elo[fit.models.index("low")]
    # with a requested ridge the fit is that ridge, diagnostics still reported
    ridge = bt.fit_bt(bt.comparisons_from_battles(a, b, y), lam=0.5, min_battles=1)
    assert ridge.lam == 0.5 and not ridge.well_defined and any(i.kind == "no_mle" for i in ridge.issues)
    few = bt.fit_bt(bt.comparisons_from_battles(a, b, np.full(6, 0.5)), min_battles=10)
    assert few.well_defined and set(next(i for i in few.issues if i.kind == "few_battles").models) == {
        "top",
        "mid",
        "low",
    }


def test_a_group_that_never_loses_to_the_rest_is_named():
    # x and y beat each other, but never lose to u, v, w (which mix among themselves)
    top, rest = ["x", "y"], ["u", "v", "w"]
    a, b, y = [], [], []
    for p, q in [("x", "y"), ("u", "v"), ("v", "w"), ("w", "u")]:
        a += [p, q]
        b += [q, p]
        y += [1.0, 1.0]
    for t in top:
        for r in rest:
            a.append(t)
            b.append(r)
            y.append(1.0)
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y), min_battles=1)
    no_mle = next(i for i in fit.issues if i.kind == "no_mle")
    assert not fit.well_defined and set(no_mle.models) == set(top) | set(rest)
    assert "the group {x, y} never lost to or tied with a model outside it (only to each other)" in no_mle.message
    assert np.all(np.isfinite(fit.theta))
    # a tie is half a win for each side: one tie against the rest makes the MLE exist
    tied = bt.fit_bt(bt.comparisons_from_battles(a + ["u"], b + ["x"], y + [0.5]), min_battles=1)
    assert tied.well_defined and tied.lam == 0 and not any(i.kind == "no_mle" for i in tied.issues)


def test_bootstrap_flags_replicates_without_an_mle():
    rng = np.random.default_rng(11)
    _, a, b, y = _simulate(rng, m=6, n=3000, tie=0.0)
    # a thin model with one loss in six battles: many resamples give it a perfect record
    a = np.r_[a, ["thin"] * 6]
    b = np.r_[b, ["m0", "m1", "m2", "m3", "m4", "m5"]]
    y = np.r_[y, [1, 1, 1, 1, 1, 0.0]]
    c = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(c)
    assert fit.well_defined and any(i.kind == "few_battles" and "thin" in i.models for i in fit.issues)
    boot = bt.bootstrap(c, fit, n_boot=300, seed=0)
    assert boot.n_regularised > 50 and "perfect record" in boot.note
    assert np.all(np.isfinite(boot.samples_elo)) and np.all(np.isfinite(boot.upper_elo))


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bt.comparisons_from_battles(["a"], ["b"], [1.5])
    with pytest.raises(ValueError, match="itself"):
        bt.comparisons_from_battles(["a"], ["a"], [1.0])
    with pytest.raises(ValueError, match="lacks column"):
        bt.comparisons_from_pair_table(pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "n": [1.0]}))
    with pytest.raises(ValueError, match="0 <= s <= n"):
        bt.Comparisons(("a", "b"), [0], [1], [1.0], [2.0])


# ------------------------------------------------------------------------ CLI
def _run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "core", "bt", *map(str, args)], cwd=ROOT, capture_output=True, text=True
    )


@pytest.mark.integration
def test_cli_json_shape_and_parity_with_the_library(tmp_path):
    rng = np.random.default_rng(12)
    _, a, b, y = _simulate(rng, m=6, n=2000, tie=0.1)
    winner = np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie")).astype(object)
    winner[(y == 0.5) & (rng.random(len(y)) < 0.5)] = "tie (bothbad)"
    df = pd.DataFrame({"model_a": a, "model_b": b, "winner": winner})
    path = tmp_path / "battles.parquet"
    df.to_parquet(path, index=False)
    r = _run_cli(path, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out) == ["n_battles", "n_pairs", "n_models", "converged", "iterations", "seconds", "models", "issues"]
    assert list(out["seconds"]) == ["load", "aggregate", "fit", "ci"]
    assert out["n_battles"] == 2000 and out["n_models"] == 6 and out["n_pairs"] == 15 and out["converged"] is True
    row = out["models"][0]
    assert list(row) == ["model", "elo", "lower", "upper", "se", "n_battles", "interval_note"]
    assert all(m["interval_note"] is None for m in out["models"])  # six well-identified models
    elos = [m["elo"] for m in out["models"]]
    assert elos == sorted(elos, reverse=True) and np.mean(elos) == pytest.approx(1500)
    assert all(m["lower"] < m["elo"] < m["upper"] for m in out["models"])
    lib = bt.fit_with_ci(bt.comparisons_from_battles(a, b, y)).frame().set_index("model")
    for m in out["models"]:
        assert m["elo"] == pytest.approx(lib.loc[m["model"], "elo"], abs=1e-6)
        assert m["se"] == pytest.approx(lib.loc[m["model"], "se"], rel=1e-6)
    assert sum(m["n_battles"] for m in out["models"]) == 2 * 2000
    # bootstrap through the CLI, from JSONL
    jl = tmp_path / "battles.jsonl"
    df.to_json(jl, orient="records", lines=True)
    r = _run_cli(jl, "--json", "--ci", "bootstrap", "--bootstrap", "200", "--seed", "3")
    assert r.returncode == 0, r.stderr
    boot = json.loads(r.stdout)
    for m in boot["models"]:
        assert m["se"] == pytest.approx(lib.loc[m["model"], "se"], rel=0.3)


@pytest.mark.integration
def test_cli_bad_files_exit_2_naming_file_row_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner\nx,y,model_a\nx,y,draw\n")
    r = _run_cli(bad, "--json")
    assert r.returncode == 2 and "row 2" in r.stderr and "winner" in r.stderr and "bad.csv" in r.stderr
    assert "Traceback" not in r.stderr
    missing = tmp_path / "missing.csv"
    missing.write_text("model_a,winner\nx,model_a\n")
    r = _run_cli(missing, "--json")
    assert r.returncode == 2 and "model_b" in r.stderr and "missing.csv" in r.stderr
    r = _run_cli(tmp_path / "nope.parquet", "--json")
    assert r.returncode == 2 and "does not exist" in r.stderr


@pytest.mark.integration
def test_cli_reports_issues(tmp_path):
    path = tmp_path / "perfect.csv"
    pd.DataFrame(
        {
            "model_a": ["top", "top", "mid", "mid"],
            "model_b": ["mid", "low", "low", "low"],
            "winner": ["model_a", "model_a", "model_a", "tie"],
        }
    ).to_csv(path, index=False)
    r = _run_cli(path, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    kinds = {i["kind"] for i in out["issues"]}
    assert {"no_mle", "regularised", "few_battles"} <= kinds
    assert all(np.isfinite(m["elo"]) for m in out["models"])


def test_file_aggregation_counts_cells_as_written_out(tmp_path):
    """Names are stripped (' x' is x), winners case-insensitive; counts equal a plain per-row tally."""
    from core.store import aggregate_battle_cells

    rows = [
        ("x", "y", "model_a"),
        (" x", "y ", "MODEL_A"),
        ("y", "x", "model_a"),  # oriented: x vs y with y = 0
        ("x", "z", "tie"),
        ("z", "x", "tie (bothbad)"),
        ("y", "z", "model_b"),
        ("y", "z", " Model_B "),
    ]
    path = tmp_path / "cells.csv"
    pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]).to_csv(path, index=False)
    cells = aggregate_battle_cells(path)
    assert cells.models == ("x", "y", "z") and cells.n_battles == len(rows)
    got = {(cells.models[i], cells.models[j], y): n for i, j, y, n in zip(cells.i, cells.j, cells.y, cells.n)}
    want: dict[tuple[str, str, float], float] = {}
    for a, b, w in rows:
        a, b, w = a.strip(), b.strip(), w.strip().lower()
        y = {"model_a": 1.0, "model_b": 0.0}.get(w, 0.5)
        key = (a, b, y) if a < b else (b, a, 1.0 - y)
        want[key] = want.get(key, 0.0) + 1.0
    assert got == want


@pytest.mark.parametrize(
    ("body", "row", "field"),
    [
        ("x,y,model_a\n,y,model_a\n", 2, "model_a"),
        ("x,y,model_a\nx, ,tie\n", 2, "model_b"),
        ("x,y,model_a\ny,x,tie\n x,x ,tie\n", 3, "model_b"),  # a model battling itself once stripped
        ("x,y,model_a\nx,y,\n", 2, "winner"),
    ],
)
def test_file_aggregation_names_the_first_bad_row(tmp_path, body, row, field):
    from core.store import StoreError, aggregate_battle_cells

    path = tmp_path / "bad.csv"
    path.write_text("model_a,model_b,winner\n" + body)
    with pytest.raises(StoreError, match=rf"bad.csv, row {row}, field '{field}'"):
        aggregate_battle_cells(path)


def test_each_command_builds_from_its_own_module_alone():
    """``python -m core CMD`` registers only CMD's module: every command of the full parser is found that way."""
    import argparse

    from core.cli import build_parser

    def commands(parser: argparse.ArgumentParser) -> set[str]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return set(sub.choices)

    every = commands(build_parser())
    assert {"bt", "import", "standing", "languages"} <= every
    for name in every:
        assert name in commands(build_parser(name)), name
    assert commands(build_parser("bt")) == {"bt"}
    assert commands(build_parser("no-such-command")) == every
