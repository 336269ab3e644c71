"""Fixture stores: each built and precomputed once per version of the code, then copied to the tests that use it.

Building the small demo takes a second; precomputing it (every page's results, as ``make run``'s background
precompute leaves a store) takes a minute or two of CPU.  Paying that in every module that opens a page was most
of what the page tests cost.  So a store here is built once for a version of the product: its key hashes
``core/``, the pinned requirements and this file, the build lives under ``.test-stores/<key>/`` (gitignored),
and a file lock makes the two xdist workers, and ``make test``'s two phases, build it once between them.  A
change to the code changes the key, and the next session builds afresh (older keys are deleted then).

Nobody opens the built file itself:

- ``worker_copy(name)`` is one copy per worker process, shared by every test in that worker that only reads.
  Pages may persist results into it, as they do in production (the results table is a cache; it changes no
  data).  Sharing one path is also what lets Streamlit's in-process caches serve one module's page from
  another's visit in AppTest.
- ``fresh_copy(name, dir)`` is a test's own copy, for a test that imports, votes, judges or deletes.

At the end of a session each worker copy's data stamp (``Store.version_stamps``) is compared with the one it
was built with: a test that wrote data into a shared store fails the session, naming the store.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("ARENA_TEST_STORES", ROOT / ".test-stores"))

# The real AlpacaEval tree's annotator, as the peers' own leaderboards name it.
AE_ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"


@dataclass(frozen=True)
class Recipe:
    """How to build one fixture store: ``build(path)`` writes its data; ``precompute`` then persists every
    page's results; ``inputs`` names the real datasets it reads (their sizes and times are part of the key)."""

    build: Callable[[Path], None]
    precompute: bool = True
    inputs: tuple[str, ...] = ()


def _demo(path: Path) -> None:
    from core.simulate import DemoConfig, simulate_arena
    from core.store import Store

    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))


def _demo_and_peers(path: Path) -> None:
    """The small demo, the real PandaLM test set and a real AlpacaEval tree in one store."""
    from core.app.data import import_path
    from core.datahome import shared_datasets_dir
    from core.store import Store

    shared = shared_datasets_dir()
    assert shared is not None
    _demo(path)
    with Store.open(path) as s:
        import_path(s, shared / "pandalm_testset_v1", "pandalm", dataset="pandalm")
        import_path(s, shared / "alpaca_eval_more" / "results", "alpaca-eval", dataset="ae", annotator=AE_ANNOTATOR)


RECIPES: dict[str, Recipe] = {
    # the small demo arena exactly as simulated: pages compute what they show
    "demo-raw": Recipe(_demo, precompute=False),
    # the same store with every page's results persisted: pages read them
    "demo": Recipe(_demo),
    # three datasets (simulated, PandaLM, AlpacaEval) for the page walk and the peers' first screens
    "walk": Recipe(_demo_and_peers, inputs=("pandalm_testset_v1", "alpaca_eval_more/results")),
}


def _code_key() -> str:
    """A hash of everything a built store depends on: the product's code, the pins and this file."""
    h = hashlib.sha256()
    h.update(sys.version.encode())
    files = sorted((ROOT / "core").rglob("*.py")) + [ROOT / "constraints.txt", Path(__file__)]
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _inputs_key(recipe: Recipe) -> str:
    """The real inputs' file names, sizes and modification times (a refreshed dataset rebuilds the store)."""
    if not recipe.inputs:
        return ""
    from core.datahome import shared_datasets_dir

    shared = shared_datasets_dir()
    h = hashlib.sha256()
    for name in recipe.inputs:
        top = shared / name if shared is not None else None
        if top is None or not top.exists():
            import pytest

            pytest.skip(f"real dataset {name} not found under ARENA_DATA_HOME or ../shared/datasets")
        for f in sorted(p for p in top.rglob("*") if p.is_file()):
            st = f.stat()
            h.update(f"{f.relative_to(top)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return "-" + h.hexdigest()[:8]


_KEY: str | None = None


def _key_dir() -> Path:
    global _KEY
    if _KEY is None:
        _KEY = _code_key()
    return CACHE / _KEY


def built(name: str) -> Path:
    """The built store ``name`` (see :data:`RECIPES`), building it first if this code version has none.

    Never open the returned file: copy it (:func:`worker_copy`, :func:`fresh_copy`)."""
    recipe = RECIPES[name]
    d = _key_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}{_inputs_key(recipe)}.duckdb"
    with open(d / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits here while this one builds
        if not path.exists():
            _prune_other_keys(d)
            building = d / f"{name}.building" / path.name
            shutil.rmtree(building.parent, ignore_errors=True)
            building.parent.mkdir()
            recipe.build(building)
            if recipe.precompute:
                from core.app import precompute

                progress = precompute.run(building, workers=precompute.default_workers())
                assert not progress.error and not progress.failed, (name, progress.error, progress.failed)
            _checkpointed(building)
            if recipe.precompute:  # the finished run's progress, as a server finds it beside a computed store
                os.replace(_progress_of(building), _progress_of(path))
            os.replace(building, path)
            shutil.rmtree(building.parent, ignore_errors=True)
    return path


def _prune_other_keys(current: Path) -> None:
    """Remove the stores of other code versions untouched for an hour (a session of older code may still be
    building or copying one)."""
    import time

    for other in CACHE.iterdir():
        if other.is_dir() and other != current and time.time() - other.stat().st_mtime > 3600:
            shutil.rmtree(other, ignore_errors=True)


def _checkpointed(path: Path) -> None:
    """Fold the write-ahead log into the file, so that copying the one file copies the whole store."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CHECKPOINT")
    con.close()
    assert not Path(f"{path}.wal").exists(), path


def _progress_of(db: Path) -> Path:
    return Path(f"{db}.precompute.json")  # core.app.precompute.progress_path


def fresh_copy(name: str, directory: Path) -> Path:
    """A copy of store ``name`` in ``directory``, the caller's own to write (with its precompute's progress
    file, so that a server started on it finds it computed for its data and starts no precompute)."""
    directory.mkdir(parents=True, exist_ok=True)
    src, dst = built(name), directory / f"{name}.duckdb"
    shutil.copyfile(src, dst)
    if _progress_of(src).exists():
        shutil.copyfile(_progress_of(src), _progress_of(dst))
    return dst


def data_stamp(path: Path) -> tuple:
    """What a store's data is (not its persisted results): the stamps results are keyed on."""
    from core.store import Store

    with Store.open(path, read_only=True) as s:
        base, judges = s.version_stamps()
    return base, sorted(judges.items())
