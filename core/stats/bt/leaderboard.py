"""The leaderboard fit: a fit with its intervals as a table, and the Bradley–Terry ``Ratings`` of a pair table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.domain import Ratings, ranked
from core.stats import bt as _bt
from core.stats.bt.data import Comparisons, comparisons_from_battles, comparisons_from_pair_table
from core.stats.bt.diagnostics import DEFAULT_MIN_BATTLES, separated_models
from core.stats.bt.fit import BTFit, fit_bt
from core.stats.bt.sandwich import Intervals, sandwich_intervals

if TYPE_CHECKING:
    import pandas as pd


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
        # position: pandas' rank(ascending=False, method="min"), 1 + the number of better models; rank: with
        # ties on the 95% intervals where there are intervals (METHODS §10, core.domain.rank_with_ties)
        cols["position"] = 1 + np.searchsorted(np.sort(-elo), -elo, side="left").astype(np.int64)
        lo, hi = np.asarray(cols["lower"], dtype=float), np.asarray(cols["upper"], dtype=float)
        if iv is None or not np.any(np.isfinite(lo) & np.isfinite(hi)):
            cols["rank"] = cols["position"]
        else:
            with np.errstate(invalid="ignore"):
                cols["rank"] = 1 + (lo[None, :] > hi[:, None]).sum(axis=1).astype(np.int64)
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
    return LeaderboardFit(fit, _bt.bootstrap(c, fit, n_boot=n_boot, seed=seed, progress=progress, kind=bootstrap_kind))


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
    comps = _comparisons(pairs, battles, ci)
    res = fit_with_ci(comps, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    issues = [str(i) for i in res.fit.issues]
    # No maximum-likelihood Elo (a perfect record, a group that never lost to the rest): the likelihood's
    # supremum sends the separated models to ±∞, where their battles' terms no longer depend on anyone else's
    # Elo, so the others' limiting MLE is the MLE on the battles among them (METHODS §1).  Drop and refit until
    # it exists, instead of showing the ridge fallback's numbers for everyone.
    apart: set[str] = set()
    while any(issue.kind == "no_mle" for issue in res.fit.issues):
        separated = separated_models(comps) - apart
        rest = pairs[~pairs["model_a"].isin(apart | separated) & ~pairs["model_b"].isin(apart | separated)]
        if not separated or rest.empty:
            break
        apart |= separated
        kept = None if battles is None else battles[~battles["model_a"].isin(apart) & ~battles["model_b"].isin(apart)]
        comps = _comparisons(rest, kept, ci)
        res = fit_with_ci(comps, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    frame = ranked(res.frame())
    if apart:
        issues = [i for i in issues if not i.startswith("shown: a ridge")]
        issues += [str(i) for i in res.fit.issues if i.kind not in ("no_mle", "regularised") and str(i) not in issues]
        issues.append(
            f"The other models' Elo is the maximum-likelihood fit on the battles among them (the limit as the "
            f"{len(apart)} set-apart model{'s' if len(apart) != 1 else ''}' Elo goes to ±∞); their ranks start at 1"
        )
        frame = set_apart(_with_rows_for(frame, apart, pairs), apart, pairs)
    elif any(issue.kind == "no_mle" for issue in res.fit.issues):
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


def _comparisons(pairs: pd.DataFrame, battles: pd.DataFrame | None, ci: str | None) -> Comparisons:
    """The fit's input: the pair table, or single battles where a bootstrap of soft or human targets resamples
    them."""
    if ci == "bootstrap" and battles is not None:
        return comparisons_from_battles(
            battles["model_a"].to_numpy(),
            battles["model_b"].to_numpy(),
            battles["y"].to_numpy(dtype=float),
            weight=battles["w"].to_numpy(dtype=float) if "w" in battles else None,
            aggregate=False,
        )
    return comparisons_from_pair_table(pairs)


def _with_rows_for(frame: pd.DataFrame, models: set[str], pairs: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a row for each of ``models`` it lacks (no Elo), and every model's count of the fit's
    comparisons (``pairs["n"]``) over all its battles: a refit without the set-apart models' battles still
    reports what each model played."""
    import pandas as pd

    per_model = pd.concat([pairs["n"].groupby(pairs["model_a"]).sum(), pairs["n"].groupby(pairs["model_b"]).sum()])
    per_model = per_model.groupby(level=0).sum()
    missing = sorted(models - set(frame["model"].astype(str)))
    extra = pd.DataFrame({"model": missing}).reindex(columns=frame.columns)
    if "interval_note" in extra:
        extra["interval_note"] = ""
    out = pd.concat([frame, extra], ignore_index=True)
    out["n_battles"] = out["model"].map(per_model).fillna(0).round().astype(int)
    return out


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
    for col in ("rank", "position"):
        if col in out:
            out[col] = out[col].astype("Int64")
            out.loc[apart, col] = pd.NA
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
