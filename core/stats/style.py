"""Style-controlled ratings: Bradley–Terry with style covariates next to the plain fit (METHODS §9).

The model is P(a ≻ b) = σ(θ_a − θ_b + βᵀx), x the style differences of the
battle's two answers (``core.stats.bias.style_features``: standardised
differences of log length, headers, bold, list items).  θ is the
style-controlled strength: what a model would win with answers of equal
style.  The raw fit is the same rows without x.  Both get 95% sandwich
intervals; rows that share a ``cluster`` id (the votes on one battle) are one
cluster, so the intervals are cluster-robust by battle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from core.stats import bt

FRAME_COLUMNS = (
    "model",
    "elo",
    "lower",
    "upper",
    "rank",
    "elo_raw",
    "lower_raw",
    "upper_raw",
    "rank_raw",
    "rank_change",
    "position",
    "position_raw",
    "n_battles",
)


@dataclass(frozen=True)
class StyleControlled:
    """A style-controlled leaderboard next to the raw one, from the same rows.

    ``frame``: model, elo, lower, upper, rank (style-controlled, 95% sandwich),
    elo_raw, lower_raw, upper_raw, rank_raw (no covariates), rank_change =
    position_raw − position (places by Elo; positive: the model climbs once style is controlled),
    n_battles, interval_note; best controlled Elo first.
    ``coefficients``: feature, coef (logit per standard deviation of the
    feature difference), se, lower, upper.
    """

    frame: pd.DataFrame
    coefficients: pd.DataFrame
    n_rows: int  # outcomes fitted (votes or labels)
    n_clusters: int  # independent units (battles when votes are clustered)
    issues: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "n_rows": self.n_rows,
            "n_clusters": self.n_clusters,
            "issues": list(self.issues),
            "models": self.frame[[c for c in FRAME_COLUMNS if c in self.frame]].to_dict("records"),
            "coefficients": self.coefficients.to_dict("records"),
        }


def _cells(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    x: np.ndarray | None,
    names: Sequence[str],
    cluster: np.ndarray | None,
) -> bt.Comparisons:
    """One cell per row, or per cluster (rows of one battle) with the cluster sums of the robust sandwich."""
    c = bt.comparisons_from_battles(
        a, b, y, weight=w, x=x, feature_names=names if x is not None else (), aggregate=False
    )
    if cluster is None:
        return c
    key, first, inv = np.unique(np.asarray(cluster), return_index=True, return_inverse=True)
    k = len(key)
    if not (np.array_equal(c.i, c.i[first][inv]) and np.array_equal(c.j, c.j[first][inv])):
        raise ValueError("rows of one cluster must be the same battle (same model_a and model_b)")
    if c.x is not None and not np.allclose(c.x, c.x[first][inv], equal_nan=True):
        raise ValueError("rows of one cluster must share their style features")
    n = np.bincount(inv, weights=c.n, minlength=k)
    s = np.bincount(inv, weights=c.s, minlength=k)
    ss = np.bincount(inv, weights=c.ss, minlength=k) if c.ss is not None else None
    return bt.Comparisons(
        c.models,
        c.i[first],
        c.j[first],
        n,
        s,
        None if c.x is None else c.x[first],
        c.feature_names,
        ss,
        np.ones(k),
        np.column_stack([s * s, n * s, n * n]),
    )


def _rank(elo: np.ndarray) -> np.ndarray:
    return pd.Series(elo).rank(ascending=False, method="min").fillna(0).astype(int).to_numpy()


def _tied_rank(lower: np.ndarray, upper: np.ndarray, position: pd.Series) -> np.ndarray:
    """Rank with ties on the intervals where there are intervals; the position where there are none."""
    from core.domain import rank_with_ties

    if not np.any(np.isfinite(lower) & np.isfinite(upper)):
        return position.to_numpy()
    return rank_with_ties(lower, upper)


def style_controlled_ratings(
    model_a: ArrayLike,
    model_b: ArrayLike,
    y: ArrayLike,
    x: np.ndarray,
    feature_names: Sequence[str],
    weights: ArrayLike | None = None,
    *,
    cluster: ArrayLike | None = None,
    lam: float = 0.0,
) -> StyleControlled:
    """Bradley–Terry with the style covariates ``x`` (rows × features) and without, on the same rows.

    ``y``: P(a ≻ b) per row (1, 0, 0.5 for votes or hard labels); rows with a
    non-finite y or feature are dropped (``issues`` says how many).
    ``cluster``: a battle id per row; rows sharing it (several votes on one
    battle) are summed into one cell, so the sandwich is cluster-robust.
    ``lam``: ridge penalty (0: the MLE, with the fit's own fallback when it
    does not exist).
    """
    a = np.asarray(model_a, dtype=object)
    b = np.asarray(model_b, dtype=object)
    yy = np.asarray(y, dtype=float)
    xx = np.asarray(x, dtype=float)
    if xx.ndim != 2 or xx.shape[0] != len(yy) or xx.shape[1] != len(feature_names):
        raise ValueError("x must be a (rows, features) matrix with one name per feature")
    if not (len(a) == len(b) == len(yy)):
        raise ValueError("model_a, model_b and y need one entry per row")
    w = np.ones(len(yy)) if weights is None else np.asarray(weights, dtype=float)
    cl = None if cluster is None else np.asarray(cluster)
    ok = np.isfinite(yy) & np.all(np.isfinite(xx), axis=1) & np.isfinite(w) & (w > 0)
    issues = []
    if (~ok).any():
        issues.append(f"{int((~ok).sum()):,} of {len(yy):,} rows without an outcome or style features were left out")
    a, b, yy, w, xx = a[ok], b[ok], yy[ok], w[ok], xx[ok]
    cl = None if cl is None else cl[ok]
    if len(yy) == 0:
        raise ValueError("no row has both an outcome and style features")
    names = tuple(feature_names)
    models = tuple(sorted(set(a.tolist()) | set(b.tolist())))
    ctl_cells = _cells(a, b, yy, w, xx, names, cl)
    raw_cells = _cells(a, b, yy, w, None, (), cl)
    ctl = bt.fit_with_ci(ctl_cells, ci="sandwich", lam=lam)
    raw = bt.fit_with_ci(raw_cells, ci="sandwich", lam=lam)
    for label, f in (("style-controlled", ctl.fit), ("raw", raw.fit)):
        if not f.converged:  # METHODS §10: never a number from a fit that did not converge
            raise ValueError(f"the {label} fit did not converge in {f.iterations} iterations: no leaderboard")
        issues.extend(f"{label} fit: {issue}" for issue in f.issues)
    cf = ctl.frame().set_index("model")
    rf = raw.frame().set_index("model")
    out = pd.DataFrame({"model": list(models)})
    out["elo"] = out["model"].map(cf["elo"])
    out["lower"] = out["model"].map(cf["lower"])
    out["upper"] = out["model"].map(cf["upper"])
    out["elo_raw"] = out["model"].map(rf["elo"])
    out["lower_raw"] = out["model"].map(rf["lower"])
    out["upper_raw"] = out["model"].map(rf["upper"])
    # rank: METHODS §10's, with ties on the 95% intervals (as every leaderboard); position: by Elo alone, which
    # is what "the places each model moves" counts
    out["position"] = _rank(out["elo"].to_numpy())
    out["position_raw"] = _rank(out["elo_raw"].to_numpy())
    out["rank"] = _tied_rank(out["lower"].to_numpy(float), out["upper"].to_numpy(float), out["position"])
    out["rank_raw"] = _tied_rank(
        out["lower_raw"].to_numpy(float), out["upper_raw"].to_numpy(float), out["position_raw"]
    )
    out["rank_change"] = out["position_raw"] - out["position"]
    per_model = np.bincount(ctl_cells.i, minlength=len(ctl_cells.models)) + np.bincount(
        ctl_cells.j, minlength=len(ctl_cells.models)
    )
    out["n_battles"] = out["model"].map(dict(zip(ctl_cells.models, per_model.tolist()))).astype(int)
    out["interval_note"] = out["model"].map(cf["interval_note"]).fillna("")
    out = out.sort_values("elo", ascending=False, kind="stable").reset_index(drop=True)
    return StyleControlled(
        frame=out,
        coefficients=ctl.coef_frame(),
        n_rows=len(yy),
        n_clusters=len(ctl_cells.n),
        issues=tuple(issues),
    )
