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
from core.judging.runner import RunStats
from core.stats.adaptive import (
    STOP_STALLED,
    AdaptiveConfig,
    AdaptiveResult,
    Round,
    decide,
    fit_rating,
    placement,
    prompt_order,
    rank_interval,
)
from core.store import Store, waits

DEFAULT_ROUND_SIZE = AdaptiveConfig().round_size


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
    adaptive: AdaptiveResult | None = None
    design: AdaptiveConfig | None = None

    def design_text(self) -> str:
        """Which design placed the model, what it spent and (adaptive) what the fixed design would have, and why
        it stopped."""
        if self.adaptive is None or self.design is None:
            return f"Design: fixed ({self.plan.rule}); {self.judged.stats.done} judge calls made by this run."
        a = self.adaptive
        return (
            f"Design: adaptive ({self.plan.rule}); {a.calls} judge calls spent in {len(a.rounds)} rounds, "
            f"the fixed design would spend {a.fixed_calls}; stopped because {self.design.stop_text(a.stop_reason)}."
        )

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
        if self.adaptive is not None:
            return f"{made}{self.design_text()} {result}{saved}"
        return (
            f"{made}Design: fixed; {len(self.plan.battles)} battles against {len(self.plan.anchors)} anchors "
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
    adaptive: AdaptiveResult | None = None,
    design: AdaptiveConfig | None = None,
) -> dict:
    """The ``evaluations`` row of one finished evaluation (``Store.save_evaluation``); ``rated`` (model, elo):
    the human Elo of the human-rated models at the time, kept so the page draws the placement without a refit;
    ``adaptive``: the sequential design's rounds, so the page draws the width against the calls."""
    details: dict = {
        "design": "fixed" if adaptive is None else "adaptive",
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
    if adaptive is not None:
        details["adaptive"] = adaptive.as_dict()
        if design is not None:
            details["adaptive"]["stop_text"] = design.stop_text(adaptive.stop_reason)
            details["adaptive"]["round_size"] = design.round_size
            details["adaptive"]["share"] = design.share
            details["adaptive"]["stable_rounds"] = design.stable_rounds
        details["judge_calls"] = int(adaptive.calls)
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
    adaptive: bool = False,
    round_size: int = DEFAULT_ROUND_SIZE,
) -> Evaluation:
    """Generate what is missing (with ``model_cfg``), plan battles against anchors, judge them in both orders
    within ``budget`` judge calls (per anchor: budget ÷ (2 × anchors) prompts), read the standing and the
    battles SCOPE would send to humans, and save the evaluation in the store (``Store.evaluations``).

    ``adaptive``: the sequential design (:mod:`core.stats.adaptive`) instead of the fixed plan: a placement,
    then rounds of ``round_size`` judge calls until its stopping rule, the budget or the fixed design's calls."""
    say = log or (lambda _: None)
    generated = None
    if model_cfg is not None:
        if model_cfg.name != model:
            raise ValueError(f"the model configuration names {model_cfg.name!r}, not {model!r}")
        _, generated = generate(db_path, dataset, model_cfg, limit=prompts)
        say(f"answers: {generated.ok} generated, {generated.failed} failed")
    orders = 2 if judge.both_orders else 1
    per_anchor = None if budget is None else max(1, budget // (orders * n_anchors))
    design = AdaptiveConfig(round_size=round_size, orders=orders) if adaptive else None
    with Store.open(str(db_path), wait_s=waits.PAID_WORK.seconds) as store:
        plan = plan_battles(store, dataset, model, n_anchors, per_anchor, seed)
        if isinstance(plan, Unavailable):
            raise ValueError(plan.reason)
        if design is None:
            added = store.add_battles(dataset, plan.battles)
            battles = store.battles_for_judging(dataset)
    if calibration:
        with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
            sample = calibration_battles(store, dataset, model, calibration, seed)
        done = run_shared(db_path, dataset, judge, battle_ids=sample)
        say(f"calibration: {len(sample)} human-voted battles of the rated models, {done.stats.done} calls made")
    rounds: AdaptiveResult | None = None
    if design is None:
        mine = battles[(battles["model_a"] == model) | (battles["model_b"] == model)]
        say(f"battles: {len(plan.battles)} planned against {', '.join(plan.anchors)}, {added} new")
        ids = set(mine["battle_id"].astype(int))
        judged = run_shared(db_path, dataset, judge, battle_ids=ids, limit=budget)
    else:
        fixed = len(plan.battles) * orders
        plan, added, judged, rounds = adaptive_rounds(
            db_path, dataset, model, judge, design, fixed, budget, alpha, seed, say
        )
        ids = set(plan.battles["battle_id"].astype(int))
    with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
        result = standing(store, dataset, judge.name, model, alpha)
        escalated = escalations(store, dataset, judge.name, alpha, battle_ids=ids)
        human = human_ratings(store, dataset)
    rated = None if isinstance(human, Unavailable) else human.frame[human.frame["model"] != model]
    row = evaluation_row(judge.name, alpha, plan, added, judged, result, escalated, rated, rounds, design)
    # written apart from the reads above so the store is held for writing only for one insert
    with Store.open(str(db_path), wait_s=waits.PAID_WORK.seconds) as store:
        eid = store.save_evaluation(dataset, row)
    say(f"saved as evaluation {eid}")
    return Evaluation(model, generated, plan, added, judged, result, escalated, eid, rounds, design)


def _pairs(battles: pd.DataFrame, model: str) -> dict[tuple[str, int], tuple[int, bool]]:
    """(opponent, prompt) → (battle_id, planned) of the model's battles."""
    return {
        (str(b if a == model else a), int(p)): (int(bid), bool(pl))
        for bid, p, a, b, pl in battles[["battle_id", "prompt_id", "model_a", "model_b", "planned"]].itertuples(
            index=False
        )
    }


def _judged(store: Store, dataset: str, judge: str, model: str) -> tuple[int, dict[int, int]]:
    """The judge calls stored for the model's battles (failed calls left out) and how many each battle has."""
    from core.app import StoreError

    try:
        j = store.judgments_frame(dataset, judge, variant=None)
    except StoreError:  # a judge that has judged nothing yet
        return 0, {}
    mine = j[((j["model_a"] == model) | (j["model_b"] == model)) & ~j["call_failed"]]
    return len(mine), {int(b): int(n) for b, n in mine["battle_id"].value_counts().items()}


def _round_state(
    store: Store, dataset: str, judge: str, model: str, alpha: float, human_elo: dict[str, float]
) -> tuple[Round, dict[str, float]]:
    """The new model's interval as the Leaderboard draws it now (same fits, same conformal procedure), and the
    anchors' judge Elo on the interval's scale."""
    from core.app.leaderboard import view_for

    view, _ = view_for(store, dataset, judge, None, alpha)
    t = view.table.set_index("model")
    method = view.interval_method or "hard"
    anchor_elo = {
        m: float(t.at[m, f"{method}_elo"]) for m in human_elo if m in t.index and np.isfinite(t.at[m, f"{method}_elo"])
    }
    judged = store.judgments_frame(dataset, judge, variant=None)
    mine = judged[((judged["model_a"] == model) | (judged["model_b"] == model)) & ~judged["call_failed"]]
    calls = len(mine)
    est = float(t.at[model, f"{method}_elo"]) if model in t.index else float("nan")
    se = float(t.at[model, f"{method}_se"]) if model in t.index else float("nan")
    if not (np.isfinite(est) and np.isfinite(se)) and anchor_elo:
        # no finite fit yet (a perfect record): the one-parameter fit against the anchors picks the next round
        ok = mine[mine["model_a"].isin(anchor_elo) | mine["model_b"].isin(anchor_elo)]
        other = np.where(ok["model_a"] == model, ok["model_b"], ok["model_a"])
        won = np.where(ok["verdict"] == "tie", 0.5, (ok["verdict"] == "a") == (ok["model_a"] == model)).astype(float)
        est, se = fit_rating(np.array([anchor_elo[o] for o in other]), won)
    lower = float(t.at[model, "interval_lower"]) if model in t.index else float("nan")
    upper = float(t.at[model, "interval_upper"]) if model in t.index else float("nan")
    half = (upper - lower) / 2 if np.isfinite(lower) and np.isfinite(upper) else float("inf")
    sigma = float(view.quantile.sigma) if view.quantile is not None else float("nan")
    ranks = rank_interval(lower, upper, np.array(list(human_elo.values()))) if np.isfinite(half) else None
    return Round(calls, est, se, sigma, half, ranks), anchor_elo


def adaptive_rounds(
    db_path: str | Path,
    dataset: str,
    model: str,
    judge: JudgeConfig,
    design: AdaptiveConfig,
    fixed_calls: int,
    budget: int | None,
    alpha: float,
    seed: int,
    say: Callable[[str], None],
) -> tuple[BattlePlan, int, RunOutcome, AdaptiveResult]:
    """The sequential design, one resumable judge run per round.  Each round is chosen from what the store holds
    (the model's battles, their judgments), so a rerun after a kill judges what the killed round left and goes on
    from there; no call is paid twice.  Spends at most ``budget`` and never more than the fixed design would."""
    with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
        human = human_ratings(store, dataset)
        if isinstance(human, Unavailable):
            raise ValueError(f"dataset {dataset!r} has no human-rated models to place {model!r} against")
        answered = store.answered_prompts(dataset)
    rated = human.frame[human.frame["model"] != model]
    human_elo = {str(m): float(e) for m, e in zip(rated["model"], rated["elo"], strict=True)}
    by_model = answered.groupby("model")["prompt_id"].agg(lambda x: set(x.astype(int)))
    mine = by_model.get(model, set())
    shared = {m: sorted(by_model.get(m, set()) & mine) for m in human_elo}
    ordered = prompt_order({m: p for m, p in shared.items() if p}, seed)
    cap = fixed_calls if budget is None else min(budget, fixed_calls)
    result = AdaptiveResult(fixed_calls=fixed_calls)
    added = 0
    judged: RunOutcome | None = None
    batch = placement(human_elo, ordered, design)
    chosen: set[tuple[str, int]] = set()
    while True:
        with Store.open(str(db_path), wait_s=waits.PAID_WORK.seconds) as store:
            spent, judged_ids = _judged(store, dataset, judge.name, model)
            before = _pairs(store.model_battles(dataset, model), model)
            # what earlier commands chose is what they planned or had judged: a rerun resumes from the store
            chosen |= {k for k, (bid, planned) in before.items() if planned or bid in judged_ids}
            fresh = [(m, p) for m, p in batch if (m, p) not in before]
            if fresh:
                # sides alternate so that a judge run with one order only still shows the new model first half the time
                rows = [
                    {"prompt_id": p, "model_a": model, "model_b": m}
                    if k % 2 == 0
                    else {"prompt_id": p, "model_a": m, "model_b": model}
                    for k, (m, p) in enumerate(fresh)
                ]
                added += store.add_battles(dataset, pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b"]))
            chosen |= set(batch)
            now_there = _pairs(store.model_battles(dataset, model), model)
        # the run's set is the chosen battles still missing an order: its limit cuts that set (plan_run), so
        # the calls it may make are exactly what the budget has left
        pending = {
            now_there[k][0] for k in chosen if k in now_there and judged_ids.get(now_there[k][0], 0) < design.orders
        }
        left = cap - spent
        if left > 0 and pending:
            judged = run_shared(db_path, dataset, judge, battle_ids=pending, limit=left)
        with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
            now, anchor_elo = _round_state(store, dataset, judge.name, model, alpha, human_elo)
        stalled = bool(result.rounds) and left > 0 and bool(pending) and now.calls <= result.rounds[-1].calls
        result.rounds.append(now)
        share = f", sampling share {now.share:.2f}" if np.isfinite(now.sigma) else ""
        say(f"round {len(result.rounds)}: {now.calls} judge calls, interval width {now.width:.0f} Elo{share}")
        remaining = sum(1 for m, ps in ordered.items() for p in ps if (m, p) not in chosen)
        reason, batch = (
            (STOP_STALLED, [])
            if stalled
            else decide(result.rounds, anchor_elo, ordered, chosen, design, cap, remaining)
        )
        if reason is not None:
            result.stop_reason = reason
            result.calls = now.calls
            break
    with Store.open(str(db_path), read_only=True, wait_s=waits.PAID_WORK.seconds) as store:
        there = store.model_battles(dataset, model)
    keep = {now_there[k][0] for k in chosen if k in now_there}
    battles = there[there["battle_id"].isin(keep)].drop(columns="planned").reset_index(drop=True)
    anchors = sorted({str(b if a == model else a) for a, b in zip(battles["model_a"], battles["model_b"], strict=True)})
    rule = (
        f"placement on {design.placement_anchors} anchors spread in human Elo × "
        f"{design.placement_prompts} prompts, then rounds of {design.round_size} calls by expected information "
        f"(seed {seed})"
    )
    plan = BattlePlan(model, anchors, battles, rule)
    if judged is None:  # everything was judged before this command: nothing to run, say so
        judged = RunOutcome(None, RunStats(status="nothing"))
    return plan, added, judged, result


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
    adaptive: bool = False,
    round_size: int = DEFAULT_ROUND_SIZE,
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
    if adaptive:
        if round_size < 2:
            raise ValueError("a round must be at least 2 judge calls")
        args += ["--adaptive", "--round-size", str(int(round_size))]
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

    @property
    def design(self) -> str:
        """'adaptive' or 'fixed' (evaluations saved before the adaptive design were all fixed)."""
        return str(self.details.get("design") or "fixed")

    def rounds(self) -> pd.DataFrame:
        """calls, width: the adaptive design's interval after each round (empty for the fixed design)."""
        got = (self.details.get("adaptive") or {}).get("rounds") or []
        return pd.DataFrame([{"calls": r["calls"], "width": r["width"]} for r in got], columns=["calls", "width"])

    def design_text(self) -> str:
        """What the design spent, what the fixed design would have spent, and why the adaptive one stopped."""
        a = self.details.get("adaptive")
        if self.design != "adaptive" or not a:
            calls = self.details.get("judge_calls")
            return (
                "Design: fixed ("
                + str(self.details.get("plan_rule", ""))
                + ")"
                + (f"; {calls} judge calls made." if calls is not None else ".")
            )
        return (
            f"Design: adaptive; {a['calls']} judge calls spent in {len(a.get('rounds') or [])} rounds, the fixed "
            f"design would spend {a['fixed_calls']} ({a['fixed_calls'] / max(a['calls'], 1):.1f}× as many); "
            f"stopped because {a.get('stop_text') or a.get('stop_reason')}."
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
