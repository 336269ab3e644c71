"""Bradley–Terry by Newton's method on pair-aggregated sufficient statistics.

Model (METHODS.md §1): ``P(a ≻ b) = σ(θ_a − θ_b + wᵀx)``; maximise
``Σ_rows [s·ln σ(η) + (n − s)·ln σ(−η)] − (λ/2)‖θ‖²`` where each row is a
*cell* of battles: an ordered pair (or a pair and feature vector, or a pair
and outcome) with ``n = Σ w`` and ``s = Σ w·y``.  The log-likelihood depends
on the battles only through these sums, so a fit costs O(#cells) per
iteration whatever the number of battles.

The Hessian of the θ block is a weighted graph Laplacian: singular along the
all-ones vector of each connected component (only differences are
identified).  The gauge is fixed by centring each component, which is done by
adding the projector onto those directions before solving.

Uncertainty: the sandwich covariance ``H⁺ G H⁺`` with ``G`` the sum of
per-battle gradient outer products (exact from the cell sums ``n, s, ss``),
and a multinomial bootstrap over cells, solved for all replicates at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import expit
from scipy.sparse.csgraph import connected_components

from core.scale import ELO_BASE, ELO_PER_LOGIT

Z95 = 1.959963984540054


# --------------------------------------------------------------------- data
@dataclass(frozen=True)
class Comparisons:
    """Cells of battles: side indices, weight sum ``n``, target sum ``s``.

    ``ss`` (Σ w·y², optional) makes the sandwich exact for cells that mix
    outcomes; without it cells are assumed homogeneous (ss = s²/n).
    """

    models: tuple[str, ...]
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    s: np.ndarray
    x: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    ss: np.ndarray | None = None

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_features(self) -> int:
        return 0 if self.x is None else self.x.shape[1]

    def second_moment(self) -> np.ndarray:
        if self.ss is not None:
            return self.ss
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.s**2 / self.n, 0.0)

    def is_homogeneous(self, tol: float = 1e-9) -> bool:
        """Every cell holds battles with one target value (needed by the bootstrap)."""
        if self.ss is None:
            return True
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(self.n > 0, self.ss / self.n - (self.s / self.n) ** 2, 0.0)
        return bool(np.all(var <= tol))

    def battles_per_model(self) -> np.ndarray:
        return np.bincount(self.i, weights=self.n, minlength=self.n_models) + np.bincount(
            self.j, weights=self.n, minlength=self.n_models)


def _validate(models, a, b, y, weight, x):
    a = np.asarray(a)
    b = np.asarray(b)
    y = np.asarray(y, dtype=float)
    if not (len(a) == len(b) == len(y)):
        raise ValueError("model_a, model_b and y must have the same length")
    if np.any(~np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        raise ValueError("targets y must be finite and in [0, 1]")
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=float)
    if len(w) != len(y) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite, non-negative and one per battle")
    if x is not None:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if x.shape[0] != len(y) or not np.all(np.isfinite(x)):
            raise ValueError("feature matrix x must be finite with one row per battle")
    if np.any(a == b):
        raise ValueError("a model cannot battle itself")
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    return tuple(models), a, b, y, w, x


def _codes(values: np.ndarray, models: tuple[str, ...]) -> np.ndarray:
    codes = pd.Categorical(values, categories=list(models)).codes.astype(np.int64)
    if np.any(codes < 0):
        missing = pd.unique(values[codes < 0])[:3]
        raise ValueError(f"model(s) {list(missing)} are not in the model list")
    return codes


def comparisons_from_battles(
    model_a: Sequence,
    model_b: Sequence,
    y: Sequence[float],
    weight: Sequence[float] | None = None,
    x: np.ndarray | None = None,
    feature_names: Sequence[str] = (),
    models: Sequence[str] | None = None,
    aggregate: bool | str = True,
) -> Comparisons:
    """Battles → cells.

    ``aggregate=True``: one cell per (unordered pair, target value[, feature
    row]), oriented so that ``i < j`` (the likelihood is unchanged by swapping
    a and b with y → 1 − y): exact for fitting, the sandwich and the
    multinomial bootstrap (hard labels give at most three cells per pair).
    ``aggregate='pair'``: one cell per unordered pair (smallest; ``ss`` keeps
    the sandwich exact).  ``aggregate=False``: one cell per battle.
    """
    models, a, b, y, w, x = _validate(models, model_a, model_b, y, weight, x)
    ia, ib = _codes(a, models), _codes(b, models)
    if aggregate is False or len(y) == 0:
        return Comparisons(models, ia, ib, w.copy(), w * y, x, tuple(feature_names), w * y * y)
    flip = ia > ib
    ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
    y = np.where(flip, 1.0 - y, y)
    if x is not None:
        x = np.where(flip[:, None], -x, x)
    m = len(models)
    key = ia * m + ib
    if aggregate != "pair":
        ycode, _ = pd.factorize(y)
        key = key * (ycode.max() + 1) + ycode
    if x is not None:
        xcode = pd.factorize(pd.MultiIndex.from_arrays(list(x.T)))[0] if x.shape[1] else np.zeros(len(y), int)
        key = key * (xcode.max() + 1) + xcode
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    k = len(uniq)
    n = np.bincount(inv, weights=w, minlength=k)
    s = np.bincount(inv, weights=w * y, minlength=k)
    ss = np.bincount(inv, weights=w * y * y, minlength=k)
    xc = None if x is None else x[first]
    return Comparisons(models, ia[first], ib[first], n, s, xc, tuple(feature_names), ss)


def comparisons_from_pair_table(df: pd.DataFrame, models: Sequence[str] | None = None) -> Comparisons:
    """A pair table from SQL (columns model_a, model_b, n, s[, ss]) → cells."""
    a = df["model_a"].to_numpy()
    b = df["model_b"].to_numpy()
    if models is None:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    index = {m: k for k, m in enumerate(models)}
    ia = np.array([index[m] for m in a], dtype=np.int64)
    ib = np.array([index[m] for m in b], dtype=np.int64)
    ss = df["ss"].to_numpy(float) if "ss" in df else None
    return Comparisons(tuple(models), ia, ib, df["n"].to_numpy(float), df["s"].to_numpy(float), ss=ss)


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class FitIssue:
    kind: str  # 'disconnected' | 'no_mle' | 'few_battles' | 'not_converged'
    models: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class BTFit:
    models: tuple[str, ...]
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
    components: np.ndarray  # component label per model

    @property
    def elo(self) -> np.ndarray:
        return ELO_BASE + ELO_PER_LOGIT * self.theta

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"model": self.models, "elo": self.elo, "theta": self.theta,
                           "n_battles": self.n_battles})
        df["rank"] = df["elo"].rank(ascending=False, method="min").astype(int)
        return df.sort_values("elo", ascending=False).reset_index(drop=True)


# ---------------------------------------------------------------- solver
def _sigmoid(z):
    return expit(z)


def _log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def _eta(c: Comparisons, beta: np.ndarray) -> np.ndarray:
    m = c.n_models
    eta = beta[c.i] - beta[c.j]
    if c.x is not None:
        eta = eta + c.x @ beta[m:]
    return eta


def loglik(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> float:
    """Penalised log-likelihood (the objective that is maximised)."""
    eta = _eta(c, beta)
    ll = float(np.sum(c.s * _log_sigmoid(eta) + (c.n - c.s) * _log_sigmoid(-eta)))
    return ll - 0.5 * lam * float(beta[: c.n_models] @ beta[: c.n_models])


def gradient(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> np.ndarray:
    m = c.n_models
    r = c.s - c.n * _sigmoid(_eta(c, beta))
    g = np.zeros(m + c.n_features)
    g[:m] = np.bincount(c.i, weights=r, minlength=m) - np.bincount(c.j, weights=r, minlength=m)
    if c.x is not None:
        g[m:] = c.x.T @ r
    g[:m] -= lam * beta[:m]
    return g


def _laplacian(i, j, d, m) -> np.ndarray:
    flat = np.bincount(i * m + j, weights=d, minlength=m * m) + np.bincount(j * m + i, weights=d, minlength=m * m)
    lap = -flat.reshape(m, m)
    lap[np.diag_indices(m)] = np.bincount(i, weights=d, minlength=m) + np.bincount(j, weights=d, minlength=m)
    return lap


def information(c: Comparisons, beta: np.ndarray, lam: float = 0.0) -> np.ndarray:
    """Negative Hessian of the penalised log-likelihood (positive semi-definite)."""
    m, k = c.n_models, c.n_features
    p = _sigmoid(_eta(c, beta))
    d = c.n * p * (1 - p)
    info = np.zeros((m + k, m + k))
    info[:m, :m] = _laplacian(c.i, c.j, d, m)
    if k:
        dx = d[:, None] * c.x
        cross = np.zeros((m, k))
        for f in range(k):
            cross[:, f] = np.bincount(c.i, weights=dx[:, f], minlength=m) - np.bincount(c.j, weights=dx[:, f],
                                                                                         minlength=m)
        info[:m, m:] = cross
        info[m:, :m] = cross.T
        info[m:, m:] = c.x.T @ dx
    info[:m, :m] += lam * np.eye(m)
    return info


def _gauge(components: np.ndarray, m: int, k: int) -> np.ndarray:
    """Projector onto the per-component all-ones directions (θ block only)."""
    g = np.zeros((m + k, m + k))
    for comp in np.unique(components):
        idx = np.flatnonzero(components == comp)
        g[np.ix_(idx, idx)] = 1.0 / len(idx)
    return g


def _components(c: Comparisons) -> np.ndarray:
    m = c.n_models
    keep = c.n > 0
    adj = sparse.coo_matrix((np.ones(keep.sum()), (c.i[keep], c.j[keep])), shape=(m, m))
    return connected_components(adj, directed=False)[1]


def diagnose(c: Comparisons, min_battles: int = 10) -> tuple[list[FitIssue], np.ndarray, bool]:
    """Ill-posedness checks: graph components, MLE existence, thin models."""
    m = c.n_models
    models = np.array(c.models, dtype=object)
    issues: list[FitIssue] = []
    comps = _components(c)
    n_comp = comps.max() + 1 if m else 0
    counts = c.battles_per_model()
    if n_comp > 1:
        sizes = np.bincount(comps)
        groups = [tuple(models[comps == k]) for k in np.argsort(-sizes)]
        desc = "; ".join(f"{{{', '.join(map(str, g[:6]))}{', …' if len(g) > 6 else ''}}}" for g in groups)
        issues.append(FitIssue("disconnected", tuple(models[comps != np.argmax(sizes)]),
                               f"the comparison graph has {n_comp} disconnected components ({desc}): "
                               "Elo is only comparable within a component"))
    # MLE exists (no features) iff the directed "has beaten" graph is strongly
    # connected within each component.  Edge a→b when a took some win mass off b.
    win = c.s > 1e-12
    loss = (c.n - c.s) > 1e-12
    src = np.concatenate([c.i[win], c.j[loss]])
    dst = np.concatenate([c.j[win], c.i[loss]])
    directed = sparse.coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
    n_strong, strong = connected_components(directed, directed=True, connection="strong")
    well_defined = True
    if n_strong > n_comp:
        well_defined = False
        # Models whose strong component has no edge leaving (all losses) or entering (all wins).
        s_src, s_dst = strong[src], strong[dst]
        cross = s_src != s_dst
        has_out = np.zeros(n_strong, bool)
        has_in = np.zeros(n_strong, bool)
        has_out[s_src[cross]] = True
        has_in[s_dst[cross]] = True
        winners = [mdl for k in range(n_strong) if has_out[k] and not has_in[k] for mdl in models[strong == k]]
        losers = [mdl for k in range(n_strong) if has_in[k] and not has_out[k] for mdl in models[strong == k]]
        parts = []
        if winners:
            parts.append(f"never lost to the rest: {', '.join(map(str, winners[:8]))}")
        if losers:
            parts.append(f"never won against the rest: {', '.join(map(str, losers[:8]))}")
        issues.append(FitIssue("no_mle", tuple(winners + losers),
                               "the maximum-likelihood Elo does not exist (+/- infinity) because some models "
                               + "; ".join(parts or ["are separated by perfect records"])))
    thin = np.flatnonzero(counts < min_battles)
    if len(thin):
        issues.append(FitIssue("few_battles", tuple(models[thin]),
                               f"{len(thin)} model(s) have fewer than {min_battles} battles "
                               f"({', '.join(map(str, models[thin][:8]))}): their Elo is very uncertain"))
    return issues, comps, well_defined


def fit_bt(
    c: Comparisons,
    lam: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
    theta0: np.ndarray | None = None,
    fallback_lam: float = 0.01,
    min_battles: int = 10,
) -> BTFit:
    """Maximum-likelihood (or L2-penalised) Bradley–Terry fit by Newton's method.

    When ``lam == 0`` and the MLE does not exist (perfect records), the fit is
    made with ``fallback_lam`` instead and the result says so
    (``well_defined=False``, an issue naming the models): finite numbers,
    never a silent ±∞.
    """
    m, k = c.n_models, c.n_features
    issues, comps, well_defined = diagnose(c, min_battles=min_battles)
    eff_lam = lam
    if lam == 0 and not well_defined:
        eff_lam = fallback_lam
        issues.append(FitIssue("no_mle", (), f"shown: a regularised fit (λ = {fallback_lam}) so that every model gets "
                                             "a finite Elo; read those models' positions as bounds, not estimates"))
    gauge = _gauge(comps, m, k) if eff_lam == 0 else None
    beta = np.zeros(m + k)
    if theta0 is not None:
        beta[:m] = theta0
    total = max(float(c.n.sum()), 1.0)
    obj = loglik(c, beta, eff_lam)
    converged = False
    it = 0
    gnorm = float("inf")
    for it in range(1, max_iter + 1):
        g = gradient(c, beta, eff_lam)
        gnorm = float(np.max(np.abs(g))) / total if len(g) else 0.0
        if gnorm < tol:
            converged = True
            it -= 1
            break
        info = information(c, beta, eff_lam)
        if gauge is not None:
            info = info + gauge
        try:
            step = np.linalg.solve(info, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(info, g, rcond=None)[0]
        # Backtracking keeps the ascent monotone far from the optimum (large steps on
        # nearly separated data); near it the full Newton step is always taken.
        t = 1.0
        for _ in range(30):
            new = beta + t * step
            new_obj = loglik(c, new, eff_lam)
            if new_obj >= obj - 1e-12 * abs(obj):
                break
            t *= 0.5
        beta, obj = new, new_obj
        if np.max(np.abs(t * step)) < 1e-13:
            converged = True
            break
    if eff_lam == 0:
        beta[:m] = _centre(beta[:m], comps)
    else:
        # The ridge already centres the exact optimum; remove round-off.
        beta[:m] -= beta[:m].mean() if len(np.unique(comps)) == 1 else 0.0
    if not converged:
        issues.append(FitIssue("not_converged", (), f"Newton did not converge in {max_iter} iterations "
                                                    f"(gradient {gnorm:.2e})"))
    return BTFit(
        models=c.models, theta=beta[:m], coef=beta[m:], feature_names=c.feature_names, converged=converged,
        iterations=it, grad_norm=gnorm, lam=eff_lam, n_battles=c.battles_per_model(), issues=tuple(issues),
        well_defined=well_defined, loglik=obj, components=comps,
    )


def _centre(theta: np.ndarray, comps: np.ndarray) -> np.ndarray:
    out = theta.copy()
    for comp in np.unique(comps):
        idx = comps == comp
        out[idx] -= out[idx].mean()
    return out


# ------------------------------------------------------------ uncertainty
def _centring_projector(comps: np.ndarray, m: int, k: int) -> np.ndarray:
    p = np.eye(m + k)
    p -= _gauge(comps, m, k)
    return p


def sandwich_cov(c: Comparisons, fit: BTFit) -> np.ndarray:
    """Robust covariance ``H⁺ G H⁺`` of (centred θ, w) on the logit scale.

    ``G = Σ_battles w²(y − p)² a aᵀ`` computed exactly per cell from
    ``n, s, ss`` (unit weights: each battle's own gradient outer product).
    """
    m, k = c.n_models, c.n_features
    beta = np.concatenate([fit.theta, fit.coef])
    p = _sigmoid(_eta(c, beta))
    g2 = c.second_moment() - 2 * p * c.s + p * p * c.n
    g2 = np.maximum(g2, 0.0)
    meat = np.zeros((m + k, m + k))
    meat[:m, :m] = _laplacian(c.i, c.j, g2, m)
    if k:
        gx = g2[:, None] * c.x
        for f in range(k):
            col = np.bincount(c.i, weights=gx[:, f], minlength=m) - np.bincount(c.j, weights=gx[:, f], minlength=m)
            meat[:m, m + f] = col
            meat[m + f, :m] = col
        meat[m:, m:] = c.x.T @ gx
    info = information(c, beta, fit.lam)
    proj = _centring_projector(fit.components, m, k)
    if fit.lam == 0:
        bread = np.linalg.inv(info + _gauge(fit.components, m, k)) - _gauge(fit.components, m, k)
    else:
        bread = np.linalg.inv(info)
    cov = bread @ meat @ bread
    return proj @ cov @ proj.T


@dataclass(frozen=True)
class Intervals:
    method: str  # 'sandwich' | 'bootstrap'
    se_elo: np.ndarray
    lower_elo: np.ndarray
    upper_elo: np.ndarray
    coef_se: np.ndarray
    coef_lower: np.ndarray
    coef_upper: np.ndarray
    n_boot: int = 0
    samples_elo: np.ndarray | None = field(default=None, repr=False)


def sandwich_intervals(c: Comparisons, fit: BTFit) -> Intervals:
    cov = sandwich_cov(c, fit)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    m = c.n_models
    se_t, se_w = se[:m], se[m:]
    return Intervals(
        "sandwich", ELO_PER_LOGIT * se_t, fit.elo - Z95 * ELO_PER_LOGIT * se_t, fit.elo + Z95 * ELO_PER_LOGIT * se_t,
        se_w, fit.coef - Z95 * se_w, fit.coef + Z95 * se_w,
    )


def bootstrap(
    c: Comparisons,
    fit: BTFit,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = 250,
    tol: float = 1e-9,
) -> Intervals:
    """Battle bootstrap: multinomial redraw of the cells, all replicates solved together.

    Each replicate resamples the N battles with replacement, i.e. draws cell
    counts ~ Multinomial(N, n_cell / N).  Cells must hold identical battles
    (``comparisons_from_battles`` with ``aggregate=True`` or ``False``).
    Replicates are solved by a Newton iteration preconditioned with the full
    data's information matrix (they start at the point estimate and lie
    within sampling error of it), finished by exact Newton steps for any
    replicate that has not converged.
    """
    if not c.is_homogeneous():
        raise ValueError("the bootstrap needs cells of identical battles: build them with "
                         "comparisons_from_battles(..., aggregate=True) or per-outcome pair statistics")
    m, k = c.n_models, c.n_features
    total = c.n.sum()
    n_trials = int(round(total))
    probs = c.n / total
    y_cell = np.where(c.n > 0, c.s / np.where(c.n > 0, c.n, 1), 0.5)
    beta0 = np.concatenate([fit.theta, fit.coef])
    lam = fit.lam
    gauge = _gauge(fit.components, m, k) if lam == 0 else np.zeros((m + k, m + k))
    h0_inv = np.linalg.inv(information(c, beta0, lam) + gauge)
    # Replicates only change the cell counts; the likelihood needs them summed
    # per (pair, feature row), so the iterations run on those groups.
    group_key = c.i * m + c.j
    if k:
        group_key = group_key * (len(c.n) + 1) + pd.factorize(pd.MultiIndex.from_arrays(list(c.x.T)))[0]
    _, first, group = np.unique(group_key, return_index=True, return_inverse=True)
    n_groups = len(first)
    to_group = sparse.csr_matrix((np.ones(len(c.n)), (np.arange(len(c.n)), group)), shape=(len(c.n), n_groups))
    contiguous = bool(np.all(np.diff(group) >= 0))
    starts = np.flatnonzero(np.r_[True, np.diff(group) > 0]) if contiguous else None
    gi, gj = c.i[first], c.j[first]
    gx = None if c.x is None else c.x[first]
    rows = np.arange(n_groups)
    design = sparse.csr_matrix(
        (np.concatenate([np.ones(n_groups), -np.ones(n_groups)]),
         (np.concatenate([rows, rows]), np.concatenate([gi, gj]))), shape=(n_groups, m))
    if k:
        design = sparse.hstack([design, sparse.csr_matrix(gx)]).tocsr()
    design_t = design.T.tocsr()
    scale_w = total / n_trials  # cells carry their mean battle weight
    samples = np.empty((n_boot, m + k))
    # Exact multinomial draws dominate the cost; numpy releases the GIL while
    # drawing, so chunks are drawn on two threads ahead of the solver.  Each
    # chunk has its own child seed: the result does not depend on scheduling.
    sizes = [min(chunk, n_boot - start) for start in range(0, n_boot, chunk)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))

    def draw(job):
        size, child = job
        return np.random.default_rng(child).multinomial(n_trials, probs, size=size)

    pool = ThreadPoolExecutor(max_workers=2)
    draws = pool.map(draw, zip(sizes, seeds))
    done = 0
    for raw in draws:
        b = raw.shape[0]
        counts = raw.astype(float) * scale_w  # (b, cells)
        if contiguous:  # cells already sorted by group: a segmented sum, no sparse product
            weights = np.add.reduceat(counts, starts, axis=1)
            s = np.add.reduceat(counts * y_cell, starts, axis=1)
        else:
            weights = np.asarray(counts @ to_group)  # (b, groups)
            s = np.asarray((counts * y_cell) @ to_group)
        beta = np.tile(beta0, (b, 1))
        for _ in range(100):
            r = s - weights * _sigmoid(np.asarray(design @ beta.T).T)
            g = np.asarray(design_t @ r.T).T
            g[:, :m] -= lam * beta[:, :m]
            step = g @ h0_inv
            beta += step
            if np.max(np.abs(step)) < tol:
                break
        r = s - weights * _sigmoid(np.asarray(design @ beta.T).T)
        g = np.asarray(design_t @ r.T).T
        g[:, :m] -= lam * beta[:, :m]
        # exact Newton for any replicate the preconditioned iteration left behind
        for r_idx in np.flatnonzero(np.max(np.abs(g), axis=1) / total > 1e-8):
            rep = Comparisons(c.models, gi, gj, weights[r_idx], s[r_idx], gx, c.feature_names)
            polished = fit_bt(rep, lam=lam, theta0=beta[r_idx, :m], fallback_lam=max(lam, 1e-2))
            beta[r_idx] = np.concatenate([polished.theta, polished.coef])
        for row in range(b):
            beta[row, :m] = _centre(beta[row, :m], fit.components)
        samples[done:done + b] = beta
        done += b
        if progress:
            progress(done, n_boot)
    pool.shutdown()
    elo = ELO_BASE + ELO_PER_LOGIT * samples[:, :m]
    lo, hi = np.quantile(elo, [0.025, 0.975], axis=0)
    coef = samples[:, m:]
    if k:
        clo, chi = np.quantile(coef, [0.025, 0.975], axis=0)
        cse = coef.std(axis=0, ddof=1)
    else:
        clo = chi = cse = np.empty(0)
    return Intervals("bootstrap", elo.std(axis=0, ddof=1), lo, hi, cse, clo, chi, n_boot, elo)


@dataclass(frozen=True)
class LeaderboardFit:
    fit: BTFit
    intervals: Intervals | None

    def frame(self) -> pd.DataFrame:
        f = self.fit
        df = pd.DataFrame({"model": f.models, "elo": f.elo, "n_battles": f.n_battles})
        if self.intervals is not None:
            df["se"] = self.intervals.se_elo
            df["lower"] = self.intervals.lower_elo
            df["upper"] = self.intervals.upper_elo
        else:
            df["se"] = df["lower"] = df["upper"] = np.nan
        df["rank"] = df["elo"].rank(ascending=False, method="min").astype(int)
        return df.sort_values("elo", ascending=False).reset_index(drop=True)

    def coef_frame(self) -> pd.DataFrame:
        f, iv = self.fit, self.intervals
        df = pd.DataFrame({"feature": f.feature_names, "coef": f.coef})
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
) -> LeaderboardFit:
    """Fit plus 95% intervals (``ci`` = 'sandwich', 'bootstrap' or None)."""
    fit = fit_bt(c, lam=lam)
    if ci is None:
        return LeaderboardFit(fit, None)
    if ci == "sandwich":
        return LeaderboardFit(fit, sandwich_intervals(c, fit))
    if ci == "bootstrap":
        return LeaderboardFit(fit, bootstrap(c, fit, n_boot=n_boot, seed=seed, progress=progress))
    raise ValueError(f"unknown ci method {ci!r}: expected 'sandwich', 'bootstrap' or None")


def elo_from_theta(theta: np.ndarray) -> np.ndarray:
    return ELO_BASE + ELO_PER_LOGIT * (np.asarray(theta) - np.mean(theta))


__all__ = [
    "Comparisons", "comparisons_from_battles", "comparisons_from_pair_table", "BTFit", "FitIssue", "fit_bt",
    "loglik", "gradient", "information", "sandwich_cov", "sandwich_intervals", "bootstrap", "Intervals",
    "LeaderboardFit", "fit_with_ci", "diagnose",
]
