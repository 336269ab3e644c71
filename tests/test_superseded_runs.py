"""A paused or interrupted run whose units a later run finished is listed as superseded, not as resumable."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.app.judging import covers, runs
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT, admin_page
from tests.test_judging import _store


def _definition(**over):
    d = {"dataset": "ah", "judge": "j", "prompt_version": "v1", "sample": "all", "seed": 0, "limit": 40}
    d.update(over)
    d.setdefault("retry_failed", False)
    d.setdefault("units", d["limit"] or 0)
    return d


def _gone_pid() -> int:
    """The pid of a process that has ended (a run row's owner that is gone)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _run(store, judge_id, status, definition, message):
    rid = store.create_run(judge_id, "ah", 10, {"name": "j"}, owner_pid=_gone_pid(), definition=definition)
    store.update_run(rid, status=status, message=message, **({"finished": True} if status == "done" else {}))
    return rid


def _runs_store(tmp_path):
    db = _store(tmp_path, n_prompts=5)
    with Store.open(db) as s:
        jid = s.save_judge_config("j", {"name": "j"}, model="m", base_url="http://127.0.0.1:9/v1")
        paused = _run(s, jid, "paused", _definition(), "endpoint down; run the same command to resume")
        bigger = _run(s, jid, "paused", _definition(limit=80), "endpoint down; run the same command to resume")
        killed = _run(s, jid, "running", _definition(), "")  # its process is gone: interrupted
        done = _run(s, jid, "done", _definition(limit=60), "")
    return db, paused, bigger, killed, done


def test_a_finished_later_run_supersedes_what_it_covered(tmp_path):
    db, paused, bigger, killed, done = _runs_store(tmp_path)
    with Store.open(db, read_only=True) as s:
        df = runs(s, "ah").set_index("run_id")
    for rid in (paused, killed):
        assert df.loc[rid, "status"] == "superseded"
        assert f"run {done}" in df.loc[rid, "message"] and "resume" not in df.loc[rid, "message"].replace(
            "nothing is left to resume", ""
        )
    assert df.loc[bigger, "status"] == "paused"  # 80 units: the later run judged only 60 of them
    assert "run the same command to resume" in df.loc[bigger, "message"]


@pytest.mark.parametrize(
    ("later", "earlier", "expected"),
    [
        (_definition(), _definition(), True),
        (_definition(limit=None), _definition(), True),
        (_definition(limit=20), _definition(), False),
        (_definition(seed=1), _definition(), False),
        (_definition(prompt_version="v2"), _definition(), False),
        (_definition(sample="balanced", limit=60), _definition(sample="balanced"), False),
        (_definition(), _definition(retry_failed=True), False),
        (_definition(retry_failed=True), _definition(), True),
        (_definition(battle_ids=[1, 2]), _definition(battle_ids=[1, 2]), True),
        (_definition(battle_ids=[1, 2]), _definition(battle_ids=[1, 3]), False),
    ],
)
def test_which_definitions_cover_which(later, earlier, expected):
    assert covers(json.dumps(later), json.dumps(earlier)) is expected
    assert covers(None, json.dumps(earlier)) is False


@pytest.mark.integration
def test_the_runs_command_says_superseded(tmp_path):
    db, paused, *_ = _runs_store(tmp_path)
    out = run_cli("runs", "--db", str(db), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith(f"run {paused} "))
    assert ": superseded;" in line and "run the same command to resume" not in line


@pytest.mark.integration
def test_the_admin_pages_run_list_says_superseded(tmp_path, monkeypatch):

    db, paused, bigger, _, done = _runs_store(tmp_path)
    at = admin_page(db, monkeypatch)
    assert not at.exception
    shown = next(d.value for d in at.dataframe if "run_id" in d.value.columns and "status" in d.value.columns)
    shown = shown.set_index("run_id")
    assert shown.loc[paused, "status"] == "superseded" and f"run {done}" in shown.loc[paused, "message"]
    assert shown.loc[bigger, "status"] == "paused"
