"""Dense linear algebra in numpy only (Cholesky solves), and the sizes at which each solver takes over."""

from __future__ import annotations

import numpy as np

# ------------------------------------------------------- solver choice
# Above this many models ``solver='auto'`` fits by Newton–CG on a sparse
# information matrix.  The dense path costs O(m³) per Newton step (a Cholesky
# of the (m+k)² information); the sparse path O(cells × CG iterations).
# Fit + every sandwich SE on long-tailed graphs (3 battles per model, 2-core
# machine), dense vs sparse: 1,000 models 0.29 s vs 0.04 s, 1,500 models
# 0.65 s vs 0.07 s, 3,000 models 4.5 s vs 0.22 s.  Below the threshold both
# take under a second and the dense path, the reference implementation that
# every small leaderboard has always used, is kept.
SPARSE_MIN_MODELS = 1500
# The sparse sandwich costs one linear solve per model whose SE is wanted.
# Up to this many models every SE is computed by default (sparse LU: ~3 s at
# 10,000 long-tailed models); above it only the SE_TOP_MODELS best by Elo
# (plus any named), the rest are NaN: by CG each SE costs ~0.12 s at 100,000
# models / 1M battles, so 500 of them keep that whole CLI run at about 75 s.
SE_ALL_MAX_MODELS = 10_000
SE_TOP_MODELS = 500
# Sparse LU (SuperLU, minimum-degree ordering) for the SE solves up to this
# many models: factor once, then each solve is cheap (10,000 long-tailed
# models / 30k battles: 0.1 s to factor, 250k non-zeros).  The fill grows
# fast with the size of the well-connected core (10,000 models / 1M battles:
# 20 s, 22M non-zeros; 100,000 / 1M: 180 s, 70M), so larger tables use
# Jacobi-preconditioned CG, whose cost is predictable (~50 sparse products).
SPLU_MAX_MODELS = 10_000
# When the LU fills in (a graph without hubs, e.g. a Swiss-style schedule: a ring with random chords is an
# expander, whose factor is ~14% dense at 10,000 models), a dense Cholesky and inverse (LAPACK, BLAS 3) beat
# 10,000 sparse triangular solves: measured at 10,000 models / 30,000 battles on 2 cores, sparse LU 44 s,
# Jacobi CG 34 s, dense 11.5 s (potrf 3.5 s + potri 8 s with the forced Haswell kernel; 1.8 + 5.1 s
# without).  Per flop the dense kernels ran ~12x faster than SuperLU's solves, so dense wins once
# 2·solves·nnz(LU) > size³ / DENSE_SPEEDUP; the Zipf long tail (250k non-zeros) stays sparse.
DENSE_SPEEDUP = 12.0


# Diagonal blocks of the triangular solves below (LAPACK per block, matrix products between).
_TRI_BLOCK = 64


def _lower_solve(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``low⁻¹ b`` for lower-triangular ``low`` by block forward substitution.

    numpy has no triangular solver, and scipy's would cost its import on the
    dense path; blocks keep the work in matrix products, O(size² · columns).
    """
    x = np.array(b, dtype=float, copy=True)
    for start in range(0, len(low), _TRI_BLOCK):
        end = min(start + _TRI_BLOCK, len(low))
        if start:
            x[start:end] -= low[start:end, :start] @ x[:start]
        x[start:end] = np.linalg.solve(low[start:end, start:end], x[start:end])
    return x


def _cholesky_solve(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(low lowᵀ)⁻¹ b`` from the Cholesky factor ``low`` (:func:`numpy.linalg.cholesky`)."""
    y = _lower_solve(low, b)
    # lowᵀ is upper triangular: reversing its rows and columns makes it lower triangular.
    return _lower_solve(np.ascontiguousarray(low.T[::-1, ::-1]), y[::-1])[::-1]


def _solve_spd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return _cholesky_solve(np.linalg.cholesky(a), b)
    except (np.linalg.LinAlgError, ValueError):  # singular feature block (collinear features)
        return np.linalg.lstsq(a, b, rcond=None)[0]
