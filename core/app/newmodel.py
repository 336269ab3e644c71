"""A new model's place: the battles it needs against human-rated models, and its predicted human Elo.

The papers' headline use: a model with no human votes gets judge battles against models humans have
rated (the anchors); its judge Elo, placed with theirs, predicts its human Elo, and the split-conformal
interval calibrated on the anchors (leave one model out) says how sure that is: ``elo ± q̂·√(SE² + σ̂²)``, whose
σ̂ (the judge–human disagreement) keeps it from narrowing without limit as the new model gets more judged battles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.leaderboard import LeaderboardView
from core.store import Store

DEFAULT_ANCHORS = 10


@dataclass(frozen=True)
class BattlePlan:
    """Battles to add: the new model against ``anchors`` (human-rated models spread over the human Elo range)."""

    model: str
    anchors: list[str]
    battles: pd.DataFrame  # prompt_id, model_a, model_b
    rule: str


def plan_battles(
    store: Store,
    dataset: str,
    model: str,
    n_anchors: int = DEFAULT_ANCHORS,
    per_anchor: int | None = None,
    seed: int = 0,
) -> BattlePlan | Unavailable:
    """The new model against ``n_anchors`` human-rated models evenly spaced in human Elo (the top and the
    bottom included), on the prompts both answered (``per_anchor`` of them per anchor, seeded; default all);
    the new model is side a on every other battle, so neither side favours it."""
    from core.app.leaderboard import human_ratings

    human = human_ratings(store, dataset)
    if isinstance(human, Unavailable):
        return Unavailable(f"dataset {dataset!r} has no human-rated models to place {model!r} against")
    rated = human.frame[human.frame["model"] != model].sort_values("elo", ascending=False)
    answered = store.answered_prompts(dataset)
    mine = set(answered.loc[answered["model"] == model, "prompt_id"].astype(int))
    if not mine:
        return Unavailable(f"model {model!r} has no answers in {dataset!r}: generate them first")
    by_model = answered.groupby("model")["prompt_id"].agg(lambda s: set(s.astype(int)))
    rated = rated[rated["model"].map(lambda m: bool(by_model.get(m, set()) & mine))]
    if rated.empty:
        return Unavailable(f"no human-rated model answered the prompts {model!r} answered")
    k = min(n_anchors, len(rated))
    picks = np.unique(np.round(np.linspace(0, len(rated) - 1, k)).astype(int))
    anchors = rated["model"].iloc[picks].tolist()
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for anchor in anchors:
        shared = sorted(by_model[anchor] & mine)
        if per_anchor is not None and len(shared) > per_anchor:
            shared = sorted(rng.choice(shared, per_anchor, replace=False).tolist())
        for pid in shared:
            a, b = (model, anchor) if len(rows) % 2 == 0 else (anchor, model)
            rows.append({"prompt_id": pid, "model_a": a, "model_b": b})
    rule = f"{len(anchors)} anchors of {len(rated)} human-rated models, evenly spaced in human Elo; " + (
        "every prompt both answered" if per_anchor is None else f"up to {per_anchor} shared prompts each (seed {seed})"
    )
    return BattlePlan(model, anchors, pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b"]), rule)


@dataclass(frozen=True)
class Standing:
    """Where a model without human votes stands: its judge Elo as a prediction of its human Elo."""

    model: str
    method: str  # 'soft' or 'hard': the judge Elo the interval is drawn around
    predicted: float
    lower: float
    upper: float
    alpha: float
    n_judged: int
    n_calibration: int
    above: int  # human-rated models whose human Elo is above the interval
    below: int  # … below it
    n_rated: int
    floor: float = 0.0  # q̂·σ̂: the half-width no number of judged battles takes the interval below (0: "se" score)

    def text(self) -> str:
        between = self.n_rated - self.above - self.below
        floor = (
            f"; more judged battles cannot narrow it below ±{self.floor:.0f} Elo, the judge–human disagreement"
            if self.floor > 0
            else ""
        )
        return (
            f"{self.model}: predicted human Elo {self.predicted:.0f}, {1 - self.alpha:.0%} conformal interval "
            f"{self.lower:.0f}–{self.upper:.0f} (around its {'Soft' if self.method == 'soft' else 'Hard'}-Elo from "
            f"{self.n_judged} judged battles{floor}; calibrated on {self.n_calibration} held-out human-rated "
            f"models). Of the "
            f"{self.n_rated} human-rated models, {self.above} are above the interval, {self.below} below it and "
            f"{between} inside it: it ranks between #{self.above + 1} and #{self.above + between + 1}."
        )


def standings(view: LeaderboardView) -> list[Standing]:
    """Every model of a Leaderboard view that has no human Elo but a conformal interval, read as a standing."""
    if not view.has_intervals or view.quantile is None or "human_elo" not in view.table:
        return []
    t = view.table.set_index("model")
    method = view.interval_method or "hard"
    rated = t[t["human_elo"].notna()]
    out = []
    for model, row in t[t["human_elo"].isna()].iterrows():
        if not (np.isfinite(row.get("interval_lower", np.nan)) and np.isfinite(row.get(f"{method}_elo", np.nan))):
            continue
        out.append(
            Standing(
                str(model),
                method,
                float(row[f"{method}_elo"]),
                float(row["interval_lower"]),
                float(row["interval_upper"]),
                view.alpha,
                int(row.get("n_judged", 0) or 0),
                int(view.quantile.n),
                int((rated["human_elo"] > row["interval_upper"]).sum()),
                int((rated["human_elo"] < row["interval_lower"]).sum()),
                len(rated),
                view.quantile.qhat * view.quantile.sigma,
            )
        )
    return out


def standing(store: Store, dataset: str, judge: str, model: str, alpha: float = 0.1) -> Standing | Unavailable:
    """The Leaderboard's own view (same fits, same conformal procedure) read for one model without human votes."""
    from core.app.leaderboard import view_for

    view, _ = view_for(store, dataset, judge, None, alpha)
    if model not in set(view.table["model"]):
        return Unavailable(f"model {model!r} has no battles judged by {judge!r} in {dataset!r}")
    if not view.has_intervals or view.quantile is None:
        return Unavailable(view.note or "no conformal intervals on this dataset")
    found = [s for s in standings(view) if s.model == model]
    if not found:
        row = view.table.set_index("model").loc[model]
        if "human_elo" in view.table and np.isfinite(row["human_elo"]):
            return Unavailable(f"model {model!r} has human votes: its human Elo is measured, not predicted")
        return Unavailable(f"model {model!r} has no judge Elo with a standard error: no interval")
    return found[0]
