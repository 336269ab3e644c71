"""Derived results computed once and kept in the store: a restarted server, a second app process and the CLI
read them instead of recomputing.

A result is keyed by the function that computed it and its arguments; it is
valid while the data it was computed from has the same stamp (the caller
passes the narrowest stamp that covers the inputs: one judge's judgments,
the votes, or the whole store) and the code has the same version
(``core.version.results_version``: the source of ``core`` and the numerical
libraries' versions, so an uncommitted edit is a new version).  Storing
is best effort: when the store is held by another writer for longer than
``WRITE_WAIT_S`` the result is simply not persisted this time.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from core import codec
from core.store import Store, StoreError, waits
from core.store.queries import VOTES_SEGMENT
from core.version import results_version

T = TypeVar("T")
WRITE_WAIT_S = waits.PERSIST.seconds
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stamps:
    """The store's data stamps (``Store.version_stamps``), composed per scope of a result."""

    base: str
    judges: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def of(cls, store: Store) -> Stamps:
        base, judges_ = store.version_stamps()
        return cls(base, judges_)

    def everything(self) -> str:
        """Results over every judge of a dataset (Overview, Judge bias, Judges & annotators)."""
        scoped = ";".join(f"{d}/{j}={v}" for (d, j), v in sorted(self.judges.items()))
        return f"{self.base}|{scoped}"

    def votes(self) -> str:
        """Results that read no judgment (human votes, models, battles)."""
        return self.base

    def judge(self, dataset: str, judge: str | None) -> str:
        """Results that read one judge's judgments on one dataset, and no other judge's."""
        stamp = self.judges.get((dataset, judge), "none") if judge else "no judge"
        return f"{self.base}|{judge}={stamp}"


@dataclass(frozen=True)
class Lookup:
    key: str
    kind: str  # module.function, for listings
    stamp: str
    code: str


# Keyword arguments that change how a result is reported, not what it is.
UNKEYED = frozenset({"progress"})


def lookup(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any], stamp: str) -> Lookup | None:
    """The persistence key of ``fn(store, *args, **kwargs)`` at data ``stamp``; None when it cannot be keyed."""
    kind = f"{fn.__module__}.{fn.__qualname__}"
    keyed = {k: v for k, v in sorted(kwargs.items()) if k not in UNKEYED}
    try:
        blob = codec.encode([kind, list(args), keyed])
    except codec.NotEncodable:
        return None
    digest = hashlib.sha256(blob).hexdigest()[:32]
    return Lookup(f"{kind}:{digest}", kind, stamp, f"{results_version()}/codec{codec.CODEC_VERSION}")


def load(store: Store, at: Lookup) -> tuple[bool, Any]:
    """(found, value) of a persisted result; a payload this code cannot decode counts as not found."""
    try:
        payload = store.get_result(at.key, at.stamp, at.code)
    except StoreError:
        return False, None
    if payload is None:
        return False, None
    return _decode(at, payload)


def _decode(at: Lookup, payload: bytes) -> tuple[bool, Any]:
    """(decoded, value): a payload this code cannot decode counts as not found."""
    try:
        return True, codec.decode(payload)
    except (ValueError, TypeError, KeyError, AttributeError, ImportError) as exc:
        log.warning("persisted result %s could not be decoded (%s); recomputing", at.kind, exc)
        return False, None


def save(
    path: str | Path, at: Lookup, value: Any, dataset: str | None, seconds: float, wait_s: float | None = None
) -> bool:
    """Persist ``value`` (a brief write, waiting at most ``wait_s``, default :data:`WRITE_WAIT_S`, for the
    store); False when it cannot be encoded or the store stays held."""
    return save_many(path, [(at, value, dataset, seconds)], WRITE_WAIT_S if wait_s is None else wait_s)


def save_many(path: str | Path, items: Sequence[tuple[Lookup, Any, str | None, float]], wait_s: float) -> bool:
    """Persist several results in one brief write: (lookup, value, dataset, seconds) each; False when the
    store stays held (nothing written) or a value cannot be encoded (the others are written)."""
    payloads = []
    for at, value, dataset, seconds in items:
        try:
            payloads.append((at, codec.encode(value), dataset, seconds))
        except codec.NotEncodable as exc:
            log.info("result %s is not persisted: %s", at.kind, exc)
    if not payloads:
        return not items
    try:
        with Store.open(path, read_only=False, wait_s=wait_s) as store:
            for at, payload, dataset, seconds in payloads:
                store.put_result(at.key, at.kind, dataset, at.stamp, at.code, payload, seconds)
    except StoreError as exc:
        log.info("%d results not persisted this time: %s", len(items), exc)
        return False
    return len(payloads) == len(items)


def persisted(
    path: str | Path,
    open_reader: Callable[[], Any],
    fn: Callable[..., T],
    args: tuple,
    stamp: str,
    *,
    dataset: str | None,
    wait_s: float = waits.PAGE.seconds,
    **kwargs: Any,
) -> T:
    """``fn(store, *args, **kwargs)``: read from the store's results when persisted at ``stamp``, else computed
    and persisted.

    The lookup holds the store through ``open_reader()`` (a context manager)
    for one query; the computation gets a store that is open only while each
    of its queries runs (:class:`~core.store.ondemand.OnDemandStore`), so a
    long fit never keeps an import or a judge run out.  Keyword arguments
    enter the key, except progress callbacks (:data:`UNKEYED`).
    """
    at = lookup(fn, args, kwargs, stamp)
    if at is not None:
        with open_reader() as store:
            found, value = load(store, at)
        if found:
            return value
    return _compute_and_save(path, at, fn, args, kwargs, dataset, wait_s)


def _compute_and_save(
    path: str | Path,
    at: Lookup | None,
    fn: Callable[..., T],
    args: tuple,
    kwargs: dict[str, Any],
    dataset: str | None,
    wait_s: float = waits.PAGE.seconds,
) -> T:
    """``fn`` on a store open only while each of its queries runs, persisted under ``at`` when keyed."""
    from core.store.ondemand import OnDemandStore

    start = time.perf_counter()
    value = fn(OnDemandStore(path, wait_s=wait_s), *args, **kwargs)
    if at is not None:
        save(path, at, value, dataset, time.perf_counter() - start)
    return value


def load_or_compute(store: Store, fn: Callable[..., T], args: tuple, stamp: str) -> T:
    """``fn(store, *args)`` from the persisted results when there, else computed with ``store`` (and not
    persisted: a page or the precompute persists it under its own key)."""
    at = lookup(fn, args, {}, stamp)
    if at is not None:
        found, value = load(store, at)
        if found:
            return value
    return fn(store, *args)


# ------------------------------------------------------------------ results that may lag the latest votes
def votes_behind(old: str, new: str) -> int | None:
    """How many votes data stamp ``new`` has beyond ``old`` when the two differ in their votes alone (0 when
    votes were only changed, not added); None when anything else differs (battles, models, judgments)."""

    def split(stamp: str) -> tuple[str, int] | None:
        head, sep, rest = stamp.partition(VOTES_SEGMENT)
        if not sep:
            return None
        votes, bar, tail = rest.partition("|")
        try:
            count = int(votes.split(":", 1)[0])
        except ValueError:
            return None
        return f"{head}{bar}{tail}", count

    a, b = split(old), split(new)
    if a is None or b is None or a[0] != b[0]:
        return None
    return max(b[1] - a[1], 0)


@dataclass(frozen=True)
class Lagged(Generic[T]):
    """A result and the data it was computed from: the current data, or the data before the newest votes
    while the current result is computed in the background (:func:`persisted_or_lagged`)."""

    value: T
    stamp: str  # the data stamp ``value`` was computed at
    current: bool  # computed from the data as it is now
    votes_behind: int = 0  # votes stored since (0 also when votes were only changed)


class BackgroundRefresh:
    """One worker thread per process that computes results pages showed from before the newest votes.

    A request names a result and the data stamp it should be computed at; a
    newer request for the same result replaces a pending older one (a voting
    round moves the stamp every second: only the latest matters).  Finished
    results are persisted and kept in memory for :func:`persisted_or_lagged`.
    """

    KEEP = 64  # finished results kept in memory
    # A voting round asks for a new table with every vote; one result is recomputed at most once per this
    # many seconds, or twice its last duration if longer, so refreshes take at most a third of a core from
    # the visitors' own page runs (and the thread runs at a lower CPU priority than they do).
    MIN_GAP_S = 10.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, tuple[str, Lookup, Callable[..., Any], tuple, dict, str | None]] = OrderedDict()
        self._running: set[tuple[str, str]] = set()
        self._done: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._next_start: dict[str, float] = {}  # result key → earliest start of its next computation
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def done(self, key: str, stamp: str) -> tuple[bool, Any]:
        with self._lock:
            if (key, stamp) in self._done:
                return True, self._done[(key, stamp)]
        return False, None

    def request(
        self, path: str | Path, at: Lookup, fn: Callable[..., Any], args: tuple, kwargs: dict, dataset: str | None
    ) -> None:
        with self._lock:
            if (at.key, at.stamp) in self._running or (at.key, at.stamp) in self._done:
                return
            self._pending[at.key] = (str(path), at, fn, args, kwargs, dataset)
            self._pending.move_to_end(at.key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="results-refresh", daemon=True)
                self._thread.start()
        self._wake.set()

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every request has finished within ``timeout_s`` (for tests and the CLI)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending and not self._running:
                    return True
            time.sleep(0.05)
        return False

    def _next(self) -> tuple[tuple | None, float]:
        """The first pending request whose result may start now, else (None, seconds until one may)."""
        now = time.monotonic()
        wait = 60.0
        with self._lock:
            for key, item in self._pending.items():
                ready = self._next_start.get(key, 0.0)
                if ready <= now:
                    del self._pending[key]
                    self._running.add((item[1].key, item[1].stamp))
                    return item, 0.0
                wait = min(wait, ready - now)
            self._wake.clear()  # under the lock: a request after this sets it again
        return None, wait

    def _work(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread's own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while True:
            item, wait = self._next()
            if item is None:
                if not self._wake.wait(timeout=wait) and wait >= 60.0:
                    with self._lock:  # idle for a minute: the thread ends, the next request starts another
                        if not self._pending:
                            self._thread = None
                            return
                continue
            path, at, fn, args, kwargs, dataset = item
            start = time.perf_counter()
            try:
                value = _compute_and_save(path, at, fn, args, kwargs, dataset)
                with self._lock:
                    self._done[(at.key, at.stamp)] = value
                    while len(self._done) > self.KEEP:
                        self._done.popitem(last=False)
            except Exception:  # a failed refresh leaves the older result shown; the next request retries
                log.exception("background refresh of %s failed", at.kind)
            finally:
                took = time.perf_counter() - start
                with self._lock:
                    self._running.discard((at.key, at.stamp))
                    self._next_start[at.key] = time.monotonic() + max(self.MIN_GAP_S, 2 * took) - took


REFRESH = BackgroundRefresh()


def persisted_or_lagged(
    path: str | Path,
    open_reader: Callable[[], Any],
    fn: Callable[..., T],
    args: tuple,
    stamp: str,
    *,
    dataset: str | None,
    refresh: BackgroundRefresh = REFRESH,
    **kwargs: Any,
) -> Lagged[T]:
    """Like :func:`persisted`, except that when the newest votes are all that changed since the result was
    last persisted, the earlier result is returned at once (``current=False``, its stamp and how many votes
    it lacks) and the current one is computed by ``refresh`` in the background.

    For results whose computation takes seconds (leave-one-model-out tables): during a voting round the
    data changes with every vote, and a page should not recompute them while its visitor waits.
    """
    at = lookup(fn, args, kwargs, stamp)
    if at is None:
        return Lagged(persisted(path, open_reader, fn, args, stamp, dataset=dataset, **kwargs), stamp, True)
    found, value = refresh.done(at.key, stamp)
    if found:
        return Lagged(value, stamp, True)
    with open_reader() as store:
        try:
            latest = store.get_result_any_stamp(at.key, at.code)
        except StoreError:
            latest = None
    if latest is not None:
        old_stamp, payload = latest
        behind = 0 if old_stamp == stamp else votes_behind(old_stamp, stamp)
        if behind is not None:
            decoded, old = _decode(at, payload)
            if decoded:
                if old_stamp != stamp:
                    keyed = {k: v for k, v in kwargs.items() if k not in UNKEYED}  # no page callback in the thread
                    refresh.request(path, at, fn, args, keyed, dataset)
                return Lagged(old, old_stamp, old_stamp == stamp, behind)
    return Lagged(_compute_and_save(path, at, fn, args, kwargs, dataset), stamp, True)
