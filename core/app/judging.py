"""Judging runs from the CLI and the Admin page: register the judge, plan the units, run, keep the run's row.

The runner (``core.judging.runner``) executes units against the endpoint;
this module decides which units (those with no stored judgment under the
judge's prompt version, optionally a balanced sample) and records the run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.judging.client import connection_test
from core.judging.config import TEMPLATES, ConfigError, JudgeConfig, from_mapping, load_toml
from core.judging.runner import EndpointUnreachable, RunStats, Unit, execute
from core.stats.bias import echo_intervention_summary
from core.stats.budget import balanced_subsample
from core.store import Store
from core.text import detect_echo, make_echo_variant

__all__ = [
    "TEMPLATES",
    "ActiveRun",
    "ConfigError",
    "EndpointUnreachable",
    "JudgeConfig",
    "JudgeWorker",
    "PlanError",
    "RunStats",
    "Unit",
    "connection_test",
    "from_mapping",
    "load_toml",
    "echo_intervention_results",
    "forget_failures",
    "parse_failures",
    "plan",
    "plan_echo_intervention",
    "register_judge",
    "run",
    "runs",
]

SAMPLES = ("all", "balanced")


class PlanError(ValueError):
    """The dataset cannot be judged with this configuration (and why)."""


def register_judge(store: Store, cfg: JudgeConfig) -> int:
    """Create or update the judge's row from its configuration (never a key); returns its id."""
    return store.save_judge_config(
        cfg.name,
        cfg.to_store(),
        model=cfg.model,
        base_url=cfg.base_url,
        template=cfg.template,
        prompt_version=cfg.version,
    )


def plan(
    store: Store, dataset: str, cfg: JudgeConfig, limit: int | None = None, sample: str = "all", seed: int = 0
) -> list[Unit]:
    """Units still missing for this judge and prompt version (optionally a balanced sample)."""
    if sample not in SAMPLES:
        raise PlanError(f"unknown sample {sample!r}: expected one of {', '.join(SAMPLES)}")
    battles = store.battles_for_judging(dataset)
    if battles.empty:
        raise PlanError(f"dataset {dataset!r} has no battles")
    texts = battles["text_a"].notna() & battles["text_b"].notna() & battles["prompt"].notna()
    if cfg.template == "echo":
        texts = battles["text_a"].notna() & battles["prompt"].notna()
    if not texts.any():
        raise PlanError(
            f"dataset {dataset!r} has no prompt and completion texts to show a judge "
            "(import completions, e.g. an Arena-Hard directory or LMArena conversations)"
        )
    battles = battles[texts]
    judge_id = register_judge(store, cfg)
    done = store.existing_judgment_keys(judge_id, cfg.version, dataset)
    have = set(zip(done["battle_id"].tolist(), done["order"].tolist()))
    orders = ["ab", "ba"] if cfg.both_orders and cfg.template != "echo" else ["ab"]
    if sample == "balanced":
        n_models = len(set(battles["model_a"]) | set(battles["model_b"]))
        target = limit if limit else len(battles) * len(orders)
        per_model = max(1, int(np.ceil(2 * target / len(orders) / max(n_models, 1))))
        battles = balanced_subsample(battles, per_model, np.random.default_rng(seed))
    units = [
        Unit(int(r.battle_id), o, r.prompt, r.text_a, r.text_b if r.text_b is not None else "")
        for r in battles.itertuples()
        for o in orders
        if (int(r.battle_id), o) not in have
    ]
    return units[:limit] if limit else units


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
    run_id = store.create_run(judge_id, dataset, len(units), cfg.to_store())
    try:
        execute(store, judge_id, run_id, cfg, units, stats, progress, cancel)
    except EndpointUnreachable as exc:
        stats.status, stats.message = "unreachable", str(exc)
        store.update_run(run_id, status="unreachable", message=str(exc), finished=True)
        raise
    except BaseException as exc:
        store.update_run(run_id, status="failed", message=f"{type(exc).__name__}: {exc}", finished=True)
        raise
    store.update_run(
        run_id,
        status=stats.status,
        done=stats.done,
        failed=stats.failed,
        parse_errors=stats.parse_errors,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        message=stats.message,
        finished=True,
    )
    return run_id, stats


def runs(store: Store, dataset: str | None = None) -> pd.DataFrame:
    """Judge runs, newest first, with counters and cost where the run was priced."""
    return store.runs_frame(dataset)


def parse_failures(store: Store, dataset: str, judge: str | None = None, limit: int = 200) -> pd.DataFrame:
    """Stored judgments whose output could not be parsed (or whose call failed), newest first."""
    return store.parse_failures(dataset, judge, limit)


def forget_failures(store: Store, dataset: str, judge: str) -> int:
    """Delete the judge's failed judgments in ``dataset`` so that the next run plans them again."""
    return store.delete_failed_judgments(dataset, judge)


# ------------------------------------------------------- background runs
@dataclass
class ActiveRun:
    judge: str
    dataset: str
    stats: RunStats
    thread: threading.Thread
    cancel: threading.Event
    error: str | None = None
    run_id: int | None = None
    config: JudgeConfig | None = None  # names the key's variable, never holds a key


class JudgeWorker:
    """A background judge run owned by the server process (one per process).

    The Admin page keeps one per process (``st.cache_resource``); runs
    continue when the browser tab closes, and every session reads the same
    progress.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: ActiveRun | None = None

    def busy(self) -> bool:
        return self.current is not None and self.current.thread.is_alive()

    def start(self, store: Store, dataset: str, cfg: JudgeConfig, units: list[Unit]) -> ActiveRun:
        with self._lock:
            if self.current is not None and self.busy():
                raise RuntimeError(f"a run of {self.current.judge} is in progress; cancel it or wait")
            cancel = threading.Event()
            stats = RunStats(planned=len(units))
            active = ActiveRun(cfg.name, dataset, stats, threading.Thread(daemon=True), cancel, config=cfg)

            def progress(s: RunStats) -> None:
                active.stats = s

            def target() -> None:
                try:
                    active.run_id, active.stats = run(store, dataset, cfg, units, progress=progress, cancel=cancel)
                except Exception as exc:
                    active.error = f"{type(exc).__name__}: {exc}"
                    active.stats.status = "failed"

            active.thread = threading.Thread(target=target, name=f"judge-{cfg.name}", daemon=True)
            self.current = active
            active.thread.start()
            return active

    def cancel(self) -> None:
        if self.current is not None:
            self.current.cancel.set()

    def wait(self, timeout: float | None = None) -> None:
        if self.current is not None:
            self.current.thread.join(timeout)
