"""SCOPE and friends: parity with a loop implementation of METHODS §6, honesty, usefulness, real data, CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from core import selective
from tests.conftest import ROOT, shared_path


def _judge(rng, n, bias=1.0, noise=1.5):
    z = rng.normal(0, noise, n)
    human_a = rng.random(n) < 1 / (1 + np.exp(-z))
    p_fwd = 1 / (1 + np.exp(-(z + bias)))
    p_rev = 1 / (1 + np.exp(-(z - bias)))
    return p_fwd, p_rev, human_a


def _loop_threshold(s, err, alpha, method, delta=0.1):
    """METHODS §6 written plainly: candidate λ = each distinct calibration score."""
    cands = sorted(set(s))
    best = -math.inf
    if method == "ltt":
        n_min = math.ceil(math.log(delta) / math.log(1 - alpha))
        for lam in cands:
            acc = [e for si, e in zip(s, err) if si <= lam]
            if len(acc) < n_min:
                continue
            if stats.binom.cdf(sum(acc), len(acc), alpha) <= delta:
                best = lam
            else:
                break
        return best
    for lam in cands:
        acc = [e for si, e in zip(s, err) if si <= lam]
        # compared with a tolerance: α·n is not exact in binary floating point
        if method == "scope" and sum(acc) - alpha * len(acc) <= -1 + 1e-9:
            best = lam
        if method == "naive" and sum(acc) <= alpha * len(acc) + 1e-9:
            best = lam
    return best


@pytest.mark.parametrize("method", ["scope", "naive", "ltt"])
def test_thresholds_match_the_written_rule(method):
    rng = np.random.default_rng(0)
    for rep in range(20):
        p_fwd, p_rev, h = _judge(rng, 120)
        u = selective.bpe(np.round(p_fwd, 2), np.round(p_rev, 2), h)  # rounding creates ties in s
        err = (~u.correct).astype(float)
        for alpha in (0.05, 0.1, 0.2):
            got = selective.thresholds(u.score, err, alpha, method)[0]
            want = _loop_threshold(u.score.tolist(), err.tolist(), alpha, method)
            assert got == want or (math.isinf(got) and math.isinf(want)), (rep, alpha)


def test_evaluation_matches_a_loop_over_splits():
    rng = np.random.default_rng(1)
    p_fwd, p_rev, h = _judge(rng, 300)
    u = selective.bpe(p_fwd, p_rev, h)
    res = selective.evaluate(u, (0.1, 0.2), n_splits=40, seed=7).table.set_index(["method", "alpha"])
    perm = np.argsort(np.random.default_rng(7).random((40, 300)), axis=1)
    err = ~u.correct
    for method in ("scope", "naive", "heuristic", "vanilla"):
        for alpha in (0.1, 0.2):
            risks, covs, acc_tot, err_tot = [], [], 0, 0
            for row in perm:
                cal, test = row[:150], row[150:]
                if method == "vanilla":
                    acc = np.ones(150, bool)
                elif method == "heuristic":
                    acc = u.confidence[test] >= 1 - alpha
                else:
                    lam = _loop_threshold(u.score[cal].tolist(), err[cal].astype(float).tolist(), alpha, method)
                    acc = u.score[test] <= lam
                covs.append(acc.mean())
                if acc.any():
                    risks.append(err[test][acc].mean())
                acc_tot += acc.sum()
                err_tot += err[test][acc].sum()
            r = res.loc[(method, alpha)]
            assert r["risk_mean"] == pytest.approx(np.mean(risks))
            assert r["coverage_mean"] == pytest.approx(np.mean(covs))
            assert r["risk_pooled"] == pytest.approx(err_tot / acc_tot)
            assert r["empty_splits"] == 40 - len(risks)


def test_empty_splits_are_counted_not_averaged_as_zero():
    rng = np.random.default_rng(2)
    p_fwd, p_rev, h = _judge(rng, 60, noise=0.2)  # a weak judge: ~50% errors
    res = selective.evaluate(selective.bpe(p_fwd, p_rev, h), (0.05,), n_splits=50, seed=0).table
    scope = res[res["method"] == "scope"].iloc[0]
    assert scope["empty_splits"] > 0
    if scope["empty_splits"] == 50:
        assert np.isnan(scope["risk_mean"])


def test_ltt_keeps_its_promise_and_scope_may_not():
    rng = np.random.default_rng(3)
    pool = selective.bpe(*_judge(rng, 4000, noise=1.0))
    population = selective.bpe(*_judge(rng, 200_000, noise=1.0))
    vr = selective.violation_rates(pool, population, alphas=(0.1, 0.15), n_cal=400, n_splits=400, delta=0.1)
    ltt = vr[vr["method"] == "ltt"]
    mc = 3 * math.sqrt(0.1 * 0.9 / 400)
    assert (ltt["violation_rate"] <= 0.1 + mc).all()
    scope = vr[vr["method"] == "scope"]
    assert scope["violation_rate"].max() > ltt["violation_rate"].max()


def test_bpe_beats_a_single_order_on_a_position_biased_judge():
    rng = np.random.default_rng(4)
    p_fwd, p_rev, h = _judge(rng, 3000, bias=1.2)
    both, one = selective.bpe(p_fwd, p_rev, h), selective.single_order(p_fwd, h)
    assert selective.quality(both).auroc > selective.quality(one).auroc
    cov = {}
    for name, u in (("bpe", both), ("single", one)):
        t = selective.evaluate(u, (0.1,), n_splits=200, seed=0, methods=("scope",)).table
        cov[name] = t["coverage_mean"].iloc[0]
    assert cov["bpe"] > cov["single"]


def test_quality_metrics_against_direct_computations():
    rng = np.random.default_rng(5)
    u = selective.bpe(*_judge(rng, 500))
    q = selective.quality(u)
    c, y = u.confidence, u.correct
    auroc = np.mean([ci > cj for ci in c[y] for cj in c[~y]]) + 0.5 * np.mean([ci == cj for ci in c[y] for cj in c[~y]])
    assert q.auroc == pytest.approx(auroc)
    assert q.accuracy == pytest.approx(y.mean())
    # average precision: mean precision at each correct instance, ranked by confidence (no ties here)
    order = np.argsort(-c)
    ys = y[order]
    ap = np.mean([ys[: k + 1].mean() for k in np.flatnonzero(ys)])
    assert q.auprc == pytest.approx(ap)


def test_softelo_sample_curves(tmp_path):
    path = shared_path("softelo_sample_annotations.csv")
    r = subprocess.run([sys.executable, "-m", "core", "scope", str(path), "--splits", "300", "--json"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["n_instances"] == 489 and out["alphas"] == [0.05, 0.1, 0.15, 0.2, 0.25]
    for m in ("scope", "ltt", "naive", "heuristic", "vanilla"):
        d = out["methods"][m]
        assert set(d) == {"risk_mean", "risk_sd", "risk_pooled", "coverage_mean", "coverage_sd", "share_over_alpha",
                          "empty_splits"}
        assert all(len(v) == 5 for v in d.values())
    cov = out["methods"]["scope"]["coverage_mean"]
    assert cov == sorted(cov) and cov[0] < cov[-1]  # a looser α accepts more
    assert set(out["uncertainty"]) == {"bpe", "single_order"}
    bad = tmp_path / "bad.csv"
    bad.write_text("p_fwd,p_rev,human\n0.9,0.8,a\n0.2,1.7,b\n")
    r = subprocess.run([sys.executable, "-m", "core", "scope", str(bad), "--json"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "row 2" in r.stderr and "p_rev" in r.stderr


def test_verbalised_confidence_source():
    import pandas as pd

    bf = pd.DataFrame({"battle_id": range(6), "model_a": "x", "model_b": "y",
                       "human_y": [1.0, 0.0, 1.0, 0.5, 0.0, 1.0],
                       "verdict_ab": ["a", "b", "b", "a", "tie", "a"], "conf_ab": [0.9, 0.8, 0.6, 0.7, 0.5, np.nan],
                       "verdict_ba": ["a", "a", "b", "a", "b", "a"], "conf_ba": [0.7, 0.6, 0.9, 0.7, 0.8, 0.9],
                       "p_ab": np.nan, "p_ba": np.nan, "gap": np.nan, "gap_ab": np.nan, "gap_ba": np.nan})
    inst = selective.instances_from_battles(bf, "verbal")
    f = inst.frame.set_index("battle_id")
    assert list(f.index) == [0, 1, 2, 4]  # human decisive and a stated confidence in both orders
    assert f.loc[1, "p_fwd"] == pytest.approx(0.2) and f.loc[1, "p_rev"] == pytest.approx(0.6)
    assert f.loc[4, "p_fwd"] == 0.5 and f.loc[4, "p_rev"] == pytest.approx(0.2)
