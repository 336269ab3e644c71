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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.domain import MIN_SLICE_BATTLES, Z95, Ratings, Slice, sigmoid, slice_label
from core.methods import RATING_METHODS, resolve
from core.stats.calibration import TauFit, fit_tau
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
    turns: tuple[int, int | None] | None = None,
    where: Slice = (),
) -> Ratings | Unavailable:
    """The leaderboard of ``dataset`` under a registered rating method.

    ``turns`` (lo, hi): only battles whose conversation turn is in [lo, hi] (hi None: no upper bound),
    for the pair-table methods with sandwich or no intervals.  ``where``: only the battles of that slice;
    a slice with fewer than ``MIN_SLICE_BATTLES`` battles carrying the method's target is Unavailable
    ("too few") rather than a leaderboard.
    Raises ``ValueError`` for an unknown method, a missing judge or a bad τ;
    returns :class:`Unavailable` when the dataset has nothing the method rates.
    """
    if method not in RATING_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(RATING_METHODS)}")
    m = RATING_METHODS[method]
    if turns is not None and (m.data != "pairs" or ci == "bootstrap"):
        raise ValueError("a per-turn leaderboard is available for human, hard and soft with sandwich intervals")
    if m.needs_judge and judge is None:
        raise ValueError(f"method {method!r} needs --judge")
    check_slice(store, dataset, where)
    if tau is not None and not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"τ must be a finite positive number, got {tau}")
    if m.needs_tau and tau is None:
        assert judge is not None
        bf = store.battle_frame(dataset, judge, where=where)
        fit = fit_tau(bf["gap"].to_numpy(dtype=float), bf["human_y"].to_numpy(dtype=float))
        if fit.tau is None or not np.isfinite(fit.tau):
            return Unavailable(f"τ cannot be fitted for judge {judge!r} on {dataset!r}: {fit.reason}; pass --tau")
        tau = float(fit.tau)
    fit_fn = resolve(m.fit)
    if m.data == "pairs":
        assert m.target is not None
        pairs = store.pair_stats(dataset, m.target, judge=judge, tau=tau, turns=turns, where=where)
        what = {"human": "human votes", "hard": f"judgments by {judge}", "soft": f"rubric scores by {judge}"}
        if pairs.empty and not where:
            return Unavailable(f"dataset {dataset!r} has no {what[m.target]}")
        if where:
            n = int(round(pairs["battles" if "battles" in pairs else "n"].sum())) if len(pairs) else 0
            if n < MIN_SLICE_BATTLES:
                return too_few(where, n, what[m.target])
        battles = None
        if ci == "bootstrap" and m.target != "hard":
            # Soft and human targets are resampled battle by battle.
            bf = store.battle_frame(dataset, judge, tau=tau if m.target == "soft" else None, where=where)
            col = "soft_y" if m.target == "soft" else "human_y"
            bf = bf[bf[col].notna()]
            # A battle with several votes is resampled whole, weighted by its votes (the point fit counts each).
            weight = bf["n_votes"].astype(float) if m.target == "human" else 1.0
            battles = pd.DataFrame({"model_a": bf["model_a"], "model_b": bf["model_b"], "y": bf[col], "w": weight})
        res: Ratings = fit_fn(pairs, battles, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
        if "battles" in pairs:
            res = _votes_and_battles(res, pairs)
    else:
        votes = store.votes_frame(dataset, where=where)
        if votes.empty and not where:
            return Unavailable(f"dataset {dataset!r} has no human votes: {method} rates human votes")
        if where and votes["battle_id"].nunique() < MIN_SLICE_BATTLES:
            return too_few(where, int(votes["battle_id"].nunique()), "human votes")
        res = fit_fn(votes, ci=ci, n_boot=n_boot, seed=seed, progress=progress)
    return dataclasses.replace(res, method=method, tau=tau if m.needs_tau else None)


def slice_values(store: Store, dataset: str) -> pd.DataFrame:
    """The slices a leaderboard of ``dataset`` can be drawn on: key, value, n_battles, n_votes, and ``enough``
    (at least ``MIN_SLICE_BATTLES`` battles; a smaller one says "too few" when chosen)."""
    values = store.slice_values(dataset)
    return values.assign(enough=values["n_battles"] >= MIN_SLICE_BATTLES)


def check_slice(store: Store, dataset: str, where: Slice) -> None:
    """Raise ``ValueError`` for a slice key no battle of ``dataset`` carries (a misspelt key would otherwise
    read as an empty slice)."""
    if not where:
        return
    known = sorted(set(store.slice_values(dataset)["key"]))
    unknown = [k for k, _ in where if k not in known]
    if unknown:
        raise ValueError(
            f"no battle of dataset {dataset!r} has a slice key {unknown[0]!r} (keys: {', '.join(known) or 'none'})"
        )


def too_few(where: Slice, n: int, what: str) -> Unavailable:
    """What a slice too small for a leaderboard shows in place of one."""
    return Unavailable(
        f"the slice {slice_label(where)} has {n:,} battle{'s' if n != 1 else ''} with {what}: too few for a "
        f"leaderboard (at least {MIN_SLICE_BATTLES})"
    )


def _votes_and_battles(res: Ratings, pairs: pd.DataFrame) -> Ratings:
    """A fit of human votes counts votes; say so (``n_votes``) and count the battles voted on apart."""
    ends = [pairs[[side, "battles"]].rename(columns={side: "model"}) for side in ("model_a", "model_b")]
    per_model = pd.concat(ends).groupby("model")["battles"].sum()
    frame = res.frame.copy()
    frame["n_votes"] = frame["n_battles"]
    frame["n_battles"] = frame["model"].map(per_model).fillna(0).round().astype(int)
    return dataclasses.replace(res, frame=frame, n_battles=int(round(pairs["battles"].sum())), n_votes=res.n_battles)


@dataclass(frozen=True)
class TurnGroup:
    """Battles whose conversation turn is in [lo, hi] (hi None: and beyond)."""

    label: str
    lo: int
    hi: int | None
    n_battles: int


def turn_groups(store: Store, dataset: str, separate: int = 3) -> list[TurnGroup]:
    """The turn groups of a multi-turn dataset: turns 1…``separate`` each, then the rest together.

    Empty when the battles have fewer than two distinct known turns (nothing to compare).
    """
    counts = store.turn_counts(dataset)
    if len(counts) < 2:
        return []
    groups = []
    for turn, n in zip(counts["turn"].astype(int), counts["n"].astype(int)):
        if turn <= separate:
            groups.append(TurnGroup(f"turn {turn}", turn, turn, n))
    rest = counts[counts["turn"] > separate]
    if len(rest):
        lo = int(rest["turn"].min())
        groups.append(TurnGroup(f"turns ≥ {lo}", lo, None, int(rest["n"].sum())))
    return groups


def ratings_by_turn(
    store: Store, dataset: str, method: str, judge: str | None = None, tau: float | None = None
) -> pd.DataFrame | Unavailable:
    """One leaderboard per turn group, long format: group, n_battles (of the group), model, elo, lower, upper,
    n (the model's battles in the group).  Sandwich 95% intervals, each group fitted on its own."""
    groups = turn_groups(store, dataset)
    if not groups:
        return Unavailable(f"dataset {dataset!r} has battles of one conversation turn only")
    parts = []
    for g in groups:
        res = ratings(store, dataset, method, judge=judge, tau=tau, ci="sandwich", turns=(g.lo, g.hi))
        if isinstance(res, Unavailable):
            continue
        f = res.frame[["model", "elo", "lower", "upper", "n_battles"]].rename(columns={"n_battles": "n"})
        parts.append(f.assign(group=g.label, group_battles=g.n_battles))
    if not parts:
        return Unavailable(f"no turn of dataset {dataset!r} has what {method} rates")
    return pd.concat(parts, ignore_index=True)


def turn_table(by_turn: pd.DataFrame) -> pd.DataFrame:
    """Models as rows, one "Elo [lower, upper]" column per turn group (n battles in the header), ordered by
    the first group's Elo; a model absent from a group shows a dash."""
    groups = list(dict.fromkeys(by_turn["group"]))
    sizes = by_turn.drop_duplicates("group").set_index("group")["group_battles"]
    first = by_turn[by_turn["group"] == groups[0]].set_index("model")["elo"]
    models = sorted(set(by_turn["model"]), key=lambda m: -first.get(m, -np.inf))
    out = pd.DataFrame({"model": models})
    for g in groups:
        part = by_turn[by_turn["group"] == g].set_index("model").reindex(models)
        text = [
            "–"
            if not np.isfinite(e)
            else f"{e:.0f} [{lo:.0f}, {hi:.0f}]"
            if np.isfinite(lo) and np.isfinite(hi)
            else f"{e:.0f}"
            for e, lo, hi in zip(part["elo"].astype(float), part["lower"].astype(float), part["upper"].astype(float))
        ]
        out[f"{g} ({int(sizes[g]):,} battles)"] = text
    return out


def human_ratings(store: Store, dataset: str) -> Ratings | Unavailable:
    """Human Bradley–Terry Elo with sandwich 95% intervals."""
    return ratings(store, dataset, "human", ci="sandwich")


HARD_SOFT = (Method("hard", "hard"), Method("soft", "soft"))
SOFT_ONLY = (Method("soft", "soft"),)


def heldout(
    frame: pd.DataFrame,
    n_boot: int = 20,
    seed: int = 42,
    all_methods: bool = False,
    tau: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeldoutResult | Unavailable:
    """The leave-one-model-out table (expensive: cache it per dataset, judge, τ and data version).

    ``tau=None``: τ refitted on every fold (the procedure behind intervals at
    the fitted τ), Hard- and Soft-Elo.  A given ``tau`` is held fixed in every
    fold (the procedure behind intervals drawn at that τ); only Soft-Elo
    depends on τ, so only it is computed.  ``all_methods`` adds the
    label-smoothing baselines (the Residuals page).
    """
    from core.stats.heldout import DEFAULT_METHODS

    if frame["human_y"].notna().sum() == 0:
        return Unavailable("no battle has a human vote: the held-out protocol compares judge Elo with human Elo")
    if tau is not None:
        methods: tuple[Method, ...] = SOFT_ONLY
    else:
        methods = DEFAULT_METHODS if all_methods else HARD_SOFT
    return leave_one_model_out(frame, methods, n_boot=n_boot, seed=seed, progress=progress, tau=tau)


def heldout_of(
    store: Store,
    dataset: str,
    judge: str,
    all_methods: bool = False,
    tau: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeldoutResult | Unavailable:
    """:func:`heldout` of a judge's battle frame, read from the store (the persisted form's key)."""
    return heldout(store.battle_frame(dataset, judge), all_methods=all_methods, tau=tau, progress=progress)


@dataclass(frozen=True)
class JudgeCoverage:
    """What a judge's battles carry: rubric score gaps (Soft-Elo) and human votes (intervals, τ)."""

    has_gap: bool
    has_votes: bool


def judge_coverage(store: Store, dataset: str, judge: str) -> JudgeCoverage:
    frame = store.battle_frame(dataset, judge)
    return JudgeCoverage(bool(frame["gap"].notna().any()), bool(frame["human_y"].notna().any()))


def judge_elo_of(store: Store, dataset: str, judge: str, method: str, tau: float | None) -> pd.DataFrame:
    """:func:`judge_elo` of a judge's battle frame, read from the store."""
    return judge_elo(store.battle_frame(dataset, judge), method, tau)


def judge_elo(frame: pd.DataFrame, method: str, tau: float | None) -> pd.DataFrame:
    """Deployment-mode judge Elo and bootstrap SE for every model (cheap: one fit).

    The SE is the same kind the conformal quantile was calibrated with in the
    leave-one-out table, which is what makes q̂·SE an interval for human Elo.
    """
    return full_judge_elo(frame, Method(method, method), tau)


# ------------------------------------------------------------------ τ grid
TAU_BOUNDS = (0.02, 5.0)


def tau_grid(fitted: float | None, points: int = 49) -> list[float]:
    """The τ values the slider offers: log-spaced over ``TAU_BOUNDS`` (3 significant digits) plus the fitted τ.

    A log scale puts as many steps between 0.1 and 1 as between 1 and 10,
    where a linear track spends most of its length on τ that no judge fits.
    """
    lo, hi = np.log(TAU_BOUNDS[0]), np.log(TAU_BOUNDS[1])
    grid = {float(f"{v:.3g}") for v in np.exp(np.linspace(lo, hi, points))}
    if fitted is not None and math.isfinite(fitted) and fitted > 0:
        grid.add(round(float(fitted), 3))
    return sorted(grid)


def snap_tau(tau: float, grid: list[float]) -> float:
    """The grid value nearest to ``tau`` on the log scale."""
    return min(grid, key=lambda g: abs(math.log(g) - math.log(tau)))


# --------------------------------------------------------------- the view
def rank_with_ties(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """LMArena's rank: 1 + the number of models whose interval lies entirely above this one's (METHODS §10).

    Without an interval (NaN bounds) a model is compared by its bounds as
    given; NaN comparisons count as "not above", so such a model ranks high
    and its rank should be read with its missing interval.
    """
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    with np.errstate(invalid="ignore"):
        above = lo[None, :] > hi[:, None]
    return 1 + above.sum(axis=1)


def decimals_for(half_width: float) -> int:
    """Decimals an Elo value deserves given its interval half-width (sensible precision)."""
    if not math.isfinite(half_width) or half_width >= 5:
        return 0
    return 1 if half_width >= 0.5 else 2


PRIMARY_LABELS = {
    "human": "human Elo",
    "predicted": "predicted human Elo",
    "hard": "Hard-Elo",
    "soft": "Soft-Elo",
}


@dataclass(frozen=True)
class TauReference:
    """The fitted τ a chosen τ is read against: its value and 95% profile interval (None bounds: the interval
    reaches a search bound), or why τ cannot be fitted."""

    fitted: float | None
    lower: float | None = None
    upper: float | None = None
    reason: str | None = None

    @classmethod
    def of(cls, fit: TauFit) -> TauReference:
        return cls(fit.tau, fit.lower, fit.upper, fit.reason) if fit.ok else cls(None, reason=fit.reason)

    def contains(self, tau: float) -> bool:
        """``tau`` lies in the fitted τ's 95% profile interval (a missing bound is the search bound)."""
        if self.fitted is None:
            return False
        lo = self.lower if self.lower is not None else 0.0
        hi = self.upper if self.upper is not None else math.inf
        return lo <= tau <= hi


@dataclass(frozen=True)
class LeaderboardView:
    """One row per model, ordered by the primary score, with every method's Elo and interval.

    ``primary``: which score ranks the table: the human Elo when the dataset
    has human votes, else the judge's predicted human Elo with its conformal
    interval, else the judge's own Elo with its bootstrap interval.
    Columns: model, family, rank (with ties, on ``primary_lower``/``_upper``),
    primary, primary_lower, primary_upper, and per method ``<m>_elo``,
    ``<m>_lower``, ``<m>_upper`` (human: 95% sandwich; hard/soft: ±Z95·bootstrap
    SE; ``interval_lower``/``_upper``: the conformal interval for human Elo),
    ``<m>_rank``, ``n_votes`` (human votes on the model's battles), ``n_judged``.
    """

    table: pd.DataFrame
    primary: str
    quantile: Quantile | None
    interval_method: str | None
    alpha: float
    tau: float | None
    tau_fitted: bool
    note: str | None
    tau_reference: TauReference | None = None

    @property
    def tau_far(self) -> bool:
        """Soft-Elo is drawn at a chosen τ outside the fitted τ's 95% interval, or τ cannot be fitted at all."""
        if self.tau is None or self.tau_fitted or self.interval_method != "soft":
            return False
        return self.tau_reference is None or not self.tau_reference.contains(self.tau)

    def tau_note(self) -> str | None:
        """What the first screen says beside the headline when Soft-Elo is drawn at a τ that is not the fitted one:
        "τ = 0.02 (fitted 0.49, 95% interval 0.41–0.58)"; None at the fitted τ or without Soft-Elo."""
        if self.tau is None or self.tau_fitted or "soft_elo" not in self.table:
            return None
        ref = self.tau_reference
        if ref is None or ref.fitted is None:
            why = f": {ref.reason}" if ref is not None and ref.reason else ""
            return f"τ = {self.tau:.3g}, chosen (τ cannot be fitted{why})"
        lo = "…" if ref.lower is None else f"{ref.lower:.3g}"
        hi = "…" if ref.upper is None else f"{ref.upper:.3g}"
        where = "inside" if ref.contains(self.tau) else "outside"
        return f"τ = {self.tau:.3g}, chosen: {where} the fitted τ's 95% interval (fitted {ref.fitted:.3g}, {lo}–{hi})"

    def drawn_coverage(self) -> tuple[int, int] | None:
        """(models whose human Elo lies inside their conformal bar, models with both), for the models drawn."""
        if not self.has_intervals or "human_elo" not in self.table:
            return None
        t = self.table
        both = t["human_elo"].notna() & t["interval_lower"].notna() & t["interval_upper"].notna()
        inside = both & (t["human_elo"] >= t["interval_lower"]) & (t["human_elo"] <= t["interval_upper"])
        return int(inside.sum()), int(both.sum())

    def coverage_level(self) -> str:
        """'success' (green) only where the promise is the one the page is about: intervals at the fitted τ or
        within its 95% interval; 'warning' at a τ far from the fit."""
        return "warning" if self.tau_far else "success"

    @property
    def has_intervals(self) -> bool:
        return self.quantile is not None and self.quantile.finite and "interval_lower" in self.table

    def set_apart_statement(self, limit: int = 10) -> str | None:
        """ "Not ranked: a (undefined: won all its 1 battle); …" — None when every model has its human Elo."""
        apart = self.set_apart()
        if not apart:
            return None
        named = "; ".join(f"{m} ({why})" for m, why in apart[:limit])
        more = f"; and {len(apart) - limit} more (the table lists them last)" if len(apart) > limit else ""
        models = f"{len(apart)} model{'s' if len(apart) != 1 else ''}"
        return (
            f"Not ranked, with no {PRIMARY_LABELS[self.primary]}: {models} whose "
            f"maximum-likelihood Elo does not exist (a penalised fit would give a number that only reflects the "
            f"penalty): {named}{more}."
        )

    def set_apart(self) -> list[tuple[str, str]]:
        """(model, why) for the models with no primary score because its maximum-likelihood value does not exist
        (a perfect record in the human votes, or in the judge's labels where the judge's Elo ranks the table)."""
        method = self.interval_method if self.primary == "predicted" else self.primary
        col = f"{method}_elo_note"
        if col not in self.table:
            return []
        t = self.table[self.table[col].fillna("").astype(bool)]
        return list(zip(t["model"].astype(str), t[col].astype(str)))

    @property
    def tied_at_top(self) -> list[str]:
        """The models at rank 1: none of them is statistically below another model."""
        return [str(m) for m in self.table.loc[self.table["rank"] == 1, "model"]]

    def headline(self) -> str | None:
        """ "#1 helix-34b — 1588 (95% CI 1571–1606); statistically tied with 2 models" (None without rows)."""
        if self.table.empty or not np.isfinite(self.table["primary"].iloc[0]):
            return None
        top = self.table.iloc[0]
        level = "95% CI" if self.primary != "predicted" else f"{1 - self.alpha:.0%} conformal interval"
        score = f"{top['primary']:.0f}"
        if np.isfinite(top["primary_lower"]) and np.isfinite(top["primary_upper"]):
            score += f" ({level} {top['primary_lower']:.0f}–{top['primary_upper']:.0f})"
        others = [m for m in self.tied_at_top if m != top["model"]]
        tie = (
            f"statistically tied with {len(others)} model{'s' if len(others) != 1 else ''}"
            if others
            else "ahead of every other model beyond its interval"
        )
        if not (np.isfinite(top["primary_lower"]) and np.isfinite(top["primary_upper"])):
            tie = "no interval, so ties cannot be judged"
        return f"#1 {top['model']} — {PRIMARY_LABELS[self.primary]} {score}; {tie}"

    def coverage_statement(self) -> str | None:
        """The sentence that says what the conformal bars promise, and which procedure sized them."""
        if not self.has_intervals:
            return None
        width = self.table["interval_upper"] - self.table["interval_lower"]
        q = self.quantile
        assert q is not None
        label = "Soft-Elo" if self.interval_method == "soft" else "Hard-Elo"
        if self.interval_method != "soft":
            procedure = "leave-one-model-out Hard-Elo residuals"
        elif self.tau_fitted:
            procedure = (
                f"leave-one-model-out residuals with τ refitted on every fold, as the bars are drawn at the "
                f"fitted τ = {self.tau:.3g}"
            )
        else:
            procedure = (
                f"leave-one-model-out residuals with τ fixed at {self.tau:.3g} in every fold, the τ the bars are "
                "drawn at"
            )
        text = (
            f"Each bar is a split-conformal interval for the model's **human** Elo around its {label}: with "
            f"α = {self.alpha:.2f}, it covers the human Elo of a new model with probability ≥ {1 - self.alpha:.0%} "
            f"(marginally, models exchangeable). Calibrated on {q.n} held-out models by {procedure}; "
            f"q̂ = {q.qhat:.2f} SEs, median width {float(np.nanmedian(width)):.0f} Elo."
        )
        drawn = self.drawn_coverage()
        if drawn is not None and drawn[1]:
            k, n = drawn
            text += (
                f" Here {k} of the {n} models with a human Elo ({k / n:.0%}) have it inside their bar (these models "
                "also calibrated the bars, so this is a check, not the promise)."
            )
        if self.tau_far:
            ref = self.tau_reference
            where = (
                "τ cannot be fitted on this data, so nothing says the soft targets are calibrated at this τ"
                if ref is None or ref.fitted is None
                else f"the human votes reject it (outside the fitted τ's 95% interval; fitted {ref.fitted:.3g})"
            )
            text = (
                f"**τ = {self.tau:.3g} is not a τ the data supports: {where}.** The promise below is about the "
                "procedure run at this τ, on average over new models; the Soft-Elo the bars surround is fitted to "
                "soft targets at this τ. " + text
            )
        return text


def _judge_columns(t: pd.DataFrame, name: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    if frame is None:
        return t
    notes = ["elo_note"] if "elo_note" in frame else []
    j = frame[["model", "elo", "se", "n_battles", *notes]].rename(
        columns={
            "elo": f"{name}_elo",
            "se": f"{name}_se",
            "n_battles": f"n_judged_{name}",
            "elo_note": f"{name}_elo_note",
        }
    )
    j[f"{name}_lower"] = j[f"{name}_elo"] - Z95 * j[f"{name}_se"]
    j[f"{name}_upper"] = j[f"{name}_elo"] + Z95 * j[f"{name}_se"]
    return t.merge(j, on="model", how="outer")


def leaderboard_view(
    human: pd.DataFrame | None,
    hard: pd.DataFrame | None,
    soft: pd.DataFrame | None,
    held: HeldoutResult | Unavailable | None,
    alpha: float,
    tau: float | None,
    tau_fitted: bool = True,
    models: pd.DataFrame | None = None,
    tau_reference: TauReference | None = None,
) -> LeaderboardView:
    """Join the leaderboards and give each model its conformal interval for its human Elo.

    ``human``: ratings frame (model, elo, lower, upper, n_battles); ``hard`` /
    ``soft``: judge Elo (model, elo, se, n_battles); ``held``: the leave-one-out
    table of the procedure that matches ``tau`` (refitted per fold when
    ``tau_fitted``, else τ fixed); ``models``: model, family.  Only q̂
    depends on α (one quantile of the cached leave-one-out scores).
    """
    names: set[str] = set()
    for f in (human, hard, soft):
        if f is not None:
            names |= set(f["model"])
    t = pd.DataFrame({"model": sorted(names)})
    if models is not None and "family" in models:
        t = t.merge(models[["model", "family"]], on="model", how="left")
    else:
        t["family"] = None
    if human is not None:
        votes = "n_votes" if "n_votes" in human else "n_battles"
        notes = [c for c in ("interval_note", "elo_note") if c in human]
        h = human[["model", "elo", "lower", "upper", votes, *notes]].rename(
            columns={
                "elo": "human_elo",
                "lower": "human_lower",
                "upper": "human_upper",
                votes: "n_votes",
                "interval_note": "human_note",
                "elo_note": "human_elo_note",
            }
        )
        t = t.merge(h, on="model", how="left")
    t = _judge_columns(t, "hard", hard)
    t = _judge_columns(t, "soft", soft)
    judged = [c for c in ("n_judged_soft", "n_judged_hard") if c in t]
    if judged:
        t["n_judged"] = t[judged].max(axis=1)
        t = t.drop(columns=judged)
    interval_method = "soft" if soft is not None else ("hard" if hard is not None else None)
    note, q = None, None
    if interval_method is None:
        pass
    elif held is None or isinstance(held, Unavailable) or held.table.empty:
        note = (
            "No human votes in this dataset, so no conformal intervals: they are calibrated on models that "
            "have both human and judge battles (leave-one-model-out residuals)."
            if human is None
            else "No model has enough battles with both a human vote and a judge label: no conformal intervals."
        )
    elif f"{interval_method}_resid" not in held.table:
        note = f"No {interval_method} judge Elo in the held-out table: no intervals."
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
            remedy = (
                f"Raise α to at least {smallest_alpha(q.n):.2f} or add models with human votes"
                if q.n >= 1
                else "No held-out model has both a residual and a standard error to calibrate on"
            )
            note = f"{q.reason}. {remedy}."
    for m in ("human", "hard", "soft"):
        if f"{m}_elo" in t:
            t[f"{m}_rank"] = rank_with_ties(t[f"{m}_lower"].to_numpy(float), t[f"{m}_upper"].to_numpy(float))
            t.loc[t[f"{m}_elo"].isna(), f"{m}_rank"] = np.nan
            t[f"{m}_rank"] = t[f"{m}_rank"].astype("Int64")
    if "human_elo" in t and t["human_elo"].notna().any():
        primary, lo, hi = "human", "human_lower", "human_upper"
    elif "interval_lower" in t and q is not None and q.finite:
        primary, lo, hi = "predicted", "interval_lower", "interval_upper"
    elif interval_method is not None:
        primary, lo, hi = interval_method, f"{interval_method}_lower", f"{interval_method}_upper"
    else:
        primary, lo, hi = "human", "human_lower", "human_upper"
    value = f"{interval_method}_elo" if primary == "predicted" else f"{primary}_elo"
    t["primary"] = t.get(value, np.nan)
    t["primary_lower"] = t.get(lo, np.nan)
    t["primary_upper"] = t.get(hi, np.nan)
    t["rank"] = rank_with_ties(t["primary_lower"].to_numpy(float), t["primary_upper"].to_numpy(float))
    shift = _rank_change(t, interval_method)
    if shift is not None:
        t["rank_change"] = shift
    t = t.sort_values(["primary", "model"], ascending=[False, True], na_position="last").reset_index(drop=True)
    t.loc[t["primary"].isna(), "rank"] = pd.NA
    t["rank"] = t["rank"].astype("Int64")
    return LeaderboardView(t, primary, q, interval_method, alpha, tau, tau_fitted, note, tau_reference)


def smallest_alpha(n_calibration: int, step: float = 0.01) -> float:
    """The smallest α on a ``step`` grid whose conformal quantile is finite with this many calibration models."""
    if n_calibration < 1:
        return math.nan
    a = step
    while min_pool(a) > n_calibration and a < 1:
        a = round(a + step, 10)
    return a


# ---------------------------------------------------------- table views
def select_rows(
    table: pd.DataFrame, query: str = "", pinned: tuple[str, ...] = (), top_n: int | None = None
) -> pd.DataFrame:
    """The rows to show: those matching ``query`` (model or family, case-insensitive), the first ``top_n``
    of them, and every pinned model wherever it ranks (flagged in a ``pinned`` column)."""
    t = table.assign(pinned=table["model"].isin(pinned))
    q = query.strip().lower()
    if q:
        family = t["family"].fillna("").astype(str).str.lower()
        match = t["model"].astype(str).str.lower().str.contains(q, regex=False) | family.str.contains(q, regex=False)
    else:
        match = pd.Series(True, index=t.index)
    keep = match.copy()
    if top_n is not None:
        keep &= match.cumsum() <= top_n
    return t[keep | t["pinned"]].reset_index(drop=True)


def interval_tag(note: object) -> str:
    """The short reason in an interval note ('single battle; perfect record: the MLE is ±∞…' → 'perfect record')."""
    if not isinstance(note, str) or not note:
        return ""
    return note.rsplit("; ", 1)[-1].split(":", 1)[0]


def _interval_text(lower: pd.Series, upper: pd.Series, decimals: int, notes: pd.Series | None = None) -> pd.Series:
    """'lo–hi'; an undefined interval says why when the fit gave a reason, a stated bound is marked."""

    def one(lo: float, hi: float, note: object) -> str:
        if isinstance(note, str) and note.startswith("undefined: "):
            return note  # the estimate itself is undefined: say why in full
        tag = interval_tag(note)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            if np.isinf(lo) or np.isinf(hi):
                return "unbounded"
            return f"undefined ({tag})" if tag else "—"
        text = f"{lo:.{decimals}f}–{hi:.{decimals}f}"
        return f"{text} ({tag})" if tag else text

    notes_ = notes if notes is not None else pd.Series([""] * len(lower), index=lower.index)
    values = zip(lower.astype(float), upper.astype(float), notes_)
    return pd.Series([one(a, b, n) for a, b, n in values], index=lower.index)


def _rounded(values: pd.Series, decimals: int) -> pd.Series:
    """Values at ``decimals`` places; whole numbers as integers (so that no table prints "1590.0")."""
    v = values.astype(float).round(decimals)
    return v.astype("Int64") if decimals == 0 else v


def _decimals(view: LeaderboardView, method: str) -> int:
    lo, hi = view.table.get(f"{method}_lower"), view.table.get(f"{method}_upper")
    if lo is None or hi is None:
        return 0
    half = (hi.astype(float) - lo.astype(float)) / 2
    half = half[np.isfinite(half)]
    return decimals_for(float(half.median())) if len(half) else 0


def display_table(view: LeaderboardView, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """The LMArena-style table with readable column names, values rounded to what their intervals support.

    Rank (with ties) · Model · Organisation · the primary score and its
    interval · votes · Soft- and Hard-Elo with their 95% intervals · the
    conformal interval for human Elo · how far the judge moves each model.
    """
    t = view.table if rows is None else rows
    out = pd.DataFrame({"Rank": t["rank"]})
    out["Model"] = np.where(t.get("pinned", False), "📌 " + t["model"].astype(str), t["model"].astype(str))
    if t["family"].notna().any():
        out["Organisation"] = t["family"].fillna("—")
    if "human_elo" in t and t["human_elo"].notna().any():
        d = _decimals(view, "human")
        out["Human Elo"] = _rounded(t["human_elo"], d)
        notes = t.get("human_note")
        if "human_elo_note" in t:
            why = t["human_elo_note"].fillna("").astype(str)
            notes = why.where(why != "", notes if notes is not None else "")
        out["95% CI"] = _interval_text(t["human_lower"], t["human_upper"], d, notes)
        out["Votes"] = t["n_votes"].astype("Int64")
    if view.has_intervals:
        if view.primary == "predicted":
            out["Predicted human Elo"] = _rounded(t[f"{view.interval_method}_elo"], 0)
        out[f"Conformal {1 - view.alpha:.0%}"] = _interval_text(t["interval_lower"], t["interval_upper"], 0)
    for m, label in (("soft", "Soft-Elo"), ("hard", "Hard-Elo")):
        if f"{m}_elo" in t and not (view.primary == "predicted" and m == view.interval_method):
            d = _decimals(view, m)
            out[label] = _rounded(t[f"{m}_elo"], d)
            out[f"{label.split('-')[0]} CI"] = _interval_text(
                t[f"{m}_lower"], t[f"{m}_upper"], d, t.get(f"{m}_elo_note")
            )
    if "n_judged" in t:
        out["Judged"] = t["n_judged"].astype("Int64")
    if "rank_change" in t:  # rows are rows of the view's table, so they carry it
        out["Δ rank"] = t["rank_change"]
    return out.reset_index(drop=True)


def ordinal_rank(elo: pd.Series) -> pd.Series:
    """1 for the highest Elo, 2 for the next…; equal Elo share the better place; NaN stays unranked."""
    return elo.astype(float).rank(ascending=False, method="min").astype("Int64")


def _rank_change(t: pd.DataFrame, interval_method: str | None) -> pd.Series | None:
    """How many places the judge moves each model against the human ranking (positive: the judge ranks it higher).

    Both ranks are ordinal (by point estimate) over the models that have both a human Elo and the judge's Elo,
    so that the column compares like with like: a tie-aware rank against an ordinal one only moves one way.
    None when the table has no human Elo or no judge Elo.
    """
    judge_col = f"{interval_method}_elo"
    if "human_elo" not in t or interval_method is None or judge_col not in t:
        return None
    both = t["human_elo"].notna() & t[judge_col].notna()
    shift = pd.Series(pd.NA, index=t.index, dtype="Int64")
    shift[both] = ordinal_rank(t.loc[both, "human_elo"]) - ordinal_rank(t.loc[both, judge_col])
    return shift


def rank_change(view: LeaderboardView) -> pd.Series | None:
    """The view's ``rank_change`` column (:func:`_rank_change`); None without a human and a judge Elo."""
    return view.table.get("rank_change")


def column_help(view: LeaderboardView) -> dict[str, str]:
    """What each column of :func:`display_table` means (the table's header tooltips)."""
    judge = {"soft": "Soft-Elo", "hard": "Hard-Elo"}.get(view.interval_method or "", "the judge's Elo")
    return {
        "Rank": "1 + the number of models whose interval lies entirely above this one: shared ranks are ties",
        "Organisation": "the model's family or organisation",
        "Human Elo": "Bradley–Terry Elo from the human votes",
        "95% CI": "95% sandwich confidence interval of the human Elo; 'undefined (perfect record)': the model "
        "never lost (or never won), so its Elo is unbounded and a ridge value is shown; '(ties only)': only ties, "
        "the interval uses the largest outcome variance p(1 − p)",
        "Votes": "human votes on the model's battles (one battle may carry several votes)",
        "Predicted human Elo": f"the judge's {judge}, used as a prediction of the human Elo",
        f"Conformal {1 - view.alpha:.0%}": f"split-conformal interval for the model's human Elo around its {judge} "
        f"(covers a new model's human Elo with probability ≥ {1 - view.alpha:.0%})",
        "Soft-Elo": "Bradley–Terry on the judge's calibrated soft targets σ(τ·score gap)",
        "Soft CI": "95% interval of the Soft-Elo (±1.96 bootstrap SE)",
        "Hard-Elo": "Bradley–Terry on the judge's hard labels",
        "Hard CI": "95% interval of the Hard-Elo (±1.96 bootstrap SE)",
        "Judged": "battles with a judge label",
        "Δ rank": f"places the {judge} moves the model: its place by human Elo minus its place by {judge}, both "
        "ordinal (by point estimate, over models rated by both); positive: the judge ranks it higher than humans do",
    }


def export_table(view: LeaderboardView) -> pd.DataFrame:
    """The table for CSV / Markdown / LaTeX: readable names, numbers (not text), sensible precision."""
    t = view.table
    cols: dict[str, pd.Series] = {"rank": t["rank"], "model": t["model"], "organisation": t["family"]}
    for m, label in (("human", "human Elo"), ("soft", "Soft-Elo"), ("hard", "Hard-Elo")):
        if f"{m}_elo" in t:
            d = _decimals(view, m)
            cols[label] = _rounded(t[f"{m}_elo"], d)
            cols[f"{label} 95% lower"] = _rounded(t[f"{m}_lower"], d)
            cols[f"{label} 95% upper"] = _rounded(t[f"{m}_upper"], d)
    if view.has_intervals:
        cols[f"human Elo {1 - view.alpha:.0%} conformal lower"] = _rounded(t["interval_lower"], 0)
        cols[f"human Elo {1 - view.alpha:.0%} conformal upper"] = _rounded(t["interval_upper"], 0)
    if "n_votes" in t:
        cols["votes"] = t["n_votes"].astype("Int64")
    if "human_elo_note" in t:
        cols["human Elo note"] = t["human_elo_note"].fillna("")
    if "human_note" in t:
        cols["human Elo interval note"] = t["human_note"].fillna("")
    if "n_judged" in t:
        cols["judged battles"] = t["n_judged"].astype("Int64")
    if "rank_change" in t:
        cols["rank change by judge"] = t["rank_change"]
    return pd.DataFrame(cols)


# --------------------------------------------------------------- the chart
METHOD_LABELS = {"human": "human Elo", "hard": "Hard-Elo (judge labels)", "soft": "Soft-Elo"}


@dataclass(frozen=True)
class ChartInput:
    """What :func:`core.charts.leaderboard_intervals` draws for a view: the rows, the methods' markers, and which
    marker carries bars (``interval``: its ``<col>_lower``/``<col>_upper`` columns are in ``frame``)."""

    frame: pd.DataFrame
    methods: dict[str, str]
    interval: str | None
    interval_label: str
    conformal: bool  # the bars are the conformal intervals for human Elo (else the human Elo's own 95% CI)


def chart_input(view: LeaderboardView, shown: Sequence[str], rows: pd.DataFrame | None = None) -> ChartInput:
    """The chart of the methods in ``shown`` ('human', 'hard', 'soft'): the conformal bars around the judge's
    Elo when that marker is drawn, else the human Elo's 95% interval when the human marker is drawn, else none.
    One place for the page and the report, so that a legend never promises bars that are not drawn."""
    plot = (view.table if rows is None else rows).copy()
    labels = dict(METHOD_LABELS)
    if view.tau:
        labels["soft"] = f"Soft-Elo (τ = {view.tau:.3g})"
    methods = {f"{m}_elo": labels[m] for m in shown if f"{m}_elo" in plot}
    judge_col = f"{view.interval_method}_elo"
    if view.has_intervals and judge_col in methods:
        plot[f"{judge_col}_lower"], plot[f"{judge_col}_upper"] = plot["interval_lower"], plot["interval_upper"]
        return ChartInput(plot, methods, judge_col, f"{1 - view.alpha:.0%} conformal intervals for human Elo", True)
    if "human_elo" in methods and "human_lower" in plot:
        plot["human_elo_lower"], plot["human_elo_upper"] = plot["human_lower"], plot["human_upper"]
        return ChartInput(plot, methods, "human_elo", "95% intervals of the human Elo", False)
    return ChartInput(plot, methods, None, "", False)


# ------------------------------------------------------------ head to head
@dataclass(frozen=True)
class HeadToHead:
    """Two models compared under each method: P(a beats b) with a 95% interval, and their direct battles."""

    model_a: str
    model_b: str
    table: pd.DataFrame  # method, p_a, lower, upper, battles, a_score (mean target of a in direct battles)


@dataclass(frozen=True)
class PairModel:
    """One method's Bradley–Terry fit as head-to-head comparisons need it (persisted: any two models are then
    compared without touching the battles)."""

    label: str
    models: tuple[str, ...]
    theta: np.ndarray  # logit scale
    cov: np.ndarray  # sandwich covariance of θ (models × models)
    pairs: pd.DataFrame  # model_a, model_b, n, s: the direct battles, as the method labels them


def pair_model(
    store: Store, dataset: str, target: str, judge: str | None, tau: float | None
) -> PairModel | Unavailable:
    """The fit of ``target`` ('human', 'hard', 'soft' at ``tau``) with its sandwich covariance."""
    from core.stats import bt

    pairs = store.pair_stats(dataset, target, judge=judge, tau=tau)
    if pairs.empty:
        return Unavailable(f"no {target} labels on {dataset!r}")
    comps = bt.comparisons_from_pair_table(pairs)
    fit = bt.fit_bt(comps)
    m = comps.n_models
    label = {"human": "human votes", "hard": f"{judge} (hard labels)"}.get(target) or f"{judge} (soft, τ = {tau:.3g})"
    return PairModel(
        label,
        tuple(str(x) for x in comps.models),
        np.asarray(fit.theta, float),
        bt.sandwich_cov(comps, fit)[:m, :m],
        pairs[["model_a", "model_b", "n", "s"]].reset_index(drop=True),
    )


def head_to_head_targets(judge: str | None, tau: float | None) -> list[tuple[str, str | None, float | None]]:
    """The (target, judge, τ) fits a head-to-head comparison shows: human votes, and the judge's when chosen."""
    targets: list[tuple[str, str | None, float | None]] = [("human", None, None)]
    if judge is not None:
        targets.append(("hard", judge, None))
        if tau is not None:
            targets.append(("soft", judge, tau))
    return targets


def compare(
    fits: Sequence[PairModel | Unavailable], model_a: str, model_b: str, dataset: str
) -> HeadToHead | Unavailable:
    """P(a ≻ b) = σ(θ_a − θ_b) under each fit (:func:`pair_model`, one per :func:`head_to_head_targets`), with
    a 95% interval from the sandwich covariance of the contrast; no store access."""
    if model_a == model_b:
        raise ValueError("choose two different models")
    rows = []
    for fit in fits:
        if isinstance(fit, Unavailable) or model_a not in fit.models or model_b not in fit.models:
            continue
        ia, ib = fit.models.index(model_a), fit.models.index(model_b)
        diff = fit.theta[ia] - fit.theta[ib]
        se = math.sqrt(max(fit.cov[ia, ia] + fit.cov[ib, ib] - 2 * fit.cov[ia, ib], 0.0))
        pairs = fit.pairs
        a_first = (pairs["model_a"] == model_a) & (pairs["model_b"] == model_b)
        b_first = (pairs["model_a"] == model_b) & (pairs["model_b"] == model_a)
        n = float(pairs.loc[a_first | b_first, "n"].sum())
        s_a = float(pairs.loc[a_first, "s"].sum() + (pairs.loc[b_first, "n"] - pairs.loc[b_first, "s"]).sum())
        rows.append(
            {
                "method": fit.label,
                "p_a": float(sigmoid(diff)),
                "lower": float(sigmoid(diff - Z95 * se)),
                "upper": float(sigmoid(diff + Z95 * se)),
                "battles": int(round(n)),
                "a_score": s_a / n if n else math.nan,
            }
        )
    if not rows:
        return Unavailable(f"{model_a} and {model_b} are not both rated under any method on {dataset!r}")
    return HeadToHead(model_a, model_b, pd.DataFrame(rows))


# ------------------------------------------------------------ default judge
def default_judge(store: Store, dataset: str) -> tuple[str, str] | None:
    """The judge a view should start with, and why: the one whose Elo best predicts the human Elo.

    With human votes, each judge's leave-one-model-out MAE against the human
    Elo (Soft-Elo when the judge gave rubric scores, else Hard-Elo) decides;
    without them, the first judge by name.  One held-out pass per judge:
    cache the answer per data version.
    """
    from core.app import persist

    names = [str(n) for n in store.judges_frame(dataset)["judge"]]
    if not names:
        return None
    stamps = persist.Stamps.of(store)
    scored: list[tuple[float, str, str]] = []
    for name in names:
        # The Leaderboard's own leave-one-model-out table (persisted once computed): its residuals are
        # the ones a held-out run of this method alone would give.
        held = persist.load_or_compute(store, heldout_of, (dataset, name, False), stamps.judge(dataset, name))
        if isinstance(held, Unavailable):
            continue
        coverage = persist.load_or_compute(store, judge_coverage, (dataset, name), stamps.judge(dataset, name))
        method = Method("soft", "soft") if coverage.has_gap else Method("hard", "hard")
        resid = held.table.get(f"{method.name}_resid")
        if resid is not None and resid.notna().any():
            scored.append((float(resid.abs().mean()), name, "Soft-Elo" if method.name == "soft" else "Hard-Elo"))
    if not scored:
        return names[0], "the first judge by name (no human votes to compare judges with)"
    mae, best, label = min(scored)
    return best, (
        f"the judge whose {label} best predicts the human Elo of models held out of the fit "
        f"(mean error {mae:.1f} Elo; {len(names)} judges compared)"
    )


@dataclass(frozen=True)
class ViewParts:
    """Everything the Leaderboard view is built from except α: the fits, the held-out table, the models.

    The expensive part (the leave-one-model-out table behind the intervals) is here; :meth:`view` only takes
    the conformal quantile at α, so a page keeps the parts and moves α freely.
    """

    human: Ratings | None
    hard: pd.DataFrame | None
    soft: pd.DataFrame | None
    held: HeldoutResult | Unavailable | None
    tau: float | None  # the τ Soft-Elo is drawn at (fitted or chosen)
    tau_fitted: bool
    models: pd.DataFrame
    tau_reference: TauReference | None
    frame: pd.DataFrame | None  # the judge's battle frame (None without a judge)
    notes: tuple[str, ...] = ()  # what a slice left out ("too few")

    def view(self, alpha: float) -> LeaderboardView:
        human = None if self.human is None else self.human.frame
        view = leaderboard_view(
            human, self.hard, self.soft, self.held, alpha, self.tau, self.tau_fitted, self.models, self.tau_reference
        )
        if not self.notes:
            return view
        said = " ".join(n[0].upper() + n[1:].rstrip(".") + "." for n in self.notes)
        return dataclasses.replace(view, note=said + (f" {view.note}" if view.note else ""))


def view_parts(store: Store, dataset: str, judge: str | None, tau: float | None, where: Slice = ()) -> ViewParts:
    """The parts of the Leaderboard view (:class:`ViewParts`), composed in one call.

    ``tau=None`` means the judge's fitted τ with τ refitted per fold; a given
    τ is held fixed in every fold.  ``where``: every method on the battles of
    that slice (τ fitted, and the intervals calibrated, on the slice alone); a
    part with fewer than ``MIN_SLICE_BATTLES`` battles is left out and the
    view's ``note`` says so.
    """
    from core.stats.calibration import fit_tau

    check_slice(store, dataset, where)
    human = ratings(store, dataset, "human", ci="sandwich", where=where)
    notes = [human.reason] if where and isinstance(human, Unavailable) else []
    human_fit = None if isinstance(human, Unavailable) else human
    models = store.models_frame(dataset)
    if judge is None:
        return ViewParts(human_fit, None, None, None, None, True, models, None, None, tuple(notes))
    frame = store.battle_frame(dataset, judge, where=where)
    judged = int((frame["n_judgments"] > 0).sum())
    if where and judged < MIN_SLICE_BATTLES:
        notes.append(too_few(where, judged, f"judgments by {judge}").reason)
        return ViewParts(human_fit, None, None, None, None, True, models, None, None, tuple(notes))
    has_gap = bool(frame["gap"].notna().any())
    fit = fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))
    fitted = tau is None
    use_tau = tau if tau is not None else fit.tau
    hard = judge_elo(frame, "hard", None)
    soft = judge_elo(frame, "soft", use_tau) if has_gap and use_tau is not None else None
    held = None
    if human_fit is not None:
        held = heldout(frame, tau=None if fitted or soft is None else use_tau)
    return ViewParts(human_fit, hard, soft, held, use_tau, fitted, models, TauReference.of(fit), frame, tuple(notes))


def view_for(
    store: Store, dataset: str, judge: str | None, tau: float | None, alpha: float, where: Slice = ()
) -> tuple[LeaderboardView, pd.DataFrame | None]:
    """The Leaderboard page's view composed in one call (the report, the bundle, new-model placement and a
    sliced page; the page's whole-dataset view caches the same parts one by one): :func:`view_parts` at α.
    Returns the view and the battle frame of the judge (None without one)."""
    parts = view_parts(store, dataset, judge, tau, where)
    return parts.view(alpha), parts.frame
