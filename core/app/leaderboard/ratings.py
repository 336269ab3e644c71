"""One rating method's leaderboard from the store (the CLI's ``leaderboard``): on all battles, a slice or a
turn group."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.domain import MIN_SLICE_BATTLES, Ratings, Slice, ratings_problem, slice_label
from core.methods import RATING_METHODS, TARGETS, resolve
from core.stats.calibration import fit_tau
from core.store import Store


def only_judge(store: Store, dataset: str) -> str | None:
    """The dataset's judge when it has exactly one (a command asked for a judge's method needs no --judge
    then); None when it has none or several."""
    judges = [str(j) for j in store.judges_frame(dataset)["judge"]]
    return judges[0] if len(judges) == 1 else None


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
        judge = only_judge(store, dataset)
        if judge is None:
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
    if not res.converged:
        # METHODS §10: a fit that did not converge is never shown as numbers
        why = next((i for i in res.issues if "converge" in i), f"no convergence in {res.iterations} iterations")
        return Unavailable(f"the {method} fit of {dataset!r} did not converge ({why}): no Elo is shown")
    if (broken := ratings_problem(res.frame)) is not None:
        # a registered method's bug, refused before any page, export or report shows it
        return Unavailable(f"the {method} method returned a leaderboard that breaks the ratings contract: {broken}")
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


def check_others(methods: Sequence[str]) -> tuple[str, ...]:
    """``methods`` (registered methods beyond the three fitted on the store's targets, whose Elo and intervals
    feed the conformal step; these are drawn as extra columns) in their given
    order without repeats; ``ValueError`` naming the registered ones for an unknown name."""
    extra = [m for m in RATING_METHODS if m not in TARGETS]
    unknown = [m for m in methods if m not in extra]
    if unknown:
        raise ValueError(f"unknown rating method {unknown[0]!r}; expected one of {', '.join(extra)}")
    return tuple(dict.fromkeys(methods))


def other_methods(has_votes: bool, has_judge: bool) -> list[str]:
    """Every other registered method the dataset can be rated by (by the registry's ``data`` and judge needs)."""
    out = []
    for name, m in RATING_METHODS.items():
        if name in TARGETS or (m.needs_judge and not has_judge):
            continue
        if (m.data == "votes" or m.target == "human") and not has_votes:
            continue
        out.append(name)
    return out


def method_ratings(
    store: Store, dataset: str, method: str, judge: str | None, tau: float | None = None, where: Slice = ()
) -> pd.DataFrame | Unavailable:
    """One registered method's ratings frame for the view's ``others`` (its own default intervals)."""
    m = RATING_METHODS[method]
    res = ratings(
        store,
        dataset,
        method,
        judge=judge if m.needs_judge else None,
        tau=tau if m.needs_tau else None,
        where=where,
    )
    if isinstance(res, Unavailable):
        return res
    frame = res.frame.copy()
    for side in ("lower", "upper"):  # a method without an interval (online Elo's order spread is not one)
        if side not in frame:
            frame[side] = np.nan
    return frame
