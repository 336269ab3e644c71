"""``serve.py`` with the two heaviest page results made slow by a fixed delay on every computation (a read of a
kept result is not delayed): the leave-one-model-out table and the bias diagnostics.

For tests of what a visitor sees while a page waits on a long computation: how long the real ones take depends
on the machine (a fast one finishes the demo's in about a second), so the test starts this launcher to know
which computations are long, and when.  ``ARENA_SLOW_RESULT_S`` sets the delay (default 3 s);
``ARENA_SLOW_LOG``, when set, is a file each delayed computation appends ``name start end thread`` to
(wall-clock seconds, and the thread it ran on: a page's script thread, or the background refresh whose page
did not wait for it), once it has finished.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _slowed(fn: Callable[..., Any], name: str, delay_s: float, log: str | None) -> Callable[..., Any]:
    @functools.wraps(fn)  # same module and name: the same declared result and persisted key
    def slow(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        time.sleep(delay_s)  # the injected slow computation
        try:
            return fn(*args, **kwargs)
        finally:
            if log:
                with open(log, "a") as f:
                    f.write(f"{name} {start} {time.time()} {threading.current_thread().name}\n")

    return slow


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from core.app import bias, results
    from core.app import leaderboard as lb

    delay_s = float(os.environ.get("ARENA_SLOW_RESULT_S", "3"))
    log = os.environ.get("ARENA_SLOW_LOG")
    for module, attr in ((lb, "heldout_of"), (bias, "bias_report")):
        declared = results.of(getattr(module, attr))
        slowed = _slowed(declared.fn, declared.name, delay_s, log)
        # where the pages find it: the registry (by name) and the module (the Leaderboard's lagged read)
        results.RESULTS[declared.name] = dataclasses.replace(declared, fn=slowed)
        setattr(module, attr, slowed)
    runpy.run_path(str(ROOT / "serve.py"), run_name="__main__")


if __name__ == "__main__":
    main()
