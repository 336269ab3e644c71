"""Display names: the one table of what a page, a chart or an export shows for the code's identifiers.

The statistics name things as code does (``hard``, ``ls_0.55``, ``log_length``,
``p_fwd``, ``kendall_lo``); a reader sees plain words.  Every page renames
through this module, so one identifier has one name everywhere:

* :func:`label` — any identifier (a method, a SCOPE rule or source, a
  style feature, a subset, a column) to its display name; unknown values
  (model and judge names) pass through unchanged;
* :func:`columns` — a table with its columns (and, optionally, the values of
  some columns) renamed;
* :func:`plain_chart` — a chart builder whose trace names, text labels and
  categories are renamed after it is built (for builders that key colours or
  symbols on the identifier, so the data must keep it);
* :func:`plain`, :func:`estimate`, :func:`movement` — numbers in plain
  notation at the precision they support (never ``4.1e-15``);
* :func:`store_busy` — who holds the store, in a reader's words (never a
  process's command line or a CLI flag).

Nothing here imports Streamlit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from core.methods import RATING_METHODS

# ------------------------------------------------------------------ methods
# Rating methods are named by their registry entry, read at call time in :func:`label` (a method registered
# later is named too); this is what else a ratings column can hold.
METHODS: dict[str, str] = {"truth": "true Elo (simulated)"}
SCOPE_RULES: dict[str, str] = {
    "scope": "SCOPE",
    "ltt": "Learn-then-Test",
    "naive": "naive threshold",
    "heuristic": "confidence heuristic",
    "vanilla": "accept everything",
}
SCOPE_SOURCES: dict[str, str] = {
    "logprob": "A/B token probabilities",
    "rubric": "rubric scores",
    "verbal": "stated confidence",
    "single": "one order (no swap)",
}
FEATURES: dict[str, str] = {
    "log_length": "answer length (log)",
    "headers": "headings",
    "bold": "bold text",
    "list_items": "list items",
    "echo": "echo",
}
VARIANTS: dict[str, str] = {
    "original": "as judged",
    "echo_a": "echo added to answer a",
    "echo_b": "echo added to answer b",
}
SUBSETS: dict[str, str] = {
    "all": "all pairs",
    "discriminative": "discriminative pairs",
    "non_discriminative": "non-discriminative pairs",
}
AGGREGATIONS: dict[str, str] = {
    "win_rate": "win rate",
    "bradley_terry": "Bradley–Terry",
    "online_elo": "online Elo",
    "trueskill": "TrueSkill",
}

# ------------------------------------------------------------------ columns
COLUMNS: dict[str, str] = {
    # battles
    "battle_id": "battle",
    "model_a": "model a",
    "model_b": "model b",
    "n_battles": "battles",
    "n_models": "models",
    "n_decisive": "decisive battles",
    "has_human_vote": "has a human vote",
    # selective judging
    "p_fwd": "P(a wins), a shown first",
    "p_rev": "P(a wins), a shown second",
    "p_bar": "P(a wins), both orders averaged",
    "uncertainty": "uncertainty (nats)",
    "entropy": "uncertainty (nats)",
    "human_a": "humans preferred a",
    "judge_right": "judge agrees with humans",
    "probabilities": "probabilities",
    "accuracy": "accuracy",
    "ece": "calibration error (ECE)",
    "auroc": "AUROC",
    "auprc": "AUPRC",
    "n": "battles",
    "caveat": "caveat",
    # agreement with accuracy, aggregation
    "ranking": "ranking",
    "subset": "pairs",
    "method": "method",
    "pearson": "Pearson r",
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ",
    "kendall_distance": "share of pairs to swap (K_D)",
    "kendall_lo": "Kendall τ, 95% low",
    "kendall_hi": "Kendall τ, 95% high",
    "kd_lo": "K_D, 95% low",
    "kd_hi": "K_D, 95% high",
    # languages, budget
    "language": "language",
    "tau": "τ",
    "tau_lo": "τ, 95% low",
    "tau_hi": "τ, 95% high",
    "hard_mae": "Hard-Elo error (MAE, Elo)",
    "hard_spearman": "Hard-Elo Spearman ρ",
    "soft_mae": "Soft-Elo error (MAE, Elo)",
    "soft_spearman": "Soft-Elo Spearman ρ",
    "budget": "judged battles per model",
    "tau_mean": "τ (mean)",
    "tau_sd_across_folds": "τ spread across held-out folds (sd)",
    "tau_sd_across_repeats": "τ spread across subsamples (sd)",
    "tau_full": "τ on all battles",
    # residuals
    "mae": "MAE (Elo)",
    "median_se": "median SE (Elo)",
    "qhat": "q̂ (all models)",
    "sigma": "σ̂ disagreement (Elo)",
    "median_scale": "median √(SE² + σ̂²) (Elo)",
    "coverage": "coverage (mean)",
    "coverage_min": "coverage (min)",
    "coverage_max": "coverage (max)",
    "median_width": "median width (Elo)",
    "unbounded_splits": "splits with q̂ = ∞",
    # style control
    "elo_raw": "Elo (judge)",
    "elo_controlled": "Elo (style-controlled)",
    "rank_raw": "rank (judge)",
    "rank_controlled": "rank (style-controlled)",
    "moved": "ranks moved",
    # judges
    "consistency": "consistency",
    "arena_elo": "arena Elo",
    "predicted_elo": "Elo predicted from consistency",
    "n_contests": "contests",
    "first_position_win_rate": "first-position win rate",
    "n_judgments": "judgments",
    "n_parse_errors": "parse errors",
    # overview
    "n_human_votes": "human votes",
    "n_annotators": "annotators",
    "n_prompts": "prompts",
    "n_judges": "judges",
    "true_elo": "true human Elo (simulated)",
    # evaluations
    "evaluation_id": "evaluation",
    "alpha": "α",
    "created_at": "started",
    "predicted": "predicted human Elo",
    "lower": "interval low",
    "upper": "interval high",
    "ranks": "rank range",
    "status": "status",
    "note": "note",
}

# Values that are names (methods, rules, sources, features, subsets): one lookup for all of them.
VALUES: dict[str, str] = {**SUBSETS, **VARIANTS, **FEATURES, **SCOPE_SOURCES, **SCOPE_RULES, **AGGREGATIONS, **METHODS}
_SMOOTHING = re.compile(r"^ls_(\d+(?:\.\d+)?)$")


def label(value: Any) -> Any:
    """The display name of an identifier; anything not in the table (model, judge names) unchanged."""
    if not isinstance(value, str):
        return value
    method = value.removesuffix("-Elo")  # the budget curves name their traces "hard-Elo", "soft-Elo"
    if method in RATING_METHODS:
        return RATING_METHODS[method].label
    if value in VALUES:
        return VALUES[value]
    if m := _SMOOTHING.match(value):
        return f"label smoothing (q = {m.group(1)})"
    if value.endswith(" (hard)"):  # a judge's ranking from its hard labels (core.app.analyses.alignment)
        return value.removesuffix(" (hard)") + " (hard labels)"
    return value


def scope_rule(name: str) -> str:
    return SCOPE_RULES.get(name, name)


def scope_source(name: str) -> str:
    return SCOPE_SOURCES.get(name, name)


def columns(frame: pd.DataFrame, values: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``frame`` with its columns in display names; the columns named in ``values`` also have their values
    renamed (:func:`label`).  ``extra`` renames columns this table means differently from the common table."""
    out = frame.copy()
    for c in values:
        if c in out:
            out[c] = out[c].map(label)
    names = {**COLUMNS, **(extra or {})}
    return out.rename(columns={c: names[c] for c in out.columns if c in names})


def labels(frame: pd.DataFrame) -> dict[str, str]:
    """Column → display name for the columns of ``frame`` the table names: a ``column_config`` that shows
    the names while the data keeps its columns."""
    return {c: COLUMNS[c] for c in frame.columns if c in COLUMNS}


def header(column: str) -> str:
    """One column's display name."""
    return COLUMNS.get(column, column)


# ------------------------------------------------------------------- charts
def relabel(fig: Any, names: Mapping[str, str] | None = None) -> Any:
    """Rename a built plotly figure's trace names, text labels, categorical x/y values and the hover line that
    starts with an identifier (``names``, else :func:`label`).  Colours and symbols stay as built."""
    rename: Callable[[Any], Any] = (lambda v: names.get(v, v) if isinstance(v, str) else v) if names else label

    def each(values: Any) -> Any:
        if values is None or isinstance(values, str):
            return rename(values) if isinstance(values, str) else values
        try:
            items = list(values)
        except TypeError:
            return values
        if not items or not all(isinstance(v, str) for v in items):
            return values
        return [rename(v) for v in items]

    for trace in fig.data:
        raw = trace.name
        if isinstance(raw, str):
            trace.name = rename(raw)
        for attr in ("text", "x", "y"):
            if attr in trace and trace[attr] is not None:
                trace[attr] = each(trace[attr])
        hover = trace.hovertemplate if "hovertemplate" in trace else None
        if isinstance(hover, str) and "<br>" in hover:
            head, rest = hover.split("<br>", 1)
            trace.hovertemplate = f"{rename(head)}<br>{rest}"
    return fig


def plain_chart(builder: Callable[..., Any], names: Mapping[str, str] | None, *args: Any, **kwargs: Any) -> Any:
    """``builder(*args, **kwargs)`` with its identifiers renamed (:func:`relabel`): for a page's
    ``partial(display.plain_chart, charts.some_builder, names, ...)``."""
    return relabel(builder(*args, **kwargs), names)


# ------------------------------------------------------------------ numbers
def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def plain(x: Any, places: int = 3, unit: str = "") -> str:
    """``x`` in fixed-point notation with ``places`` decimals; a non-zero value too small to show is "less
    than 0.001" (never scientific notation); a missing one is "—"."""
    if not _finite(x):
        return "—"
    v = float(x)
    tail = f" {unit}" if unit else ""
    step = 10.0**-places
    if v != 0 and abs(v) < step / 2:
        return f"less than {step:.{places}f}{tail}"
    return f"{v:,.{places}f}{tail}"


def places_for(width: float, digits: int = 2) -> int:
    """Decimals that show an interval of ``width`` with ``digits`` significant digits (0 for wide ones)."""
    if not _finite(width) or width <= 0:
        return 3
    return max(0, digits - 1 - math.floor(math.log10(width)))


def estimate(x: Any, lower: Any, upper: Any, unit: str = "", ci: str = "95% CI") -> str:
    """``x (95% CI lo–hi)`` at the precision the interval supports."""
    if not _finite(x):
        return "—"
    if not (_finite(lower) and _finite(upper)):
        return plain(x, 3, unit)
    d = places_for(float(upper) - float(lower))
    tail = f" {unit}" if unit else ""
    return f"{float(x):,.{d}f}{tail} ({ci} {float(lower):,.{d}f}–{float(upper):,.{d}f})"


def movement(spread: Any, unit: str = "Elo", places: int = 3) -> str:
    """How much something moves, in words: "does not move (less than 0.001 Elo)" below the resolution, else
    "moves by 4.100 Elo"."""
    if not _finite(spread):
        return "cannot be measured"
    v = abs(float(spread))
    if v < 10.0**-places / 2:
        return f"does not move (by less than {10.0**-places:.{places}f} {unit})"
    return f"moves by {plain(v, places)} {unit}"


# ------------------------------------------------------------------- errors
# What a process holding the store is doing, from its command line (``core.store.errors.describe_process``).
WRITERS: dict[str, str] = {
    "judge": "a judge run (Admin page)",
    "runs": "a judge run (Admin page)",
    "import": "an import of a dataset",
    "simulate": "the build of the demo dataset",
    "precompute": "the background computation of this dashboard's results",
    "evaluate": "a model evaluation (Evaluate page)",
    "generate": "the generation of a model's answers",
    "export": "an export",
}


def store_writer(reason: str) -> str:
    """Who holds the store, in a reader's words (never the command line the lock message carries)."""
    text = reason or ""
    if m := re.search(r"-m\s+core\s+([a-z_-]+)", text):
        return WRITERS.get(m.group(1), "a command-line task on this dataset store")
    if "streamlit" in text:
        return "another dashboard server recording a change (a vote or an Admin action)"
    return "another program"


def store_busy(reason: str) -> str:
    """The busy notice: who is writing, and what to wait for."""
    who = store_writer(reason)
    return (
        f"The data store is busy: {who} is writing to it. This page shows the last results it read and "
        "refreshes by itself once the writing is done."
    )
