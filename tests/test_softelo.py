"""Soft-Elo: τ recovery, reliability/ECE, held-out protocol parity, conformal rules and coverage."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from core.app.files import softelo_frame
from core.domain import ELO_PER_LOGIT
from core.stats.calibration import fit_tau, gap_agreement, reliability, reliability_from_confidence
from core.stats.conformal import conformal_quantile, deploy, evaluate_splits, min_pool
from core.stats.heldout import LAMBDA, Predictor, leave_one_model_out, solve_target
from tests.cli import run_cli
from tests.conftest import shared_path


def _arena(rng, m=30, n=12000, tau_true=0.6, judge_noise=0.25, tie=0.0):
    """Battles whose human votes follow σ(τ_true·gap) exactly: τ is known."""
    theta = rng.normal(0, 0.8, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    gap = (theta[a] - theta[b] + rng.normal(0, judge_noise, n)) / tau_true
    human = (rng.random(n) < 1 / (1 + np.exp(-tau_true * gap))).astype(float)
    human = np.where(rng.random(n) < tie, 0.5, human)
    names = np.array([f"m{k:02d}" for k in range(m)])
    return theta, pd.DataFrame(
        {"model_a": names[a], "model_b": names[b], "human_y": human, "judge_hard": np.sign(gap) * 0.5 + 0.5, "gap": gap}
    )


def test_tau_is_recovered_within_its_interval():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(20):
        _, f = _arena(rng, n=3000, tau_true=0.6)
        t = fit_tau(f["gap"], f["human_y"])
        hits += t.lower <= 0.6 <= t.upper
        assert t.lower < t.tau < t.upper
    assert hits >= 17  # a 95% interval, 20 tries


def test_tau_matches_a_bounded_search_and_reports_undefined_cases():
    rng = np.random.default_rng(1)
    _, f = _arena(rng, n=2000)
    t = fit_tau(f["gap"], f["human_y"])
    g, y = f["gap"].to_numpy(), f["human_y"].to_numpy()
    nll = lambda lt: float(np.sum(np.logaddexp(0, -np.exp(lt) * g) * y + np.logaddexp(0, np.exp(lt) * g) * (1 - y)))
    ref = optimize.minimize_scalar(nll, bounds=(np.log(1e-3), np.log(50)), method="bounded", options={"xatol": 1e-12}).x
    assert t.tau == pytest.approx(np.exp(ref), rel=1e-6)
    assert t.profile["delta"].min() == pytest.approx(0, abs=1e-6)
    few = fit_tau([1.0, -1.0, 2.0], [1.0, 0.0, 1.0])
    assert few.tau is None and "need at least 8" in few.reason
    ties_only = fit_tau(np.ones(50), np.full(50, 0.5))
    assert ties_only.tau is None
    flat = fit_tau(np.zeros(40), np.tile([0.0, 1.0], 20))
    assert flat.tau is None and "zero" in flat.reason


def test_tau_profile_is_the_deviance_of_every_battle():
    """The Calibration page's profile (computed on distinct (gap, vote) cells, one softplus per cell) equals
    2·(ℓ(τ̂) − ℓ(τ)) summed battle by battle, and crosses χ²₁(0.95) at the fit's interval bounds."""
    from core.app.calibration import tau_profile

    rng = np.random.default_rng(5)
    _, f = _arena(rng, n=4000, tie=0.1)
    f["gap"] = np.round(f["gap"] * 2) / 2  # rubric-like gaps: many battles share a cell
    fit = fit_tau(f["gap"], f["human_y"])
    prof = tau_profile(f, fit, user_tau=3.0)
    keep = f["human_y"] != 0.5
    g, y = f["gap"].to_numpy()[keep], f["human_y"].to_numpy()[keep]

    def direct(tau: float) -> float:  # −Σ [y ln σ(τΔ) + (1−y) ln σ(−τΔ)], one battle at a time
        p = 1 / (1 + np.exp(-tau * g))
        return float(-np.sum(y * np.log(p) + (1 - y) * np.log1p(-p)))

    best = direct(fit.tau)
    for tau, delta in prof.iloc[::20][["tau", "delta"]].itertuples(index=False):
        assert delta == pytest.approx(2 * (direct(tau) - best), rel=1e-9, abs=1e-7)
    assert prof["tau"].max() >= 3.0  # the grid reaches the user's τ
    at = lambda tau: float(np.interp(np.log(tau), np.log(prof["tau"]), prof["delta"]))
    assert at(fit.lower) == pytest.approx(3.841, abs=0.05) and at(fit.upper) == pytest.approx(3.841, abs=0.05)


def test_ece_matches_a_direct_computation():
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.5, 1, 1000)
    correct = (rng.random(1000) < conf**2).astype(float)
    rel = reliability_from_confidence(conf, correct, "x", n_bins=10)
    order = np.argsort(conf, kind="stable")
    ece = 0.0
    for chunk in np.array_split(order, 10):
        ece += len(chunk) / 1000 * abs(correct[chunk].mean() - conf[chunk].mean())
    assert rel.ece == pytest.approx(ece)
    # hard labels put confidence 1 on the judge's side: ECE = 1 − agreement
    _, f = _arena(rng)
    hard = reliability(f["gap"], f["human_y"], f["judge_hard"], tau=math.inf)
    assert hard.ece == pytest.approx(1 - hard.accuracy)
    soft = reliability(f["gap"], f["human_y"], f["judge_hard"], tau=0.6)
    assert soft.ece < 0.03 < hard.ece  # calibrated by construction


def test_flat_gap_triggers_the_low_signal_warning():
    rng = np.random.default_rng(3)
    gap = rng.normal(0, 2, 3000)
    human = (rng.random(3000) < 0.5).astype(float)  # humans ignore the gap
    t = fit_tau(gap, human)
    assert gap_agreement(gap, human, t.tau).warning is not None
    _, f = _arena(rng)
    t2 = fit_tau(f["gap"], f["human_y"])
    assert gap_agreement(f["gap"], f["human_y"], t2.tau).warning is None


def test_conformal_quantile_rule():
    s = np.arange(1, 20, dtype=float)  # 19 scores
    q = conformal_quantile(s, 0.1)
    assert q.k == math.ceil(20 * 0.9) == 18 and q.qhat == 18.0
    small = conformal_quantile(np.arange(1, 9, dtype=float), 0.1)  # 8 < 9 = ceil(1/0.1) - 1
    assert math.isinf(small.qhat) and "too few" in small.reason and min_pool(0.1) == 9
    ok = conformal_quantile(np.arange(1, 10, dtype=float), 0.1)
    assert ok.finite and ok.qhat == 9.0
    with pytest.raises(ValueError):
        conformal_quantile(s, 1.5)


def test_deployed_intervals_are_unbounded_when_the_pool_is_too_small_whatever_the_se():
    judge = pd.DataFrame(
        {"model": ["a", "b", "c", "d"], "elo": [1500.0, 1510.0, 1490.0, 1520.0], "se": [0.0, 12.0, np.nan, 3.0]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value" from ∞ · 0
        small, q = deploy(np.arange(1.0, 9.0), np.ones(8), judge, 0.1)  # 8 calibration models < 9 needed
        small_se, q_se = deploy(np.arange(1.0, 9.0), np.ones(8), judge, 0.1, score="se")
        ok, q_ok = deploy(np.arange(1.0, 10.0), np.ones(9), judge, 0.1, score="se")  # |r|/SE by hand below
    assert math.isinf(q.qhat) and math.isinf(q_se.qhat)
    pd.testing.assert_frame_equal(small, small_se)
    assert small["half_width"].tolist()[:2] == [math.inf, math.inf] and math.isnan(small["half_width"].iloc[2])
    assert small["lower"].iloc[0] == -math.inf and small["upper"].iloc[1] == math.inf
    assert q_ok.qhat == 9.0  # the ⌈(n + 1)(1 − α)⌉-th smallest score: the largest of 9 at α = 0.1
    np.testing.assert_array_equal(ok["half_width"].to_numpy(), 9.0 * judge["se"].to_numpy())


def test_conformal_rank_is_exact_where_floating_point_rounds_up():
    """k = ⌈(n+1)(1−α)⌉ with α the decimal on the slider: checked against integer arithmetic on every
    α on the 0.01 grid and every pool up to 200 (floating point is one too high in 114 of these cases)."""
    from fractions import Fraction

    from core.stats.conformal import conformal_rank

    float_wrong = 0
    for a_pct in range(1, 100):
        alpha = a_pct / 100
        for n in range(1, 201):
            exact = -((-(n + 1) * (100 - a_pct)) // 100)  # ceil((n+1)(100-a)/100) in integers
            assert conformal_rank(n, alpha) == exact, (n, alpha)
            float_wrong += math.ceil((n + 1) * (1 - alpha)) != exact
        assert min_pool(alpha) == math.ceil(Fraction(100, a_pct)) - 1
    assert float_wrong == 114  # the cases the exact rule exists for
    assert conformal_rank(149, 0.18) == 123 and math.ceil(150 * (1 - 0.18)) == 124  # one of them: 150 · 0.82 = 123


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_conformal_coverage_by_simulation(alpha):
    rng = np.random.default_rng(4)
    # exchangeable models: residual = SE × heavy-ish-tailed noise
    se = rng.uniform(5, 30, 60)
    cover = []
    for rep in range(200):
        resid = se * rng.standard_t(5, len(se))
        ev = evaluate_splits(resid, se, alpha, n_splits=1, seed=rep)
        cover.append(ev.coverage_mean)
    assert 1 - alpha - 0.03 <= np.mean(cover) <= 1 - alpha + 0.08


def _direct_heldout(frame, target, kind, tau_of_fold):
    """Independent METHODS §3 for one model: scipy on the penalised anchor likelihood."""
    anchors = frame[(frame.model_a != target) & (frame.model_b != target)]
    col = {"human": "human_y", "hard": "judge_hard"}.get(kind)
    y = (
        anchors[col].to_numpy()
        if col
        else np.clip(1 / (1 + np.exp(-tau_of_fold * anchors.gap.to_numpy())), 1e-6, 1 - 1e-6)
    )
    ok = np.isfinite(y)
    anchors, y = anchors[ok], y[ok]
    names = sorted(set(anchors.model_a) | set(anchors.model_b))
    idx = {m: k for k, m in enumerate(names)}
    ia, ib = anchors.model_a.map(idx).to_numpy(), anchors.model_b.map(idx).to_numpy()

    def obj(th):
        z = th[ia] - th[ib]
        return np.sum(y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z)) + 0.5 * LAMBDA * th @ th

    th = optimize.minimize(obj, np.zeros(len(names)), method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15}).x
    tb = frame[(frame.model_a == target) | (frame.model_b == target)]
    yt = tb[col].to_numpy() if col else np.clip(1 / (1 + np.exp(-tau_of_fold * tb.gap.to_numpy())), 1e-6, 1 - 1e-6)
    ok = np.isfinite(yt)
    tb, yt = tb[ok], yt[ok]
    is_a = (tb.model_a == target).to_numpy()
    opp = np.where(is_a, tb.model_b, tb.model_a)
    ym = np.where(is_a, yt, 1 - yt)
    ta = np.array([th[idx[o]] for o in opp])
    f1 = lambda x: (
        -(np.sum(ym * -np.logaddexp(0, -(x - ta)) + (1 - ym) * -np.logaddexp(0, x - ta)) - 0.5 * LAMBDA * x * x)
    )
    return (
        1500
        + ELO_PER_LOGIT * optimize.minimize_scalar(f1, bounds=(-20, 20), method="bounded", options={"xatol": 1e-10}).x
    )


def test_heldout_matches_a_direct_implementation():
    rng = np.random.default_rng(5)
    _, f = _arena(rng, m=8, n=2500, tie=0.15)
    res = leave_one_model_out(f, (Predictor("hard", "hard"), Predictor("soft", "soft")))
    for target in ("m00", "m03", "m07"):
        row = res.table.set_index("model").loc[target]
        for kind in ("human", "hard", "soft"):
            assert row[f"{kind}_elo"] == pytest.approx(_direct_heldout(f, target, kind, row["tau"]), abs=1e-3), kind
        assert row["soft_resid"] == pytest.approx(row["soft_elo"] - row["human_elo"])


def test_solve_target_vectorised_equals_one_at_a_time():
    rng = np.random.default_rng(6)
    ta = rng.normal(0, 1, (7, 40))
    y = rng.random((7, 40))
    together = solve_target(ta, y)
    for r in range(7):
        assert together[r] == pytest.approx(solve_target(ta[r], y[r])[0], abs=1e-10)


def test_softelo_sample_headline():
    f = softelo_frame(shared_path("softelo_sample_annotations.csv"))
    res = leave_one_model_out(f, (Predictor("hard", "hard"), Predictor("soft", "soft")))
    s = res.summary().set_index("method")
    assert s.loc["soft", "mae"] <= 0.5 * s.loc["hard", "mae"]
    assert s.loc["soft", "spearman"] >= s.loc["hard", "spearman"] - 0.05
    assert s.loc["soft", "n_models"] == 14
    assert 0.3 < res.tau_full < 1.5


@pytest.fixture(scope="module")
def demo_frame():
    from core.simulate import simulate_arena
    from core.store import Store

    store = Store.open(":memory:")
    store.write_dataset(simulate_arena(0))
    return store.battle_frame("demo", "judge-strong")


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_conformal_validity_on_the_demo_arena(demo_frame, alpha):
    """200 random model-level splits: coverage within [1−α−0.03, 1−α+0.08] for the "se" score, within
    [1−α−0.03, 1−α+0.10] for the default "floor" (its σ̂ is an 80% upper bound: conservative for models judged like
    the calibration ones, measured 0.96–0.97 at α = 0.1 and 0.875–0.89 at α = 0.2, METHODS §4); Soft narrower."""
    from core.app.leaderboard import heldout

    res = heldout(demo_frame)
    for score, slack in (("se", 0.08), ("floor", 0.10)):
        ev = {
            m: evaluate_splits(res.table[f"{m}_resid"], res.table[f"{m}_se"], alpha, n_splits=200, seed=1, score=score)
            for m in ("hard", "soft")
        }
        for m, e in ev.items():
            assert 1 - alpha - 0.03 <= e.coverage_mean <= 1 - alpha + slack, (score, m, e.coverage_mean)
            assert e.n_infinite == 0
        assert ev["soft"].width_mean < ev["hard"].width_mean


def test_judge_ensemble_is_one_more_method():
    from core.stats.heldout import ensemble_targets

    rng = np.random.default_rng(9)
    _, f = _arena(rng, m=10, n=4000)
    f["gap__j1"] = f["gap"]
    f["gap__j2"] = f["gap"] * 2 + rng.normal(0, 0.1, len(f))
    y = ensemble_targets(f)
    assert np.all((y > 0) & (y < 1))
    res = leave_one_model_out(f, (Predictor("soft", "soft"), Predictor("ensemble", "ensemble")))
    s = res.summary().set_index("method")
    assert s.loc["ensemble", "n_models"] == 10 and s.loc["ensemble", "mae"] < 60


@pytest.mark.integration
def test_heldout_cli_labels_the_pool_behind_qhat_and_the_splits_behind_coverage():
    import json

    from tests.conftest import ROOT

    path = shared_path("softelo_sample_annotations.csv")
    done = run_cli("heldout", str(path), "--alpha", "0.2", "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    conf = json.loads(done.stdout)["methods"]["soft"]["conformal"]
    assert conf["n_models_for_qhat"] == 14 and conf["qhat_all_models"] is not None  # all 14 held-out models
    # coverage comes from half/half splits: 7 calibrate, 7 are tested
    assert conf["splits"]["n_calibration"] == 7 and conf["splits"]["n_test"] == 7 and conf["splits"]["n_splits"] == 5
    assert 0 <= conf["splits"]["coverage_mean"] <= 1 and "coverage" not in conf and "qhat" not in conf
