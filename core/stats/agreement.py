"""Agreement between two rankings or scorings of the same models.

Kendall's τ follows ``correct-looks-better.txt``: ``τ = (C − D)/(C + D)``
over model pairs, where pairs tied in either scoring count as neither
concordant nor discordant; Kendall's distance ``K_D = (1 − τ)/2`` is the
share of model pairs that must be swapped to turn one ranking into the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


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
