"""Worker processes the Admin page starts: a ``python -m core`` command in its own session.

The server process only starts a worker, reads its log and signals it; the
CPU work and the store writes happen in the worker, so pages stay responsive
and the job keeps its speed while people browse.  A worker outlives the
browser tab (and the server: it runs in its own session).  Its configuration
file (never a key) and its log sit next to the store; the worker inherits the
server's environment, so the key's variable is read there and never passes
through here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from core import redact
from core.store.journal import runs_dir


@dataclass
class WorkerProcess:
    """A running (or finished) ``python -m core`` job started from the Admin page."""

    popen: subprocess.Popen
    name: str
    dataset: str
    log_path: Path
    config_path: Path
    started: float = field(default_factory=time.time)

    @property
    def judge(self) -> str:
        """The judge (or model) the job runs; kept under its historical name for the Admin page."""
        return self.name

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def cancel(self) -> None:
        """SIGTERM: the job finishes the calls in flight, keeps them, marks itself cancelled and exits."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_lines(self, n: int = 6) -> list[str]:
        """The last lines of the worker's output (the progress bar's latest state included), redacted."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        # the whole text is redacted before it is split: a key a line break cuts in two is still found
        lines = [ln.split("\r")[-1].strip() for ln in redact.redact(text).splitlines()]
        return [redact.redact(ln) for ln in lines if ln][-n:]


def _open_private(path: Path) -> int:
    """A new file only its owner may read (0600 from its creation: no moment with wider rights).

    Created exclusively: a file of that name already there (another worker's) raises FileExistsError and is
    never deleted or reused (two starts in one second once shared a configuration and a log)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)


def _write_private(path: Path, data: bytes) -> None:
    with os.fdopen(_open_private(path), "wb") as fh:
        fh.write(data)


def _claim_files(
    folder: Path, prefix: str, safe: str, config_toml: str | None, extra_files: dict[str, str] | None
) -> tuple[list[tuple[str, Path, str]], Path, int]:
    """This start's own files: a stem no other start has (time, pid and a random token), every file created
    exclusively; returns the option files, the configuration path and the open log's descriptor."""
    for _ in range(8):
        token = secrets.token_hex(4)
        stem = folder / f"{prefix}-{safe}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{token}"
        config_path = stem.with_suffix(".toml")
        files = [] if config_toml is None else [("--config", config_path, config_toml)]
        for option, text in (extra_files or {}).items():
            files.append((option, stem.with_name(f"{stem.name}-{option.strip('-')}.toml"), text))
        written: list[Path] = []
        try:
            for _, path, text in files:
                _write_private(path, text.encode("utf-8"))
                written.append(path)
            return files, config_path, _open_private(config_path.with_suffix(".log"))
        except FileExistsError:  # another start took this stem: ours are removed, theirs untouched
            for path in written:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    raise RuntimeError(f"could not create a worker's files in {folder}: every name tried was taken")


def spawn(
    command: str,
    db_path: str | Path,
    dataset: str,
    name: str,
    config_toml: str | None,
    args: list[str],
    extra_files: dict[str, str] | None = None,
) -> WorkerProcess:
    """``python -m core COMMAND --db DB --config <written TOML> --dataset D ARGS`` as a worker process.

    ``config_toml=None``: no ``--config``.  ``extra_files``: option → TOML text, each written next to the
    store like the configuration and passed as that option's value (``{"--judge": ...}`` for ``evaluate``).
    """
    folder = runs_dir(db_path)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:40]
    prefix = "admin" if command == "judge" else command
    files, config_path, log_fd = _claim_files(folder, prefix, safe, config_toml, extra_files)
    log_path = config_path.with_suffix(".log")
    cmd = [sys.executable, "-m", "core", command, "--db", str(db_path)]
    for option, path, _ in files:
        cmd += [option, str(path)]
    cmd += ["--dataset", dataset, *args]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    with os.fdopen(log_fd, "wb") as log:
        popen = subprocess.Popen(
            cmd,
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return WorkerProcess(popen, name, dataset, log_path, files[0][1] if files else config_path)
