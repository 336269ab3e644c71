"""Evaluating the rules over random calibration/test splits: risk, coverage and how often risk exceeds α."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.stats.selective.rules import METHODS, THRESHOLD_METHODS, _check_alpha_delta, _last_feasible, _ltt_critical
from core.stats.selective.uncertainty import Uncertainty

DEFAULT_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)


# Work on at most this many (split, instance) cells at a time: ~100 MB of temporaries.
_CELLS_PER_CHUNK = 4_000_000


def calibration_masks(n: int, n_splits: int, seed: int = 0) -> np.ndarray:
    """(splits × n) booleans, True = calibration: n // 2 random instances per split, the rest is test."""
    if n < 2:
        raise ValueError(f"{n} instances cannot be split into calibration and test halves")
    rng = np.random.default_rng(seed)
    half = n // 2
    perm = rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int32), (n_splits, n)), axis=1)
    return perm < half


@dataclass(frozen=True)
class CurveResult:
    """Per method and α: the split statistics (``table``) and per-split arrays (``per_split``).

    ``table`` columns: method, alpha, risk_mean, risk_sd (ddof 1, over splits
    that accepted something), risk_pooled (all accepted errors over all
    accepted instances), coverage_mean, coverage_sd, share_over_alpha (the
    share of all splits whose test risk exceeds α; a split that accepts
    nothing counts as not over α),
    empty_splits (nothing accepted: excluded from the risk statistics, never
    averaged in as zero), exceeds_alpha (risk_mean > α: what a chart marks).
    """

    alphas: tuple[float, ...]
    n_instances: int
    n_splits: int
    delta: float
    table: pd.DataFrame
    per_split: dict = field(repr=False)  # (method, alpha) -> {"risk": array (NaN = empty), "coverage": array}
    seconds: dict = field(default_factory=dict)

    LIST_KEYS = (
        "risk_mean",
        "risk_sd",
        "risk_pooled",
        "coverage_mean",
        "coverage_sd",
        "share_over_alpha",
        "empty_splits",
    )

    def method_lists(self, methods: Sequence[str] | None = None) -> dict:
        """{method: {statistic: list aligned with ``alphas``}} (the CLI's JSON shape)."""
        out = {}
        for m in methods or self.table["method"].unique():
            t = self.table[self.table["method"] == m].set_index("alpha").reindex(self.alphas)
            out[m] = {k: t[k].tolist() for k in self.LIST_KEYS}
        return out


def _split_statistics(
    method: str, alpha: float, n_acc: np.ndarray, n_err: np.ndarray, n_test: np.ndarray
) -> tuple[dict, np.ndarray, np.ndarray]:
    """One table row, the per-split risks (NaN where nothing was accepted) and coverages."""
    defined = n_acc > 0
    risk = np.full(len(n_acc), np.nan)
    risk[defined] = n_err[defined] / n_acc[defined]
    r = risk[defined]
    cov = n_acc / n_test
    mean = float(r.mean()) if len(r) else float("nan")
    return (
        {
            "method": method,
            "alpha": float(alpha),
            "risk_mean": mean,
            "risk_sd": float(r.std(ddof=1)) if len(r) > 1 else float("nan"),
            "risk_pooled": float(n_err.sum() / n_acc.sum()) if n_acc.sum() else float("nan"),
            "coverage_mean": float(cov.mean()),
            "coverage_sd": float(cov.std(ddof=1)) if len(cov) > 1 else float("nan"),
            # over every split: one that accepts nothing has no error among its accepted judgments, so it is
            # not over α (LTT's 1 − δ promise is over all splits, and so is this share)
            "share_over_alpha": float(np.sum(r > alpha + 1e-12) / len(n_acc)) if len(n_acc) else float("nan"),
            "empty_splits": int((~defined).sum()),
            "exceeds_alpha": bool(mean > alpha + 1e-12) if len(r) else False,
        },
        risk,
        cov,
    )


def evaluate(
    u: Uncertainty,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_splits: int = 1000,
    delta: float = 0.1,
    seed: int = 0,
    methods: Sequence[str] = METHODS,
    splits: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CurveResult:
    """Random 50/50 calibration/test splits; per method and α the risk and coverage statistics.

    ``splits``: explicit (splits × n) calibration masks, each with the same
    number of calibration instances (see :func:`calibration_masks`, the
    default with ``seed``).  Work is done in chunks of splits so that memory
    stays bounded for large ``n``.
    """
    n = len(u)
    if n < 4:
        raise ValueError(f"only {n} instances: the split protocol needs at least 4")
    alphas = tuple(float(a) for a in alphas)
    for a in alphas:
        _check_alpha_delta(a, delta)
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; expected some of {METHODS}")
    t_start = time.perf_counter()
    if splits is None:
        splits = calibration_masks(n, n_splits, seed)
    splits = np.asarray(splits, dtype=bool)
    if splits.ndim != 2 or splits.shape[1] != n:
        raise ValueError(f"splits must be (n_splits × {n}) calibration masks, got shape {splits.shape}")
    n_cal = splits.sum(axis=1)
    k_cal = int(n_cal[0]) if len(n_cal) else 0
    if not 0 < k_cal < n or np.any(n_cal != k_cal):
        raise ValueError(
            "every split needs the same number of calibration instances, at least one, and at least one test instance"
        )
    S = splits.shape[0]
    n_test_rows = np.full(S, n - k_cal)

    # One global sort: the calibration members of a split, read off its mask in
    # this order, are already sorted.  Their k-th member closes a prefix of k
    # calibration instances, so each rule is one comparison of the running error
    # count with a bound that depends on k only (_acceptance_bounds).
    order = np.argsort(u.score, kind="stable")
    s_sorted = u.score[order]
    err_sorted = u.errors[order].astype(np.int32)
    starts = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    group = np.cumsum(starts) - 1  # tie group of each sorted position
    group_last = np.r_[np.flatnonzero(starts)[1:] - 1, n - 1]  # its last sorted position
    n_upto_group = group_last + 1  # instances with s ≤ the group's score
    err_upto_group = np.cumsum(err_sorted)[group_last]
    ties = bool(group[-1] < n - 1)
    wrong = ~u.correct
    kstar = {a: _ltt_critical(k_cal, a, delta) for a in alphas} if "ltt" in methods else {}

    n_acc = {(m, a): np.empty(S, dtype=np.int64) for m in methods for a in alphas}
    n_err = {(m, a): np.empty(S, dtype=np.int64) for m in methods for a in alphas}
    # "shared": the split masks, the sort and the cumulative sums every method reads
    timing = {"shared": time.perf_counter() - t_start, **dict.fromkeys(methods, 0.0)}
    chunk = max(1, _CELLS_PER_CHUNK // n)
    for lo in range(0, S, chunk):
        hi = min(S, lo + chunk)
        rows = np.arange(hi - lo)
        t0 = time.perf_counter()
        pos = np.nonzero(splits[lo:hi][:, order])[1].reshape(hi - lo, k_cal)  # sorted positions of members
        cum_e = np.cumsum(err_sorted[pos], axis=1, dtype=np.int32)
        grp = group[pos]
        valid = None  # equal scores enter together: only the last member of a tie group closes a prefix
        if ties:
            valid = np.ones(pos.shape, dtype=bool)
            valid[:, :-1] = grp[:, 1:] != grp[:, :-1]
        test = ~splits[lo:hi]
        timing["shared"] += time.perf_counter() - t0
        for m in methods:
            t0 = time.perf_counter()
            for a in alphas:
                if m in THRESHOLD_METHODS:
                    col = _last_feasible(cum_e, valid, a, m, delta, kstar.get(a))
                    safe = np.maximum(col, 0)
                    g = grp[rows, safe]  # λ̂ = that member's score; test counts = all − calibration
                    na = np.where(col >= 0, n_upto_group[g] - (safe + 1), 0)
                    ne = np.where(col >= 0, err_upto_group[g] - cum_e[rows, safe], 0)
                elif m == "heuristic":
                    acc = test & (u.confidence >= 1.0 - a - 1e-12)[None, :]
                    na, ne = acc.sum(axis=1), (acc & wrong[None, :]).sum(axis=1)
                else:  # vanilla
                    na, ne = n_test_rows[lo:hi], (test & wrong[None, :]).sum(axis=1)
                n_acc[(m, a)][lo:hi], n_err[(m, a)][lo:hi] = na, ne
            timing[m] += time.perf_counter() - t0
        if progress is not None:
            progress(hi, S)

    rows_out, per_split = [], {}
    for m in methods:
        for a in alphas:
            stats_row, risk, cov = _split_statistics(m, a, n_acc[(m, a)], n_err[(m, a)], n_test_rows)
            rows_out.append(stats_row)
            per_split[(m, a)] = {"risk": risk, "coverage": cov}
    timing["total"] = time.perf_counter() - t_start
    return CurveResult(alphas, n, S, float(delta), pd.DataFrame(rows_out), per_split, timing)
