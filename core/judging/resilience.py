"""What keeps a run going through a failing endpoint: the circuit breaker, the replica pool, the cost guard."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from core.judging.config import JudgeConfig
from core.judging.units import RunStats

# how often a paused run looks at its cancel flag while it waits out an outage
CANCEL_POLL_S = 0.25


class Breaker:
    """The endpoint's circuit breaker, shared by a run's workers.

    Closed: calls go out.  After ``threshold`` consecutive transport failures
    it opens: workers wait; after a back-off (1 s doubling to 30 s) one call
    goes out as the probe; its success closes the breaker, its failure
    doubles the back-off.  ``admit`` returns False once the endpoint has been
    down for ``max_outage_s``: the run gives up, resumable.
    """

    def __init__(self, threshold: int, max_outage_s: float, stats: RunStats, cancel: threading.Event | None = None):
        self.threshold, self.max_outage_s, self.stats = threshold, max_outage_s, stats
        # a cancel (SIGTERM from the Admin page) ends the wait within CANCEL_POLL_S, paused or not
        self.cancel = cancel
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
            if self.cancel is not None and self.cancel.is_set():
                return False  # the run is cancelled: no call goes out, the run stays resumable
            now = time.monotonic()
            if self.gave_up or (self.down_since is not None and now - self.down_since >= self.max_outage_s):
                self.gave_up = True
                return False
            if not self.probing and now >= self.next_probe:
                self.probing = True
                return True  # this call is the probe
            wait = max(0.05, self.next_probe - now) if not self.probing else 1.0
            if self.cancel is not None:
                wait = min(wait, CANCEL_POLL_S)
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
