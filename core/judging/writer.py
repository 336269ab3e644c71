"""The run's only database writer: finished judgments committed in groups to the run's ledger."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from core.judging.units import RunStats


class RunLedger(Protocol):
    """Where a run's finished calls and counters go (``core.store.Store`` and ``core.store.RunJournal``)."""

    def record_judgments(self, rows: list[dict], run_progress: tuple[int, dict] | None = None) -> int: ...


@runtime_checkable
class ArrivalLedger(RunLedger, Protocol):
    """A ledger that keeps each row the moment its call returns (``core.store.RunJournal``): the runner appends
    there first, and the writer only paces the counters and the progress callback."""

    def append(self, rows: list[dict]) -> None: ...


class _Writer(threading.Thread):
    """The run's only writer: drains finished judgments and commits them in groups.

    A DuckDB commit costs ~15 ms of CPU for one row or a hundred, so rows are
    committed together once ``batch_rows`` are waiting or ``window_s`` after
    the first one arrived, whichever comes first; the event loop never waits
    for the database.  The writer sleeps between polls instead of waking for
    every row (a wake-up per row costs the event loop the GIL each time).
    With an :class:`ArrivalLedger` the rows were kept on arrival and the
    writer commits only the counters (``kept_on_arrival``); with a store as
    the ledger (the in-process ``run``) a row lost to a kill before its
    commit is planned again by the next run.
    """

    def __init__(
        self,
        ledger: RunLedger,
        run_id: int,
        stats: RunStats,
        progress: Callable[[RunStats], None] | None,
        batch_rows: int = 64,
        window_s: float = 1.0,
        poll_s: float = 0.02,
        kept_on_arrival: bool = False,
    ):
        super().__init__(name=f"judge-writer-{run_id}", daemon=True)
        self.ledger, self.run_id, self.stats, self.progress = ledger, run_id, stats, progress
        self.batch_rows, self.window_s, self.poll_s = batch_rows, window_s, poll_s
        self.kept_on_arrival = kept_on_arrival
        self.queue: queue.Queue = queue.Queue()
        self.closing = threading.Event()
        self.error: BaseException | None = None
        self.commits = 0
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """No more rows: commit what is queued and stop."""
        self.closing.set()
        self.queue.put(None)

    def _gather(self) -> tuple[list[dict], bool]:
        try:
            batch = [self.queue.get(timeout=self.window_s)]  # sleeps until there is work
        except queue.Empty:  # nothing finished (an outage, slow calls): still a heartbeat
            return [], False
        deadline = time.monotonic() + self.window_s
        while (
            batch[0] is not None
            and not self.closing.is_set()
            and self.queue.qsize() + 1 < self.batch_rows
            and time.monotonic() < deadline
        ):
            time.sleep(self.poll_s)
        while batch[-1] is not None:
            try:
                batch.append(self.queue.get_nowait())
            except queue.Empty:
                break
        stop = batch[-1] is None
        return [r for r in batch if r is not None], stop

    def run(self) -> None:
        while True:
            rows, stop = self._gather()
            now = time.monotonic()
            progress = None
            if now - self._last_flush > 1.0:  # the run list's counters, in the same commit
                self._last_flush = now
                progress = (self.run_id, {**self.stats.counters(), "status": self.stats.status})
            try:
                todo = [] if self.kept_on_arrival else rows
                if todo or progress is not None:
                    self.ledger.record_judgments(todo, run_progress=progress)
            except BaseException as exc:
                self.error = exc
                return
            self.commits += bool(rows)
            if rows and self.progress:
                self.progress(self.stats)
            if stop:
                return
