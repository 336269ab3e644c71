"""A judge run is a job: the command names a set of units, and running it again completes that set, never more.

The measured bug it fixes: ``--limit`` was a per-run call budget, so six killed runs with ``--limit 120``
and a final one stored 306 units where the user asked for 240.  Here a run is killed mid-way and the
same command (or ``--resume RUN_ID``) completes exactly the first N units of the fixed order.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from core.app.judging import plan_run
from core.judging.config import load_toml
from core.store import Store
from tests.conftest import ROOT, admin_page, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _config, _store


def _judge(db, cfg, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), *extra]
    if cfg is not None:
        cmd += ["--config", str(cfg), "--dataset", "ah"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _stored(db, judge: str) -> set[tuple[int, str]]:
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("ah", judge, variant=None)
    assert not j.duplicated(["battle_id", "order"]).any()
    return set(zip(j["battle_id"].astype(int), j["order"]))


def _first(db, cfg_path, n: int) -> set[tuple[int, str]]:
    with Store.open(db) as s:
        p = plan_run(s, "ah", load_toml(cfg_path), limit=n)
    assert p.defined == n
    return {(u.battle_id, u.order) for u in p.units}


@pytest.mark.integration
def test_the_same_command_completes_its_set_and_a_larger_limit_extends_it(tmp_path):
    db = _store(tmp_path, n_prompts=10)  # 60 units
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        cfg = _config(tmp_path, srv.url, name="jobs")
        first10 = _first(db, cfg, 10)
        out = _judge(db, cfg, "--limit", "10")
        assert out.returncode == 0, out.stderr
        assert _stored(db, "jobs") == first10
        again = _judge(db, cfg, "--limit", "10")
        assert again.returncode == 0 and "nothing to do: the 10 units this command covers" in again.stderr
        assert _stored(db, "jobs") == first10
        more = _judge(db, cfg, "--limit", "16")
        assert more.returncode == 0, more.stderr
        stored = _stored(db, "jobs")
        assert len(stored) == 16 and first10 < stored
    with Store.open(db, read_only=True) as s:
        runs = s.runs_frame("ah")
    definitions = [json.loads(d) for d in runs["definition_json"]]
    assert sorted(d["limit"] for d in definitions) == [10, 16]
    assert all(d["judge"] == "jobs" and d["sample"] == "all" for d in definitions)
    assert sorted(runs["planned"]) == [6, 10]  # the second run planned only what its set still lacked


@pytest.mark.integration
@pytest.mark.parametrize("how", ["same command", "resume"])
def test_a_killed_run_is_completed_to_exactly_its_set(tmp_path, how):
    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge(latency_ms=300)) as srv:  # 24 units, 8 at a time
        cfg = _config(tmp_path, srv.url, name="killed")
        wanted = _first(db, cfg, 24)
        cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
        proc = subprocess.Popen([*cmd, "--limit", "24"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # After a few answers the endpoint holds every new request, so the run cannot finish before the kill
        # however slow the machine: a state, not a race against the clock.
        wait_until(lambda: srv.judge.served >= 4, timeout=120, what="the first answers")
        srv.judge.outage = "hang"
        wait_until(lambda: len(_stored_or_empty(db, "killed")) >= 1, timeout=120, what="a stored judgment")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        srv.judge.outage = None
        partial = _stored_or_empty(db, "killed")
        assert 0 < len(partial) < 24 and partial <= wanted
        if how == "resume":
            with Store.open(db, read_only=True) as s:
                run_id = int(s.runs_frame("ah")["run_id"].iloc[0])
            out = _judge(db, None, "--resume", str(run_id))
        else:
            out = _judge(db, cfg, "--limit", "24")
        assert out.returncode == 0, out.stderr
        assert _stored(db, "killed") == wanted  # exactly the set: nothing lost, nothing beyond it
        assert "nothing to do" in _judge(db, cfg, "--limit", "24").stderr


def _stored_or_empty(db, judge: str) -> set[tuple[int, str]]:
    try:
        return _stored(db, judge)
    except Exception:  # the judge is not registered yet, or the store is busy for a moment
        return set()


@pytest.mark.integration
def test_resume_refuses_other_options_and_unknown_runs(tmp_path):
    db = _store(tmp_path, n_prompts=2)
    out = _judge(db, None, "--resume", "99")
    assert out.returncode == 2 and "no run 99" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "core", "judge", "--db", str(db), "--resume", "1", "--limit", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--resume takes the run's own" in out.stderr


PRICED = "price_prompt_per_mtok = 1000.0\nprice_completion_per_mtok = 2000.0\nmax_tokens = 300\n"


@pytest.mark.integration
def test_the_estimate_before_a_run_and_after_calls_were_measured(tmp_path):
    from core.app.judging import DEFAULT_TOKENS_PER_CHAR, estimate_plan
    from core.judging.prompts import render

    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        cfg_path = _config(tmp_path, srv.url, name="priced")
        cfg_path.write_text(cfg_path.read_text() + PRICED)
        cfg = load_toml(cfg_path)
        with Store.open(db) as s:
            run_plan, est = estimate_plan(s, "ah", cfg, limit=20)
        chars = sum(
            len(m["content"])
            for u in run_plan.units
            for m in render(cfg.template, u.prompt, u.text_a, u.text_b, u.order, u.turns)
        )
        # nothing measured yet: characters ÷ 4 and max_tokens per call, priced as configured
        assert (est.calls, est.prompt_chars, est.measured_calls) == (20, chars, 0)
        assert est.prompt_tokens == round(chars * DEFAULT_TOKENS_PER_CHAR)
        assert est.completion_tokens == 20 * 300
        assert est.cost_usd == pytest.approx((1000 * est.prompt_tokens + 2000 * est.completion_tokens) / 1e6)
        out = _judge(db, cfg_path, "--estimate", "--limit", "20")
        assert out.returncode == 0 and "estimate: 20 calls" in out.stderr and f"${est.cost_usd:,.4f}" in out.stderr
        assert _stored_or_empty(db, "priced") == set()  # --estimate calls nothing
        assert _judge(db, cfg_path, "--limit", "20").returncode == 0
        with Store.open(db) as s:
            run_plan, est2 = estimate_plan(s, "ah", cfg, limit=40)
        assert est2.calls == 20 and est2.measured_calls == 20 and "mean of 20 earlier calls" in est2.completion_basis
        assert _judge(db, cfg_path, "--limit", "40").returncode == 0
    with Store.open(db, read_only=True) as s:
        last = s.runs_frame("ah").iloc[0]  # newest first: the run of the second 20 units
    # measured on the first 20 calls, the estimate of the next 20 is within 10% of what they used
    assert est2.prompt_tokens == pytest.approx(last["prompt_tokens"], rel=0.10)
    assert est2.completion_tokens == pytest.approx(last["completion_tokens"], rel=0.10)


@pytest.mark.integration
def test_a_hard_cost_budget_is_never_passed(tmp_path):
    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        cfg_path = _config(tmp_path, srv.url, name="capped")
        cfg_path.write_text(cfg_path.read_text() + PRICED + "max_cost_usd = 4.0\n")
        out = _judge(db, cfg_path)
    assert out.returncode == 0, out.stderr
    with Store.open(db, read_only=True) as s:
        run = s.runs_frame("ah").iloc[0]
        stored = len(s.judgments_frame("ah", "capped", variant=None))
    spent = (1000 * run["prompt_tokens"] + 2000 * run["completion_tokens"]) / 1e6
    assert run["status"] == "stopped" and "cost budget" in run["message"]
    assert 0 < stored < 60 and spent <= 4.0
    assert run["cost_usd"] == pytest.approx(spent)


def _spent(db) -> float:
    with Store.open(db, read_only=True) as s:
        runs = s.runs_frame("ah")
    return float((1000 * runs["prompt_tokens"].sum() + 2000 * runs["completion_tokens"].sum()) / 1e6)


def test_a_cost_budget_bounds_the_job_across_its_runs(tmp_path):
    """The same command run again after it stopped at its budget never passes it: the budget is the job's.

    A call reserves its prompt and its max_tokens of answer (about $1.6 here) but spends about $0.17, so a
    run with $2 stops after one call; twelve runs of a per-run budget would spend about $2.0 in all."""
    from core.app.judging import run_shared

    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge()) as srv:
        cfg_path = _config(tmp_path, srv.url, name="capped")
        cfg_path.write_text(cfg_path.read_text() + PRICED + "max_cost_usd = 2.0\n")
        cfg = load_toml(cfg_path)
        assert run_shared(db, "ah", cfg).status == "stopped"
        first = _spent(db)
        outcomes = [run_shared(db, "ah", cfg) for _ in range(11)]
        assert _spent(db) <= 2.0 and 12 * first > 2.0
        assert "the job's earlier runs spent" in (outcomes[-1].stats.message or "")
        served = srv.judge.served
        bigger = load_toml(cfg_path).__class__(**{**cfg.to_store(), "max_cost_usd": 6.0})
        run_shared(db, "ah", bigger)
        assert srv.judge.served > served  # a larger budget continues the same job up to it
    assert _spent(db) <= 6.0


def test_a_cost_budget_needs_prices(tmp_path):
    from core.judging.config import ConfigError, from_mapping

    with pytest.raises(ConfigError, match="max_cost_usd' needs both prices"):
        from_mapping({"name": "x", "base_url": "http://h/v1", "model": "m", "max_cost_usd": 5.0})


@pytest.mark.integration
def test_the_admin_page_estimates_before_spending(tmp_path, monkeypatch):

    db = _store(tmp_path, n_prompts=3)  # 18 units
    at = admin_page(db, monkeypatch)
    field = {w.label: w for w in [*at.text_input, *at.number_input, *at.radio]}
    field["name"].set_value("est-judge")
    field["base URL"].set_value("http://127.0.0.1:9/v1")  # never called
    field["USD per million prompt tokens (optional, for the cost column)"].set_value(2.0)
    field["USD per million completion tokens (optional)"].set_value(8.0)
    field["units this run covers"].set_value(10)
    field["action"].set_value("estimate cost")
    next(b for b in at.button if b.label == "Go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(i.value for i in at.info)
    assert "This run covers 10 units; 0 are judged already" in text and "10 calls" in text and "$" in text
    with Store.open(db, read_only=True) as s:
        assert s.judge_id("est-judge") is None  # estimating registers nothing and calls nothing


@pytest.mark.integration
def test_runs_are_listed_with_their_definition_progress_tokens_and_cost(tmp_path):
    db = _store(tmp_path, n_prompts=5)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        cfg_path = _config(tmp_path, srv.url, name="listed")
        cfg_path.write_text(cfg_path.read_text() + PRICED)
        assert _judge(db, cfg_path, "--limit", "12", "--sample", "balanced", "--seed", "7").returncode == 0
    cmd = [sys.executable, "-m", "core", "runs", "--db", str(db)]
    out = subprocess.run([*cmd, "--json"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    assert row["covers"] == "first 12 units (sample balanced, seed 7)"
    assert (row["status"], row["planned"], row["done"]) == ("done", 12, 12)
    assert row["cost_usd"] == pytest.approx((1000 * row["prompt_tokens"] + 2000 * row["completion_tokens"]) / 1e6)
    text = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True).stdout
    assert f"run {row['run_id']} listed on ah: done; first 12 units" in text and "$" in text
