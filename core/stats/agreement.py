"""Agreement between two rankings or scorings of the same models.

Kendall's τ follows ``correct-looks-better.txt``: ``τ = (C − D)/(C + D)``
over model pairs, where pairs tied in either scoring count as neither
concordant nor discordant; Kendall's distance ``K_D = (1 − τ)/2`` is the
share of model pairs that must be swapped to turn one ranking into the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from core.domain import outcome_y


@dataclass(frozen=True)
class Agreement:
    n_models: int
    pearson: float
    spearman: float
    kendall: float
    kendall_distance: float
    concordant: int
    discordant: int

    def as_dict(self) -> dict:
        return {
            "n_models": self.n_models,
            "pearson": self.pearson,
            "spearman": self.spearman,
            "kendall": self.kendall,
            "kendall_distance": self.kendall_distance,
        }


def concordance(x: np.ndarray, y: np.ndarray) -> tuple[int, int]:
    """Concordant and discordant model pairs (pairs tied in x or y excluded)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    iu = np.triu_indices(len(x), 1)
    sx = np.sign(x[:, None] - x[None, :])[iu]
    sy = np.sign(y[:, None] - y[None, :])[iu]
    prod = sx * sy
    return int((prod > 0).sum()), int((prod < 0).sum())


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    c, d = concordance(x, y)
    return (c - d) / (c + d) if c + d else float("nan")


def agreement(x: ArrayLike, y: ArrayLike) -> Agreement:
    """Pearson, Spearman, Kendall τ and K_D between two scorings (NaNs dropped pairwise)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    n = len(xa)
    if n < 3 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        nan = float("nan")
        return Agreement(n, nan, nan, nan, nan, 0, 0)
    c, d = concordance(xa, ya)
    tau = (c - d) / (c + d) if c + d else float("nan")
    return Agreement(
        n_models=n,
        pearson=float(stats.pearsonr(xa, ya)[0]),
        spearman=float(stats.spearmanr(xa, ya)[0]),
        kendall=float(tau),
        kendall_distance=float((1 - tau) / 2),
        concordant=c,
        discordant=d,
    )


# ---------------------------------------------------------------- judge vs human
@dataclass(frozen=True)
class AgreementFigure:
    """One judge–human agreement figure: its value, the pairs it counts, and its definition in words."""

    agreement: float  # NaN when nothing is counted
    n: int
    definition: str = field(compare=False)

    def as_dict(self) -> dict:
        return {"agreement": self.agreement, "n": self.n, "definition": self.definition}


def judge_human_agreement(
    vote_winner: ArrayLike, vote_battle: ArrayLike, judge_y: ArrayLike, judge_battle: ArrayLike
) -> dict[str, AgreementFigure]:
    """Judge–human agreement under the MT-Bench paper's two setups, beside the unanimous-battle figure.

    ``vote_winner``/``vote_battle``: one row per human vote ('a', 'b', 'tie', 'both_bad'; a both-bad vote is a
    tie); ``judge_y``/``judge_battle``: the judge's battle-level label (1 a, 0 b, 0.5 tie, NaN none).

    * ``with_ties``: every (human vote, judge label) pair on a battle both labelled, three outcomes (a, b, tie),
      the share that match (MT-Bench's setup S1).
    * ``without_ties``: the same pairs where neither the human nor the judge said tie (setup S2).
    * ``unanimous_battles``: battles whose human votes all chose the same side and the judge did not tie, the
      share where the judge chose that side.
    """
    human = outcome_y(np.asarray(vote_winner, dtype=object))  # a both-bad vote is a tie
    vb = np.asarray(vote_battle)
    jy = np.asarray(judge_y, float)
    jb = np.asarray(judge_battle)
    label = dict(zip(jb.tolist(), jy.tolist()))
    judge = np.array([label.get(b, np.nan) for b in vb.tolist()], float)
    both = np.isfinite(human) & np.isfinite(judge)
    decisive = both & (human != 0.5) & (judge != 0.5)

    def share(mask: np.ndarray) -> tuple[float, int]:
        n = int(mask.sum())
        return (float((human[mask] == judge[mask]).mean()) if n else float("nan")), n

    out = {}
    a, n = share(both)
    out["with_ties"] = AgreementFigure(
        a, n, "vote level, ties included: each human vote against the judge's label (a, b or tie) of its battle"
    )
    a, n = share(decisive)
    out["without_ties"] = AgreementFigure(
        a, n, "vote level, ties excluded: human votes and judge labels that both pick a side"
    )
    # battle level: the battles whose decisive human votes all agree (no tie among them), judge ties skipped
    per: dict[object, set[float]] = {}
    for b, h in zip(vb[np.isfinite(human)].tolist(), human[np.isfinite(human)].tolist()):
        per.setdefault(b, set()).add(h)
    unanimous = {b: next(iter(s)) for b, s in per.items() if len(s) == 1 and 0.5 not in s}
    pairs = [(h, label[b]) for b, h in unanimous.items() if b in label and np.isfinite(label[b]) and label[b] != 0.5]
    n = len(pairs)
    out["unanimous_battles"] = AgreementFigure(
        float(np.mean([h == j for h, j in pairs])) if n else float("nan"),
        n,
        "battle level: battles whose human votes all pick the same side, the judge's ties skipped",
    )
    return out


EXPERT_PREFIX = "expert"  # FastChat's compute_agreement counts judges named expert_* as "human"; author_* apart


def mt_bench_agreement(
    vote_winner: ArrayLike,
    vote_battle: ArrayLike,
    vote_annotator: ArrayLike,
    vote_turn: ArrayLike,
    judge_y: ArrayLike,
    judge_battle: ArrayLike,
) -> dict[str, AgreementFigure]:
    """Judge–human agreement as the MT-Bench paper computes it (FastChat's ``compute_agreement.py``).

    Only the experts' votes (annotators named ``expert_*``; the authors' ``author_*`` votes are left out), per
    conversation turn, each expert vote against the judge's one label of its battle; a tie — the judge's
    ``tie (inconsistent)`` (its two orders disagreed, stored as a tie) and a human both-bad vote included —
    matches a tie.  ``turn_<t>_with_ties`` counts every pair (setup S1); ``turn_<t>_without_ties`` leaves out
    the pairs where either side said tie (setup S2).  Arguments as :func:`judge_human_agreement`, plus each
    vote's annotator and its battle's turn.
    """
    annotators = np.asarray(vote_annotator, dtype=object)
    expert = np.array([isinstance(a, str) and a.startswith(EXPERT_PREFIX) for a in annotators], bool)
    turns = np.asarray(vote_turn, dtype=float)
    winners, battles = np.asarray(vote_winner, dtype=object), np.asarray(vote_battle)
    out: dict[str, AgreementFigure] = {}
    for t in sorted({int(x) for x in turns[expert & np.isfinite(turns)]}):
        sel = expert & (turns == t)
        figs = judge_human_agreement(winners[sel], battles[sel], judge_y, judge_battle)
        out[f"turn_{t}_with_ties"] = AgreementFigure(
            figs["with_ties"].agreement,
            figs["with_ties"].n,
            f"MT-Bench setup S1, turn {t}: each expert vote against the judge's label (a, b or tie; an "
            "inconsistent tie is a tie), authors' votes left out",
        )
        out[f"turn_{t}_without_ties"] = AgreementFigure(
            figs["without_ties"].agreement,
            figs["without_ties"].n,
            f"MT-Bench setup S2, turn {t}: the same pairs where neither the expert nor the judge said tie",
        )
    return out
