"""A leaderboard for every kind of dataset: human votes only (LMArena's own layout, a million battles) and
judge verdicts only (the 24-judge contests file), each ranked with 95% intervals."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats
from streamlit.testing.v1 import AppTest

from core.app.data import import_path
from core.app.leaderboard import display_table, view_for
from core.store import Store
from tests.conftest import ROOT, shared_path

sys.path.insert(0, str(ROOT / "benchmarks"))
from make_lmarena_file import make


@pytest.fixture(scope="module")
def human_only(tmp_path_factory):
    """1,000,000 LMArena battles over 100 models (human votes only), imported as LMArena publishes them."""
    work = tmp_path_factory.mktemp("kinds")
    battles = make(1_000_000, 100, seed=5)
    path = work / "arena.parquet"
    battles.to_parquet(path, index=False)
    db = work / "h.duckdb"
    with Store.open(db) as s:
        import_path(s, path, "lmarena", dataset="arena")
    return db, battles


@pytest.mark.slow
def test_a_human_only_arena_gets_the_human_leaderboard_with_intervals_and_votes(human_only):
    db, battles = human_only
    with Store.open(db, read_only=True) as s:
        view, frame = view_for(s, "arena", None, None, 0.1)
    assert frame is None and view.primary == "human"
    t = view.table
    assert len(t) == 100 and t["human_elo"].notna().all()
    assert (t["human_lower"] < t["human_elo"]).all() and (t["human_elo"] < t["human_upper"]).all()
    # vote counts are the battles each model fought, as in the file
    fought = battles["model_a"].value_counts().add(battles["model_b"].value_counts(), fill_value=0)
    assert dict(zip(t["model"], t["n_votes"])) == {m: int(n) for m, n in fought.items()}
    # known answer: the generator's strengths, recovered
    rng = np.random.default_rng(5)
    theta = rng.normal(0.0, 0.75, 100)
    truth = dict(zip([f"model-{k:03d}" for k in range(100)], theta))
    rho = stats.spearmanr(t["human_elo"], [truth[m] for m in t["model"]]).statistic
    assert rho > 0.99
    shown = display_table(view)
    assert {"Rank", "Model"} <= set(shown.columns) and shown.iloc[0]["Rank"] == 1


@pytest.mark.integration
@pytest.mark.slow
def test_the_leaderboard_page_draws_the_human_only_arena(human_only, monkeypatch):
    db, _ = human_only
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    headline = " ".join(m.value for m in at.markdown)
    assert "human Elo" in headline and "95% CI" in headline
    assert at.dataframe, "the leaderboard table is drawn"


def test_a_judge_only_dataset_gets_hard_elo_with_intervals(tmp_path):
    db = tmp_path / "c.duckdb"
    with Store.open(db) as s:
        import_path(s, shared_path("judge_contests.csv"), "contests", dataset="contests")
        judge = str(s.judges_frame("contests")["judge"].iloc[0])
        view, _ = view_for(s, "contests", judge, None, 0.2)
    assert view.primary == "hard"
    t = view.table
    assert t["hard_elo"].notna().all() and (t["hard_upper"] - t["hard_lower"] > 0).all()
    assert t["rank"].notna().all() and view.note and "No human votes" in view.note
