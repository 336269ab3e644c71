"""Sandwich (robust) covariance and 95% intervals of a fit: the dense ``H⁺ G H⁺`` and the interval rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.domain import Z95, elo_units, sigmoid
from core.stats import bt as _bt
from core.stats.bt import linalg
from core.stats.bt.data import Comparisons, _codes
from core.stats.bt.diagnostics import _names
from core.stats.bt.fit import BTFit
from core.stats.bt.gauge import _centre, _gauge
from core.stats.bt.likelihood import _eta, _outer_blocks, information
from core.stats.bt.records import _Records, _records


def _meat_weights(c: Comparisons, p: np.ndarray, bound: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Per-cell Σ_battles w²(y − p)²; returns (weights, exact).

    Cells with cluster sums: Σ_clusters (s_c − n_c·p)², the squared summed
    gradient of each cluster (votes on one battle), exact.

    Homogeneous cells: count·w̄²(ȳ − p)².  Cells with ``ss``: w̄·Σ w(y − p)²
    (exact when the weights inside a cell are equal).  Otherwise the cell's
    summed gradient squared, (s − n p)²: the cell is treated as a cluster.
    ``bound`` (cell mask): cells whose residuals cannot estimate the outcome
    variance (a side with a constant record) get at least count·w̄²·p(1 − p),
    the largest variance of a target in [0, 1] with mean p.
    """
    count = c.battle_counts
    safe = np.where(count > 0, count, 1.0)
    wbar = c.n / safe
    if c.cluster is not None:  # Σ_clusters (s_c − n_c·p)², expanded into the cell's sums
        css, cns, cnn = c.cluster.T
        g2 = np.maximum(css - 2 * p * cns + p * p * cnn, 0.0)
        if bound is not None and bound.any():
            g2 = np.where(bound, np.maximum(g2, c.n * wbar * p * (1.0 - p)), g2)
        return g2, True
    ybar = c.cell_mean()
    homo = c.homogeneous_cells()
    g2 = np.where(homo, c.n * wbar * (ybar - p) ** 2, 0.0)
    rest = ~homo
    exact = True
    if rest.any():
        if c.ss is not None:
            within = c.ss - 2 * p * c.s + p * p * c.n
            g2 = np.where(rest, wbar * np.maximum(within, 0.0), g2)
        else:
            g2 = np.where(rest, (c.s - c.n * p) ** 2, g2)
            exact = False
    if bound is not None and bound.any():
        g2 = np.where(bound, np.maximum(g2, c.n * wbar * p * (1.0 - p)), g2)
    return g2, exact


def _bound_cells(c: Comparisons, rec: _Records | None = None) -> np.ndarray:
    """Cells with a side whose record is constant (ties only): their meat gets the variance bound."""
    rec = _records(c) if rec is None else rec
    return rec.constant[c.i] | rec.constant[c.j]


def sandwich_cov(c: Comparisons, fit: BTFit) -> np.ndarray:
    """Robust covariance ``A H⁺ G H⁺ Aᵀ`` of (θ, w) on the logit scale, θ in the fit's gauge.

    ``G = Σ_battles w²(y − p)² a aᵀ`` with ``a = (e_a − e_b, x)``: per-battle
    gradient outer products, computed exactly from the cell sums (see
    :func:`_meat_weights`; battles of constant-record models get the variance
    bound p(1 − p)).  ``H⁺`` is the inverse on the centred subspace (each
    component's θ sums to zero) and ``A = I − 1 wᵀ`` moves it to the fit's
    gauge (θ minus the mean of the component's well-identified models), so a
    poorly identified model's variance stays its own.  Contrasts θ_a − θ_b
    do not depend on the gauge.
    """
    m, k = c.n_models, c.n_features
    beta = fit.beta
    p = sigmoid(_eta(c, beta))
    g2, _ = _meat_weights(c, p, _bound_cells(c))
    meat = _outer_blocks(c, g2)
    bread = information(c, beta, fit.lam) + _gauge(fit.components, m, k)
    low = np.linalg.cholesky(bread)
    half = linalg._cholesky_solve(low, meat)
    cov = linalg._cholesky_solve(low, half.T)
    cov = 0.5 * (cov + cov.T)
    # The meat annihilates each component's ones vector, so cov lives on the
    # centred subspace up to round-off, and A maps any such matrix to the same
    # gauge-fixed one.
    gw = fit.gauge_weights()
    theta_block = _centre(_centre(cov[:m, :m], fit.components, gw).T, fit.components, gw)
    cov[:m, :m] = 0.5 * (theta_block + theta_block.T)
    if k:
        cov[:m, m:] = _centre(cov[:m, m:].T, fit.components, gw).T
        cov[m:, :m] = cov[:m, m:].T
    return cov


@dataclass(frozen=True)
class Intervals:
    """95% intervals of Elo (and feature coefficients, logit scale).

    ``method`` 'sandwich': ± 1.96·SE; 'bootstrap': percentile interval, SE =
    standard deviation of the replicates.  ``n_regularised`` counts bootstrap
    replicates whose MLE did not exist (a model without battles or with a
    perfect record in the resample); they were fitted with the fallback ridge.
    A sandwich of a large sparse fit has NaN SE and interval for the models
    outside the requested subset (:func:`sandwich_intervals`; ``note`` says so).

    Degenerate records (module docstring): ``flags`` holds, per model, why its
    interval is undefined (NaN) or rests on a stated bound ('' when it is an
    ordinary one).  ``n_missing`` (bootstrap): per model, the replicates that
    lacked all of its battles; they are left out of its interval, which is
    NaN when they exceed ``BOOT_MAX_MISSING`` of ``n_boot``.
    """

    method: str  # 'sandwich' | 'bootstrap'
    se_elo: np.ndarray
    lower_elo: np.ndarray
    upper_elo: np.ndarray
    coef_se: np.ndarray
    coef_lower: np.ndarray
    coef_upper: np.ndarray
    n_boot: int = 0
    samples_elo: np.ndarray | None = field(default=None, repr=False)
    samples_coef: np.ndarray | None = field(default=None, repr=False)
    n_regularised: int = 0
    note: str = ""
    flags: np.ndarray | None = field(default=None, repr=False)  # str per model
    n_missing: np.ndarray | None = None  # int per model (bootstrap only)


def sandwich_intervals(
    c: Comparisons,
    fit: BTFit,
    models: Sequence[Any] = (),
    top: int | None = None,
    solver: str = "auto",
) -> Intervals:
    """± 1.96 sandwich SE around the fit, on the Elo scale (coefficients on the logit scale).

    ``solver='auto'`` follows the fit: a dense fit gets the dense
    :func:`sandwich_cov` (every SE), a sparse fit :func:`sandwich_variances`,
    which never forms an m×m matrix but costs one linear solve per SE.  So
    the sparse path computes the SEs of the ``top`` models by Elo plus the
    named ``models``; ``top=None`` means every model up to
    ``SE_ALL_MAX_MODELS`` models and the best ``SE_TOP_MODELS`` above
    (models with a perfect record are not counted among the top).  The
    others get NaN SE and interval and the note says how many were computed.

    Degenerate records (module docstring): a perfect record gets NaN; a
    constant record (ties only) the interval of the variance bound p(1 − p);
    ``flags`` says which.
    Every computed SE is exact (to solver round-off); feature coefficients
    always get theirs.
    """
    if solver not in ("auto", "dense", "sparse"):
        raise ValueError(f"unknown solver {solver!r}: expected 'auto', 'dense' or 'sparse'")
    m, k = c.n_models, c.n_features
    notes = []
    rec = _records(c)
    if solver == "dense" or (solver == "auto" and fit.solver == "dense"):
        se = np.sqrt(np.maximum(np.diag(sandwich_cov(c, fit)), 0.0))
        se_t, se_w = se[:m], se[m:]
    else:
        if top is None:
            top = m if m <= _bt.SE_ALL_MAX_MODELS else _bt.SE_TOP_MODELS
        wanted = np.zeros(m, bool)
        # Perfect records have no interval (below) and their ridge Elo tops
        # long tails: they must not take the slots of the real top models.
        order = np.argsort(-fit.theta, kind="stable")
        wanted[order[~rec.perfect[order]][:top]] = True
        if len(models):
            wanted[_codes(np.asarray(list(models), dtype=object), c.models)] = True
        idx = np.flatnonzero(wanted)
        var = _bt.sandwich_variances(c, fit, np.concatenate([idx, m + np.arange(k)]))
        se_t = np.full(m, np.nan)
        se_t[idx] = np.sqrt(var[: len(idx)])
        se_w = np.sqrt(var[len(idx) :])
        if np.any(~wanted & ~rec.perfect):
            notes.append(
                f"sandwich SEs were computed for {len(idx)} of {m} models (the top {min(top, m)} by Elo"
                + (" and the named ones" if len(models) else "")
                + "; each costs one linear solve): the others have no interval"
            )
    _, exact = _meat_weights(c, sigmoid(_eta(c, fit.beta)))
    if not exact:
        notes.append("cells mixing outcomes without Σy² were treated as clusters (pass ss for the per-battle sandwich)")
    flags = np.full(m, "", dtype=object)
    flags[rec.battles <= 0] = "no battles: alone in its component, its Elo is the convention 1500"
    # A perfect record's Elo is a ridge value; the sandwich around it would
    # describe the ridge, not the data.
    se_t = np.where(rec.perfect, np.nan, se_t)
    flags[rec.constant] = "ties only: SE from the largest outcome variance p(1 − p)"
    flags[rec.perfect] = "perfect record: the MLE is ±∞, no interval"
    single = rec.single & (rec.battles > 0)
    flags[single] = [f"single battle; {f}" for f in flags[single]]
    if rec.perfect.any():
        perfect = _names(np.array(c.models, dtype=object)[rec.perfect])
        notes.append(f"no interval for {int(rec.perfect.sum())} model(s) with a perfect record ({perfect})")
    # Ties-only models are named by the fit's 'degenerate' issue and by flags.
    note = "; ".join(notes)
    return Intervals(
        "sandwich",
        elo_units(se_t),
        fit.elo - Z95 * elo_units(se_t),
        fit.elo + Z95 * elo_units(se_t),
        se_w,
        fit.coef - Z95 * se_w,
        fit.coef + Z95 * se_w,
        note=note,
        flags=flags,
    )
