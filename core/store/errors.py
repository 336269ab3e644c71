"""Errors of store operations."""

from __future__ import annotations

import re


class StoreError(Exception):
    """A store operation that cannot proceed (bad name, missing dataset, ...)."""


class StoreLockedError(StoreError):
    """The DuckDB file is held for writing by another process."""


def lock_message(path: str, exc: Exception) -> str:
    """The message for a store file another process holds, naming that process where DuckDB does."""
    text = str(exc)
    pid = re.search(r"PID (\d+)", text)
    holder = f" (process {pid.group(1)})" if pid else ""
    if "lock" in text.lower():
        return (
            f"the store {path} is held for writing by another process{holder}; "
            "stop that process (e.g. the running app or a judge run) or use another --db file"
        )
    return f"cannot open store {path}: {text}"
