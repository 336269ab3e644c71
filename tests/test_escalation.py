"""SCOPE escalations: which judged battles to send to humans at an error target α."""

from __future__ import annotations

import numpy as np
import pytest

from core.app import Unavailable
from core.app.escalation import Escalations, escalations
from core.simulate import DemoConfig, simulate_arena
from core.stats.selective import battle_probabilities, fit_threshold, from_probabilities
from core.store import Store


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("escalation") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return db, "judge-strong"  # the demo judge whose SCOPE threshold is feasible at α = 0.1


def _expected(db, judge: str, source: str, alpha: float) -> tuple[set[int], float]:
    """{s > λ̂} computed from the battle probabilities directly, without the module under test."""
    with Store.open(db, read_only=True) as s:
        bf = s.battle_frame("demo", judge)
    f = battle_probabilities(bf, source).frame
    dec = f[f["human_y"].notna() & (f["human_y"] != 0.5)]
    u = from_probabilities(dec["p_fwd"], dec["p_rev"], dec["human_y"] > 0.5)
    lam = fit_threshold(u, alpha).lam
    return set(f.loc[f["s"] > lam, "battle_id"].astype(int)), lam


def test_escalated_battles_are_exactly_those_above_the_threshold(demo):
    db, judge = demo
    with Store.open(db, read_only=True) as s:
        res = escalations(s, "demo", judge, 0.2)
    assert isinstance(res, Escalations), res
    assert res.source == "logprob"  # the demo judges give first-token probabilities in both orders
    want, lam = _expected(db, judge, res.source, 0.2)
    assert np.isfinite(lam) and res.threshold.lam == lam
    assert set(res.frame["battle_id"]) == want and res.n_escalated == len(want) > 0
    assert 0 < res.n_escalated < res.n_considered  # some accepted, some escalated on the demo
    assert (res.frame["entropy"] > lam).all()
    assert res.frame["entropy"].is_monotonic_decreasing  # most uncertain first
    assert f"{res.n_escalated:,} of {res.n_considered:,} battles" in res.text() and f"{lam:.3f}" in res.text()


def test_a_larger_alpha_never_escalates_more(demo):
    db, judge = demo
    counts = []
    with Store.open(db, read_only=True) as s:
        for alpha in (0.05, 0.1, 0.2, 0.3, 0.45):
            res = escalations(s, "demo", judge, alpha)
            assert isinstance(res, Escalations), res
            counts.append(res.n_escalated)
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_battle_ids_restrict_the_battles_considered(demo):
    db, judge = demo
    with Store.open(db, read_only=True) as s:
        everything = escalations(s, "demo", judge, 0.1)
        assert isinstance(everything, Escalations)
        some = everything.frame["battle_id"].iloc[::2].tolist()
        escalated = set(everything.frame["battle_id"])
        accepted = [b for b in _all_battle_ids(s, judge) if b not in escalated][:5]
        part = escalations(s, "demo", judge, 0.1, battle_ids=some + accepted)
    assert isinstance(part, Escalations)
    assert part.n_considered == len(some) + len(accepted)
    assert set(part.frame["battle_id"]) == set(some)
    assert part.threshold.lam == everything.threshold.lam  # calibrated on every human-voted battle either way


def _all_battle_ids(s: Store, judge: str) -> list[int]:
    return s.battle_frame("demo", judge)["battle_id"].astype(int).tolist()


def test_an_infeasible_threshold_escalates_every_battle(demo):
    db, judge = demo
    with Store.open(db, read_only=True) as s:
        tiny = escalations(s, "demo", judge, 0.05)
    assert isinstance(tiny, Escalations)
    # at α = 0.05 no set of the demo judge's most confident verdicts is accurate enough
    assert not tiny.threshold.feasible and tiny.n_escalated == tiny.n_considered
    assert "accepts no judgment" in tiny.text() and "abstain on all" in tiny.text()


def test_a_dataset_without_human_votes_is_unavailable(tmp_path):
    tables = simulate_arena(0, DemoConfig.small())
    tables.votes = tables.votes.iloc[0:0]
    db = tmp_path / "novotes.duckdb"
    with Store.open(db) as s:
        s.write_dataset(tables)
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
        res = escalations(s, "demo", judge, 0.1)
    assert isinstance(res, Unavailable)
    assert "human vote" in res.reason or "τ cannot be fitted" in res.reason


def test_only_threshold_rules_and_alphas_in_range_are_accepted(demo):
    db, judge = demo
    with Store.open(db, read_only=True) as s:
        with pytest.raises(ValueError, match="no entropy threshold"):
            escalations(s, "demo", judge, 0.1, method="heuristic")
        with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
            escalations(s, "demo", judge, 1.0)
