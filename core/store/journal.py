"""The durable path of paid work: each finished call goes to an append-only journal as it arrives, the store
when it is free.

The store is shared (the dashboard reads it, the CLI imports into it), and
DuckDB lets one process write it only while nobody else has it open.  A run
therefore never waits for the store to keep what it has paid for: each
answer is appended to its journal the moment its call returns (judge runs:
``<store>.runs/run-<id>.jsonl``; ``generate``: ``<store>.runs/gen-<pid>-….jsonl``),
written straight to the operating system, so a SIGKILL loses only the calls
still in flight, and ``fsync``'d every few rows and every second (a power
loss).  A merger thread moves the journal into the store by a brief open
whenever the store's lock is free (about once a second).  A merge is
idempotent (the judgments' and the generations' unique keys), so merging a
journal twice, or a journal whose run was killed mid-merge, stores every row
exactly once.  A journal is deleted only after its last merge;
:func:`reconcile` merges the journals of judge runs whose lease has expired
(the owner process is gone, whether the run was running or paused) and
settles those runs, :func:`reconcile_generations` those of ``generate`` runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from core import redact
from core.store.errors import StoreLockedError

HEARTBEAT_S = 1.0  # a live run touches its journal (and tries a merge) this often
# A run of another host (whose process cannot be seen) whose journal and heartbeat are older than this has let
# go of its lease.  One value for taking its journal and for refusing a second run: a stalled run is never
# taken while it would still be refused (it touches its journal every second).
STALE_S = 60.0


def runs_dir(db_path: str | Path) -> Path:
    """The directory of a store's run journals and worker logs: ``<store file>.runs``."""
    p = Path(db_path)
    return p.with_name(p.name + ".runs")


def journal_path(db_path: str | Path, run_id: int) -> Path:
    return runs_dir(db_path) / f"run-{run_id}.jsonl"


def this_host() -> str:
    return socket.gethostname()


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22); None where there
    is no /proc.  With the pid it names one process: a pid the system reuses later has another start."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    return None


def process_alive(pid: int | None, host: str | None, start: int | None = None) -> bool | None:
    """Whether the owner process exists: True/False on this host, None when it ran elsewhere (unknown).

    ``start``: the owner's start time (:func:`process_start`) when its lease was taken; a process with that pid
    but another start time is not the owner."""
    if pid is None:
        return False
    if host is not None and host != this_host():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not alive for our purposes.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
        if stat[stat.rindex(")") + 2 :].startswith("Z"):
            return False
    if start is not None:
        now = process_start(int(pid))
        if now is not None and now != int(start):
            return False
    return True


def lease_alive(pid: Any, host: Any, start: Any, seconds_since_heartbeat: Any, stale_s: float = STALE_S) -> bool:
    """Whether a run's lease is held: its owner process is alive on this host, or (a run of another host, where
    the process cannot be seen) its heartbeat is younger than ``stale_s``."""

    def given(x: Any) -> bool:
        return _given(x)

    alive = process_alive(
        int(pid) if given(pid) else None, str(host) if given(host) else None, int(start) if given(start) else None
    )
    if alive is None:
        return given(seconds_since_heartbeat) and float(seconds_since_heartbeat) < stale_s
    return alive


def _read_rows(path: Path, offset: int) -> tuple[list[dict], dict | None, int]:
    """Judgments and the last run update (a ``{"_run": {...}}`` line) from ``offset`` on.

    Only complete lines count: a line cut by a kill was never acknowledged.
    """
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    end = data.rfind(b"\n") + 1
    rows, run = [], None
    for line in data[:end].splitlines():
        if line.strip():
            obj = json.loads(line)
            if "_run" in obj:
                run = obj["_run"]
            elif "_gen" not in obj:  # a generation journal's header names its owner, it is no row
                rows.append(obj)
    return rows, run, offset + end


FSYNC_ROWS = 16  # rows appended between two fsyncs: a power loss costs at most these (a kill costs none)


class Journal:
    """An append-only journal of paid work, moved into the store by a merger thread whenever the store is free.

    :meth:`append` writes each finished call's row the moment it arrives, straight to the operating system
    (an unbuffered append of whole lines), so a killed process loses nothing it was answered.  The merger
    thread ``fsync``s once ``FSYNC_ROWS`` rows wait and at every tick, which bounds what a power loss can
    take without putting an fsync on the caller's event loop; about every ``merge_every_s`` it moves the new
    complete lines into the store (an idempotent merge, subclasses say how) and touches the file as the
    owner's heartbeat.  ``open_store(wait_s)`` returns a writable store (a context manager) and raises
    :class:`StoreLockedError` when the store is held; the rows then wait in the journal for the next merge,
    or for :func:`reconcile` / :func:`reconcile_generations` after a kill.
    """

    def __init__(
        self, path: Path, open_store: Any, merge_every_s: float = HEARTBEAT_S, header: dict | None = None
    ) -> None:
        self.path, self.open_store = path, open_store
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # O_APPEND and no user-space buffer: one os.write per batch of lines, visible to a reader at once and
        # kept by the kernel whatever happens to this process.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._merged = 0  # bytes of the journal already in the store
        self._unsynced = 0
        self.merge_every_s = merge_every_s
        self._progress: dict | None = None
        self._write_lock = threading.Lock()  # the event loop appends while the merger syncs
        self._lock = threading.Lock()  # one merge at a time (the merger thread, then close)
        self._stop = threading.Event()
        self._sync_wanted = threading.Event()
        if header is not None:  # what it names (a system prompt) passes the same redaction as the rows
            self._write([redact.redact_value(header)], sync=True)
        self._merger = threading.Thread(target=self._merge_loop, name=f"journal-merger-{path.stem}", daemon=True)
        self._merger.start()

    def append(self, rows: list[dict]) -> None:
        """Keep finished calls now: redacted (the journal is a file next to the store), written, fsync'd in groups."""
        if not rows:
            return
        secrets = redact.secrets()
        self._write([{k: redact.redact(v, secrets) for k, v in r.items()} for r in rows])

    def _write(self, objs: list[dict], sync: bool = False) -> None:
        payload = b"".join(json.dumps(o, default=_json_default).encode() + b"\n" for o in objs)
        with self._write_lock:
            os.write(self._fd, payload)
            self._unsynced += len(objs)
            if sync:
                self._sync_locked()
            elif self._unsynced >= FSYNC_ROWS:
                self._sync_wanted.set()  # the merger thread syncs: an fsync would stall the caller's event loop

    def _sync_locked(self) -> None:
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = 0

    def sync(self) -> None:
        with self._write_lock:
            self._sync_locked()

    def _merge_loop(self) -> None:
        next_merge = time.monotonic() + self.merge_every_s
        while not self._stop.is_set():
            self._sync_wanted.wait(max(0.0, next_merge - time.monotonic()))
            self._sync_wanted.clear()
            with contextlib.suppress(OSError):
                self.sync()
            if self._stop.is_set() or time.monotonic() < next_merge:
                continue
            with contextlib.suppress(OSError):
                os.utime(self.path)  # the heartbeat: a live run's journal is never older than a second
            with contextlib.suppress(Exception):  # a failed merge is retried; the rows are safe in the journal
                self.merge()
            next_merge = time.monotonic() + self.merge_every_s

    def _store_rows(self, store: Any, rows: list[dict], fields: dict) -> None:
        raise NotImplementedError

    def merge(self, wait_s: float = 0.0, final: dict | None = None) -> bool:
        """Move journaled rows (and the run's counters, or ``final`` fields) into the store; False when held."""
        with self._lock:
            rows, _, end = _read_rows(self.path, self._merged)
            fields = dict(self._progress or {})
            fields.update(final or {})
            try:
                with self.open_store(wait_s) as store:
                    self._store_rows(store, rows, fields)
            except StoreLockedError:
                return False
            self._merged = end
            return True

    def close(self, wait_s: float, final: dict) -> bool:
        """The last merge with the run's final fields; the journal is deleted once it is all in the store.

        The final fields are journaled first, so a run whose store stayed held
        still ends with its own status when :func:`reconcile` merges it later.
        """
        self._stop.set()
        self._sync_wanted.set()
        self._merger.join()
        self._write([{"_run": final}], sync=True)
        merged = self.merge(wait_s, final)
        os.close(self._fd)
        if merged:
            self.path.unlink(missing_ok=True)
        return merged


class RunJournal(Journal):
    """The ledger of one judge run (``core.judging.runner.RunLedger``): journal first, store when free.

    The runner appends each judgment as its call returns (:meth:`Journal.append`); ``record_judgments`` takes
    the run's counters (and rows of a caller that did not append them), so the run's writer is never held up
    by the store.
    """

    def __init__(self, db_path: str | Path, run_id: int, open_store: Any, merge_every_s: float = HEARTBEAT_S):
        self.db_path, self.run_id = str(db_path), run_id
        super().__init__(journal_path(db_path, run_id), open_store, merge_every_s)

    # -- RunLedger
    def record_judgments(self, rows: list[dict], run_progress: tuple[int, dict] | None = None) -> int:
        if rows:
            self.append(rows)
            self.sync()
        if run_progress is not None:
            self._progress = run_progress[1]
        return len(rows)

    def _store_rows(self, store: Any, rows: list[dict], fields: dict) -> None:
        store.record_judgments(rows, run_progress=(self.run_id, {**fields, "heartbeat": True}))


def generation_journal_path(db_path: str | Path) -> Path:
    """A new generation journal's file: the owner's pid and start time name it (one per process)."""
    pid = os.getpid()
    return runs_dir(db_path) / f"gen-{pid}-{process_start(pid) or 0}-{time.time_ns()}.jsonl"


class GenerationJournal(Journal):
    """The answers of one ``generate`` run, journaled on arrival like a judge run's judgments.

    Its first line names the owner (pid, host, start time) and what the answers are of (dataset, model,
    settings): :func:`reconcile_generations` merges the journal of an owner that is gone, so the next run
    plans only what is missing.  The store's key (prompt, model, settings) makes every merge idempotent.
    """

    def __init__(
        self,
        db_path: str | Path,
        open_store: Any,
        dataset: str,
        model: str,
        settings_key: str,
        settings: dict,
        merge_every_s: float = HEARTBEAT_S,
    ):
        self.target = {"dataset": dataset, "model": model, "settings_key": settings_key, "settings": settings}
        pid = os.getpid()
        owner = {"pid": pid, "host": this_host(), "start": process_start(pid)}
        super().__init__(
            generation_journal_path(db_path), open_store, merge_every_s, header={"_gen": {**self.target, **owner}}
        )

    def _store_rows(self, store: Any, rows: list[dict], fields: dict) -> None:
        _merge_generations(store, self.target, rows)


def _merge_generations(store: Any, target: dict, rows: list[dict]) -> None:
    if rows:
        store.record_generations(target["dataset"], target["model"], target["settings_key"], target["settings"], rows)


def pending_generation_journals(db_path: str | Path) -> list[Path]:
    d = runs_dir(db_path)
    return sorted(d.glob("gen-*.jsonl")) if d.is_dir() else []


def reconcile_generations(store: Any, db_path: str | Path) -> int:
    """Merge the generation journals whose owner is gone (killed, or ended while the store was held) and delete
    them; returns the answers merged.  A live owner's journal is left to its own merger."""
    merged = 0
    for f in pending_generation_journals(db_path):
        try:
            with open(f, "rb") as fh:
                head = json.loads(fh.readline() or b"{}").get("_gen")
        except (OSError, ValueError):
            head = None
        if head is None:  # cut before its header was written: no answer can follow it
            with contextlib.suppress(OSError):
                if time.time() - f.stat().st_mtime > STALE_S:
                    f.unlink(missing_ok=True)
            continue
        alive = lease_alive(head.get("pid"), head.get("host"), head.get("start"), _journal_age(f, None))
        if alive:
            continue
        rows, _, _ = _read_rows(f, 0)
        _merge_generations(store, head, rows)
        merged += len(rows)
        f.unlink(missing_ok=True)
    return merged


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def pending_journals(db_path: str | Path) -> dict[int, Path]:
    """Run id → journal file, for every journal next to the store."""
    d = runs_dir(db_path)
    out = {}
    if d.is_dir():
        for f in d.glob("run-*.jsonl"):
            with contextlib.suppress(ValueError):
                out[int(f.stem.split("-", 1)[1])] = f
    return out


def reconcile(store: Any, db_path: str | Path) -> list[int]:
    """Merge the journals of runs whose lease has expired and settle those runs; returns the ids marked
    ``interrupted``.

    A run's lease covers it while it is running *or paused* (waiting out an outage with its journal open): it
    is held while the owner process (pid and start time) exists on this host, or, for a run of another host,
    while its heartbeat is younger than ``STALE_S``.  Only an expired lease's journal is merged and deleted.
    A run that ended (its final fields are the journal's last line) gets them; one that was running is
    ``interrupted``; one that was paused stays ``paused`` (the outage outlived its process; resumable).
    """
    journals = pending_journals(db_path)
    leases = store.leased_runs(also=list(journals))
    rows = {int(r.run_id): r for r in leases.itertuples()}
    interrupted = []
    for run_id in sorted(set(journals) | set(rows)):
        r = rows.get(run_id)
        f = journals.get(run_id)
        if r is not None:
            alive = lease_alive(r.owner_pid, r.owner_host, r.owner_start, _journal_age(f, r.seconds_since_heartbeat))
        else:  # a journal whose run row is gone: nobody can own it
            alive = False
        if alive:
            continue
        final = None
        if f is not None:
            rows_, final, _ = _read_rows(f, 0)
            store.record_judgments(rows_)
        # a run that ended (finished_at set) wrote its own status and message; only its journal is merged
        status = None if r is None or _given(r.finished_at) else str(r.status)
        settle = final is not None or status == "running" or (status == "paused" and f is not None)
        if r is not None and settle:
            if final is not None:  # the run ended, only its last merge waited for the store
                store.update_run(run_id, **final)
            elif status == "paused":
                store.update_run(
                    run_id,
                    **store.run_counts(run_id),
                    status="paused",
                    message="the run's process ended while the endpoint was down; run the same command to resume",
                )
            else:
                store.update_run(
                    run_id,
                    **store.run_counts(run_id),
                    status="interrupted",
                    message="the run's process ended before it finished; run the same command again to resume",
                )
                interrupted.append(run_id)
        if f is not None:
            f.unlink(missing_ok=True)
    return interrupted


def _given(x: Any) -> bool:
    """A value a row has: not None, NaN, NaT or pandas' NA (a column whose every value is missing)."""
    if x is None:
        return False
    try:
        return bool(x == x)
    except TypeError:  # pd.NA compares to NA, which has no truth value
        return False


def _journal_age(f: Path | None, seconds_since_heartbeat: Any) -> float | None:
    """Seconds since the run's last sign of life: its journal's touch (every second) or the stored heartbeat."""
    ages = []
    if f is not None:
        with contextlib.suppress(OSError):
            ages.append(time.time() - f.stat().st_mtime)
    if seconds_since_heartbeat is not None and seconds_since_heartbeat == seconds_since_heartbeat:
        ages.append(float(seconds_since_heartbeat))
    return min(ages) if ages else None


__all__ = [
    "FSYNC_ROWS",
    "GenerationJournal",
    "Journal",
    "RunJournal",
    "lease_alive",
    "pending_generation_journals",
    "pending_journals",
    "process_alive",
    "process_start",
    "reconcile",
    "reconcile_generations",
    "runs_dir",
    "this_host",
]
