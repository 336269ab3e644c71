"""Derived results computed once and kept in the store: a restarted server, a second app process and the CLI
read them instead of recomputing.

A result is keyed by the function that computed it and its arguments; it is
valid while the data it was computed from has the same stamp (the caller
passes the narrowest stamp that covers the inputs: one judge's judgments,
the votes, or the whole store) and the code has the same version.  Storing
is best effort: when the store is held by another writer for longer than
``WRITE_WAIT_S`` the result is simply not persisted this time.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from core import codec
from core.store import Store, StoreError
from core.version import code_version

T = TypeVar("T")
WRITE_WAIT_S = 1.0
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
    return Lookup(f"{kind}:{digest}", kind, stamp, f"{code_version()}/codec{codec.CODEC_VERSION}")


def load(store: Store, at: Lookup) -> tuple[bool, Any]:
    """(found, value) of a persisted result; a payload this code cannot decode counts as not found."""
    try:
        payload = store.get_result(at.key, at.stamp, at.code)
    except StoreError:
        return False, None
    if payload is None:
        return False, None
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
    try:
        payload = codec.encode(value)
    except codec.NotEncodable as exc:
        log.info("result %s is not persisted: %s", at.kind, exc)
        return False
    try:
        with Store.open(path, read_only=False, wait_s=WRITE_WAIT_S if wait_s is None else wait_s) as store:
            store.put_result(at.key, at.kind, dataset, at.stamp, at.code, payload, seconds)
    except StoreError as exc:
        log.info("result %s not persisted this time: %s", at.kind, exc)
        return False
    return True


def save_many(path: str | Path, items: Sequence[tuple[Lookup, Any, str | None, float]], wait_s: float) -> bool:
    """Persist several results in one brief write: (lookup, value, dataset, seconds) each; False when the
    store stays held (nothing written) or a value cannot be encoded (the others are written)."""
    payloads = []
    for at, value, dataset, seconds in items:
        try:
            payloads.append((at, codec.encode(value), dataset, seconds))
        except codec.NotEncodable as exc:
            log.info("result %s is not persisted: %s", at.kind, exc)
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
    wait_s: float = 5.0,
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
    from core.store.ondemand import OnDemandStore

    at = lookup(fn, args, kwargs, stamp)
    if at is not None:
        with open_reader() as store:
            found, value = load(store, at)
        if found:
            return value
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
