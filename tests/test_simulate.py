"""The demo arena: determinism, fidelity to its generative model, ground truth, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from core.domain import ELO_PER_LOGIT
from core.simulate import JUDGES, DemoConfig, rejudge_with_echo, simulate_arena
from core.store import Store
from core.text import detect_echo, style_counts
from tests.cli import run_cli
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def small():
    return simulate_arena(0, DemoConfig.small())


@pytest.fixture(scope="module")
def full_store():
    store = Store.open(":memory:")
    store.write_dataset(simulate_arena(0))
    return store


def test_same_seed_same_arena_other_seed_differs(small):
    again = simulate_arena(0, DemoConfig.small())
    for name, df in small.tables().items():
        pd.testing.assert_frame_equal(df, getattr(again, name), check_dtype=False)
    other = simulate_arena(1, DemoConfig.small())
    assert not other.votes["winner"].equals(small.votes["winner"])


def test_default_demo_meets_the_spec(full_store):
    info = full_store.info()["datasets"][0]
    assert info["n_models"] >= 40 and info["n_prompts"] >= 500 and info["n_battles"] >= 29_000
    assert info["n_annotators"] >= 60 and len(info["judges"]) >= 3
    assert all(j["orders"] == ["ab", "ba"] and j["n_judgments"] == 2 * info["n_battles"] for j in info["judges"])
    models = full_store.models_frame("demo")
    assert models["family"].nunique() >= 6
    latent = pd.Series(full_store.dataset_meta("demo")["latent_elo"])
    assert latent.max() - latent.min() == pytest.approx(400, abs=1)  # DemoConfig.elo_spread
    # the human Elo of an unlimited crowd is about half as spread: noisy answers, ties, flips, coin tosses
    assert 150 <= models["true_elo"].max() - models["true_elo"].min() <= 260
    assert models["n_battles"].min() >= 300
    langs = full_store.languages_frame("demo")
    assert (langs["n_battles"] > 0).sum() >= 5
    ann = full_store.annotators_frame("demo")
    assert ann["n_votes"].min() >= 50
    assert 0.05 <= (ann["kind"] != "honest").mean() <= 0.15
    comps = full_store.completions_frame("demo")
    assert comps["correct"].notna().mean() > 0.1


def test_human_votes_follow_bradley_terry_on_the_latent_strength(full_store):
    """Honest annotators' decisive votes agree with the generative model's probabilities in every bin."""
    votes = full_store.votes_frame("demo")
    ann = full_store.annotators_frame("demo").set_index("annotator")
    truth = pd.Series(full_store.dataset_meta("demo")["latent_elo"])
    v = votes[votes["annotator"].map(ann["kind"]) == "honest"].copy()
    assert abs((v["y"] == 0.5).mean() - 0.15) < 0.01  # honest ties ~15% (random voters add more)
    assert 0.14 < (votes["y"] == 0.5).mean() < 0.2
    v = v[v["y"] != 0.5]
    ability = v["annotator"].map(ann["true_ability"]).to_numpy()
    d = (v["model_a"].map(truth) - v["model_b"].map(truth)).to_numpy() / ELO_PER_LOGIT
    # answers vary around their model's strength (sd ANSWER_QUALITY_SD each side):
    # the vote probability is σ(κ·(Δθ + ε)) averaged over ε ~ N(0, 2·sd²), by Gauss–Hermite
    from core.simulate import ANSWER_QUALITY_SD

    x, w = np.polynomial.hermite.hermgauss(40)
    eps = np.sqrt(2) * np.sqrt(2) * ANSWER_QUALITY_SD * x
    p = (w[None, :] / (1 + np.exp(-ability[:, None] * (d[:, None] + eps[None, :])))).sum(axis=1) / np.sqrt(np.pi)
    bins = pd.qcut(p, 10, labels=False)
    z = []
    for k in range(10):
        sel = bins == k
        obs, exp = v["y"].to_numpy()[sel].sum(), p[sel].sum()
        z.append((obs - exp) / np.sqrt(np.sum(p[sel] * (1 - p[sel]))))
    # a chi-square test of the ten bins against the model
    assert stats.chi2.sf(np.sum(np.square(z)), 10) > 0.001


def test_judges_show_their_configured_biases(full_store):
    for profile in JUDGES:
        f = full_store.battle_frame("demo", profile.name)
        first_wins = (f["verdict_ab"] == "a").sum() + (f["verdict_ba"] == "b").sum()
        decisive = (f["verdict_ab"] != "tie").sum() + (f["verdict_ba"] != "tie").sum()
        share = first_wins / decisive
        if profile.position_bonus > 0.5:
            assert share > 0.6
        elif profile.position_bonus == 0:
            assert abs(share - 0.5) < 0.015


def test_hard_labels_stretch_the_scale_and_soft_targets_fit_humans(full_store):
    from core.stats import bt
    from core.stats.calibration import fit_tau

    f = full_store.battle_frame("demo", "judge-strong")
    tau = fit_tau(f["gap"], f["human_y"])
    assert 0.05 < tau.tau < 5
    spread = {}
    for target, t in (("human", None), ("hard", None), ("soft", tau.tau)):
        fit = bt.fit_bt(bt.comparisons_from_pair_table(full_store.pair_stats("demo", target, "judge-strong", t)))
        spread[target] = np.std(fit.elo)
    assert spread["hard"] > 1.5 * spread["human"]


def test_style_counts_and_echo_truth_come_from_the_text(small):
    c = small.completions
    for row in c.sample(200, random_state=0).itertuples():
        s = style_counts(row.text)
        assert (s.length, s.n_headers, s.n_bold, s.n_list_items) == (
            row.length,
            row.n_headers,
            row.n_bold,
            row.n_list_items,
        )
    echo_models = set(small.meta["echo_models"])
    assert not c.loc[~c["model"].isin(echo_models), "echo"].any()
    for row in c[c["echo"]].head(100).itertuples():
        assert detect_echo(row.text).is_echo
    for row in c[~c["echo"]].head(300).itertuples():
        assert not detect_echo(row.text).is_echo


def test_echo_intervention_on_the_simulated_judge():
    res = rejudge_with_echo(0, "judge-verbose", sample_size=200, config=DemoConfig.small())
    p = res.groupby("variant")["p_a"].mean()
    assert p["echo_a"] < p["original"] < p["echo_b"]


@pytest.mark.integration
def test_cli_builds_the_demo(tmp_path):
    db = tmp_path / "demo.duckdb"
    r = run_cli("simulate", "--db", str(db), "--small", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    info = json.loads(run_cli("info", "--db", str(db), "--json", cwd=ROOT).stdout)
    assert info["datasets"][0]["name"] == "demo" and info["datasets"][0]["n_battles"] == 4000
    again = run_cli("simulate", "--db", str(db), "--small", cwd=ROOT)
    assert again.returncode == 2 and "--replace" in again.stderr


def _truth_recovery(seeds: range) -> tuple[float, float, float, float]:
    """Over seeds: the human fit's slope on the stored truth, its 95% CI coverage of it, and the MAE of the
    calibrated judge's Soft- and Hard-Elo against it."""
    from core.app.data import tau_fit
    from core.app.leaderboard import judge_elo, ratings

    slopes, hits, soft_mae, hard_mae = [], [], [], []
    for seed in seeds:
        s = Store.open(":memory:")
        s.write_dataset(simulate_arena(seed))
        truth = s.models_frame("demo").set_index("model")["true_elo"]
        human = ratings(s, "demo", "human").frame.set_index("model")
        t = truth.reindex(human.index)
        slopes.append(np.polyfit(t, human["elo"], 1)[0])
        hits.extend(((human["lower"] <= t) & (t <= human["upper"])).tolist())
        f = s.battle_frame("demo", "judge-strong")
        soft = judge_elo(f, "soft", tau_fit(f).tau).set_index("model")["elo"]
        hard = judge_elo(f, "hard", None).set_index("model")["elo"]
        soft_mae.append((soft - truth).abs().mean())
        hard_mae.append((hard - truth).abs().mean())
        s.close()
    return float(np.mean(slopes)), float(np.mean(hits)), float(np.mean(soft_mae)), float(np.mean(hard_mae))


@pytest.mark.slow
def test_the_stored_truth_is_what_the_human_fit_estimates():
    """slope 1 ± 0.05, 95% CIs cover the truth at 95% ± 3%, and the calibrated judge's Soft-Elo is closer to
    it than its Hard-Elo (as the Soft-Elo paper finds on real data)."""
    slope, coverage, soft, hard = _truth_recovery(range(3))
    assert abs(slope - 1) <= 0.05 and abs(coverage - 0.95) <= 0.03, (slope, coverage)
    assert soft < hard, (soft, hard)


def _tau_star_z(store: Store) -> dict[str, float]:
    """Per judge: (τ fitted on the votes − stored τ*) / its standard error (from the 95% profile interval)."""
    from core.stats.calibration import fit_tau

    out = {}
    for judge, star in store.dataset_meta("demo")["tau_star"].items():
        f = store.battle_frame("demo", judge)
        fit = fit_tau(f["gap"], f["human_y"])
        out[judge] = (fit.tau - star) / ((fit.upper - fit.lower) / (2 * 1.959963984540054))
    return out


def test_each_judge_tau_star_is_what_the_crowd_would_fit(full_store):
    """The τ fitted on one crowd's votes lands near the stored τ* (|z| < 3.29, i.e. 99.9%) for every judge."""
    z = _tau_star_z(full_store)
    assert set(z) == {j.name for j in JUDGES}
    assert all(abs(v) < 3.29 for v in z.values()), z
