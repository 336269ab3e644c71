"""A first start in seconds: the server answers as soon as the store exists, prints no warning, and starts one
background precompute (none when the store's results were computed for its data already).  How fast is the
business of ``benchmarks/bench_first_start.py``; here, what happens."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import plotly.graph_objects as go
import pytest

from core.app import precompute
from core.charts import for_presentation
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests import stores
from tests.conftest import ROOT
from tests.test_browser import _free_port


@pytest.fixture()
def small_db(tmp_path):
    db = tmp_path / "arena.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return db


def _serve(db, port: int, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "serve.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT,
        env={**os.environ, "ARENA_DB": str(db), "ARENA_PRECOMPUTE": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_answer(proc: subprocess.Popen, port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "the server never answered"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    out, _ = proc.communicate(timeout=30)
    return out


def _stop_precompute(db) -> None:
    p = precompute.read_progress(db)
    if p is not None and precompute.running(db):
        os.kill(p.pid, 15)
        deadline = time.monotonic() + 60
        while precompute.running(db) and time.monotonic() < deadline:
            time.sleep(0.1)


@pytest.mark.integration
def test_the_server_answers_without_warnings_and_starts_one_background_precompute(small_db):
    port = _free_port()
    proc = _serve(small_db, port)
    try:
        _wait_answer(proc, port)
        # the background precompute: started by the server, its progress beside the store
        deadline = time.monotonic() + 60
        while (precompute.read_progress(small_db) or precompute.Progress()).stamp is None:
            assert time.monotonic() < deadline, "no background precompute was started"
            time.sleep(0.1)
        first = precompute.read_progress(small_db)
    finally:
        out = _stop(proc)
        _stop_precompute(small_db)
    assert "warning" not in out.lower() and "no runtime found" not in out.lower(), out
    assert first is not None and first.stamp is not None


@pytest.mark.integration
def test_a_store_computed_for_its_data_starts_no_second_precompute(tmp_path):
    # precomputed once per code version by tests/stores.py, its finished run's progress beside it
    small_db = stores.fresh_copy("demo", tmp_path)
    done = precompute.read_progress(small_db)
    assert done is not None and done.finished and done.error is None and done.stamp
    assert not precompute.needed(small_db)
    port = _free_port()
    proc = _serve(small_db, port)
    try:
        _wait_answer(proc, port)  # the launcher decides before the server answers: nothing can start after
    finally:
        _stop(proc)
    after = precompute.read_progress(small_db)
    assert after is not None and after.pid == done.pid and after.started == done.started  # the same run


def test_on_a_projector_every_row_of_a_48_row_chart_keeps_its_label():
    models = [f"model-{k:02d}" for k in range(48)]
    fig = go.Figure(go.Scatter(x=list(range(48)), y=models, mode="markers"))
    fig.update_layout(height=500, margin=dict(t=40, b=40))
    shown = for_presentation(fig, base=18)
    assert shown.layout.yaxis.dtick == 1  # every category labelled, none dropped for overlapping
    per_row = (shown.layout.height - shown.layout.margin.t - shown.layout.margin.b) / 48
    assert per_row >= 18 * 1.2  # room for 18 px type on every row
