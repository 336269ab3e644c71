"""Argument helpers shared by the command modules.

Kept light: the CLI imports every command module to build its parser, so
the use-case layer (pandas, DuckDB) is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, TextIO, TypeVar

from core.app import waits
from core.cli import UserError
from core.datahome import DEFAULT_DB

if TYPE_CHECKING:
    from core.app import Store, Unavailable

T = TypeVar("T")


def add_db_arg(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--db",
        default=None if required else str(DEFAULT_DB),
        required=required,
        help=f"DuckDB store file (default {DEFAULT_DB})",
    )


STORE_WAIT_S = waits.COMMAND.seconds  # a command waits this long for a store another process holds


def open_store(path: str, read_only: bool = True) -> Store:
    """Open a store, turning store errors into clean CLI errors (exit 2)."""
    from core.app import StoreError
    from core.app.data import open_store as open_

    try:
        return open_(path, read_only=read_only, wait_s=STORE_WAIT_S)
    except StoreError as exc:
        raise UserError(str(exc)) from None


def required(result: T | Unavailable) -> T:
    """The result, or exit 2 with the reason it is unavailable."""
    from core.app import Unavailable

    if isinstance(result, Unavailable):
        raise UserError(result.reason)
    return result


EXIT_RESUME = 75  # EX_TEMPFAIL: the job stopped before its end; the same command resumes it


@dataclass
class Stop:
    """Set by SIGTERM or SIGINT: the job finishes the calls in flight, keeps them and exits."""

    event: threading.Event = field(default_factory=threading.Event)
    signals: list[int] = field(default_factory=list)


@contextmanager
def stop_on_signals() -> Iterator[Stop]:
    """SIGTERM and SIGINT set a :class:`Stop` instead of killing the process, for the duration of the block.

    Entered before the heavy imports: a SIGTERM that arrives while they load (the Admin page's Cancel
    right after Start) still stops the job cleanly."""
    stop = Stop()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.signals.append(signum)
        stop.event.set()

    previous: dict[int, Callable | int | None] = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


PROGRESS_EVERY_S = 5.0  # a log file or pipe gets at most one progress line this often


class ProgressLine:
    """A command's progress on stderr: a live line redrawn in place on a terminal; elsewhere (a worker's log, a
    pipe) whole lines, at most one per ``every_s``, and the latest one at :meth:`close`.

    A carriage return means nothing to a file: redrawing there made one line of every update (tens of KB in a
    long run's log, which the Admin page shows)."""

    def __init__(self, stream: TextIO | None = None, every_s: float = PROGRESS_EVERY_S, tty: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.every_s = every_s
        self._last = -float("inf")
        self._pending: str | None = None
        self._drawn = False

    def __call__(self, text: str) -> None:
        from core.redact import redact

        text = redact(text.strip())
        if self.tty:
            self.stream.write(f"\r{text} ")
            self._drawn = True
        else:
            now = time.monotonic()
            if now - self._last < self.every_s:
                self._pending = text
                return
            self._last, self._pending = now, None
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the display: the live line's newline, or the last update a file has not had."""
        if self.tty and self._drawn:
            self.stream.write("\n")
        elif self._pending is not None:
            self.stream.write(self._pending + "\n")
        self._drawn, self._pending = False, None
        self.stream.flush()
