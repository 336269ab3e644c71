"""Sparse linear algebra on scipy: the sparse information, CG and LU solves, and graph algorithms for large tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import splu

from core.domain import sigmoid
from core.stats import bt as _bt
from core.stats.bt.data import Comparisons
from core.stats.bt.gauge import _centre
from core.stats.bt.likelihood import _eta

if TYPE_CHECKING:
    from core.stats.bt.fit import NewtonStep

_CG_RTOL = 1e-10  # per solve, relative residual: far below what moves Elo or an SE by 1e-6
# Comparison graphs with hubs need ~50 iterations.  Long chains of models
# (each compared only with its neighbours) need thousands, but a chain has no
# LU fill, so after this many the solve switches to sparse LU.
_CG_MAX_ITER = 500


@dataclass(frozen=True)
class _SparseDesign:
    """CSR pattern of Σ_cells w·a aᵀ, a = (e_i − e_j, x), plus λ on the θ diagonal.

    The pattern depends on the cells only, so it is built once and every
    Newton step (and the meat) only refills the values with a bincount.
    """

    m: int
    k: int
    indptr: np.ndarray
    indices: np.ndarray
    slot: np.ndarray  # CSR position of each entry of the stacked (i,i), (j,j), (i,j), (j,i)[, feature] list
    x: np.ndarray | None

    @classmethod
    def of(cls, c: Comparisons) -> _SparseDesign:
        m, k = c.n_models, c.n_features
        size = m + k
        i, j = c.i, c.j
        rows = [i, j, i, j, np.arange(m)]
        cols = [i, j, j, i, np.arange(m)]
        if c.x is not None and k:
            for f in range(k):
                feat = np.full(len(i), m + f)
                rows += [i, j, feat, feat]
                cols += [feat, feat, i, j]
                for g in range(k):
                    rows.append(feat)
                    cols.append(np.full(len(i), m + g))
        key = np.concatenate(rows) * size + np.concatenate(cols)
        uniq, slot = np.unique(key, return_inverse=True)
        indptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(uniq // size, minlength=size), out=indptr[1:])
        return cls(m, k, indptr, uniq % size, slot, c.x)

    def matrix(self, w: np.ndarray, lam: float) -> sparse.csr_matrix:
        """Σ_cells w·a aᵀ + λ·I_θ (the information for w = n·p(1−p), the meat for w = Σ w²(y−p)²)."""

        vals = [w, w, -w, -w, np.full(self.m, float(lam))]
        if self.x is not None and self.k:
            for f in range(self.k):
                wx = w * self.x[:, f]
                vals += [wx, -wx, wx, -wx]
                vals += [wx * self.x[:, g] for g in range(self.k)]
        data = np.bincount(self.slot, weights=np.concatenate(vals), minlength=len(self.indices))
        size = self.m + self.k
        return sparse.csr_matrix((data, self.indices, self.indptr), shape=(size, size))


def _pcg(
    h: sparse.csr_matrix,
    b: np.ndarray,
    project: Callable[[np.ndarray], np.ndarray] | None,
    rtol: float = _CG_RTOL,
    max_iter: int = _CG_MAX_ITER,
) -> tuple[np.ndarray, np.ndarray]:
    """Jacobi-preconditioned conjugate gradients on every column of ``b`` (size, B) at once.

    ``h`` is positive semi-definite; when it is singular (λ = 0: the
    per-component gauge) ``project`` removes the null-space part of the
    residual so round-off cannot stall CG, and the solution is defined up to
    that null space.  The graph Laplacian scaled by its degrees is well
    conditioned on comparison graphs with hubs (≈ 50 iterations to 1e-10 at
    100,000 models), which is why a diagonal preconditioner suffices.
    Converged columns leave the active set.  Returns (solutions, converged
    per column).
    """
    diag = h.diagonal()
    inv_diag = (1.0 / np.where(diag > 0, diag, 1.0))[:, None]
    out = np.zeros_like(b)
    r = b.copy() if project is None else project(b.copy())
    bound = rtol**2 * np.einsum("ij,ij->j", r, r)  # on squared norms
    active = np.flatnonzero(bound > 0)
    r, bound = r[:, active], bound[active]
    x = np.zeros_like(r)
    z = inv_diag * r
    p = z.copy()
    tmp = np.empty_like(r)
    rz = np.einsum("ij,ij->j", r, z)
    # In-place updates on the active columns only: at 100,000 models the
    # vector work costs as much as the sparse product.
    for _ in range(max_iter):
        if not len(active):
            break
        q = h @ p
        pq = np.einsum("ij,ij->j", p, q)
        alpha = rz / np.where(pq > 0, pq, 1.0)
        x += np.multiply(p, alpha, out=tmp)
        r -= np.multiply(q, alpha, out=tmp)
        if project is not None:
            r = project(r)
        going = np.einsum("ij,ij->j", r, r) > bound
        if not going.all():
            out[:, active[~going]] = x[:, ~going]
            active, bound, rz = active[going], bound[going], rz[going]
            x, r, p, z, tmp = x[:, going], r[:, going], p[:, going], z[:, going], tmp[:, going]
        np.multiply(r, inv_diag, out=z)
        rz_new = np.einsum("ij,ij->j", r, z)
        p *= rz_new / np.where(rz > 0, rz, 1.0)
        p += z
        rz = rz_new
    out[:, active] = x
    converged = np.ones(b.shape[1], bool)
    converged[active] = False
    return out, converged


# A graph "fills in" (its sparse LU would be near dense) when no model is a hub and its reverse Cuthill–McKee
# profile (an upper bound on the fill of a factor in that order) covers more than this share of the matrix:
# 27% for a ring with random chords at 10,000 models, 0.01% for a chain, 1% for a 100 × 100 grid.  Hubs
# (a model in at least HUB_SHARE of the battles) keep a minimum-degree LU sparse whatever the profile (Zipf:
# 14% profile, 250k non-zeros), so such graphs are factorised and judged by their measured fill instead.
FILL_PROFILE_SHARE = 0.05
HUB_SHARE = 0.01


def _fills_in(c: Comparisons) -> bool:
    """Predict from the graph alone (milliseconds) that a sparse LU of the information would be near dense."""

    m = c.n_models
    keep = c.n > 0
    if m < _bt.SPARSE_MIN_MODELS or not keep.any():
        return False
    degree = np.bincount(c.i[keep], weights=c.n[keep], minlength=m) + np.bincount(
        c.j[keep], weights=c.n[keep], minlength=m
    )
    if degree.max() >= HUB_SHARE * float(c.n[keep].sum()):
        return False
    adj = sparse.coo_matrix((np.ones(int(keep.sum())), (c.i[keep], c.j[keep])), shape=(m, m)).tocsr()
    adj = (adj + adj.T).tocsr()
    order = reverse_cuthill_mckee(adj, symmetric_mode=True)
    pos = np.empty(m, dtype=np.int64)
    pos[order] = np.arange(m)
    coo = adj.tocoo()
    first = np.arange(m)  # each row's first non-zero column in that order (the diagonal at most)
    np.minimum.at(first, pos[coo.row], pos[coo.col])
    profile = float(np.sum(np.arange(m) - first))
    return profile > FILL_PROFILE_SHARE * float(m) ** 2


def _dense_solve(inverse: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``inverse @ rhs`` for a block of right-hand sides that are mostly one unit column each plus a constant
    per component (``P e_m``): the product is read off the columns instead of multiplied (m² flops a column
    would make the whole table m³ again); what is left is multiplied once per distinct remainder."""
    units = np.abs(rhs).argmax(axis=0)
    cols = np.arange(rhs.shape[1])
    rest = rhs.copy()
    rest[units, cols] -= 1.0
    out = inverse[:, units]
    # Group equal remainders (up to the rounding of 1 − 1/n − 1 at the unit's own row) by a random projection,
    # then check each member against its group's first: a remainder off by 1e-12 moves no SE.
    key = np.round(np.random.default_rng(0).standard_normal(rhs.shape[0]) @ rest, 9)
    _, first, where = np.unique(key, return_index=True, return_inverse=True)
    if np.abs(rest - rest[:, first[where.ravel()]]).max(initial=0.0) > 1e-12:
        first, where = cols, cols  # a collision: multiply every remainder
    nonzero = np.flatnonzero(np.any(rest[:, first] != 0, axis=0))
    if len(nonzero):
        product = np.zeros((inverse.shape[0], len(first)))
        product[:, nonzero] = inverse @ rest[:, first[nonzero]]
        out += product[:, where.ravel()]
    return out


def _gauge_projector(components: np.ndarray, m: int, lam: float) -> Callable[[np.ndarray], np.ndarray] | None:
    """Centre the θ rows of a (params, B) block per component (None when λ > 0: no null space)."""
    if lam > 0:
        return None

    def project(v: np.ndarray) -> np.ndarray:
        v[:m] = _centre(v[:m].T, components).T
        return v

    return project


def _grounded(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> sparse.csc_matrix:
    """``h`` made non-singular for right-hand sides that sum to zero per component.

    With λ = 0 the information is singular along each component's ones
    vector; adding its own diagonal value at one model per component (the
    best-connected one) "grounds" the component.  For such b the grounded
    system's solution has that model at 0 and solves ``h z = b`` exactly, and
    the meat does not see the gauge, so no re-centring is needed.
    """

    m = len(components)
    h = h.tocsc(copy=True)
    if lam == 0 and m:
        diag = h.diagonal()[:m]
        by_comp = np.lexsort((-diag, components))
        first = by_comp[np.r_[True, components[by_comp][1:] != components[by_comp][:-1]]]
        ground = np.zeros(h.shape[0])
        ground[first] = np.where(diag[first] > 0, diag[first], 1.0)
        h = (h + sparse.diags(ground, format="csc")).tocsc()
    return h


def _grounded_splu(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> Any:
    """The sparse LU factorisation (SuperLU) of :func:`_grounded` ``h``."""

    grounded = _grounded(h, components, lam)
    return splu(grounded, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})


def _grounded_lu(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> Callable[[np.ndarray], np.ndarray]:
    """A sparse LU solve of ``h z = b`` for right-hand sides that sum to zero per component (:func:`_grounded`)."""
    return _grounded_splu(h, components, lam).solve


def _grounded_dense_inverse(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> np.ndarray | None:
    """The inverse of :func:`_grounded` ``h`` by dense Cholesky (LAPACK potrf + potri), in Fortran order and
    symmetric; None if not positive definite (the caller keeps its sparse solver)."""

    coo = _grounded(h, components, lam).tocoo()
    dense = np.zeros(coo.shape, order="F")  # calloc'd: pages are touched by the factorisation itself
    dense[coo.row, coo.col] = coo.data
    factor, info = lapack.dpotrf(dense, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        return None
    inv, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
    if info != 0:
        return None
    # potri fills the lower triangle: mirror it block by block (whole-matrix triangle indices cost seconds)
    n, step = inv.shape[0], 512
    for j0 in range(0, n, step):
        j1 = min(j0 + step, n)
        block = inv[j0:j1, j0:j1]
        block[np.triu_indices(j1 - j0, 1)] = block.T[np.triu_indices(j1 - j0, 1)]
        if j1 < n:
            inv[j0:j1, j1:] = inv[j1:, j0:j1].T
    return np.asarray(inv)


def _sparse_newton(c: Comparisons, comps: np.ndarray, lam: float) -> NewtonStep:
    """The same Newton step by conjugate gradients on the sparse information (sparse LU if CG stalls).

    With λ = 0 CG stays on the centred subspace up to round-off; centring the
    step removes that drift, so the iterates equal the dense path's.  An
    inexact step would still pass the gradient test on nearly flat
    directions, hence the exact LU fallback rather than a looser CG.
    """
    design = _SparseDesign.of(c)
    project = _gauge_projector(comps, c.n_models, lam)

    def step(beta: np.ndarray, g: np.ndarray) -> np.ndarray:
        eta = _eta(c, beta)
        h = design.matrix(c.n * sigmoid(eta) * sigmoid(-eta), lam)
        out, ok = _pcg(h, g[:, None], project)
        if not ok[0]:
            out = _grounded_lu(h, comps, lam)(g[:, None])
        return out[:, 0] if project is None else project(out)[:, 0]

    return step


# ------------------------------------------------ graphs of large tables
def _sparse_component_sums(values: np.ndarray, comps: np.ndarray, n_comp: int) -> np.ndarray:
    """Per row of ``values`` (rows, m), the sum over each component's members, by one sparse product."""
    m = values.shape[1]
    member = sparse.csr_matrix((np.ones(m), (np.arange(m), comps)), shape=(m, n_comp))
    return np.asarray((member.T @ values.T).T)


def _sparse_components(
    src: np.ndarray, dst: np.ndarray, m: int, directed: bool, connection: str = "weak"
) -> tuple[int, np.ndarray]:
    """scipy's ``connected_components`` of the graph of ``m`` nodes with edges src → dst: (count, labels)."""
    adj = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
    n, labels = connected_components(adj, directed=directed, connection=connection)
    return int(n), labels
