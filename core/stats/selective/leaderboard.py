"""Selective leaderboards: all judgments, the accepted ones only, and the accepted plus human escalation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.stats import bt
from core.stats.selective.battles import battle_probabilities, instances_from_battles
from core.stats.selective.rules import THRESHOLD_METHODS, Threshold, fit_threshold

LEADERBOARDS = ("all judgments", "accepted only", "accepted + human escalation")


@dataclass(frozen=True)
class LeaderboardPart:
    name: str
    fit: bt.BTFit | None  # None when no battle is left
    n_battles: int
    n_judge: int  # battles labelled by the judge
    n_human: int  # battles labelled by the human vote (escalated)
    reason: str | None = None


@dataclass(frozen=True)
class SelectiveLeaderboard:
    """Bradley–Terry fits on all judgments, on the accepted ones, and with abstentions escalated."""

    alpha: float
    lam: float
    parts: tuple[LeaderboardPart, ...]
    threshold: Threshold | None = None

    def part(self, name: str) -> LeaderboardPart:
        return next(p for p in self.parts if p.name == name)

    def frame(self) -> pd.DataFrame:
        """Long format: model, elo, rank, leaderboard, n_battles_used, well_defined."""
        out = []
        for p in self.parts:
            if p.fit is None:
                continue
            f = p.fit.frame()
            out.append(
                f[["model", "elo", "rank"]].assign(
                    leaderboard=p.name, n_battles_used=p.n_battles, well_defined=p.fit.well_defined
                )
            )
        cols = ["model", "elo", "rank", "leaderboard", "n_battles_used", "well_defined"]
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)

    def counts(self) -> dict:
        return {p.name: p.n_battles for p in self.parts}


def selective_leaderboards(
    bf: pd.DataFrame,
    score: ArrayLike | str,
    alpha: float,
    lam: float,
    bt_lam: float = 0.0,
    threshold: Threshold | None = None,
) -> SelectiveLeaderboard:
    """Bradley–Terry (i) on every hard judge label, (ii) on accepted judgments only, (iii) on accepted
    judgments plus the abstained battles handed to their human vote where one exists.

    ``bf``: model_a, model_b, judge_hard, human_y (a battle frame); ``score``:
    the uncertainty s per row of ``bf`` (array, or the name of a column; NaN =
    unknown, which never passes the threshold).  A judged battle is accepted
    iff ``s ≤ lam``; abstained battles without a human vote drop out of (iii).
    """

    s = (bf[score] if isinstance(score, str) else pd.Series(np.asarray(score, float), index=bf.index)).to_numpy(float)
    if len(s) != len(bf):
        raise ValueError(f"{len(s)} scores for {len(bf)} battles")
    jh = bf["judge_hard"].to_numpy(float)
    hy = bf["human_y"].to_numpy(float)
    judged = np.isfinite(jh)
    accepted = judged & np.isfinite(s) & (s <= lam)
    escalated = judged & ~accepted & np.isfinite(hy)
    plans = [
        (LEADERBOARDS[0], judged, jh),
        (LEADERBOARDS[1], accepted, jh),
        (LEADERBOARDS[2], accepted | escalated, np.where(accepted, jh, hy)),
    ]
    ma, mb = bf["model_a"].to_numpy(), bf["model_b"].to_numpy()
    parts = []
    for name, mask, y in plans:
        n_h = int((mask & escalated).sum())
        n_total = int(mask.sum())
        if n_total == 0:
            why = (
                "no battle has a judge label"
                if not judged.any()
                else (
                    "no judgment is accepted at this threshold"
                    if name == LEADERBOARDS[1]
                    else "no judgment is accepted and no abstained battle has a human vote"
                )
            )
            parts.append(LeaderboardPart(name, None, 0, 0, 0, why))
            continue
        fit = bt.fit_bt(bt.comparisons_from_battles(ma[mask], mb[mask], y[mask]), lam=bt_lam)
        issues = "; ".join(str(i) for i in fit.issues) or None
        parts.append(LeaderboardPart(name, fit, n_total, n_total - n_h, n_h, issues))
    return SelectiveLeaderboard(float(alpha), float(lam), tuple(parts), threshold)


def fit_selective_leaderboard(
    bf: pd.DataFrame, source: str, alpha: float, method: str = "scope", delta: float = 0.1, tau: float | None = None
) -> SelectiveLeaderboard | str:
    """Calibrate λ̂ on the human-voted battles, then :func:`selective_leaderboards` on all battles.

    Returns a reason string when the source gives no usable probabilities.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError(f"the selective leaderboard needs a threshold method {THRESHOLD_METHODS}, got {method!r}")
    bp = battle_probabilities(bf, source, tau)
    if bp.reason:
        return bp.reason
    inst = instances_from_battles(bf, source, bp.tau)
    if inst.reason:
        return inst.reason
    th = fit_threshold(inst.uncertainty(), alpha, method, delta)
    s = bf[["battle_id"]].merge(bp.frame[["battle_id", "s"]], on="battle_id", how="left")["s"].to_numpy(float)
    return selective_leaderboards(bf, s, alpha, th.lam, threshold=th)
