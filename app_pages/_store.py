"""The store as the pages see it: its data stamps (one reader per server process), read-only reads, cache keys."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import streamlit as st

from core.app import Store, StoreError, StoreLockedError, waits
from core.app import data as app_data
from core.app import display as app_display
from core.app import persist as app_persist
from core.app import precompute as app_precompute
from core.app import results as app_results
from core.redact import redact

T = TypeVar("T")


# ==================================================================== store
# The store is shared with judge runs and the CLI, and DuckDB lets a process
# write it only while nobody else has it open: pages therefore never keep it
# open.  Each cached loader opens it read-only for its own queries (a few ms)
# and closes it; the data stamp is re-read at most every STAMP_REFRESH_S per
# server process, and while another process holds the store the last stamp
# stands, so cached results keep showing under one notice.
READ_WAIT_S = waits.PAGE.seconds  # a loader's wait for a store another process holds (each hold is one query)
# A page run's reads come in a burst: the file stays open this long after each, so the next one joins it
# (Store.open's linger_s; it goes at once when a writer asks).
READ_LINGER_S = 0.25
STAMP_REFRESH_S = 2.0
# While a run writes, the all-judges stamp (Overview, Judge bias, Judges & annotators: results over every
# judge) advances at most this often; each advance recomputes those pages' fits, and recomputing them
# at every merge of a running judge took the CPU the run needed.  Results keyed on one judge's stamp
# are not held back, nor are new datasets and votes (a change of the base stamp).
ALL_JUDGES_MIN_INTERVAL_S = 15.0
# The background precompute starts once the data has stayed unchanged this long: a judge run that merges
# every second would otherwise restart it (and its all-judges results) again and again.
PRECOMPUTE_SETTLE_S = float(os.environ.get("ARENA_PRECOMPUTE_SETTLE_S", "30"))


def db_path() -> str:
    return os.environ.get("ARENA_DB", str(app_data.DEFAULT_DB))


@dataclass
class StoreState:
    """What the server knows about the store: its data stamps, and why it could not be read if so."""

    stamp: str | None = None  # every table: changes with any write
    fetched: float = float("-inf")
    busy: str | None = None  # held by another process (names it)
    error: str | None = None  # cannot be opened at all (missing, newer schema, not a store)
    files: tuple = ()  # (size, mtime) of the store file and its write-ahead log when the stamp was read
    latest: str | None = None  # the newest all-tables stamp read; ``stamp`` catches up with it
    stamp_since: float = float("-inf")  # when ``stamp`` last advanced
    stamp_base: str | None = None  # ``base`` when ``stamp`` last advanced
    base: str | None = None  # all but judgments (datasets, battles, votes, completions, judges)
    judges: dict[tuple[str, str], str] = field(default_factory=dict)  # (dataset, judge) → its judgments' stamp
    precomputing_for: str | None = None  # the data stamp a background precompute was started for
    latest_since: float = float("-inf")  # when ``latest`` last changed


def _file_stamp(path: str) -> tuple:
    """Size and modification time of the store file and its WAL: any committed write changes one of them."""
    out: list[tuple[int, int] | None] = []
    for p in (path, path + ".wal"):
        try:
            st_ = os.stat(p)
            out.append((st_.st_size, st_.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


class _StoreStates:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, StoreState] = {}


@st.cache_resource(show_spinner=False)
def _store_states() -> _StoreStates:
    return _StoreStates()


def store_state() -> StoreState:
    """The store's data stamps, re-read at most every ``STAMP_REFRESH_S`` (one reader for all sessions)."""
    path = db_path()
    holder = _store_states()
    with holder.lock:
        state = holder.states.setdefault(path, StoreState())
        now = time.monotonic()
        if now - state.fetched >= STAMP_REFRESH_S:
            files = _file_stamp(path)
            if state.stamp is not None and state.busy is None and files == state.files:
                # Unchanged files: the same data stamp, without opening the store (an open costs ~50 ms
                # of the server's one interpreter lock, every refresh, with many sessions).
                state.fetched = now
            else:
                state.files = files
                try:
                    with app_data.open_store(path, read_only=True, wait_s=waits.PROBE.seconds) as store:
                        state.base, state.judges = app_data.version_stamps(store)
                    stamps = app_precompute.Stamps(state.base, state.judges)
                    if stamps.everything() != state.latest:
                        state.latest_since = now
                    state.latest, state.busy, state.error = stamps.everything(), None, None
                except StoreLockedError as exc:
                    state.busy = str(exc)  # keep the last stamp: its cached results are still true
                except StoreError as exc:
                    state.stamp = state.latest = None
                    state.busy, state.error = None, str(exc)
                state.fetched = now
        if (
            state.latest is not None
            and state.latest != state.precomputing_for
            and now - state.latest_since >= PRECOMPUTE_SETTLE_S
        ):
            state.precomputing_for = state.latest
            start_precompute(path, state.latest)
        # Only judgments are held back: a new dataset or new votes show at the next refresh.
        if state.latest != state.stamp and (
            state.stamp is None
            or state.base != state.stamp_base
            or now - state.stamp_since >= ALL_JUDGES_MIN_INTERVAL_S
        ):
            state.stamp, state.stamp_since, state.stamp_base = state.latest, now, state.base
        return dataclasses.replace(state)


def start_precompute(path: str, stamp: str | None = None) -> None:
    """Compute every page's results for new data in a background process (``python -m core precompute``).

    One at a time per store; at low CPU priority, so visitors' own requests
    come first; ``ARENA_PRECOMPUTE=0`` turns it off (the tests do).
    """
    if os.environ.get("ARENA_PRECOMPUTE", "1") == "0" or app_precompute.running(path):
        return
    if stamp is not None and app_precompute.done_for(path, stamp):
        return  # computed for exactly this data already (by `make demo`, or this server's own earlier run)
    app_precompute.start_in_background(path)


@contextmanager
def reading() -> Iterator[Store]:
    """The store, open read-only for the queries of one cached loader, closed after."""
    with app_data.open_store(db_path(), read_only=True, wait_s=READ_WAIT_S, linger_s=READ_LINGER_S) as store:
        yield store


def read_store(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(store, *args, **kwargs)`` with the store open read-only for just that call."""
    with reading() as store:
        return fn(store, *args, **kwargs)


def result_stamp(fn: Callable[..., Any], args: tuple) -> str:
    """The key of the page result ``fn(store, *args)``: the store file and the data stamp of the scope its
    declaration gives (``core.app.results``), never a scope a page picks by hand."""
    declared = app_results.of(fn)
    state = store_state()
    if state.base is None:
        return f"{db_path()}|none"
    if declared.scope == "everything":
        # the held-back all-tables stamp (ALL_JUDGES_MIN_INTERVAL_S), not the newest one read
        return f"{db_path()}|{state.stamp or 'none'}"
    return f"{db_path()}|{declared.stamp(app_precompute.Stamps(state.base, state.judges), args)}"


def read_persisted(fn: Callable[..., T], *args: Any, stamp: str, **kwargs: Any) -> T:
    """:func:`read_store` kept in the store's results at :func:`result_stamp` ``stamp``: computed once, for every
    session, every server process and every restart (``core.app.persist``).

    ``args[0]`` is the dataset; keyword arguments enter the key, except ``progress``.
    """
    dataset = args[0] if args and isinstance(args[0], str) else None
    data = stamp.removeprefix(db_path() + "|")  # the data stamp; the path is this server's name for the file
    return app_persist.persisted(db_path(), reading, fn, args, data, dataset=dataset, **kwargs)


def read_lagged(fn: Callable[..., T], *args: Any, stamp: str, **kwargs: Any) -> app_persist.Lagged[T]:
    """:func:`read_persisted`, except that a result persisted before the newest votes is returned at once (and
    said to be behind) while the current one is computed in the background (``persist.persisted_or_lagged``)."""
    dataset = args[0] if args and isinstance(args[0], str) else None
    data = stamp.removeprefix(db_path() + "|")
    return app_persist.persisted_or_lagged(db_path(), reading, fn, args, data, dataset=dataset, **kwargs)


class _Behind(Exception):
    """Carries a result from before the newest votes out of a cached loader: only current results are cached."""

    def __init__(self, lagged: app_persist.Lagged) -> None:
        super().__init__("a result from before the newest votes")
        self.lagged = lagged


def store_available() -> bool:
    """Whether there is a readable store (or cached results of one); says why not, once, when there is not."""
    state = store_state()
    if state.error:
        st.error(f"The battle store could not be opened. {redact(state.error)}")
        return False
    if state.stamp is None:
        busy_notice(state.busy or "")
        return False
    return True


def busy_notice(reason: str) -> None:
    """One notice per page view while another process holds the store (never repeated, never 'empty')."""
    run = st.session_state.get("_script_run", 0)
    if st.session_state.get("_busy_shown") == run:
        return
    st.session_state["_busy_shown"] = run
    # in a reader's words: who is writing and what to wait for, never the holder's command line
    st.info(redact(app_display.store_busy(reason)), icon=":material/hourglass_top:")
