"""One leaderboard per rating method, straight from the store.

``leaderboard(store, dataset, method, ...)`` is what the CLI's
``leaderboard`` command and the dashboard call: it picks the right store
query (pair statistics aggregated in SQL for the Bradley–Terry methods,
per-vote rows for the sequential and annotator-aware ones), runs the fit and
returns a :class:`LeaderboardResult` with the same ``frame`` columns for
every method: model, elo, lower, upper, se, rank, n_battles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

METHODS = ("human", "hard", "soft", "online-elo", "am-elo")
FRAME_COLUMNS = ["model", "elo", "lower", "upper", "se", "rank", "n_battles"]


class LeaderboardError(ValueError):
    """The requested leaderboard cannot be computed (and why)."""


@dataclass(frozen=True)
class LeaderboardResult:
    method: str
    frame: pd.DataFrame
    n_battles: int
    converged: bool = True
    iterations: int = 0
    tau: float | None = None
    ci: str | None = None
    issues: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "n_battles": self.n_battles,
            "converged": self.converged,
            "iterations": self.iterations,
            "tau": self.tau,
            "ci": self.ci,
            "issues": list(self.issues),
            "models": self.frame[FRAME_COLUMNS].to_dict("records"),
        }


def _ranked(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.sort_values("elo", ascending=False).reset_index(drop=True)
    out["rank"] = out["elo"].rank(ascending=False, method="min").astype(int)
    for c in FRAME_COLUMNS:
        if c not in out:
            out[c] = np.nan
    out["n_battles"] = out["n_battles"].round().astype(int)
    return out[FRAME_COLUMNS + [c for c in out.columns if c not in FRAME_COLUMNS]]


def fitted_tau(store, dataset: str, judge: str):
    """The τ maximum-likelihood fit on the judge's human-decisive battles."""
    from core.calibration import fit_tau

    bf = store.battle_frame(dataset, judge)
    return fit_tau(bf["gap"].to_numpy(dtype=float), bf["human_y"].to_numpy(dtype=float))


def bradley_terry_leaderboard(
    store,
    dataset: str,
    target: str,
    judge: str | None = None,
    tau: float | None = None,
    ci: str | None = "sandwich",
    n_boot: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> LeaderboardResult:
    from core import bt

    pairs = store.pair_stats(dataset, target, judge=judge, tau=tau)
    if pairs.empty:
        what = {"human": "human votes", "hard": f"judgments by {judge}", "soft": f"rubric scores by {judge}"}[target]
        raise LeaderboardError(f"dataset {dataset!r} has no {what}")
    comps = bt.comparisons_from_pair_table(pairs)
    if ci == "bootstrap" and target != "hard":
        # Soft/human targets need per-battle resampling: hand over battle rows.
        bf = store.battle_frame(dataset, judge, tau=tau if target == "soft" else None)
        col = {"human": "human_y", "soft": "soft_y"}[target]
        bf = bf[bf[col].notna()]
        comps = bt.comparisons_from_battles(bf["model_a"].to_numpy(), bf["model_b"].to_numpy(),
                                            bf[col].to_numpy(dtype=float), aggregate=False)
    res = bt.fit_with_ci(comps, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    fit = res.fit
    frame = res.frame()
    issues = tuple(str(i) for i in fit.issues)
    return LeaderboardResult(
        method={"human": "human", "hard": "hard", "soft": "soft"}[target], frame=_ranked(frame),
        n_battles=int(round(float(pairs["n"].sum()))), converged=bool(fit.converged), iterations=int(fit.iterations),
        tau=tau, ci=ci, issues=issues,
    )


def leaderboard(
    store,
    dataset: str,
    method: str,
    judge: str | None = None,
    tau: float | None = None,
    ci: str | None = "sandwich",
    n_boot: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> LeaderboardResult:
    """The leaderboard of ``dataset`` under ``method`` (see :data:`METHODS`)."""
    if method not in METHODS:
        raise LeaderboardError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if method in ("hard", "soft") and judge is None:
        raise LeaderboardError(f"method {method!r} needs --judge")
    if method == "soft" and tau is None:
        fit = fitted_tau(store, dataset, judge)
        if fit.tau is None or not np.isfinite(fit.tau):
            raise LeaderboardError(f"τ cannot be fitted for judge {judge!r} on {dataset!r}: {fit.reason}; pass --tau")
        tau = float(fit.tau)
    if method in ("human", "hard", "soft"):
        return bradley_terry_leaderboard(store, dataset, method, judge=judge, tau=tau, ci=ci, n_boot=n_boot,
                                         seed=seed, progress=progress)
    votes = store.votes_frame(dataset)
    if votes.empty:
        raise LeaderboardError(f"dataset {dataset!r} has no human votes: {method} rates human votes")
    if method == "online-elo":
        from core.ratings import online_elo_shuffles

        study = online_elo_shuffles(votes, n_shuffles=max(n_boot, 2) if ci else 100, seed=seed)
        f = study.frame.rename(columns={"mean": "elo"})
        f["se"] = f["sd"]
        f["lower"] = f["elo"] - 1.96 * f["sd"]
        f["upper"] = f["elo"] + 1.96 * f["sd"]
        counts = pd.concat([votes["model_a"], votes["model_b"]]).value_counts()
        f["n_battles"] = f["model"].map(counts).fillna(0).astype(int)
        return LeaderboardResult(method=method, frame=_ranked(f), n_battles=len(votes), ci="shuffles",
                                 extra={"n_shuffles": study.n_shuffles})
    from core.amelo import fit_amelo

    res = fit_amelo(votes)
    f = res.models.copy()
    counts = pd.concat([votes["model_a"], votes["model_b"]]).value_counts()
    f["n_battles"] = f["model"].map(counts).fillna(0).astype(int)
    return LeaderboardResult(method=method, frame=_ranked(f), n_battles=len(votes),
                             converged=bool(res.converged), iterations=int(res.iterations), ci=None,
                             extra={"n_annotators": int(len(res.annotators)),
                                    "n_anomalous": int(res.annotators["anomalous"].sum())})
