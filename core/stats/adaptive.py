"""A sequential design for placing a new model: which battles to judge next, and when to stop (METHODS §4).

Arrays in, choices out; no store.  The caller keeps the state (the battles already planned, the judgments
stored) so that every round can be chosen again from what is stored: a rerun continues where a killed one
stopped, and the same seed chooses the same battles.

- **Placement**: ``placement_anchors`` anchors evenly spaced in human Elo (top and bottom included),
  ``placement_prompts`` prompts each; every battle is judged in both orders by the judge run.
- **Rounds**: the battles whose expected Fisher information about the new model's rating is largest:
  ``p(1 − p)`` at its current judge-Elo estimate against each anchor's judge Elo, averaged over the
  estimate's uncertainty ``N(θ̂, SE²)``; the round's battles go to the ``spread`` most informative anchors in
  proportion to it, on prompts not yet used with that anchor.
- **Stopping**: the sampling error's share of the interval's squared scale ``SE² / (SE² + σ̂²)`` below
  ``share``; or the rank interval unchanged for more than ``stable_rounds`` rounds and since the calls were
  half today's; or the budget; or no unused battle left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.domain import ELO_PER_LOGIT

STOP_FLOOR = "floor"
STOP_STABLE = "stable"
STOP_BUDGET = "budget"
STOP_EXHAUSTED = "exhausted"
STOP_NO_INTERVAL = "no-interval"
STOP_STALLED = "stalled"

STOP_TEXT = {
    STOP_FLOOR: "more calls cannot narrow the interval noticeably (the sampling error's share of its squared "
    "scale fell below {share:.0%})",
    STOP_STABLE: "the rank interval did not change for over {k} rounds, while the calls doubled",
    STOP_BUDGET: "the budget of judge calls was spent",
    STOP_EXHAUSTED: "no unused battle against an anchor is left",
    STOP_STALLED: "a round's judge run stored no new judgment (see the run's status with `python -m core runs`)",
    STOP_NO_INTERVAL: "no interval could be drawn after the placement: the judge needs labels on the rated models' "
    "human-voted battles to calibrate it (judge some first, e.g. evaluate --calibration N)",
}


@dataclass(frozen=True)
class AdaptiveConfig:
    placement_anchors: int = 5
    placement_prompts: int = 2
    round_size: int = 64  # judge calls per round, both orders counted
    share: float = 0.1  # stop when SE² / (SE² + σ̂²) falls below this
    stable_rounds: int = 12  # … or when the rank interval is unchanged for this many rounds
    spread: int = 3  # a round's battles go to at most this many anchors
    orders: int = 2  # judge calls per battle

    def __post_init__(self) -> None:
        if self.placement_anchors < 2:
            raise ValueError("the placement needs at least 2 anchors")
        if self.placement_prompts < 1:
            raise ValueError("the placement needs at least 1 prompt per anchor")
        if self.round_size < self.orders:
            raise ValueError(f"a round must hold at least one battle ({self.orders} judge calls)")
        if not 0 < self.share < 1:
            raise ValueError(f"the stopping share must be in (0, 1), got {self.share}")
        if self.stable_rounds < 1 or self.spread < 1 or self.orders < 1:
            raise ValueError("stable_rounds, spread and orders must be at least 1")

    def stop_text(self, reason: str) -> str:
        return STOP_TEXT.get(reason, reason).format(share=self.share, k=self.stable_rounds)


@dataclass(frozen=True)
class Round:
    """The state after one round: calls spent so far and the interval they give."""

    calls: int
    estimate: float  # judge Elo (the interval's centre)
    se: float
    sigma: float  # σ̂: the disagreement floor's scale
    half_width: float
    ranks: tuple[int, int] | None = None  # best, worst rank among the human-rated models

    @property
    def width(self) -> float:
        return 2.0 * self.half_width

    @property
    def share(self) -> float:
        return sampling_share(self.se, self.sigma)


@dataclass
class AdaptiveResult:
    """What the sequential design did: the rounds, why it stopped, what it spent and what the fixed design would."""

    rounds: list[Round] = field(default_factory=list)
    stop_reason: str = ""
    calls: int = 0
    fixed_calls: int = 0

    def as_dict(self) -> dict:
        return {
            "design": "adaptive",
            "stop_reason": self.stop_reason,
            "calls": int(self.calls),
            "fixed_calls": int(self.fixed_calls),
            "rounds": [
                {
                    "calls": int(r.calls),
                    "estimate": float(r.estimate),
                    "se": float(r.se),
                    "sigma": float(r.sigma),
                    "width": float(r.width),
                    "ranks": None if r.ranks is None else [int(r.ranks[0]), int(r.ranks[1])],
                }
                for r in self.rounds
            ],
        }


def sampling_share(se: float, sigma: float) -> float:
    """``SE² / (SE² + σ̂²)``: how much of the interval's squared scale more judge calls could still remove."""
    total = se**2 + sigma**2
    return 1.0 if total <= 0 else float(se**2 / total)


def win_probability(theta: np.ndarray | float, opponent: np.ndarray | float) -> np.ndarray:
    """P(new beats opponent) under Bradley–Terry on the Elo scale."""
    return 1.0 / (1.0 + np.exp(-(np.asarray(theta, float) - np.asarray(opponent, float)) / ELO_PER_LOGIT))


def expected_information(estimate: float, se: float, anchor_elo: np.ndarray, nodes: int = 9) -> np.ndarray:
    """``E[p(1 − p)]`` per anchor with the new model's rating ``~ N(estimate, se²)`` (Gauss–Hermite): the Fisher
    information one judged call carries; averaging over the estimate keeps a vague one from betting on one anchor."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    theta = estimate + (se if np.isfinite(se) else 400.0) * x
    p = win_probability(theta[:, None], np.asarray(anchor_elo, float)[None, :])
    return (w[:, None] * p * (1 - p)).sum(axis=0) / w.sum()


def prompt_order(shared: Mapping[str, Sequence[int]], seed: int) -> dict[str, list[int]]:
    """Each anchor's shared prompts in a seeded order that does not depend on the round: a rerun takes the same
    next prompts whatever round it resumes in."""
    out = {}
    for name in sorted(shared):
        # the anchor's own stream, so adding or dropping another anchor leaves its order alone
        salt = int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "little") ^ len(name)
        rng = np.random.default_rng([seed, salt])
        prompts = np.asarray(sorted(int(p) for p in shared[name]), dtype=np.int64)
        out[name] = prompts[rng.permutation(len(prompts))].tolist()
    return out


def placement(
    human_elo: Mapping[str, float], ordered: Mapping[str, Sequence[int]], cfg: AdaptiveConfig
) -> list[tuple[str, int]]:
    """(anchor, prompt) battles of the placement: anchors evenly spaced in human Elo, the first prompts of each."""
    names = [m for m in sorted(human_elo, key=lambda m: -human_elo[m]) if ordered.get(m)]
    if not names:
        return []
    k = min(cfg.placement_anchors, len(names))
    picks = np.unique(np.round(np.linspace(0, len(names) - 1, k)).astype(int))
    return [(names[i], p) for i in picks for p in list(ordered[names[i]])[: cfg.placement_prompts]]


def next_round(
    estimate: float,
    se: float,
    anchor_elo: Mapping[str, float],
    ordered: Mapping[str, Sequence[int]],
    used: set[tuple[str, int]],
    cfg: AdaptiveConfig,
    max_calls: int | None = None,
) -> list[tuple[str, int]]:
    """The next round's (anchor, prompt) battles: the ``spread`` anchors with the largest expected information
    share the round in proportion to it (largest remainders), each on its next unused prompts."""
    calls = cfg.round_size if max_calls is None else min(cfg.round_size, max_calls)
    n = calls // cfg.orders
    taken_by: dict[str, int] = {}
    for m, _ in used:
        taken_by[m] = taken_by.get(m, 0) + 1
    # an anchor has prompts left while fewer of its pairs are used than it has prompts (a used pair is always
    # one of its shared prompts); the lists themselves are built only for the anchors a round draws on
    names = [
        m for m in sorted(anchor_elo) if len(ordered.get(m, [])) > taken_by.get(m, 0) and np.isfinite(anchor_elo[m])
    ]
    free = _LazyFree(ordered, used)
    if n < 1 or not names:
        return []
    info = expected_information(estimate, se, np.array([anchor_elo[m] for m in names]))
    order = np.lexsort((np.arange(len(names)), -info))  # ties: the name order, so the choice is deterministic
    chosen: list[tuple[str, int]] = []
    left = n
    # the most informative anchors first; an anchor short of prompts passes the rest to the next one
    while left > 0 and order.size:
        top = order[: cfg.spread]
        w = info[top] / info[top].sum() if info[top].sum() > 0 else np.full(len(top), 1 / len(top))
        share = w * left
        alloc = np.floor(share).astype(int)
        for i in np.argsort(-(share - alloc), kind="stable")[: left - alloc.sum()]:
            alloc[i] += 1
        taken = 0
        for i, a in zip(top, alloc, strict=True):
            name = names[i]
            got = free[name][:a]
            free[name] = free[name][a:]
            chosen += [(name, p) for p in got]
            taken += len(got)
        left -= taken
        drawn = set(top.tolist())
        order = np.array([i for i in order if i not in drawn or free.has(names[i])], dtype=int)
        if taken == 0:
            break
    return chosen


class _LazyFree:
    """Each anchor's unused prompts in its seeded order, listed on first use."""

    def __init__(self, ordered: Mapping[str, Sequence[int]], used: set[tuple[str, int]]):
        self.ordered, self.used, self.lists = ordered, used, {}  # type: ignore[var-annotated]

    def __getitem__(self, name: str) -> list[int]:
        if name not in self.lists:
            self.lists[name] = [p for p in self.ordered.get(name, []) if (name, p) not in self.used]
        return self.lists[name]

    def __setitem__(self, name: str, value: list[int]) -> None:
        self.lists[name] = value

    def has(self, name: str) -> bool:
        return bool(self[name])


def stop_reason(
    rounds: Sequence[Round], cfg: AdaptiveConfig, budget: int | None = None, remaining: int | None = None
) -> str | None:
    """Which rule stops the design after the last of ``rounds`` (None: go on).  ``remaining``: unused battles."""
    if not rounds:
        return None
    last = rounds[-1]
    if not np.isfinite(last.half_width):
        return STOP_NO_INTERVAL
    if last.share < cfg.share:
        return STOP_FLOOR
    if budget is not None and last.calls + cfg.orders > budget:
        return STOP_BUDGET
    if remaining is not None and remaining <= 0:
        return STOP_EXHAUSTED
    # "unchanged" over the last k rounds *and* since the calls were half today's: with small rounds the interval
    # moves little from one round to the next, so k rounds alone would stop while more calls still narrow it
    since = [r for r in rounds if 2 * r.calls >= last.calls]
    if len(since) == len(rounds) or len(since) <= cfg.stable_rounds:
        return None
    unchanged = {r.ranks for r in rounds[-len(since) - 1 :]}
    return STOP_STABLE if len(unchanged) == 1 and last.ranks is not None else None


def decide(
    rounds: Sequence[Round],
    anchor_elo: Mapping[str, float],
    ordered: Mapping[str, Sequence[int]],
    used: set[tuple[str, int]],
    cfg: AdaptiveConfig,
    budget: int,
    remaining: int,
) -> tuple[str | None, list[tuple[str, int]]]:
    """After the last of ``rounds``: the rule that stops the design, or the next round's battles.  One step for
    the product's loop (``core.app.evaluate``) and the simulator's (``core.stats.adaptive_sim``), so the
    benchmark measures the rule the product runs."""
    reason = stop_reason(rounds, cfg, budget, remaining)
    if reason is not None:
        return reason, []
    last = rounds[-1]
    batch = next_round(last.estimate, last.se, anchor_elo, ordered, used, cfg, max_calls=budget - last.calls)
    if not batch:
        return (STOP_BUDGET if budget - last.calls < cfg.round_size else STOP_EXHAUSTED), []
    return None, batch


def fit_rating(opponent_elo: np.ndarray, y: np.ndarray, iterations: int = 50) -> tuple[float, float]:
    """The new model's judge Elo with its opponents' held fixed: the one-parameter Bradley–Terry MLE (``y``: its
    score per call, 1 win, 0.5 tie, 0 loss) and its SE from the Fisher information.  A perfect record has no
    finite MLE; half a tie against every opponent keeps it finite (it moves a mixed record by a fraction of its SE)."""
    opp = np.asarray(opponent_elo, float)
    yy = np.asarray(y, float)
    if opp.size == 0:
        return float("nan"), float("inf")
    if yy.min() == yy.max() and yy[0] != 0.5:
        uniq = np.unique(opp)
        opp = np.concatenate([opp, uniq])
        yy = np.concatenate([yy, np.full(uniq.size, 0.5)])
        wts = np.concatenate([np.ones(len(opponent_elo)), np.full(uniq.size, 0.5)])
    else:
        wts = np.ones(opp.size)
    theta = float(np.average(opp, weights=wts))
    for _ in range(iterations):
        p = win_probability(theta, opp)
        grad = float((wts * (yy - p)).sum()) / ELO_PER_LOGIT
        info = float((wts * p * (1 - p)).sum()) / ELO_PER_LOGIT**2
        if info <= 0:
            break
        step = float(np.clip(grad / info, -200.0, 200.0))
        theta += step
        if abs(step) < 1e-6:
            break
    p = win_probability(theta, opp)
    info = float((wts * p * (1 - p)).sum()) / ELO_PER_LOGIT**2
    return theta, (1.0 / np.sqrt(info) if info > 0 else float("inf"))


def rank_interval(lower: float, upper: float, rated_elo: np.ndarray) -> tuple[int, int]:
    """Best and worst rank among the human-rated models an interval allows (the Leaderboard's reading)."""
    rated = np.asarray(rated_elo, float)
    above = int((rated > upper).sum())
    between = int(((rated >= lower) & (rated <= upper)).sum())
    return above + 1, above + between + 1
