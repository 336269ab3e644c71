"""Argument helpers shared by the command modules.

Kept light: the CLI imports every command module to build its parser, so
the use-case layer (pandas, DuckDB) is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

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
