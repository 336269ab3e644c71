"""The per-component gauge: centring θ per connected component, on its anchors or on all its members."""

from __future__ import annotations

import numpy as np

from core.stats import bt as _bt


def _gauge(components: np.ndarray, m: int, k: int) -> np.ndarray:
    """Projector onto the per-component all-ones directions (θ block only)."""
    g = np.zeros((m + k, m + k))
    # a set, not np.unique: numpy's unique of a plain array imports numpy.ma (15 ms of `core bt`'s start)
    for comp in sorted(set(components.tolist())):
        idx = np.flatnonzero(components == comp)
        g[np.ix_(idx, idx)] = 1.0 / len(idx)
    return g


def _centre(theta: np.ndarray, comps: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Subtract from θ its per-component mean; works on (m,) or (B, m).

    ``weights``: (m,) or (B, m) non-negative weights of that mean (uniform
    when None); a component whose weights are all zero in a row falls back to
    its uniform mean.  One sparse product instead of a loop over components:
    a long-tailed table can have thousands of components (models without
    battles).
    """
    out = np.array(theta, dtype=float, copy=True)
    if not out.shape[-1]:
        return out
    comps = np.asarray(comps)
    m = len(comps)
    n_comp = int(comps.max()) + 1
    flat = out.reshape(-1, m)
    means = _component_sums(flat, comps, n_comp) / np.bincount(comps, minlength=n_comp)
    if weights is not None:
        wts = np.broadcast_to(np.asarray(weights, dtype=float), flat.shape)
        total = _component_sums(wts, comps, n_comp)
        weighted = _component_sums(flat * wts, comps, n_comp) / np.where(total > 0, total, 1.0)
        means = np.where(total > 0, weighted, means)
    out -= means[:, comps].reshape(out.shape)
    return out


def _component_sums(values: np.ndarray, comps: np.ndarray, n_comp: int) -> np.ndarray:
    """Per row of ``values`` (rows, m), the sum over each component's members: (rows, n_comp)."""
    rows, m = values.shape
    if m <= _bt.SPARSE_MIN_MODELS:
        # One bincount over (row, component) keys: at most SPARSE_MIN_MODELS² keys, and no scipy.
        key = (np.arange(rows)[:, None] * n_comp + comps).ravel()
        return np.bincount(key, weights=values.ravel(), minlength=rows * n_comp).reshape(rows, n_comp)
    # Large tables: the keys would cost rows × m memory; a sparse product does not.
    from core.stats.bt.sparse_linalg import _sparse_component_sums  # scipy: loaded on this path only

    return _sparse_component_sums(values, comps, n_comp)


def _gauge_weights(comps: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """Weight of each model in its component's reference mean: 1/#anchors on anchors (uniform if none)."""
    comps = np.asarray(comps)
    if not len(comps):
        return np.zeros(0)
    n_anchor = np.bincount(comps, weights=anchors.astype(float))
    size = np.bincount(comps).astype(float)
    use = n_anchor[comps] > 0
    return np.where(use, anchors / np.where(use, n_anchor[comps], 1.0), 1.0 / size[comps])
