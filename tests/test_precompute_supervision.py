"""The background precompute is supervised: its output is kept, its end is reaped, a signal stops its workers
with it, and a run that stopped early says so in the sidebar (issue 33: output discarded, a zombie, the sidebar
saying "computing 79 of 93" for 35 minutes, SIGTERM leaving the workers running)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.app import precompute
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from core.store.journal import process_alive
from tests.conftest import ROOT, wait_until


@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pre") / "demo.duckdb"
    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return path


def _children_of(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


def _wait_for(predicate, timeout: float = 120.0) -> None:
    wait_until(predicate, timeout=timeout, poll=0.05)


@pytest.mark.integration
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the worker processes")
def test_sigterm_stops_the_workers_and_the_progress_says_why(small_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(small_db.read_bytes())
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "precompute", "--db", str(db), "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the lanes' pool is up: two workers (and the manager) are children of the precompute
    _wait_for(lambda: len(_children_of(proc.pid)) >= 3 or proc.poll() is not None)
    assert proc.poll() is None, "the precompute ended before its workers started"
    workers = _children_of(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    _wait_for(lambda: not any(process_alive(w, None) for w in workers), timeout=30)
    progress = precompute.read_progress(db)
    assert progress is not None and progress.error == "stopped by SIGTERM" and progress.finished is not None
    assert precompute.stopped(db) == "stopped by SIGTERM" and not precompute.running(db)


def test_the_background_precompute_keeps_its_output_and_is_reaped(small_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(small_db.read_bytes())
    precompute.start_in_background(db, nice=0)
    child = precompute._children[-1]
    _wait_for(lambda: precompute.read_progress(db) is not None and precompute.running(db))
    os.kill(child.pid, signal.SIGKILL)  # dies mid-run, writing nothing more
    _wait_for(lambda: child not in precompute._children)  # reaped by its thread: no zombie left
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
    assert not precompute.running(db)
    assert "ended before it finished" in (precompute.stopped(db) or "")
    log = precompute.log_path(db)
    assert log.exists() and stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_failing_background_precompute_leaves_its_error_in_the_log(tmp_path):
    db = tmp_path / "not-a-store.duckdb"
    db.write_bytes(b"this is not a DuckDB file")
    precompute.start_in_background(db, nice=0)
    child = precompute._children[-1]
    _wait_for(lambda: child not in precompute._children)
    assert child.returncode not in (0, None)
    assert "error" in precompute.log_path(db).read_text().lower()


@pytest.mark.integration
def test_the_sidebar_says_the_background_computation_stopped(small_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "copy.duckdb"
    db.write_bytes(small_db.read_bytes())
    p = precompute.Progress(total=93, done=79, current="demo: τ grid", error="stopped by SIGTERM", finished=1.0)
    precompute._write_progress(db, p)
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    captions = [c.value for c in at.sidebar.caption]
    assert any("The background computation stopped: stopped by SIGTERM" in c for c in captions), captions
    assert not any("Computing results in the background" in c for c in captions)
