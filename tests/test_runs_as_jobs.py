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
import time

import pytest

from core.app.judging import plan_run
from core.judging.config import load_toml
from core.store import Store
from tests.conftest import ROOT
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


@pytest.mark.parametrize("how", ["same command", "resume"])
def test_a_killed_run_is_completed_to_exactly_its_set(tmp_path, how):
    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge(latency_ms=400)) as srv:
        cfg = _config(tmp_path, srv.url, name="killed")
        wanted = _first(db, cfg, 24)
        cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
        proc = subprocess.Popen([*cmd, "--limit", "24"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_stored_or_empty(db, "killed")) < 4:
            time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
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
