"""``python -m core precompute``: compute every page's expensive results once and keep them in the store."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from core.cli import UserError, print_json
from core.commands._common import add_db_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "precompute",
        help="compute and persist the dashboard's results (leave-one-out tables, τ fits, am-ELO, …) for the data",
    )
    add_db_arg(p)
    p.add_argument("--dataset", help="only this dataset (default: all)")
    p.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority by N (the dashboard uses 10)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (default: the machine's cores, at most 2; 1 runs everything in this process)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.precompute import Progress, Stopped, default_workers
    from core.app.precompute import run as precompute

    if args.nice:
        os.nice(args.nice)

    def stop(signum: int, frame: object) -> None:
        # once: the workers are being stopped; a second signal must not interrupt that
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stopped(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def show(p: Progress) -> None:
        if not args.json and p.current:
            print(f"[{p.started_jobs}/{p.total}] {p.current}", file=sys.stderr, flush=True)

    try:
        if args.workers is not None and args.workers < 1:
            raise UserError(f"--workers must be at least 1, got {args.workers}")
        workers = default_workers() if args.workers is None else args.workers
        summary = precompute(args.db, args.dataset, on_progress=show, workers=workers)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    except Stopped as exc:
        print(f"stopped by signal {exc.signum}; the workers were stopped too", file=sys.stderr)
        return 128 + exc.signum
    if args.json:
        print_json(summary.__dict__)
    else:
        took = (summary.finished or summary.started) - summary.started
        print(
            f"{summary.total} results: {summary.computed} computed, {summary.already} already persisted, "
            f"{len(summary.failed)} failed, in {took:.1f} s"
        )
        for f in summary.failed:
            print(f"failed: {f}", file=sys.stderr)
    return 1 if summary.failed else 0
