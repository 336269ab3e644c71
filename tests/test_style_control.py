"""Style control as a leaderboard: a planted length effect is removed, the raw fit is reproduced, the CLI flag."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from core.app import Unavailable
from core.app.leaderboard import ratings
from core.app.style import CONFORMAL_NOTE, StyleControlledLeaderboard, style_controlled_leaderboard
from core.cli import main
from core.simulate import DemoConfig, simulate_arena
from core.stats.style import style_controlled_ratings
from core.store import Store

K = 8
LONG = 5  # the long-winded model: true rank 6 of 8


def _arena(beta: float, seed: int = 0, n: int = 6_000) -> tuple[np.ndarray, ...]:
    """K models, θ decreasing with the index; model LONG writes e^1.5 ≈ 4.5× longer answers.

    P(a ≻ b) = σ(θ_a − θ_b + β·(log len_a − log len_b)).
    """
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.8, -0.8, K)
    mu = np.full(K, 6.0)
    mu[LONG] = 7.5
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    d = rng.normal(mu[a], 0.3) - rng.normal(mu[b], 0.3)
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + beta * d)))
    y = (rng.random(n) < p).astype(float)
    names = np.array([f"m{i}" for i in range(K)], dtype=object)
    return names[a], names[b], y, d[:, None], theta


def _spearman(frame, col: str, theta: np.ndarray) -> float:
    truth = {f"m{i}": t for i, t in enumerate(theta)}
    return float(stats.spearmanr(frame[col], frame["model"].map(truth)).statistic)


def test_planted_length_effect_is_controlled():
    beta = 1.0
    a, b, y, x, theta = _arena(beta)
    res = style_controlled_ratings(a, b, y, x, ["log_length"])
    f = res.frame.set_index("model", drop=False)
    # The raw fit rewards the long-winded model: ranked well above its true place (6th).
    assert f.loc[f"m{LONG}", "rank_raw"] <= 2
    # Under control it falls back (rank_change = rank_raw − rank < 0) and the order is the truth's.
    assert f.loc[f"m{LONG}", "rank_change"] < 0
    assert _spearman(f, "elo", theta) >= _spearman(f, "elo_raw", theta)
    assert _spearman(f, "elo", theta) > 0.95
    coef = res.coefficients.set_index("feature").loc["log_length"]
    assert coef["lower"] <= beta <= coef["upper"]
    assert np.all(f["lower"] < f["elo"]) and np.all(f["elo"] < f["upper"])
    assert res.n_rows == res.n_clusters == len(y)
    assert not res.issues


def test_without_a_length_effect_the_control_changes_little():
    a, b, y, x, theta = _arena(0.0, seed=1)
    res = style_controlled_ratings(a, b, y, x, ["log_length"])
    f = res.frame
    assert f["rank_change"].abs().max() <= 1
    assert np.abs(f["elo"] - f["elo_raw"]).max() < 30
    coef = res.coefficients.set_index("feature").loc["log_length"]
    assert coef["lower"] <= 0.0 <= coef["upper"]
    assert _spearman(f, "elo", theta) > 0.95


def test_votes_on_one_battle_are_one_cluster():
    """Each battle voted twice the same way: same point fit, intervals ≈ √2 wider than counting votes apart."""
    a, b, y, x, _ = _arena(0.5, seed=2, n=3_000)
    ids = np.arange(len(y))
    twice = [np.concatenate([v, v]) for v in (a, b, y, ids)]
    x2 = np.concatenate([x, x])
    naive = style_controlled_ratings(*twice[:3], x2, ["log_length"])
    clustered = style_controlled_ratings(*twice[:3], x2, ["log_length"], cluster=twice[3])
    single = style_controlled_ratings(a, b, y, x, ["log_length"])
    assert clustered.n_rows == 2 * len(y) and clustered.n_clusters == len(y)
    np.testing.assert_allclose(clustered.frame["elo"], naive.frame["elo"], atol=1e-6)
    np.testing.assert_allclose(clustered.frame["elo"], single.frame["elo"], atol=1e-6)
    width = (clustered.frame["upper"] - clustered.frame["lower"]) / (naive.frame["upper"] - naive.frame["lower"])
    np.testing.assert_allclose(width, np.sqrt(2), rtol=1e-3)
    # Clustering twice-counted votes gives back the single-vote intervals.
    np.testing.assert_allclose(clustered.frame["upper"], single.frame["upper"], rtol=1e-6)


def test_rows_without_features_are_left_out_and_said():
    a, b, y, x, _ = _arena(0.5, seed=3, n=2_000)
    x = x.copy()
    x[:10] = np.nan
    res = style_controlled_ratings(a, b, y, x, ["log_length"])
    assert res.n_rows == len(y) - 10
    assert any("10 of 2,000 rows" in i for i in res.issues)
    with pytest.raises(ValueError):
        style_controlled_ratings(a, b, y, x, ["log_length", "extra"])


# ------------------------------------------------------------------ the store and the CLI
@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("style") / "demo.duckdb"
    tables = simulate_arena(0, DemoConfig.small())
    with Store.open(db) as s:
        s.write_dataset(tables)
        s.write_dataset(dataclasses.replace(tables, name="notext", completions=None, judges=None, judgments=None))
    return db


def test_app_human_raw_fit_is_the_human_leaderboard(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        res = style_controlled_leaderboard(s, "demo")
        plain = ratings(s, "demo", "human")
    assert isinstance(res, StyleControlledLeaderboard) and not isinstance(plain, Unavailable)
    assert res.target == "human" and res.note == CONFORMAL_NOTE
    assert res.n_votes is not None and res.n_votes >= res.n_battles > 0
    raw = res.frame.set_index("model")
    p = plain.frame.set_index("model")
    # The raw column is the plain human leaderboard (same votes, same cluster-robust sandwich).
    np.testing.assert_allclose(raw["elo_raw"], p.loc[raw.index, "elo"], atol=1e-6)
    np.testing.assert_allclose(raw["lower_raw"], p.loc[raw.index, "lower"], atol=1e-4)
    assert set(res.coefficients["feature"]) >= {"log_length", "headers", "bold", "list_items"}


def test_app_judge_and_no_texts(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        res = style_controlled_leaderboard(s, "demo", "judge-verbose")
        none = style_controlled_leaderboard(s, "notext")
    assert isinstance(res, StyleControlledLeaderboard)
    assert res.target == "hard" and res.n_votes is None and res.judge == "judge-verbose"
    assert isinstance(none, Unavailable) and "answer texts" in none.reason


KEYS = {"model", "elo", "lower", "upper", "rank", "elo_raw", "rank_raw", "rank_change"}


@pytest.mark.parametrize("method", ["human", "hard"])
def test_cli_style_control_json(demo_db, method, capsys):
    judge = ["--judge", "judge-verbose"] if method == "hard" else []
    code = main(
        ["leaderboard", "--db", str(demo_db), "--dataset", "demo", "--method", method, *judge]
        + ["--style-control", "--json"]
    )
    out = capsys.readouterr().out
    assert code == 0
    d = json.loads(out)
    assert d["style_control"] is True and d["method"] == method
    assert len(d["models"]) == 12 and all(set(m) >= KEYS for m in d["models"])
    assert {c["feature"] for c in d["coefficients"]} >= {"log_length"}
    assert all({"coef", "lower", "upper"} <= set(c) for c in d["coefficients"])
    assert "conformal" in d["note"]
    # METHODS §10's rank (ties on the intervals); the order by Elo is the position
    assert [m["position"] for m in d["models"]] == sorted(m["position"] for m in d["models"])
    lo, hi = np.array([m["lower"] for m in d["models"]]), np.array([m["upper"] for m in d["models"]])
    assert [m["rank"] for m in d["models"]] == (1 + (lo[None, :] > hi[:, None]).sum(axis=1)).tolist()


def test_cli_style_control_text_and_refusals(demo_db, capsys):
    base = ["leaderboard", "--db", str(demo_db), "--dataset", "demo"]
    assert main([*base, "--method", "human", "--style-control"]) == 0
    assert "style coefficients" in capsys.readouterr().out
    assert main([*base, "--method", "soft", "--judge", "judge-verbose", "--style-control"]) == 2
    assert "--style-control is available for --method human or hard only" in capsys.readouterr().err
    assert main([*base, "--method", "hard", "--style-control"]) == 2
    capsys.readouterr()
    assert (
        main(["leaderboard", "--db", str(demo_db), "--dataset", "notext", "--method", "human", "--style-control"]) == 2
    )
    assert "answer texts" in capsys.readouterr().err
