"""Evaluate a new model in one call: its answers, its battles against anchors, their judgments, its standing.

Each step is the resumable job it is on its own (``generate``, ``plan-battles``, ``judge``), so running
the same evaluation again after a crash completes it without paying twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.app import Unavailable
from core.app.generation import GenerationStats, ModelConfig, generate
from core.app.judging import RunOutcome, run_shared
from core.app.newmodel import DEFAULT_ANCHORS, BattlePlan, Standing, plan_battles, standing
from core.judging.config import JudgeConfig
from core.store import Store


@dataclass(frozen=True)
class Evaluation:
    model: str
    generated: GenerationStats | None
    plan: BattlePlan
    battles_added: int
    judged: RunOutcome
    standing: Standing | Unavailable

    def text(self) -> str:
        made = (
            f"{self.generated.ok} answers generated ({self.generated.failed} failed); "
            if self.generated is not None
            else ""
        )
        result = self.standing.text() if isinstance(self.standing, Standing) else f"no standing: {self.standing.reason}"
        return (
            f"{made}{len(self.plan.battles)} battles against {len(self.plan.anchors)} anchors "
            f"({self.battles_added} new; {self.plan.rule}); judged {self.judged.stats.done} calls "
            f"(run {self.judged.run_id}, status {self.judged.status}). {result}"
        )


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
) -> Evaluation:
    """Generate what is missing (with ``model_cfg``), plan battles against anchors, judge them in both orders
    within ``budget`` judge calls (per anchor: budget ÷ (2 × anchors) prompts), and read the standing."""
    say = log or (lambda _: None)
    generated = None
    if model_cfg is not None:
        if model_cfg.name != model:
            raise ValueError(f"the model configuration names {model_cfg.name!r}, not {model!r}")
        _, generated = generate(db_path, dataset, model_cfg)
        say(f"answers: {generated.ok} generated, {generated.failed} failed")
    orders = 2 if judge.both_orders else 1
    per_anchor = None if budget is None else max(1, budget // (orders * n_anchors))
    with Store.open(str(db_path), wait_s=60) as store:
        plan = plan_battles(store, dataset, model, n_anchors, per_anchor, seed)
        if isinstance(plan, Unavailable):
            raise ValueError(plan.reason)
        added = store.add_battles(dataset, plan.battles)
        battles = store.battles_for_judging(dataset)
    mine = battles[(battles["model_a"] == model) | (battles["model_b"] == model)]
    say(f"battles: {len(plan.battles)} planned against {', '.join(plan.anchors)}, {added} new")
    judged = run_shared(db_path, dataset, judge, battle_ids=set(mine["battle_id"].astype(int)), limit=budget)
    with Store.open(str(db_path), read_only=True, wait_s=60) as store:
        result = standing(store, dataset, judge.name, model, alpha)
    return Evaluation(model, generated, plan, added, judged, result)
