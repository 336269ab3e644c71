"""Judge runs through the OpenAI Batch API (``mode = "batch"``): the same judgments at the batch price.

A batch run writes the requests an online run would send (same bodies) to a JSONL file, uploads it
(``/v1/files``), creates a batch (``/v1/batches``), polls it and parses its output file into the
same judgments.  It is built to be killed at any moment and run again:

* before anything reaches the provider, the batch's units are recorded in the store under a key
  of ours (status 'submitting'), and the batch carries that key in its metadata; a process killed
  between the upload and the record of the provider's batch id finds the batch again by listing the
  provider's batches, instead of submitting (and paying for) it twice;
* units in a batch that is not collected yet are never submitted again: the next run collects it;
* a batch's judgments and its new state are written in one transaction, and the judgments' unique
  key makes a repeated collection (after a kill mid-write) store each judgment once;
* a request the provider answered 429 or 5xx, or never processed (an expired or cancelled batch),
  stays pending and is submitted again by the next run; a 4xx is the endpoint's final word and is
  stored as a failed call with its reason (``--retry-failed`` retries those);
* the uploaded input file's id is recorded as soon as the upload returns: a process killed after the
  upload but before the batch was created creates it from that file (no second upload), and a batch's
  input file is deleted at the provider once the batch is collected (it holds every prompt).

A run polls for up to ``batch_wait_s`` and then stops with status 'paused' (exit 75): batches can
take hours, and the same command collects them later.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from typing import Any

from core import redact
from core.judging.config import JudgeConfig
from core.judging.prompts import render
from core.judging.runner import (
    CostGuard,
    EndpointRefused,
    EndpointUnreachable,
    Outcome,
    RunStats,
    Unit,
    _read_completion,
    judgment_row,
    request_body,
)
from core.store import waits
from core.store.errors import StoreLockedError
from core.text import json_lines

METADATA_KEY = "arena_batch_key"  # our key in the provider's batch metadata
FINAL = ("completed", "failed", "expired", "cancelled")


def unit_key(unit: Unit) -> str:
    """A unit's ``custom_id`` in the batch file (unique per judge, prompt version and dataset)."""
    return f"{unit.battle_id}:{unit.order}:{unit.variant}"


def request_line(cfg: JudgeConfig, unit: Unit) -> dict:
    messages = render(cfg.template, unit.prompt, unit.text_a, unit.text_b, unit.order, unit.turns)
    return {
        "custom_id": unit_key(unit),
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": request_body(cfg, messages),
    }


def make_client(cfg: JudgeConfig) -> Any:
    """A synchronous ``openai.OpenAI`` client: a batch run makes a handful of calls, each retried by the SDK."""
    import openai

    return openai.OpenAI(
        base_url=cfg.base_url, api_key=cfg.api_key(), max_retries=cfg.max_retries, timeout=cfg.timeout_s
    )


@dataclass
class _Open:
    """A batch of this judge that is not collected yet (from the store)."""

    key: str
    batch_id: str | None
    units: list[tuple[int, str, str]]  # (battle_id, order, variant)
    input_file_id: str | None = None


def _line_outcome(line: dict) -> tuple[str, Outcome | None]:
    """A batch output or error line → (custom_id, outcome); outcome None: the request stays pending."""
    custom_id = str(line.get("custom_id"))
    response = line.get("response") or {}
    code = response.get("status_code")
    body = response.get("body")
    if code == 200 and body is not None:
        raw = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        try:
            return custom_id, Outcome("answered", _read_completion(raw))
        except ValueError as exc:  # a 200 that is not a completion: kept, as an online run keeps it
            text = raw.decode("utf-8", errors="replace")
            result = {"raw_output": text, "top": None, "prompt_tokens": 0, "completion_tokens": 0, "finish": None}
            return custom_id, Outcome("answered", result, reason=f"malformed response body: {redact.clip(exc, 200)}")
    error = line.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    if isinstance(code, int) and 400 <= code < 500 and code not in (408, 429):
        return custom_id, Outcome("failed", reason=f"HTTP {code}: {redact.clip(message, 200)}")
    return custom_id, None


class BatchRun:
    """One judge run in batch mode; see the module docstring for what survives a kill."""

    def __init__(
        self,
        open_store: Callable[[float], AbstractContextManager[Any]],
        dataset: str,
        judge_id: int,
        run_id: int,
        cfg: JudgeConfig,
        stats: RunStats,
        progress: Callable[[RunStats], None] | None = None,
        cancel: Any = None,
        client: Any = None,
    ):
        self.open_store, self.dataset, self.judge_id, self.run_id = open_store, dataset, judge_id, run_id
        self.cfg, self.stats, self.progress, self.cancel = cfg, stats, progress, cancel
        self.client = client or make_client(cfg)
        self.units: dict[str, Unit] = {}

    # -- provider calls, with the errors an operator can act on
    def _provider(self, what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        import openai

        try:
            return call(*args, **kwargs)
        except openai.APIConnectionError as exc:
            raise EndpointUnreachable(f"{what}: cannot reach the endpoint ({exc})") from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403, 404):
                raise EndpointRefused(f"{what}: HTTP {exc.status_code}: {redact.clip(exc, 200)}") from None
            raise

    def _cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    # -- the run
    def run(self, units: list[Unit]) -> RunStats:
        stats, cfg = self.stats, self.cfg
        self.units = {unit_key(u): u for u in units}
        open_batches = self._adopt(self._open_batches())
        in_flight = {f"{b}:{o}:{v}" for ob in open_batches for b, o, v in ob.units}
        to_submit = [u for u in units if unit_key(u) not in in_flight]
        to_submit = self._within_budget(to_submit)
        for start in range(0, len(to_submit), cfg.batch_max_requests):
            if self._cancelled():
                break
            open_batches.append(self._submit(to_submit[start : start + cfg.batch_max_requests]))
        deadline = time.monotonic() + cfg.batch_wait_s
        while open_batches:
            still = []
            for ob in open_batches:
                batch = self._provider("polling a batch", self.client.batches.retrieve, ob.batch_id)
                if batch.status in FINAL and self._collect(ob, batch):
                    continue
                still.append((ob, batch))
            open_batches = [ob for ob, _ in still]
            self._heartbeat()
            if not open_batches:
                break
            if self._cancelled() or time.monotonic() >= deadline:
                waiting = "; ".join(f"batch {b.id} {b.status} ({_counts(b)})" for _, b in still)
                stats.status = "paused"
                stats.message = (
                    f"{'cancelled while' if self._cancelled() else f'after {cfg.batch_wait_s:g} s'} waiting for "
                    f"{waiting}; run the same command to collect"
                )
                return stats
            time.sleep(min(cfg.batch_poll_s, max(0.0, deadline - time.monotonic())))
        left = stats.planned - stats.finished
        if self._cancelled() and left > stats.deferred:
            stats.status, stats.message = "cancelled", "cancelled by the user; run the same command to resume"
        elif stats.deferred:
            stats.status = "incomplete"
            stats.message = f"{stats.deferred} requests of the batch were not answered; run the same command to retry"
        elif left > 0:
            stats.status, stats.message = "stopped", "cost budget (max_cost_usd) reached before all planned calls"
        else:
            stats.status = "done"
        return stats

    def _within_budget(self, units: list[Unit]) -> list[Unit]:
        """With ``max_cost_usd``: only the units whose estimated cost (at the configured prices) fits."""
        guard = CostGuard(self.cfg, self.stats)
        if not guard.active:
            return units
        kept = []
        for u in units:
            messages = render(self.cfg.template, u.prompt, u.text_a, u.text_b, u.order, u.turns)
            if guard.reserve(sum(len(m["content"]) for m in messages)) is None:
                break
            kept.append(u)
        return kept

    def _open_batches(self) -> list[_Open]:
        with self.open_store(waits.BATCH.seconds) as store:
            rows = store.open_batches(self.judge_id, self.cfg.version, self.dataset)
        out = []
        for r in rows:
            units = [(int(b), str(o), str(v)) for b, o, v in json.loads(r["units_json"])]
            out.append(_Open(r["batch_key"], r["batch_id"], units, r.get("input_file_id")))
        return out

    def _adopt(self, batches: list[_Open]) -> list[_Open]:
        """Batches recorded as 'submitting' (killed before their id was stored): found by key, or dropped."""
        pending = {b.key: b for b in batches if b.batch_id is None}
        if pending:
            after = None
            while True:  # the provider's batches, newest first, until every pending key is found or none is left
                page = self._provider(
                    "listing batches", self.client.batches.list, limit=100, **({"after": after} if after else {})
                )
                for b in page.data:
                    key = (b.metadata or {}).get(METADATA_KEY)
                    if key in pending and pending[key].batch_id is None:
                        pending[key].batch_id = b.id
                        with self.open_store(waits.BATCH.seconds) as store:
                            store.batch_update(key, batch_id=b.id, status="submitted", run_id=self.run_id)
                if not page.data or not getattr(page, "has_more", False) or all(p.batch_id for p in pending.values()):
                    break
                after = page.data[-1].id
            for ob in pending.values():
                if ob.batch_id is None and ob.input_file_id:
                    self._create_from_upload(ob)
            with self.open_store(waits.BATCH.seconds) as store:
                for key, ob in pending.items():
                    if ob.batch_id is None:
                        store.drop_batch(key)
        return [b for b in batches if b.batch_id is not None]

    def _create_from_upload(self, ob: _Open) -> None:
        """A batch killed after its upload and before its creation: created from the file already uploaded (its
        lines are exactly the recorded units), not uploaded a second time.  A file the provider no longer has
        leaves the record to be dropped and its units submitted anew."""
        import openai

        try:
            batch = self._create_once(ob.key, str(ob.input_file_id))
        except (EndpointRefused, openai.BadRequestError, openai.NotFoundError):
            self._delete_file(ob.input_file_id)
            return
        ob.batch_id = batch.id
        with self.open_store(waits.BATCH.seconds) as store:
            store.batch_update(ob.key, batch_id=batch.id, status="submitted", run_id=self.run_id)
        self.stats.calls += len(ob.units)

    def _delete_file(self, file_id: str | None) -> None:
        """Remove an input file at the provider; best effort (the judgments do not depend on it, and a file
        already gone is what we want)."""
        import openai

        if not file_id:
            return
        with suppress(openai.OpenAIError):
            self.client.files.delete(file_id)

    def _submit(self, units: list[Unit]) -> _Open:
        key = uuid.uuid4().hex
        ids = [(u.battle_id, u.order, u.variant) for u in units]
        with self.open_store(waits.BATCH.seconds) as store:
            store.begin_batch(key, self.run_id, self.judge_id, self.cfg.version, self.dataset, ids)
        data = b"".join(json.dumps(request_line(self.cfg, u), ensure_ascii=False).encode() + b"\n" for u in units)
        upload = self._provider(
            "uploading the batch file",
            lambda: self.client.files.create(file=(f"judge-{key}.jsonl", data, "application/jsonl"), purpose="batch"),
        )
        # Recorded before the create: a kill from here on resumes from this file instead of uploading again.
        with self.open_store(waits.BATCH.seconds) as store:
            store.batch_update(key, input_file_id=upload.id)
        batch = self._create_once(key, upload.id)
        with self.open_store(waits.BATCH.seconds) as store:
            store.batch_update(key, batch_id=batch.id, input_file_id=upload.id, status="submitted")
        self.stats.calls += len(units)
        return _Open(key, batch.id, [(int(b), str(o), str(v)) for b, o, v in ids], upload.id)

    def _create_once(self, key: str, input_file_id: str) -> Any:
        """Create the batch exactly once.  A create is never retried blindly: one that timed out (or whose
        answer was lost, or a 5xx) may have been made by the provider all the same, and a second create would
        be a second paid batch nobody collects.  So after such a failure the provider's batches are searched
        for our key, for up to ``timeout_s`` (a slow create lands meanwhile), before the create is tried again."""
        import openai

        once = self.client.with_options(max_retries=0)  # the SDK's own retries would create blindly
        attempts = max(1, self.cfg.max_retries + 1)
        for attempt in range(attempts):
            try:
                return self._provider(
                    "creating the batch",
                    once.batches.create,
                    input_file_id=input_file_id,
                    endpoint="/v1/chat/completions",
                    completion_window="24h",
                    metadata={METADATA_KEY: key, "judge": self.cfg.name[:64]},
                )
            except (EndpointUnreachable, openai.APITimeoutError, openai.InternalServerError) as exc:
                deadline = time.monotonic() + self.cfg.timeout_s
                while True:
                    found = self._find_by_key(key)
                    if found is not None:
                        return found
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(min(1.0, self.cfg.timeout_s / 4))
                if attempt == attempts - 1:
                    raise EndpointUnreachable(
                        f"creating the batch: no answer after {attempts} attempts, and no batch with our key "
                        f"{key} at the provider ({redact.clip(exc, 200)})"
                    ) from None
        raise AssertionError("unreachable")

    def _find_by_key(self, key: str) -> Any:
        """The provider's batch carrying our key (the oldest, when a lost answer left several: the others are
        cancelled, since nobody would collect them); None when there is none."""
        found: list[Any] = []
        after = None
        while True:
            page = self._provider(
                "listing batches", self.client.batches.list, limit=100, **({"after": after} if after else {})
            )
            found += [b for b in page.data if (b.metadata or {}).get(METADATA_KEY) == key]
            if not page.data or not getattr(page, "has_more", False):
                break
            after = page.data[-1].id
        if not found:
            return None
        found.sort(key=lambda b: (getattr(b, "created_at", 0) or 0, b.id))
        for extra in found[1:]:
            self._provider("cancelling a duplicate batch", self.client.batches.cancel, extra.id)
        return found[0]

    def _file_lines(self, file_id: str | None) -> list[dict]:
        if not file_id:
            return []
        content = self._provider("downloading batch results", lambda: self.client.files.content(file_id))
        out = []
        for _, line in json_lines(content.text):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a torn line is a request without a result: it stays pending
        return out

    def _collect(self, ob: _Open, batch: Any) -> bool:
        """Store a finished batch's judgments and its final state together; False if the store was busy."""
        lines = self._file_lines(batch.output_file_id) + self._file_lines(batch.error_file_id)
        known = {f"{b}:{o}:{v}": (b, o, v) for b, o, v in ob.units}
        got = RunStats()  # counted into the run's statistics once the rows are stored
        rows, answered = [], set()
        for line in lines:
            custom_id, out = _line_outcome(line)
            if out is None or custom_id not in known or custom_id in answered:
                continue
            battle_id, order, variant = known[custom_id]
            unit = self.units.get(custom_id) or Unit(battle_id, order, "", "", "", variant=variant)
            rows.append(judgment_row(self.cfg, unit, self.judge_id, self.run_id, out, got))
            if out.result:
                got.prompt_tokens += int(out.result["prompt_tokens"] or 0)
                got.completion_tokens += int(out.result["completion_tokens"] or 0)
            answered.add(custom_id)
        unanswered = len(known) - len(answered)
        got.deferred = sum(1 for k in known if k in self.units and k not in answered)
        message = f"{batch.status}: {len(answered)} of {len(known)} requests answered"
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            first = errors[0].message if errors and getattr(errors[0], "message", None) else "no reason given"
            message += f"; the provider rejected the batch ({redact.clip(first, 200)})"
        if unanswered:
            message += f"; {unanswered} stay pending for the next run"
        from core.store.judging import batch_update_sql

        update = batch_update_sql(
            ob.key,
            {
                "status": "collected" if batch.status == "completed" else batch.status,
                "output_file_id": batch.output_file_id,
                "error_file_id": batch.error_file_id,
                "message": redact.redact(message),
            },
        )
        for name, value in got.counters().items():
            setattr(self.stats, name, getattr(self.stats, name) + value)
        try:
            with self.open_store(waits.BATCH.seconds) as store:
                store.record_judgments(rows, run_progress=self._progress_fields(), also=(update,))
        except StoreLockedError:  # collected again at the next poll
            for name, value in got.counters().items():
                setattr(self.stats, name, getattr(self.stats, name) - value)
            return False
        # Collected: the provider's copy of every prompt has served its purpose.
        self._delete_file(getattr(batch, "input_file_id", None) or ob.input_file_id)
        if self.progress:
            self.progress(self.stats)
        return True

    def _progress_fields(self) -> tuple[int, dict]:
        return self.run_id, {**self.stats.counters(), "status": self.stats.status, "heartbeat": True}

    def _heartbeat(self) -> None:
        try:
            with self.open_store(waits.BATCH.seconds) as store:
                store.record_judgments([], run_progress=self._progress_fields())
        except StoreLockedError:
            pass


def _counts(batch: Any) -> str:
    c = getattr(batch, "request_counts", None)
    if c is None:
        return "progress unknown"
    return f"{c.completed} of {c.total} requests done"
