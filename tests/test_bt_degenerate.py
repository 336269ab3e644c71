"""Bradley–Terry intervals when a model's (or the whole fit's) information is degenerate.

Known answers, computed in the tests without the code under test where they
can be: the model-based variance of an all-ties table (pseudo-inverse of the
Laplacian written out by hand), the one-tie leaf's variance (its opponent's
plus 1/p(1 − p)), the fit without the degenerate model, and the binomial
expectation of bootstrap replicates that miss a model's battles.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.domain import ELO_PER_LOGIT
from core.stats import bt

B = 400


def _four_models(seed: int = 0, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Four well-identified models, about 1,000 battles each (SE ≈ 8 Elo), 10% ties."""
    rng = np.random.default_rng(seed)
    theta = np.array([0.0, 0.3, -0.2, 0.5])
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    y = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < p).astype(float))
    names = np.array(["m0", "m1", "m2", "m3"])
    return names[a], names[b], y


def _with(extra_a: list[str], extra_b: list[str], extra_y: list[float]) -> tuple[bt.Comparisons, bt.Comparisons]:
    """(the four models plus the extra battles, the four models alone)."""
    a, b, y = _four_models()
    full = bt.comparisons_from_battles(np.r_[a, extra_a], np.r_[b, extra_b], np.r_[y, extra_y])
    return full, bt.comparisons_from_battles(a, b, y)


def _binomial_missing(n_own: int, n_total: int, n_boot: int) -> tuple[float, float]:
    """Mean and SD of the number of multinomial resamples that draw none of a model's n_own battles."""
    q = (1 - n_own / n_total) ** n_total
    return n_boot * q, np.sqrt(n_boot * q * (1 - q))


# ------------------------------------------------------------------ ties only
def test_ties_only_table_gets_the_model_based_interval_and_an_issue():
    rng = np.random.default_rng(3)
    names = np.array([f"t{k}" for k in range(5)])
    ia = rng.integers(0, 5, 500)
    ib = (ia + rng.integers(1, 5, 500)) % 5
    c = bt.comparisons_from_battles(names[ia], names[ib], np.full(500, 0.5))
    fit = bt.fit_bt(c)
    np.testing.assert_allclose(fit.elo, 1500.0, atol=1e-9)
    issue = next(i for i in fit.issues if i.kind == "degenerate")
    assert set(issue.models) == set(names) and "only ties" in issue.message

    # The residuals are all zero, so the empirical meat is zero; the interval
    # must use the largest outcome variance p(1 − p) = 1/4 instead, which at
    # θ = 0 makes the sandwich the model-based covariance: pinv of Σ ¼·a aᵀ.
    lap = np.zeros((5, 5))
    for i, j in zip(ia, ib):
        d = np.zeros(5)
        d[i], d[j] = 1.0, -1.0
        lap += 0.25 * np.outer(d, d)
    se_ref = ELO_PER_LOGIT * np.sqrt(np.diag(np.linalg.pinv(lap)))
    order = [list(c.models).index(n) for n in names]
    for solver in ("dense", "sparse"):
        sfit = bt.fit_bt(c, solver=solver)
        sw = bt.sandwich_intervals(c, sfit)
        np.testing.assert_allclose(sw.se_elo[order], se_ref, rtol=1e-6)
        assert np.all(sw.upper_elo - sw.lower_elo > 50)  # ≈ ±40 Elo, never a zero width
        assert all("ties only" in f for f in sw.flags)

    # Every resample is all ties again: the bootstrap cannot show a spread.
    boot = bt.bootstrap(c, fit, n_boot=50, seed=0)
    assert np.all(np.isnan(boot.se_elo)) and np.all(np.isnan(boot.lower_elo)) and np.all(np.isnan(boot.upper_elo))
    assert "only ties" in boot.note and all("ties only" in f for f in boot.flags)
    np.testing.assert_array_equal(boot.n_missing, 0)


# --------------------------------------------------------------- one-tie model
def test_a_model_with_one_tie_is_flagged_and_does_not_copy_its_opponent():
    full, alone = _with(["new"], ["m0"], [0.5])
    fit, ref = bt.fit_bt(full), bt.fit_bt(alone)
    k, k0 = full.models.index("new"), full.models.index("m0")
    others = [full.models.index(n) for n in alone.models]
    issue = next(i for i in fit.issues if i.kind == "degenerate")
    assert issue.models == ("new",) and "single battle" in issue.message
    assert next(i for i in fit.issues if i.kind == "gauge").models == ("new",)

    sw, sw_ref = bt.sandwich_intervals(full, fit), bt.sandwich_intervals(alone, ref)
    # A leaf tied once: the MLE puts it level with m0, and its own score adds
    # σ²/h² = ¼/(¼)² = 4 logits² to m0's variance (the p(1 − p) bound).
    assert fit.elo[k] == pytest.approx(fit.elo[k0], abs=1e-9)
    assert sw.se_elo[k] ** 2 == pytest.approx(sw.se_elo[k0] ** 2 + (2 * ELO_PER_LOGIT) ** 2, rel=1e-6)
    assert sw.lower_elo[k] < sw.lower_elo[k0] - 500 and sw.upper_elo[k] > sw.upper_elo[k0] + 500
    assert "single battle" in sw.flags[k] and sw.flags[k0] == ""
    # the others: the same Elo and SEs as without the new model (it is outside the gauge)
    np.testing.assert_allclose(fit.elo[others], ref.elo, atol=1e-6)
    np.testing.assert_allclose(sw.se_elo[others], sw_ref.se_elo, rtol=1e-7)

    boot = bt.bootstrap(full, fit, n_boot=B, seed=1)
    mean, sd = _binomial_missing(1, int(full.battle_counts.sum()), B)
    assert abs(boot.n_missing[k] - mean) < 4 * sd
    assert np.all(boot.n_missing[others] == 0)
    assert np.isnan(boot.lower_elo[k]) and np.isnan(boot.upper_elo[k]) and np.isnan(boot.se_elo[k])
    assert "replicates lack its battles" in boot.flags[k] and "new" in boot.note


# ------------------------------------------------------------- single-win model
def test_one_model_with_a_single_win_does_not_widen_the_others_intervals():
    full, alone = _with(["new"], ["m0"], [1.0])
    fit, ref = bt.fit_bt(full), bt.fit_bt(alone)
    k = full.models.index("new")
    others = [full.models.index(n) for n in alone.models]
    assert not fit.well_defined and fit.lam == bt.FALLBACK_LAM  # the single win: no MLE, ridge fallback
    # Gauge: the four well-identified models have mean θ 0, so their Elo is the
    # fit without the newcomer, up to the fallback ridge (λ = 0.01 against
    # ~250 units of information per model).
    assert fit.theta[others].mean() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(fit.elo[others], ref.elo, atol=0.05)

    sw, sw_ref = bt.sandwich_intervals(full, fit), bt.sandwich_intervals(alone, ref)
    np.testing.assert_allclose(sw.se_elo[others], sw_ref.se_elo, rtol=1e-3)
    assert np.isnan(sw.se_elo[k]) and np.isnan(sw.lower_elo[k]) and np.isnan(sw.upper_elo[k])
    assert "perfect record" in sw.flags[k] and "perfect record" in sw.note
    issue = next(i for i in fit.issues if i.kind == "degenerate")
    assert issue.models == ("new",) and "single battle" in issue.message
    # the sparse solver uses the same gauge: same Elo and SEs
    sfit = bt.fit_bt(full, solver="sparse")
    ssw = bt.sandwich_intervals(full, sfit)
    np.testing.assert_allclose(sfit.elo, fit.elo, atol=1e-6)
    np.testing.assert_allclose(ssw.se_elo, sw.se_elo, rtol=1e-6)
    np.testing.assert_allclose(
        bt.sandwich_cov(full, fit)[np.ix_(others, others)], bt.sandwich_cov(alone, ref), rtol=2e-3
    )

    boot = bt.bootstrap(full, fit, n_boot=B, seed=1)
    boot_ref = bt.bootstrap(alone, ref, n_boot=B, seed=1)
    # same spread as without the newcomer (bootstrap noise: the SD of an SD over 400 replicates is ~4%)
    np.testing.assert_allclose(boot.se_elo[others], boot_ref.se_elo, rtol=0.15)
    np.testing.assert_allclose(boot.se_elo[others], sw_ref.se_elo, rtol=0.15)
    # its bound is never the ridge prior of the replicates without its battle
    assert not np.any(boot.lower_elo == 1500.0) and not np.any(boot.upper_elo == 1500.0)
    assert np.isnan(boot.lower_elo[k]) and np.isnan(boot.upper_elo[k])
    mean, sd = _binomial_missing(1, int(full.battle_counts.sum()), B)
    assert abs(boot.n_missing[k] - mean) < 4 * sd
    assert "new" in boot.note and "2.5%" in boot.note


def test_bootstrap_leaves_out_replicates_without_a_model_and_drops_its_interval_above_the_threshold():
    # 'few' has 3 battles (a win, a tie, a loss): about e⁻³ ≈ 5% of resamples
    # lack all three, above the 2.5% tail; 'some' has 8 (missing ≈ 0.03%)
    extra_a = ["few"] * 3 + ["some"] * 8
    extra_b = ["m0", "m1", "m2"] + ["m0", "m1", "m2", "m3"] * 2
    extra_y = [1.0, 0.5, 0.0] + [1.0, 0.0] * 4
    full, _ = _with(extra_a, extra_b, extra_y)
    fit = bt.fit_bt(full)
    assert fit.well_defined and not any(i.kind in ("degenerate", "gauge") for i in fit.issues)
    boot = bt.bootstrap(full, fit, n_boot=B, seed=2)
    n_total = int(full.battle_counts.sum())
    few, some = full.models.index("few"), full.models.index("some")
    mean, sd = _binomial_missing(3, n_total, B)
    assert abs(boot.n_missing[few] - mean) < 4 * sd and boot.n_missing[few] > bt.BOOT_MAX_MISSING * B
    assert np.isnan(boot.lower_elo[few]) and np.isnan(boot.se_elo[few])
    assert f"{boot.n_missing[few]} of {B} replicates lack its battles" in boot.flags[few]
    assert np.isfinite(boot.lower_elo[some]) and np.isfinite(boot.se_elo[some]) and boot.flags[some] == ""
    assert "few" in boot.note and "some" not in boot.note.split("(", 1)[-1]


# -------------------------------------------------------------------- wording
def _beat_or_tied(a, b, y, winner, loser_set):
    """Did ``winner`` take any win mass from a model in ``loser_set``? (written out per battle)"""
    return any(
        (ai == winner and bi in loser_set and yi > 0) or (bi == winner and ai in loser_set and yi < 1)
        for ai, bi, yi in zip(a, b, y)
    )


def test_never_won_wording_names_groups_and_is_true():
    a, b, y = _four_models()
    a, b, y = np.r_[a, ["new"]], np.r_[b, ["m0"]], np.r_[y, [1.0]]
    fit = bt.fit_bt(bt.comparisons_from_battles(a, b, y))
    msg = next(i for i in fit.issues if i.kind == "no_mle").message
    # the old wording said m0–m3 "never won against the rest of their
    # component", yet each won hundreds of battles against the others
    assert "never won against the rest of their component" not in msg
    assert "these models never lost or tied a battle: new" in msg
    assert "the group {m0, m1, m2, m3} never beat or tied with a model outside it (only each other)" in msg
    group = {"m0", "m1", "m2", "m3"}
    for m in group:
        assert _beat_or_tied(a, b, y, m, group - {m})  # they do win among themselves
        assert not _beat_or_tied(a, b, y, m, {"new"})  # and never against the model outside the group
    assert not _beat_or_tied(a, b, y, "m0", {"new"}) and _beat_or_tied(a, b, y, "new", {"m0"})


def test_a_requested_ridge_keeps_its_own_optimum():
    # λ > 0 is not shift-invariant: the penalised optimum (centred) is the
    # estimate, so no model is left out of the mean and no gauge issue
    full, _ = _with(["new"], ["m0"], [1.0])
    lam = 0.5
    fit = bt.fit_bt(full, lam=lam)
    assert fit.lam == lam and fit.theta.mean() == pytest.approx(0.0, abs=1e-12)
    assert np.max(np.abs(bt.gradient(full, fit.beta, lam))) < 1e-10 * full.n.sum()  # the stationarity tolerance
    assert fit.loglik == pytest.approx(bt.loglik(full, fit.beta, lam), rel=1e-12)
    assert not any(i.kind == "gauge" for i in fit.issues)
    assert any(i.kind == "degenerate" for i in fit.issues)  # the record is still reported


# ------------------------------------------------------------------------ CLI
@pytest.mark.integration
def test_cli_names_each_degenerate_model_and_its_missing_replicates(tmp_path):
    """`python -m core bt` reports per model why an interval is missing, not just a null."""
    a, b, y = _four_models()
    a, b, y = np.r_[a, ["new", "draw"]], np.r_[b, ["m0", "m1"]], np.r_[y, [1.0, 0.5]]
    winner = np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie"))
    path = tmp_path / "battles.csv"
    pd.DataFrame({"model_a": a, "model_b": b, "winner": winner}).to_csv(path, index=False)
    root = Path(__file__).resolve().parents[1]

    def run(*extra: str) -> dict:
        r = subprocess.run(
            [sys.executable, "-m", "core", "bt", str(path), "--json", *extra], cwd=root, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return {m["model"]: m for m in json.loads(r.stdout)["models"]}

    sw = run()
    assert sw["new"]["lower"] is None and sw["new"]["upper"] is None
    assert sw["new"]["interval_note"].startswith("single battle; perfect record")
    assert sw["draw"]["interval_note"].startswith("single battle; ties only")
    assert sw["draw"]["lower"] < sw["draw"]["elo"] < sw["draw"]["upper"]  # the stated p(1 − p) bound
    assert all(sw[m]["interval_note"] is None for m in ("m0", "m1", "m2", "m3"))
    boot = run("--ci", "bootstrap", "--bootstrap", "200", "--seed", "4")
    n_total = len(y)
    mean, sd = _binomial_missing(1, n_total, 200)
    for m in ("new", "draw"):
        assert boot[m]["lower"] is None
        assert abs(boot[m]["boot_missing"] - mean) < 4 * sd
    assert all(boot[m]["boot_missing"] == 0 and boot[m]["interval_note"] is None for m in ("m0", "m1", "m2", "m3"))
