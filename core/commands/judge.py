"""``python -m core judge``: run a judge headless (resumable; the same code as the Admin page)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from core.cli import UserError
from core.commands._common import open_store

if TYPE_CHECKING:
    from core.app.judging import RunStats


class EndpointError(UserError):
    exit_code = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge a dataset's battles through an OpenAI-compatible endpoint")
    p.add_argument("--db", required=True)
    p.add_argument("--config", required=True, help="judge TOML file (see README)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--limit", type=int, help="at most this many calls in this run")
    p.add_argument("--sample", choices=["all", "balanced"], default="all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--echo-intervention",
        type=int,
        metavar="N",
        help="instead: re-judge N battles with echo appended to either side (stored as variants)",
    )
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.judging import (
        ConfigError,
        EndpointUnreachable,
        PlanError,
        echo_intervention_results,
        load_toml,
        plan,
        plan_echo_intervention,
        run,
    )

    try:
        cfg = load_toml(args.config)
        cfg.api_key()  # a configured but unset key variable is a configuration error
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")
    store = open_store(args.db, read_only=False)
    try:
        try:
            if args.echo_intervention:
                units = plan_echo_intervention(store, args.dataset, cfg, args.echo_intervention, args.seed)
            else:
                units = plan(store, args.dataset, cfg, limit=args.limit, sample=args.sample, seed=args.seed)
        except (PlanError, StoreError) as exc:
            raise UserError(str(exc)) from None
        if not units:
            print(
                f"nothing to do: every battle of {args.dataset!r} is judged by {cfg.name} ({cfg.version})",
                file=sys.stderr,
            )
            return 0
        width = 30

        def bar(s: RunStats) -> None:
            frac = s.finished / max(s.planned, 1)
            eta = s.eta_seconds()
            sys.stderr.write(
                f"\r[{'#' * int(frac * width):<{width}}] {s.finished}/{s.planned} "
                f"{s.throughput():.1f}/s failed {s.failed} parse errors {s.parse_errors}"
                + (f" ETA {eta:.0f}s" if eta else "")
                + " "
            )
            sys.stderr.flush()

        try:
            run_id, stats = run(store, args.dataset, cfg, units, progress=bar)
        except EndpointUnreachable as exc:
            raise EndpointError(str(exc)) from None
        sys.stderr.write("\n")
        if args.echo_intervention:
            summary = echo_intervention_results(store, args.dataset, cfg.name)
            if summary is not None:
                print(summary.to_string(index=False))
        cost = cfg.cost(stats.prompt_tokens, stats.completion_tokens)
        print(
            f"run {run_id}: {stats.done} judged ({stats.parse_errors} unparseable, stored with their raw output), "
            f"{stats.failed} failed calls recorded, {stats.prompt_tokens + stats.completion_tokens:,} tokens"
            + (f" (${cost:,.4f})" if cost is not None else "")
            + f", status {stats.status}",
            file=sys.stderr,
        )
        return 0
    finally:
        store.close()
