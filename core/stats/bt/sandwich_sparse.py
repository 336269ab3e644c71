"""Sandwich variances of large sparse fits: one linear solve per wanted SE, never an m×m matrix."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse

from core.domain import sigmoid
from core.stats import bt as _bt
from core.stats.bt import sparse_linalg
from core.stats.bt.data import Comparisons
from core.stats.bt.fit import BTFit
from core.stats.bt.gauge import _centre
from core.stats.bt.likelihood import _eta
from core.stats.bt.sandwich import _bound_cells, _meat_weights
from core.stats.bt.sparse_linalg import _dense_solve, _gauge_projector, _grounded_splu, _pcg, _SparseDesign


def _leaf_anchors(c: Comparisons) -> np.ndarray:
    """Per model: its only opponent, when it has exactly one and that opponent has others; else −1."""
    m = c.n_models
    keep = c.n > 0
    lo, hi = np.minimum(c.i[keep], c.j[keep]), np.maximum(c.i[keep], c.j[keep])
    key = np.unique(lo * m + hi)
    lo, hi = key // m, key % m
    deg = np.bincount(lo, minlength=m) + np.bincount(hi, minlength=m)
    other = np.full(m, -1)
    other[lo], other[hi] = hi, lo  # only read where deg == 1, where it is the one opponent
    return np.where((deg == 1) & (deg[np.maximum(other, 0)] > 1), other, -1)


def sandwich_variances(c: Comparisons, fit: BTFit, params: np.ndarray) -> np.ndarray:
    """Exact sandwich variances of the parameters ``params`` (indices into (θ, w)), without dense inverses.

    ``Var(θ_m) = e_mᵀ P H⁺ G H⁺ P e_m`` (P: centring per component) is
    ``zᵀ G z`` with ``H z = P e_m`` (``H`` the information + λI, ``G`` the
    meat): one linear solve per parameter, then one sparse product.  These
    are the diagonal entries of :func:`sandwich_cov`, to solver round-off.

    Cost.  Solves run in blocks: up to ``SPLU_MAX_MODELS`` models by one
    sparse LU factorisation and two triangular solves each (≈ m·nnz(LU)
    flops for all m models: ~3 s for 10,000 long-tailed models), above it by
    Jacobi-preconditioned CG (≈ 50 sparse products each, ~0.12 s per model at
    100,000 models / 1M battles).  A model with a single opponent c (a third
    of a long tail) needs no solve of its own: ``H e_t = h_t e_t − d_t e_c``
    gives ``z_t = α z_c + e_t / h_t + const·1`` with ``α = d_t / h_t``, and
    the meat ignores the constant, so its variance follows from c's solve.

    Gauge.  The variance wanted is that of ``θ_m − wᵀθ`` (w: the reference
    weights of m's component, :meth:`BTFit.gauge_weights`), i.e.
    ``(z_m − z_w)ᵀ G (z_m − z_w)`` with ``H z_w = P w``: one extra solve per
    component whose reference is not its plain mean, then per model one dot
    product with ``G z_w`` (a leaf's follows from its anchor's as above).
    """
    m, k = c.n_models, c.n_features
    params = np.asarray(params, dtype=np.int64)
    eta = _eta(c, fit.beta)
    p = sigmoid(eta)
    design = _SparseDesign.of(c)
    h = design.matrix(c.n * p * sigmoid(-eta), fit.lam)
    meat = design.matrix(_meat_weights(c, p, _bound_cells(c))[0], 0.0)
    # Feature columns of H break the single-opponent identity.
    anchors = _leaf_anchors(c) if k == 0 else np.full(m, -1)
    is_leaf = np.zeros(len(params), bool)
    is_leaf[params < m] = anchors[params[params < m]] >= 0
    leaves = params[is_leaf]
    solved = np.unique(np.concatenate([params[~is_leaf], anchors[leaves]]))
    anchor_pos = np.searchsorted(solved, anchors[leaves])

    project = _gauge_projector(fit.components, m, fit.lam)
    lu: Callable[[np.ndarray], np.ndarray] | None = None
    inverse: np.ndarray | None = None
    if m <= _bt.SPLU_MAX_MODELS:
        if sparse_linalg._fills_in(c):
            inverse = sparse_linalg._grounded_dense_inverse(h, fit.components, fit.lam)
        if inverse is None:
            factor = _grounded_splu(h, fit.components, fit.lam)
            size = m + k
            if 2.0 * len(solved) * (factor.L.nnz + factor.U.nnz) * _bt.DENSE_SPEEDUP > float(size) ** 3:
                inverse = sparse_linalg._grounded_dense_inverse(h, fit.components, fit.lam)
            lu = factor.solve

    def solve(rhs: np.ndarray) -> np.ndarray:
        nonlocal lu
        if inverse is not None:
            return _dense_solve(inverse, rhs)
        if lu is not None:
            return lu(rhs)
        z, ok = _pcg(h, rhs, project)
        if not ok.all():  # a chain-like graph: LU from here on (see _CG_MAX_ITER)
            lu = sparse_linalg._grounded_lu(h, fit.components, fit.lam)
            z[:, ~ok] = lu(np.asfortranarray(rhs[:, ~ok]))
        return z

    # Components whose reference is not the plain mean: z_w and G z_w once each.
    gw = fit.gauge_weights()
    comps = fit.components
    plain = np.isclose(gw, 1.0 / np.bincount(comps)[comps]) if m else np.ones(0, bool)
    shifted = np.unique(comps[~plain])
    slot = np.full(int(comps.max()) + 1 if m else 0, -1)
    slot[shifted] = np.arange(len(shifted))
    if len(shifted):
        member = np.flatnonzero(np.isin(comps, shifted))
        rhs_w = np.zeros((m + k, len(shifted)), order="F")
        rhs_w[member, slot[comps[member]]] = gw[member]
        rhs_w[:m] = _centre(rhs_w[:m].T, comps).T  # P w
        z_w = solve(rhs_w)
        g_w = meat @ z_w
        q_w = np.einsum("ij,ij->j", z_w, g_w)
    # Blocks bound the (params × block) work arrays; LU solves gain from wide
    # blocks, CG from narrow ones (its sparse products stay in cache).
    block = 1024 if inverse is not None else 128 if lu is not None else 32
    means = None
    if inverse is not None and int(comps.max()) < 64:
        # With the inverse at hand, A P e_m = A e_m − (A 1_c)/n_c: columns read off, no right-hand side built.
        sizes = np.bincount(comps)
        member = sparse.csr_matrix((np.ones(m), (comps, np.arange(m))), shape=(len(sizes), m + k))
        means = np.asarray(member @ inverse).T / sizes  # (m + k) × components; the inverse is symmetric
    var = np.empty(len(solved))
    cross = np.empty(len(leaves))  # (G z_anchor) at the leaf's own row
    cross_w = np.zeros(len(solved))  # z_mᵀ G z_w for θ columns of shifted components
    for start in range(0, len(solved), block):
        cols = solved[start : start + block]
        if means is not None and inverse is not None:
            z = inverse[:, cols]
            theta_cols = np.flatnonzero(cols < m)
            z[:, theta_cols] -= means[:, comps[cols[theta_cols]]]
        else:
            rhs = np.zeros((m + k, len(cols)), order="F")  # SuperLU works on Fortran order
            rhs[cols, np.arange(len(cols))] = 1.0
            rhs[:m] = _centre(rhs[:m].T, comps).T  # P e_m; coefficient columns have no θ part
            z = solve(rhs)
        gz = meat @ z
        var[start : start + len(cols)] = np.einsum("ij,ij->j", z, gz)
        here = (anchor_pos >= start) & (anchor_pos < start + len(cols))
        cross[here] = gz[leaves[here], anchor_pos[here] - start]
        if len(shifted):
            col_slot = np.where(cols < m, slot[comps[np.minimum(cols, m - 1)]], -1)
            sel = np.flatnonzero(col_slot >= 0)
            cross_w[start + sel] = np.einsum("ij,ij->j", z[:, sel], g_w[:, col_slot[sel]])
    h_t = h.diagonal()[leaves]
    alpha = (h_t - fit.lam) / h_t
    out = np.empty(m + k)
    out[solved] = var
    out[leaves] = alpha**2 * var[anchor_pos] + 2 * alpha * cross / h_t + meat.diagonal()[leaves] / h_t**2
    if len(shifted):
        # Var(θ_m − wᵀθ) = Var_P(θ_m) − 2 z_mᵀ G z_w + z_wᵀ G z_w.
        cw = np.zeros(m + k)
        cw[solved] = cross_w
        leaf_slot = slot[comps[leaves]]
        on = leaf_slot >= 0
        cw[leaves[on]] = alpha[on] * cross_w[anchor_pos[on]] + g_w[leaves[on], leaf_slot[on]] / h_t[on]
        theta_p = np.flatnonzero(params < m)
        idx = params[theta_p]
        sl = slot[comps[idx]]
        corr = np.zeros(m + k)
        corr[idx[sl >= 0]] = -2 * cw[idx[sl >= 0]] + q_w[sl[sl >= 0]]
        out += corr
    return np.maximum(out[params], 0.0)
