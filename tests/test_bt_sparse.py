"""Sparse Bradley–Terry path: parity with the dense path, a known answer, solver choice.

The dense path (Cholesky of the full information, dense sandwich) is the
reference: on graphs both can handle, the sparse path must give the same Elo
to 1e-6 and the same sandwich SEs to 1e-6 relative, the same diagnostics and
the same fallback.  The known-answer test simulates from known θ.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.domain import ELO_PER_LOGIT, Z95
from core.stats import bt
from core.stats.bt import gauge, sandwich_sparse, sparse_linalg


def _long_tail(rng, m, n, tie=0.15, spread=1.0, ring_ties=False):
    """Battles with Zipf popularity (a few models in many battles, most in few); every model plays at least once.

    ``ring_ties``: each model also ties its successor, which makes the graph
    connected and the MLE exist (every model has win and loss mass).
    """
    theta = rng.normal(0, spread, m)
    pop = 1.0 / np.arange(1, m + 1)
    pop /= pop.sum()
    a = np.r_[np.arange(m), rng.choice(m, n - m, p=pop)]
    b = rng.choice(m, n, p=pop)
    b = np.where(a == b, (b + 1) % m, b)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = np.where(rng.random(n) < tie, 0.5, (rng.random(n) < p).astype(float))
    if ring_ties:
        a = np.r_[a, np.arange(m)]
        b = np.r_[b, (np.arange(m) + 1) % m]
        y = np.r_[y, np.full(m, 0.5)]
    names = np.array([f"m{k:04d}" for k in range(m)])
    return theta, names[a], names[b], y


def _both(c, lam=0.0):
    dense = bt.fit_bt(c, lam=lam, solver="dense")
    sparse = bt.fit_bt(c, lam=lam, solver="sparse")
    return dense, sparse, bt.sandwich_intervals(c, dense), bt.sandwich_intervals(c, sparse)


def _assert_same(dense, sparse, dsw, ssw):
    assert dense.solver == "dense" and sparse.solver == "sparse"
    np.testing.assert_allclose(sparse.elo, dense.elo, rtol=0, atol=1e-6)
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ssw.se_elo, dsw.se_elo, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ssw.coef_se, dsw.coef_se, rtol=1e-6)
    assert sparse.converged and dense.converged and sparse.lam == dense.lam
    assert sparse.well_defined == dense.well_defined
    assert [i.as_dict() for i in sparse.issues] == [i.as_dict() for i in dense.issues]
    np.testing.assert_array_equal(sparse.components, dense.components)
    assert sparse.loglik == pytest.approx(dense.loglik, rel=1e-12)


# ------------------------------------------------------------------ parity
def test_sparse_equals_dense_on_a_long_tail_with_perfect_records():
    rng = np.random.default_rng(0)
    _, a, b, y = _long_tail(rng, 600, 2500)
    c = bt.comparisons_from_battles(a, b, y)
    dense, sparse, dsw, ssw = _both(c)
    # one-battle models with a win have a perfect record: the fallback ridge, models named
    assert not sparse.well_defined and sparse.lam == bt.FALLBACK_LAM
    assert {"no_mle", "regularised", "few_battles"} <= {i.kind for i in sparse.issues}
    _assert_same(dense, sparse, dsw, ssw)


def test_sparse_equals_dense_when_the_mle_exists_with_ties():
    rng = np.random.default_rng(1)
    _, a, b, y = _long_tail(rng, 500, 3000, ring_ties=True)
    # models whose only opponent is m0003 (one tie, or a win and a loss): their
    # SEs come from m0003's solve, not their own
    leaves = np.array([f"leaf{k}" for k in range(40)])
    a = np.r_[a, leaves, leaves[20:]]
    b = np.r_[b, np.full(60, "m0003")]
    y = np.r_[y, np.full(20, 0.5), np.ones(20), np.zeros(20)]
    c = bt.comparisons_from_battles(a, b, y)
    assert np.sum(sandwich_sparse._leaf_anchors(c) >= 0) == 40
    dense, sparse, dsw, ssw = _both(c)
    assert sparse.well_defined and sparse.lam == 0
    _assert_same(dense, sparse, dsw, ssw)
    ridge = _both(c, lam=0.7)  # a requested ridge: no null space, no grounding
    _assert_same(*ridge)


def test_sparse_equals_dense_on_a_disconnected_graph_with_an_unplayed_model():
    rng = np.random.default_rng(2)
    _, a1, b1, y1 = _long_tail(rng, 400, 1500, ring_ties=True)
    _, a2, b2, y2 = _long_tail(rng, 300, 1200, ring_ties=True)
    # plus a component of two models that only tied each other
    a = np.r_[a1, np.char.add("g", a2), ["pair-a"]]
    b = np.r_[b1, np.char.add("g", b2), ["pair-b"]]
    models = sorted(set(a) | set(b)) + ["never-played"]
    c = bt.comparisons_from_battles(a, b, np.r_[y1, y2, [0.5]], models=models)
    dense, sparse, dsw, ssw = _both(c)
    assert int(sparse.components.max()) == 3 and any(i.kind == "disconnected" for i in sparse.issues)
    for comp in range(4):  # each component centred on its own well-identified models (METHODS §10), else all
        members = sparse.components == comp
        anchors = members & np.asarray(sparse.anchors, bool)
        centre = sparse.theta[anchors] if anchors.any() else sparse.theta[members]
        assert centre.mean() == pytest.approx(0, abs=1e-12)
    assert ssw.se_elo[-1] == 0.0  # no battles: the centred θ of a one-model component is exactly 0
    _assert_same(dense, sparse, dsw, ssw)


def test_sparse_equals_dense_with_weights_soft_targets_and_pair_tables():
    rng = np.random.default_rng(3)
    _, a, b, y = _long_tail(rng, 500, 4000, ring_ties=True)
    y = np.where(rng.random(len(y)) < 0.3, rng.random(len(y)), y)  # some soft targets
    w = rng.choice([0.5, 1.0, 2.0], len(y))
    for agg in (True, "pair"):
        c = bt.comparisons_from_battles(a, b, y, weight=w, aggregate=agg)
        _assert_same(*_both(c))


def test_sparse_equals_dense_with_features():
    rng = np.random.default_rng(4)
    _, a, b, y = _long_tail(rng, 400, 3000, ring_ties=True)
    x = np.c_[rng.normal(size=len(y)), rng.integers(0, 2, len(y)) - 0.5]
    c = bt.comparisons_from_battles(a, b, y, x=x, feature_names=("len", "md"), aggregate=False)
    dense, sparse, dsw, ssw = _both(c)
    assert sparse.coef.shape == (2,) and np.all(ssw.coef_se > 0)
    _assert_same(dense, sparse, dsw, ssw)


def test_cg_and_lu_sandwich_paths_agree(monkeypatch):
    rng = np.random.default_rng(5)
    _, a, b, y = _long_tail(rng, 500, 3000, ring_ties=True)
    c = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(c, solver="sparse")
    lu = bt.sandwich_intervals(c, fit)
    monkeypatch.setattr(bt, "SPLU_MAX_MODELS", 0)  # what 100,000 models use
    cg = bt.sandwich_intervals(c, fit)
    np.testing.assert_allclose(cg.se_elo, lu.se_elo, rtol=1e-6)
    np.testing.assert_allclose(cg.se_elo, bt.sandwich_intervals(c, fit, solver="dense").se_elo, rtol=1e-6)


@pytest.mark.slow
def test_a_long_chain_where_cg_stalls_falls_back_to_sparse_lu(monkeypatch):
    # each model compared only with its neighbours: CG would need thousands of
    # iterations, a chain has no LU fill
    rng = np.random.default_rng(8)
    m = 1200
    names = np.array([f"c{k:04d}" for k in range(m)])
    theta = np.cumsum(rng.normal(0, 0.3, m))
    a, b = np.tile(names[:-1], 4), np.tile(names[1:], 4)
    d = np.tile(theta[:-1] - theta[1:], 4)
    y = (rng.random(len(d)) < 1 / (1 + np.exp(-d))).astype(float)
    y[: m - 1] = 0.5  # one tie per link: the MLE exists
    c = bt.comparisons_from_battles(a, b, y)
    monkeypatch.setattr(bt, "SPLU_MAX_MODELS", 0)  # the SEs try CG first too
    factorised = []
    lu = sparse_linalg._grounded_lu
    monkeypatch.setattr(sparse_linalg, "_grounded_lu", lambda *args: factorised.append(1) or lu(*args))
    _assert_same(*_both(c))
    assert factorised  # the fallback did run


def test_large_tables_get_ses_for_the_top_models_and_named_ones(monkeypatch):
    rng = np.random.default_rng(6)
    _, a, b, y = _long_tail(rng, 500, 3000, ring_ties=True)
    c = bt.comparisons_from_battles(a, b, y)
    fit = bt.fit_bt(c, solver="sparse")
    full = bt.sandwich_intervals(c, fit)
    monkeypatch.setattr(bt, "SE_ALL_MAX_MODELS", 100)
    monkeypatch.setattr(bt, "SE_TOP_MODELS", 30)
    default = bt.sandwich_intervals(c, fit)
    assert set(np.flatnonzero(np.isfinite(default.se_elo))) == set(np.argsort(-fit.elo)[:30])
    part = bt.sandwich_intervals(c, fit, models=["m0499", "m0250"], top=20)
    wanted = set(np.argsort(-fit.elo)[:20]) | {499, 250}
    assert set(np.flatnonzero(np.isfinite(part.se_elo))) == wanted
    idx = sorted(wanted)
    np.testing.assert_allclose(part.se_elo[idx], full.se_elo[idx], rtol=1e-9)
    assert np.all(np.isnan(part.lower_elo[~np.isfinite(part.se_elo)]))
    assert f"computed for {len(wanted)} of 500 models" in part.note
    assert not bt.sandwich_intervals(c, fit, top=500).note  # every model asked for: no note


# ------------------------------------------------------------ known answer
def test_sparse_fit_recovers_known_strengths_on_2000_models():
    rng = np.random.default_rng(7)
    m, n = 2000, 40_000  # ~40 battles per model, ~2% of all pairs compared
    theta = rng.normal(0, 0.7, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = (rng.random(n) < p).astype(float)  # no ties: the data follow the fitted model exactly
    c = bt.comparisons_from_battles(a, b, y, models=range(m))
    fit = bt.fit_bt(c)
    assert fit.solver == "sparse" and fit.converged and fit.well_defined
    iv = bt.sandwich_intervals(c, fit)
    err = fit.theta - (theta - theta.mean())
    se = iv.se_elo / ELO_PER_LOGIT
    # Each θ̂ rests on ~40 battles: SE ≈ 1/sqrt(40 · p(1−p)) ≈ 0.36 logits, so
    # the correlation can only be about 1/sqrt(1 + SE²/0.7²) ≈ 0.88 and the
    # mean absolute error about sqrt(2/π)·SE; the MLE is pushed outwards by a
    # few percent at this sample size.
    assert 0.3 < np.median(se) < 0.42
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.86
    assert 0.95 < np.polyfit(theta, fit.theta, 1)[0] < 1.15
    assert np.mean(np.abs(err)) == pytest.approx(np.sqrt(2 / np.pi) * np.sqrt(np.mean(se**2)), rel=0.1)
    cover = np.mean(np.abs(err) <= Z95 * se)
    assert 0.93 < cover < 0.97  # 95% intervals; ±0.02 is four binomial SEs at 2,000 models


# ----------------------------------------------------------- solver choice
def test_auto_picks_sparse_above_the_threshold_and_the_sandwich_follows():
    def chain(m):  # every model ties its neighbour: connected, MLE exists
        names = np.array([f"c{k}" for k in range(m)])
        return bt.comparisons_from_battles(names[:-1], names[1:], np.full(m - 1, 0.5), models=names)

    at = bt.fit_bt(chain(bt.SPARSE_MIN_MODELS), min_battles=0)
    above_c = chain(bt.SPARSE_MIN_MODELS + 1)
    above = bt.fit_bt(above_c, min_battles=0)
    assert at.solver == "dense" and above.solver == "sparse"
    assert np.allclose(above.theta, 0) and above.converged
    assert np.all(np.isfinite(bt.sandwich_intervals(above_c, above).se_elo))
    assert bt.fit_bt(above_c, solver="dense", min_battles=0).solver == "dense"
    assert bt.fit_bt(chain(10), solver="sparse", min_battles=0).solver == "sparse"
    with pytest.raises(ValueError, match="unknown solver"):
        bt.fit_bt(chain(10), solver="cholmod")
    with pytest.raises(ValueError, match="unknown solver"):
        bt.sandwich_intervals(chain(10), at, solver="cholmod")


def _hubless(rng, m, n):
    """A ring with random chords (a Swiss-style schedule): no hubs, and a sparse LU that fills in."""
    theta = rng.normal(0, 1, m)
    a = np.r_[np.arange(m), rng.integers(0, m, n - m)]
    b = np.r_[(np.arange(m) + 1) % m, rng.integers(0, m, n - m)]
    b = np.where(a == b, (b + 1) % m, b)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < p).astype(float))
    names = np.array([f"h{k:04d}" for k in range(m)])
    return names[a], names[b], y


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_a_hubless_graph_takes_the_dense_inverse_and_keeps_every_se(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    c = bt.comparisons_from_battles(*_hubless(rng, 1800, 5400))
    fit = bt.fit_bt(c, solver="sparse")
    used = []
    dense_inverse = sparse_linalg._grounded_dense_inverse
    monkeypatch.setattr(sparse_linalg, "_grounded_dense_inverse", lambda *a: used.append(1) or dense_inverse(*a))
    got = bt.sandwich_intervals(c, fit)
    assert used  # the LU's fill made the dense inverse the cheaper way
    assert sparse_linalg._fills_in(c)  # predicted from the graph: no LU is tried first
    monkeypatch.setattr(bt, "DENSE_SPEEDUP", 0.0)  # the sparse LU path on the same fit
    monkeypatch.setattr(sparse_linalg, "_fills_in", lambda c: False)
    lu = bt.sandwich_intervals(c, fit)
    np.testing.assert_allclose(got.se_elo, lu.se_elo, rtol=1e-9)
    reference = bt.sandwich_intervals(c, fit, solver="dense")  # the dense sandwich: H⁻¹ G H⁻¹ in full
    np.testing.assert_allclose(got.se_elo, reference.se_elo, rtol=1e-6)


def test_the_dense_solve_reads_columns_for_unit_right_hand_sides_and_multiplies_the_rest():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 40))
    inverse = a @ a.T
    comps = np.repeat([0, 1], 20)
    rhs = np.zeros((40, 6))
    rhs[[0, 5, 25, 30, 39, 7], np.arange(6)] = 1.0
    rhs = gauge._centre(rhs.T, comps).T  # P e_m, as the SE solves build them
    rhs[:, 5] = rng.normal(size=40)  # a general right-hand side too
    np.testing.assert_allclose(sparse_linalg._dense_solve(inverse, rhs), inverse @ rhs, rtol=1e-12, atol=1e-12)


def test_the_fill_prediction_tells_an_expander_from_a_chain_and_a_hub_graph():
    rng = np.random.default_rng(2)
    assert sparse_linalg._fills_in(bt.comparisons_from_battles(*_hubless(rng, 2000, 6000)))
    m = 2000
    chain = np.array([f"c{k:04d}" for k in range(m)])
    y = (rng.random(3 * (m - 1)) < 0.5).astype(float)
    assert not sparse_linalg._fills_in(bt.comparisons_from_battles(np.tile(chain[:-1], 3), np.tile(chain[1:], 3), y))
    _, a, b, y = _long_tail(rng, 2000, 6000)
    assert not sparse_linalg._fills_in(bt.comparisons_from_battles(a, b, y))  # hubs: the LU stays sparse
