"""The store's connection: opening, migrations, transactions and the dataset catalogue.

DuckDB lets one process write a file, or several read it, never both.  So
every process that shares a store (the dashboard, a judge run, the CLI) holds
it briefly: open, do one operation, close; ``Store.open(wait_s=…)`` retries a
held file with back-off for a bounded time, then raises
:class:`StoreLockedError` naming the holding process.  Inside a process each
query runs on its own cursor, so threads can share one open store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from core.store.errors import StoreError, StoreLockedError, is_lock_conflict, lock_holder, lock_message
from core.store.schema import MIGRATIONS, SCHEMA_VERSION


@dataclass(frozen=True)
class DatasetInfo:
    dataset_id: int
    name: str
    source: str


# One write lock per store file and process.  Each Store.open is its own connection, and DuckDB runs the
# transactions of one process's connections side by side, failing one of two that write the same row
# ("Conflict on update": two sessions persisting the same result, a vote and a background refresh).
# Writes are brief, so they take turns instead.
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock_for(path: str) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(os.path.realpath(path), threading.RLock())


class StoreBase:
    """A handle on one DuckDB file; the query and write mixins of :class:`core.store.Store` build on it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, read_only: bool):
        self._con = con
        self.path = path
        self.read_only = read_only
        self._linger_s = 0.0  # see open()
        # in-memory stores are private to their connection: no other handle to take turns with
        self._write_lock = threading.RLock() if path == ":memory:" else _write_lock_for(path)

    @classmethod
    def open(
        cls, path: str | Path | None = None, read_only: bool = False, wait_s: float = 0.0, linger_s: float = 0.0
    ) -> Any:
        """Open (creating and migrating when writable) the store at ``path``.

        ``wait_s``: how long to keep trying while another process holds the
        file (it is held for one operation at a time, so waits are short).
        ``linger_s`` (readers): keep the file open that long after this
        store closes, so that the next read joins it instead of opening it
        again (:class:`ReadAnchors`; the dashboard's reads come in bursts).
        ``path=':memory:'`` gives a private in-memory store (tests).
        """
        from core.datahome import DEFAULT_DB

        path = str(path if path is not None else DEFAULT_DB)
        if path != ":memory:":
            p = Path(path)
            if read_only and not p.exists():
                raise StoreError(f"store {path} does not exist (build it with `python -m core simulate --db {path}`)")
            if not read_only:
                p.parent.mkdir(parents=True, exist_ok=True)
        con = _connect(path, read_only, wait_s)
        store = cls(con, path, read_only)
        if read_only and path != ":memory:":
            store._linger_s = linger_s
        if not read_only:
            store._migrate()
        else:
            v = store.schema_version
            if v > SCHEMA_VERSION:
                store.close()
                raise StoreError(f"store {path} has schema version {v}, newer than this code ({SCHEMA_VERSION})")
            if v < SCHEMA_VERSION:
                # A reader cannot migrate: upgrade once with a brief write, then read.
                store.close()
                try:
                    cls.open(path, read_only=False, wait_s=wait_s).close()
                except StoreError as exc:
                    raise StoreError(
                        f"store {path} has schema version {v} and could not be migrated to {SCHEMA_VERSION}: {exc}"
                    ) from None
                return cls.open(path, read_only=True, wait_s=wait_s, linger_s=linger_s)
        return store

    def close(self) -> None:
        if self._linger_s > 0:
            READ_ANCHORS.keep(self.path, self._linger_s)  # before ours closes: the anchor joins the open instance
        self._con.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cur(self) -> duckdb.DuckDBPyConnection:
        # A cursor per call: DuckDB connections are not safe to share between
        # threads, their cursors are.
        return self._con.cursor()

    def _one(self, sql: str, params: Any = None) -> tuple:
        """The row of a query that always returns exactly one (counts, maxima)."""
        return one_row(self._cur(), sql, params)

    # ------------------------------------------------------------ migrations
    @property
    def schema_version(self) -> int:
        # Read directly (a missing table is a new store): asking information_schema first cost ~15 ms of
        # every open on a large store, and the dashboard opens the store once per query.
        try:
            row = self._cur().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.CatalogException:
            return 0
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        current = self.schema_version
        if current > SCHEMA_VERSION:
            raise StoreError(f"store {self.path} has schema version {current}, newer than this code ({SCHEMA_VERSION})")
        for version in range(current, SCHEMA_VERSION):
            with self.transaction() as cur:
                cur.execute(MIGRATIONS[version])
                cur.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(version + 1)])

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All-or-nothing block: commits on success, rolls back on any error."""
        if self.read_only:
            raise StoreError(f"store {self.path} is open read-only")
        with self._write_lock:
            cur = self._cur()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")

    # -------------------------------------------------------------- catalogue
    def datasets(self) -> pd.DataFrame:
        return (
            self._cur()
            .execute("SELECT dataset_id, name, source, created_at, meta_json FROM datasets ORDER BY dataset_id")
            .df()
        )

    def dataset(self, name: str) -> DatasetInfo:
        row = self._cur().execute("SELECT dataset_id, name, source FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            known = ", ".join(self.datasets()["name"]) or "none"
            raise StoreError(f"no dataset named {name!r} in {self.path} (datasets: {known})")
        return DatasetInfo(*row)

    def dataset_meta(self, name: str) -> dict:
        row = self._cur().execute("SELECT meta_json FROM datasets WHERE name = ?", [name]).fetchone()
        return json.loads(row[0]) if row and row[0] else {}


# ------------------------------------------------------------------ helpers
# A writer that found the store held leaves this file next to it; readers that arrive while it is
# fresh wait for it to go (at most WRITE_INTENT_TTL_S) before they open.  DuckDB's file lock lets any
# number of readers share the file and a writer only when none is left, so without it a dashboard
# whose sessions keep opening the store for reads can starve a judge run's merges indefinitely.
WRITE_INTENT_TTL_S = 2.0


def write_intent_path(path: str) -> Path:
    return Path(path + ".write-wanted")


def _intent_is_fresh(path: str) -> bool:
    """Whether a writer has announced itself and is still trying (an older intent was left by one that gave up
    or died)."""
    try:
        age = time.time() - write_intent_path(path).stat().st_mtime
    except OSError:
        return False
    return age <= WRITE_INTENT_TTL_S


def _await_writer(path: str, wait_s: float) -> None:
    """Before a read: let a waiting writer go first (bounded by ``wait_s`` and the intent's freshness)."""
    deadline = time.monotonic() + min(wait_s, WRITE_INTENT_TTL_S)
    while _intent_is_fresh(path):
        READ_ANCHORS.drop(path)  # this process's lingering instance would keep the writer out
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


class ReadAnchors:
    """Read-only connections kept open a moment after a read, one per store file.

    DuckDB builds a database instance for every open of a file that no
    connection of the process holds (~11 ms, most of a small read), and
    joins the open instance otherwise (~0.3 ms).  A page run reads the store
    ten times or more in a burst; an anchor held until ``linger_s`` after
    the last read makes one open of the burst.  It keeps a writer out while
    it lives, so it goes at once when a writer of this process wants the
    file (:func:`_connect`) or one of another process has announced itself
    (:func:`_await_writer`), and ``linger_s`` after the last read otherwise.
    While it lives no other process can write, so the instance never shows
    data older than the file's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[duckdb.DuckDBPyConnection, float]] = {}
        self._writers: dict[str, int] = {}  # writers of this process trying to get in, per file
        self._wake = threading.Event()
        self._closer: threading.Thread | None = None

    @staticmethod
    def _key(path: str) -> str:
        return os.path.abspath(path)  # one file, however a caller spells it (DuckDB's own instances do the same)

    def keep(self, path: str, linger_s: float) -> None:
        """Hold ``path`` open until ``linger_s`` from now; called while a connection to it is still open."""
        deadline = time.monotonic() + linger_s
        if _intent_is_fresh(path):
            return  # another process's writer is waiting: no new anchor in its way
        path = self._key(path)
        with self._lock:
            if self._writers.get(path):
                return  # nor in the way of one of this process
            held = self._held.get(path)
            if held is not None:
                self._held[path] = (held[0], max(held[1], deadline))
                return
            try:
                anchor = duckdb.connect(path, read_only=True)  # joins the instance the caller still holds
            except duckdb.Error:
                return  # no anchor this time; the next read opens the file as before
            self._held[path] = (anchor, deadline)
            if self._closer is None:
                self._closer = threading.Thread(target=self._close_expired, name="store-read-anchors", daemon=True)
                self._closer.start()
        self._wake.set()

    @contextmanager
    def writer_waiting(self, path: str) -> Iterator[None]:
        """While a writer of this process tries to get in: the anchor goes, and no reader makes a new one."""
        key = self._key(path)
        with self._lock:
            self._writers[key] = self._writers.get(key, 0) + 1
        self.drop(path)
        try:
            yield
        finally:
            with self._lock:
                self._writers[key] -= 1
                if not self._writers[key]:
                    del self._writers[key]

    def drop(self, path: str) -> None:
        with self._lock:
            held = self._held.pop(self._key(path), None)
        if held is not None:
            held[0].close()

    def holds(self, path: str) -> bool:
        with self._lock:
            return self._key(path) in self._held

    def _close_expired(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                expired = [path for path, (_, deadline) in self._held.items() if deadline <= now]
                closing = [self._held.pop(path)[0] for path in expired]
                nearest = min((deadline for _, deadline in self._held.values()), default=None)
            for con in closing:
                con.close()
            self._wake.wait(None if nearest is None else max(0.0, nearest - time.monotonic()))
            self._wake.clear()


READ_ANCHORS = ReadAnchors()


def _connect(path: str, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """A connection, retrying a lock conflict with back-off (10 ms doubling to 250 ms) for ``wait_s``.

    A writer that meets a conflict announces itself (:data:`WRITE_INTENT_TTL_S`); a reader lets an
    announced writer go first.
    """
    if path == ":memory:":
        return duckdb.connect(path, read_only=read_only)
    if read_only:
        _await_writer(path, wait_s)
        return _connect_retrying(path, True, wait_s)
    with READ_ANCHORS.writer_waiting(path):  # our own lingering readers would make DuckDB refuse this writer
        return _connect_retrying(path, False, wait_s)


def _connect_retrying(path: str, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    start = time.monotonic()
    delay = 0.01
    intent = write_intent_path(path)
    announced = connected = False
    try:
        while True:
            try:
                con = duckdb.connect(path, read_only=read_only)
                connected = True
                return con
            except duckdb.Error as exc:
                waited = time.monotonic() - start
                # In one process DuckDB refuses a read-only and a read-write connection to the same file at
                # the same time ("different configuration"), and a second writer while one is connecting
                # ("Unique file handle conflict"): the dashboard persisting a result or storing a vote meets
                # its own sessions' reads and writes.  Each holds the file for one operation, so it is
                # waited out like a lock.
                same_process = "different configuration" in str(exc) or "Unique file handle conflict" in str(exc)
                lock = isinstance(exc, (duckdb.IOException, duckdb.ConnectionException)) and is_lock_conflict(exc)
                if not (lock or same_process):
                    raise StoreError(f"cannot open store {path}: {exc}") from None
                if not read_only:
                    with suppress(OSError):
                        intent.write_text(str(os.getpid()))  # (re)freshened at every attempt
                        announced = True
                if waited + delay > wait_s:
                    raise StoreLockedError(lock_message(path, exc, waited), holder=lock_holder(exc)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
    finally:
        # Kept after a failed attempt (the writer will be back within a second: the readers that
        # arrive meanwhile wait for it); removed once this writer is in.
        if announced and connected:
            with suppress(OSError):
                intent.unlink()


def one_row(cur: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> tuple:
    """The row of a query that always returns exactly one (counts, maxima)."""
    row = cur.execute(sql, params).fetchone()
    if row is None:
        raise StoreError(f"expected one row from: {sql.strip()[:80]}")
    return row


def next_id(cur: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    return int(one_row(cur, f"SELECT coalesce(max({column}), 0) + 1 FROM {table}")[0])


def bulk_insert(cur: duckdb.DuckDBPyConnection, table: str, df: pd.DataFrame) -> None:
    """INSERT every row of ``df`` into the columns of the same names."""
    if df.empty:
        return
    quoted = ", ".join(f'"{c}"' for c in df.columns)
    cur.complete()  # DuckDB refuses to register while a previous result is pending
    with registered(cur, "_frame", df):
        cur.execute(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM _frame")


@contextmanager
def registered(cur: duckdb.DuckDBPyConnection, name: str, data: Any) -> Iterator[None]:
    """``data`` (a DataFrame or Arrow table) visible to SQL as ``name`` inside the block.

    When the statement inside failed, DuckDB has aborted the transaction and
    refuses the unregister too; that second error must not hide the first
    (the rollback drops the registration anyway).
    """
    cur.register(name, data)
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):
            cur.unregister(name)
        raise
    cur.unregister(name)


def none_if_na(v: Any) -> Any:
    """A Python scalar for DuckDB: NaN/NA → None, numpy scalars → Python scalars."""
    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(v, np.generic):
        return v.item()
    return v


def json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
