"""Answer generation: a model's answers to a dataset's prompts, from any OpenAI-compatible endpoint.

The first step of evaluating a new model: its answers become its completions of the dataset's
prompts, which judge runs then compare with the answers of models that humans have rated.

* one answer per (prompt, model, generation settings): running the same command again generates
  only what is missing (or failed before), never a second answer;
* a multi-turn prompt is answered turn by turn, each turn seeing the model's own earlier answers;
* reasoning (``reasoning_content`` / ``reasoning`` fields, or a leading ``<think>…</think>``) is
  kept apart from the answer; tokens and latency are stored; a failure is stored with its reason
  and retried by the next run;
* each answer is journaled the moment it arrives (``core.store.journal.GenerationJournal``, the
  judge runs' durable path) and merged into the store about once a second when it is free, so a
  killed run loses only the calls in flight; the next run merges a killed run's journal before it
  plans.

The configuration follows the judges' TOML conventions: the key only by the name of an environment
variable, unknown keys and tables refused, a ``base_url`` without credentials.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core import redact
from core.judging.config import (
    ENDPOINT_CHECKS,
    ConfigError,
    check_endpoint_mapping,
    check_key_value,
    key_places,
    mapping_to_toml,
    read_toml,
)
from core.store import Store, waits
from core.store.journal import GenerationJournal, pending_generation_journals, reconcile_generations
from core.text import style_counts

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


@dataclass(frozen=True)
class ModelConfig:
    """A model to generate answers with: ``name`` is its row in the leaderboards, ``model`` the endpoint's id."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    system_prompt: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 3
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None

    def settings(self) -> dict:
        """What determines an answer (and so its idempotency key): model id, system prompt, sampling."""
        return {
            "model": self.model,
            "system_prompt": self.system_prompt,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    @property
    def settings_key(self) -> str:
        return hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode()).hexdigest()[:16]

    def api_key(self) -> str:
        if not self.api_key_env:
            return "sk-no-key"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(f"model {self.name!r}: environment variable {self.api_key_env} is not set")
        redact.register(value)
        check_key_value(value, f"model {self.name!r}", self.api_key_env, key_places(asdict(self)))
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_prompt_per_mtok is None or self.price_completion_per_mtok is None:
            return None
        return (prompt_tokens * self.price_prompt_per_mtok + completion_tokens * self.price_completion_per_mtok) / 1e6


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    **ENDPOINT_CHECKS,
    "system_prompt": (lambda v: v is None or (isinstance(v, str) and len(v) <= 100_000), "a text"),
}


def model_config(data: dict, source: str = "configuration") -> ModelConfig:
    """A validated model configuration; errors name the key, never its value."""
    check_endpoint_mapping(data, source, {f.name for f in fields(ModelConfig)}, _CHECKS, "a model configuration")
    return ModelConfig(**data)


def load_model_toml(path: str | Path) -> ModelConfig:
    return model_config(read_toml(path), str(Path(path)))


# --------------------------------------------------------------------- plan
@dataclass(frozen=True)
class GenerationPlan:
    """The prompts the command covers (the first ``limit`` by id, or all) and those still without an answer."""

    todo: list[dict]
    defined: int


def plan_generation(store: Store, dataset: str, cfg: ModelConfig, limit: int | None = None) -> GenerationPlan:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    prompts = store.prompts_for_generation(dataset)
    if prompts.empty:
        raise ValueError(f"dataset {dataset!r} has no prompt texts to answer")
    rows = prompts.to_dict("records")
    if limit:
        rows = rows[:limit]
    status = store.generation_status(dataset, cfg.name, cfg.settings_key)
    done = set(status.loc[status["status"] == "ok", "prompt_id"].astype(int))
    todo = [r for r in rows if int(r["prompt_id"]) not in done]
    return GenerationPlan(todo, len(rows))


# ------------------------------------------------------------------ execute
@dataclass
class GenerationStats:
    planned: int = 0
    ok: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    errors: list[str] = field(default_factory=list)

    @property
    def finished(self) -> int:
        return self.ok + self.failed


def split_reasoning(content: str | None, message: Any) -> tuple[str, str | None]:
    """(answer, reasoning): a reasoning field of the message, or a leading ``<think>…</think>``, kept apart."""
    extra = getattr(message, "model_extra", None) or {}
    reasoning = getattr(message, "reasoning_content", None) or extra.get("reasoning_content") or extra.get("reasoning")
    text = content or ""
    m = _THINK.match(text)
    if m:
        reasoning = "\n\n".join(x for x in (reasoning, m.group(1).strip()) if x)
        text = text[m.end() :]
    return text, (reasoning if isinstance(reasoning, str) and reasoning else None)


async def _answer(client: Any, cfg: ModelConfig, prompt: dict) -> dict:
    """One prompt answered turn by turn; a result row for the store (status 'ok' or 'failed' with the reason)."""
    import openai

    asked = json.loads(prompt["turns"]) if isinstance(prompt.get("turns"), str) else [prompt["text"]]
    messages: list[dict] = [{"role": "system", "content": cfg.system_prompt}] if cfg.system_prompt else []
    answers: list[str] = []
    thoughts: list[str] = []
    tokens_in = tokens_out = 0
    latency = 0.0
    for question in asked:
        messages.append({"role": "user", "content": question or ""})
        attempt = 0
        while True:
            t0 = time.perf_counter()
            try:
                resp = await client.chat.completions.create(
                    model=cfg.model, messages=messages, temperature=cfg.temperature, max_tokens=cfg.max_tokens
                )
                break
            except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError) as exc:
                reason = f"{type(exc).__name__}: {redact.clip(exc, 200)}"
            except openai.APIStatusError as exc:
                if exc.status_code < 500:
                    return _failed(prompt, f"HTTP {exc.status_code}: {redact.clip(exc, 200)}")
                reason = f"HTTP {exc.status_code}: {redact.clip(exc, 200)}"
            attempt += 1
            if attempt > cfg.max_retries:
                return _failed(prompt, f"gave up after {attempt} attempts ({reason})")
            await asyncio.sleep(min(30.0, 0.5 * 2 ** (attempt - 1)) * random.uniform(0.5, 1.5))
        latency += (time.perf_counter() - t0) * 1000
        choice = resp.choices[0] if resp.choices else None
        if choice is None:
            return _failed(prompt, "the response has no choices")
        text, thought = split_reasoning(choice.message.content, choice.message)
        answers.append(text)
        if thought:
            thoughts.append(thought)
        messages.append({"role": "assistant", "content": text})
        if resp.usage is not None:
            tokens_in += int(resp.usage.prompt_tokens or 0)
            tokens_out += int(resp.usage.completion_tokens or 0)
    # A model may repeat the key (a proxy that echoes it, a prompt that asks for it): what is kept is redacted,
    # before the style counts, so they describe the stored text.
    values = redact.secrets()
    answers = [redact.redact(a, values) for a in answers]
    joined = "\n\n".join(answers)
    counts = style_counts(joined)
    return {
        "prompt_id": int(prompt["prompt_id"]),
        "status": "ok",
        "text": joined,
        "reasoning": redact.redact("\n\n".join(thoughts), values) or None,
        "turns": json.dumps(answers, ensure_ascii=False) if len(answers) > 1 else None,
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "latency_ms": latency,
        "style": None if counts is None else asdict(counts),
    }


def _failed(prompt: dict, reason: str) -> dict:
    return {"prompt_id": int(prompt["prompt_id"]), "status": "failed", "error": redact.redact(reason)}


def generate(
    db_path: str | Path,
    dataset: str,
    cfg: ModelConfig,
    limit: int | None = None,
    progress: Callable[[GenerationStats], None] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[GenerationPlan, GenerationStats]:
    """Generate the missing answers; the store is opened to plan and for each merge of the journal only.

    Answers a killed run journaled are merged first, so the plan never asks for them again."""
    path = str(db_path)
    if pending_generation_journals(path):
        with Store.open(path, wait_s=waits.WORKER.seconds) as store:
            reconcile_generations(store, path)
    with Store.open(path, read_only=True, wait_s=waits.WORKER.seconds) as store:
        gen_plan = plan_generation(store, dataset, cfg, limit)
    stats = GenerationStats(planned=len(gen_plan.todo))
    if gen_plan.todo:
        asyncio.run(_run(path, dataset, cfg, gen_plan.todo, stats, progress, cancel))
    return gen_plan, stats


async def _run(
    path: str,
    dataset: str,
    cfg: ModelConfig,
    todo: list[dict],
    stats: GenerationStats,
    progress: Callable[[GenerationStats], None] | None,
    cancel: threading.Event | None,
) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=cfg.base_url, api_key=cfg.api_key(), timeout=cfg.timeout_s, max_retries=0)

    def open_store(wait_s: float) -> Store:
        return Store.open(path, read_only=False, wait_s=wait_s)

    journal = GenerationJournal(path, open_store, dataset, cfg.name, cfg.settings_key, cfg.settings())
    queue = iter(todo)

    async def worker() -> None:
        for prompt in queue:
            if cancel is not None and cancel.is_set():
                return
            row = await _answer(client, cfg, prompt)
            journal.append([row])  # kept before anything else happens to this process
            if row["status"] == "ok":
                stats.ok += 1
                stats.prompt_tokens += row["prompt_tokens"]
                stats.completion_tokens += row["completion_tokens"]
            else:
                stats.failed += 1
                stats.errors.append(row["error"])
            if progress is not None:
                progress(stats)

    try:
        await asyncio.gather(*(worker() for _ in range(min(cfg.concurrency, len(todo)))))
    finally:
        await client.close()
        # The last merge waits for the store as the old batch writes did; a store held beyond that leaves the
        # journal for the next run's reconciliation (nothing paid is lost).
        await asyncio.to_thread(journal.close, waits.PAID_WORK.seconds, {})


def model_to_toml(cfg: ModelConfig) -> str:
    """The configuration as TOML that :func:`load_model_toml` reads back (never a key: only its variable's name)."""
    return mapping_to_toml(asdict(cfg))


def start_generation_worker(db_path: str | Path, dataset: str, cfg: ModelConfig, limit: int | None = None) -> Any:
    """``python -m core generate`` in a worker process (the Admin page; see :mod:`core.app.workers`)."""
    from core.app.workers import spawn

    cfg.api_key()  # an unset key variable fails on the page, not in the worker's log
    args = ["--limit", str(int(limit))] if limit else []
    return spawn("generate", db_path, dataset, cfg.name, model_to_toml(cfg), args)
