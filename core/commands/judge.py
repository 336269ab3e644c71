"""``python -m core judge``: run a judge headless (resumable; the same code as the Admin page's worker).

The store is held only for planning, for each merge of the run's journal and
for the final status, so the dashboard keeps reading it during a run.  Exit
codes: 0 done (or nothing to do, or stopped by the budget); 75 resumable (the
endpoint stayed down past ``max_outage_s``, units were deferred after
transient errors, or the store stayed held at the end: the judgments are safe
in the journal); 3 the endpoint is unreachable or refuses the run; 143/130
stopped by SIGTERM/SIGINT (what finished is kept; run again to resume).
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, TextIO

from core.cli import UserError
from core.commands._common import EXIT_RESUME, ProgressLine, stop_on_signals

if TYPE_CHECKING:
    from core.app.judging import RunStats


class EndpointError(UserError):
    exit_code = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge a dataset's battles through an OpenAI-compatible endpoint")
    p.add_argument("--db", required=True)
    p.add_argument("--config", help="judge TOML file (see README); not with --resume")
    p.add_argument("--dataset", help="the dataset to judge; not with --resume")
    p.add_argument(
        "--limit",
        type=int,
        help="the run covers this many units (battle × order), the first in a fixed order (or of the balanced "
        "sample); the same command run again completes exactly that set, never more",
    )
    p.add_argument(
        "--repeats",
        type=int,
        metavar="K",
        help="instead: judge variance: re-judge a seeded sample K more times (see --repeat-sample)",
    )
    p.add_argument("--repeat-sample", type=int, default=50, metavar="N", help="battles re-judged by --repeats")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="only print what the run would cost (calls, tokens, USD at the configured prices); call nothing",
    )
    p.add_argument(
        "--resume",
        type=int,
        metavar="RUN_ID",
        help="complete an earlier run: its stored configuration and definition (the key variable must be set)",
    )
    p.add_argument("--sample", choices=["all", "balanced"], default="all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="also retry the calls the endpoint refused with a 4xx (stored as failed calls); a success replaces them",
    )
    p.add_argument(
        "--replace-judge",
        action="store_true",
        help="let this configuration replace an existing judge's of the same name (another model, template, "
        "prompt version or sampling); without it such a run is refused",
    )
    p.add_argument(
        "--echo-intervention",
        type=int,
        metavar="N",
        help="instead: re-judge N battles with echo appended to either side (stored as variants)",
    )
    p.set_defaults(func=run_command)


def _print(*parts: object, file: TextIO | None = None) -> None:
    """``print`` through the redaction step: a summary quotes the endpoint's last message, which may echo the key."""
    from core.redact import redact

    print(*(redact(str(p)) for p in parts), file=file or sys.stdout)


def run_command(args: argparse.Namespace) -> int:
    with stop_on_signals() as stop:
        return _run(args, stop.event, stop.signals)


def _run(args: argparse.Namespace, cancel: threading.Event, received: list[int]) -> int:
    from core.app import StoreError
    from core.app.judging import (
        ConfigError,
        EndpointRefused,
        EndpointUnreachable,
        PlanError,
        echo_intervention_results,
        judge_variance_of,
        load_toml,
        run_definition,
        run_shared,
    )
    from core.commands._common import open_store

    if args.resume is not None:
        if args.config or args.dataset or args.limit or args.echo_intervention or args.retry_failed:
            raise UserError("--resume takes the run's own configuration and definition: drop the other options")
        with open_store(args.db) as store:
            try:
                cfg, definition = run_definition(store, args.resume)
            except (PlanError, StoreError) as exc:
                raise UserError(str(exc)) from None
        if "echo_intervention" in definition:
            args.echo_intervention = definition["echo_intervention"]
        if "repeats" in definition:
            args.repeats, args.repeat_sample = definition["repeats"], definition["sample"]
        args.dataset, args.limit = definition["dataset"], definition.get("limit")
        args.sample, args.seed = definition.get("sample", "all"), definition.get("seed", 0)
        args.retry_failed = bool(definition.get("retry_failed"))
        battle_ids = set(definition["battle_ids"]) if definition.get("battle_ids") is not None else None
        try:
            cfg.api_key()
        except ConfigError as exc:
            raise UserError(str(exc)) from None
    else:
        battle_ids = None
        if not args.config or not args.dataset:
            raise UserError("judge needs --config and --dataset (or --resume RUN_ID)")
        try:
            cfg = load_toml(args.config)
            cfg.api_key()  # a configured but unset key variable is a configuration error
        except ConfigError as exc:
            raise UserError(str(exc)) from None
    if args.limit is not None and args.limit < 1:
        raise UserError("--limit must be at least 1")
    width = 30
    line = ProgressLine()

    def bar(s: RunStats) -> None:
        frac = s.finished / max(s.planned, 1)
        eta = s.eta_seconds()
        line(
            f"[{'#' * int(frac * width):<{width}}] {s.finished}/{s.planned} "
            f"{s.throughput():.1f}/s failed {s.failed} parse errors {s.parse_errors}"
            + (f" deferred {s.deferred}" if s.deferred else "")
            + (" PAUSED: endpoint down" if s.status == "paused" else "")
            + (f" ETA {eta:.0f}s" if eta else "")
        )

    try:
        outcome = run_shared(
            args.db,
            args.dataset,
            cfg,
            limit=args.limit,
            sample=args.sample,
            seed=args.seed,
            retry_failed=args.retry_failed,
            echo_intervention=args.echo_intervention,
            progress=bar,
            cancel=cancel,
            on_estimate=lambda e: _print(f"estimate: {e.text()}", file=sys.stderr),
            estimate_only=args.estimate,
            battle_ids=battle_ids,
            repeats=None if not args.repeats else (args.repeats, args.repeat_sample),
            replace_judge=args.replace_judge,
        )
    except (PlanError, StoreError) as exc:
        raise UserError(str(exc)) from None
    except (EndpointUnreachable, EndpointRefused) as exc:
        raise EndpointError(str(exc)) from None
    finally:
        line.close()
    for run_id in outcome.interrupted:
        _print(f"run {run_id} had been interrupted (its process was gone); what it finished is kept", file=sys.stderr)
    stats = outcome.stats
    if stats.status == "estimate":
        return 0
    if outcome.run_id is None:
        covered = f"the {outcome.defined:,} units this command covers" if args.limit else "every battle"
        _print(
            f"nothing to do: {covered} of {args.dataset!r} judged by {cfg.name} ({cfg.version})"
            + ("" if args.retry_failed else "; failed calls are retried with --retry-failed"),
            file=sys.stderr,
        )
        return 0
    if args.repeats and outcome.journal_kept is None:
        with open_store(args.db) as store:
            variance = judge_variance_of(store, args.dataset, cfg.name)
        if variance is not None:
            _print(variance.statement())
    if args.echo_intervention and outcome.journal_kept is None:
        with open_store(args.db) as store:
            summary = echo_intervention_results(store, args.dataset, cfg.name)
        if summary is not None:
            _print(summary.to_string(index=False))
    cost = cfg.cost(stats.prompt_tokens, stats.completion_tokens)
    _print(
        f"run {outcome.run_id} (covers {outcome.defined:,} units; resume with --resume {outcome.run_id}): "
        f"{stats.done} judged ({stats.parse_errors} unparseable, stored with their raw output), "
        f"{stats.failed} refused by the endpoint (retry with --retry-failed), "
        f"{stats.deferred} deferred, {stats.prompt_tokens + stats.completion_tokens:,} tokens"
        + (f" (${cost:,.4f})" if cost is not None else "")
        + f", status {stats.status}"
        + (f": {stats.message}" if stats.message else ""),
        file=sys.stderr,
    )
    if outcome.journal_kept is not None:
        _print(
            f"the store stayed busy: the finished judgments are safe in {outcome.journal_kept} and are merged by the "
            "next run of this command",
            file=sys.stderr,
        )
        return EXIT_RESUME
    if received:
        return 128 + received[0]
    return EXIT_RESUME if stats.status in ("paused", "incomplete") else 0
