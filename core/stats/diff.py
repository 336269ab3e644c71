"""What changed between two snapshots of a leaderboard: per-model Elo change with an interval and a verdict.

Method
------
Each snapshot is fitted by maximum-likelihood Bradley–Terry (:func:`core.stats.bt.fit_bt`) on its own
units (human votes, or a judge's hard labels).  Both fits are put in one gauge: θ minus the mean θ of
the *anchor* models, the models that did not move among those present and well identified in both
snapshots, so that a model's move is not an artefact of the centring.  The change of model k is
``Δ_k = Elo_new(k) − Elo_old(k)``.

The movers are found one at a time: compare with the gauge on every model well identified in both;
if Holm (below) flags any at α, the one with the largest |z| is a mover; compare again on the units
without the movers' battles, gauged on the rest; repeat until nothing is flagged, or until one more
mover would leave fewer than half of the well-identified models (then what did not move is not
identified, and the movers found so far are kept).  A mover's Δ is then read from the full fits
anchored on the models that did not move (``anchors``); every other model's Δ from the comparison
without the movers' battles (its row's ``note`` gives the full fits' difference).  Both steps matter: a
single large mover drags every other model the other way in the all-model gauge (+250 Elo for one of
10 models: −25 for the nine others, ≈ 1.3 SE; unchanged models flagged in up to 19 of 40 planted
repetitions), and through its battles it moves its opponents relative to each other (PandaLM plus 386
votes that opt-7b wins: llama-7b −7, cerebras-gpt-6.7B +8 relative to the rest, flagged "moved").
Measured after: unchanged models flagged in 1–2 of 40 repetitions, the mover found in 40 of 40, and on
PandaLM only opt-7b moved (``tests/test_diff.py``).  The variances below are those of the final
comparisons (the selection of the movers is not accounted for).

The snapshots are usually not independent: the new one holds the old votes plus more.  Units are
matched across snapshots by identity (the caller's job, :mod:`core.app.diff`); a unit in both
snapshots enters both fits.  Var(Δ) comes from the *stacked sandwich* of the two fits, i.e. the joint
M-estimation of (θ_old, θ_new) on the union of units, with clusters (the votes on one battle) as the
independent sampling units:

    θ̂_s − θ_s ≈ H_s⁺ Σ_c r_s(c)·(e_a − e_b),      r_s(c) = Σ_{v ∈ c ∩ s} (y_v − p_s(a, b)),

so ``Δ̂ − Δ ≈ Σ_c [r_new(c)·u_new(a, b) − r_old(c)·u_old(a, b)]`` with ``u_s = A H_s⁺ (e_a − e_b)``
(A: the common gauge) and ``Cov(Δ̂) = Σ_c d_c d_cᵀ``.  A shared cluster contributes to both fits
with the same sign of residual, which is the positive covariance between the two Elos that makes Δ
tighter than two independent intervals would say; a cluster in one snapshot only contributes to one
term.  Nothing shared: the two sandwiches add (independent snapshots).  It is exact in the cluster
sums, needs no refits (a paired bootstrap would need hundreds) and is the same robust covariance the
single-snapshot human leaderboard uses (cluster by battle).

Per model: z = Δ / SE, two-sided normal p-value, 95% interval Δ ± 1.96·SE.  The verdict ("moved
up", "moved down", "no significant change") uses Holm's step-down adjustment of the p-values over
the models compared, at level α (family-wise error ≤ α); a model on which both snapshots hold the same
evidence (Δ = 0 with zero variance: identical snapshots) reads "no change".  A model whose Elo is undefined in either
snapshot (not an anchor: perfect record, a single battle, outside the main connected component) has
no interval and the verdict "undetermined".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.domain import ELO_BASE, Z95, elo_units, sigmoid

MOVED_UP = "moved up"
MOVED_DOWN = "moved down"
NO_CHANGE = "no significant change"
UNCHANGED = "no change"  # the two snapshots hold the same evidence on the model: Δ = 0 with no sampling error
UNDETERMINED = "undetermined"
# Below this (Elo) a change and its standard error are round-off: the snapshots agree exactly on the model.
EXACT = 1e-6


@dataclass(frozen=True)
class DiffRow:
    model: str
    elo_old: float
    elo_new: float
    rank_old: int
    rank_new: int
    delta: float
    se: float
    delta_lower: float
    delta_upper: float
    p_value: float
    p_holm: float
    verdict: str
    note: str = ""  # how Δ was measured when it is not Elo_new − Elo_old of the full fits


@dataclass(frozen=True)
class Diff:
    rows: tuple[DiffRow, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    alpha: float
    n_old: int
    n_new: int
    n_shared: int
    anchors: tuple[str, ...] = ()  # the models whose mean Elo is 1500 in both snapshots (the reference)


@dataclass(frozen=True)
class _Gauged:
    """Per model (NaN where undefined): both Elos, Δ, its SE and p-values, in one anchoring."""

    elo_o: np.ndarray
    elo_n: np.ndarray
    delta: np.ndarray
    se: np.ndarray
    same: np.ndarray
    p: np.ndarray
    p_adj: np.ndarray


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN entries stay NaN and do not count."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if not len(ok):
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    k = len(order)
    adj = np.maximum.accumulate((k - np.arange(k)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def _normal_p(z: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return 2.0 * ndtr(-np.abs(z))


def _fit(a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ (per model of ``models``, NaN when absent), H⁺ (centred inverse information), well-identified mask."""
    from core.stats.bt import comparisons_from_battles, fit_bt, information

    present = sorted(set(a.tolist()) | set(b.tolist()))
    c = comparisons_from_battles(a, b, y, models=present)
    fit = fit_bt(c)
    info = information(c, fit.beta, fit.lam)[: len(present), : len(present)]
    hplus = np.linalg.pinv(info, hermitian=True)
    anchors = np.ones(len(present), bool) if fit.anchors is None else np.asarray(fit.anchors, bool)
    good = anchors & (np.asarray(fit.components) == 0)
    idx = {m: k for k, m in enumerate(models)}
    pos = np.array([idx[m] for m in present], dtype=np.int64)
    theta = np.full(len(models), np.nan)
    theta[pos] = fit.theta
    hp = np.zeros((len(models), len(models)))
    hp[np.ix_(pos, pos)] = hplus
    ok = np.zeros(len(models), bool)
    ok[pos] = good
    return theta, hp, ok


def _ranks(elo: np.ndarray) -> np.ndarray:
    """1 + the number of models with a strictly higher Elo (NaN Elo: rank 0)."""
    finite = np.isfinite(elo)
    vals = np.sort(-elo[finite])
    r = 1 + np.searchsorted(vals, -elo, side="left")
    return np.where(finite, r, 0)


@dataclass(frozen=True)
class _Stage:
    in_o: np.ndarray
    in_n: np.ndarray
    both: np.ndarray
    comparable: np.ndarray
    anchor: np.ndarray
    g: _Gauged


def _stage(
    a: np.ndarray,
    b: np.ndarray,
    yy: np.ndarray,
    cluster: np.ndarray,
    old: np.ndarray,
    new: np.ndarray,
    models: list[str],
    exclude: np.ndarray,
) -> _Stage:
    """Both fits on these units, and Δ with its SE and p-values anchored on the mean of the models well
    identified in both except ``exclude`` (module docstring)."""
    idx = {x: k for k, x in enumerate(models)}
    ia = np.array([idx[x] for x in a], dtype=np.int64)
    ib = np.array([idx[x] for x in b], dtype=np.int64)
    th_o, hp_o, ok_o = _fit(a[old], b[old], yy[old], models)
    th_n, hp_n, ok_n = _fit(a[new], b[new], yy[new], models)
    in_o = np.isfinite(th_o)
    in_n = np.isfinite(th_n)
    base = ok_o & ok_n
    if not base.any():
        raise ValueError("no model is well identified in both snapshots: nothing to compare")
    both = in_o & in_n
    comparable = both & base

    # Cluster sums of residuals per snapshot, then per pair of models: Σr_n², Σr_n·r_o, Σr_o².
    p_o = sigmoid(np.nan_to_num(th_o[ia] - th_o[ib]))
    p_n = sigmoid(np.nan_to_num(th_n[ia] - th_n[ib]))
    r_o = np.where(old, yy - p_o, 0.0)
    r_n = np.where(new, yy - p_n, 0.0)
    _, cl = np.unique(cluster, return_inverse=True)
    n_cl = int(cl.max()) + 1
    cr_o = np.bincount(cl, weights=r_o, minlength=n_cl)
    cr_n = np.bincount(cl, weights=r_n, minlength=n_cl)
    first = np.unique(cl, return_index=True)[1]
    ca, cb = ia[first], ib[first]
    m = len(models)
    pair_key, pair_of = np.unique(ca * m + cb, return_inverse=True)
    pa, pb = pair_key // m, pair_key % m
    s_oo = np.bincount(pair_of, weights=cr_o * cr_o)
    s_on = np.bincount(pair_of, weights=cr_o * cr_n)
    s_nn = np.bincount(pair_of, weights=cr_n * cr_n)
    d_o = hp_o[:, pa] - hp_o[:, pb]  # H⁺(e_a − e_b) per pair: models × pairs
    d_n = hp_n[:, pa] - hp_n[:, pb]

    def in_gauge(anchor: np.ndarray) -> _Gauged:
        """Elo, Δ, SE and p-values with both fits anchored on the mean θ of ``anchor``."""
        w = anchor / anchor.sum()
        elo_o = np.where(in_o, ELO_BASE + elo_units(th_o - np.nansum(w * np.nan_to_num(th_o))), np.nan)
        elo_n = np.where(in_n, ELO_BASE + elo_units(th_n - np.nansum(w * np.nan_to_num(th_n))), np.nan)
        # u_s = A H_s⁺ (e_a − e_b) with A = I − 1wᵀ: θ − mean over the anchors
        u_o = (d_o - np.outer(np.ones(m), w @ d_o)).T  # pairs × models
        u_n = (d_n - np.outer(np.ones(m), w @ d_n)).T
        var = (
            np.einsum("p,pk,pk->k", s_nn, u_n, u_n)
            - 2.0 * np.einsum("p,pk,pk->k", s_on, u_n, u_o)
            + np.einsum("p,pk,pk->k", s_oo, u_o, u_o)
        )
        delta = elo_n - elo_o
        se = np.where(comparable, elo_units(np.sqrt(np.maximum(var, 0.0))), np.nan)
        # Identical evidence (the same units in both snapshots, or none changed around the model) gives Δ = 0
        # with zero variance: no change, certainly, rather than an undefined z.
        same = comparable & (se < EXACT) & (np.abs(np.nan_to_num(delta)) < EXACT)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(comparable & (se > 0) & ~same, delta / se, np.nan)
        p = np.where(np.isfinite(z), _normal_p(z), np.nan)
        p_adj = np.where(same, 1.0, holm(p))  # nothing to test where nothing changed: not in Holm's family
        return _Gauged(elo_o, elo_n, delta, se, same, np.where(same, 1.0, p), p_adj)

    anchor = base & ~exclude
    g = in_gauge(anchor if anchor.any() else base)
    return _Stage(in_o, in_n, both, comparable, anchor, g)


def snapshot_diff(
    model_a: np.ndarray,
    model_b: np.ndarray,
    y: np.ndarray,
    cluster: np.ndarray,
    in_old: np.ndarray,
    in_new: np.ndarray,
    alpha: float = 0.05,
) -> Diff:
    """The change of every model's Bradley–Terry Elo between two snapshots of one pool of units.

    One entry per unit of the union of both snapshots: its sides, its target y ∈ [0, 1], its cluster
    (units of one battle; a cluster must have one (model_a, model_b)), and whether it is in the old
    and/or the new snapshot.  See the module docstring for the method.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    a = np.asarray(model_a, dtype=object)
    b = np.asarray(model_b, dtype=object)
    yy = np.asarray(y, dtype=float)
    old = np.asarray(in_old, dtype=bool)
    new = np.asarray(in_new, dtype=bool)
    if not old.any() or not new.any():
        raise ValueError("each snapshot needs at least one comparison")
    models = sorted(set(a.tolist()) | set(b.tolist()))
    idx = {m: k for k, m in enumerate(models)}
    cl = np.asarray(cluster, dtype=object).astype(str)
    ia = np.array([idx[x] for x in a], dtype=np.int64)
    ib = np.array([idx[x] for x in b], dtype=np.int64)
    movers = np.zeros(len(models), bool)
    full = _stage(a, b, yy, cl, old, new, models, movers)
    n_base = int(full.comparable.sum())
    # The movers, one at a time (module docstring): the model Holm flags with the largest |z|, then the
    # comparison again on the units without the movers' battles, until nothing more moves.
    cur = full
    while True:
        flagged = cur.comparable & (cur.g.p_adj <= alpha)
        if not flagged.any() or 2 * (n_base - int(movers.sum()) - 1) < n_base:
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            strength = np.where(flagged, np.abs(cur.g.delta) / cur.g.se, -np.inf)
        trial = movers.copy()
        trial[int(np.argmax(strength))] = True
        keep = ~trial[ia] & ~trial[ib]
        if not (keep & old).any() or not (keep & new).any():
            break
        try:
            nxt = _stage(a[keep], b[keep], yy[keep], cl[keep], old[keep], new[keep], models, trial)
        except ValueError:  # nothing well identified is left: stop with the movers found so far
            break
        movers, cur = trial, nxt
    in_o, in_n, both, comparable = full.in_o, full.in_n, full.both, full.comparable
    notes = np.full(len(models), "", dtype=object)
    if movers.any():
        # The movers' Δ: the full fits, anchored on the models that did not move.
        ref = _stage(a, b, yy, cl, old, new, models, movers)
        anchor, g = ref.anchor, ref.g
        elo_o, elo_n, delta, se, same, p = g.elo_o, g.elo_n, g.delta.copy(), g.se.copy(), g.same.copy(), g.p.copy()
        names = ", ".join(models[k] for k in np.flatnonzero(movers))
        for k in np.flatnonzero(comparable & ~movers & cur.comparable):
            # The others: on the units without the movers, whose change passes through their battles.
            notes[k] = (
                f"Δ on the units without {names} (moved); the full fits differ by {delta[k]:+.1f}, the movers' "
                "change passed on through their battles"
            )
            delta[k], se[k], same[k], p[k] = cur.g.delta[k], cur.g.se[k], cur.g.same[k], cur.g.p[k]
    else:
        anchor, g = full.anchor, full.g
        elo_o, elo_n, delta, se, same, p = g.elo_o, g.elo_n, g.delta, g.se, g.same, g.p
    p_adj = np.where(same, 1.0, holm(np.where(same, np.nan, p)))
    p = np.where(same, 1.0, p)
    rank_o, rank_n = _ranks(elo_o), _ranks(elo_n)
    rows = []
    for k in np.flatnonzero(both):
        if same[k]:
            verdict = UNCHANGED
        elif not np.isfinite(p_adj[k]):
            verdict = UNDETERMINED
        elif p_adj[k] <= alpha:
            verdict = MOVED_UP if delta[k] > 0 else MOVED_DOWN
        else:
            verdict = NO_CHANGE
        rows.append(
            DiffRow(
                model=models[k],
                elo_old=float(elo_o[k]),
                elo_new=float(elo_n[k]),
                rank_old=int(rank_o[k]),
                rank_new=int(rank_n[k]),
                delta=float(delta[k]),
                se=float(se[k]),
                delta_lower=float(delta[k] - Z95 * se[k]),
                delta_upper=float(delta[k] + Z95 * se[k]),
                p_value=float(p[k]),
                p_holm=float(p_adj[k]),
                verdict=verdict,
                note=str(notes[k]),
            )
        )
    rows.sort(key=lambda r: (r.rank_new, r.model))
    return Diff(
        rows=tuple(rows),
        added=tuple(models[k] for k in np.flatnonzero(in_n & ~in_o)),
        removed=tuple(models[k] for k in np.flatnonzero(in_o & ~in_n)),
        alpha=alpha,
        n_old=int(old.sum()),
        n_new=int(new.sum()),
        n_shared=int((old & new).sum()),
        anchors=tuple(models[k] for k in np.flatnonzero(anchor)),
    )
