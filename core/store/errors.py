"""Errors of store operations."""

from __future__ import annotations

import re
from pathlib import Path


class StoreError(Exception):
    """A store operation that cannot proceed (bad name, missing dataset, ...)."""


class StoreLockedError(StoreError):
    """The DuckDB file is held by another process (``holder`` describes it where the OS says)."""

    def __init__(self, message: str, holder: str | None = None):
        super().__init__(message)
        self.holder = holder


def describe_process(pid: int) -> str:
    """``process 1234 (python -m core judge …)``: the command line where /proc shows it, cut to 120 characters."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"process {pid}"
    parts = [p.decode(errors="replace") for p in raw.split(b"\0") if p]
    if not parts:
        return f"process {pid}"
    # The interpreter's path says little; its arguments say what the process is doing.
    if Path(parts[0]).name.startswith("python"):
        parts = ["python", *parts[1:]]
    cmd = " ".join(parts)
    return f"process {pid} ({cmd[:120]}{'…' if len(cmd) > 120 else ''})"


def lock_holder(exc: Exception) -> str | None:
    """The process DuckDB names in a lock conflict, described; None when it names none."""
    pid = re.search(r"PID (\d+)", str(exc))
    return describe_process(int(pid.group(1))) if pid else None


def is_lock_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


def lock_message(path: str, exc: Exception, waited_s: float = 0.0) -> str:
    """The message for a store file another process holds, naming that process where DuckDB does."""
    if not is_lock_conflict(exc):
        return f"cannot open store {path}: {exc}"
    holder = lock_holder(exc)
    waited = f" (waited {waited_s:.0f} s)" if waited_s >= 1 else ""
    return (
        f"the store {path} is in use by {holder or 'another process'}{waited}; "
        "try again when it finishes, or use another --db file"
    )
