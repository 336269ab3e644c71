"""Progress on stderr: a live line on a terminal, bounded whole lines in a log file or a pipe."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from core.commands import _common
from core.commands._common import ProgressLine
from tests.conftest import ROOT


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_file_gets_whole_lines_at_a_bounded_rate_and_the_last_update(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(_common.time, "monotonic", clock)
    out = io.StringIO()
    line = ProgressLine(out, every_s=5.0, tty=False)
    updates = [f"{k}/300 answered" for k in range(1, 301)]
    for k, text in enumerate(updates):
        clock.now = 1000.0 + k * 0.1  # ten updates a second for 30 s
        line(text)
    line.close()
    lines = out.getvalue().split("\n")
    assert "\r" not in out.getvalue() and lines[-1] == ""
    written = lines[:-1]
    assert len(written) <= 30 / 5.0 + 2  # one per 5 s, plus the first and the last
    assert written[0] == updates[0] and written[-1] == updates[-1]  # the log ends with where the work stopped


def test_a_terminal_keeps_the_live_line():
    out = io.StringIO()
    line = ProgressLine(out, tty=True)
    for k in range(3):
        line(f"{k}/3")
    line.close()
    assert out.getvalue().count("\r") == 3 and out.getvalue().endswith("\n") and out.getvalue().count("\n") == 1


@pytest.mark.integration
def test_generate_into_a_log_writes_no_carriage_return(tmp_path):
    from tests.fake_openai_server import FakeJudge, FakeServer
    from tests.test_generation import _config, _store

    db = _store(tmp_path)
    log = tmp_path / "worker.log"
    with FakeServer(FakeJudge(latency_ms=5)) as srv, open(log, "w") as fh:
        cfg = _config(tmp_path, srv.url)
        cmd = [sys.executable, "-m", "core", "generate", "--db", str(db), "--config", str(cfg), "--dataset", "arena"]
        r = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=fh, timeout=300)
    text = log.read_text()
    assert r.returncode == 0, text
    assert "\r" not in text and "answered" in text
    assert max(len(x) for x in text.splitlines()) < 500
