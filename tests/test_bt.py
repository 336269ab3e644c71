"""Bradley–Terry engine: derivatives, known answers, invariances, coverage, failure modes, CLI."""

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

from core import bt
from core.scale import ELO_PER_LOGIT
from tests.conftest import ROOT


def _simulate(rng, m=8, n=3000, tie=0.1, spread=1.0):
    theta = rng.normal(0, spread, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = np.where(rng.random(n) < tie, 0.5, (rng.random(n) < p).astype(float))
    names = np.array([f"m{k}" for k in range(m)])
    return theta, names[a], names[b], y


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
    assert fit.converged and fit.iterations <= 10 and fit.well_defined
    # an independent optimiser on the raw battle likelihood, one model pinned at 0
    ia = pd.Categorical(a, categories=c.models).codes
    ib = pd.Categorical(b, categories=c.models).codes

    def nll(t):
        th = np.concatenate([[0.0], t])
        z = th[ia] - th[ib]
        return -np.sum(y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z))

    ref = minimize(nll, np.zeros(c.n_models - 1), method="BFGS", options={"gtol": 1e-9}).x
    ref = np.concatenate([[0.0], ref])
    np.testing.assert_allclose(fit.theta, ref - ref.mean(), atol=1e-5)
    assert fit.theta.mean() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(fit.elo, 1500 + ELO_PER_LOGIT * fit.theta)


def test_aggregation_levels_give_the_same_fit():
    rng = np.random.default_rng(3)
    _, a, b, y = _simulate(rng)
    fits = [bt.fit_bt(bt.comparisons_from_battles(a, b, y, aggregate=agg)).theta for agg in (True, "pair", False)]
    np.testing.assert_allclose(fits[0], fits[1], atol=1e-9)
    np.testing.assert_allclose(fits[0], fits[2], atol=1e-9)
    pairs = pd.DataFrame({"model_a": a, "model_b": b, "y": y}).groupby(["model_a", "model_b"])["y"].agg(
        n="size", s="sum").reset_index()
    np.testing.assert_allclose(bt.fit_bt(bt.comparisons_from_pair_table(pairs)).theta, fits[0], atol=1e-9)


def test_soft_targets_at_zero_and_one_reproduce_the_hard_fit():
    rng = np.random.default_rng(4)
    _, a, b, y = _simulate(rng, tie=0.0)
    hard = bt.fit_bt(bt.comparisons_from_battles(a, b, y))
    soft_y = np.where(y == 1.0, 1.0, 0.0) + 0.0  # same values, passed through the soft path
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
    shuffled = bt.fit_bt(bt.comparisons_from_battles(a[perm], b[perm], y[perm], aggregate=False), lam=0.01)
    swap = rng.random(len(y)) < 0.5
    a2, b2 = np.where(swap, b, a), np.where(swap, a, b)
    y2 = np.where(swap, 1 - y, y)
    swapped = bt.fit_bt(bt.comparisons_from_battles(a2, b2, y2, aggregate=False), lam=0.01)
    np.testing.assert_allclose(shuffled.theta, base.theta, atol=1e-9)
    np.testing.assert_allclose(swapped.theta, base.theta, atol=1e-9)


def test_feature_coefficient_is_recovered_with_a_valid_interval():
    rng = np.random.default_rng(5)
    m, n = 10, 20000
    theta = rng.normal(0, 0.8, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    x = rng.normal(0, 1, (n, 1))
    w = 0.4
    y = (rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b] + w * x[:, 0])))).astype(float)
    names = np.array([f"m{k}" for k in range(m)])
    c = bt.comparisons_from_battles(names[a], names[b], y, x=x, feature_names=("len",), aggregate=False)
    res = bt.fit_with_ci(c, ci="sandwich")
    coef = res.coef_frame().iloc[0]
    assert coef["lower"] < w < coef["upper"]
    assert coef["se"] < 0.03
    np.testing.assert_allclose(res.fit.theta, theta - theta.mean(), atol=0.1)


@pytest.mark.slow
def test_95_percent_intervals_cover_the_truth():
    """Over 200 simulated arenas, sandwich and bootstrap intervals cover 93–97% of true Elos."""
    rng = np.random.default_rng(6)
    hits = {"sandwich": [], "bootstrap": []}
    for rep in range(200):
        theta, a, b, y = _simulate(rng, m=8, n=2500, tie=0.0)  # data from the model itself
        c = bt.comparisons_from_battles(a, b, y)
        fit = bt.fit_bt(c)
        true_elo = 1500 + ELO_PER_LOGIT * (theta - theta.mean())
        order = [int(mname[1:]) for mname in c.models]
        true_elo = true_elo[order]
        sw = bt.sandwich_intervals(c, fit)
        hits["sandwich"].extend((sw.lower_elo <= true_elo) & (true_elo <= sw.upper_elo))
        if rep < 100:
            bs = bt.bootstrap(c, fit, n_boot=200, seed=rep)
            hits["bootstrap"].extend((bs.lower_elo <= true_elo) & (true_elo <= bs.upper_elo))
    assert 0.93 <= np.mean(hits["sandwich"]) <= 0.97, np.mean(hits["sandwich"])
    assert 0.92 <= np.mean(hits["bootstrap"]) <= 0.975, np.mean(hits["bootstrap"])


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
    assert calls[-1] == (300, 300) and len(calls) == 3
    sw = bt.sandwich_intervals(c, fit)
    np.testing.assert_allclose(b1.se_elo, sw.se_elo, rtol=0.2)
    # every replicate is an actual optimum of its resampled likelihood
    assert np.allclose(b1.samples_elo.mean(axis=1), 1500)
    with pytest.raises(ValueError, match="identical battles"):
        bt.bootstrap(bt.comparisons_from_battles(a, b, y, aggregate="pair"), fit)


def test_disconnected_graph_is_reported():
    a = np.array(["a", "b", "a", "c", "d", "e", "d"])
    b = np.array(["b", "a", "b", "d", "e", "c", "e"])
    y = np.array([1, 1, 0, 1, 0, 1, 0.5])
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y), min_battles=1)
    kinds = {i.kind for i in fit.issues}
    assert "disconnected" in kinds
    assert np.all(np.isfinite(fit.elo))
    comp_of = dict(zip(fit.models, fit.components))
    assert comp_of["a"] == comp_of["b"] != comp_of["c"]
    # each component is centred on its own
    for comp in set(fit.components):
        assert fit.theta[fit.components == comp].mean() == pytest.approx(0, abs=1e-9)


def test_perfect_records_are_reported_not_infinite():
    a = np.array(["top", "top", "mid", "low", "mid", "low"])
    b = np.array(["mid", "low", "low", "mid", "top", "top"])
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # 'top' never loses
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y), min_battles=1)
    assert not fit.well_defined
    no_mle = [i for i in fit.issues if i.kind == "no_mle"]
    assert no_mle and "top" in no_mle[0].models
    assert np.all(np.isfinite(fit.elo)) and fit.lam > 0
    few = bt.fit_bt(bt.comparisons_from_battles(a, b, np.full(6, 0.5)), min_battles=10)
    assert any(i.kind == "few_battles" for i in few.issues) and few.well_defined


def test_cli_json_shape_and_bad_files(tmp_path):
    rng = np.random.default_rng(8)
    _, a, b, y = _simulate(rng, m=6, n=2000, tie=0.1)
    winner = np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie"))
    path = tmp_path / "battles.csv"
    pd.DataFrame({"model_a": a, "model_b": b, "winner": winner}).to_csv(path, index=False)
    r = subprocess.run([sys.executable, "-m", "core", "bt", str(path), "--json"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) >= {"n_battles", "n_pairs", "n_models", "converged", "iterations", "seconds", "models"}
    assert set(out["seconds"]) == {"load", "aggregate", "fit", "ci"}
    assert out["n_battles"] == 2000 and out["n_models"] == 6 and out["converged"] is True
    row = out["models"][0]
    assert set(row) == {"model", "elo", "lower", "upper", "se", "n_battles"}
    assert row["lower"] < row["elo"] < row["upper"]
    assert np.mean([m["elo"] for m in out["models"]]) == pytest.approx(1500)
    # the same fit as the library on the same battles
    lib = bt.fit_bt(bt.comparisons_from_battles(a, b, y)).frame().set_index("model")["elo"]
    for m in out["models"]:
        assert m["elo"] == pytest.approx(lib[m["model"]], abs=1e-6)
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner\nx,y,model_a\nx,y,draw\n")
    r = subprocess.run([sys.executable, "-m", "core", "bt", str(bad), "--json"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "row 2" in r.stderr and "winner" in r.stderr
