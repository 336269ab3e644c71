"""Several votes on one battle are one cluster: the human leaderboard's sandwich is cluster-robust by battle.

Property (issue 16): repeating every vote k times on the same battle leaves the
clustered interval unchanged, where intervals that treat the votes as
independent shrink by √k.  Known answer: when three voters copy one
underlying vote, the clustered 95% intervals cover the true strengths about
95% of the time; the naive ones, √3 too narrow, do not.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from core.app import Unavailable
from core.app.leaderboard import ratings
from core.domain import DatasetTables
from core.stats import bt
from core.store import Store

MODELS = [f"m{i}" for i in range(6)]


def _arena(
    rng: np.random.Generator, n_battles: int, copies: int, strength: np.ndarray, tie_rate: float
) -> DatasetTables:
    """Battles between random pairs, one underlying outcome per battle, voted ``copies`` times identically."""
    a = rng.integers(0, len(MODELS), n_battles)
    b = (a + rng.integers(1, len(MODELS), n_battles)) % len(MODELS)
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(n_battles)
    winner = np.where(u < tie_rate, "tie", np.where(rng.random(n_battles) < p, "model_a", "model_b"))
    code = pd.Series(winner).map({"model_a": "a", "model_b": "b", "tie": "tie"}).to_numpy()
    battles = pd.DataFrame(
        {
            "battle_key": np.arange(n_battles, dtype=np.int64),
            "model_a": np.array(MODELS)[a],
            "model_b": np.array(MODELS)[b],
        }
    )
    votes = pd.DataFrame(
        {
            "battle_key": np.repeat(battles["battle_key"].to_numpy(), copies),
            "winner": np.repeat(code, copies),
            "annotator": np.tile([f"voter{k}" for k in range(copies)], n_battles),
        }
    )
    return DatasetTables(
        name="c",
        source="test",
        models=pd.DataFrame({"model": MODELS}),
        battles=battles,
        votes=votes,
        annotators=pd.DataFrame({"annotator": [f"voter{k}" for k in range(copies)]}),
    )


def _widths(
    db, copies: int, seed: int = 0, n_battles: int = 3_000, tie_rate: float = 0.1
) -> tuple[pd.Series, pd.Series, pd.DataFrame]:
    """(clustered width, naive width, clustered frame) per model of one simulated arena."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1.0, 1.0, len(MODELS))
    with Store.open(db) as s:
        s.write_dataset(_arena(rng, n_battles, copies, strength, tie_rate))
        res = ratings(s, "c", "human", ci="sandwich")
        pairs = s.pair_stats("c", "human")
    assert not isinstance(res, Unavailable)
    clustered = res.frame.set_index("model")
    naive_pairs = pairs.drop(columns=list(bt.CLUSTER_COLUMNS))
    naive = bt.ratings_from_pairs(naive_pairs, ci="sandwich").frame.set_index("model")
    width = (clustered["upper"] - clustered["lower"]).sort_index()
    naive_width = (naive["upper"] - naive["lower"]).sort_index()
    return width, naive_width, clustered


@pytest.mark.parametrize("k", [2, 4])
def test_repeating_every_vote_leaves_the_clustered_interval_and_shrinks_the_naive_one(tmp_path, k):
    once, once_naive, once_frame = _widths(tmp_path / "once.duckdb", 1)
    many, many_naive, many_frame = _widths(tmp_path / "many.duckdb", k)
    # one vote per battle: both are the usual sandwich
    np.testing.assert_allclose(once, once_naive, rtol=1e-9)
    np.testing.assert_allclose(many_frame["elo"].sort_index(), once_frame["elo"].sort_index(), atol=1e-6)
    np.testing.assert_allclose(many, once, rtol=0.01)
    np.testing.assert_allclose(many_naive, once / np.sqrt(k), rtol=0.01)
    # the leaderboard counts every vote, and the battles apart
    assert int(many_frame["n_votes"].sum()) == k * int(once_frame["n_votes"].sum())
    assert int(many_frame["n_battles"].sum()) == int(once_frame["n_battles"].sum())


@pytest.mark.slow
def test_clustered_intervals_cover_when_three_voters_copy_one_vote(tmp_path):
    strength = np.linspace(-1.0, 1.0, len(MODELS))
    elo = 400 / np.log(10) * (strength - strength.mean())
    covered = {"clustered": [], "naive": []}
    for seed in range(40):
        db = tmp_path / f"a{seed}.duckdb"
        width, naive_width, frame = _widths(db, 3, seed=seed, n_battles=600, tie_rate=0.0)
        true = pd.Series(elo, index=MODELS).sort_index()
        est = frame["elo"].sort_index()
        # contrasts with the first model (gauge-free) would be stricter; the centred gauge is what is drawn
        centre = est - est.mean()
        covered["clustered"].append((np.abs(centre - true) <= width / 2).to_numpy())
        covered["naive"].append((np.abs(centre - true) <= naive_width / 2).to_numpy())
    clustered, naive = np.mean(covered["clustered"]), np.mean(covered["naive"])
    assert clustered >= 0.90, clustered
    assert naive <= 0.82, naive  # about 0.74 expected: z = 1.96/√3


def _stated_ratio(issues: tuple[str, ...]) -> float | None:
    import re

    for text in issues:
        m = re.search(r"They are ([0-9.]+)× as wide", text)
        if m:
            return float(m.group(1))
    return None


@pytest.mark.parametrize("k", [1, 3])
def test_the_note_states_how_much_wider_the_clustered_intervals_are(tmp_path, k):
    width, naive_width, _ = _widths(tmp_path / "s.duckdb", k)
    with Store.open(tmp_path / "s.duckdb", read_only=True) as s:
        res = ratings(s, "c", "human", ci="sandwich")
    assert not isinstance(res, Unavailable)
    stated = _stated_ratio(res.issues)
    if k == 1:
        assert stated is None  # one vote per battle: nothing to say
        return
    assert stated == pytest.approx(float(np.median(width / naive_width)), abs=0.005)
    assert stated == pytest.approx(np.sqrt(k), rel=0.02)  # identical copies: exactly √k in the limit
    assert any(f"holds {k:.2f} votes" in t for t in res.issues)


def test_the_note_on_pandalm(shared_dir):
    from core.app.data import import_path

    with Store.open(":memory:") as s:
        import_path(s, shared_dir / "pandalm_testset_v1", "pandalm", dataset="p")
        res = ratings(s, "p", "human", ci="sandwich")
    assert not isinstance(res, Unavailable)
    stated = _stated_ratio(res.issues)
    # three labels per battle that mostly agree: wider than naive, at most √3 (perfectly copied votes)
    assert stated is not None and 1.2 < stated <= np.sqrt(3) + 0.01, res.issues


def test_no_note_when_a_few_repeated_votes_change_nothing_a_reader_could_see(tmp_path):
    rng = np.random.default_rng(0)
    arena = _arena(rng, 3_000, 1, np.linspace(-1.0, 1.0, len(MODELS)), 0.1)
    # one battle of 3,000 gets a second vote: 1.0003 votes a battle, intervals 1.00× as wide
    extra = arena.votes.iloc[[0]].assign(annotator="voter1")
    arena = dataclasses.replace(
        arena,
        votes=pd.concat([arena.votes, extra], ignore_index=True),
        annotators=pd.DataFrame({"annotator": ["voter0", "voter1"]}),
    )
    with Store.open(tmp_path / "few.duckdb") as s:
        s.write_dataset(arena)
        res = ratings(s, "c", "human", ci="sandwich")
    assert not isinstance(res, Unavailable)
    assert _stated_ratio(res.issues) is None
    assert not any("votes on average" in i for i in res.issues)
