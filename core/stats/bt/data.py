"""Battles as cells: the ``Comparisons`` container, its validation, and the builders from battles and pair tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Comparisons:
    """Cells of battles: side indices, weight sum ``n``, target sum ``s``.

    Optional per-cell sums: ``ss = Σ w·y²`` makes the sandwich exact for cells
    that mix outcomes; ``count`` is the number of battles (defaults to ``n``,
    i.e. unit weights) and is what a battle bootstrap resamples.
    """

    models: tuple
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    s: np.ndarray
    x: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    ss: np.ndarray | None = None
    count: np.ndarray | None = None
    # Cells that hold clusters of correlated battles (several votes on one battle): per cell the sums over
    # its clusters of s_c², n_c·s_c and n_c², columns in that order.  The sandwich then sums each cluster's
    # gradient before squaring it: cluster-robust by battle.
    cluster: np.ndarray | None = None

    def __post_init__(self) -> None:
        # Accept any array-likes; store contiguous numpy arrays of the right dtype.
        for name, dtype in (
            ("i", np.int64),
            ("j", np.int64),
            ("n", float),
            ("s", float),
            ("ss", float),
            ("count", float),
            ("x", float),
            ("cluster", float),
        ):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, np.ascontiguousarray(v, dtype=dtype))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "feature_names", tuple(self.feature_names))
        rows = len(self.n)
        if not (len(self.i) == len(self.j) == len(self.s) == rows):
            raise ValueError("Comparisons: i, j, n and s must have one entry per cell")
        for name in ("ss", "count"):
            v = getattr(self, name)
            if v is not None and len(v) != rows:
                raise ValueError(f"Comparisons: {name} must have one entry per cell")
        if self.cluster is not None and self.cluster.shape != (rows, 3):
            raise ValueError("Comparisons: cluster must be a (cells, 3) matrix of Σs_c², Σn_c·s_c, Σn_c²")
        if self.x is not None and (self.x.ndim != 2 or self.x.shape[0] != rows):
            raise ValueError("Comparisons: x must be a (cells, features) matrix")
        if self.x is not None and len(self.feature_names) != self.x.shape[1]:
            raise ValueError("Comparisons: one feature name per column of x")
        if rows:
            m = len(self.models)
            if min(self.i.min(), self.j.min()) < 0 or max(self.i.max(), self.j.max()) >= m:
                raise ValueError("Comparisons: model index out of range")
            if (
                np.any(self.n < 0)
                or np.any(self.s < -1e-9 * np.maximum(self.n, 1))
                or np.any(self.s > self.n * (1 + 1e-9) + 1e-12)
            ):
                raise ValueError("Comparisons: need 0 <= s <= n in every cell (s is a sum of targets in [0, 1])")

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_features(self) -> int:
        return 0 if self.x is None else self.x.shape[1]

    @property
    def battle_counts(self) -> np.ndarray:
        return self.n if self.count is None else self.count

    def cell_mean(self) -> np.ndarray:
        """Mean target of each cell (0.5 for empty cells)."""
        return np.where(self.n > 0, self.s / np.where(self.n > 0, self.n, 1.0), 0.5)

    def homogeneous_cells(self, tol: float = 1e-9) -> np.ndarray:
        """Per cell: are all its battles known to carry the same target?

        With ``ss`` this is "zero within-cell variance"; without it only cells
        whose mean is 0 or 1 are known to be homogeneous.
        """
        ybar = self.cell_mean()
        if self.ss is None:
            return (self.n == 0) | (ybar <= tol) | (ybar >= 1 - tol)
        var = np.where(self.n > 0, self.ss / np.where(self.n > 0, self.n, 1.0) - ybar**2, 0.0)
        return var <= tol

    def is_homogeneous(self, tol: float = 1e-9) -> bool:
        """Every cell holds battles with one target value (what the bootstrap resamples)."""
        return bool(np.all(self.homogeneous_cells(tol)))

    def battles_per_model(self) -> np.ndarray:
        """Weight sum of the battles each model took part in."""
        m = self.n_models
        return np.bincount(self.i, weights=self.n, minlength=m) + np.bincount(self.j, weights=self.n, minlength=m)


def _codes(values: np.ndarray, models: tuple) -> np.ndarray:
    import pandas as pd

    codes = pd.Categorical(values, categories=list(models)).codes.astype(np.int64)
    if np.any(codes < 0):
        missing = pd.unique(np.asarray(values, dtype=object)[codes < 0])[:3]
        raise ValueError(f"model(s) {list(missing)} are not in the model list")
    return codes


ArrayLike = Sequence[Any] | np.ndarray


def _validate(
    models: Sequence[Any] | None,
    a: ArrayLike,
    b: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None,
    x: np.ndarray | None,
    feature_names: Sequence[str],
) -> tuple[tuple, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    y = np.asarray(y, dtype=float)
    if not (len(a) == len(b) == len(y)):
        raise ValueError("model_a, model_b and y must have the same length")
    if np.any(~np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        raise ValueError("targets y must be finite and in [0, 1] (drop battles without a target first)")
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=float)
    if len(w) != len(y) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite, non-negative and one per battle")
    if x is not None:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if x.shape[0] != len(y) or not np.all(np.isfinite(x)):
            raise ValueError("feature matrix x must be finite with one row per battle")
        names = tuple(feature_names) or tuple(f"x{k}" for k in range(x.shape[1]))
        if len(names) != x.shape[1]:
            raise ValueError(f"{x.shape[1]} feature columns but {len(names)} feature names")
    else:
        names = ()
    if np.any(a == b):
        raise ValueError("a model cannot battle itself")
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    return tuple(models), a, b, y, w, x, names


def _combine(key: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Dense codes of the pair (key, codes); stays below len(key) so it never overflows."""
    import pandas as pd

    both = key * (int(codes.max()) + 1 if len(codes) else 1) + codes
    return pd.factorize(both)[0].astype(np.int64)


def comparisons_from_battles(
    model_a: ArrayLike,
    model_b: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    x: np.ndarray | None = None,
    feature_names: Sequence[str] = (),
    models: Sequence | None = None,
    aggregate: bool | str = True,
) -> Comparisons:
    """Battles → cells.

    ``y`` is P(a beats b) in [0, 1] (1, 0, 0.5 or any soft target; clipping
    soft targets is the caller's business, METHODS §2).

    ``aggregate=True``: one cell per (unordered pair, target value[, weight
    value when weights differ][, feature row]), oriented so that ``i < j``
    (the likelihood is unchanged by swapping a and b with y → 1 − y): exact
    for fitting, the sandwich and the battle bootstrap; hard labels give at
    most three cells per pair.  ``aggregate='pair'``: one cell per unordered
    pair (and feature row): the smallest table; ``ss`` keeps the sandwich
    exact.  ``aggregate=False``: one cell per battle.
    """
    import pandas as pd

    names, a, b, yy, w, x, feature_names = _validate(models, model_a, model_b, y, weight, x, feature_names)
    ia, ib = _codes(a, names), _codes(b, names)
    ones = np.ones(len(yy))
    if aggregate is False or len(yy) == 0:
        return Comparisons(names, ia, ib, w.copy(), w * yy, x, feature_names, w * yy * yy, ones)
    if aggregate not in (True, "pair"):
        raise ValueError(f"aggregate must be True, 'pair' or False, got {aggregate!r}")
    flip = ia > ib
    ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
    yy = np.where(flip, 1.0 - yy, yy)
    if x is not None:
        x = np.where(flip[:, None], -x, x)
    key = pd.factorize(ia * len(names) + ib)[0].astype(np.int64)
    if aggregate is True:
        key = _combine(key, pd.factorize(yy)[0])
        if np.ptp(w) > 0:
            key = _combine(key, pd.factorize(w)[0])
    if x is not None and x.shape[1]:
        key = _combine(key, pd.factorize(pd.MultiIndex.from_arrays(list(x.T)))[0])
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    k = len(uniq)
    n = np.bincount(inv, weights=w, minlength=k)
    s = np.bincount(inv, weights=w * yy, minlength=k)
    ss = np.bincount(inv, weights=w * yy * yy, minlength=k)
    count = np.bincount(inv, minlength=k).astype(float)
    xc = None if x is None else x[first]
    return Comparisons(names, ia[first], ib[first], n, s, xc, feature_names, ss, count)


# A pair table's cluster sums (Comparisons.cluster): Σ over battles of (Σ y)², n·Σ y and n², n = its votes.
CLUSTER_COLUMNS = ("cluster_ss", "cluster_ns", "cluster_nn")


def comparisons_from_pair_table(df: pd.DataFrame, models: Sequence | None = None) -> Comparisons:
    """A pair table (columns model_a, model_b, n, s[, ss][, count][, cluster sums]) → cells.

    This is what SQL aggregation returns (``Store.pair_stats``): ``n`` battle
    count (or weight sum) and ``s`` target sum per ordered pair.  ``ss`` (Σ y²)
    keeps the sandwich exact and lets a bootstrap split hard-label pairs into
    their win/tie/loss cells.  :data:`CLUSTER_COLUMNS` make the sandwich
    cluster-robust (votes of one battle are one cluster).
    """
    missing = [col for col in ("model_a", "model_b", "n", "s") if col not in df.columns]
    if missing:
        raise ValueError(f"pair table lacks column(s) {missing} (has {list(df.columns)})")
    a = df["model_a"].to_numpy(dtype=object)
    b = df["model_b"].to_numpy(dtype=object)
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    models = tuple(models)
    opt = {col: df[col].to_numpy(float) for col in ("ss", "count") if col in df.columns}
    clustered = all(col in df.columns for col in CLUSTER_COLUMNS)
    return Comparisons(
        models,
        _codes(a, models),
        _codes(b, models),
        df["n"].to_numpy(float),
        df["s"].to_numpy(float),
        ss=opt.get("ss"),
        count=opt.get("count"),
        cluster=df[list(CLUSTER_COLUMNS)].to_numpy(float) if clustered else None,
    )
