"""Evaluations of new models are saved in the store and listed: what each concluded, with SCOPE's escalations."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from core.app import Unavailable
from core.app.escalation import Escalations, escalations
from core.app.evaluate import MAX_ESCALATED_IDS, evaluate, evaluation_row
from core.app.judging import RunOutcome, load_toml, run_shared
from core.app.newmodel import BattlePlan, Standing
from core.judging.runner import RunStats
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _config as _judge_config


def demo_with_an_unrated_model(db) -> str:
    """The small demo with every human vote on one mid-table model's battles removed; that model's name."""
    tables = simulate_arena(0, DemoConfig.small())
    human = tables.battles.merge(tables.votes, on="battle_key")
    counts = pd.concat([human["model_a"], human["model_b"]]).value_counts()
    new = str(counts.index[len(counts) // 2])
    involved = tables.battles.loc[(tables.battles["model_a"] == new) | (tables.battles["model_b"] == new), "battle_key"]
    tables.votes = tables.votes[~tables.votes["battle_key"].isin(involved)]
    with Store.open(db) as s:
        s.write_dataset(tables)
    return new


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("evaluations")
    db = tmp / "demo.duckdb"
    new = demo_with_an_unrated_model(db)
    with Store.open(db, read_only=True) as s:
        bf = s.battle_frame("demo")
    voted = bf.loc[bf["human_y"].notna() & (bf["human_y"] != 0.5), "battle_id"].astype(int).head(150)
    with FakeServer(FakeJudge(latency_ms=1)) as srv:
        judge = load_toml(_judge_config(tmp, srv.url, name="eval-judge"))
        # the judge first judges 150 human-voted battles: what SCOPE calibrates its threshold on
        assert run_shared(db, "demo", judge, battle_ids=set(voted)).status == "done"
        # 10 anchors (every human-rated model but one) and α = 0.2: enough anchors to calibrate the interval
        ev = evaluate(db, "demo", new, judge, budget=120, n_anchors=10, alpha=0.2)
    return db, new, ev


def test_an_evaluation_is_saved_with_the_standing_it_returned(evaluated):
    db, new, ev = evaluated
    assert isinstance(ev.standing, Standing), ev.standing
    st = ev.standing
    with Store.open(db, read_only=True) as s:
        listed = s.evaluations("demo")
        row = s.evaluation(ev.evaluation_id)
    assert len(listed) == 1 and listed["evaluation_id"].iloc[0] == ev.evaluation_id
    assert row is not None and row["model"] == new and row["judge"] == "eval-judge" and row["status"] == "placed"
    assert (row["predicted"], row["lower"], row["upper"]) == (st.predicted, st.lower, st.upper)
    assert row["alpha"] == 0.2 and row["n_rated"] == st.n_rated and row["n_judged"] == st.n_judged
    inside = st.n_rated - st.above - st.below
    assert (row["rank_best"], row["rank_worst"]) == (st.above + 1, st.above + inside + 1)
    details = json.loads(row["result_json"])
    assert details["anchors"] == ev.plan.anchors and details["battles_added"] == ev.battles_added
    assert details["judge_run_id"] == ev.judged.run_id and details["judge_run_status"] == "done"
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("demo", "eval-judge", variant=None)
    mine = set(j.loc[(j["model_a"] == new) | (j["model_b"] == new), "battle_id"].astype(int))
    esc = details["escalations"]
    assert esc["alpha"] == 0.2 and esc["n_calibration"] == 150 and esc["n_considered"] == len(mine) > 0
    # the fake judge's verdicts ignore the answers: no set of them meets α = 0.2, so SCOPE escalates every
    # battle of the new model (and says so) rather than accepting any
    assert esc["lam"] is None and set(esc["battle_ids"]) == mine and esc["n_escalated"] == len(mine)
    assert not esc["truncated"] and "accepts no judgment" in esc["text"]
    assert f"Saved as evaluation {ev.evaluation_id}." in ev.text() and esc["text"] in ev.text()


@pytest.mark.integration
def test_the_evaluations_command_lists_them(evaluated):
    db, new, ev = evaluated
    st = ev.standing
    assert isinstance(st, Standing)
    cmd = ["evaluations", "--db", str(db)]
    out = run_cli(*cmd, "--dataset", "demo", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert f"evaluation {ev.evaluation_id} " in out.stdout and f"{new} on demo, judge eval-judge" in out.stdout
    assert f"interval {st.lower:.0f}–{st.upper:.0f}" in out.stdout and f"human Elo {st.predicted:.0f}" in out.stdout
    js = run_cli(*cmd, "--json", cwd=ROOT)
    assert js.returncode == 0, js.stderr
    [rec] = json.loads(js.stdout)
    assert rec["predicted"] == st.predicted and rec["status"] == "placed"
    bad = run_cli(*cmd, "--dataset", "nope", cwd=ROOT)
    assert bad.returncode == 2 and "no dataset named 'nope'" in bad.stderr


def test_saved_rows_newest_first_missing_values_null_unknown_fields_refused(tmp_path):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
        first = s.save_evaluation("demo", {"model": "m", "judge": "j", "alpha": 0.1, "status": "placed"})
        second = s.save_evaluation(
            "demo", {"model": "m2", "judge": "j", "alpha": 0.1, "status": "unavailable", "predicted": math.nan}
        )
        with pytest.raises(ValueError, match="unknown evaluation fields: colour"):
            s.save_evaluation("demo", {"model": "m", "judge": "j", "alpha": 0.1, "status": "x", "colour": 1})
        with pytest.raises(ValueError, match="needs status"):
            s.save_evaluation("demo", {"model": "m", "judge": "j", "alpha": 0.1})
        listed = s.evaluations()
        row = s.evaluation(second)
        assert s.evaluation(second + 100) is None
    assert listed["evaluation_id"].tolist() == [second, first] and set(listed["dataset"]) == {"demo"}
    assert row is not None and row["predicted"] is None  # NaN stored as NULL, not as a number


def test_the_row_keeps_the_escalated_battles_capped(tmp_path):
    db = tmp_path / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
        esc = escalations(s, "demo", "judge-strong", 0.1)  # most of the demo's 4000 battles: above the cap
        assert isinstance(esc, Escalations) and esc.n_escalated > MAX_ESCALATED_IDS
        plan = BattlePlan("m", ["a1", "a2"], pd.DataFrame(columns=["prompt_id", "model_a", "model_b"]), "rule")
        outcome = RunOutcome(3, RunStats(status="done"))
        row = evaluation_row("judge-strong", 0.1, plan, 0, outcome, Unavailable("too few anchors"), esc)
    assert row["status"] == "unavailable" and row["reason"] == "too few anchors" and "predicted" not in row
    details = json.loads(row["result_json"])["escalations"]
    assert details["battle_ids"] == esc.frame["battle_id"].tolist()[:MAX_ESCALATED_IDS] and details["truncated"]
    assert details["n_escalated"] == esc.n_escalated and details["lam"] == esc.threshold.lam
