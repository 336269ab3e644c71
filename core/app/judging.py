"""Judging runs from the CLI and the Admin page: register the judge, plan the units, run, keep the run's row.

The runner (``core.judging.runner``) executes units against the endpoint;
this module decides which units (those with no stored judgment under the
judge's prompt version, optionally a balanced sample) and records the run.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core import redact
from core.app.workers import WorkerProcess, spawn
from core.judging.client import connection_test
from core.judging.config import TEMPLATES, ConfigError, JudgeConfig, from_mapping, load_toml, to_toml
from core.judging.prompts import Turns, render
from core.judging.runner import EndpointRefused, EndpointUnreachable, RunStats, Unit, execute
from core.stats.bias import echo_intervention_summary
from core.stats.budget import balanced_subsample
from core.store import Store, StoreError, waits
from core.store.journal import RunJournal, lease_alive, process_start, reconcile, this_host
from core.text import detect_echo, make_echo_variant

__all__ = [
    "TEMPLATES",
    "ConfigError",
    "EndpointRefused",
    "EndpointUnreachable",
    "JudgeConfig",
    "PlanError",
    "RunOutcome",
    "RunStats",
    "Unit",
    "WorkerProcess",
    "connection_test",
    "covers",
    "from_mapping",
    "load_toml",
    "echo_intervention_results",
    "judge_config",
    "live_run",
    "parse_failures",
    "plan_echo_intervention",
    "plan_repeats",
    "judge_variance_of",
    "reconcile_runs",
    "register_judge",
    "run",
    "run_shared",
    "runs",
    "plan_run",
    "RunPlan",
    "RunEstimate",
    "estimate_run",
    "estimate_plan",
    "run_definition",
    "start_worker",
]

SAMPLES = ("all", "balanced")


class PlanError(ValueError):
    """The dataset cannot be judged with this configuration (and why)."""


# What makes a judge's judgments the judge's: a run that changes one of these under the judge's name would
# replace what its leaderboard reads (another model, prompt or sampling), so it must say so (--replace-judge).
# base_url, replicas, budgets, prices and the transport settings may change freely: the same judge, reached
# another way.
IDENTITY_FIELDS = ("model", "template", "version", "temperature", "max_tokens", "top_logprobs")


def _identity(cfg: JudgeConfig) -> dict[str, Any]:
    return {f: getattr(cfg, f) for f in IDENTITY_FIELDS}


def judge_identity_change(store: Store, cfg: JudgeConfig) -> str | None:
    """What a run of ``cfg`` would change about the existing judge of that name (None: nothing, or no such
    judge yet): the fields of :data:`IDENTITY_FIELDS` that differ, or that the judge's judgments were imported
    (it has no configuration to keep to)."""
    try:
        row = store.judge(cfg.name)
    except StoreError:
        return None
    if not row["config"]:
        n = store.judgment_count(cfg.name)
        if not n:
            return None
        return (
            f"judge {cfg.name!r} holds {n:,} imported judgments (prompt version {row.get('prompt_version')!r}); a run "
            "under its name would mix live calls into them and move its leaderboard to the new prompt version"
        )
    try:
        stored = from_mapping(row["config"], f"the stored configuration of judge {cfg.name!r}")
    except ConfigError:
        return f"judge {cfg.name!r} has a stored configuration this version cannot read"
    before, after = _identity(stored), _identity(cfg)
    changed = [f"{k} {before[k]!r} → {after[k]!r}" for k in IDENTITY_FIELDS if before[k] != after[k]]
    if not changed:
        return None
    return f"judge {cfg.name!r} exists with another configuration ({'; '.join(changed)})"


def check_judge_identity(store: Store, cfg: JudgeConfig, replace_judge: bool) -> None:
    """Refuse a run that would silently re-point an existing judge (its leaderboard would change under the same
    name); ``replace_judge`` is the user saying that is what they want."""
    change = judge_identity_change(store, cfg)
    if change is not None and not replace_judge:
        raise PlanError(
            f"{change}. Give the run another name, or pass --replace-judge (the Admin form asks) to make this "
            "configuration the judge's from now on"
        )


def register_judge(store: Store, cfg: JudgeConfig) -> int:
    """Create or update the judge's row from its configuration (never a key); returns its id."""
    from core.ingest.common import known_family

    jid = store.save_judge_config(
        cfg.name,
        cfg.to_store(),
        model=cfg.model,
        base_url=cfg.base_url,
        template=cfg.template,
        prompt_version=cfg.version,
    )
    if cfg.family is not None:  # stated in the configuration: it wins
        store.set_judge_family(cfg.name, cfg.family)
    elif (guess := known_family(cfg.model)) is not None:  # never over a family stated before (CLI, Admin)
        store.set_judge_family(cfg.name, guess, only_if_unset=True)
    return jid


def set_judge_family(store: Store, judge: str, family: str) -> None:
    """Say which family (organisation) a judge belongs to, for self-preference on the Judge bias page.

    Raises ``ValueError`` for a malformed family name or an unknown judge."""
    from core.judging.config import FAMILY_NAME

    if FAMILY_NAME.fullmatch(family) is None:
        raise ValueError(
            f"family {family[:40]!r} is not a lowercase name of at most 40 letters, digits, '-', '_' or '.'"
        )
    if store.judge_id(judge) is None:
        raise ValueError(f"no judge named {judge[:100]!r} in the store")
    store.set_judge_family(judge, family)


def judge_families(store: Store, dataset: str) -> pd.DataFrame:
    """The judges of ``dataset`` and the family each is known to belong to (None when nobody said)."""
    return store.judges_frame(dataset)[["judge", "family"]]


def record_judge_family(db_path: str | Path, judge: str, family: str) -> None:
    """:func:`set_judge_family` in a brief write of the store at ``db_path`` (the Admin page's setting);
    waits for another writer as a vote does.  Raises ``ValueError`` or ``StoreError``."""
    with Store.open(str(db_path), read_only=False, wait_s=waits.VOTE.seconds) as store:
        set_judge_family(store, judge, family.strip())


@dataclass(frozen=True)
class RunPlan:
    """What a run covers and what of it is still to do.

    ``defined``: the size of the set the command names: every (battle, order) with texts, or its
    balanced sample, cut to the first ``limit`` in a fixed order (battle id, then order), whatever is
    already judged, so the same command always names the same set.  ``units``: the part of that set
    not judged yet.  ``definition``: the rule, stored with the run (``--resume``).
    """

    units: list[Unit]
    defined: int
    definition: dict

    @property
    def already_done(self) -> int:
        return self.defined - len(self.units)


def plan_run(
    store: Store,
    dataset: str,
    cfg: JudgeConfig,
    limit: int | None = None,
    sample: str = "all",
    seed: int = 0,
    retry_failed: bool = False,
    battle_ids: set[int] | None = None,
) -> RunPlan:
    """The set of units the arguments define, and the ones of it still missing for this judge and prompt version.

    ``limit`` selects the set (the first ``limit`` units of the dataset's, or of the balanced sample's,
    fixed order); it is not a budget of calls: running the same command again completes that set and
    never goes beyond it.  ``retry_failed``: also the units whose stored call failed (the endpoint's
    4xx); a success replaces the failure, nothing else is ever replaced.
    """
    if sample not in SAMPLES:
        raise PlanError(f"unknown sample {sample!r}: expected one of {', '.join(SAMPLES)}")
    if limit is not None and limit < 1:
        raise PlanError(f"limit must be at least 1, got {limit}")
    battles = store.battles_for_judging(dataset)
    if battle_ids is not None:  # only these battles (a new model's, for `evaluate`)
        battles = battles[battles["battle_id"].isin(battle_ids)]
    if battles.empty:
        raise PlanError(f"dataset {dataset!r} has no battles" + (" among those asked for" if battle_ids else ""))
    texts = battles["text_a"].notna() & battles["text_b"].notna() & battles["prompt"].notna()
    if cfg.template == "echo":
        texts = battles["text_a"].notna() & battles["prompt"].notna()
    if not texts.any():
        raise PlanError(
            f"dataset {dataset!r} has no prompt and completion texts to show a judge "
            "(import completions, e.g. an Arena-Hard directory or LMArena conversations)"
        )
    battles = battles[texts]
    judge_id = store.judge_id(cfg.name)  # read only: planning (and estimating) writes nothing
    done = (
        store.existing_judgment_keys(judge_id, cfg.version, dataset)
        if judge_id is not None
        else pd.DataFrame({"battle_id": [], "order": []})
    )
    have = set(zip(done["battle_id"].tolist(), done["order"].tolist()))
    if retry_failed and judge_id is not None:
        failed = store.failed_call_keys(judge_id, cfg.version, dataset)
        failed = failed[failed["variant"] == "original"]
        have -= set(zip(failed["battle_id"].tolist(), failed["order"].tolist()))
    orders = ["ab", "ba"] if cfg.both_orders and cfg.template != "echo" else ["ab"]
    if sample == "balanced":
        n_models = len(set(battles["model_a"]) | set(battles["model_b"]))
        target = limit if limit else len(battles) * len(orders)
        per_model = max(1, int(np.ceil(2 * target / len(orders) / max(n_models, 1))))
        battles = balanced_subsample(battles, per_model, np.random.default_rng(seed))
    battles = battles.sort_values("battle_id", kind="stable")  # the fixed order the limit cuts
    defined = [(r, o) for r in battles.itertuples() for o in orders]
    if limit:
        defined = defined[:limit]
    units = [
        Unit(int(r.battle_id), o, r.prompt, r.text_a, r.text_b if r.text_b is not None else "", turns=_turns(r))
        for r, o in defined
        if (int(r.battle_id), o) not in have
    ]
    definition = {
        "dataset": dataset,
        "judge": cfg.name,
        "prompt_version": cfg.version,
        "sample": sample,
        "seed": seed,
        "limit": limit,
        "retry_failed": retry_failed,
        "units": len(defined),
        **({"battle_ids": sorted(battle_ids)} if battle_ids is not None else {}),
    }
    return RunPlan(units, len(defined), definition)


# A token is about four characters of English text (OpenAI's rule of thumb); used until calls are measured.
DEFAULT_TOKENS_PER_CHAR = 0.25


@dataclass(frozen=True)
class RunEstimate:
    """What a run's calls should cost, before any is made.

    Prompt tokens: the rendered prompts' characters times the tokens per character measured on this
    judge's earlier calls (``measured_calls`` of them), else :data:`DEFAULT_TOKENS_PER_CHAR`.
    Completion tokens: the mean of those earlier calls, else ``max_tokens`` per call (an upper bound).
    """

    calls: int
    prompt_chars: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    measured_calls: int
    completion_basis: str

    def text(self) -> str:
        basis = (
            f"at the tokens per character of {self.measured_calls} earlier calls"
            if self.measured_calls
            else "at about 4 characters a token (no earlier calls of this judge to measure)"
        )
        cost = (
            f" ≈ ${self.cost_usd:,.4f} at the configured prices"
            if self.cost_usd is not None
            else " (no prices configured: cost unknown)"
        )
        return (
            f"{self.calls:,} calls: ≈ {self.prompt_tokens:,} prompt tokens ({self.prompt_chars:,} characters, {basis}) "
            f"+ {self.completion_tokens:,} completion tokens ({self.completion_basis}){cost}"
        )


def estimate_run(store: Store, dataset: str, cfg: JudgeConfig, units: list[Unit]) -> RunEstimate:
    """The tokens and cost of ``units`` before any call is made (see :class:`RunEstimate`)."""

    def chars(u: Unit) -> int:
        return sum(len(m["content"]) for m in render(cfg.template, u.prompt, u.text_a, u.text_b, u.order, u.turns))

    prompt_chars = sum(chars(u) for u in units)
    judge_id = store.judge_id(cfg.name)
    history = store.token_history(judge_id, cfg.version, dataset) if judge_id is not None else pd.DataFrame()
    ratio, measured = DEFAULT_TOKENS_PER_CHAR, 0
    per_call_completion: float = 1 if cfg.uses_logprobs else cfg.max_tokens
    basis = "max_tokens per call, an upper bound" if not cfg.uses_logprobs else "one token per call"
    if len(history):
        battles = store.battles_for_judging(dataset, sorted(set(history["battle_id"].astype(int)))).set_index(
            "battle_id"
        )
        seen = [
            (Unit(int(b), o, r.prompt, r.text_a, r.text_b or "", turns=_turns(r)), int(t))
            for b, o, t in zip(history["battle_id"], history["order"], history["prompt_tokens"])
            if int(b) in battles.index
            for r in [battles.loc[int(b)]]
        ]
        total_chars = sum(chars(u) for u, _ in seen)
        if total_chars:
            ratio, measured = sum(t for _, t in seen) / total_chars, len(seen)
        if not cfg.uses_logprobs:
            per_call_completion = float(history["completion_tokens"].mean())
            basis = f"the mean of {len(history)} earlier calls"
    prompt_tokens = int(round(prompt_chars * ratio))
    completion_tokens = int(round(per_call_completion * len(units)))
    return RunEstimate(
        len(units),
        prompt_chars,
        prompt_tokens,
        completion_tokens,
        cfg.cost(prompt_tokens, completion_tokens),
        measured,
        basis,
    )


def estimate_plan(
    store: Store, dataset: str, cfg: JudgeConfig, limit: int | None = None, sample: str = "all", seed: int = 0
) -> tuple[RunPlan, RunEstimate]:
    """What a run with these arguments would cover and cost; reads the store, writes nothing (the Admin page)."""
    run_plan = plan_run(store, dataset, cfg, limit, sample, seed)
    return run_plan, estimate_run(store, dataset, cfg, run_plan.units)


def _turns(r: Any) -> Turns | None:
    """A battle's conversation turn by turn, when its prompt has several turns (stored as JSON lists)."""
    if not isinstance(r.prompt_turns, str):
        return None
    asked = json.loads(r.prompt_turns)

    def answers(stored: Any, text: str | None) -> list[str | None]:
        return json.loads(stored) if isinstance(stored, str) else [text]

    return asked, answers(r.turns_a, r.text_a), answers(r.turns_b, r.text_b)


def plan_echo_intervention(
    store: Store, dataset: str, cfg: JudgeConfig, sample_size: int = 100, seed: int = 0
) -> list[Unit]:
    """The echo intervention (correct-looks-better §5.4) through the real pipeline.

    A seeded sample of battles where neither answer echoes is judged three ways:
    as is, and with the question–answer text appended three times to side a
    (variant 'echo_a') or side b ('echo_b'); stored as judgment variants.
    """
    if cfg.template == "echo":
        raise PlanError("the echo intervention needs a pairwise template, not 'echo'")
    battles = store.battles_for_judging(dataset)
    ok = battles["text_a"].notna() & battles["text_b"].notna() & battles["prompt"].notna()
    battles = battles[ok]
    clean = [
        not detect_echo(a).is_echo and not detect_echo(b).is_echo for a, b in zip(battles["text_a"], battles["text_b"])
    ]
    battles = battles[np.array(clean, bool)] if len(battles) else battles
    if battles.empty:
        raise PlanError(f"dataset {dataset!r} has no battles with texts where neither answer echoes")
    sample = battles.sample(min(sample_size, len(battles)), random_state=seed)
    judge_id = register_judge(store, cfg)
    units = []
    for variant in ("original", "echo_a", "echo_b"):
        have = store.existing_judgment_keys(judge_id, cfg.version, dataset, variant=variant)
        done = set(zip(have["battle_id"].tolist(), have["order"].tolist()))
        for r in sample.itertuples():
            a = make_echo_variant(r.prompt, r.text_a) if variant == "echo_a" else r.text_a
            b = make_echo_variant(r.prompt, r.text_b) if variant == "echo_b" else r.text_b
            for order in ("ab", "ba"):
                if (int(r.battle_id), order) not in done:
                    units.append(Unit(int(r.battle_id), order, r.prompt, a, b, variant))
    return units


def plan_repeats(
    store: Store, dataset: str, cfg: JudgeConfig, sample_size: int = 50, repeats: int = 2, seed: int = 0
) -> list[Unit]:
    """Judge variance: a seeded sample of battles judged ``repeats`` more times (variants 'repeat-1' …), at the
    configured temperature, plus the original judgment where it is missing; resumable like any run."""
    if repeats < 1 or sample_size < 1:
        raise PlanError("repeats and the sample size must be at least 1")
    battles = store.battles_for_judging(dataset)
    ok = battles["text_a"].notna() & battles["text_b"].notna() & battles["prompt"].notna()
    battles = battles[ok]
    if battles.empty:
        raise PlanError(f"dataset {dataset!r} has no battles with texts to re-judge")
    sample = battles.sample(min(sample_size, len(battles)), random_state=seed).sort_values("battle_id")
    judge_id = store.judge_id(cfg.name)
    orders = ["ab", "ba"] if cfg.both_orders else ["ab"]
    units = []
    for variant in ("original", *(f"repeat-{r}" for r in range(1, repeats + 1))):
        have = (
            store.existing_judgment_keys(judge_id, cfg.version, dataset, variant=variant)
            if judge_id is not None
            else pd.DataFrame({"battle_id": [], "order": []})
        )
        done = set(zip(have["battle_id"].tolist(), have["order"].tolist()))
        for r in sample.itertuples():
            for order in orders:
                if (int(r.battle_id), order) not in done:
                    units.append(Unit(int(r.battle_id), order, r.prompt, r.text_a, r.text_b, variant, _turns(r)))
    return units


def judge_variance_of(store: Store, dataset: str, judge: str) -> Any:
    """The stored repeats summarised (:func:`core.stats.variance.judge_variance`); None without repeats."""
    from core.stats.variance import judge_variance

    return judge_variance(store.judgments_frame(dataset, judge, variant=None))


def echo_intervention_results(store: Store, dataset: str, judge: str) -> pd.DataFrame | None:
    """The stored intervention judgments, summarised: P(a ≻ b) per variant with 95% intervals."""
    j = store.judgments_frame(dataset, judge, variant=None)
    j = j[j["parse_error"].isna()]
    judged = j[j["battle_id"].isin(j.loc[j["variant"] != "original", "battle_id"])]
    if judged.empty:
        return None
    return echo_intervention_summary(judged[["battle_key", "variant", "order", "p_a", "verdict"]])


def run(
    store: Store,
    dataset: str,
    cfg: JudgeConfig,
    units: list[Unit],
    progress: Callable[[RunStats], None] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[int, RunStats]:
    """Execute ``units`` (blocking) as one recorded run; returns the run id and its statistics."""
    judge_id = register_judge(store, cfg)
    stats = RunStats(planned=len(units))
    run_id = store.create_run(
        judge_id,
        dataset,
        len(units),
        cfg.to_store(),
        owner_pid=os.getpid(),
        owner_host=this_host(),
        owner_start=process_start(os.getpid()),
    )
    try:
        execute(store, judge_id, run_id, cfg, units, stats, progress, cancel)
    except BaseException as exc:
        store.update_run(run_id, **_ended(stats, exc))
        raise
    store.update_run(run_id, **_ended(stats))
    return run_id, stats


def _ended(stats: RunStats, exc: BaseException | None = None) -> dict:
    """The run row's final fields: its counters, and a status and message that say why it ended."""
    if isinstance(exc, EndpointUnreachable):
        stats.status, stats.message = "unreachable", str(exc)
    elif isinstance(exc, EndpointRefused):
        stats.status = "failed"
        stats.message = f"the endpoint refused the run ({exc}): check the model name and the key's variable"
    elif isinstance(exc, KeyboardInterrupt):
        stats.status, stats.message = "cancelled", "interrupted by a signal; run the same command to resume"
    elif exc is not None:
        stats.status, stats.message = "failed", f"{type(exc).__name__}: {exc}"
    return {**stats.counters(), "status": stats.status, "message": stats.message, "finished": True}


@dataclass
class RunOutcome:
    """How a shared-store run ended: ``status`` as in the run list ('nothing' when nothing was planned)."""

    run_id: int | None
    stats: RunStats
    journal_kept: Path | None = None  # the journal, when the store stayed held at the end
    interrupted: list[int] = field(default_factory=list)  # earlier runs found dead and reconciled
    defined: int = 0  # units in the set the command names (judged before or by this run)
    estimate: RunEstimate | None = None  # the calls' tokens and cost, estimated before the run

    @property
    def status(self) -> str:
        return self.stats.status


OPEN_WAIT_S = waits.RUN.seconds  # a run's start and end (each hold is one operation)


def reconcile_runs(store: Store) -> list[int]:
    """Merge what killed runs journaled and mark them ``interrupted`` (their owner process is gone)."""
    return reconcile(store, store.path) if store.path != ":memory:" else []


def run_shared(
    db_path: str | Path,
    dataset: str,
    cfg: JudgeConfig,
    *,
    limit: int | None = None,
    sample: str = "all",
    seed: int = 0,
    retry_failed: bool = False,
    echo_intervention: int | None = None,
    progress: Callable[[RunStats], None] | None = None,
    cancel: threading.Event | None = None,
    on_estimate: Callable[[RunEstimate], None] | None = None,
    estimate_only: bool = False,
    battle_ids: set[int] | None = None,
    repeats: tuple[int, int] | None = None,
    replace_judge: bool = False,
) -> RunOutcome:
    """Plan and execute a run without holding the store: the way the CLI and the Admin page's worker run.

    The store is opened for planning, for each merge of the run's journal
    (about once a second, when nobody else holds it) and for the final
    status, never in between, so the dashboard and other commands keep
    working during a run.  Killed runs found on the way are reconciled first.
    """
    path = str(db_path)

    def open_store(wait_s: float) -> Store:
        return Store.open(path, read_only=False, wait_s=wait_s)

    with open_store(OPEN_WAIT_S) as store:
        interrupted = reconcile_runs(store)
        other = live_run(store, dataset, cfg.name)
        if other is not None:
            raise PlanError(other.refusal(cfg.name, dataset))
        check_judge_identity(store, cfg, replace_judge)
        if repeats is not None:  # (k, sample size)
            units = plan_repeats(store, dataset, cfg, repeats[1], repeats[0], seed)
            definition = {"dataset": dataset, "judge": cfg.name, "repeats": repeats[0], "sample": repeats[1]}
            definition["seed"] = seed
            defined = len(units)
        elif echo_intervention:
            units = plan_echo_intervention(store, dataset, cfg, echo_intervention, seed)
            definition = {"dataset": dataset, "judge": cfg.name, "echo_intervention": echo_intervention, "seed": seed}
            defined = len(units)
        else:
            run_plan = plan_run(
                store,
                dataset,
                cfg,
                limit=limit,
                sample=sample,
                seed=seed,
                retry_failed=retry_failed,
                battle_ids=battle_ids,
            )
            units, definition, defined = run_plan.units, run_plan.definition, run_plan.defined
        if not units or estimate_only:
            estimate = estimate_run(store, dataset, cfg, units) if units else None
            if estimate is not None and on_estimate is not None:
                on_estimate(estimate)
            status = "estimate" if units else "nothing"
            return RunOutcome(
                None, RunStats(status=status), interrupted=interrupted, defined=defined, estimate=estimate
            )
        judge_id = register_judge(store, cfg)
        # max_cost_usd bounds the job, not one run of it: what the job's earlier runs spent counts.
        prior_cost = _job_cost(store, judge_id, dataset, cfg, definition)
        run_cfg = cfg if not prior_cost else replace(cfg, max_cost_usd=max((cfg.max_cost_usd or 0) - prior_cost, 1e-12))
        # The run's row first (a run killed from here on is reconciled as interrupted), then the estimate,
        # still before any call is made.
        run_id = store.create_run(
            judge_id,
            dataset,
            len(units),
            cfg.to_store(),
            owner_pid=os.getpid(),
            owner_host=this_host(),
            definition=definition,
            owner_start=process_start(os.getpid()),
        )
        if on_estimate is not None:
            on_estimate(estimate_run(store, dataset, cfg, units))
    stats = RunStats(planned=len(units))
    if cfg.mode == "batch":
        return _run_batch(
            open_store, dataset, judge_id, run_id, run_cfg, units, stats, progress, cancel, interrupted, defined
        )
    journal = RunJournal(path, run_id, open_store)
    error: BaseException | None = None
    try:
        execute(journal, judge_id, run_id, run_cfg, units, stats, progress, cancel)
    except BaseException as exc:
        error = exc
    if prior_cost and stats.status == "stopped":
        stats.message = (
            f"the job's earlier runs spent ${prior_cost:,.4f} of its ${cfg.max_cost_usd:,.4f}; {stats.message}"
        )
    merged = journal.close(OPEN_WAIT_S, _ended(stats, error))
    outcome = RunOutcome(run_id, stats, None if merged else journal.path, interrupted, defined=defined)
    if error is not None:
        raise error
    return outcome


def _job_cost(store: Store, judge_id: int, dataset: str, cfg: JudgeConfig, definition: dict) -> float:
    """USD the job's earlier runs spent, at the configured prices (0 without a cost budget)."""
    if cfg.max_cost_usd is None:
        return 0.0
    prompt, completion = store.job_tokens(judge_id, dataset, definition)
    return cfg.cost(prompt, completion) or 0.0


def _run_batch(
    open_store: Callable[[float], Store],
    dataset: str,
    judge_id: int,
    run_id: int,
    cfg: JudgeConfig,
    units: list[Unit],
    stats: RunStats,
    progress: Callable[[RunStats], None] | None,
    cancel: threading.Event | None,
    interrupted: list[int],
    defined: int,
) -> RunOutcome:
    """A run through the Batch API (``core.judging.batch``): it writes to the store only a few times (the
    batch's record, its collection), each in a brief hold, so it needs no journal."""
    from core.judging.batch import BatchRun

    error: BaseException | None = None
    try:
        BatchRun(open_store, dataset, judge_id, run_id, cfg, stats, progress, cancel).run(units)
    except BaseException as exc:
        error = exc
    with open_store(OPEN_WAIT_S) as store:
        store.update_run(run_id, **_ended(stats, error))
    if error is not None:
        raise error
    return RunOutcome(run_id, stats, None, interrupted, defined=defined)


def run_definition(store: Store, run_id: int) -> tuple[JudgeConfig, dict]:
    """The configuration and the definition of an earlier run, to complete it with ``judge --resume``."""
    record = store.run_record(run_id)
    if record is None:
        raise PlanError(f"there is no run {run_id} in this store")
    dataset, config_json, definition_json = record
    if not definition_json:
        raise PlanError(f"run {run_id} predates stored run definitions; run its original command again")
    stored = {k: v for k, v in json.loads(config_json).items() if v is not None}
    try:
        cfg = from_mapping(stored, source=f"run {run_id}'s configuration")
    except ConfigError as exc:
        raise PlanError(str(exc)) from None
    definition = json.loads(definition_json)
    definition.setdefault("dataset", dataset)
    return cfg, definition


def runs(store: Store, dataset: str | None = None) -> pd.DataFrame:
    """Judge runs, newest first, with counters, cost where the run was priced, and ``leased``: whether the run's
    owner process still holds it (running, or paused while it waits out an outage).

    A run whose row says 'running' but whose owner process is gone shows as
    'interrupted' (its row is corrected by the next run that reconciles).  A
    paused or interrupted run whose every unit a later run finished (see
    :func:`covers`) shows as 'superseded': there is nothing left to resume.
    """
    df = store.runs_frame(dataset)
    if df.empty:
        return df.assign(leased=pd.Series(dtype=bool))
    status = df["status"].astype(object).copy()
    message = df["message"].astype(object).copy()
    leased = []
    for i, r in enumerate(df.itertuples()):
        held = (
            r.status in LEASED_STATUSES
            and pd.isna(r.finished_at)
            and lease_alive(r.owner_pid, r.owner_host, r.owner_start, r.seconds_since_heartbeat)
        )
        leased.append(held)
        if r.status == "running" and not held:
            status.iloc[i] = "interrupted"
    # Newest first: a run is superseded by a later (earlier-listed) finished run of the same judge whose set
    # contains its set.
    for i, r in enumerate(df.itertuples()):
        if leased[i] or status.iloc[i] not in RESUMABLE_STATUSES:
            continue
        later = next(
            (
                int(o.run_id)
                for o in df.iloc[:i].itertuples()
                if o.judge == r.judge
                and o.dataset == r.dataset
                and o.status == "done"
                and covers(o.definition_json, r.definition_json)
            ),
            None,
        )
        if later is not None:
            status.iloc[i] = "superseded"
            message.iloc[i] = f"every unit it covered was finished by run {later}; nothing is left to resume"
    df["status"] = status
    df["leased"] = leased
    df["message"] = [redact.redact(m) for m in message]
    return df


LEASED_STATUSES = ("running", "paused")
RESUMABLE_STATUSES = ("paused", "interrupted")  # what a run list tells the user to resume with the same command


def covers(later_json: Any, earlier_json: Any) -> bool:
    """Whether a finished run defined by ``later_json`` judged every unit of the run defined by ``earlier_json``.

    A run completes its whole set (units judged before are skipped), so a finished run with the same definition
    covers it, and so does one that differs only by a larger ``limit`` over the same fixed order (sample 'all':
    the first N units contain the first M < N; a balanced sample depends on its size, so only equal ones count).
    """
    if not isinstance(later_json, str) or not isinstance(earlier_json, str) or not later_json or not earlier_json:
        return False
    later, earlier = json.loads(later_json), json.loads(earlier_json)
    for d in (later, earlier):
        d.pop("units", None)  # how many were defined when it ran: the same set may have grown or shrunk in count
    if later.pop("retry_failed", False) is False and earlier.get("retry_failed"):
        return False  # a run that retried refused calls is not finished by one that skipped them
    earlier.pop("retry_failed", None)
    if later == earlier:
        return True
    lim_l, lim_e = later.pop("limit", None), earlier.pop("limit", None)
    if later != earlier or later.get("sample", "all") != "all":
        return False
    return lim_l is None or (lim_e is not None and lim_l >= lim_e)


@dataclass(frozen=True)
class LiveRun:
    """A run whose lease is held: its process is working, or paused waiting for the endpoint."""

    run_id: int
    status: str

    def refusal(self, judge: str, dataset: str) -> str:
        if self.status == "paused":
            return (
                f"run {self.run_id} of judge {judge!r} on {dataset!r} is paused waiting for the endpoint; resume it "
                "(it continues by itself when the endpoint answers) or stop it, then run this again "
                "(two runs of one judge would pay for the same calls twice)"
            )
        return (
            f"run {self.run_id} of judge {judge!r} on {dataset!r} is still working; wait for it or cancel it "
            "(two runs of one judge would pay for the same calls twice)"
        )


def live_run(store: Store, dataset: str, judge: str) -> LiveRun | None:
    """The run of ``judge`` on ``dataset`` whose lease is held (running or paused), if any."""
    df = runs(store, dataset)
    live = df[(df["judge"] == judge) & df["leased"]] if not df.empty else df
    if live.empty:
        return None
    return LiveRun(int(live["run_id"].iloc[0]), str(live["status"].iloc[0]))


def parse_failures(store: Store, dataset: str, judge: str | None = None, limit: int = 200) -> pd.DataFrame:
    """Stored judgments whose output could not be parsed, or whose call the endpoint refused, newest first."""
    df = store.parse_failures(dataset, judge, limit)
    for col in ("parse_error", "raw_output"):
        df[col] = [redact.redact(v) for v in df[col]]
    return df


def judge_config(store: Store, judge: str) -> JudgeConfig | None:
    """The configuration a judge was last run with (it names the key's variable, never a key)."""
    raw = store.judge_config_json(judge)
    if not raw:
        return None
    return from_mapping(json.loads(raw), f"the stored configuration of judge {judge!r}")


# ------------------------------------------------------- background runs
def start_worker(
    db_path: str | Path,
    dataset: str,
    cfg: JudgeConfig,
    limit: int | None = None,
    sample: str = "all",
    retry_failed: bool = False,
    replace_judge: bool = False,
) -> WorkerProcess:
    """Start a judge run in a worker process (:mod:`core.app.workers`)."""
    if sample not in SAMPLES:
        raise PlanError(f"unknown sample {sample!r}: expected one of {', '.join(SAMPLES)}")
    cfg.api_key()  # an unset key variable fails here, on the page, not in the worker's log
    args = ["--sample", sample]
    if limit:
        args += ["--limit", str(int(limit))]
    if retry_failed:
        args.append("--retry-failed")
    if replace_judge:
        args.append("--replace-judge")
    return spawn("judge", db_path, dataset, cfg.name, to_toml(cfg), args)
