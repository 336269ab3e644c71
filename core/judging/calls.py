"""One unit's call: the request, retries and back-off, reading the completion, and its stored judgment row."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core import redact
from core.judging.config import JudgeConfig
from core.judging.parsing import parse
from core.judging.prompts import render
from core.judging.resilience import Breaker, CostGuard, Replica, ReplicaPool
from core.judging.units import EndpointRefused, EndpointUnreachable, RunStats, Unit

MAX_RAW_CHARS = 65_536  # raw output kept per judgment; longer outputs are cut and flagged raw_truncated


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


@dataclass
class Outcome:
    """What became of one unit: ``kind`` is 'answered', 'failed' (final 4xx), 'deferred' or 'skipped'."""

    kind: str
    result: dict | None = None
    reason: str | None = None


def _body_text(body: Any) -> str:
    if isinstance(body, (bytes, bytearray)):
        return bytes(body).decode("utf-8", errors="replace")
    return str(body)


def request_body(cfg: JudgeConfig, messages: list[dict]) -> dict:
    """The chat-completion request of one unit (the online call's body, and a batch file's ``body``)."""
    body: dict[str, Any] = dict(
        model=cfg.model, messages=messages, temperature=cfg.temperature, max_tokens=cfg.max_tokens
    )
    if cfg.uses_logprobs:
        body.update(logprobs=True, top_logprobs=cfg.top_logprobs, max_tokens=1)
    return body


def judgment_row(cfg: JudgeConfig, unit: Unit, judge_id: int, run_id: int, out: Outcome, stats: RunStats) -> dict:
    """The stored judgment of a finished unit (answered, with its raw text kept, or failed for good), counted."""
    row: dict[str, Any] = {
        "battle_id": unit.battle_id,
        "judge_id": judge_id,
        "order": unit.order,
        "prompt_version": cfg.version,
        "run_id": run_id,
        "variant": unit.variant,
    }
    if out.kind == "failed":
        row.update(parse_error=f"call failed: {out.reason}", call_failed=True)
        stats.failed += 1
        return row
    result = out.result
    assert result is not None
    raw = redact.redact(result["raw_output"])  # redacted before the cut: a key across it would leave its prefix
    truncated = raw is not None and len(raw) > MAX_RAW_CHARS
    if out.reason is not None:  # the body was not a completion: kept as the raw output
        parsed_error: str | None = out.reason
        fields: dict[str, Any] = {}
    else:
        parsed = parse(cfg.template, raw, unit.order, result["top"])
        if result["finish"] == "length" and parsed.parse_error:
            parsed.parse_error += " (output truncated at max_tokens)"
        parsed_error = parsed.parse_error
        fields = dict(verdict=parsed.verdict, p_a=parsed.p_a, confidence=parsed.confidence, **parsed.scores)
    row.update(
        raw_output=raw[:MAX_RAW_CHARS] if truncated else raw,
        raw_truncated=truncated,
        latency_ms=result.get("latency_ms"),
        prompt_tokens=result["prompt_tokens"],
        completion_tokens=result["completion_tokens"],
        parse_error=parsed_error,
        **fields,
    )
    if parsed_error:
        stats.parse_errors += 1
    stats.done += 1
    return row


async def _call(
    pool: ReplicaPool,
    cfg: JudgeConfig,
    unit: Unit,
    stats: RunStats,
    breaker: Breaker,
    budget_ok: Callable[[], bool],
    key: str,
    guard: CostGuard | None = None,
) -> Outcome:
    """One unit: retries transient failures, waits out outages, classifies the endpoint's answer."""
    guard = guard or CostGuard(cfg, stats)
    messages = render(cfg.template, unit.prompt, unit.text_a, unit.text_b, unit.order, unit.turns)
    chars = sum(len(m["content"]) for m in messages)
    reserved = guard.reserve(chars)
    if reserved is None:
        guard.hit = True
        return Outcome("skipped", reason="cost budget (max_cost_usd) reached")
    out = await _call_reserved(pool, cfg, messages, stats, breaker, budget_ok, key)
    answered = out.result if out.kind == "answered" and out.result else None
    guard.settle(reserved, chars, answered["prompt_tokens"] if answered else None)
    return out


async def _call_reserved(
    pool: ReplicaPool,
    cfg: JudgeConfig,
    messages: list[dict],
    stats: RunStats,
    breaker: Breaker,
    budget_ok: Callable[[], bool],
    key: str,
) -> Outcome:
    import openai

    payload = json.dumps(request_body(cfg, messages), ensure_ascii=False, separators=(",", ":")).encode()
    attempts = 0  # transient failures charged to this unit (not those of an outage)
    malformed = 0
    last = "no attempt"
    failed_on: Replica | None = None  # the replica of this unit's last transport failure
    while True:
        if not budget_ok():
            return Outcome("skipped", reason="budget exhausted")
        if not await breaker.admit():
            return Outcome("skipped", reason=breaker.down_message())
        if not budget_ok():
            return Outcome("skipped", reason="budget exhausted")
        stats.calls += 1
        replica = pool.acquire(avoid=failed_on)
        t0 = time.perf_counter()
        wait: float | None = None
        transport = True  # counts toward the breaker
        try:
            # The client's own POST (same transport, errors and retries-off
            # behaviour as chat.completions.create) returning the body: the
            # typed-parameter transform and response model are skipped, our
            # idempotency key replaces the SDK's random one per request, and
            # JSON bytes as the content let JudgeClient reuse the request it built.
            try:
                body = await replica.client.post(
                    "/chat/completions", content=payload, cast_to=bytes, options={"idempotency_key": key}
                )
            finally:
                pool.release(replica)
        except openai.APIConnectionError as exc:  # includes timeouts
            last = redact.redact(f"{type(exc).__name__}: {exc}")
        except openai.RateLimitError as exc:
            last, wait, transport = f"HTTP 429 rate limited: {redact.clip(exc, 200)}", _retry_after(exc), False
        except openai.APIStatusError as exc:
            code = exc.status_code
            reason = f"HTTP {code}: {redact.clip(exc, 200)}"
            if code in (401, 403, 404):
                raise EndpointRefused(reason) from None
            if code < 500 and code != 408:
                breaker.success()  # the endpoint is up; it refuses this unit
                pool.answered(replica)
                return Outcome("failed", reason=reason)
            last, wait = reason, _retry_after(exc)
        else:
            breaker.success()
            pool.answered(replica)
            try:
                result = _read_completion(body)
            except ValueError as exc:
                # HTTP 200 with a body that is not a completion: kept as an answer once retries are spent.
                malformed += 1
                last = f"malformed response body: {redact.clip(exc, 200)}"
                if malformed > cfg.max_retries:
                    raw = _body_text(body)
                    return Outcome(
                        "answered",
                        {"raw_output": raw, "top": None, "prompt_tokens": 0, "completion_tokens": 0, "finish": None},
                        reason=last,
                    )
                stats.retries += 1
                await asyncio.sleep(min(30.0, 0.5 * 2 ** (malformed - 1)) * random.uniform(0.5, 1.5))
                continue
            result["latency_ms"] = (time.perf_counter() - t0) * 1000
            stats.prompt_tokens += result["prompt_tokens"]
            stats.completion_tokens += result["completion_tokens"]
            return Outcome("answered", result)
        if transport:
            pool.mark_failed(replica)
            failed_on = replica
            if pool.single or pool.all_failing():
                breaker.failure(last)  # with replicas: only when none of them is working
        if not breaker.is_open:  # an isolated failure: charged to the unit
            attempts += 1
            if attempts > cfg.max_retries:
                return Outcome("deferred", reason=f"gave up after {attempts} attempts ({last})")
            stats.retries += 1
            delay = wait if wait is not None else min(30.0, 0.5 * 2 ** (attempts - 1)) * random.uniform(0.5, 1.5)
            await asyncio.sleep(delay)


async def _probe(client: Any) -> None:
    import openai

    try:
        await client.models.list()
    except openai.APIConnectionError as exc:
        raise EndpointUnreachable(f"cannot reach the endpoint: {exc}") from None
    except openai.APIStatusError:
        pass  # reachable; some servers do not implement /models


async def _probe_pool(pool: ReplicaPool) -> None:
    """Probe every replica: unreachable ones start in their cool-down; raises when none is reachable."""
    results = await asyncio.gather(*(_probe(r.client) for r in pool.replicas), return_exceptions=True)
    errors = [res for res in results if isinstance(res, BaseException)]
    for err in errors:
        if not isinstance(err, EndpointUnreachable):
            raise err
    if len(errors) == len(results):
        if pool.single:
            raise errors[0]
        raise EndpointUnreachable(f"none of the {len(results)} replicas is reachable; first: {errors[0]}")
    for r, res in zip(pool.replicas, results, strict=True):
        if isinstance(res, EndpointUnreachable):
            pool.mark_failed(r, pool.threshold)


def make_async_client(cfg: JudgeConfig, transport: str | None = None, base_url: str | None = None) -> Any:
    """The run's ``openai.AsyncOpenAI`` client (a ``JudgeClient``), with one connection per concurrent call.

    ``base_url``: the replica this client calls (default: ``cfg.base_url``); a run makes one client per replica.

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
        base_url=base_url or cfg.base_url,
        api_key=cfg.api_key(),
        max_retries=0,
        timeout=cfg.timeout_s,
        http_client=http_client,
    )
