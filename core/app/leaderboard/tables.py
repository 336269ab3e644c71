"""What the view looks like: the table, its column help, the export and the chart's input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app.leaderboard.view import LeaderboardView, decimals_for
from core.methods import RATING_METHODS, TARGETS, method_heading, method_label


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


def display_table(
    view: LeaderboardView, rows: pd.DataFrame | None = None, methods: Sequence[str] | None = None
) -> pd.DataFrame:
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
        out[method_heading("human")] = _rounded(t["human_elo"], d)
        notes = t.get("human_note")
        if "human_elo_note" in t:
            why = t["human_elo_note"].fillna("").astype(str)
            notes = why.where(why != "", notes if notes is not None else "")
        out["95% CI"] = _interval_text(t["human_lower"], t["human_upper"], d, notes)
        out["Votes"] = t["n_votes"].astype("Int64")
    if view.has_intervals:
        if view.primary == "predicted":
            out[f"Predicted {method_heading('human').lower()}"] = _rounded(t[f"{view.interval_method}_elo"], 0)
        out[f"Conformal {1 - view.alpha:.0%}"] = _interval_text(t["interval_lower"], t["interval_upper"], 0)
    for m in ("soft", "hard"):
        label = method_heading(m)
        if f"{m}_elo" in t and not (view.primary == "predicted" and m == view.interval_method):
            d = _decimals(view, m)
            out[label] = _rounded(t[f"{m}_elo"], d)
            out[f"{label.split('-')[0]} CI"] = _interval_text(
                t[f"{m}_lower"], t[f"{m}_upper"], d, t.get(f"{m}_elo_note")
            )
    for m in _others_in(t):  # any other registered method in the view: when drawn (``methods``), or always
        if methods is None or m in methods:
            label = RATING_METHODS[m].label
            out[label] = _rounded(t[f"{m}_elo"], 0)
            out[f"{label} CI"] = _interval_text(t[f"{m}_lower"], t[f"{m}_upper"], 0, t.get(f"{m}_elo_note"))
    if "n_judged" in t:
        out["Judged"] = t["n_judged"].astype("Int64")
    if "rank_change" in t:  # rows are rows of the view's table, so they carry it
        out["Δ rank"] = t["rank_change"]
    return out.reset_index(drop=True)


def _others_in(t: pd.DataFrame) -> list[str]:
    return [m for m in RATING_METHODS if m not in TARGETS and f"{m}_elo" in t]


def rank_change(view: LeaderboardView) -> pd.Series | None:
    """The view's ``rank_change`` column (:func:`_rank_change`); None without a human and a judge Elo."""
    return view.table.get("rank_change")


def column_help(view: LeaderboardView) -> dict[str, str]:
    """What each column of :func:`display_table` means (the table's header tooltips)."""
    judge = method_heading(view.interval_method) if view.interval_method in ("soft", "hard") else "the judge's Elo"
    return {
        "Rank": "1 + the number of models whose interval lies entirely above this one: shared ranks are ties",
        "Organisation": "the model's family or organisation",
        method_heading("human"): "Bradley–Terry Elo from the human votes",
        "95% CI": "95% sandwich confidence interval of the human Elo; 'undefined (perfect record)': the model "
        "never lost (or never won), so its Elo is unbounded and a ridge value is shown; '(ties only)': only ties, "
        "the interval uses the largest outcome variance p(1 − p)",
        "Votes": "human votes on the model's battles (one battle may carry several votes)",
        f"Predicted {method_heading('human').lower()}": f"the judge's {judge}, used as a prediction of the human Elo",
        f"Conformal {1 - view.alpha:.0%}": f"split-conformal interval for the model's human Elo around its {judge} "
        f"(covers a new model's human Elo with probability ≥ {1 - view.alpha:.0%})",
        method_heading("soft"): "Bradley–Terry on the judge's calibrated soft targets σ(τ·score gap)",
        "Soft CI": "95% interval of the Soft-Elo (±1.96 sandwich SE)",
        method_heading("hard"): "Bradley–Terry on the judge's hard labels",
        "Hard CI": "95% interval of the Hard-Elo (±1.96 sandwich SE)",
        "Judged": "battles with a judge label",
        "Δ rank": f"places the {judge} moves the model: its place by human Elo minus its place by {judge}, both "
        "ordinal (by point estimate, over models rated by both); positive: the judge ranks it higher than humans do",
    } | {RATING_METHODS[m].label: RATING_METHODS[m].description for m in _others_in(view.table)}


def export_table(view: LeaderboardView) -> pd.DataFrame:
    """The table for CSV / Markdown / LaTeX: readable names, numbers (not text), sensible precision."""
    t = view.table
    cols: dict[str, pd.Series] = {"rank": t["rank"], "model": t["model"], "organisation": t["family"]}
    for m, label in ((m, method_label(m)) for m in ("human", "soft", "hard")):
        if f"{m}_elo" in t:
            d = _decimals(view, m)
            cols[label] = _rounded(t[f"{m}_elo"], d)
            cols[f"{label} 95% lower"] = _rounded(t[f"{m}_lower"], d)
            cols[f"{label} 95% upper"] = _rounded(t[f"{m}_upper"], d)
    for m in _others_in(t):
        label = RATING_METHODS[m].label
        cols[label] = _rounded(t[f"{m}_elo"], 0)
        cols[f"{label} 95% lower"] = _rounded(t[f"{m}_lower"], 0)
        cols[f"{label} 95% upper"] = _rounded(t[f"{m}_upper"], 0)
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


def method_labels() -> dict[str, str]:
    """Each registered method's legend label (read at call time: a method registered later is drawn too)."""
    return {name: m.label for name, m in RATING_METHODS.items()} | {"hard": "Hard-Elo (judge labels)"}


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
    labels = method_labels()
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
