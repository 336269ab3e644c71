"""Evaluate a new model in one call: its answers, its battles against anchors, their judgments, its standing.

Each step is the resumable job it is on its own (``generate``, ``plan-battles``, ``judge``), so running
the same evaluation again after a crash completes it without paying twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.escalation import Escalations, escalations
from core.app.generation import GenerationStats, ModelConfig, generate, model_to_toml
from core.app.judging import RunOutcome, run_shared
from core.app.leaderboard import human_ratings
from core.app.newmodel import DEFAULT_ANCHORS, BattlePlan, Standing, plan_battles, standing
from core.app.workers import WorkerProcess, spawn
from core.judging.config import JudgeConfig, to_toml
from core.store import Store, waits


@dataclass(frozen=True)
class Evaluation:
    model: str
    generated: GenerationStats | None
    plan: BattlePlan
    battles_added: int
    judged: RunOutcome
    standing: Standing | Unavailable
    escalated: Escalations | Unavailable | None = None
    evaluation_id: int | None = None

    def text(self) -> str:
        made = (
            f"{self.generated.ok} answers generated ({self.generated.failed} failed); "
            if self.generated is not None
            else ""
        )
        result = self.standing.text() if isinstance(self.standing, Standing) else f"no standing: {self.standing.reason}"
        if isinstance(self.escalated, Escalations):
            result += " " + self.escalated.text()
        elif isinstance(self.escalated, Unavailable):
            result += f" No SCOPE escalations: {self.escalated.reason}."
        saved = "" if self.evaluation_id is None else f" Saved as evaluation {self.evaluation_id}."
        return (
            f"{made}{len(self.plan.battles)} battles against {len(self.plan.anchors)} anchors "
            f"({self.battles_added} new; {self.plan.rule}); judged {self.judged.stats.done} calls "
            f"(run {self.judged.run_id}, status {self.judged.status}). {result}{saved}"
        )


# result_json keeps the escalated battles' ids for the page; a cap keeps one row small on a big arena
MAX_ESCALATED_IDS = 1000


def evaluation_row(
    judge: str,
    alpha: float,
    plan: BattlePlan,
    added: int,
    judged: RunOutcome,
    result: Standing | Unavailable,
    escalated: Escalations | Unavailable,
    rated: pd.DataFrame | None = None,
) -> dict:
    """The ``evaluations`` row of one finished evaluation (``Store.save_evaluation``); ``rated`` (model, elo):
    the human Elo of the human-rated models at the time, kept so the page draws the placement without a refit."""
    details: dict = {
        "anchors": plan.anchors,
        "plan_rule": plan.rule,
        "battles_planned": len(plan.battles),
        "battles_added": int(added),
        "judge_run_id": judged.run_id,
        "judge_run_status": judged.status,
        "judge_calls": int(judged.stats.done),
        "rated": []
        if rated is None
        else [{"model": str(m), "elo": float(e)} for m, e in zip(rated["model"], rated["elo"], strict=True)],
    }
    if isinstance(escalated, Escalations):
        ids = escalated.frame["battle_id"].astype(int).tolist()
        th = escalated.threshold
        details["escalations"] = {
            "alpha": escalated.alpha,
            "source": escalated.source,
            "lam": th.lam if th.feasible else None,
            "n_calibration": th.n_calibration,
            "n_considered": escalated.n_considered,
            "n_escalated": escalated.n_escalated,
            "battle_ids": ids[:MAX_ESCALATED_IDS],
            "truncated": len(ids) > MAX_ESCALATED_IDS,
            "text": escalated.text(),
        }
    else:
        details["escalations"] = {"unavailable": escalated.reason}
    row: dict = {"model": plan.model, "judge": judge, "alpha": float(alpha), "result_json": json.dumps(details)}
    if isinstance(result, Unavailable):
        return {**row, "status": "unavailable", "reason": result.reason}
    between = result.n_rated - result.above - result.below
    details["text"] = result.text()
    details["floor"] = float(result.floor)  # the interval's disagreement floor, so the page says it too
    row["result_json"] = json.dumps(details)
    return {
        **row,
        "status": "placed",
        "method": result.method,
        "predicted": result.predicted,
        "lower": result.lower,
        "upper": result.upper,
        "rank_best": result.above + 1,
        "rank_worst": result.above + between + 1,
        "n_rated": result.n_rated,
        "n_judged": result.n_judged,
        "n_calibration": result.n_calibration,
    }


def calibration_battles(store: Store, dataset: str, model: str, n: int, seed: int = 0) -> set[int]:
    """``n`` battles with human votes and both answers' texts, between models other than ``model`` (seeded):
    the judge's labels on them calibrate the interval (τ, and the held-out residuals of the rated models)."""
    votable = store.votable_battles(dataset)
    pool = votable[(votable["n_votes"] > 0) & (votable["model_a"] != model) & (votable["model_b"] != model)]
    if pool.empty:
        raise ValueError(f"dataset {dataset!r} has no human-voted battle with texts to calibrate the judge on")
    rng = np.random.default_rng(seed)
    picked = rng.choice(pool["battle_id"].to_numpy(int), size=min(n, len(pool)), replace=False)
    return {int(b) for b in picked}


def evaluate(
    db_path: str | Path,
    dataset: str,
    model: str,
    judge: JudgeConfig,
    model_cfg: ModelConfig | None = None,
    budget: int | None = None,
    n_anchors: int = DEFAULT_ANCHORS,
    alpha: float = 0.1,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    calibration: int = 0,
    prompts: int | None = None,
) -> Evaluation:
    """Generate what is missing (with ``model_cfg``), plan battles against anchors, judge them in both orders
    within ``budget`` judge calls (per anchor: budget ÷ (2 × anchors) prompts), read the standing and the
    battles SCOPE would send to humans, and save the evaluation in the store (``Store.evaluations``)."""
    say = log or (lambda _: None)
    generated = None
    if model_cfg is not None:
        if model_cfg.name != model:
            raise ValueError(f"the model configuration names {model_cfg.name!r}, not {model!r}")
        _, generated = generate(db_path, dataset, model_cfg, limit=prompts)
        say(f"answers: {generated.ok} generated, {generated.failed} failed")
    orders = 2 if judge.both_orders else 1
    per_anchor = None if budget is None else max(1, budget // (orders * n_anchors))
    with Store.open(str(db_path), wait_s=waits.PAID_WORK.seconds) as store:
        plan = plan_battles(store, dataset, model, n_anchors, per_anchor, seed)
        if isinstance(plan, Unavailable):
            raise ValueError(plan.reason)
        added = store.add_battles(dataset, plan.battles)
        battles = store.battles_for_judging(dataset)
    mine = battles[(battles["model_a"] == model) | (battles["model_b"] == model)]
    say(f"battles: {len(plan.battles)} planned against {', '.join(plan.anchors)}, {added} new")
    if calibration:
        with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
            sample = calibration_battles(store, dataset, model, calibration, seed)
        done = run_shared(db_path, dataset, judge, battle_ids=sample)
        say(f"calibration: {len(sample)} human-voted battles of the rated models, {done.stats.done} calls made")
    ids = set(mine["battle_id"].astype(int))
    judged = run_shared(db_path, dataset, judge, battle_ids=ids, limit=budget)
    with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
        result = standing(store, dataset, judge.name, model, alpha)
        escalated = escalations(store, dataset, judge.name, alpha, battle_ids=ids)
        human = human_ratings(store, dataset)
    rated = None if isinstance(human, Unavailable) else human.frame[human.frame["model"] != model]
    row = evaluation_row(judge.name, alpha, plan, added, judged, result, escalated, rated)
    # written apart from the reads above so the store is held for writing only for one insert
    with Store.open(str(db_path), wait_s=waits.PAID_WORK.seconds) as store:
        eid = store.save_evaluation(dataset, row)
    say(f"saved as evaluation {eid}")
    return Evaluation(model, generated, plan, added, judged, result, escalated, eid)


def start_evaluation_worker(
    db_path: str | Path,
    dataset: str,
    model: str,
    judge: JudgeConfig,
    model_cfg: ModelConfig | None = None,
    budget: int | None = None,
    n_anchors: int = DEFAULT_ANCHORS,
    alpha: float = 0.1,
    calibration: int = 0,
    prompts: int | None = None,
) -> WorkerProcess:
    """``python -m core evaluate`` in a worker process (the Evaluate page; see :mod:`core.app.workers`)."""

    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    if budget is not None and budget < 2:
        raise ValueError("the budget must be at least 2 judge calls")
    if model_cfg is not None and model_cfg.name != model:
        raise ValueError(f"the model configuration names {model_cfg.name!r}, not {model!r}")
    # an unset key variable fails here, on the page, not in the worker's log
    judge.api_key()
    if model_cfg is not None:
        model_cfg.api_key()
    args = ["--model", model, "--anchors", str(int(n_anchors)), "--alpha", repr(float(alpha))]
    if budget is not None:
        args += ["--budget", str(int(budget))]
    if calibration:
        args += ["--calibration", str(int(calibration))]
    if prompts:
        args += ["--prompts", str(int(prompts))]
    config = None if model_cfg is None else model_to_toml(model_cfg)
    return spawn("evaluate", db_path, dataset, model, config, args, extra_files={"--judge": to_toml(judge)})


# ------------------------------------------------------------- saved evaluations (the Evaluate page)
@dataclass(frozen=True)
class SavedEvaluation:
    """One row of ``evaluations`` with its details (``result_json``) read back."""

    row: dict
    details: dict

    @property
    def standing(self) -> Standing | None:
        """The standing the evaluation found, rebuilt from the row (None when it found none)."""
        r = self.row
        if r["status"] != "placed":
            return None
        above = int(r["rank_best"]) - 1
        between = int(r["rank_worst"]) - int(r["rank_best"])
        below = int(r["n_rated"]) - above - between
        return Standing(
            str(r["model"]),
            str(r["method"]),
            float(r["predicted"]),
            float(r["lower"]),
            float(r["upper"]),
            float(r["alpha"]),
            int(r["n_judged"]),
            int(r["n_calibration"]),
            above,
            below,
            int(r["n_rated"]),
            float(self.details.get("floor") or 0.0),
        )

    def rated(self) -> pd.DataFrame:
        """model, elo, anchor: the human-rated models' human Elo when the evaluation ran."""
        frame = pd.DataFrame(self.details.get("rated") or [], columns=["model", "elo"])
        return frame.assign(anchor=frame["model"].isin(self.details.get("anchors") or []))


def saved_evaluations(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's saved evaluations, newest first."""
    return store.evaluations(dataset)


def saved_evaluation(store: Store, evaluation_id: int) -> SavedEvaluation | Unavailable:
    row = store.evaluation(evaluation_id)
    if row is None:
        return Unavailable(f"no evaluation {evaluation_id} in this store")
    return SavedEvaluation(row, json.loads(row["result_json"]) if row.get("result_json") else {})


def model_escalations(store: Store, dataset: str, judge: str, model: str, alpha: float) -> Escalations | Unavailable:
    """:func:`~core.app.escalation.escalations` of the judge's battles in which ``model`` plays."""
    bf = store.battle_frame(dataset, judge)
    mine = bf.loc[(bf["model_a"] == model) | (bf["model_b"] == model), "battle_id"].astype(int)
    if mine.empty:
        return Unavailable(f"judge {judge!r} judged no battle of {model!r} in {dataset!r}")
    return escalations(store, dataset, judge, alpha, battle_ids=set(mine))
