"""``python -m core``: every operation of the app, headless.

Each subcommand lives in ``core/commands/<name>.py`` and exposes
``register(subparsers)`` which adds its parser and sets ``func`` (a callable
taking the parsed namespace and returning an exit code).

Exit codes: 0 success, 2 invalid input or configuration, 3 endpoint
unreachable or refusing the run (judging), 75 a judge run that must be
resumed (the endpoint stayed down, or units were deferred), 130/143 stopped by
a signal, 1 unexpected failure.  Every message passes through
``core.redact`` first: a key or the admin token is never printed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from typing import Any

COMMAND_MODULES = [
    "simulate",
    "import_",
    "info",
    "export",
    "bt",
    "leaderboard",
    "heldout",
    "scope",
    "consistency",
    "bias",
    "agreement",
    "winrate",
    "mtbench",
    "judge",
    "runs",
    "generate",
    "place",
    "evaluate",
    "evaluations",
    "analyses",
    "report",
    "precompute",
    "diff",
]
# A command's module, where it is not the command's own name: ``python -m core CMD`` imports only that
# module (the others' imports cost ~35 ms of every command's start); --help and unknown names import all.
COMMAND_MODULE_OF = {
    "import": "import_",
    "alignment": "analyses",
    "aggregation": "analyses",
    "budget": "analyses",
    "languages": "analyses",
    "plan-battles": "place",
    "standing": "place",
    "judge-family": "bias",
}


class UserError(Exception):
    """Bad input or configuration: reported on stderr with exit code 2."""

    exit_code = 2


def print_json(obj: Any) -> None:
    # One write: json.dump writes each token, a system call apiece when stdout is unbuffered.
    sys.stdout.write(json.dumps(obj, indent=2, allow_nan=False, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def clean_json(obj: Any) -> Any:
    """Replace NaN/inf floats by None so the output is strict JSON."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return clean_json(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` only when it names one."""
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    module = COMMAND_MODULE_OF.get(command or "", command)
    for name in [module] if module in COMMAND_MODULES else COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"core.commands.{name}")
        except ModuleNotFoundError as exc:  # command not built yet
            if exc.name == f"core.commands.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def _redacting_hooks() -> None:
    """Tracebacks (of this thread or any other) and warnings through the redaction step too: a worker's output
    goes to a log file, and an uncaught error's message may quote an endpoint's answer, which may echo the key."""
    import threading
    import traceback
    import warnings

    from core.redact import redact

    def excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
        sys.stderr.write(redact("".join(traceback.format_exception(exc_type, exc, tb))))

    def thread_excepthook(hook: Any) -> None:
        if hook.exc_type is not SystemExit:
            excepthook(hook.exc_type, hook.exc_value, hook.exc_traceback)

    def showwarning(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        with contextlib.suppress(OSError, ValueError):
            (file or sys.stderr).write(redact(warnings.formatwarning(message, category, filename, lineno, line)))

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    warnings.showwarning = showwarning


def main(argv: list[str] | None = None, *, process_exit: bool = False) -> int:
    """Run a command; its exit code.  ``process_exit`` (``python -m core``): the process ends here through
    :func:`_end_process`, once the command's own threads and exit handlers are done."""
    if process_exit:
        _redacting_hooks()
    code = _run_command(sys.argv[1:] if argv is None else argv)
    if process_exit:
        _end_process(code)
    return code


def _run_command(given: list[str]) -> int:
    from core.redact import redact

    parser = build_parser(given[0] if given else None)
    args = parser.parse_args(given)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(redact(f"error: {exc}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error of ours.  Point stdout
        # at /dev/null so the final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception:
        import traceback

        print(redact(traceback.format_exc()), file=sys.stderr, end="")
        return 1


def _end_process(code: int) -> None:
    """End ``python -m core`` with ``code`` once everything of ours is finished: the command's non-daemon
    threads joined, ``atexit`` handlers run, output flushed.  What is skipped is the C runtime's teardown of
    static objects: there the native thread pools of pyarrow (``pd.read_parquet``) and DuckDB can be destroyed
    while a worker is still joinable, and the process then aborts with "terminate called without an active
    exception" (exit -6) after the command has succeeded or refused its input (apache/arrow#34314); under load
    that happened about once in 40 runs of a refused bundle import.  It also saves the ~20 ms of module
    teardown (numpy, DuckDB) that every whole-process time would pay."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
