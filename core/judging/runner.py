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
what is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from core import redact
from core.judging.config import JudgeConfig
from core.judging.parsing import parse
from core.judging.prompts import Turns, render

MAX_RAW_CHARS = 65_536  # raw output kept per judgment; longer outputs are cut and flagged raw_truncated


class EndpointUnreachable(RuntimeError):
    """The endpoint refused connections before any call succeeded."""


class EndpointRefused(RuntimeError):
    """The endpoint rejects the run itself (HTTP 401/403/404: key, permission or model), not one unit."""


@dataclass(frozen=True)
class Unit:
    battle_id: int
    order: str
    prompt: str
    text_a: str
    text_b: str
    variant: str = "original"  # 'echo_a' / 'echo_b': the echo intervention's counterfactuals
    turns: Turns | None = None  # a multi-turn conversation, shown whole


@dataclass
class RunStats:
    planned: int = 0
    done: int = 0  # answered: parsed or unparseable (raw text kept)
    failed: int = 0  # the endpoint's final 4xx, stored as a failed call
    parse_errors: int = 0
    deferred: int = 0  # transport failures past the unit's retries: left pending for the next run
    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    pauses: int = 0  # outages the run waited out
    paused_s: float = 0.0
    started: float = field(default_factory=time.monotonic)
    status: str = "running"  # running, paused (waiting for the endpoint), then how it ended
    message: str | None = None
    per_replica: dict[str, int] = field(default_factory=dict)  # calls sent to each replica, by base URL

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def counters(self) -> dict[str, int]:
        """The counters the run's row keeps."""
        return {
            "done": self.done,
            "failed": self.failed,
            "parse_errors": self.parse_errors,
            "deferred": self.deferred,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

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


class Breaker:
    """The endpoint's circuit breaker, shared by a run's workers.

    Closed: calls go out.  After ``threshold`` consecutive transport failures
    it opens: workers wait; after a back-off (1 s doubling to 30 s) one call
    goes out as the probe; its success closes the breaker, its failure
    doubles the back-off.  ``admit`` returns False once the endpoint has been
    down for ``max_outage_s``: the run gives up, resumable.
    """

    def __init__(self, threshold: int, max_outage_s: float, stats: RunStats):
        self.threshold, self.max_outage_s, self.stats = threshold, max_outage_s, stats
        self.consecutive = 0
        self.is_open = False
        self.down_since: float | None = None  # monotonic time of the streak's first failure
        self.down_since_wall: float | None = None
        self.backoff = 1.0
        self.next_probe = 0.0
        self.probing = False
        self.gave_up = False
        self.last_error: str | None = None
        self._changed = asyncio.Event()

    def success(self) -> None:
        if self.is_open and self.down_since is not None:
            self.stats.pauses += 1
            self.stats.paused_s += time.monotonic() - self.down_since
            self.stats.status = "running"
        self.consecutive, self.is_open, self.probing, self.backoff = 0, False, False, 1.0
        self.down_since = self.down_since_wall = None
        self._wake()

    def failure(self, reason: str) -> None:
        now = time.monotonic()
        self.consecutive += 1
        self.last_error = reason
        if self.down_since is None:
            self.down_since, self.down_since_wall = now, time.time()
        if self.is_open:  # the probe failed: wait longer before the next
            self.probing = False
            self.backoff = min(self.backoff * 2, 30.0)
            self.next_probe = now + self.backoff
        elif self.consecutive >= self.threshold:
            self.is_open = True
            self.stats.status = "paused"
            self.next_probe = now + self.backoff
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def down_message(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.down_since_wall or time.time()))
        return f"endpoint unreachable since {since} ({self.consecutive} failed calls in a row; last: {self.last_error})"

    async def admit(self) -> bool:
        """Wait until a call may go out (True), or the outage has lasted too long (False)."""
        while self.is_open:
            now = time.monotonic()
            if self.gave_up or (self.down_since is not None and now - self.down_since >= self.max_outage_s):
                self.gave_up = True
                return False
            if not self.probing and now >= self.next_probe:
                self.probing = True
                return True  # this call is the probe
            wait = max(0.05, self.next_probe - now) if not self.probing else 1.0
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=wait)
        return True


@dataclass
class Replica:
    """One base URL of the judge (a replica of the same model) and its client's load and health."""

    url: str
    client: Any
    in_flight: int = 0
    consecutive: int = 0  # transport failures in a row
    skip_until: float = 0.0  # monotonic time before which the replica gets no calls (its cool-down)
    cooldown: float = 5.0  # the next cool-down's length: 5 s doubling to 60 s
    trial: bool = False  # a failing replica's one call after its cool-down is under way
    last_pick: int = -1  # the pick that last chose it (ties go to the least recently chosen)


class ReplicaPool:
    """Spreads a run's calls over the judge's replicas: each call goes to the one with the fewest calls in
    flight (ties: the least recently chosen, i.e. round robin).

    A replica with ``threshold`` transport failures in a row (connection errors, timeouts, 5xx) sits out
    a cool-down (5 s doubling to 60 s) while another replica is healthy; after it, one trial call decides:
    a success brings the replica back, a failure starts a longer cool-down.  The run's :class:`Breaker`
    only hears of transport failures when every replica is failing (with one replica: always, as before).
    """

    COOLDOWN_S, MAX_COOLDOWN_S = 5.0, 60.0

    def __init__(self, replicas: list[Replica], threshold: int, stats: RunStats):
        self.replicas, self.threshold, self.stats = replicas, threshold, stats
        self._picks = 0
        for r in replicas:
            stats.per_replica.setdefault(r.url, 0)

    @property
    def single(self) -> bool:
        return len(self.replicas) == 1

    def failing(self, r: Replica) -> bool:
        return r.consecutive >= self.threshold

    def all_failing(self) -> bool:
        return all(self.failing(r) for r in self.replicas)

    def acquire(self, avoid: Replica | None = None) -> Replica:
        """The replica for the next call (counted in flight until :meth:`release`)."""
        now = time.monotonic()
        usable = [r for r in self.replicas if not self.failing(r) or (now >= r.skip_until and not r.trial)]
        if avoid is not None and len(usable) > 1:  # a retry goes elsewhere when it can
            usable = [r for r in usable if r is not avoid]
        chosen = min(usable or self.replicas, key=lambda r: (r.in_flight, r.last_pick))
        if self.failing(chosen) and usable:
            chosen.trial = True
        self._picks += 1
        chosen.last_pick = self._picks
        chosen.in_flight += 1
        self.stats.per_replica[chosen.url] = self.stats.per_replica.get(chosen.url, 0) + 1
        return chosen

    def release(self, r: Replica) -> None:
        """The call to ``r`` ended (its outcome is reported with :meth:`answered` or :meth:`mark_failed`)."""
        r.in_flight -= 1
        r.trial = False

    def answered(self, r: Replica) -> None:
        """``r`` answered (a completion or a final 4xx): it is healthy."""
        r.consecutive, r.skip_until, r.cooldown = 0, 0.0, self.COOLDOWN_S

    def mark_failed(self, r: Replica, count: int = 1) -> None:
        r.consecutive += count
        if self.failing(r) and not self.single:
            r.skip_until = time.monotonic() + r.cooldown
            r.cooldown = min(r.cooldown * 2, self.MAX_COOLDOWN_S)


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


class CostGuard:
    """``max_cost_usd`` as a hard limit: each call reserves its cost before it is sent.

    The reservation is the call's prompt at the run's observed tokens per character (0.5 until
    calls have answered: two characters a token, above what real tokenizers give for text) and its
    full ``max_tokens`` of completion, which the endpoint cannot exceed; it is settled at the
    answer's reported tokens.  A call starts only when spent + reserved + its own reservation stays
    within the budget, so the run never passes it unless a prompt tokenizes far denser than the
    calls before it.
    """

    def __init__(self, cfg: JudgeConfig, stats: RunStats):
        self.cfg, self.stats = cfg, stats
        self.reserved = 0.0
        self.chars = 0
        self.prompt_tokens = 0
        self.hit = False  # a call was held back by the budget

    @property
    def active(self) -> bool:
        return self.cfg.max_cost_usd is not None and self.cfg.cost(0, 0) is not None

    def tokens_per_char(self) -> float:
        return max(self.prompt_tokens / self.chars, 0.05) * 1.1 if self.chars and self.prompt_tokens else 0.5

    def estimate(self, prompt_chars: int) -> float:
        completion = 1 if self.cfg.uses_logprobs else self.cfg.max_tokens
        cost = self.cfg.cost(int(prompt_chars * self.tokens_per_char()) + 1, completion)
        return 0.0 if cost is None else cost

    def spent(self) -> float:
        return self.cfg.cost(self.stats.prompt_tokens, self.stats.completion_tokens) or 0.0

    def reserve(self, prompt_chars: int) -> float | None:
        """The amount reserved for one call, or None when it would pass the budget."""
        if not self.active:
            return 0.0
        est = self.estimate(prompt_chars)
        assert self.cfg.max_cost_usd is not None
        if self.spent() + self.reserved + est > self.cfg.max_cost_usd:
            return None
        self.reserved += est
        return est

    def settle(self, reserved: float, prompt_chars: int, prompt_tokens: int | None) -> None:
        self.reserved = max(0.0, self.reserved - reserved)
        if prompt_tokens:
            self.chars += prompt_chars
            self.prompt_tokens += prompt_tokens


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


class RunLedger(Protocol):
    """Where a run's finished calls and counters go (``core.store.Store`` and ``core.store.RunJournal``)."""

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

    Raises :class:`EndpointUnreachable` when the endpoint refuses the first
    probe and :class:`EndpointRefused` on HTTP 401/403/404.  ``stats.status``
    says how the run ended: 'done'; 'cancelled'; 'stopped' (budget
    exhausted); 'paused' (the endpoint stayed down for ``max_outage_s``) or
    'incomplete' (some units deferred after transient errors): the last two
    resume with the same command.
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
        try:
            batch = [self.queue.get(timeout=self.window_s)]  # sleeps until there is work
        except queue.Empty:  # nothing finished (an outage, slow calls): still a heartbeat
            return [], False
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
                progress = (self.run_id, {**self.stats.counters(), "status": self.stats.status})
            try:
                if rows or progress is not None:
                    self.ledger.record_judgments(rows, run_progress=progress)
            except BaseException as exc:
                self.error = exc
                return
            self.commits += bool(rows)
            if rows and self.progress:
                self.progress(self.stats)
            if stop:
                return


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
    writer = _Writer(ledger, run_id, stats, progress, batch_rows=max(64, 2 * cfg.concurrency), window_s=0.5)
    writer.start()
    breaker = Breaker(cfg.breaker_threshold, cfg.max_outage_s, stats)
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
