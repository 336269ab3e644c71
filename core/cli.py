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
    "judge",
    "runs",
    "generate",
    "place",
    "evaluate",
    "evaluations",
    "analyses",
    "report",
    "precompute",
]


class UserError(Exception):
    """Bad input or configuration: reported on stderr with exit code 2."""

    exit_code = 2


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, allow_nan=False, default=_json_default)
    sys.stdout.write("\n")


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"core.commands.{name}")
        except ModuleNotFoundError as exc:  # command not built yet
            if exc.name == f"core.commands.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from core.redact import redact

    parser = build_parser()
    args = parser.parse_args(argv)
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
        # at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception:
        import traceback

        print(redact(traceback.format_exc()), file=sys.stderr, end="")
        return 1
