"""Bradley–Terry by Newton's method on pair-aggregated sufficient statistics.

Model (METHODS.md §1): ``P(a ≻ b) = σ(θ_a − θ_b + wᵀx)``; maximise
``Σ_rows [s·ln σ(η) + (n − s)·ln σ(−η)] − (λ/2)‖θ‖²`` where each row is a
*cell* of battles: an ordered pair (or a pair and feature vector, or a pair
and outcome) with ``n = Σ w`` and ``s = Σ w·y``.  The log-likelihood depends
on the battles only through these sums, for hard labels, ties and soft
targets alike, so a fit costs O(#cells) per iteration whatever the number of
battles.  Features are not penalised.

The Hessian of the θ block is a weighted graph Laplacian: singular along the
all-ones vector of each connected component (only differences are
identified).  Newton iterates are kept centred per component: the projector
onto those directions is added to the Hessian, which leaves the Newton step
unchanged on the centred subspace and makes the system positive definite, so
every solve is a Cholesky solve.  (Cholesky also keeps small solves fast on a
busy machine, where multithreaded LU factorisations stall.)

The reported gauge of a maximum-likelihood fit (λ = 0, or its fallback
ridge) is different: each component's 1500 is the mean of its
*well-identified* models only (see "Degenerate information" below), i.e. the
centred θ is shifted by minus the mean centred θ of those models.  A model
with one battle or a perfect record has a huge (or infinite) variance; with
plain centring it would pass Var(θ)/m² of it, and its covariances, to every
other model's interval.  A requested ridge (λ > 0) has no gauge freedom: its
penalty makes the per-component centred θ the unique optimum, which is kept.

Large tables (``SPARSE_MIN_MODELS``; thousands of models with a few battles
each, as in an arena's long tail) never form an m×m matrix: the information
is a sparse Laplacian (plus feature blocks), Newton steps are solved by
Jacobi-preconditioned conjugate gradients, which stay on the centred
subspace, and sandwich SEs by one sparse solve per model
(:func:`sandwich_variances`), so only a chosen subset gets SEs beyond
``SE_ALL_MAX_MODELS`` models.

Uncertainty
-----------
* Sandwich ``H⁺ G H⁺`` with ``G`` the sum of per-battle gradient outer
  products, exact from the cell sums (``n, s`` and ``ss = Σ w·y²`` or a
  homogeneous cell); without ``ss`` a cell whose battles may differ is used as
  a cluster (its summed gradient), which is still consistent but noisier.
* Battle bootstrap: resampling the N battles with replacement is a
  multinomial draw of cell counts over cells of identical battles; the
  per-battle Poisson(1) bootstrap draws Poisson cell counts.  All replicates
  share the pair structure, so they are solved together by a Newton iteration
  preconditioned with the point estimate's information matrix.

Degenerate information (METHODS §10)
------------------------------------
Per model, from its own battles (:func:`_records`):

* *well identified*: at least two battles, with both win mass and loss mass
  (ties count as half of each).  Then its MLE is finite given the others and
  its information is bounded away from zero; these models define the gauge.
  (A higher battle threshold such as ``DEFAULT_MIN_BATTLES`` would move the
  reference of long-tailed leaderboards, where most models have a handful of
  battles but finite, moderate variances; thin models are reported as
  ``few_battles`` instead.)  A component without such models is centred on
  all its members.
* *perfect record* (no win mass or no loss mass, e.g. a single win): the MLE
  is ±∞, the shown Elo is a ridge value, so both intervals are undefined
  (NaN) rather than a statement about the ridge.
* *constant record* (every battle has the same target in (0, 1): ties only,
  which includes a single tie): the MLE exists but the sandwich estimates the
  outcome variance by the squared residuals, which are (near) zero when the
  outcome never varied: zero-width intervals, or a copy of the single
  opponent's.  Their battles' meat is raised to the largest variance a target
  in [0, 1] with mean p can have, p(1 − p) (the binary-outcome variance):
  a stated, conservative interval.  Resampling a record that never varies
  cannot show its spread either, so their bootstrap interval is undefined.
* In a bootstrap, a replicate that lacks all of a model's battles says
  nothing about it (its value would be the ridge prior, 1500).  Such
  replicates are left out of that model's interval, and when they exceed
  ``BOOT_MAX_MISSING`` (2.5 %, one tail of a 95 % interval, so that they
  could not decide a bound) its interval is undefined.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from core.domain import Z95, Ratings, elo_units, ranked, sigmoid, theta_to_elo

# pandas and scipy cost ~0.5 s to import, more than a whole dense fit of a
# 1M-battle file (`python -m core bt FILE`).  The dense path (fit and sandwich
# up to SPARSE_MIN_MODELS models) uses numpy only; the functions that need
# pandas (frames, factorising raw battles) or scipy (the sparse solver, the
# bootstrap's batched products) import them themselves.
if TYPE_CHECKING:
    import pandas as pd
    from scipy import sparse

DEFAULT_MIN_BATTLES = 10
FALLBACK_LAM = 0.01
# Share of bootstrap replicates that may lack all of a model's battles before
# its interval is undefined: the tail mass of a 95% percentile interval.
BOOT_MAX_MISSING = 0.025


# --------------------------------------------------------------------- data
@dataclass(frozen=True)
class Comparisons:
    """Cells of battles: side indices, weight sum ``n``, target sum ``s``.

    Optional per-cell sums: ``ss = Σ w·y²`` makes the sandwich exact for cells
    that mix outcomes; ``count`` is the number of battles (defaults to ``n``,
    i.e. unit weights) and is what a battle bootstrap resamples.
    """

    models: tuple
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    s: np.ndarray
    x: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    ss: np.ndarray | None = None
    count: np.ndarray | None = None
    # Cells that hold clusters of correlated battles (several votes on one battle): per cell the sums over
    # its clusters of s_c², n_c·s_c and n_c², columns in that order.  The sandwich then sums each cluster's
    # gradient before squaring it: cluster-robust by battle.
    cluster: np.ndarray | None = None

    def __post_init__(self) -> None:
        # Accept any array-likes; store contiguous numpy arrays of the right dtype.
        for name, dtype in (
            ("i", np.int64),
            ("j", np.int64),
            ("n", float),
            ("s", float),
            ("ss", float),
            ("count", float),
            ("x", float),
            ("cluster", float),
        ):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, np.ascontiguousarray(v, dtype=dtype))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "feature_names", tuple(self.feature_names))
        rows = len(self.n)
        if not (len(self.i) == len(self.j) == len(self.s) == rows):
            raise ValueError("Comparisons: i, j, n and s must have one entry per cell")
        for name in ("ss", "count"):
            v = getattr(self, name)
            if v is not None and len(v) != rows:
                raise ValueError(f"Comparisons: {name} must have one entry per cell")
        if self.cluster is not None and self.cluster.shape != (rows, 3):
            raise ValueError("Comparisons: cluster must be a (cells, 3) matrix of Σs_c², Σn_c·s_c, Σn_c²")
        if self.x is not None and (self.x.ndim != 2 or self.x.shape[0] != rows):
            raise ValueError("Comparisons: x must be a (cells, features) matrix")
        if self.x is not None and len(self.feature_names) != self.x.shape[1]:
            raise ValueError("Comparisons: one feature name per column of x")
        if rows:
            m = len(self.models)
            if min(self.i.min(), self.j.min()) < 0 or max(self.i.max(), self.j.max()) >= m:
                raise ValueError("Comparisons: model index out of range")
            if (
                np.any(self.n < 0)
                or np.any(self.s < -1e-9 * np.maximum(self.n, 1))
                or np.any(self.s > self.n * (1 + 1e-9) + 1e-12)
            ):
                raise ValueError("Comparisons: need 0 <= s <= n in every cell (s is a sum of targets in [0, 1])")

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_features(self) -> int:
        return 0 if self.x is None else self.x.shape[1]

    @property
    def battle_counts(self) -> np.ndarray:
        return self.n if self.count is None else self.count

    def cell_mean(self) -> np.ndarray:
        """Mean target of each cell (0.5 for empty cells)."""
        return np.where(self.n > 0, self.s / np.where(self.n > 0, self.n, 1.0), 0.5)

    def homogeneous_cells(self, tol: float = 1e-9) -> np.ndarray:
        """Per cell: are all its battles known to carry the same target?

        With ``ss`` this is "zero within-cell variance"; without it only cells
        whose mean is 0 or 1 are known to be homogeneous.
        """
        ybar = self.cell_mean()
        if self.ss is None:
            return (self.n == 0) | (ybar <= tol) | (ybar >= 1 - tol)
        var = np.where(self.n > 0, self.ss / np.where(self.n > 0, self.n, 1.0) - ybar**2, 0.0)
        return var <= tol

    def is_homogeneous(self, tol: float = 1e-9) -> bool:
        """Every cell holds battles with one target value (what the bootstrap resamples)."""
        return bool(np.all(self.homogeneous_cells(tol)))

    def battles_per_model(self) -> np.ndarray:
        """Weight sum of the battles each model took part in."""
        m = self.n_models
        return np.bincount(self.i, weights=self.n, minlength=m) + np.bincount(self.j, weights=self.n, minlength=m)


def _codes(values: np.ndarray, models: tuple) -> np.ndarray:
    import pandas as pd

    codes = pd.Categorical(values, categories=list(models)).codes.astype(np.int64)
    if np.any(codes < 0):
        missing = pd.unique(np.asarray(values, dtype=object)[codes < 0])[:3]
        raise ValueError(f"model(s) {list(missing)} are not in the model list")
    return codes


ArrayLike = Sequence[Any] | np.ndarray


def _validate(
    models: Sequence[Any] | None,
    a: ArrayLike,
    b: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None,
    x: np.ndarray | None,
    feature_names: Sequence[str],
) -> tuple[tuple, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    y = np.asarray(y, dtype=float)
    if not (len(a) == len(b) == len(y)):
        raise ValueError("model_a, model_b and y must have the same length")
    if np.any(~np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        raise ValueError("targets y must be finite and in [0, 1] (drop battles without a target first)")
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=float)
    if len(w) != len(y) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite, non-negative and one per battle")
    if x is not None:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if x.shape[0] != len(y) or not np.all(np.isfinite(x)):
            raise ValueError("feature matrix x must be finite with one row per battle")
        names = tuple(feature_names) or tuple(f"x{k}" for k in range(x.shape[1]))
        if len(names) != x.shape[1]:
            raise ValueError(f"{x.shape[1]} feature columns but {len(names)} feature names")
    else:
        names = ()
    if np.any(a == b):
        raise ValueError("a model cannot battle itself")
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    return tuple(models), a, b, y, w, x, names


def _combine(key: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Dense codes of the pair (key, codes); stays below len(key) so it never overflows."""
    import pandas as pd

    both = key * (int(codes.max()) + 1 if len(codes) else 1) + codes
    return pd.factorize(both)[0].astype(np.int64)


def comparisons_from_battles(
    model_a: ArrayLike,
    model_b: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    x: np.ndarray | None = None,
    feature_names: Sequence[str] = (),
    models: Sequence | None = None,
    aggregate: bool | str = True,
) -> Comparisons:
    """Battles → cells.

    ``y`` is P(a beats b) in [0, 1] (1, 0, 0.5 or any soft target; clipping
    soft targets is the caller's business, METHODS §2).

    ``aggregate=True``: one cell per (unordered pair, target value[, weight
    value when weights differ][, feature row]), oriented so that ``i < j``
    (the likelihood is unchanged by swapping a and b with y → 1 − y): exact
    for fitting, the sandwich and the battle bootstrap; hard labels give at
    most three cells per pair.  ``aggregate='pair'``: one cell per unordered
    pair (and feature row): the smallest table; ``ss`` keeps the sandwich
    exact.  ``aggregate=False``: one cell per battle.
    """
    import pandas as pd

    names, a, b, yy, w, x, feature_names = _validate(models, model_a, model_b, y, weight, x, feature_names)
    ia, ib = _codes(a, names), _codes(b, names)
    ones = np.ones(len(yy))
    if aggregate is False or len(yy) == 0:
        return Comparisons(names, ia, ib, w.copy(), w * yy, x, feature_names, w * yy * yy, ones)
    if aggregate not in (True, "pair"):
        raise ValueError(f"aggregate must be True, 'pair' or False, got {aggregate!r}")
    flip = ia > ib
    ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
    yy = np.where(flip, 1.0 - yy, yy)
    if x is not None:
        x = np.where(flip[:, None], -x, x)
    key = pd.factorize(ia * len(names) + ib)[0].astype(np.int64)
    if aggregate is True:
        key = _combine(key, pd.factorize(yy)[0])
        if np.ptp(w) > 0:
            key = _combine(key, pd.factorize(w)[0])
    if x is not None and x.shape[1]:
        key = _combine(key, pd.factorize(pd.MultiIndex.from_arrays(list(x.T)))[0])
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    k = len(uniq)
    n = np.bincount(inv, weights=w, minlength=k)
    s = np.bincount(inv, weights=w * yy, minlength=k)
    ss = np.bincount(inv, weights=w * yy * yy, minlength=k)
    count = np.bincount(inv, minlength=k).astype(float)
    xc = None if x is None else x[first]
    return Comparisons(names, ia[first], ib[first], n, s, xc, feature_names, ss, count)


# A pair table's cluster sums (Comparisons.cluster): Σ over battles of (Σ y)², n·Σ y and n², n = its votes.
CLUSTER_COLUMNS = ("cluster_ss", "cluster_ns", "cluster_nn")


def comparisons_from_pair_table(df: pd.DataFrame, models: Sequence | None = None) -> Comparisons:
    """A pair table (columns model_a, model_b, n, s[, ss][, count][, cluster sums]) → cells.

    This is what SQL aggregation returns (``Store.pair_stats``): ``n`` battle
    count (or weight sum) and ``s`` target sum per ordered pair.  ``ss`` (Σ y²)
    keeps the sandwich exact and lets a bootstrap split hard-label pairs into
    their win/tie/loss cells.  :data:`CLUSTER_COLUMNS` make the sandwich
    cluster-robust (votes of one battle are one cluster).
    """
    missing = [col for col in ("model_a", "model_b", "n", "s") if col not in df.columns]
    if missing:
        raise ValueError(f"pair table lacks column(s) {missing} (has {list(df.columns)})")
    a = df["model_a"].to_numpy(dtype=object)
    b = df["model_b"].to_numpy(dtype=object)
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    models = tuple(models)
    opt = {col: df[col].to_numpy(float) for col in ("ss", "count") if col in df.columns}
    clustered = all(col in df.columns for col in CLUSTER_COLUMNS)
    return Comparisons(
        models,
        _codes(a, models),
        _codes(b, models),
        df["n"].to_numpy(float),
        df["s"].to_numpy(float),
        ss=opt.get("ss"),
        count=opt.get("count"),
        cluster=df[list(CLUSTER_COLUMNS)].to_numpy(float) if clustered else None,
    )


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class FitIssue:
    """A reason to read a fit with care: which models, and why."""

    # 'disconnected' | 'no_mle' | 'few_battles' | 'not_converged' | 'regularised' | 'degenerate' | 'gauge'
    kind: str
    models: tuple
    message: str

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict:
        return {"kind": self.kind, "models": list(self.models), "message": self.message}


@dataclass(frozen=True)
class BTFit:
    """A Bradley–Terry fit: θ (per component), Elo, feature coefficients, diagnostics.

    ``lam`` is the penalty actually used: when the unpenalised MLE does not
    exist it is the fallback ridge and ``well_defined`` is False.  ``anchors``
    marks the models whose mean θ is 0 in each component (over all members
    where a component has none): the well-identified ones for λ = 0, all of
    them for a requested ridge; None means all.
    ``loglik`` is the objective at the per-component centred θ (with λ > 0 the
    penalty is not invariant to the shift to the anchors' mean).
    """

    models: tuple
    theta: np.ndarray
    coef: np.ndarray
    feature_names: tuple[str, ...]
    converged: bool
    iterations: int
    grad_norm: float
    lam: float
    n_battles: np.ndarray
    issues: tuple[FitIssue, ...]
    well_defined: bool
    loglik: float
    components: np.ndarray  # component label per model (0 = largest)
    solver: str = "dense"  # how the Newton steps were solved: 'dense' or 'sparse'
    anchors: np.ndarray | None = None  # bool per model: the well-identified models that fix the gauge

    def gauge_weights(self) -> np.ndarray:
        """Per model, its weight in its component's reference mean (sums to 1 per component)."""
        anchors = np.ones(len(self.models), bool) if self.anchors is None else self.anchors
        return _gauge_weights(self.components, anchors)

    @property
    def elo(self) -> np.ndarray:
        return theta_to_elo(self.theta, centre=False)  # θ is gauge-fixed by the fit

    @property
    def beta(self) -> np.ndarray:
        """All parameters: θ then feature coefficients."""
        return np.concatenate([self.theta, self.coef])

    def frame(self) -> pd.DataFrame:
        """model, elo, rank, n_battles, theta; best first."""
        import pandas as pd

        df = pd.DataFrame(
            {"model": list(self.models), "elo": self.elo, "n_battles": self.n_battles, "theta": self.theta}
        )
        df["rank"] = df["elo"].rank(ascending=False, method="min").astype(int)
        return df.sort_values("elo", ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- solver
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
    if m <= SPARSE_MIN_MODELS:
        # One bincount over (row, component) keys: at most SPARSE_MIN_MODELS² keys, and no scipy.
        key = (np.arange(rows)[:, None] * n_comp + comps).ravel()
        return np.bincount(key, weights=values.ravel(), minlength=rows * n_comp).reshape(rows, n_comp)
    # Large tables: the keys would cost rows × m memory; a sparse product does not.
    from scipy import sparse

    member = sparse.csr_matrix((np.ones(m), (np.arange(m), comps)), shape=(m, n_comp))
    return np.asarray((member.T @ values.T).T)


def _gauge_weights(comps: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """Weight of each model in its component's reference mean: 1/#anchors on anchors (uniform if none)."""
    comps = np.asarray(comps)
    if not len(comps):
        return np.zeros(0)
    n_anchor = np.bincount(comps, weights=anchors.astype(float))
    size = np.bincount(comps).astype(float)
    use = n_anchor[comps] > 0
    return np.where(use, anchors / np.where(use, n_anchor[comps], 1.0), 1.0 / size[comps])


@dataclass(frozen=True)
class _Records:
    """What each model's own battles can identify (see the module docstring)."""

    battles: np.ndarray  # number of battles (Comparisons.battle_counts)
    perfect: np.ndarray  # has battles but no win mass or no loss mass: the MLE is ±∞
    constant: np.ndarray  # has battles, all with one target in (0, 1) (ties only, a single tie, ...)
    anchors: np.ndarray  # well identified: >= 2 battles, win and loss mass

    @property
    def single(self) -> np.ndarray:
        return np.abs(self.battles - 1.0) < 1e-9


def _records(c: Comparisons) -> _Records:
    """Per-model record classes from the cell sums, O(cells).

    A record is constant when the weighted variance of the model's own
    targets is zero; cells that may mix outcomes (no ``ss``, mean not 0 or 1)
    count as varied.
    """
    m = c.n_models
    n, s = c.n, c.s
    count = c.battle_counts
    battles = np.bincount(c.i, weights=count, minlength=m) + np.bincount(c.j, weights=count, minlength=m)
    weight = c.battles_per_model()
    win = np.bincount(c.i, weights=s, minlength=m) + np.bincount(c.j, weights=n - s, minlength=m)
    loss = weight - win
    eps = 1e-12 * np.maximum(weight, 1.0)
    has = weight > 0
    perfect = has & ((win <= eps) | (loss <= eps))
    homo = c.homogeneous_cells()
    if c.ss is not None:
        sq_i = c.ss
    else:
        sq_i = np.where(homo, s * c.cell_mean(), 0.0)  # n·ȳ² for the cells known to be homogeneous
    sq_j = n - 2 * s + sq_i  # Σ w(1 − y)²
    unknown = ~homo if c.ss is None else np.zeros(len(n), bool)
    mixed = np.bincount(c.i, weights=unknown, minlength=m) + np.bincount(c.j, weights=unknown, minlength=m)
    sq = np.bincount(c.i, weights=sq_i, minlength=m) + np.bincount(c.j, weights=sq_j, minlength=m)
    safe = np.where(has, weight, 1.0)
    var = sq / safe - (win / safe) ** 2
    constant = has & (mixed == 0) & (var <= 1e-9) & ~perfect
    anchors = (battles >= 2 - 1e-9) & has & ~perfect
    return _Records(battles, perfect, constant, anchors)


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


# ---------------------------------------------------------- sparse solver
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
        from scipy import sparse

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
    from scipy import sparse
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    m = c.n_models
    keep = c.n > 0
    if m < SPARSE_MIN_MODELS or not keep.any():
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
    from scipy import sparse

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
    from scipy.sparse.linalg import splu

    grounded = _grounded(h, components, lam)
    return splu(grounded, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})


def _grounded_lu(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> Callable[[np.ndarray], np.ndarray]:
    """A sparse LU solve of ``h z = b`` for right-hand sides that sum to zero per component (:func:`_grounded`)."""
    return _grounded_splu(h, components, lam).solve


def _grounded_dense_inverse(h: sparse.csr_matrix, components: np.ndarray, lam: float) -> np.ndarray | None:
    """The inverse of :func:`_grounded` ``h`` by dense Cholesky (LAPACK potrf + potri), in Fortran order and
    symmetric; None if not positive definite (the caller keeps its sparse solver)."""
    from scipy.linalg import lapack

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


def _components(c: Comparisons) -> np.ndarray:
    """Connected components of the comparison graph, labelled by size (0 = largest)."""
    m = c.n_models
    keep = c.n > 0
    if m <= SPARSE_MIN_MODELS:
        labels = _weak_labels(c.i[keep], c.j[keep], m)
    else:
        from scipy import sparse
        from scipy.sparse.csgraph import connected_components

        adj = sparse.coo_matrix((np.ones(int(keep.sum())), (c.i[keep], c.j[keep])), shape=(m, m))
        labels = connected_components(adj, directed=False)[1]
    order = np.argsort(-np.bincount(labels), kind="stable")
    return np.argsort(order)[labels]


def _weak_labels(i: np.ndarray, j: np.ndarray, m: int) -> np.ndarray:
    """Component of each of ``m`` nodes joined by edges (i, j), numbered by smallest member.

    scipy's ``connected_components`` numbers them the same way, so the size
    order (ties by label) does not depend on which of the two ran.  Each round
    lowers every node's label to the smallest across its edges, then jumps
    labels to their label's label; labels only decrease, and at the fixed
    point both ends of every edge agree, on the component's smallest index.
    """
    label = np.arange(m)
    while True:
        low = np.minimum(label[i], label[j])
        new = label.copy()
        np.minimum.at(new, i, low)
        np.minimum.at(new, j, low)
        new = new[new]
        if np.array_equal(new, label):
            return np.unique(label, return_inverse=True)[1]
        label = new


def _strongly_connected_within(src: np.ndarray, dst: np.ndarray, comps: np.ndarray) -> bool:
    """Does every component reach all its members along the edges src → dst, and back?

    (Each component one strong component: Ford's condition.)  Breadth-first
    from one member per component, forwards then backwards, on a dense m×m
    adjacency: O(m²), for the dense path only.
    """
    m = len(comps)
    adj = np.zeros((m, m), bool)
    adj[src, dst] = True
    roots = np.unique(comps, return_index=True)[1]
    for step in (adj, adj.T):
        reached = np.zeros(m, bool)
        reached[roots] = True
        frontier = reached.copy()
        while frontier.any():
            frontier = step[frontier].any(axis=0) & ~reached
            reached |= frontier
        if not reached.all():
            return False
    return True


def _names(models: Sequence[Any] | np.ndarray, limit: int = 8) -> str:
    shown = ", ".join(map(str, list(models)[:limit]))
    return shown + (f", … ({len(models)} in all)" if len(models) > limit else "")


def _win_mass_edges(c: Comparisons) -> tuple[np.ndarray, np.ndarray]:
    """The directed "took win mass from" graph: an edge i → j where i won (or tied) against j at least once."""
    win = c.s > 1e-12 * np.maximum(c.n, 1)
    loss = (c.n - c.s) > 1e-12 * np.maximum(c.n, 1)
    return np.concatenate([c.i[win], c.j[loss]]), np.concatenate([c.j[win], c.i[loss]])


def separated_models(c: Comparisons) -> set[str]:
    """The models whose Elo has no maximum-likelihood value relative to the bulk of their component.

    Distinct strongly connected groups of the "took win mass from" graph are driven infinitely far apart by
    the likelihood, so only the largest group of each component has finite Elo differences among its members;
    every model outside it (the one that won its single battle, a group that never beat the rest) is
    separated.  Empty when the MLE exists.
    """
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    m = c.n_models
    if m == 0:
        return set()
    src, dst = _win_mass_edges(c)
    directed = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
    _, strong = connected_components(directed, directed=True, connection="strong")
    _, weak = connected_components(directed, directed=True, connection="weak")
    size = np.bincount(strong)
    models = np.array(c.models, dtype=object)
    out: set[str] = set()
    for k in np.unique(weak):
        members = np.flatnonzero(weak == k)
        groups = strong[members]
        if len(np.unique(groups)) == 1:
            continue
        # the largest group is the reference (on a tie in size, the one holding the most battles)
        battles = np.bincount(groups, weights=c.battles_per_model()[members], minlength=len(size))
        best = max(np.unique(groups), key=lambda g: (size[g], battles[g]))
        out |= {str(x) for x in models[members[groups != best]]}
    return out


def diagnose(c: Comparisons, min_battles: int = DEFAULT_MIN_BATTLES) -> tuple[list[FitIssue], np.ndarray, bool]:
    """Ill-posedness checks: graph components, existence of the MLE, thin models.

    Returns (issues, component label per model, well_defined).  Without
    features the MLE exists iff, within each component, the directed "took
    win mass from" graph is strongly connected (Ford's condition); a group
    (a strongly connected set of models, which may have beaten each other)
    that never lost to, or never took win mass from, any model outside the
    group drives it to ±∞.  With features the same condition is reported; it
    is necessary, not sufficient (a feature can also separate the outcomes).

    Also reported: models whose own record cannot show its uncertainty
    ('degenerate': ties only or a single battle, see the module docstring).
    """
    m = c.n_models
    models = np.array(c.models, dtype=object)
    issues: list[FitIssue] = []
    comps = _components(c) if m else np.zeros(0, int)
    n_comp = int(comps.max()) + 1 if m else 0
    counts = c.battles_per_model()
    if n_comp > 1:
        desc = "; ".join("{" + _names(models[comps == k], 6) + "}" for k in range(min(n_comp, 5)))
        desc += "; …" if n_comp > 5 else ""
        issues.append(
            FitIssue(
                "disconnected",
                tuple(models[comps != 0]),
                f"the comparison graph has {n_comp} disconnected components ({desc}): Elo is only comparable "
                "within a component (each is centred on its own)",
            )
        )
    src, dst = _win_mass_edges(c)
    if m <= SPARSE_MIN_MODELS and _strongly_connected_within(src, dst, comps):
        n_strong, strong = n_comp, None
    else:
        # The groups themselves (and the order the message names them in) come from scipy's labels.
        from scipy import sparse
        from scipy.sparse.csgraph import connected_components

        directed = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
        n_strong, strong = connected_components(directed, directed=True, connection="strong") if m else (0, None)
    well_defined = n_strong <= n_comp
    if not well_defined:
        assert strong is not None  # m > 0: there are components to condense
        # Condensation: a strong component with no edge in never lost to the
        # rest; with no edge out it never won.  (Models without battles are
        # their own component and not an MLE problem.)
        s_src, s_dst = strong[src], strong[dst]
        cross = s_src != s_dst
        has_out = np.bincount(s_src[cross], minlength=n_strong) > 0
        has_in = np.bincount(s_dst[cross], minlength=n_strong) > 0
        # Vectorised over models: a long tail can have tens of thousands of
        # one-battle models, each its own strong component.  A group of one
        # never lost (or never won) at all; a larger group did, but only
        # within itself, so each is named separately.
        source, sink = (has_out & ~has_in)[strong], (has_in & ~has_out)[strong]
        group_size = np.bincount(strong, minlength=n_strong)[strong]
        winners = list(models[source])
        losers = list(models[sink])
        parts = []
        wording = (
            (
                source,
                "never lost or tied a battle",
                "never lost to or tied with a model outside it (only to each other)",
            ),
            (sink, "never won or tied a battle", "never beat or tied with a model outside it (only each other)"),
        )
        for side, alone, as_group in wording:
            if np.any(side & (group_size == 1)):
                parts.append(f"these models {alone}: {_names(models[side & (group_size == 1)])}")
            for label in np.unique(strong[side & (group_size > 1)])[:5]:
                parts.append(f"the group {{{_names(models[strong == label])}}} {as_group}")
        issues.append(
            FitIssue(
                "no_mle",
                tuple(winners + losers),
                "the maximum-likelihood Elo does not exist (it is ±∞) because "
                + "; ".join(parts or ["some models are separated by perfect records"]),
            )
        )
    thin = np.flatnonzero(counts < min_battles)
    if len(thin):
        issues.append(
            FitIssue(
                "few_battles",
                tuple(models[thin]),
                f"{len(thin)} model(s) have fewer than {min_battles} battles ({_names(models[thin])}): "
                "their Elo is very uncertain",
            )
        )
    rec = _records(c)
    weak = rec.constant | (rec.single & (rec.battles > 0))
    if weak.any():
        parts = []
        if rec.constant.any():
            parts.append(
                f"only ties (or one repeated soft target): {_names(models[rec.constant])}; their sandwich "
                "interval assumes the largest possible outcome variance p(1 − p) and they have no bootstrap interval"
            )
        single = rec.single & (rec.battles > 0)
        if single.any():
            parts.append(
                f"a single battle: {_names(models[single])}; a single win or loss has no interval, a single tie "
                "only the p(1 − p) one"
            )
        issues.append(
            FitIssue(
                "degenerate",
                tuple(models[weak]),
                f"{int(weak.sum())} model(s) have a record whose outcomes never vary, so it cannot show how "
                "uncertain their Elo is: " + "; ".join(parts),
            )
        )
    return issues, comps, well_defined


def _gauge_issue(c: Comparisons, comps: np.ndarray, anchors: np.ndarray) -> FitIssue | None:
    """Name the models left out of their component's reference mean, if any."""
    if not len(comps):
        return None
    models = np.array(c.models, dtype=object)
    n_anchor = np.bincount(comps, weights=anchors.astype(float))
    shown = ~anchors & (n_anchor[comps] > 0)
    if not shown.any():
        return None
    return FitIssue(
        "gauge",
        tuple(models[shown]),
        "1500 is the mean Elo of the well-identified models of each component (at least 2 battles, with wins "
        f"and losses); {int(shown.sum())} model(s) are left out of that mean so that their uncertainty does not "
        f"spread to the others: {_names(models[shown])}",
    )


def fit_bt(
    c: Comparisons,
    lam: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
    theta0: np.ndarray | None = None,
    fallback_lam: float = FALLBACK_LAM,
    min_battles: int = DEFAULT_MIN_BATTLES,
    solver: str = "auto",
    diagnostics: bool = True,
) -> BTFit:
    """Maximum-likelihood (or L2-penalised) Bradley–Terry fit by damped Newton.

    Converged when the largest gradient entry per unit of battle weight is
    below ``tol`` (or the step vanishes).  When ``lam == 0`` and the MLE does
    not exist (perfect records), the fit is made with ``fallback_lam``
    instead and says so (``well_defined=False``, ``lam`` = the penalty used,
    an issue naming the models): finite numbers, never a silent ±∞.  A
    disconnected graph is fitted per component.

    Gauge: with ``lam == 0`` (the MLE, or its fallback ridge) θ is shifted per
    component so that its well-identified models (module docstring) have
    mean 0 — the point estimates equal the per-component centred ones minus
    that mean — and a 'gauge' issue names the models left out.  With a
    requested ``lam > 0`` the penalty fixes the location (the optimum is
    centred per component) and θ is that optimum.

    ``solver``: 'dense' solves each Newton step with a Cholesky of the full
    information matrix (O(m³) time, O(m²) memory); 'sparse' with
    Jacobi-preconditioned conjugate gradients on the sparse information
    (O(cells) per CG iteration), which is what makes 100,000 models
    possible; 'auto' picks sparse above ``SPARSE_MIN_MODELS`` models.  Both
    solve the same Newton equations to round-off, so they give the same fit.

    ``diagnostics=False`` (only with ``lam > 0``) skips the existence and
    thin-model checks and reports no issues: for many penalised refits of
    one design where only θ is read (the leave-one-model-out folds).
    """
    if lam < 0:
        raise ValueError("lam must be >= 0")
    if solver not in ("auto", "dense", "sparse"):
        raise ValueError(f"unknown solver {solver!r}: expected 'auto', 'dense' or 'sparse'")
    m, k = c.n_models, c.n_features
    use_sparse = solver == "sparse" or (solver == "auto" and m > SPARSE_MIN_MODELS)
    if diagnostics:
        issues, comps, well_defined = diagnose(c, min_battles=min_battles)
    elif lam > 0:
        # Many penalised refits of one design (leave-one-model-out folds) need θ only: the penalised optimum
        # always exists, so the existence and thin-model checks are skipped, not their components.
        issues, comps, well_defined = [], (_components(c) if m else np.zeros(0, int)), True
    else:
        raise ValueError("diagnostics=False needs lam > 0: without a penalty the checks decide the fit")
    eff_lam = lam
    if lam == 0 and not well_defined:
        eff_lam = fallback_lam
        issues.append(
            FitIssue(
                "regularised",
                (),
                f"shown: a ridge-regularised fit (λ = {fallback_lam}) so that every model gets a "
                "finite Elo; read the positions of the models above as bounds, not estimates",
            )
        )
    newton_step = (_sparse_newton if use_sparse else _dense_newton)(c, comps, eff_lam)
    beta = np.zeros(m + k)
    if theta0 is not None:
        beta[:m] = _centre(np.asarray(theta0, dtype=float), comps)
    total = max(float(c.n.sum()), 1.0)
    obj = loglik(c, beta, eff_lam)
    converged = False
    it = 0
    gnorm = float("inf")
    while True:
        g = gradient(c, beta, eff_lam)
        gnorm = float(np.max(np.abs(g))) / total if len(g) else 0.0
        if gnorm < tol:
            converged = True
            break
        if it >= max_iter:
            break
        step = newton_step(beta, g)
        # Backtracking keeps the ascent monotone far from the optimum (large
        # steps on nearly separated data); near it the full step is taken.
        t = 1.0
        for _ in range(40):
            new = beta + t * step
            new_obj = loglik(c, new, eff_lam)
            if new_obj >= obj - 1e-12 * abs(obj):
                break
            t *= 0.5
        beta, obj = new, new_obj
        it += 1
        if np.max(np.abs(t * step)) < 1e-13:
            converged = True
            break
    # Report in the anchored gauge (module docstring); iterates stayed centred.
    # A requested ridge is not shift-invariant: its optimum, centred per
    # component, is the estimate, so there is no gauge to choose.
    anchors = _records(c).anchors if lam == 0 else np.ones(m, bool)
    beta[:m] = _centre(beta[:m], comps, anchors)
    gauge_issue = _gauge_issue(c, comps, anchors)
    if gauge_issue is not None:
        issues.append(gauge_issue)
    if not converged:
        issues.append(
            FitIssue(
                "not_converged",
                (),
                f"Newton did not converge in {max_iter} iterations (gradient {gnorm:.2e} per battle)",
            )
        )
    return BTFit(
        models=c.models,
        theta=beta[:m],
        coef=beta[m:],
        feature_names=c.feature_names,
        converged=converged,
        iterations=it,
        grad_norm=gnorm,
        lam=eff_lam,
        n_battles=c.battles_per_model(),
        issues=tuple(issues),
        well_defined=well_defined,
        loglik=obj,
        components=comps,
        solver="sparse" if use_sparse else "dense",
        anchors=anchors,
    )


NewtonStep = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dense_newton(c: Comparisons, comps: np.ndarray, lam: float) -> NewtonStep:
    """Newton step (β, gradient) → H⁻¹g on the centred subspace, by Cholesky of the dense information."""
    # Adding the gauge projector leaves Newton steps on the centred subspace
    # unchanged (1 is an eigenvector of the information with eigenvalue λ and
    # the gradient has no component along it) and makes the matrix definite.
    gauge = _gauge(comps, c.n_models, c.n_features)
    return lambda beta, g: _solve_spd(information(c, beta, lam) + gauge, g)


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


# ------------------------------------------------------------ uncertainty
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
    half = _cholesky_solve(low, meat)
    cov = _cholesky_solve(low, half.T)
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
    if m <= SPLU_MAX_MODELS:
        if _fills_in(c):
            inverse = _grounded_dense_inverse(h, fit.components, fit.lam)
        if inverse is None:
            factor = _grounded_splu(h, fit.components, fit.lam)
            size = m + k
            if 2.0 * len(solved) * (factor.L.nnz + factor.U.nnz) * DENSE_SPEEDUP > float(size) ** 3:
                inverse = _grounded_dense_inverse(h, fit.components, fit.lam)
            lu = factor.solve

    def solve(rhs: np.ndarray) -> np.ndarray:
        nonlocal lu
        if inverse is not None:
            return _dense_solve(inverse, rhs)
        if lu is not None:
            return lu(rhs)
        z, ok = _pcg(h, rhs, project)
        if not ok.all():  # a chain-like graph: LU from here on (see _CG_MAX_ITER)
            lu = _grounded_lu(h, fit.components, fit.lam)
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
        from scipy import sparse

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
            top = m if m <= SE_ALL_MAX_MODELS else SE_TOP_MODELS
        wanted = np.zeros(m, bool)
        # Perfect records have no interval (below) and their ridge Elo tops
        # long tails: they must not take the slots of the real top models.
        order = np.argsort(-fit.theta, kind="stable")
        wanted[order[~rec.perfect[order]][:top]] = True
        if len(models):
            wanted[_codes(np.asarray(list(models), dtype=object), c.models)] = True
        idx = np.flatnonzero(wanted)
        var = sandwich_variances(c, fit, np.concatenate([idx, m + np.arange(k)]))
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


@dataclass(frozen=True)
class BatchFit:
    """Many fits sharing one cell structure: rows are replicates."""

    theta: np.ndarray  # (B, m), centred per component
    coef: np.ndarray  # (B, k)
    converged: np.ndarray  # (B,) bool
    regularised: np.ndarray  # (B,) bool: MLE did not exist, fitted with the fallback ridge


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
        from scipy import sparse

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
    # Imported here: ``python -m core bt`` without a bootstrap should not pay for it.
    from concurrent.futures import ThreadPoolExecutor

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


@dataclass(frozen=True)
class LeaderboardFit:
    """A fit with its intervals; ``frame()`` is the leaderboard table."""

    fit: BTFit
    intervals: Intervals | None

    def table(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`frame` as arrays (no pandas), best first."""
        f, iv = self.fit, self.intervals
        m = len(f.models)
        undefined = np.full(m, np.nan)
        cols: dict[str, np.ndarray] = {
            "model": np.array(list(f.models), dtype=object),
            "elo": np.asarray(f.elo, dtype=float),
            "n_battles": np.asarray(f.n_battles),
            "se": undefined if iv is None else iv.se_elo,
            "lower": undefined if iv is None else iv.lower_elo,
            "upper": undefined if iv is None else iv.upper_elo,
            "interval_note": np.array(
                [""] * m if iv is None or iv.flags is None else [str(x) for x in iv.flags], dtype=object
            ),
        }
        if iv is not None and iv.n_missing is not None:
            cols["boot_missing"] = np.asarray(iv.n_missing, dtype=int)
        elo = cols["elo"]
        # pandas' rank(ascending=False, method="min"): 1 + the number of better models.
        cols["rank"] = 1 + np.searchsorted(np.sort(-elo), -elo, side="left").astype(np.int64)
        # Best first, ties in model order (a stable descending sort).
        order = np.argsort(-elo, kind="stable")
        return {name: np.asarray(v)[order] for name, v in cols.items()}

    def frame(self) -> pd.DataFrame:
        """model, elo, n_battles, se, lower, upper, interval_note, rank; best first (NaN intervals without ci).

        ``interval_note``: why the model's interval is undefined or rests on a
        stated bound (:attr:`Intervals.flags`), '' for an ordinary interval.
        ``boot_missing`` (bootstrap only): replicates that lacked its battles.
        """
        import pandas as pd

        # Text columns as lists, so pandas infers its usual string dtype for them.
        return pd.DataFrame({k: v.tolist() if v.dtype == object else v for k, v in self.table().items()})

    def coef_frame(self) -> pd.DataFrame:
        """feature, coef (logit scale) and, with intervals, se, lower, upper."""
        import pandas as pd

        f, iv = self.fit, self.intervals
        df = pd.DataFrame({"feature": list(f.feature_names), "coef": f.coef})
        if iv is not None and len(iv.coef_se):
            df["se"], df["lower"], df["upper"] = iv.coef_se, iv.coef_lower, iv.coef_upper
        return df


def fit_with_ci(
    c: Comparisons,
    ci: str | None = "sandwich",
    lam: float = 0.0,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    min_battles: int = DEFAULT_MIN_BATTLES,
    bootstrap_kind: str = "auto",
) -> LeaderboardFit:
    """Fit plus 95% intervals (``ci`` = 'sandwich', 'bootstrap' or None)."""
    if ci not in (None, "sandwich", "bootstrap"):
        raise ValueError(f"unknown ci method {ci!r}: expected 'sandwich', 'bootstrap' or None")
    fit = fit_bt(c, lam=lam, min_battles=min_battles)
    if ci is None:
        return LeaderboardFit(fit, None)
    if ci == "sandwich":
        return LeaderboardFit(fit, sandwich_intervals(c, fit))
    return LeaderboardFit(fit, bootstrap(c, fit, n_boot=n_boot, seed=seed, progress=progress, kind=bootstrap_kind))


def ratings_from_pairs(
    pairs: pd.DataFrame,
    battles: pd.DataFrame | None = None,
    *,
    ci: str | None = "sandwich",
    n_boot: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Ratings:
    """A Bradley–Terry leaderboard from a pair table (model_a, model_b, n, s[, ss]).

    A bootstrap of soft or human targets resamples single battles: pass them
    as ``battles`` (model_a, model_b, y[, w]: a battle's weight, its vote
    count for human votes); without them the bootstrap draws (pair, outcome)
    cells, exact for hard labels.
    """
    comps = comparisons_from_pair_table(pairs)
    if ci == "bootstrap" and battles is not None:
        comps = comparisons_from_battles(
            battles["model_a"].to_numpy(),
            battles["model_b"].to_numpy(),
            battles["y"].to_numpy(dtype=float),
            weight=battles["w"].to_numpy(dtype=float) if "w" in battles else None,
            aggregate=False,
        )
    res = fit_with_ci(comps, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    issues = [str(i) for i in res.fit.issues]
    frame = ranked(res.frame())
    if any(issue.kind == "no_mle" for issue in res.fit.issues):
        frame = set_apart(frame, separated_models(comps), pairs)
    clustering = _clustering_note(pairs, comps, frame) if ci == "sandwich" else None
    if clustering:
        issues.append(clustering)
    return Ratings(
        method="bradley-terry",
        frame=frame,
        n_battles=int(round(float(pairs["n"].sum()))),
        converged=bool(res.fit.converged),
        iterations=int(res.fit.iterations),
        ci=ci,
        issues=tuple(issues),
    )


def set_apart(frame: pd.DataFrame, undefined: set[str], pairs: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with the models whose maximum-likelihood Elo does not exist listed apart, last.

    Their number is the ridge fallback's bound (a single won battle gives 1840; long tails reach 3,000), so
    they get no Elo, interval or rank, and ``elo_note`` says why: "undefined: won all its 3 battles".
    ``pairs`` (model_a, model_b, n, s[, battles]) gives each model's record.
    """
    import pandas as pd

    count = pairs["battles"] if "battles" in pairs else pairs["n"]
    record = (
        pd.concat(
            [
                pd.DataFrame({"model": pairs["model_a"], "n": pairs["n"], "s": pairs["s"], "count": count}),
                pd.DataFrame(
                    {"model": pairs["model_b"], "n": pairs["n"], "s": pairs["n"] - pairs["s"], "count": count}
                ),
            ]
        )
        .groupby("model")[["n", "s", "count"]]
        .sum()
    )

    def why(model: str) -> str:
        n, won, k = (float(record.at[model, c]) for c in ("n", "s", "count"))
        battles = f"{k:,.0f} battle{'s' if round(k) != 1 else ''}"
        if won >= n - 1e-9:
            return f"undefined: won all its {battles}"
        if won <= 1e-9:
            return f"undefined: lost all its {battles}"
        return "undefined: its group never lost to (or never beat) a model outside it"

    out = frame.copy()
    apart = out["model"].astype(str).isin(undefined)
    out["elo_note"] = [why(str(m)) if a else "" for m, a in zip(out["model"], apart)]
    out.loc[apart, ["elo", "se", "lower", "upper"]] = np.nan
    out["rank"] = out["rank"].astype("Int64")
    out.loc[apart, "rank"] = pd.NA
    return pd.concat([out[~apart], out[apart]], ignore_index=True)


def _clustering_note(pairs: pd.DataFrame, comps: Comparisons, frame: pd.DataFrame) -> str | None:
    """When battles carry several votes: how much wider the cluster-robust intervals are than naive ones.

    The naive sandwich treats every vote as independent evidence; it is computed here only to say
    by how much it would overstate the precision, never to draw an interval.
    """
    if comps.cluster is None or "ss" not in pairs.columns:
        return None
    votes = float(pairs["n"].sum())
    per_battle = float(pairs["cluster_nn"].sum()) / votes if votes else 1.0  # a vote's battle holds this many
    if per_battle <= 1.0 + 1e-9:
        return None
    naive = fit_with_ci(dataclasses.replace(comps, cluster=None), ci="sandwich")
    width = (frame["upper"] - frame["lower"]).to_numpy(float)
    naive_frame = ranked(naive.frame()).set_index("model").reindex(frame["model"])
    naive_width = (naive_frame["upper"] - naive_frame["lower"]).to_numpy(float)
    ok = np.isfinite(width) & np.isfinite(naive_width) & (naive_width > 0)
    if not ok.any():
        return None
    ratio = float(np.median(width[ok] / naive_width[ok]))
    if round(per_battle, 2) <= 1.0 or round(ratio, 2) <= 1.0:
        return None  # "1.00 votes … 1.00× as wide": nothing to read with care
    return (
        f"Battles here carry several votes (a vote's battle holds {per_battle:.2f} votes on average). The 95% "
        f"intervals are cluster-robust by battle: votes on one battle count as one piece of evidence about the "
        f"models, not as independent ones. They are {ratio:.2f}× as wide (median) as intervals that treated every "
        f"vote as independent would be."
    )


__all__ = [
    "Comparisons",
    "comparisons_from_battles",
    "comparisons_from_pair_table",
    "BTFit",
    "FitIssue",
    "fit_bt",
    "fit_bt_batch",
    "BatchFit",
    "loglik",
    "gradient",
    "information",
    "sandwich_cov",
    "sandwich_intervals",
    "sandwich_variances",
    "SPARSE_MIN_MODELS",
    "SE_ALL_MAX_MODELS",
    "SE_TOP_MODELS",
    "bootstrap",
    "Intervals",
    "LeaderboardFit",
    "fit_with_ci",
    "diagnose",
    "ratings_from_pairs",
]
