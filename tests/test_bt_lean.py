"""`python -m core bt FILE` imports neither pandas nor scipy, and gives what the full statistics give.

The dense path replaced three scipy calls by numpy (Cholesky solves, per-component
sums, weak components, a strong-connectivity check); each is checked here against
the scipy routine it replaces, and the whole CLI output against the in-process fit
of the same file through the pandas pair-table route.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import linalg as sla
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from core.stats import bt
from core.stats.bt import diagnostics, gauge, linalg
from core.store import aggregate_battle_file
from tests.conftest import ROOT

_PROBE = """
import contextlib, io, sys
from core.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"pandas", "scipy", "pyarrow"})
print(code, ",".join(heavy))
"""


def _battle_file(path, n_models=12, n_battles=3000, seed=0, perfect=False):
    rng = np.random.default_rng(seed)
    names = [f"model-{k:02d}" for k in range(n_models)]
    strength = rng.normal(0, 1, n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(n_battles)
    winner = np.where(u < 0.1, "tie", np.where(u < 0.1 + 0.9 * p, "model_a", "model_b")).astype(object)
    winner[rng.random(n_battles) < 0.03] = "tie (bothbad)"
    frame = pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": winner})
    if perfect:  # a newcomer that won its three battles: the MLE does not exist
        extra = pd.DataFrame({"model_a": ["newcomer"] * 3, "model_b": names[:3], "winner": ["model_a"] * 3})
        frame = pd.concat([frame, extra], ignore_index=True)
    frame.to_parquet(path)
    return path


def _run(*args):
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *map(str, args)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()


@pytest.mark.integration
def test_the_bt_command_imports_neither_pandas_nor_scipy(tmp_path):
    path = _battle_file(tmp_path / "b.parquet")
    code, *heavy = _run("bt", path, "--json")
    assert code == "0"
    assert heavy == [], f"`python -m core bt` imported {heavy}"


@pytest.mark.integration
def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check above is not vacuous: the bootstrap does import scipy."""
    path = _battle_file(tmp_path / "b.parquet")
    code, *heavy = _run("bt", path, "--json", "--ci", "bootstrap", "--bootstrap", "20")
    assert code == "0"
    assert "scipy" in heavy[0].split(",")


def _in_process(path, lam=0.0):
    cells, n_battles = aggregate_battle_file(path)
    n, y = cells["n"].to_numpy(float), cells["y"].to_numpy(float)
    comps = bt.comparisons_from_pair_table(cells.assign(s=n * y, ss=n * y * y, count=n))
    fit = bt.fit_bt(comps, lam=lam)
    return comps, fit, bt.sandwich_intervals(comps, fit), n_battles


@pytest.mark.integration
@pytest.mark.parametrize("perfect", [False, True], ids=["healthy", "perfect-record"])
@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_cli_json_equals_the_in_process_fit(tmp_path, perfect, lam):
    path = _battle_file(tmp_path / "b.parquet", perfect=perfect)
    out = subprocess.run(
        [sys.executable, "-m", "core", "bt", str(path), "--json", "--lam", str(lam)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    comps, fit, iv, n_battles = _in_process(path, lam)
    assert got["n_battles"] == n_battles and got["n_models"] == comps.n_models
    assert got["iterations"] == fit.iterations and got["converged"] == fit.converged
    issues = [i.as_dict() for i in fit.issues] + (
        [{"kind": "intervals", "models": [], "message": iv.note}] if iv.note else []
    )
    assert got["issues"] == issues
    assert ("no_mle" in {i["kind"] for i in got["issues"]}) == perfect
    by_model = {r["model"]: r for r in got["models"]}
    assert sorted(by_model) == sorted(comps.models)
    for k, name in enumerate(comps.models):
        r = by_model[name]
        assert r["elo"] == pytest.approx(fit.elo[k], abs=1e-9)
        for key, want in (("lower", iv.lower_elo[k]), ("upper", iv.upper_elo[k]), ("se", iv.se_elo[k])):
            if np.isfinite(want):
                assert r[key] == pytest.approx(want, abs=1e-9)
            else:
                assert r[key] is None
        assert r["n_battles"] == round(fit.n_battles[k])
    elos = [r["elo"] for r in got["models"]]
    assert elos == sorted(elos, reverse=True)


def test_the_numpy_dense_path_equals_its_scipy_routines(tmp_path, monkeypatch):
    """With scipy doing the components, component sums and Cholesky solves (what the dense path
    used before it went numpy-only), the fit and the sandwich are the same to round-off."""
    path = _battle_file(tmp_path / "b.parquet", n_models=30, perfect=True)
    comps, fit, iv, _ = _in_process(path)
    monkeypatch.setattr(bt, "SPARSE_MIN_MODELS", 0)  # the scipy branches of the graph helpers
    monkeypatch.setattr(linalg, "_cholesky_solve", lambda low, b: sla.cho_solve((low, True), b))
    ref = bt.fit_bt(comps, solver="dense")
    ref_iv = bt.sandwich_intervals(comps, ref)
    np.testing.assert_allclose(fit.elo, ref.elo, rtol=0, atol=1e-9)
    np.testing.assert_allclose(iv.se_elo, ref_iv.se_elo, rtol=1e-9, atol=1e-12)
    assert [str(i) for i in fit.issues] == [str(i) for i in ref.issues]
    np.testing.assert_array_equal(fit.components, ref.components)


def test_cholesky_solve_matches_scipy():
    rng = np.random.default_rng(1)
    for size in (1, 5, 64, 65, 200):
        x = rng.normal(size=(size, size + 3))
        a = x @ x.T + 0.1 * np.eye(size)
        b = rng.normal(size=(size, 4))
        want = sla.cho_solve(sla.cho_factor(a), b)
        got = linalg._cholesky_solve(np.linalg.cholesky(a), b)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(linalg._solve_spd(a, b[:, 0]), want[:, 0], rtol=1e-9, atol=1e-12)


def _random_graph(rng, m, n_edges):
    i = rng.integers(0, m, n_edges)
    j = rng.integers(0, m, n_edges)
    keep = i != j
    return i[keep], j[keep]


def test_weak_components_number_like_scipy():
    rng = np.random.default_rng(2)
    for trial in range(200):
        m = int(rng.integers(1, 40))
        i, j = _random_graph(rng, m, int(rng.integers(0, 2 * m)))
        adj = sparse.coo_matrix((np.ones(len(i)), (i, j)), shape=(m, m))
        want = connected_components(adj, directed=False)[1]
        np.testing.assert_array_equal(diagnostics._weak_labels(i, j, m), want, err_msg=f"trial {trial}")


def test_strong_connectivity_check_agrees_with_scipy():
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(300):
        m = int(rng.integers(1, 25))
        i, j = _random_graph(rng, m, int(rng.integers(0, 3 * m)))
        comps = diagnostics._weak_labels(np.r_[i, j], np.r_[j, i], m)
        directed = sparse.coo_matrix((np.ones(len(i)), (i, j)), shape=(m, m))
        n_strong = connected_components(directed, directed=True, connection="strong")[0]
        want = n_strong == comps.max() + 1
        seen.add(want)
        assert diagnostics._strongly_connected_within(i, j, comps) == want
    assert seen == {True, False}


def test_component_sums_match_a_sparse_product():
    rng = np.random.default_rng(4)
    comps = rng.integers(0, 7, 50)
    comps[:7] = np.arange(7)
    values = rng.normal(size=(9, 50))
    member = sparse.csr_matrix((np.ones(50), (np.arange(50), comps)))
    np.testing.assert_allclose(gauge._component_sums(values, comps, 7), (member.T @ values.T).T, rtol=1e-12)


def _pandas_order(models, elo):
    ref = pd.DataFrame({"model": list(models), "elo": elo})
    ref["rank"] = ref["elo"].rank(ascending=False, method="min").astype(int)
    return ref.sort_values("elo", ascending=False, kind="stable")


@pytest.mark.parametrize("ties", [False, True])
def test_leaderboard_table_orders_and_ranks_like_pandas(tmp_path, ties):
    comps, fit, iv, _ = _in_process(_battle_file(tmp_path / "b.parquet", perfect=True))
    if ties:
        fit = dataclasses.replace(fit, theta=np.round(fit.theta))
        assert len(set(fit.elo)) < len(fit.models)
    lb = bt.LeaderboardFit(fit, iv)
    frame, table = lb.frame(), lb.table()
    assert list(frame.columns) == list(table)
    ref = _pandas_order(fit.models, fit.elo)
    assert frame["model"].tolist() == ref["model"].tolist()
    assert frame["position"].tolist() == ref["rank"].tolist()
    # the rank is METHODS §10's, with ties on the 95% intervals
    above = frame["lower"].to_numpy()[None, :] > frame["upper"].to_numpy()[:, None]
    assert frame["rank"].tolist() == (1 + above.sum(axis=1)).tolist()
