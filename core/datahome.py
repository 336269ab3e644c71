"""Where the optional real datasets live (like scikit-learn's ``data_home``).

Resolution order: the ``ARENA_DATA_HOME`` environment variable, then
``../shared/datasets`` beside the repository.  The repository never contains
those files; callers must cope with ``None``.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = REPO_ROOT / "data" / "arena.duckdb"


def shared_datasets_dir() -> Path | None:
    env = os.environ.get("ARENA_DATA_HOME")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "datasets")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def shared_file(name: str) -> Path | None:
    d = shared_datasets_dir()
    if d is None:
        return None
    p = d / name
    return p if p.exists() else None
