"""Two Admin starts in the same second never share a configuration or a log (#43).

Workers were named ``admin-<judge>-<time to the second>-<server pid>`` and an existing file of that name was
deleted before writing: the first worker ran with the second start's settings and its key went to an endpoint
nobody chose for that run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.app import workers


class _NoProcess:
    """Stands in for the worker process: the test is about the files a start claims, not the run."""

    def __init__(self, cmd, **kwargs):
        self.args = cmd
        self.pid = 0

    def poll(self):
        return 0


@pytest.fixture()
def frozen(monkeypatch):
    monkeypatch.setattr(workers.time, "strftime", lambda fmt, *a: "20261128-112600")  # one second for both
    monkeypatch.setattr(subprocess, "Popen", _NoProcess)


def _config_of(w: workers.WorkerProcess) -> str:
    cmd = w.popen.args
    return Path(cmd[cmd.index("--config") + 1]).read_text(encoding="utf-8")


def test_two_starts_in_one_second_each_run_with_their_own_configuration(tmp_path, frozen):
    db = tmp_path / "s.duckdb"
    first = workers.spawn("judge", db, "d", "j", 'base_url = "http://127.0.0.1:9001/v1"\n', [])
    second = workers.spawn("judge", db, "d", "j", 'base_url = "http://127.0.0.1:9002/v1"\n', [])
    assert first.log_path != second.log_path
    assert "9001" in _config_of(first) and "9002" in _config_of(second)
    assert first.log_path.exists() and second.log_path.exists()  # neither start deleted the other's files
    for path in (first.log_path, second.log_path):
        assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_taken_name_is_never_deleted_or_reused(tmp_path, frozen, monkeypatch):
    """When the random token collides, the start picks another name and leaves the existing files alone."""
    db = tmp_path / "s.duckdb"
    tokens = iter(["aaaaaaaa", "aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(workers.secrets, "token_hex", lambda n: next(tokens))
    first = workers.spawn("judge", db, "d", "j", "one = 1\n", [])
    second = workers.spawn("judge", db, "d", "j", "two = 2\n", [])
    assert first.log_path.name.endswith("-aaaaaaaa.log") and second.log_path.name.endswith("-bbbbbbbb.log")
    assert _config_of(first) == "one = 1\n" and _config_of(second) == "two = 2\n"
