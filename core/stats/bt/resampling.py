"""The battle bootstrap: multinomial or Poisson resampling of cells, replicates fitted in batches."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from core.domain import theta_to_elo
from core.stats.bt.batch import _batch_fit, _Structure
from core.stats.bt.data import Comparisons, _combine
from core.stats.bt.diagnostics import _names
from core.stats.bt.fit import FALLBACK_LAM, BTFit
from core.stats.bt.records import _records
from core.stats.bt.sandwich import Intervals

# Share of bootstrap replicates that may lack all of a model's battles before
# its interval is undefined: the tail mass of a 95% percentile interval.
BOOT_MAX_MISSING = 0.025


def _hard_outcome_cells(c: Comparisons) -> Comparisons | None:
    """Split cells of hard labels (y ∈ {0, ½, 1}, unit weights) into win/tie/loss cells using ``ss``.

    With n, s = wins + ½·ties and ss = wins + ¼·ties the three counts are
    determined: ties = 4(s − ss).  None when that does not give
    non-negative integers (soft targets, weights, or no ss).
    """
    if c.ss is None or (c.count is not None and not np.allclose(c.count, c.n)):
        return None
    ties = 4.0 * (c.s - c.ss)
    wins = c.s - 0.5 * ties
    losses = c.n - wins - ties
    parts = np.stack([wins, ties, losses])
    rounded = np.round(parts)
    if np.any(np.abs(parts - rounded) > 1e-6) or np.any(rounded < 0):
        return None
    y = np.array([1.0, 0.5, 0.0])
    n = rounded.ravel()
    keep = n > 0
    rep = lambda v: np.tile(v, 3)[keep]
    s = (n * np.repeat(y, len(c.n)))[keep]
    x = None if c.x is None else np.tile(c.x, (3, 1))[keep]
    return Comparisons(
        c.models, rep(c.i), rep(c.j), n[keep], s, x, c.feature_names, s * np.repeat(y, len(c.n))[keep], n[keep]
    )


def _resampling_cells(c: Comparisons) -> Comparisons:
    if c.is_homogeneous():
        return c
    split = _hard_outcome_cells(c)
    if split is not None:
        return split
    raise ValueError(
        "the bootstrap resamples battles, so it needs cells of identical battles: build them with "
        "comparisons_from_battles(..., aggregate=True or False), or give hard-label pair tables their ss column"
    )


def _multinomial_rows(rng: np.random.Generator, n_trials: int, counts: np.ndarray, size: int) -> np.ndarray:
    """``size`` exact draws of Multinomial(n_trials, counts / Σcounts), about twice as fast as numpy's.

    Poisson(n_trials·p_c) counts are Multinomial(S, p) given their sum S;
    topping up with Multinomial(n_trials − S, p), or removing S − n_trials
    items chosen uniformly without replacement, gives Multinomial(n_trials, p)
    exactly, whatever S is.
    """
    p = counts / counts.sum()
    draws = rng.poisson(n_trials * p, size=(size, len(p)))
    totals = draws.sum(axis=1)
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    for r in np.flatnonzero(totals != n_trials):
        gap = n_trials - int(totals[r])
        if gap > 0:
            extra = np.searchsorted(cdf, rng.random(gap), side="right")
            draws[r] += np.bincount(np.minimum(extra, len(p) - 1), minlength=len(p))
        else:
            drop = rng.choice(int(totals[r]), size=-gap, replace=False)
            cell = np.searchsorted(np.cumsum(draws[r]), drop, side="right")
            draws[r] -= np.bincount(cell, minlength=len(p))
    return draws


def bootstrap(
    c: Comparisons,
    fit: BTFit,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = 250,
    tol: float = 1e-8,
    kind: str = "auto",
) -> Intervals:
    """Battle bootstrap, all replicates solved together; seeded, with progress.

    ``kind='multinomial'`` (default for 'auto'): each replicate resamples the
    N battles with replacement, i.e. cell counts ~ Multinomial(N, count/N)
    over cells of identical battles (hard labels: the (pair, outcome) cells).
    ``kind='poisson'``: each battle gets a Poisson(1) weight, i.e. cell counts
    ~ Poisson(count).  Soft targets: aggregate with ``aggregate=True`` (cells
    of equal targets) or ``False``; pair tables of hard labels need ``ss``.
    The draws for chunks of replicates run on two threads (numpy releases the
    GIL) with per-chunk child seeds, so results do not depend on scheduling.
    """
    if kind not in ("auto", "multinomial", "poisson"):
        raise ValueError(f"unknown bootstrap kind {kind!r}: expected 'multinomial', 'poisson' or 'auto'")
    if n_boot < 2:
        raise ValueError("the bootstrap needs at least 2 replicates")
    cells = _resampling_cells(c)
    m, k = c.n_models, c.n_features
    counts = cells.battle_counts
    n_trials = int(round(float(counts.sum())))
    if not np.allclose(counts, np.round(counts)) or n_trials == 0:
        raise ValueError("the battle bootstrap needs integer battle counts per cell (Comparisons.count)")
    keep = counts > 0
    if not keep.all():
        cells = Comparisons(
            cells.models,
            cells.i[keep],
            cells.j[keep],
            cells.n[keep],
            cells.s[keep],
            None if cells.x is None else cells.x[keep],
            cells.feature_names,
            None if cells.ss is None else cells.ss[keep],
            counts[keep],
        )
        counts = counts[keep]
    wbar = cells.n / counts
    ybar = cells.cell_mean()
    # Replicates only change counts; the likelihood needs them summed per
    # (pair, feature row): sort cells by that group so sums are segmented.
    group_key = cells.i * m + cells.j
    if cells.x is not None and k:
        import pandas as pd

        group_key = _combine(
            pd.factorize(group_key)[0].astype(np.int64), pd.factorize(pd.MultiIndex.from_arrays(list(cells.x.T)))[0]
        )
    order = np.argsort(group_key, kind="stable")
    group_key = group_key[order]
    starts = np.flatnonzero(np.r_[True, group_key[1:] != group_key[:-1]])
    counts, wbar, ybar = counts[order], wbar[order], ybar[order]
    gi, gj = cells.i[order][starts], cells.j[order][starts]
    gx = None if cells.x is None else cells.x[order][starts]
    grouped = Comparisons(
        c.models,
        gi,
        gj,
        np.add.reduceat(cells.n[order], starts),
        np.add.reduceat(cells.s[order], starts),
        gx,
        c.feature_names,
    )
    st = _Structure.of(gi, gj, gx, m, k)
    # Bound the (chunk × cells) count matrices to ~4M entries each: a
    # per-battle table of soft targets has as many cells as battles.
    chunk = int(max(1, min(chunk, 4_000_000 // max(len(counts), 1))))
    sizes = [min(chunk, n_boot - start) for start in range(0, n_boot, chunk)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    poisson = kind == "poisson"

    def draw(size: int, child: np.random.SeedSequence) -> np.ndarray:
        rng = np.random.default_rng(child)
        if poisson:
            return rng.poisson(counts, size=(size, len(counts)))
        return _multinomial_rows(rng, n_trials, counts, size)

    samples = np.empty((n_boot, m + k))
    missing = np.zeros((n_boot, m), bool)
    regularised = 0
    done = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        # At most two chunks drawn ahead of the solver (memory stays flat).
        pending = [pool.submit(draw, size, child) for size, child in zip(sizes[:2], seeds[:2])]
        for nxt in range(2, len(sizes) + 2):
            raw = pending.pop(0).result()
            if nxt < len(sizes):
                pending.append(pool.submit(draw, sizes[nxt], seeds[nxt]))
            b = raw.shape[0]
            weights = raw * wbar
            w = np.ascontiguousarray(np.add.reduceat(weights, starts, axis=1).T)
            s = np.ascontiguousarray(np.add.reduceat(weights * ybar, starts, axis=1).T)
            del raw, weights
            beta, _, reg, present = _batch_fit(st, w, s, grouped, fit, tol, 60, FALLBACK_LAM)
            regularised += int(reg.sum())
            samples[done : done + b] = beta
            missing[done : done + b] = ~present
            done += b
            if progress:
                progress(done, n_boot)
    elo = theta_to_elo(samples[:, :m], centre=False)
    se_elo, lo, hi, flags, undefined_note = _bootstrap_summary(c, elo, missing)
    coef = samples[:, m:]
    if k:
        clo, chi = np.quantile(coef, [0.025, 0.975], axis=0)
        cse = coef.std(axis=0, ddof=1)
    else:
        clo = chi = cse = np.empty(0)
    notes = []
    if regularised:
        notes.append(
            f"{regularised} of {n_boot} replicates had a model without battles or with a perfect record; "
            f"they were fitted with λ = {max(fit.lam, FALLBACK_LAM)}"
        )
    if undefined_note:
        notes.append(undefined_note)
    return Intervals(
        "bootstrap",
        se_elo,
        lo,
        hi,
        cse,
        clo,
        chi,
        n_boot,
        elo,
        coef,
        int(regularised),
        "; ".join(notes),
        flags=flags,
        n_missing=missing.sum(axis=0),
    )


def _bootstrap_summary(
    c: Comparisons, elo: np.ndarray, missing: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Per-model bootstrap SE and percentile bounds over the replicates that have its battles.

    Undefined (NaN, with a flag) when more than ``BOOT_MAX_MISSING`` of the
    replicates lack the model (the prior values they hold could decide a
    bound, and dropping them conditions on the model being drawn), when its
    record is constant (every replicate repeats it: no spread to see) or
    perfect (every replicate is a ridge value).  Returns (se, lower, upper,
    flags, note).
    """
    b, m = elo.shape
    rec = _records(c)
    n_missing = missing.sum(axis=0)
    too_many = n_missing > BOOT_MAX_MISSING * b
    undefined = too_many | rec.constant | rec.perfect
    se = elo.std(axis=0, ddof=1) if b > 1 else np.full(m, np.nan)
    lo, hi = np.quantile(elo, [0.025, 0.975], axis=0)
    for col in np.flatnonzero((n_missing > 0) & ~undefined):
        kept = elo[~missing[:, col], col]
        se[col] = kept.std(ddof=1)
        lo[col], hi[col] = np.quantile(kept, [0.025, 0.975])
    se[undefined] = lo[undefined] = hi[undefined] = np.nan
    flags = np.full(m, "", dtype=object)
    flags[rec.constant] = "ties only: resampling cannot show its spread, no interval"
    flags[rec.perfect] = "perfect record: the MLE is ±∞, no interval"
    flags[too_many] = [
        f"{f + '; ' if f else ''}{n} of {b} replicates lack its battles, no interval"
        for f, n in zip(flags[too_many], n_missing[too_many])
    ]
    parts = []
    names = np.array(c.models, dtype=object)
    for mask, why in (
        (too_many, f"lacking from more than {BOOT_MAX_MISSING:.1%} of the replicates"),
        (rec.constant, "only ties"),
        (rec.perfect, "a perfect record"),
    ):
        if mask.any():
            parts.append(f"{why}: {_names(names[mask])}")
    note = f"no bootstrap interval for {int(undefined.sum())} model(s) (" + "; ".join(parts) + ")" if parts else ""
    return se, lo, hi, flags, note
