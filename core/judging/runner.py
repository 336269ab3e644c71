"""Execute a judge run: bounded concurrency, back-off, a circuit breaker, budget, cancel.

Work units are (battle, order) pairs; ``core.app.judging`` plans them (those
with no stored judgment under this judge's prompt version) and keeps the run's
row.  A unit is *done* only when the endpoint answered: a parsed judgment, or
an unparseable output kept with its raw text (capped at ``MAX_RAW_CHARS``).
An HTTP 4xx other than 408/429 is the endpoint's final word on that unit: it
is stored as a failed call, retried only on request.  Anything transport-level
(connection errors, timeouts, 5xx, rate limits) is not a judgment at all: the
unit stays pending.  Consecutive transport failures open a circuit breaker:
every worker pauses, one call probes the endpoint with growing back-off, and
the run resumes when it answers, or ends ``paused`` (resumable, non-zero exit)
when the outage outlasts ``max_outage_s``.  401/403/404 stop the run at once:
they say the key or model is wrong, not that a unit failed.

A judge may list replicas of its model (``replica_urls``): the run keeps one
client per replica and sends each call to the one with the fewest calls in
flight (``ReplicaPool``); a replica failing with transport errors sits out a
cool-down while another works, and the breaker opens only when all are failing.

Finished units go to the run's ledger, whose idempotency key makes a repeated
call a no-op: kill the process at any moment and the next run plans exactly
what is missing.  A journal ledger (``ArrivalLedger``) gets each unit the
moment its call returns, so a kill re-pays only the calls in flight.

This module holds the run itself (``execute``); its parts live beside it: ``units`` (units, counters,
refusals), ``resilience`` (breaker, replica pool, cost guard), ``calls`` (one unit's call and its judgment
row) and ``writer`` (the run's database writer).
"""

from __future__ import annotations

import asyncio
import threading
import time as time  # the clock of the breaker and the replicas' cool-downs, which a test stops here
from collections.abc import Callable

from core import redact

# Every name of the former single module stays importable from here (core.judging.batch, the tests and the
# benchmarks import them; ``runner.time`` is the clock a test stops).
from core.judging.calls import MAX_RAW_CHARS as MAX_RAW_CHARS
from core.judging.calls import Outcome as Outcome
from core.judging.calls import _body_text as _body_text
from core.judging.calls import _call as _call
from core.judging.calls import _call_reserved as _call_reserved
from core.judging.calls import _probe as _probe
from core.judging.calls import _probe_pool as _probe_pool
from core.judging.calls import _read_completion as _read_completion
from core.judging.calls import _retry_after as _retry_after
from core.judging.calls import idempotency_key as idempotency_key
from core.judging.calls import judgment_row as judgment_row
from core.judging.calls import make_async_client as make_async_client
from core.judging.calls import request_body as request_body
from core.judging.config import JudgeConfig
from core.judging.resilience import Breaker as Breaker
from core.judging.resilience import CostGuard as CostGuard
from core.judging.resilience import Replica as Replica
from core.judging.resilience import ReplicaPool as ReplicaPool
from core.judging.units import EndpointRefused as EndpointRefused
from core.judging.units import EndpointUnreachable as EndpointUnreachable
from core.judging.units import RunStats as RunStats
from core.judging.units import Unit as Unit
from core.judging.writer import ArrivalLedger as ArrivalLedger
from core.judging.writer import RunLedger as RunLedger
from core.judging.writer import _Writer as _Writer


def execute(
    ledger: RunLedger,
    judge_id: int,
    run_id: int,
    cfg: JudgeConfig,
    units: list[Unit],
    stats: RunStats,
    progress: Callable[[RunStats], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunStats:
    """Judge ``units`` (blocking), writing each finished call to ``ledger`` under ``run_id``.

    Raises :class:`EndpointUnreachable` when the endpoint refuses the first
    probe and :class:`EndpointRefused` on HTTP 401/403/404.  ``stats.status``
    says how the run ended: 'done'; 'cancelled'; 'stopped' (budget
    exhausted); 'paused' (the endpoint stayed down for ``max_outage_s``) or
    'incomplete' (some units deferred after transient errors): the last two
    resume with the same command.
    """
    asyncio.run(_run(ledger, cfg, judge_id, run_id, units, stats, progress, cancel))
    return stats


async def _run(
    ledger: RunLedger,
    cfg: JudgeConfig,
    judge_id: int,
    run_id: int,
    units: list[Unit],
    stats: RunStats,
    progress: Callable[[RunStats], None] | None,
    cancel: threading.Event | None,
) -> None:
    pool = ReplicaPool(
        [Replica(url, make_async_client(cfg, base_url=url)) for url in cfg.urls], cfg.breaker_threshold, stats
    )
    # A journal keeps each judgment as its call returns: a kill then re-pays only the calls in flight.
    on_arrival = isinstance(ledger, ArrivalLedger)
    writer = _Writer(
        ledger,
        run_id,
        stats,
        progress,
        batch_rows=max(64, 2 * cfg.concurrency),
        window_s=0.5,
        kept_on_arrival=on_arrival,
    )
    writer.start()
    breaker = Breaker(cfg.breaker_threshold, cfg.max_outage_s, stats, cancel)
    guard = CostGuard(cfg, stats)
    refused: list[str] = []
    try:
        await _probe_pool(pool)

        def budget_ok() -> bool:
            if cancel is not None and cancel.is_set():
                return False
            if writer.error is not None or refused:
                return False
            if cfg.max_calls is not None and stats.calls >= cfg.max_calls:
                return False
            used = stats.prompt_tokens + stats.completion_tokens
            return cfg.max_tokens_total is None or used < cfg.max_tokens_total

        deferred_reasons: list[str] = []

        async def one(unit: Unit) -> None:
            try:
                out = await _call(
                    pool, cfg, unit, stats, breaker, budget_ok, idempotency_key(judge_id, unit, cfg.version), guard
                )
            except EndpointRefused as exc:
                refused.append(str(exc))
                return
            if out.kind == "skipped":
                return
            if out.kind == "deferred":
                stats.deferred += 1
                deferred_reasons.append(out.reason or "")
                return
            row = judgment_row(cfg, unit, judge_id, run_id, out, stats)
            if on_arrival:
                try:
                    ledger.append([row])  # type: ignore[attr-defined]
                except OSError as exc:  # a full disk: stop paying for calls that cannot be kept
                    writer.error = exc
                    return
            writer.queue.put(row)

        # ``concurrency`` workers share one iterator of units: a plan of 100k
        # units costs 32 tasks, not 100k tasks parked on a semaphore.
        pending = iter(units)

        async def worker() -> None:
            for unit in pending:
                if not budget_ok() or breaker.gave_up or guard.hit:
                    return
                await one(unit)

        await asyncio.gather(*(worker() for _ in range(min(cfg.concurrency, len(units)))))
        if refused:
            raise EndpointRefused(refused[0])
        if cancel is not None and cancel.is_set():
            stats.status, stats.message = "cancelled", "cancelled by the user; run the same command to resume"
        elif breaker.gave_up:
            stats.status = "paused"
            stats.message = (
                f"{breaker.down_message()}; gave up after {cfg.max_outage_s:g} s. "
                f"{stats.planned - stats.finished} units still pending: run the same command to resume"
            )
        elif stats.finished + stats.deferred < stats.planned and guard.hit:
            spent = guard.spent()
            stats.status = "stopped"
            stats.message = (
                f"cost budget: ${spent:,.4f} spent of max_cost_usd ${cfg.max_cost_usd:,.4f}; the next call's reserved "
                f"cost would pass it. {stats.planned - stats.finished} units still pending"
            )
        elif stats.finished + stats.deferred < stats.planned:
            stats.status, stats.message = "stopped", "budget exhausted before all planned calls"
        elif stats.deferred:
            stats.status = "incomplete"
            stats.message = (
                f"{stats.deferred} units deferred after transient errors "
                f"(last: {redact.clip(deferred_reasons[-1], 200)}); "
                "run the same command to retry them"
            )
        else:
            stats.status = "done"
            if stats.pauses:
                stats.message = f"waited out {stats.pauses} endpoint outage(s), {stats.paused_s:.0f} s in all"
    finally:
        writer.close()
        await asyncio.to_thread(writer.join)
        for r in pool.replicas:
            await r.client.close()
    if writer.error is not None:
        raise writer.error
