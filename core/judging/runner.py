"""Execute a judge run: bounded concurrency, back-off, budget, cancel.

Work units are (battle, order) pairs; ``core.app.judging`` plans them (those
with no stored judgment under this judge's prompt version) and keeps the run's
row.  Each finished call (success, parse failure or a call that failed after
its retries) goes to the run's ledger (the store), whose idempotency key makes
a repeated call a no-op: kill the process at any moment and the next run plans
exactly what is missing.
"""

from __future__ import annotations

import asyncio
import json
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.judging.config import JudgeConfig
from core.judging.parsing import parse
from core.judging.prompts import render


class EndpointUnreachable(RuntimeError):
    """The endpoint refused connections before any call succeeded."""


@dataclass(frozen=True)
class Unit:
    battle_id: int
    order: str
    prompt: str
    text_a: str
    text_b: str
    variant: str = "original"  # 'echo_a' / 'echo_b': the echo intervention's counterfactuals


@dataclass
class RunStats:
    planned: int = 0
    done: int = 0
    failed: int = 0
    parse_errors: int = 0
    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    status: str = "running"
    message: str | None = None

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def throughput(self) -> float:
        dt = time.monotonic() - self.started
        return self.finished / dt if dt > 0 else 0.0

    def eta_seconds(self) -> float | None:
        rate = self.throughput()
        return (self.planned - self.finished) / rate if rate > 0 else None


def _retry_after(exc: Exception) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read_completion(body: bytes) -> dict:
    """The fields a judgment needs from a chat-completion body; ValueError when it is not one.

    Read straight from the JSON rather than through the SDK's typed
    ``ChatCompletion``: building that model costs more CPU than the rest of a
    judgment, and only five fields are used.
    """
    data = json.loads(body)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise ValueError("the body has no 'choices' list")
    choice = choices[0] if choices else {}
    if not isinstance(choice, dict):
        raise ValueError("choices[0] is not an object")
    message = choice.get("message") or {}
    text = message.get("content") if isinstance(message, dict) else None
    if text is not None and not isinstance(text, str):
        raise ValueError("choices[0].message.content is not a string")
    top = None
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if isinstance(content, list) and content and isinstance(content[0], dict):
        top = [
            {"token": t.get("token"), "logprob": t.get("logprob")}
            for t in content[0].get("top_logprobs") or []
            if isinstance(t, dict)
        ]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return {
        "raw_output": text,
        "top": top,
        "prompt_tokens": int(usage.get("prompt_tokens") or 0),
        "completion_tokens": int(usage.get("completion_tokens") or 0),
        "finish": choice.get("finish_reason"),
    }


def idempotency_key(judge_id: int, unit: Unit, version: str) -> str:
    """The judgment's identity (battle, judge, order, prompt version, variant), given to the SDK per request.

    The OpenAI client sends no idempotency header, so servers do not see it;
    it replaces the random key the SDK would otherwise draw for every call.
    """
    return f"judge{judge_id}-battle{unit.battle_id}-{unit.order}-{version}-{unit.variant}"


async def _call(
    client: Any, cfg: JudgeConfig, unit: Unit, stats: RunStats, budget_ok: Callable[[], bool], key: str
) -> tuple[dict | None, str | None]:
    """One judgment with retries; returns (row fields, None) or (None, failure reason)."""
    import openai

    messages = render(cfg.template, unit.prompt, unit.text_a, unit.text_b, unit.order)
    kwargs = dict(model=cfg.model, messages=messages, temperature=cfg.temperature, max_tokens=cfg.max_tokens)
    if cfg.uses_logprobs:
        kwargs.update(logprobs=True, top_logprobs=cfg.top_logprobs, max_tokens=1)
    payload = json.dumps(kwargs, ensure_ascii=False, separators=(",", ":")).encode()  # as the SDK encodes it
    last = "no attempt"
    for attempt in range(cfg.max_retries + 1):
        if not budget_ok():
            return None, "budget exhausted"
        stats.calls += 1
        t0 = time.perf_counter()
        try:
            # The client's own POST (same transport, errors and retries-off
            # behaviour as chat.completions.create) returning the body: the
            # typed-parameter transform and response model are skipped, our
            # idempotency key replaces the SDK's random one per request, and
            # JSON bytes as the content let JudgeClient reuse the request it built.
            body = await client.post(
                "/chat/completions", content=payload, cast_to=bytes, options={"idempotency_key": key}
            )
            result = _read_completion(body)
        except openai.APIConnectionError as exc:  # includes timeouts
            last = f"{type(exc).__name__}: {exc}"
            wait = None
        except openai.RateLimitError as exc:
            last, wait = f"429 rate limited: {exc}", _retry_after(exc)
        except openai.APIStatusError as exc:
            if exc.status_code < 500 and exc.status_code != 408:
                return None, f"HTTP {exc.status_code}: {str(exc)[:200]}"
            last, wait = f"HTTP {exc.status_code}: {str(exc)[:200]}", _retry_after(exc)
        except (ValueError, openai.APIResponseValidationError) as exc:  # malformed response body
            last, wait = f"malformed response: {str(exc)[:200]}", None
        else:
            result["latency_ms"] = (time.perf_counter() - t0) * 1000
            stats.prompt_tokens += result["prompt_tokens"]
            stats.completion_tokens += result["completion_tokens"]
            return result, None
        if attempt < cfg.max_retries:
            stats.retries += 1
            delay = wait if wait is not None else min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.5)
            await asyncio.sleep(delay)
    return None, f"gave up after {cfg.max_retries + 1} attempts ({last})"


async def _probe(client: Any) -> None:
    import openai

    try:
        await client.models.list()
    except openai.APIConnectionError as exc:
        raise EndpointUnreachable(f"cannot reach the endpoint: {exc}") from None
    except openai.APIStatusError:
        pass  # reachable; some servers do not implement /models


class RunLedger(Protocol):
    """Where a run's finished calls and counters go (``core.store.Store`` is one)."""

    def record_judgments(self, rows: list[dict], run_progress: tuple[int, dict] | None = None) -> int: ...


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

    Raises :class:`EndpointUnreachable` when the endpoint refuses the probe.
    ``stats.status`` says how the run ended: 'done', 'cancelled' or 'stopped'
    (budget exhausted).
    """
    asyncio.run(_run(ledger, cfg, judge_id, run_id, units, stats, progress, cancel))
    return stats


class _Writer(threading.Thread):
    """The run's only writer: drains finished judgments and commits them in groups.

    A DuckDB commit costs ~15 ms of CPU for one row or a hundred, so rows are
    committed together once ``batch_rows`` are waiting or ``window_s`` after
    the first one arrived, whichever comes first; the event loop never waits
    for the database.  The writer sleeps between polls instead of waking for
    every row (a wake-up per row costs the event loop the GIL each time).
    A row lost to a kill before its commit is planned again by the next run
    and the idempotency key makes a repeat harmless: a kill costs the calls
    in flight plus at most ``batch_rows`` finished ones, never a stored
    judgment.
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
    ):
        super().__init__(name=f"judge-writer-{run_id}", daemon=True)
        self.ledger, self.run_id, self.stats, self.progress = ledger, run_id, stats, progress
        self.batch_rows, self.window_s, self.poll_s = batch_rows, window_s, poll_s
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
        batch = [self.queue.get()]  # sleeps until there is work
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
                s = self.stats
                progress = (
                    self.run_id,
                    {
                        "done": s.done,
                        "failed": s.failed,
                        "parse_errors": s.parse_errors,
                        "prompt_tokens": s.prompt_tokens,
                        "completion_tokens": s.completion_tokens,
                    },
                )
            try:
                self.ledger.record_judgments(rows, run_progress=progress)
            except BaseException as exc:
                self.error = exc
                return
            self.commits += bool(rows)
            if rows and self.progress:
                self.progress(self.stats)
            if stop:
                return


def make_async_client(cfg: JudgeConfig, transport: str | None = None) -> Any:
    """The run's ``openai.AsyncOpenAI`` client (a ``JudgeClient``), with one connection per concurrent call.

    The default transport is aiohttp (the openai package's ``aiohttp`` extra):
    the SDK's httpx transport costs ~1 ms more CPU per request at concurrency
    32 (benchmarks/README_judging.md), which makes the client, not the
    endpoint, the bottleneck of a fast judge run.
    ``JUDGE_HTTP_TRANSPORT=httpx`` selects the SDK's default transport.
    """
    import os

    import httpx2 as httpx
    import openai

    from core.judging.client import JudgeClient

    transport = transport or os.environ.get("JUDGE_HTTP_TRANSPORT", "aiohttp")
    limits = httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency)
    if transport == "aiohttp":
        http_client = openai.DefaultAioHttpClient(limits=limits, timeout=cfg.timeout_s)
    elif transport == "httpx":
        http_client = openai.DefaultAsyncHttpxClient(limits=limits, timeout=cfg.timeout_s)
    else:
        raise ValueError(f"JUDGE_HTTP_TRANSPORT={transport!r}: expected 'aiohttp' or 'httpx'")
    return JudgeClient(
        base_url=cfg.base_url, api_key=cfg.api_key(), max_retries=0, timeout=cfg.timeout_s, http_client=http_client
    )


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
    client = make_async_client(cfg)
    writer = _Writer(ledger, run_id, stats, progress, batch_rows=max(64, 2 * cfg.concurrency))
    writer.start()
    try:
        await _probe(client)

        def budget_ok() -> bool:
            if cancel is not None and cancel.is_set():
                return False
            if writer.error is not None:
                return False
            if cfg.max_calls is not None and stats.calls >= cfg.max_calls:
                return False
            used = stats.prompt_tokens + stats.completion_tokens
            return cfg.max_tokens_total is None or used < cfg.max_tokens_total

        async def one(unit: Unit) -> None:
            result, failure = await _call(
                client, cfg, unit, stats, budget_ok, idempotency_key(judge_id, unit, cfg.version)
            )
            if failure == "budget exhausted":
                return
            row = {
                "battle_id": unit.battle_id,
                "judge_id": judge_id,
                "order": unit.order,
                "prompt_version": cfg.version,
                "run_id": run_id,
                "variant": unit.variant,
            }
            if failure is not None or result is None:
                row.update(parse_error=f"call failed: {failure}")
                stats.failed += 1
            else:
                parsed = parse(cfg.template, result["raw_output"], unit.order, result["top"])
                if result["finish"] == "length" and parsed.parse_error:
                    parsed.parse_error += " (output truncated at max_tokens)"
                row.update(
                    raw_output=result["raw_output"],
                    latency_ms=result["latency_ms"],
                    prompt_tokens=result["prompt_tokens"],
                    completion_tokens=result["completion_tokens"],
                    verdict=parsed.verdict,
                    p_a=parsed.p_a,
                    confidence=parsed.confidence,
                    parse_error=parsed.parse_error,
                    **parsed.scores,
                )
                if parsed.parse_error:
                    stats.parse_errors += 1
                stats.done += 1
            writer.queue.put(row)

        # ``concurrency`` workers share one iterator of units: a plan of 100k
        # units costs 32 tasks, not 100k tasks parked on a semaphore.
        pending = iter(units)

        async def worker() -> None:
            for unit in pending:
                if not budget_ok():
                    return
                await one(unit)

        await asyncio.gather(*(worker() for _ in range(min(cfg.concurrency, len(units)))))
        if cancel is not None and cancel.is_set():
            stats.status, stats.message = "cancelled", "cancelled by the user"
        elif stats.finished < stats.planned:
            stats.status, stats.message = "stopped", "budget exhausted before all planned calls"
        else:
            stats.status = "done"
    finally:
        writer.close()
        await asyncio.to_thread(writer.join)
        await client.close()
    if writer.error is not None:
        raise writer.error
