"""The joined human / Hard / Soft view: each model's conformal interval for its human Elo, composed once for every
reader.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.leaderboard.judge import heldout, judge_elo
from core.app.leaderboard.ratings import (
    check_others,
    check_slice,
    method_ratings,
    ratings,
    too_few,
)
from core.domain import MIN_SLICE_BATTLES, Z95, Ratings, Slice, rank_with_ties
from core.methods import RATING_METHODS, TARGETS, method_label
from core.stats.calibration import TauFit, fit_tau
from core.stats.conformal import DEFAULT_SCORE, Quantile, contains_full_conformal, deploy, min_pool
from core.stats.heldout import HeldoutResult
from core.store import Store


def decimals_for(half_width: float) -> int:
    """Decimals an Elo value deserves given its interval half-width (sensible precision)."""
    if not math.isfinite(half_width) or half_width >= 5:
        return 0
    return 1 if half_width >= 0.5 else 2


def primary_label(primary: str) -> str:
    """What the ranking column is called in a sentence: a method's registry label, or the judge's Elo read as a
    prediction of the human one."""
    return f"predicted {method_label('human')}" if primary == "predicted" else method_label(primary)


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
            f"Not ranked, with no {primary_label(self.primary)}: {models} whose "
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
        return f"#1 {top['model']} — {primary_label(self.primary)} {score}; {tie}"

    def coverage_statement(self) -> str | None:
        """The sentence that says what the conformal bars promise, and which procedure sized them."""
        if not self.has_intervals:
            return None
        width = self.table["interval_upper"] - self.table["interval_lower"]
        q = self.quantile
        assert q is not None
        label = method_label("soft" if self.interval_method == "soft" else "hard")
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
        if q.score == "floor":
            shape = (
                f"{label} ± q̂·√(SE² + σ̂²), where σ̂ = {q.sigma:.1f} Elo is the judge–human disagreement (an 80% "
                "upper bound from the calibration models), which does not shrink as the judge sees more battles: no "
                f"bar is narrower than ±q̂·σ̂ = ±{q.qhat * q.sigma:.0f} Elo"
            )
            units = " (in units of √(SE² + σ̂²))"
            exchangeable = (
                ": a model judged on about as many battles as these; for one judged on far more, the floor keeps "
                "the coverage under the disagreement model of METHODS §4, as measured there, not guaranteed"
            )
            # the drawn interval contains the full-conformal one when q̂ ≥ 1, and the jackknife+ one always
            level = 1 - self.alpha if contains_full_conformal(q) else max(1 - 2 * self.alpha, 0.0)
        else:
            shape, units, level, exchangeable = f"{label} ± q̂·SE", " SEs", 1 - self.alpha, ""
        text = (
            f"Each bar is a split-conformal interval for the model's **human** Elo, {shape}. With "
            f"α = {self.alpha:.2f}, it covers the human Elo of a new model with probability ≥ {level:.0%} "
            f"(marginally, models exchangeable{exchangeable}). Calibrated on {q.n} held-out models by {procedure}; "
            f"q̂ = {q.qhat:.2f}{units}, median width {float(np.nanmedian(width)):.0f} Elo."
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
    others: Mapping[str, pd.DataFrame] | None = None,
    score: str = DEFAULT_SCORE,
) -> LeaderboardView:
    """Join the leaderboards and give each model its conformal interval for its human Elo.

    ``score``: "floor" (``elo ± q̂·√(SE² + σ̂²)``, the default) or "se" (``elo ± q̂·SE``), METHODS §4.

    ``others``: any other registered method's ratings frame (model, elo, lower, upper), by method name: its
    ``<m>_elo``/``_lower``/``_upper``/``_rank`` columns join the table (drawn and listed as the registry says).

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
    for name, frame in (others or {}).items():
        cols = frame[["model", "elo", "lower", "upper"]].rename(
            columns={c: f"{name}_{c}" for c in ("elo", "lower", "upper")}
        )
        if "elo_note" in frame:
            cols[f"{name}_elo_note"] = frame["elo_note"].to_numpy()
        t = t.merge(cols, on="model", how="outer")
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
        dep, q = deploy(held.table[f"{interval_method}_resid"], held.table[f"{interval_method}_se"], base, alpha, score)
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
    for m in (*TARGETS, *(others or {})):
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
    others: tuple[tuple[str, pd.DataFrame], ...] = ()  # other registered methods' ratings, by name

    def view(self, alpha: float) -> LeaderboardView:
        human = None if self.human is None else self.human.frame
        view = leaderboard_view(
            human,
            self.hard,
            self.soft,
            self.held,
            alpha,
            self.tau,
            self.tau_fitted,
            self.models,
            self.tau_reference,
            dict(self.others),
        )
        if not self.notes:
            return view
        said = " ".join(n[0].upper() + n[1:].rstrip(".") + "." for n in self.notes)
        return dataclasses.replace(view, note=said + (f" {view.note}" if view.note else ""))


def view_parts(
    store: Store,
    dataset: str,
    judge: str | None,
    tau: float | None,
    where: Slice = (),
    others: Sequence[str] = (),
) -> ViewParts:
    """The parts of the Leaderboard view (:class:`ViewParts`), composed in one call.

    ``tau=None`` means the judge's fitted τ with τ refitted per fold; a given
    τ is held fixed in every fold.  ``where``: every method on the battles of
    that slice (τ fitted, and the intervals calibrated, on the slice alone); a
    part with fewer than ``MIN_SLICE_BATTLES`` battles is left out and the
    view's ``note`` says so.  ``others``: registered methods beyond human, Hard and
    Soft to rate too (:func:`method_ratings`; one that cannot rate the data is left out).
    """

    check_slice(store, dataset, where)
    others = check_others(others)
    other_frames: list[tuple[str, pd.DataFrame]] = []
    human = ratings(store, dataset, "human", ci="sandwich", where=where)
    notes = [human.reason] if where and isinstance(human, Unavailable) else []
    human_fit = None if isinstance(human, Unavailable) else human
    models = store.models_frame(dataset)
    if judge is None:
        for name in others:
            got = method_ratings(store, dataset, name, None, where=where)
            if not isinstance(got, Unavailable) and not RATING_METHODS[name].needs_judge:
                other_frames.append((name, got))
        return ViewParts(human_fit, None, None, None, None, True, models, None, None, tuple(notes), tuple(other_frames))
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
    for name in others:
        got = method_ratings(store, dataset, name, judge, use_tau, where=where)
        if not isinstance(got, Unavailable):
            other_frames.append((name, got))
    return ViewParts(
        human_fit,
        hard,
        soft,
        held,
        use_tau,
        fitted,
        models,
        TauReference.of(fit),
        frame,
        tuple(notes),
        tuple(other_frames),
    )


def view_for(
    store: Store,
    dataset: str,
    judge: str | None,
    tau: float | None,
    alpha: float,
    where: Slice = (),
    others: Sequence[str] = (),
) -> tuple[LeaderboardView, pd.DataFrame | None]:
    """The Leaderboard page's view composed in one call (the report, the bundle, new-model placement and a
    sliced page; the page's whole-dataset view caches the same parts one by one): :func:`view_parts` at α,
    with the registered methods ``others`` as extra columns.  Returns the view and the battle frame of the
    judge (None without one)."""
    parts = view_parts(store, dataset, judge, tau, where, others)
    return parts.view(alpha), parts.frame
