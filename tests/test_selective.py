"""SCOPE (METHODS §6): parity with a plain loop implementation written here, hand-computed thresholds,
honesty against a known population, usefulness on a position-biased judge, real data, the CLI and the
selective leaderboard."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from core.stats import selective
from tests.cli import run_cli
from tests.conftest import ROOT, shared_path

ALL = ("scope", "ltt", "naive", "heuristic", "vanilla")


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _judge(rng, n, bias=1.0, noise=1.5):
    """A position-biased judge: humans prefer a w.p. σ(z); the judge reports σ(z ± b) by position."""
    z = rng.normal(0, noise, n)
    human_a = rng.random(n) < _sig(z)
    return _sig(z + bias), _sig(z - bias), human_a


# ----------------------------------------------------------------------------------------------
# METHODS §6 written plainly: loops, exact decimal arithmetic for α, one split at a time.
def _entropy(p):
    return -(p * math.log(p) + (1 - p) * math.log(1 - p)) if 0 < p < 1 else 0.0


def _loop_threshold(s, err, alpha, method, delta=0.1):
    """λ̂ over the distinct calibration scores (equal scores enter together); −inf = abstain on all."""
    a = Fraction(str(alpha))  # the decimal α the user typed, exactly: α = num/den
    num, den = a.numerator, a.denominator
    cands = sorted(set(s))
    accepted = lambda lam: [int(e) for si, e in zip(s, err) if si <= lam]
    if method == "ltt":
        n_min = math.ceil(math.log(delta) / math.log(1 - alpha))
        best = -math.inf
        for lam in cands:
            acc = accepted(lam)
            if len(acc) < n_min:
                continue
            if stats.binom.cdf(sum(acc), len(acc), alpha) <= delta:
                best = lam
            else:
                break  # fixed-sequence testing stops at the first failure
        return best
    best = -math.inf
    for lam in cands:
        acc = accepted(lam)
        # Σ (E_i − α) ≤ −1 and Σ E_i ≤ α·n, multiplied through by den: integers only
        if method == "scope" and den * sum(acc) - num * len(acc) <= -den:
            best = lam
        if method == "naive" and acc and den * sum(acc) <= num * len(acc):
            best = lam
    return best


def _loop_evaluate(score, conf, err, masks, alphas, methods, delta=0.1):
    """Per split: calibrate on the mask, measure on the rest; the summary statistics of METHODS §6."""
    out = {}
    for m in methods:
        for alpha in alphas:
            risks, covs, acc_total, err_total, empty = [], [], 0, 0, 0
            for cal in masks:
                test = ~cal
                if m == "vanilla":
                    acc = np.ones(test.sum(), bool)
                elif m == "heuristic":
                    acc = conf[test] >= 1 - alpha - 1e-12
                else:
                    lam = _loop_threshold(score[cal].tolist(), err[cal].tolist(), alpha, m, delta)
                    acc = score[test] <= lam
                covs.append(acc.mean())
                if acc.sum() == 0:
                    empty += 1
                    continue
                risks.append(err[test][acc].mean())
                acc_total += acc.sum()
                err_total += err[test][acc].sum()
            r = np.array(risks)
            out[(m, alpha)] = {
                "risk_mean": r.mean() if len(r) else np.nan,
                "risk_sd": r.std(ddof=1) if len(r) > 1 else np.nan,
                "risk_pooled": err_total / acc_total if acc_total else np.nan,
                "coverage_mean": np.mean(covs),
                "coverage_sd": np.std(covs, ddof=1),
                "share_over_alpha": np.sum(r > alpha) / len(masks),  # every split; an empty one is not over α
                "empty_splits": empty,
            }
    return out


# ---------------------------------------------------------------------------- thresholds
def test_hand_computed_thresholds():
    # α = 0.5: cumulative Σ(E − α) = −0.5, −1, −0.5, −1 → the last feasible threshold is 0.4
    s, e = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 0, 1, 0.0])
    assert selective.thresholds(s, e, 0.5, "scope")[0] == 0.4
    # ties enter together: the tie at 0.2 holds an error, so 0.2 is not feasible (Σ = −0.5 there)
    s, e = np.array([0.1, 0.2, 0.2, 0.5]), np.array([0, 1, 0, 1.0])
    assert selective.thresholds(s, e, 0.5, "scope")[0] == -np.inf
    assert selective.thresholds(s, e, 0.5, "naive")[0] == 0.5  # naive: 2 errors / 4 ≤ 0.5
    # the −1 correction: one clean instance passes naive but not scope at α = 0.5
    s, e = np.array([0.1, 0.3]), np.array([0, 1.0])
    assert selective.thresholds(s, e, 0.5, "naive")[0] == 0.3
    assert selective.thresholds(s, e, 0.5, "scope")[0] == -np.inf


def test_ltt_walks_up_and_stops_at_the_first_failure():
    # α = δ = 0.1: n_min = ⌈ln 0.1 / ln 0.9⌉ = 22 (0.9²² = 0.098 ≤ 0.1 < 0.9²¹)
    assert selective.ltt_min_accepted(0.1, 0.1) == 22
    s = np.arange(1.0, 61.0)
    e = np.zeros(60)
    e[22] = 1  # the 23rd instance is wrong: P(Bin(23, .1) ≤ 1) = 0.9²³ + 2.3·0.9²² = 0.315 > δ
    # λ̂ = the 22nd score, although P(Bin(60, .1) ≤ 1) = 0.014 would pass at the top
    assert selective.thresholds(s, e, 0.1, "ltt")[0] == 22.0
    e = np.zeros(60)
    e[25] = 1  # P(Bin(26, .1) ≤ 1) = 0.9²⁶ + 2.6·0.9²⁵ = 0.251 > δ: stop after 25
    assert selective.thresholds(s, e, 0.1, "ltt")[0] == 25.0
    assert selective.thresholds(s[:21], np.zeros(21), 0.1, "ltt")[0] == -np.inf  # too few to pass
    e = np.zeros(60)
    e[3] = 1  # an error before n_min: the first candidate (22 instances, 1 error) already fails
    assert selective.thresholds(s, e, 0.1, "ltt")[0] == -np.inf


@pytest.mark.parametrize("method", ["scope", "naive", "ltt"])
def test_thresholds_match_the_written_rule(method):
    rng = np.random.default_rng(0)
    for rep in range(15):
        p_fwd, p_rev, h = _judge(rng, 150)
        u = selective.bpe(np.round(p_fwd, 2), np.round(p_rev, 2), h)  # rounding creates ties in s
        for alpha in (0.05, 0.1, 0.2, 0.25):
            got = selective.thresholds(u.score, u.errors, alpha, method)[0]
            want = _loop_threshold(u.score.tolist(), u.errors.tolist(), alpha, method)
            assert got == want, (rep, alpha)


@settings(max_examples=150, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 12), st.booleans()), min_size=1, max_size=70),
    alpha=st.sampled_from([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5]),
)
def test_thresholds_property(data, alpha):
    s = np.array([k / 20 for k, _ in data])  # few distinct values: many ties
    e = np.array([float(err) for _, err in data])
    for method in ("scope", "naive", "ltt"):
        assert selective.thresholds(s, e, alpha, method)[0] == _loop_threshold(s.tolist(), e.tolist(), alpha, method)
    lam = selective.thresholds(s, e, alpha, "scope")[0]
    if np.isfinite(lam):  # the accepted calibration set meets the constraint; no larger score does
        assert sum(e[s <= lam] - alpha) <= -1 + 1e-9
        assert all(sum(e[s <= v] - alpha) > -1 + 1e-9 for v in set(s[s > lam]))
    # a looser α never lowers SCOPE's or the naive threshold (LTT's fixed sequence may: see below)
    for method in ("scope", "naive"):
        assert (
            selective.thresholds(s, e, alpha, method)[0] <= selective.thresholds(s, e, min(alpha + 0.1, 0.6), method)[0]
        )


def test_ltt_fixed_sequence_is_not_monotone_in_alpha():
    # Found by the property above.  The fixed sequence starts at the fewest accepted instances that could pass
    # at all: 4 at α = 0.5 (0.5⁴ ≤ δ), so the first candidate is the whole set (ties enter together), which
    # passes; 3 at α = 0.6 (0.4³ ≤ δ), the first tie group with 1 error, which fails and stops the walk.
    s, e = np.array([0, 0, 0, 0.05, 0.05, 0.05, 0.05]), np.array([0, 0, 1, 0, 0, 0, 0.0])
    assert selective.thresholds(s, e, 0.5, "ltt")[0] == 0.05
    assert selective.thresholds(s, e, 0.6, "ltt")[0] == -np.inf


# ---------------------------------------------------------------------------- evaluation
def test_evaluation_matches_the_loop_implementation_on_the_same_splits():
    rng = np.random.default_rng(1)
    p_fwd, p_rev, h = _judge(rng, 240)
    u = selective.bpe(np.round(p_fwd, 3), np.round(p_rev, 3), h)
    masks = selective.calibration_masks(len(u), 100, seed=7)
    assert (masks.sum(axis=1) == 120).all()
    alphas = (0.05, 0.1, 0.2)
    got = selective.evaluate(u, alphas, splits=masks).table.set_index(["method", "alpha"])
    want = _loop_evaluate(u.score, u.confidence, u.errors, masks, alphas, ALL)
    for key, w in want.items():
        row = got.loc[key]
        for stat, value in w.items():
            if np.isnan(value):
                assert np.isnan(row[stat]), (key, stat)
            else:
                assert row[stat] == pytest.approx(value, rel=1e-12, abs=1e-12), (key, stat)


def test_evaluation_is_the_same_in_chunks(monkeypatch):
    rng = np.random.default_rng(11)
    u = selective.bpe(*_judge(rng, 300))
    whole = selective.evaluate(u, (0.1, 0.2), n_splits=30, seed=3).table
    from core.stats.selective import evaluation

    monkeypatch.setattr(evaluation, "_CELLS_PER_CHUNK", 300 * 7)  # 7 splits per chunk
    seen = []
    chunked = selective.evaluate(u, (0.1, 0.2), n_splits=30, seed=3, progress=lambda d, t: seen.append((d, t))).table
    pd.testing.assert_frame_equal(whole, chunked)
    assert seen[-1] == (30, 30) and len(seen) == 5


def test_empty_splits_are_counted_not_averaged_as_zero():
    rng = np.random.default_rng(2)
    u = selective.bpe(*_judge(rng, 60, noise=0.2))  # a weak judge: about half its calls are wrong
    res = selective.evaluate(u, (0.05,), n_splits=50, seed=0)
    scope = res.table.set_index("method").loc["scope"]
    risk = res.per_split[("scope", 0.05)]["risk"]
    assert scope["empty_splits"] == np.isnan(risk).sum() > 0
    if scope["empty_splits"] < 50:
        assert scope["risk_mean"] == pytest.approx(np.nanmean(risk))
    else:
        assert np.isnan(scope["risk_mean"]) and not scope["exceeds_alpha"]


def test_input_validation():
    with pytest.raises(ValueError, match="p_rev"):
        selective.bpe([0.2, 0.3], [0.1, 1.2], [True, False])
    with pytest.raises(ValueError, match="length"):
        selective.bpe([0.2, 0.3], [0.1, 0.2], [True])
    u = selective.bpe([0.9, 0.2, 0.7, 0.4], [0.8, 0.1, 0.6, 0.3], [True, False, True, True])
    with pytest.raises(ValueError, match="α"):
        selective.evaluate(u, (0.0,), n_splits=2)
    with pytest.raises(ValueError, match="unknown"):
        selective.evaluate(u, (0.1,), n_splits=2, methods=("scop",))


# ------------------------------------------------------------------------------- honesty
def test_violation_rates_ltt_keeps_its_promise():
    """Fresh calibration sets against a large independent population (the known truth)."""
    rng = np.random.default_rng(3)
    n_sets, n_cal, delta = 400, 300, 0.1
    population = selective.bpe(*_judge(rng, 200_000, noise=1.0))
    cal = selective.bpe(*_judge(rng, n_sets * n_cal, noise=1.0))
    alphas = (0.1, 0.15, 0.2, 0.25)
    vr = selective.violation_rates(
        cal.score.reshape(n_sets, n_cal),
        cal.errors.reshape(n_sets, n_cal),
        population,
        alphas,
        ("scope", "naive", "ltt", "heuristic", "vanilla"),
        delta,
    )
    v = vr.set_index(["method", "alpha"])
    mc = 3 * math.sqrt(delta * (1 - delta) / n_sets)
    for a in alphas:
        assert v.loc[("ltt", a), "violation_rate"] <= delta + mc, a
        # the naive rule sits on the boundary: it overshoots about half the time
        assert v.loc[("naive", a), "violation_rate"] > 0.25, a
    # SCOPE is not a high-probability guarantee: at some α it overshoots far more often than δ
    assert max(v.loc[("scope", a), "violation_rate"] for a in alphas) > delta + mc
    # an independent look at one calibration set: the population risk at its λ̂
    lam = selective.thresholds(cal.score[:n_cal], cal.errors[:n_cal], 0.15, "ltt")[0]
    acc = population.score <= lam
    risk0 = population.errors[acc].mean() if acc.any() else np.nan
    rates = selective.violation_rates(
        cal.score[None, :n_cal], cal.errors[None, :n_cal], population, (0.15,), ("ltt",), delta
    )
    assert rates["violation_rate"].iloc[0] == float(acc.any() and risk0 > 0.15)
    # calibration-free baselines: the same accepted set every time
    vanilla_risk = population.errors.mean()
    assert v.loc[("vanilla", 0.1), "mean_population_risk"] == pytest.approx(vanilla_risk)
    assert v.loc[("vanilla", 0.1), "violation_rate"] == float(vanilla_risk > 0.1)


def test_scope_pooled_risk_exceeds_alpha_with_a_weak_judge():
    """METHODS §6: the ratio E[errors accepted] / E[accepted] the paper's theorem bounds can exceed α."""
    rng = np.random.default_rng(13)
    n_sets, n_cal = 400, 500
    population = selective.bpe(*_judge(rng, 100_000, noise=0.7))
    cal = selective.bpe(*_judge(rng, n_sets * n_cal, noise=0.7))
    vr = selective.violation_rates(
        cal.score.reshape(n_sets, n_cal), cal.errors.reshape(n_sets, n_cal), population, (0.1,), ("scope",)
    ).iloc[0]
    lam = selective.thresholds(cal.score.reshape(n_sets, n_cal), cal.errors.reshape(n_sets, n_cal), 0.1, "scope")
    acc = population.score[None, :] <= lam[:, None]  # by hand: accepted population per calibration draw
    pooled = (acc & ~population.correct[None, :]).sum() / acc.sum()
    assert vr["pooled_population_risk"] == pytest.approx(pooled)
    assert pooled > 0.13 and vr["pooled_exceeds_alpha"]


def test_simulated_violation_table_shape():
    vr = selective.simulated_violation_rates((0.1, 0.2), n_cal=200, n_sets=50, n_population=20_000, seed=1)
    assert sorted(vr["method"]) == ["ltt", "ltt", "naive", "naive", "scope", "scope"]
    assert {
        "violation_rate",
        "mc_se",
        "exceeds_alpha",
        "abstain_all",
        "mean_population_coverage",
        "pooled_population_risk",
        "pooled_exceeds_alpha",
    } <= set(vr)
    assert ((vr["violation_rate"] >= 0) & (vr["violation_rate"] <= 1)).all()


# ---------------------------------------------------------------------------- usefulness
def test_bpe_beats_a_single_order_on_a_position_biased_judge():
    rng = np.random.default_rng(4)
    p_fwd, p_rev, h = _judge(rng, 3000, bias=1.2)
    both, one = selective.bpe(p_fwd, p_rev, h), selective.single_order(p_fwd, h)
    assert selective.quality(both).auroc > selective.quality(one).auroc + 0.02
    cov = {}
    for name, u in (("bpe", both), ("single", one)):
        t = selective.evaluate(u, (0.1,), n_splits=200, seed=0, methods=("scope",)).table
        cov[name] = t["coverage_mean"].iloc[0]
    assert cov["bpe"] > cov["single"] + 0.02


def test_quality_metrics_against_direct_computations():
    rng = np.random.default_rng(5)
    u = selective.bpe(*_judge(rng, 400))
    q = selective.quality(u)
    c, y = u.confidence, u.correct
    pairs = c[y][:, None] - c[~y][None, :]
    assert q.auroc == pytest.approx(np.mean(pairs > 0) + 0.5 * np.mean(pairs == 0))
    assert q.accuracy == pytest.approx(y.mean())
    order = np.argsort(-c)  # average precision: mean precision at each correct instance (no ties here)
    ys = y[order]
    assert q.auprc == pytest.approx(np.mean([ys[: k + 1].mean() for k in np.flatnonzero(ys)]))
    ece, rows = 0.0, []
    for k in range(10):
        lo, hi = 0.5 + k * 0.05, 0.5 + (k + 1) * 0.05
        inb = (c >= lo) & ((c < hi) if k < 9 else (c <= hi))
        if inb.any():
            ece += inb.mean() * abs(y[inb].mean() - c[inb].mean())
            rows.append((k, inb.sum()))
    assert q.ece == pytest.approx(ece)
    assert list(zip(q.reliability["bin"], q.reliability["n"])) == rows
    assert (q.reliability["lower"] <= q.reliability["accuracy"]).all()
    assert (q.reliability["accuracy"] <= q.reliability["upper"]).all()
    perfect = selective.bpe([0.9, 0.2], [0.8, 0.3], [True, False])
    assert np.isnan(selective.quality(perfect).auroc) and selective.quality(perfect).reason


def test_reliability_bins_are_half_open():
    # c = 0.75 sits on an edge and belongs to [0.75, 0.80); c = 1 to the last, closed bin
    u = selective.bpe([0.75, 0.25, 1.0, 0.5], [0.75, 0.25, 1.0, 0.5], [True, True, True, True])
    q = selective.quality(u)
    assert q.reliability["bin"].tolist() == [0, 5, 9]
    assert q.reliability["n"].tolist() == [1, 2, 1]
    # ECE = 2/4·|0.5 − 0.75| + 1/4·|1 − 1| + 1/4·|1 − 0.5|
    assert q.ece == pytest.approx(0.25)


def test_uncertainty_quantities():
    u = selective.bpe([0.9, 0.3, 0.5], [0.7, 0.4, 0.5], [True, True, False])
    f = u.frame()
    assert f["p_bar"].tolist() == pytest.approx([0.8, 0.35, 0.5])
    assert f["pred_a"].tolist() == [True, False, True]  # p̄ ≥ 0.5 predicts a
    assert f["entropy"].tolist() == pytest.approx([_entropy(0.8), _entropy(0.35), math.log(2)])
    assert f["confidence"].tolist() == pytest.approx([0.8, 0.65, 0.5])
    assert f["correct"].tolist() == [True, False, False]
    assert selective.binary_entropy(np.array([0.0, 1.0])).tolist() == [0.0, 0.0]


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``python -m core`` in this process (the same entry point, without the start-up cost)."""
    from core.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- real data
@pytest.mark.integration
def test_softelo_sample_curves(tmp_path):
    path = shared_path("softelo_sample_annotations.csv")
    raw = pd.read_csv(path)
    human_decisive = raw["human_pref"] != 0.5
    assert human_decisive.sum() == 639  # τ is fitted on these (METHODS §2)
    both_decisive = human_decisive & (raw["judge_pref"] != 0.5)
    assert both_decisive.sum() == 489  # the instances: the judge made an A/B call
    r = run_cli("scope", str(path), "--splits", "300", "--json", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"alphas", "n_instances", "methods", "uncertainty", "seconds"}
    assert out["n_instances"] == 489 and out["alphas"] == [0.05, 0.1, 0.15, 0.2, 0.25]
    assert set(out["methods"]) == set(ALL)
    for m, d in out["methods"].items():
        assert set(d) == {
            "risk_mean",
            "risk_sd",
            "risk_pooled",
            "coverage_mean",
            "coverage_sd",
            "share_over_alpha",
            "empty_splits",
        }
        assert all(len(v) == 5 for v in d.values())
        cov = d["coverage_mean"]
        # per split every threshold is monotone in α, so the mean coverage is too
        assert all(x <= y + 1e-12 for x, y in zip(cov, cov[1:])), m
        assert all(0 <= x <= 1 for x in cov)
    for m in ("scope", "naive", "heuristic"):  # bands exist where something is accepted
        d = out["methods"][m]
        assert all(sd is not None and sd > 0 for sd in d["risk_sd"]), m
    scope = out["methods"]["scope"]
    assert scope["coverage_mean"][0] < 0.6 < scope["coverage_mean"][-1]  # a loose α accepts most
    vanilla = out["methods"]["vanilla"]
    accuracy = out["uncertainty"]["bpe"]["accuracy"]
    assert vanilla["coverage_mean"] == [1.0] * 5 and vanilla["empty_splits"] == [0] * 5
    assert vanilla["risk_pooled"][0] == pytest.approx(1 - accuracy, abs=0.01)
    # the judge's rubric verdict agrees with the human on about 4 battles in 5 in this file
    assert 0.75 < accuracy < 0.9
    assert set(out["uncertainty"]) == {"bpe", "single_order"}
    for q in out["uncertainty"].values():
        assert set(q) == {"accuracy", "ece", "auroc", "auprc"}
        assert 0.5 < q["auroc"] < 1 and 0 <= q["ece"] < 0.2


def test_cli_on_a_probability_file_matches_the_library(tmp_path, capsys):
    rng = np.random.default_rng(8)
    p_fwd, p_rev, h = _judge(rng, 200)
    f = tmp_path / "p.csv"
    pd.DataFrame({"p_fwd": p_fwd, "p_rev": p_rev, "human": np.where(h, "a", "B ")}).to_csv(f, index=False)
    code, stdout, stderr = _cli(capsys, "scope", f, "--alpha", "0.1,0.3", "--splits", "25", "--seed", "4", "--json")
    assert code == 0, stderr
    out = json.loads(stdout)
    u = selective.bpe(p_fwd, p_rev, h)
    want = selective.evaluate(u, (0.1, 0.3), n_splits=25, seed=4).method_lists()
    for m in ALL:
        for k, v in want[m].items():
            assert out["methods"][m][k] == pytest.approx([None if np.isnan(x) else x for x in v]), (m, k)
    assert out["uncertainty"]["single_order"]["auroc"] == pytest.approx(
        selective.quality(selective.single_order(p_fwd, h)).auroc
    )


@pytest.mark.parametrize(
    "content,needle",
    [
        ("p_fwd,p_rev,human\n0.9,0.8,a\n0.2,1.7,b\n", ["row 2", "p_rev"]),
        ("p_fwd,p_rev,human\n0.9,0.8,a\n0.2,0.1,x\n", ["row 2", "human"]),
        ("p_fwd,p_rev,human\n0.9,,a\n", ["row 1", "p_rev"]),
        ("foo,bar\n1,2\n", ["expected columns"]),
        (
            "model_a,model_b,human_pref,judge_pref,scores_a,scores_b\n"
            "x,y,0,0,\"{'clarity': 9}\",\"{'clarity': oops}\"\n",
            ["row 1", "scores_b"],
        ),
    ],
)
def test_cli_bad_files(tmp_path, capsys, content, needle):
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    code, _, err = _cli(capsys, "scope", bad, "--json")
    assert code == 2, err
    assert str(bad) in err and all(n in err for n in needle), err


def test_cli_bad_arguments(tmp_path, capsys):
    code, _, err = _cli(capsys, "scope", tmp_path / "missing.csv")
    assert code == 2 and "does not exist" in err
    code, _, err = _cli(capsys, "scope", "--db", tmp_path / "x.duckdb")
    assert code == 2 and "--dataset" in err
    f = tmp_path / "p.csv"
    f.write_text("p_fwd,p_rev,human\n0.9,0.8,a\n0.2,0.1,b\n0.7,0.6,a\n0.3,0.2,b\n")
    code, _, err = _cli(capsys, "scope", f, "--alpha", "0.1,1.5")
    assert code == 2 and "--alpha" in err
    code, _, err = _cli(capsys, "scope", f, "--delta", "0")
    assert code == 2 and "--delta" in err


def test_cli_from_a_store(tmp_path, capsys):
    db = tmp_path / "a.duckdb"
    code, _, err = _cli(capsys, "simulate", "--db", db, "--small")
    assert code == 0, err
    code, stdout, err = _cli(
        capsys, "scope", "--db", db, "--dataset", "demo", "--judge", "judge-position", "--splits", "20", "--json"
    )
    assert code == 0, err
    out = json.loads(stdout)
    from core.store import Store

    with Store.open(str(db), read_only=True) as store:
        bf = store.battle_frame("demo", "judge-position")
    # the instances, selected here by hand: a decisive human majority and both orders' probabilities
    inst = bf[(bf["human_y"] != 0.5) & bf["human_y"].notna() & bf["p_ab"].notna() & bf["p_ba"].notna()]
    assert out["n_instances"] == len(inst) > 100
    u = selective.bpe(inst["p_ab"], inst["p_ba"], inst["human_y"] > 0.5)
    assert out["uncertainty"]["bpe"]["auroc"] == pytest.approx(selective.quality(u).auroc)
    # the simulated judge favours the first position: averaging the orders helps
    assert out["uncertainty"]["bpe"]["auroc"] > out["uncertainty"]["single_order"]["auroc"]
    code, _, err = _cli(capsys, "scope", "--db", db, "--dataset", "demo", "--judge", "nobody", "--json")
    assert code == 2 and "nobody" in err


# ----------------------------------------------------------------------------- battles
def test_sources_from_a_battle_frame():
    bf = pd.DataFrame(
        {
            "battle_id": range(6),
            "model_a": "x",
            "model_b": "y",
            "human_y": [1.0, 0.0, 1.0, 0.5, 0.0, 2 / 3],
            "judge_hard": [1.0, 0.0, 1.0, 1.0, 0.5, 1.0],
            "verdict_ab": ["a", "b", "b", "a", "tie", "a"],
            "conf_ab": [0.9, 0.8, 0.6, 0.7, 0.5, np.nan],
            "verdict_ba": ["a", "a", "b", "a", "b", "a"],
            "conf_ba": [0.7, 0.6, 0.9, 0.7, 0.8, 0.9],
            "p_ab": [0.9, 0.1, 0.6, 0.5, 0.4, 0.8],
            "p_ba": [0.7, np.nan, 0.2, 0.5, 0.3, 0.6],
            "gap": [1.0, -2.0, 0.5, 0.0, -1.0, 2.0],
            "gap_ab": [1.5, -2.0, 1.0, 0.0, -1.0, 2.0],
            "gap_ba": [0.5, -2.0, 0.0, 0.0, -1.0, 2.0],
        }
    )
    verbal = selective.instances_from_battles(bf, "verbal").frame.set_index("battle_id")
    assert list(verbal.index) == [0, 1, 2, 4]  # decisive human, a stated confidence in both orders
    assert verbal.loc[1, "p_fwd"] == pytest.approx(0.2) and verbal.loc[1, "p_rev"] == pytest.approx(0.6)
    assert verbal.loc[4, "p_fwd"] == 0.5 and verbal.loc[4, "p_rev"] == pytest.approx(0.2)
    lp = selective.instances_from_battles(bf, "logprob").frame.set_index("battle_id")
    assert list(lp.index) == [0, 2, 4, 5]  # 2/3 of the votes for a is a decisive majority
    assert lp.loc[5, "human_a"] and not lp.loc[4, "human_a"]
    rub = selective.instances_from_battles(bf, "rubric", tau=0.7).frame.set_index("battle_id")
    assert rub.loc[0, "p_fwd"] == pytest.approx(_sig(0.7 * 1.5)) and rub.loc[0, "p_rev"] == pytest.approx(_sig(0.35))
    single = selective.instances_from_battles(bf, "single").frame
    assert (single["p_fwd"] == single["p_rev"]).all() and len(single) == 5
    nothing = selective.instances_from_battles(bf.assign(p_ab=np.nan), "logprob")
    assert nothing.frame.empty and "first-token" in nothing.reason
    few = selective.instances_from_battles(bf, "rubric")  # τ from 5 battles: undefined, and said so
    assert few.frame.empty and "τ" in few.reason


def _arena(rng, n_battles=6000):
    """Six models with known strengths; the judge copies the human on confident battles and guesses otherwise."""
    theta = np.array([1.2, 0.6, 0.2, -0.2, -0.6, -1.2])
    models = np.array([f"m{i}" for i in range(6)])
    a = rng.integers(0, 6, n_battles)
    b = (a + rng.integers(1, 6, n_battles)) % 6
    d = theta[a] - theta[b]
    human = (rng.random(n_battles) < _sig(d)).astype(float)
    s = rng.uniform(0, math.log(2), n_battles)
    confident = s < 0.35
    judge = np.where(confident, human, (rng.random(n_battles) < 0.8).astype(float))  # favours a when unsure
    voted = rng.random(n_battles) < 0.3
    bf = pd.DataFrame(
        {
            "battle_id": np.arange(n_battles),
            "model_a": models[a],
            "model_b": models[b],
            "judge_hard": judge,
            "human_y": np.where(voted, human, np.nan),
            "s": s,
        }
    )
    return bf, dict(zip(models, theta))


def test_selective_leaderboards_counts_and_parity():
    from core.stats import bt

    bf, _ = _arena(np.random.default_rng(9), 3000)
    lb = selective.selective_leaderboards(bf, "s", alpha=0.1, lam=0.35)
    judged = bf["judge_hard"].notna()
    acc = judged & (bf["s"] <= 0.35)
    esc = judged & ~acc & bf["human_y"].notna()
    assert lb.counts() == {
        "all judgments": judged.sum(),
        "accepted only": acc.sum(),
        "accepted + human escalation": (acc | esc).sum(),
    }
    part = lb.part("accepted + human escalation")
    assert part.n_human == esc.sum() and part.n_judge == acc.sum()
    sub = bf[acc | esc]
    y = np.where(acc[acc | esc], sub["judge_hard"], sub["human_y"])
    ref = bt.fit_bt(bt.comparisons_from_battles(sub["model_a"], sub["model_b"], y))
    np.testing.assert_allclose(part.fit.theta, ref.theta)
    f = lb.frame()
    assert set(f["leaderboard"]) == set(selective.LEADERBOARDS)
    none = selective.selective_leaderboards(bf, "s", alpha=0.1, lam=-np.inf)
    assert none.part("accepted only").fit is None and "accepted" in none.part("accepted only").reason
    assert none.part("accepted + human escalation").n_human == (judged & bf["human_y"].notna()).sum()


def test_selective_leaderboard_recovers_the_truth_better():
    bf, truth = _arena(np.random.default_rng(10))
    lb = selective.selective_leaderboards(bf, "s", alpha=0.1, lam=0.35)
    err = {}
    for p in lb.parts:
        est = dict(zip(p.fit.models, p.fit.theta))
        diff = np.array([est[m] - truth[m] for m in truth])
        err[p.name] = np.abs(diff - diff.mean()).mean()  # only differences are identified
    # guessing with a lean towards a shrinks every gap when all judgments count
    assert err["accepted only"] < err["all judgments"]
    assert err["accepted + human escalation"] < err["all judgments"]


def test_fit_selective_leaderboard_from_a_frame():
    rng = np.random.default_rng(12)
    n = 2000
    p_fwd, p_rev, h = _judge(rng, n, bias=0.8, noise=2.0)
    models = np.array(["x", "y", "z"])
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    bf = pd.DataFrame(
        {
            "battle_id": np.arange(n),
            "model_a": models[a],
            "model_b": models[b],
            "p_ab": p_fwd,
            "p_ba": p_rev,
            "judge_hard": ((p_fwd + p_rev) / 2 >= 0.5).astype(float),
            "human_y": np.where(rng.random(n) < 0.5, h.astype(float), np.nan),
        }
    )
    lb = selective.fit_selective_leaderboard(bf, "logprob", alpha=0.15)
    th = lb.threshold
    voted = bf["human_y"].notna()
    u = selective.bpe(bf.loc[voted, "p_ab"], bf.loc[voted, "p_ba"], bf.loc[voted, "human_y"] == 1.0)
    assert th.lam == selective.thresholds(u.score, u.errors, 0.15, "scope")[0]
    assert th.n_calibration == voted.sum() and th.calibration_risk <= 0.15
    s = selective.binary_entropy((bf["p_ab"] + bf["p_ba"]) / 2)
    assert lb.part("accepted only").n_battles == (s <= th.lam).sum()
