"""A store's battles as instances: each judgment's P(a ≻ b) per source, with the human vote."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.domain import soft_target
from core.methods import SCOPE_SOURCES
from core.stats.selective.uncertainty import Uncertainty, binary_entropy, from_probabilities

SOURCES: tuple[str, ...] = tuple(SCOPE_SOURCES)


@dataclass(frozen=True)
class BattleProbabilities:
    """P(a ≻ b) per presentation order for every judged battle where the source gives one.

    ``frame``: battle_id, model_a, model_b, human_y, judge_hard, p_fwd, p_rev,
    p_bar, pred_a, s (BPE entropy), c (confidence); ``reason`` says why it is
    empty when it is.
    """

    frame: pd.DataFrame
    source: str
    tau: float | None
    reason: str | None = None


def _fit_tau(gap: np.ndarray, human_y: np.ndarray) -> tuple[float | None, str | None]:
    from core.stats.calibration import fit_tau

    t = fit_tau(gap, human_y, interval=False)
    return t.tau, t.reason


def _verbal_p(verdict: pd.Series, conf: pd.Series) -> np.ndarray:
    """A stated verdict with confidence c → P(a ≻ b): c for 'a', 1 − c for 'b', 0.5 for a tie."""
    c = pd.to_numeric(conf, errors="coerce").to_numpy(float)
    finite = c[np.isfinite(c)]
    if len(finite) and finite.max() > 1 and finite.max() <= 100:
        c = c / 100.0  # stated as a percentage
    c = np.where((c >= 0) & (c <= 1), c, np.nan)
    v = verdict.to_numpy(dtype=object)
    return np.where(v == "a", c, np.where(v == "b", 1 - c, np.where(v == "tie", 0.5, np.nan)))


def battle_probabilities(bf: pd.DataFrame, source: str, tau: float | None = None) -> BattleProbabilities:
    """P(a ≻ b) of both orders for every judged battle (human vote or not).

    ``source``: 'logprob' (first-token A/B probabilities p_ab, p_ba),
    'rubric' (σ(τ·gap) of each order's rubric gap, τ fitted by maximum
    likelihood on human-decisive battles unless given, METHODS §2), 'verbal'
    (the judge's stated confidence in its verdict, per order; one order when
    only one was judged) or 'single' (the forward order only: logprobs when
    present, else the rubric gap of the forward order, else the averaged gap).
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}: expected one of {SOURCES}")
    empty = pd.DataFrame(
        columns=[
            "battle_id",
            "model_a",
            "model_b",
            "human_y",
            "judge_hard",
            "p_fwd",
            "p_rev",
            "p_bar",
            "pred_a",
            "s",
            "c",
        ]
    )
    col = lambda name: (bf[name] if name in bf else pd.Series(np.nan, index=bf.index)).to_numpy(float)
    need_tau = source == "rubric" or (source == "single" and not np.isfinite(col("p_ab")).any())
    reason = None
    if need_tau and tau is None:
        tau, why = _fit_tau(col("gap"), col("human_y"))
        if tau is None:
            return BattleProbabilities(empty, source, None, f"τ cannot be fitted: {why}")
    if source == "logprob":
        p_fwd, p_rev = col("p_ab"), col("p_ba")
    elif source == "rubric":
        assert tau is not None  # fitted above when not given
        p_fwd, p_rev = soft_target(col("gap_ab"), tau), soft_target(col("gap_ba"), tau)
    elif source == "verbal":
        none = pd.Series([None] * len(bf), index=bf.index, dtype=object)
        p_fwd = _verbal_p(bf.get("verdict_ab", none), bf.get("conf_ab", none))
        p_rev = _verbal_p(bf.get("verdict_ba", none), bf.get("conf_ba", none))
        if not np.isfinite(p_rev).any():
            p_rev = p_fwd  # the judge was run in one order only
    else:  # single
        p_fwd = col("p_ab")
        if not np.isfinite(p_fwd).any():
            g = col("gap_ab")
            assert tau is not None  # fitted above when not given
            p_fwd = soft_target(np.where(np.isfinite(g), g, col("gap")), tau)
        p_rev = p_fwd
    ok = np.isfinite(p_fwd) & np.isfinite(p_rev)
    if not ok.any():
        reason = {
            "logprob": "no battle has first-token A/B probabilities in both orders",
            "rubric": "no battle has rubric scores in both presentation orders",
            "verbal": "the judge gave no verbalised confidence",
            "single": "no battle has a forward-order probability or score",
        }[source]
        return BattleProbabilities(empty, source, tau, reason)
    pf, pr = np.clip(p_fwd[ok], 0, 1), np.clip(p_rev[ok], 0, 1)
    p = (pf + pr) / 2.0
    sub = bf.loc[ok]
    frame = pd.DataFrame(
        {
            "battle_id": sub["battle_id"].to_numpy() if "battle_id" in sub else np.flatnonzero(ok),
            "model_a": sub["model_a"].to_numpy(),
            "model_b": sub["model_b"].to_numpy(),
            "human_y": col("human_y")[ok],
            "judge_hard": col("judge_hard")[ok],
            "p_fwd": pf,
            "p_rev": pr,
            "p_bar": p,
            "pred_a": p >= 0.5,
            "s": binary_entropy(p),
            "c": np.maximum(p, 1 - p),
        }
    )
    return BattleProbabilities(frame, source, tau, None)


@dataclass(frozen=True)
class Instances:
    """Battles with a decisive human vote (majority, ties excluded) and P(a ≻ b) from ``source``.

    ``frame``: battle_id, model_a, model_b, human_a, p_fwd, p_rev.
    """

    frame: pd.DataFrame
    source: str
    tau: float | None
    reason: str | None = None

    def uncertainty(self) -> Uncertainty:
        f = self.frame
        name = "single_order" if self.source == "single" else "bpe"
        return from_probabilities(
            f["p_fwd"].to_numpy(float), f["p_rev"].to_numpy(float), f["human_a"].to_numpy(bool), name
        )


def instances_from_battles(bf: pd.DataFrame, source: str, tau: float | None = None) -> Instances:
    """The calibration/evaluation instances of a battle frame (human decisive, judged by ``source``)."""
    bp = battle_probabilities(bf, source, tau)
    cols = ["battle_id", "model_a", "model_b", "human_a", "p_fwd", "p_rev"]
    if bp.reason:
        return Instances(pd.DataFrame(columns=cols), source, bp.tau, bp.reason)
    f = bp.frame
    dec = f["human_y"].notna() & (f["human_y"] != 0.5)
    frame = f.loc[dec].assign(human_a=f.loc[dec, "human_y"] > 0.5)[cols].reset_index(drop=True)
    reason = None if len(frame) else "no judged battle has a decisive human vote"
    return Instances(frame, source, bp.tau, reason)
