"""What each model's own record can identify: well identified (an anchor), perfect, constant, single."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.stats.bt.data import Comparisons


@dataclass(frozen=True)
class _Records:
    """What each model's own battles can identify (see the module docstring)."""

    battles: np.ndarray  # number of battles (Comparisons.battle_counts)
    perfect: np.ndarray  # has battles but no win mass or no loss mass: the MLE is ±∞
    constant: np.ndarray  # has battles, all with one target in (0, 1) (ties only, a single tie, ...)
    anchors: np.ndarray  # well identified: >= 2 battles, win and loss mass, outcomes that vary (not constant)

    @property
    def single(self) -> np.ndarray:
        return np.abs(self.battles - 1.0) < 1e-9


def _records(c: Comparisons) -> _Records:
    """Per-model record classes from the cell sums, O(cells).

    A record is constant when the weighted variance of the model's own
    targets is zero; cells that may mix outcomes (no ``ss``, mean not 0 or 1)
    count as varied.
    """
    m = c.n_models
    n, s = c.n, c.s
    count = c.battle_counts
    battles = np.bincount(c.i, weights=count, minlength=m) + np.bincount(c.j, weights=count, minlength=m)
    weight = c.battles_per_model()
    win = np.bincount(c.i, weights=s, minlength=m) + np.bincount(c.j, weights=n - s, minlength=m)
    loss = weight - win
    eps = 1e-12 * np.maximum(weight, 1.0)
    has = weight > 0
    perfect = has & ((win <= eps) | (loss <= eps))
    homo = c.homogeneous_cells()
    if c.ss is not None:
        sq_i = c.ss
    else:
        sq_i = np.where(homo, s * c.cell_mean(), 0.0)  # n·ȳ² for the cells known to be homogeneous
    sq_j = n - 2 * s + sq_i  # Σ w(1 − y)²
    unknown = ~homo if c.ss is None else np.zeros(len(n), bool)
    mixed = np.bincount(c.i, weights=unknown, minlength=m) + np.bincount(c.j, weights=unknown, minlength=m)
    sq = np.bincount(c.i, weights=sq_i, minlength=m) + np.bincount(c.j, weights=sq_j, minlength=m)
    safe = np.where(has, weight, 1.0)
    var = sq / safe - (win / safe) ** 2
    constant = has & (mixed == 0) & (var <= 1e-9) & ~perfect
    # A constant record (ties only) has win and loss mass but no residual variation: its sandwich
    # variance is the stated bound p(1 − p), not an estimate, and must not set the others' gauge.
    anchors = (battles >= 2 - 1e-9) & has & ~perfect & ~constant
    return _Records(battles, perfect, constant, anchors)
