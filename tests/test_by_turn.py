"""Per-turn views: one leaderboard per conversation turn, each the fit of that turn's battles alone."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.app import Unavailable
from core.app import leaderboard as lb
from core.domain import DatasetTables
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT

MODELS = ["m0", "m1", "m2", "m3"]
STRENGTH = np.array([-1.0, -0.3, 0.3, 1.0])


def _tables(name: str, turns: tuple[int, ...], n: int = 1500, seed: int = 0) -> DatasetTables:
    """Turn 1 follows STRENGTH, turn 2 the reverse (a model good at first answers, bad at follow-ups)."""
    rng = np.random.default_rng(seed)
    rows, votes = [], []
    key = 0
    for turn in turns:
        s = STRENGTH if turn == 1 else -STRENGTH
        for _ in range(n):
            a, b = rng.choice(len(MODELS), 2, replace=False)
            win = rng.random() < 1 / (1 + np.exp(-(s[a] - s[b])))
            rows.append({"battle_key": key, "model_a": MODELS[a], "model_b": MODELS[b], "turn": turn})
            votes.append({"battle_key": key, "winner": "a" if win else "b", "annotator": "u"})
            key += 1
    return DatasetTables(
        name=name,
        source="test",
        models=pd.DataFrame({"model": MODELS}),
        battles=pd.DataFrame(rows),
        votes=pd.DataFrame(votes),
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("turns") / "t.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_tables("both", (1, 2)))
    return db


def test_each_turn_is_its_own_fit_and_recovers_its_order(store, tmp_path):
    with Store.open(store, read_only=True) as s:
        groups = lb.turn_groups(s, "both")
        by_turn = lb.ratings_by_turn(s, "both", "human")
    assert [(g.label, g.n_battles) for g in groups] == [("turn 1", 1500), ("turn 2", 1500)]
    assert not isinstance(by_turn, Unavailable)
    first = by_turn[by_turn["group"] == "turn 1"].set_index("model")["elo"]
    second = by_turn[by_turn["group"] == "turn 2"].set_index("model")["elo"]
    assert list(first.sort_values().index) == MODELS and list(second.sort_values().index) == MODELS[::-1]
    # parity: a store holding only turn 2's battles (the same draws) gives the same leaderboard
    tables = _tables("only", (1, 2))
    keep = tables.battles["turn"] == 2
    tables.battles, tables.votes = tables.battles[keep], tables.votes[keep.to_numpy()]
    with Store.open(tmp_path / "only.duckdb") as s:
        s.write_dataset(tables)
        alone = lb.ratings(s, "only", "human", ci="sandwich")
    assert not isinstance(alone, Unavailable)
    got = by_turn[by_turn["group"] == "turn 2"].set_index("model").sort_index()
    want = alone.frame.set_index("model").sort_index()
    np.testing.assert_allclose(got[["elo", "lower", "upper"]], want[["elo", "lower", "upper"]], rtol=1e-9)
    table = lb.turn_table(by_turn)
    assert list(table["model"]) == MODELS[::-1]  # ordered by turn 1
    assert list(table.columns[1:]) == ["turn 1 (1,500 battles)", "turn 2 (1,500 battles)"]


def test_one_turn_only_has_no_per_turn_view(tmp_path):
    with Store.open(tmp_path / "one.duckdb") as s:
        s.write_dataset(_tables("one", (1,)))
        assert lb.turn_groups(s, "one") == []
        assert isinstance(lb.ratings_by_turn(s, "one", "human"), Unavailable)


@pytest.mark.integration
def test_cli_turn_filter(store):
    cmd = ["leaderboard", "--db", str(store), "--dataset", "both"]
    out = run_cli(*cmd, "--method", "human", "--turn", "2", "--json", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ranked = [r["model"] for r in json.loads(out.stdout)["models"]]
    assert ranked == MODELS  # best first: m0 is the strongest at turn 2
    bad = run_cli(*cmd, "--method", "online-elo", "--turn", "2", cwd=ROOT)
    assert bad.returncode == 2 and "per-turn" in bad.stderr


@pytest.mark.integration
def test_the_leaderboard_page_shows_the_turns(store, monkeypatch):
    monkeypatch.setenv("ARENA_DB", str(store))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(h.value == "By conversation turn" for h in at.subheader)
    assert any("fitted separately on the battles of each turn" in c.value for c in at.caption)
