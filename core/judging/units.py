"""What a judge run works on and counts: its units, its counters, and the endpoint's refusals of a run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from core.judging.prompts import Turns


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
