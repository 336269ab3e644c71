"""Shared fixtures.  Real datasets are optional: tests that need them skip
with a reason naming the missing path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import os  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

from core.datahome import shared_datasets_dir  # noqa: E402

# The dashboard computes new data's results in a background process; tests that start it (AppTest, the
# browser and load tests) would otherwise leave such processes competing with the test for the CPU.
os.environ.setdefault("ARENA_PRECOMPUTE", "0")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    d = shared_datasets_dir()
    if d is None:
        pytest.skip("real datasets not found: set ARENA_DATA_HOME or place them in ../shared/datasets")
    return d


def shared_path(name: str) -> Path:
    d = shared_datasets_dir()
    if d is None or not (d / name).exists():
        pytest.skip(f"real dataset {name} not found under ARENA_DATA_HOME or ../shared/datasets")
    return d / name


def wait_until(
    predicate: Callable[[], object], timeout: float = 60.0, what: str = "the state", poll: float = 0.02
) -> None:
    """Poll ``predicate`` until it is true; fail naming ``what`` after ``timeout`` seconds.

    Tests wait for a state, never for a fixed time: a sleep followed by an assertion fails on a loaded machine
    (and wastes time on a fast one).  The timeout is generous on purpose: it bounds a hang, it is no speed target
    (those live in benchmarks/)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} was not reached within {timeout:g} s")
        time.sleep(poll)
