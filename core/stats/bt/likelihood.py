"""The penalised log-likelihood of a cell table, its gradient and its information (negative Hessian)."""

from __future__ import annotations

import numpy as np

from core.domain import sigmoid
from core.stats.bt.data import Comparisons


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def _eta(c: Comparisons, beta: np.ndarray) -> np.ndarray:
    m = c.n_models
    eta = beta[c.i] - beta[c.j]
    if c.x is not None:
        eta = eta + c.x @ beta[m:]
    return eta


def loglik(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> float:
    """Penalised log-likelihood (the objective that is maximised); ``beta`` = (θ, w)."""
    eta = _eta(c, beta)
    # ln σ(−η) = ln σ(η) − η: one log-sigmoid per cell instead of two (the objective's hot spot).
    log_p = _log_sigmoid(eta)
    ll = float(np.sum(c.n * log_p - (c.n - c.s) * eta))
    return ll - 0.5 * lam * float(beta[: c.n_models] @ beta[: c.n_models])


def _scatter(i: np.ndarray, j: np.ndarray, v: np.ndarray, m: int) -> np.ndarray:
    """Σ over cells of v·(e_i − e_j): the θ part of a gradient-like sum."""
    return np.bincount(i, weights=v, minlength=m) - np.bincount(j, weights=v, minlength=m)


def gradient(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> np.ndarray:
    """Gradient of :func:`loglik`."""
    m = c.n_models
    r = c.s - c.n * sigmoid(_eta(c, beta))
    g = np.zeros(m + c.n_features)
    g[:m] = _scatter(c.i, c.j, r, m) - lam * beta[:m]
    if c.x is not None:
        g[m:] = c.x.T @ r
    return g


def _laplacian(i: np.ndarray, j: np.ndarray, d: np.ndarray, m: int) -> np.ndarray:
    flat = np.bincount(i * m + j, weights=d, minlength=m * m) + np.bincount(j * m + i, weights=d, minlength=m * m)
    lap = -flat.reshape(m, m)
    lap[np.diag_indices(m)] = np.bincount(i, weights=d, minlength=m) + np.bincount(j, weights=d, minlength=m)
    return lap


def _outer_blocks(c: Comparisons, d: np.ndarray) -> np.ndarray:
    """Σ_cells d · a aᵀ with a = (e_i − e_j, x): the shape of both the Hessian and the meat."""
    m, k = c.n_models, c.n_features
    out = np.zeros((m + k, m + k))
    out[:m, :m] = _laplacian(c.i, c.j, d, m)
    if c.x is not None and k:
        dx = d[:, None] * c.x
        cross = np.stack([_scatter(c.i, c.j, dx[:, f], m) for f in range(k)], axis=1)
        out[:m, m:] = cross
        out[m:, :m] = cross.T
        out[m:, m:] = c.x.T @ dx
    return out


def information(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> np.ndarray:
    """Negative Hessian of the penalised log-likelihood (positive semi-definite)."""
    eta = _eta(c, beta)
    d = c.n * sigmoid(eta) * sigmoid(-eta)  # p(1−p) without cancellation at large |η|
    info = _outer_blocks(c, d)
    m = c.n_models
    info[:m, :m] += lam * np.eye(m)
    return info
