"""A run's lease covers it while it is running *or paused*: another run neither takes its journal nor pays for
its calls again (issue 33's repro: 1,589 of 2,007 paid judgments lost, 2,595 units paid twice).

The runs are the user's commands (``python -m core judge`` subprocesses) against fake endpoints in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from core.store import Store
from core.store.journal import lease_alive, pending_journals, process_start
from tests.conftest import ROOT, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _store
from tests.test_outages import _cfg, _judge, _judgments, _wait_served


def _run_status(db, judge: str) -> str | None:
    with Store.open(db, read_only=True, wait_s=10) as s:
        runs = s.runs_frame("ah")
    mine = runs[runs["judge"] == judge]
    return None if mine.empty else str(mine.iloc[0]["status"])


def _kept(db) -> int:
    """Judgments a run has made durable: in the store or in its journal (a journal line is one judgment)."""
    with Store.open(db, read_only=True, wait_s=10) as s:
        stored = len(s.judgments_frame("ah", "first", variant=None))
    journaled = sum(f.read_bytes().count(b"\n") for f in pending_journals(db).values())
    return max(stored, journaled)


def _wait_for(predicate, timeout: float = 90.0) -> None:
    wait_until(predicate, timeout=timeout, poll=0.1)


@pytest.mark.integration
def test_a_paused_run_keeps_its_journal_and_its_calls_while_other_runs_come_and_go(tmp_path):
    db = _store(tmp_path, n_prompts=10)  # 60 units
    paused_judge, other_judge = FakeJudge(latency_ms=100), FakeJudge()
    with FakeServer(paused_judge) as srv, FakeServer(other_judge) as other_srv:
        cfg = _cfg(tmp_path, srv.url, name="first", max_outage=600)
        first = _judge(db, cfg)
        _wait_served(paused_judge, 12)
        paused_judge.outage = "503"
        _wait_for(lambda: _run_status(db, "first") == "paused")
        # the same command again, while the first waits for the endpoint: refused, nothing paid
        again = _judge(db, cfg)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 2 and "is paused waiting for the endpoint" in err, err
        # another judge's run reconciles the store on its way in: the paused run's journal is not its to take
        other = _judge(db, _cfg(tmp_path, other_srv.url, name="second"), "--limit", "6")
        _, err2 = other.communicate(timeout=120)
        assert other.returncode == 0, err2
        assert first.poll() is None and len(pending_journals(db)) == 1  # still alive, journal still there
        assert _run_status(db, "first") == "paused"
        paused_judge.outage = None
        _, err3 = first.communicate(timeout=180)
    assert first.returncode == 0, err3
    j, runs = _judgments(db, "first")
    assert len(j) == 60 and not j.duplicated(["battle_id", "order"]).any()
    assert paused_judge.served == 60  # every unit paid exactly once
    assert runs[runs["judge"] == "first"]["status"].tolist() == ["done"]
    assert not pending_journals(db)


@pytest.mark.integration
def test_a_paused_run_whose_process_is_killed_stays_paused_and_the_next_run_completes_it(tmp_path):
    db = _store(tmp_path, n_prompts=10)
    judge = FakeJudge(latency_ms=100)
    with FakeServer(judge) as srv:
        cfg = _cfg(tmp_path, srv.url, name="first", max_outage=600)
        first = _judge(db, cfg)
        _wait_served(judge, 12)
        judge.outage = "503"
        _wait_for(lambda: _run_status(db, "first") == "paused")
        _wait_for(lambda: _kept(db) == judge.served)  # every paid answer is durable before the kill
        first.kill()
        first.wait(timeout=30)
        judge.outage = None
        again = _judge(db, cfg)
        _, err = again.communicate(timeout=180)
    assert again.returncode == 0, err
    j, runs = _judgments(db, "first")
    assert len(j) == 60 and not j.duplicated(["battle_id", "order"]).any()
    assert judge.served == len(j)  # what the killed run was paid for was merged from its journal, not paid again
    killed = runs[runs["judge"] == "first"].iloc[-1]
    assert killed["status"] == "paused" and "ended while the endpoint was down" in killed["message"]


@pytest.mark.integration
def test_a_reused_pid_is_not_the_owner():
    me = os.getpid()
    start = process_start(me)
    assert start is not None
    assert lease_alive(me, None, start, None)
    assert not lease_alive(me, None, start + 1, None)  # same pid, another process start: the lease expired
    child = subprocess.Popen([sys.executable, "-c", "pass"], cwd=ROOT)
    child.wait()
    assert not lease_alive(child.pid, None, None, None)
