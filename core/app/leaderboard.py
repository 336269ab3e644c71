"""Leaderboards: one rating method from the store, and the joined human / Hard / Soft view.

``ratings(store, dataset, method, ...)`` serves the CLI's ``leaderboard``
command: the method's registry entry (``core.methods.RATING_METHODS``) says
whether its fit reads the SQL-aggregated pair table or the per-vote rows.
The Leaderboard page composes :func:`human_ratings`, :func:`judge_elo`,
:func:`heldout` and :func:`leaderboard_view`; pages cache the expensive ones
per (dataset, judge, data version) so that a slider move recomputes only
what depends on it:

==============  =======================================  ==========================
page            expensive, cached per (dataset, judge)    cheap, per slider value
==============  =======================================  ==========================
Leaderboard     battle frame, τ fit, leave-one-out table  Soft-Elo at τ, q̂ at α
==============  =======================================  ==========================
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.domain import Ratings
from core.methods import RATING_METHODS, resolve
from core.stats.calibration import fit_tau
from core.stats.conformal import Quantile, deploy, min_pool
from core.stats.heldout import HeldoutResult, Method, full_judge_elo, leave_one_model_out
from core.store import Store


def ratings(
    store: Store,
    dataset: str,
    method: str,
    judge: str | None = None,
    tau: float | None = None,
    ci: str | None = "sandwich",
    n_boot: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Ratings | Unavailable:
    """The leaderboard of ``dataset`` under a registered rating method.

    Raises ``ValueError`` for an unknown method, a missing judge or a bad τ;
    returns :class:`Unavailable` when the dataset has nothing the method rates.
    """
    if method not in RATING_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(RATING_METHODS)}")
    m = RATING_METHODS[method]
    if m.needs_judge and judge is None:
        raise ValueError(f"method {method!r} needs --judge")
    if tau is not None and not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"τ must be a finite positive number, got {tau}")
    if m.needs_tau and tau is None:
        assert judge is not None
        bf = store.battle_frame(dataset, judge)
        fit = fit_tau(bf["gap"].to_numpy(dtype=float), bf["human_y"].to_numpy(dtype=float))
        if fit.tau is None or not np.isfinite(fit.tau):
            return Unavailable(f"τ cannot be fitted for judge {judge!r} on {dataset!r}: {fit.reason}; pass --tau")
        tau = float(fit.tau)
    fit_fn = resolve(m.fit)
    if m.data == "pairs":
        assert m.target is not None
        pairs = store.pair_stats(dataset, m.target, judge=judge, tau=tau)
        if pairs.empty:
            what = {"human": "human votes", "hard": f"judgments by {judge}", "soft": f"rubric scores by {judge}"}
            return Unavailable(f"dataset {dataset!r} has no {what[m.target]}")
        battles = None
        if ci == "bootstrap" and m.target != "hard":
            # Soft and human targets are resampled battle by battle.
            bf = store.battle_frame(dataset, judge, tau=tau if m.target == "soft" else None)
            col = "soft_y" if m.target == "soft" else "human_y"
            bf = bf[bf[col].notna()]
            battles = pd.DataFrame({"model_a": bf["model_a"], "model_b": bf["model_b"], "y": bf[col]})
        res: Ratings = fit_fn(pairs, battles, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    else:
        votes = store.votes_frame(dataset)
        if votes.empty:
            return Unavailable(f"dataset {dataset!r} has no human votes: {method} rates human votes")
        res = fit_fn(votes, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    return dataclasses.replace(res, method=method, tau=tau if m.needs_tau else None)


def human_ratings(store: Store, dataset: str) -> Ratings | Unavailable:
    """Human Bradley–Terry Elo with sandwich 95% intervals."""
    return ratings(store, dataset, "human", ci="sandwich")


HARD_SOFT = (Method("hard", "hard"), Method("soft", "soft"))


def heldout(
    frame: pd.DataFrame,
    n_boot: int = 20,
    seed: int = 42,
    all_methods: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> HeldoutResult | Unavailable:
    """The leave-one-model-out table (expensive: cache it per dataset, judge and data version).

    ``all_methods`` adds the label-smoothing baselines (the Residuals page).
    """
    from core.stats.heldout import DEFAULT_METHODS

    if frame["human_y"].notna().sum() == 0:
        return Unavailable("no battle has a human vote: the held-out protocol compares judge Elo with human Elo")
    methods = DEFAULT_METHODS if all_methods else HARD_SOFT
    return leave_one_model_out(frame, methods, n_boot=n_boot, seed=seed, progress=progress)


def judge_elo(frame: pd.DataFrame, method: str, tau: float | None) -> pd.DataFrame:
    """Deployment-mode judge Elo and bootstrap SE for every model (cheap: one fit).

    The SE is the same kind the conformal quantile was calibrated with in the
    leave-one-out table, which is what makes q̂·SE an interval for human Elo.
    """
    return full_judge_elo(frame, Method(method, method), tau)


@dataclass(frozen=True)
class LeaderboardView:
    table: pd.DataFrame  # model, human_elo(+ci), hard_elo, soft_elo, interval columns, integer ranks
    quantile: Quantile | None
    interval_method: str
    alpha: float
    tau: float | None
    note: str | None

    @property
    def has_intervals(self) -> bool:
        return self.quantile is not None and self.quantile.finite and "interval_lower" in self.table

    def coverage_statement(self) -> str | None:
        """The sentence that says what the bars promise (None without finite intervals)."""
        if not self.has_intervals:
            return None
        width = self.table["interval_upper"] - self.table["interval_lower"]
        q = self.quantile
        assert q is not None
        return (
            f"Each bar is a split-conformal interval for the model's **human** Elo: with α = {self.alpha:.2f}, "
            f"it covers the human Elo of a new model with probability ≥ {1 - self.alpha:.0%} (marginally, "
            f"models exchangeable). Calibrated on {q.n} held-out models with τ refitted per fold; "
            f"q̂ = {q.qhat:.2f} SEs, median width {float(np.nanmedian(width)):.0f} Elo."
        )


def leaderboard_view(
    human: pd.DataFrame | None,
    hard: pd.DataFrame,
    soft: pd.DataFrame | None,
    held: HeldoutResult | Unavailable | None,
    alpha: float,
    tau: float | None,
    interval_method: str = "soft",
) -> LeaderboardView:
    """Join the three leaderboards and give each model its conformal interval for its human Elo.

    Only q̂ depends on α (one quantile of the cached leave-one-out scores).
    """
    t = hard[["model", "elo", "se", "n_battles"]].rename(
        columns={"elo": "hard_elo", "se": "hard_se", "n_battles": "n_judged"}
    )
    if soft is not None:
        t = t.merge(
            soft[["model", "elo", "se"]].rename(columns={"elo": "soft_elo", "se": "soft_se"}), on="model", how="outer"
        )
    if human is not None:
        t = t.merge(
            human[["model", "elo", "lower", "upper"]].rename(
                columns={"elo": "human_elo", "lower": "human_lower", "upper": "human_upper"}
            ),
            on="model",
            how="outer",
        )
    note, q = None, None
    if held is None or isinstance(held, Unavailable) or held.table.empty:
        note = (
            "No human votes in this dataset, so no conformal intervals: they are calibrated on models that "
            "have both human and judge battles (leave-one-model-out residuals)."
        )
    elif f"{interval_method}_elo" not in t:
        note = f"No {interval_method} judge Elo (the judge has no rubric scores): no intervals."
    else:
        base = t[["model", f"{interval_method}_elo", f"{interval_method}_se"]].rename(
            columns={f"{interval_method}_elo": "elo", f"{interval_method}_se": "se"}
        )
        dep, q = deploy(held.table[f"{interval_method}_resid"], held.table[f"{interval_method}_se"], base, alpha)
        t = t.merge(
            dep[["model", "lower", "upper"]].rename(columns={"lower": "interval_lower", "upper": "interval_upper"}),
            on="model",
        )
        if not q.finite:
            note = f"{q.reason}. Raise α to at least {smallest_alpha(q.n):.2f} or add models with human votes."
    for col in ("human_elo", "hard_elo", "soft_elo"):
        if col in t:
            t[col.replace("_elo", "_rank")] = t[col].rank(ascending=False, method="min").astype("Int64")
    sort_col = "soft_elo" if "soft_elo" in t else "hard_elo"
    t = t.sort_values(sort_col, ascending=False, na_position="last").reset_index(drop=True)
    return LeaderboardView(t, q, interval_method, alpha, tau, note)


def smallest_alpha(n_calibration: int, step: float = 0.01) -> float:
    """The smallest α on a ``step`` grid whose conformal quantile is finite with this many calibration models."""
    if n_calibration < 1:
        return math.nan
    a = step
    while min_pool(a) > n_calibration and a < 1:
        a = round(a + step, 10)
    return a
