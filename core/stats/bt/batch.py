"""Many fits sharing one cell structure (bootstrap replicates, simulations), solved together."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from core.stats.bt.data import Comparisons
from core.stats.bt.fit import FALLBACK_LAM, BTFit, fit_bt
from core.stats.bt.gauge import _centre, _gauge
from core.stats.bt.likelihood import information


@dataclass(frozen=True)
class BatchFit:
    """Many fits sharing one cell structure: rows are replicates."""

    theta: np.ndarray  # (B, m), centred per component
    coef: np.ndarray  # (B, k)
    converged: np.ndarray  # (B,) bool
    regularised: np.ndarray  # (B,) bool: MLE did not exist, fitted with the fallback ridge


@dataclass(frozen=True)
class _Structure:
    """The pair (and feature-row) structure shared by all replicates.

    Batch arrays are laid out with replicates last — β (params, B), sums
    (groups, B) — so gathers take whole rows and the sparse products read
    contiguous memory.
    """

    m: int
    k: int
    gi: np.ndarray
    gj: np.ndarray
    gx: np.ndarray | None
    diff_t: sparse.csr_matrix  # (m, groups): +1 at i, −1 at j
    inc_i_t: sparse.csr_matrix  # (m, groups): 1 at i
    inc_j_t: sparse.csr_matrix

    @classmethod
    def of(cls, gi: np.ndarray, gj: np.ndarray, gx: np.ndarray | None, m: int, k: int) -> _Structure:
        g = len(gi)
        cols = np.arange(g)
        ones = np.ones(g)
        inc_i = sparse.csr_matrix((ones, (gi, cols)), shape=(m, g))
        inc_j = sparse.csr_matrix((ones, (gj, cols)), shape=(m, g))
        return cls(m, k, gi, gj, gx, (inc_i - inc_j).tocsr(), inc_i, inc_j)

    def residual(self, beta: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """s − w·σ(η) for β (params, B), w and s (groups, B)."""
        z = beta[self.gj] - beta[self.gi]  # −η
        if self.k:
            z -= self.gx @ beta[self.m :]
        with np.errstate(over="ignore"):
            np.exp(z, out=z)
        z += 1.0
        np.divide(w, z, out=z)
        np.subtract(s, z, out=z)
        return z

    def grad(self, beta: np.ndarray, w: np.ndarray, s: np.ndarray, lam: float) -> np.ndarray:
        r = self.residual(beta, w, s)
        g = np.empty_like(beta)
        g[: self.m] = self.diff_t @ r - lam * beta[: self.m]
        if self.gx is not None and self.k:
            g[self.m :] = self.gx.T @ r
        return g

    def degenerate(self, w: np.ndarray, s: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Replicates (columns) where one of ``models`` has no battles, no win mass or no loss mass."""
        wins = self.inc_i_t @ s + self.inc_j_t @ (w - s)
        losses = self.inc_i_t @ (w - s) + self.inc_j_t @ s
        eps = 1e-9
        return np.any(((wins <= eps) | (losses <= eps))[models], axis=0)


def _solve_batch(
    st: _Structure,
    w: np.ndarray,
    s: np.ndarray,
    beta0: np.ndarray,
    precond: np.ndarray,
    lam: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray]:
    """β ← β + P·g(β) for all replicates at once, P = (information at β₀ + gauge)⁻¹.

    ``w``, ``s``: (groups, B).  Replicates lie within sampling error of β₀,
    where the information barely changes, so this converges linearly and
    fast; converged replicates drop out of the active set.  Returns β
    (params, B) and a converged mask.
    """
    b = w.shape[1]
    beta = np.repeat(beta0[:, None], b, axis=1)
    done = np.zeros(b, bool)
    active = np.arange(b)
    for _ in range(max_iter):
        if not len(active):
            break
        full = len(active) == b
        ba = beta if full else beta[:, active]
        step = precond @ st.grad(ba, w if full else w[:, active], s if full else s[:, active], lam)
        ba += step
        if not full:
            beta[:, active] = ba
        small = np.max(np.abs(step), axis=0) < tol
        done[active[small]] = True
        active = active[~small]
    return beta, done


# A replicate whose θ moved this far (≈ 3,500 Elo) from the point estimate is
# heading for ±∞: some group of models has a perfect record in it.
_DRIFT = 8.0


def _batch_fit(
    st: _Structure,
    w: np.ndarray,
    s: np.ndarray,
    centre: Comparisons,
    base: BTFit,
    tol: float,
    max_iter: int,
    fallback_lam: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Solve all replicates, then refit the doubtful ones one by one with :func:`fit_bt`.

    ``centre``: cells with ``st``'s structure whose fit is ``base`` (the data a
    bootstrap resamples); every replicate starts at ``base`` and is
    preconditioned with the information there.  Returns (beta, converged,
    regularised, present), θ in ``base``'s gauge: minus the mean of its
    anchors that have battles in the replicate (an absent model's value is
    the ridge prior, which must not move the others); ``present`` (B, m)
    marks the models with battles in each replicate.
    """
    m, k = st.m, st.k
    lam = base.lam
    models, feature_names = centre.models, centre.feature_names
    beta0 = base.beta.copy()
    beta0[:m] = _centre(beta0[:m], base.components)  # the solver's gauge: with λ > 0 the optimum is centred
    precond = np.linalg.inv(information(centre, beta0, lam) + _gauge(base.components, m, k))
    beta, done = _solve_batch(st, w, s, beta0, precond, lam, tol, max_iter)
    beta = np.ascontiguousarray(beta.T)  # (B, params) from here on
    suspect = ~done
    if lam == 0:
        active_models = np.flatnonzero(base.n_battles > 0)
        drift = np.max(np.abs(beta[:, :m] - beta0[:m]), axis=1) > _DRIFT
        suspect |= st.degenerate(w, s, active_models) | drift
    regularised = np.zeros(len(beta), bool)
    for r in np.flatnonzero(suspect):
        rep = Comparisons(models, st.gi, st.gj, w[:, r], s[:, r], st.gx, feature_names)
        polished = fit_bt(rep, lam=lam, theta0=beta0[:m], fallback_lam=max(lam, fallback_lam), min_battles=0)
        beta[r] = polished.beta
        done[r] = polished.converged
        regularised[r] = polished.lam != lam
    present = np.ascontiguousarray(((st.inc_i_t @ w + st.inc_j_t @ w) > 0).T)
    anchors = np.ones(m, bool) if base.anchors is None else base.anchors
    beta[:, :m] = _centre(beta[:, :m], base.components, present & anchors)
    return beta, done, regularised, present


def fit_bt_batch(
    c: Comparisons,
    n: np.ndarray,
    s: np.ndarray,
    lam: float = 0.0,
    tol: float = 1e-8,
    max_iter: int = 60,
    fallback_lam: float = FALLBACK_LAM,
) -> BatchFit:
    """Fit B data sets that share ``c``'s cells (models, pairs, features) but not their sums.

    ``n``, ``s``: (B, cells) weight and target sums.  Every replicate starts
    at the fit of ``c`` itself, preconditioned with the information there, so
    ``c`` should be representative (e.g. the data a bootstrap resamples, or
    the expected counts of a simulation).  Replicates that do not converge
    fast, drift far (a group with a perfect record) or in which a model loses
    all its wins or losses are refitted one by one with :func:`fit_bt`; when
    their MLE does not exist (λ = 0) that fit uses ``fallback_lam`` and the
    replicate is flagged ``regularised``.  θ is in the gauge of the fit of
    ``c`` (mean 0 over its well-identified models that play in the replicate).
    """
    n = np.atleast_2d(np.asarray(n, dtype=float))
    s = np.atleast_2d(np.asarray(s, dtype=float))
    if n.shape != s.shape or n.shape[1] != len(c.n):
        raise ValueError("n and s must be (replicates, cells) matrices matching the cells of c")
    base = fit_bt(c, lam=lam, fallback_lam=fallback_lam, min_battles=0)
    st = _Structure.of(c.i, c.j, c.x, c.n_models, c.n_features)
    beta, done, regularised, _ = _batch_fit(
        st, np.ascontiguousarray(n.T), np.ascontiguousarray(s.T), c, base, tol, max_iter, fallback_lam
    )
    m = c.n_models
    return BatchFit(beta[:, :m], beta[:, m:], done, regularised)
