"""Leave-one-model-out Elo estimation (METHODS.md §3), for every label kind.

For each target model with human-labelled battles: fit τ and three (or more)
Bradley–Terry models with λ = 0.01 on the battles among the *other* models
(the anchors), then place the target alone against the fixed anchors by a
safeguarded 1-D Newton solve on its own battles (METHODS §10), for human labels, hard judge labels,
soft targets σ(τ·Δ) and label smoothing.  The judge Elo's SE is the
analytic sandwich SE of that placement (no resampling, so no seed).  The signed residual ``judge − human`` feeds
the conformal intervals of ``core.stats.conformal``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from core.domain import LABEL_SMOOTHING_Q, elo_units, sigmoid, smoothed_target, soft_target, theta_to_elo
from core.stats import bt
from core.stats.calibration import fit_tau, tau_point_from_counts
from core.stats.solvers import Solve1D, maximise_concave_1d

LAMBDA = 0.01
MIN_TARGET_BATTLES = 2


def solve_target(
    theta_anchor: np.ndarray,
    y: np.ndarray,
    lam: float = LAMBDA,
    max_iter: int = 300,
    tol: float = 1e-10,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """θ_m against fixed anchors, for many resamples at once (NaN where the solve did not converge).

    ``theta_anchor`` and ``y`` are (R, n) (or (n,)): each row is one problem,
    maximising Σ w·[y ln σ(θ − θ_anc) + (1−y) ln σ(θ_anc − θ)] − (λ/2)θ².
    ``weights`` (broadcast against them; default 1) count how often each
    (anchor, target) cell occurs, so a problem over battles can be solved
    over its distinct cells.  See :func:`solve_target_checked`.
    """
    return solve_target_checked(theta_anchor, y, lam=lam, max_iter=max_iter, tol=tol, weights=weights).x


def solve_target_checked(
    theta_anchor: np.ndarray,
    y: np.ndarray,
    lam: float = LAMBDA,
    max_iter: int = 300,
    tol: float = 1e-10,
    weights: np.ndarray | None = None,
) -> Solve1D:
    """:func:`solve_target` with each problem's convergence flag (METHODS §10).

    The objective is strictly concave for λ > 0, and its derivative
    Σw(y − p) − λθ lies in (−W − λθ, W − λθ) with W = Σw, so the maximiser
    is inside [−W/λ, W/λ]: a bracketed, safeguarded Newton solve from the
    logit of the weighted win share above the anchors' weighted mean
    converges from there whatever the anchors' strength.  With λ = 0 the
    bracket is the anchors' range widened by 50 (≈ 21,700 Elo) and a
    problem without win or without loss mass (a perfect record, no
    maximiser) is reported unconverged.
    """
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    ta = np.atleast_2d(np.asarray(theta_anchor, dtype=float))
    yy = np.atleast_2d(np.asarray(y, dtype=float))
    w = np.ones((1, 1)) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    rows = max(ta.shape[0], yy.shape[0], w.shape[0])
    cols = max(ta.shape[1], yy.shape[1], w.shape[1])
    ta, yy, w = (np.broadcast_to(a, (rows, cols)) for a in (ta, yy, w))
    total = w.sum(axis=1)
    mean_anchor = np.where(total > 0, (w * ta).sum(axis=1) / np.where(total > 0, total, 1.0), 0.0)
    share = np.clip(np.where(total > 0, (w * yy).sum(axis=1) / np.where(total > 0, total, 1.0), 0.5), 1e-3, 1 - 1e-3)
    start = mean_anchor + np.log(share / (1 - share))
    if lam > 0:
        reach = total / lam + 1.0
        lo, hi = -reach, reach
    else:
        lo, hi = ta.min(axis=1) - 50.0, ta.max(axis=1) + 50.0

    def grad_hess(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = sigmoid(x[:, None] - ta[idx])
        g = np.sum(w[idx] * (yy[idx] - p), axis=1) - lam * x
        h = np.sum(w[idx] * (p * (1 - p)), axis=1) + lam
        return g, h

    out = maximise_concave_1d(grad_hess, lo, hi, start, tol=tol, max_iter=max_iter)
    if lam == 0:
        # Without a penalty the maximiser exists only when the record has both win and loss mass.
        wins, losses = (w * yy).sum(axis=1), (w * (1 - yy)).sum(axis=1)
        ok = out.converged & (wins > 0) & (losses > 0)
        return Solve1D(np.where(ok, out.x, np.nan), ok, out.iterations)
    return out


def place_target(theta: np.ndarray, anchor: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """A model's θ against fixed anchor strengths from its battles (anchor index, target y), and its sandwich SE.

    The SE is analytic (METHODS §3): ``√(Σ (y − p)²) / (Σ p(1 − p) + λ)`` at the placement, the one-dimensional
    sandwich, which is what a battle bootstrap of the placement estimates, without its noise: one answer per
    model and data, whatever else is computed beside it or in which order.  The battles collapse to distinct
    (anchor, y) cells, so the sums run over hundreds of cells instead of thousands of battles.  NaN (both) when
    the placement did not converge.
    """
    y_values, y_code = np.unique(y, return_inverse=True)
    cells, cell_of = np.unique(anchor * len(y_values) + y_code.ravel(), return_inverse=True)
    cell_of = cell_of.ravel()
    th_cell, y_cell = theta[cells // len(y_values)], y_values[cells % len(y_values)]
    counts = np.bincount(cell_of, minlength=len(cells)).astype(float)
    point = float(solve_target(th_cell, y_cell, weights=counts)[0])
    if not np.isfinite(point):
        return point, float("nan")
    p = sigmoid(point - th_cell)
    bread = float(np.sum(counts * p * (1 - p))) + LAMBDA
    meat = float(np.sum(counts * (y_cell - p) ** 2))
    return point, float(np.sqrt(meat) / bread)


@dataclass(frozen=True)
class Predictor:
    """A way to predict a held-out model's human Elo from judge data: the name of its column in the held-out
    table, the per-battle targets it fits (``kind``: one of the store's targets — human, hard, soft — or
    label smoothing ``ls`` at ``q``, or the ``ensemble`` of hard and soft) and its smoothing level.  A rating
    *method* (core.methods.RATING_METHODS) is what a leaderboard ranks by; a predictor is what §3's
    leave-one-model-out step compares, and its hard and soft ones are the Hard- and Soft-Elo methods."""

    name: str
    kind: str  # 'human' | 'hard' | 'soft' | 'ls' | 'ensemble'
    q: float | None = None


DEFAULT_PREDICTORS = (
    Predictor("hard", "hard"),
    Predictor("soft", "soft"),
    *(Predictor(f"ls_{q}", "ls", q) for q in LABEL_SMOOTHING_Q),
)


@dataclass(frozen=True)
class HeldoutResult:
    table: pd.DataFrame  # one row per held-out model
    methods: tuple[str, ...]
    tau_full: float | None
    tau_reason: str | None
    seconds: float = 0.0
    skipped: dict = field(default_factory=dict)  # model -> reason
    tau_fixed: float | None = None  # the τ held fixed in every fold; None: τ refitted per fold (METHODS §3)

    def summary(self) -> pd.DataFrame:
        return summarise(self.table, self.methods)


def _targets(frame: pd.DataFrame, method: Predictor, tau: float | None, extra: dict | None = None) -> np.ndarray:
    if method.kind == "human":
        return frame["human_y"].to_numpy(float)
    if method.kind == "hard":
        return frame["judge_hard"].to_numpy(float)
    if method.kind == "soft":
        if tau is None:
            return np.full(len(frame), np.nan)
        return soft_target(frame["gap"].to_numpy(float), tau)
    if method.kind == "ls" and method.q is not None:
        return smoothed_target(frame["judge_hard"].to_numpy(float), method.q)
    if method.kind == "ensemble" and extra is not None:
        return np.asarray(extra["ensemble"], dtype=float)
    raise ValueError(f"unknown method kind {method.kind!r}")


def model_codes(frame: pd.DataFrame) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Sorted model names and integer codes of each battle's sides (vectorised, no Python loop)."""
    models = tuple(
        sorted(pd.unique(np.concatenate([frame["model_a"].to_numpy(object), frame["model_b"].to_numpy(object)])))
    )
    ia = pd.Categorical(frame["model_a"], categories=models).codes.astype(np.int64)
    ib = pd.Categorical(frame["model_b"], categories=models).codes.astype(np.int64)
    return models, ia, ib


@dataclass(frozen=True)
class _Pairs:
    """Each battle's ordered pair, indexed once: a fold's pair table is then two bincounts, not a sort."""

    key: np.ndarray  # the distinct pairs, as model_a · n_models + model_b, ascending
    of: np.ndarray  # each battle's index into ``key``
    n_models: int

    @classmethod
    def of_battles(cls, ia: np.ndarray, ib: np.ndarray, n_models: int) -> _Pairs:
        key, of = np.unique(ia * n_models + ib, return_inverse=True)
        return cls(key, of.ravel(), n_models)


def _fit_anchor(pairs: _Pairs, y: np.ndarray, mask: np.ndarray, theta0: np.ndarray | None = None) -> np.ndarray:
    """Bradley–Terry on the battles of ``mask`` with a finite target, from their pair table (n, Σy)."""
    ok = mask & np.isfinite(y)
    n = np.bincount(pairs.of[ok], minlength=len(pairs.key)).astype(float)
    s = np.bincount(pairs.of[ok], weights=y[ok], minlength=len(pairs.key))
    present = n > 0
    key = pairs.key[present]
    m = pairs.n_models
    c = bt.Comparisons(tuple(range(m)), key // m, key % m, n[present], s[present])
    return bt.fit_bt(c, lam=LAMBDA, theta0=theta0, min_battles=0, diagnostics=False).theta


class _AnchorTables:
    """The pair tables every fold's anchor fit needs, built once; a fold drops the target's pairs.

    Targets that do not depend on τ (human, hard, label smoothing) get one
    table (n, Σy per pair) for all folds; Soft-Elo, whose targets σ(τ·Δ)
    change with each fold's τ, gets (pair, gap) cells with counts, summed at
    the fold's τ.  Either way a fold costs a pass over the pairs and cells,
    not over the battles; the ensemble (one τ per judge) keeps per-battle
    sums.
    """

    def __init__(self, frame: pd.DataFrame, pairs: _Pairs, gap: np.ndarray):
        self.frame, self.pairs, self.gap = frame, pairs, gap
        m = pairs.n_models
        self.side_a, self.side_b = pairs.key // m, pairs.key % m
        self._fixed: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        scored = np.flatnonzero(np.isfinite(gap))
        values, gap_code = np.unique(gap[scored], return_inverse=True)
        cells, cell_of = np.unique(pairs.of[scored] * len(values) + gap_code.ravel(), return_inverse=True)
        self.cell_pair = cells // max(len(values), 1)
        self.cell_gap = values[cells % max(len(values), 1)] if len(values) else np.empty(0)
        self.cell_count = np.bincount(cell_of.ravel(), minlength=len(cells)).astype(float)

    def targets(self, method: Predictor, tau: float | None, rows: np.ndarray, ens: np.ndarray | None) -> np.ndarray:
        """Per-battle targets of ``rows`` (the fold's target battles)."""
        if method.kind == "soft":
            return np.full(len(rows), np.nan) if tau is None else soft_target(self.gap[rows], tau)
        if method.kind == "ensemble":
            return np.full(len(rows), np.nan) if ens is None else ens[rows]
        return self._fixed_table(method)[0][rows]

    def _fixed_table(self, method: Predictor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if method.name not in self._fixed:
            y = _targets(self.frame, method, None)
            ok = np.isfinite(y)
            size = len(self.pairs.key)
            n = np.bincount(self.pairs.of[ok], minlength=size).astype(float)
            s = np.bincount(self.pairs.of[ok], weights=y[ok], minlength=size)
            self._fixed[method.name] = (y, n, s)
        return self._fixed[method.name]

    def fold_table(
        self, method: Predictor, tau: float | None, target: int, ens: np.ndarray | None, anchors: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(n, Σy) per pair over the anchor battles (the pairs without ``target``)."""
        size = len(self.pairs.key)
        if method.kind == "soft":
            if tau is None:
                return np.zeros(size), np.zeros(size)
            w = self.cell_count
            n = np.bincount(self.cell_pair, weights=w, minlength=size)
            s = np.bincount(self.cell_pair, weights=w * soft_target(self.cell_gap, tau), minlength=size)
        elif method.kind == "ensemble":
            y = np.full(len(self.gap), np.nan) if ens is None else ens
            ok = anchors & np.isfinite(y)
            n = np.bincount(self.pairs.of[ok], minlength=size).astype(float)
            s = np.bincount(self.pairs.of[ok], weights=y[ok], minlength=size)
        else:
            _, n, s = self._fixed_table(method)
        out = (self.side_a == target) | (self.side_b == target)
        return np.where(out, 0.0, n), np.where(out, 0.0, s)

    def fit(self, n: np.ndarray, s: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """Bradley–Terry (λ = LAMBDA) on a pair table; ``start``: where Newton begins (the full-data fit)."""
        present = n > 0
        m = self.pairs.n_models
        c = bt.Comparisons(tuple(range(m)), self.side_a[present], self.side_b[present], n[present], s[present])
        return bt.fit_bt(c, lam=LAMBDA, theta0=start, min_battles=0, diagnostics=False).theta


@dataclass(frozen=True)
class _TauCells:
    """Decisive battles' (gap, vote) cells: a fold's τ from counts (all minus the target's battles)."""

    gap: np.ndarray  # distinct (gap, vote) cells
    vote: np.ndarray
    cell: np.ndarray  # each battle's cell, −1 when not decisive or without a gap
    total: np.ndarray  # battles per cell

    @classmethod
    def of_battles(cls, gap: np.ndarray, human: np.ndarray) -> _TauCells:
        decisive = np.isfinite(gap) & ((human == 0.0) | (human == 1.0))
        cell = np.full(len(gap), -1, dtype=np.int64)
        pairs, inv = np.unique(np.stack([gap[decisive], human[decisive]]), axis=1, return_inverse=True)
        cell[decisive] = inv.ravel()
        return cls(pairs[0], pairs[1], cell, np.bincount(inv.ravel(), minlength=pairs.shape[1]).astype(float))

    def tau_without(self, rows: np.ndarray) -> float | None:
        """τ fitted on every decisive battle except ``rows`` (boolean mask)."""
        gone = self.cell[rows & (self.cell >= 0)]
        counts = self.total - np.bincount(gone, minlength=len(self.total))
        return tau_point_from_counts(self.gap, self.vote, counts)


def leave_one_model_out(
    frame: pd.DataFrame,
    methods: Sequence[Predictor] = DEFAULT_PREDICTORS,
    progress: Callable[[int, int], None] | None = None,
    tau: float | None = None,
) -> HeldoutResult:
    """The held-out protocol on a battle frame (model_a, model_b, human_y, judge_hard, gap).

    ``tau=None`` refits τ on each fold's anchor battles (METHODS §3); a given
    ``tau`` is held fixed in every fold (METHODS §10), which is the procedure
    behind intervals drawn around Soft-Elo at a τ the user chose.
    """
    if tau is not None and not (np.isfinite(tau) and tau > 0):
        raise ValueError(f"a fixed τ must be finite and positive, got {tau}")
    import time

    t0 = time.perf_counter()
    f = frame.reset_index(drop=True)
    models, ia, ib = model_codes(f)
    m_count = len(models)
    human = f["human_y"].to_numpy(float)
    gap = f["gap"].to_numpy(float) if "gap" in f else np.full(len(f), np.nan)
    full_tau = fit_tau(gap, human)
    tables = _AnchorTables(f, _Pairs.of_battles(ia, ib, m_count), gap)
    tau_cells = _TauCells.of_battles(gap, human) if tau is None else None
    human_models = sorted({models[k] for k in np.concatenate([ia[np.isfinite(human)], ib[np.isfinite(human)]])})
    rows, skipped = [], {}
    starts: dict[str, np.ndarray] = {}
    for step, target in enumerate(human_models, start=1):
        t = models.index(target)
        in_target = (ia == t) | (ib == t)
        anchors = ~in_target
        fold_tau = tau if tau_cells is None else tau_cells.tau_without(in_target)
        row = {"model": target, "tau": fold_tau}
        other = np.where(ia == t, ib, ia)  # the anchor each target battle is against
        sign_a = ia == t  # target is side a
        all_methods = (Predictor("human", "human"), *methods)
        ens = None
        if any(m.kind == "ensemble" for m in methods):
            ens = ensemble_targets(f, anchors)
        target_rows = np.flatnonzero(in_target)
        for meth in all_methods:
            n_pair, s_pair = tables.fold_table(meth, fold_tau, t, ens, anchors)
            if not n_pair.any():
                row.update({f"{meth.name}_elo": np.nan, f"{meth.name}_se": np.nan, f"n_{meth.name}": 0})
                continue
            # Dropping one model of hundreds barely moves the others: Newton starts from the full-data fit
            # of this method (at the first fold's τ for Soft-Elo) and needs a few steps instead of ten.
            if meth.name not in starts:
                starts[meth.name] = tables.fit(*tables.fold_table(meth, fold_tau, -1, ens, np.ones(len(f), bool)))
            theta = tables.fit(n_pair, s_pair, starts[meth.name])
            y_rows = tables.targets(meth, fold_tau, target_rows, ens)
            labelled = np.isfinite(y_rows)
            sel = target_rows[labelled]
            y_t = np.where(sign_a[sel], y_rows[labelled], 1.0 - y_rows[labelled])
            n_t = len(sel)
            row[f"n_{meth.name}"] = n_t
            if n_t < MIN_TARGET_BATTLES:
                row[f"{meth.name}_elo"] = row[f"{meth.name}_se"] = np.nan
                continue
            theta_m, se_m = place_target(theta, other[sel], y_t)
            row[f"{meth.name}_elo"] = float(theta_to_elo(theta_m, centre=False))
            row[f"{meth.name}_se"] = float(elo_units(se_m))
        if not np.isfinite(row.get("human_elo", np.nan)):
            skipped[target] = "fewer than 2 human-labelled battles against the other models"
            continue
        for meth in methods:
            row[f"{meth.name}_resid"] = row[f"{meth.name}_elo"] - row["human_elo"]
        row["n_target_battles"] = int(in_target.sum())
        rows.append(row)
        if progress:
            progress(step, len(human_models))
    table = pd.DataFrame(rows)
    return HeldoutResult(
        table, tuple(m.name for m in methods), full_tau.tau, full_tau.reason, time.perf_counter() - t0, skipped, tau
    )


ENSEMBLE_PREFIX = "gap__"


def ensemble_targets(frame: pd.DataFrame, fit_rows: np.ndarray | None = None) -> np.ndarray:
    """A judge ensemble: the mean of each judge's calibrated soft target per battle.

    ``frame`` carries one gap column per judge named ``gap__<judge>``; each
    judge's τ is fitted on ``fit_rows`` (the fold's anchor battles) and the
    targets σ(τ_j·Δ_j) are averaged over the judges that scored the battle.
    """
    cols = [c for c in frame.columns if c.startswith(ENSEMBLE_PREFIX)]
    if not cols:
        raise ValueError("the ensemble needs gap__<judge> columns (one per judge)")
    human = frame["human_y"].to_numpy(float)
    rows = np.ones(len(frame), bool) if fit_rows is None else fit_rows
    targets = []
    for c in cols:
        g = frame[c].to_numpy(float)
        t = fit_tau(g[rows], human[rows], interval=False)
        if t.tau is not None:
            targets.append(soft_target(g, t.tau))
    if not targets:
        return np.full(len(frame), np.nan)
    stack = np.vstack(targets)
    with np.errstate(invalid="ignore"):
        return np.where(
            np.isfinite(stack).any(axis=0), np.nanmean(np.where(np.isfinite(stack), stack, np.nan), axis=0), np.nan
        )


def summarise(table: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """MAE, Spearman, Kendall, median SE and mean τ per method (METHODS §3)."""
    out = []
    for name in methods:
        if f"{name}_elo" not in table:
            continue
        ok = table[f"{name}_elo"].notna() & table["human_elo"].notna()
        t = table[ok]
        n = len(t)
        # A rank correlation needs three models and two distinct values on each side; otherwise it is
        # undefined (NaN), said here rather than through scipy's warning.
        ranked = n >= 3 and t[f"{name}_elo"].nunique() > 1 and t["human_elo"].nunique() > 1
        rho = stats.spearmanr(t[f"{name}_elo"], t["human_elo"])[0] if ranked else np.nan
        kt = stats.kendalltau(t[f"{name}_elo"], t["human_elo"])[0] if ranked else np.nan
        out.append(
            {
                "method": name,
                "n_models": n,
                "mae": float(np.mean(np.abs(t[f"{name}_resid"]))) if n else np.nan,
                "spearman": float(rho),
                "kendall": float(kt),
                "median_se": float(np.median(t[f"{name}_se"])) if n else np.nan,
                "mean_tau": float(t["tau"].mean()) if "tau" in t and t["tau"].notna().any() else np.nan,
            }
        )
    return pd.DataFrame(out)


def residual_ramp(table: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Mean signed residual by human-Elo quartile (Q1 = weakest)."""
    t = table[table["human_elo"].notna()].copy()
    if len(t) < 4:
        return pd.DataFrame(columns=["quartile", "method", "mean_residual", "n"])
    t["quartile"] = pd.qcut(t["human_elo"].rank(method="first"), 4, labels=["Q1", "Q2", "Q3", "Q4"])
    rows = []
    for name in methods:
        if f"{name}_resid" not in t:
            continue
        g = t.groupby("quartile", observed=True)[f"{name}_resid"]
        for q, mean in g.mean().items():
            rows.append({"quartile": q, "method": name, "mean_residual": float(mean), "n": int(g.size()[q])})
    return pd.DataFrame(rows)


def full_judge_elo(frame: pd.DataFrame, method: Predictor, tau: float | None) -> pd.DataFrame:
    """Every model's judge Elo from all battles, with its sandwich SE (deployment mode).

    A model that won (or lost) every labelled battle has no Elo (NaN) and says so in ``elo_note``.

    One λ = 0.01 fit on all battles fixes the other models; each model is then
    re-placed alone on its own battles (1-D Newton) with the sandwich SE of
    that placement (:func:`place_target`): the same kind of SE the conformal
    quantile was calibrated with, at the cost of one fit instead of one per model.
    """
    f = frame.reset_index(drop=True)
    models, ia, ib = model_codes(f)
    y_all = _targets(f, method, tau)
    labelled = np.isfinite(y_all)
    if not labelled.any():
        return pd.DataFrame({"model": models, "elo": np.nan, "se": np.nan, "n_battles": 0, "elo_note": ""})
    theta = _fit_anchor(_Pairs.of_battles(ia, ib, len(models)), y_all, np.ones(len(f), bool))
    rows = []
    for t, target in enumerate(models):
        sel = ((ia == t) | (ib == t)) & labelled
        n_t = int(sel.sum())
        if n_t < MIN_TARGET_BATTLES:
            rows.append({"model": target, "elo": np.nan, "se": np.nan, "n_battles": n_t, "elo_note": ""})
            continue
        other = np.where(ia == t, ib, ia)[sel]
        y_t = np.where((ia == t)[sel], y_all[sel], 1.0 - y_all[sel])
        if np.all(y_t == 1.0) or np.all(y_t == 0.0):
            # a perfect record: the placement's maximum is at ±∞ and the ridge's value is only a bound
            won = "won" if y_t[0] == 1.0 else "lost"
            why = f"undefined: {won} all its {n_t:,} battle{'s' if n_t != 1 else ''}"
            rows.append({"model": target, "elo": np.nan, "se": np.nan, "n_battles": n_t, "elo_note": why})
            continue
        th, se = place_target(theta, other, y_t)
        if not np.isfinite(th):
            why = "undefined: its placement against the other models did not converge"
            rows.append({"model": target, "elo": np.nan, "se": np.nan, "n_battles": n_t, "elo_note": why})
            continue
        rows.append(
            {
                "model": target,
                "elo": float(theta_to_elo(th, centre=False)),
                "se": float(elo_units(se)),
                "n_battles": n_t,
                "elo_note": "",
            }
        )
    return pd.DataFrame(rows)
