"""SCOPE escalations: the judged battles whose verdict is too uncertain to keep at an error target α.

One threshold λ̂ is calibrated on every battle of the judge with a decisive human vote (METHODS §6);
a judged battle is accepted when its BPE entropy s ≤ λ̂.  The others are the ones worth a human vote:
with them sent to humans, the judgments kept meet α (in expectation, under the rule's assumptions).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.methods import THRESHOLD_RULES
from core.stats import selective
from core.stats.selective import Threshold
from core.store import Store

COLUMNS = ["battle_id", "model_a", "model_b", "p_bar", "entropy", "has_human_vote"]


@dataclass(frozen=True)
class Escalations:
    """The battles SCOPE does not accept at ``alpha`` (most uncertain first) and the threshold behind them."""

    frame: pd.DataFrame  # COLUMNS
    threshold: Threshold
    n_considered: int
    alpha: float
    source: str
    judge: str

    @property
    def n_escalated(self) -> int:
        return len(self.frame)

    def text(self) -> str:
        th = self.threshold
        scope = f"{self.n_escalated:,} of {self.n_considered:,} battles judged by {self.judge}"
        if not th.feasible:
            return (
                f"SCOPE at α={self.alpha:.2f} accepts no judgment ({th.reason or 'no feasible threshold'}): "
                f"all {self.n_considered:,} battles judged by {self.judge} should go to humans."
            )
        return (
            f"SCOPE at α={self.alpha:.2f} accepts judgments with entropy ≤ {th.lam:.3f} nats (calibrated on "
            f"{th.n_calibration:,} human-labelled battles: {th.calibration_coverage:.0%} accepted there, "
            f"{th.calibration_risk:.1%} of them against the human vote; the rule targets an error ≤ α among accepted "
            f"judgments in expectation, which is not guaranteed: METHODS §6); {scope} fall above it: "
            "send them to humans."
        )


def default_source(bf: pd.DataFrame) -> str:
    """Logprobs in both orders when the judge gave them, else the rubric gaps (the SCOPE CLI's default)."""
    has_lp = "p_ab" in bf and "p_ba" in bf and bf["p_ab"].notna().any() and bf["p_ba"].notna().any()
    return "logprob" if has_lp else "rubric"


def escalations(
    store: Store,
    dataset: str,
    judge: str,
    alpha: float,
    source: str | None = None,
    battle_ids: Iterable[int] | None = None,
    method: str = "scope",
) -> Escalations | Unavailable:
    """The judged battles (all, or those of ``battle_ids``) with entropy above the SCOPE threshold at ``alpha``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if method not in THRESHOLD_RULES:
        raise ValueError(f"method {method!r} has no entropy threshold: expected one of {', '.join(THRESHOLD_RULES)}")
    bf = store.battle_frame(dataset, judge)
    source = source or default_source(bf)
    inst = selective.instances_from_battles(bf, source)
    if inst.reason:
        return Unavailable(f"no SCOPE threshold for {judge!r} on {dataset!r} (source {source!r}): {inst.reason}")
    th = selective.fit_threshold(inst.uncertainty(), alpha, method)
    # the same τ as the calibration instances, so the scores compared with λ̂ are on the same scale
    bp = selective.battle_probabilities(bf, source, inst.tau)
    f = bp.frame
    if battle_ids is not None:
        wanted = {int(b) for b in battle_ids}
        f = f[f["battle_id"].astype(int).isin(wanted)]
    keep = selective.accept(f["s"].to_numpy(float), f["c"].to_numpy(float), th.lam, alpha, method)
    out = (
        f.loc[~keep]
        .assign(entropy=lambda d: d["s"], has_human_vote=lambda d: d["human_y"].notna())
        .sort_values(["entropy", "battle_id"], ascending=[False, True])[COLUMNS]
        .reset_index(drop=True)
    )
    out["battle_id"] = out["battle_id"].astype(np.int64)
    return Escalations(out, th, len(f), float(alpha), source, judge)
