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


def viewer_pages() -> dict[str, str]:
    """Key → title of every page a signed-out viewer opens, read from the live page registry (Vote needs an
    annotator, Admin a token): the sweeps over pages follow a page registered there without a list to edit."""
    from app_pages._registry import pages
    from core.app.access import VIEWER

    return {key: page.title for key, page in pages().items() if page.role == VIEWER}


ADMIN_TOKEN = "s3cret"  # the admin token the page tests set in the environment


def admin_page(db: Path, monkeypatch: pytest.MonkeyPatch, token: str = ADMIN_TOKEN) -> object:
    """An AppTest of the app over ``db``, on the Admin page, unlocked with ``token`` (set as the server's
    admin token): the set-up every Admin page test shares."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", str(db))
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", token)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/admin.py")
    at.run()
    at.text_input(key="admin_token_input").set_value(token).run()
    return at


# ---- fixture stores (tests/stores.py): built and precomputed once per code version, copied per worker ----


@pytest.fixture(scope="session")
def _worker_stores(tmp_path_factory: pytest.TempPathFactory):
    """``get(name)``: this worker's one copy of fixture store ``name``; after the session, checks that no test
    wrote data into a copy that every test of the worker reads."""
    from tests import stores

    copies: dict[str, tuple[Path, tuple]] = {}

    def get(name: str) -> Path:
        if name not in copies:
            path = stores.fresh_copy(name, tmp_path_factory.mktemp(f"shared-{name}"))
            copies[name] = (path, stores.data_stamp(path))
        return copies[name][0]

    yield get
    moved = sorted(name for name, (path, stamp) in copies.items() if stores.data_stamp(path) != stamp)
    assert not moved, (
        f"a test wrote data into the shared fixture store(s) {moved}: a test that writes takes its own copy "
        "(tests.stores.fresh_copy, or the demo_copy fixture)"
    )


@pytest.fixture(scope="session")
def demo_store(_worker_stores) -> Path:
    """The small demo arena, precomputed: shared by this worker's tests, which only read it."""
    return _worker_stores("demo")


@pytest.fixture(scope="session")
def demo_raw_store(_worker_stores) -> Path:
    """The small demo arena with nothing precomputed (pages compute, then persist, what they show)."""
    return _worker_stores("demo-raw")


@pytest.fixture(scope="session")
def walk_store(_worker_stores) -> Path:
    """The small demo, the real PandaLM test set and a real AlpacaEval tree ("ae"), precomputed."""
    return _worker_stores("walk")


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A test's own copy of the precomputed small demo, to write into."""
    from tests import stores

    return stores.fresh_copy("demo", tmp_path / "own")
