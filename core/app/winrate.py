"""Win rates against a common baseline, as AlpacaEval reports them, for any dataset whose battles share one model.

The page and ``python -m core winrate`` both read :func:`win_rate_view`: the store's comparisons with the
baseline (``Store.baseline_comparisons``), averaged per (instruction, model), into
:func:`core.stats.winrate.win_rates`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.stats.lc_reference import alpaca_eval_reference
from core.stats.winrate import COLUMNS, WinRates, win_rates
from core.store import Store, StoreError

if TYPE_CHECKING:
    from core.app.arena_hard import ArenaHardView

HUMAN = None  # judge=None: the human votes
FIXED_DIFFICULTY_NOTE = (
    "LC as AlpacaEval computes it: each model's logistic model against the baseline alone, with fixed "
    "instruction difficulties on AlpacaEval's scale (estimated once from its published coefficients, "
    "scripts/fit_alpaca_eval_difficulty.py), so a model's LC does not change when other models are added. "
    "The LC standard error is AlpacaEval's (the spread of the length-free predictions over instructions); "
    "'LC SE (GLM)' adds the fit's own uncertainty."
)
JOINT_DIFFICULTY_NOTE = (
    "No fixed instruction difficulties are known for these instructions and this baseline: they are fitted over "
    "this dataset's models, so a model's LC moves when models are added or removed."
)
DIFFICULTY_NOTE = (
    "Length-controlled win rates follow Dubois et al. (2024): a logistic model per model against the baseline with "
    "a model term, a term on tanh of the standardised length difference and an instruction-difficulty term, "
    "regularised towards the baseline; the LC win rate is its mean prediction with no length difference. "
    "The length slope is one for all models (the judge's taste for length), fitted with the instruction "
    "difficulties over this dataset's own models; AlpacaEval's published LC uses a difficulty fitted over its "
    "whole leaderboard, so LC values agree with the published ones approximately (15 real models of "
    "alpaca_eval_2 and alpaca_eval_more: Spearman 0.97, mean |Δ| 1.9 points, at most 4.4). "
    "A caveat marks a model whose LC differs by more than 3 points when each model gets its own length slope. "
    "Because the difficulties are fitted over the models at hand, a model's LC moves when models are added."
)


@dataclass(frozen=True)
class WinRateView:
    """Win rates of every model against ``baseline`` by ``judge`` (None: the human votes)."""

    dataset: str
    baseline: str
    judge: str | None
    result: WinRates | None  # None when no comparison with the baseline has an outcome
    n_battles: int
    notes: tuple[str, ...]
    method: str = DIFFICULTY_NOTE  # how the LC was fitted: FIXED_DIFFICULTY_NOTE or DIFFICULTY_NOTE

    @property
    def rows(self) -> pd.DataFrame:
        if self.result is None:
            return pd.DataFrame(columns=list(COLUMNS))
        return self.result.rows


def default_judge(store: Store, dataset: str) -> str | None:
    """The dataset's only judge; None (the human votes) when it has none; an error naming them when several."""
    judges = [str(j) for j in store.judges_frame(dataset)["judge"]]
    if len(judges) > 1:
        raise StoreError(f"dataset {dataset!r} has several judges ({', '.join(judges)}): choose one with --judge")
    return judges[0] if judges else HUMAN


BASELINE_SOURCES = ("arena-hard", "alpaca-eval")  # importers that put the baseline as model_a of every battle


def infer_baseline(store: Store, dataset: str) -> str:
    """The dataset's baseline: the one model in every battle; with several (a single judged model against its
    baseline), the one its importer named (the dataset's meta ``baseline``, else ``model_a`` of every battle for
    the importers that put it there).  A StoreError saying to name it otherwise."""
    common = store.common_baselines(dataset)
    if len(common) == 1:
        return common[0]
    if not common:
        raise StoreError(f"dataset {dataset!r} has no model in every battle; name the baseline (--baseline MODEL)")
    named = store.dataset_meta(dataset).get("baseline")
    if isinstance(named, str) and named in common:
        return named
    if store.dataset(dataset).source in BASELINE_SOURCES:
        first = [m for m in store.model_a_everywhere(dataset) if m in common]
        if len(first) == 1:
            return first[0]
    raise StoreError(
        f"several models are in every battle of {dataset!r} ({', '.join(common)}): name the baseline (--baseline)"
    )


def reference_difficulty(
    per: pd.DataFrame, baseline: str, judge: str | None
) -> tuple[pd.Series | None, tuple[float, float] | None, str, list[str]]:
    """AlpacaEval's fixed instruction difficulties for these comparisons, when its reference covers them.

    Returns (γ per ``instruction`` key, the length slope's prior or None, the method's sentence, notes);
    γ None when the reference is for another baseline, other instructions or the human votes: the
    difficulties are then fitted over the models at hand (and a model's LC moves when models are added)."""
    reference = alpaca_eval_reference()
    texts = per.drop_duplicates("instruction").set_index("instruction")["instruction_text"]
    known = texts.dropna().astype(str)
    if judge is HUMAN or not reference.covers(baseline, list(known)) or len(known) < len(texts):
        return None, None, DIFFICULTY_NOTE, []
    gamma = known.map(reference.gamma)
    notes: list[str] = []
    unknown = int(gamma.isna().sum())
    if unknown:
        notes.append(
            f"{unknown} instruction(s) are not among AlpacaEval's and take the average difficulty "
            f"({reference.difficulty_mean:.2f})"
        )
    slope_prior: tuple[float, float] | None = (reference.slope_mean, reference.slope_precision)
    if judge != reference.judge:
        slope_prior = None
        notes.append(
            f"the length slope's prior is {reference.judge}'s; judge {judge} has none, so each model's slope is "
            "fitted from its own comparisons alone"
        )
    return gamma.fillna(reference.difficulty_mean), slope_prior, FIXED_DIFFICULTY_NOTE, notes


def win_rate_view(store: Store, dataset: str, baseline: str | None = None, judge: str | None = HUMAN) -> WinRateView:
    """Per model: win rate against the baseline with its standard error, discrete win rate, length-controlled
    win rate with its standard error, average answer length and the number of instructions.

    ``baseline`` defaults to the model in every battle; a dataset without one needs it named."""
    if baseline is None:
        baseline = infer_baseline(store, dataset)
    models = set(store.models_frame(dataset)["model"])
    if baseline not in models:
        raise StoreError(f"no model {baseline!r} in dataset {dataset!r}")
    frame = store.baseline_comparisons(dataset, baseline, judge)
    notes: list[str] = []
    n_battles = len(frame)
    frame = frame[frame["p"].notna()]
    if frame.empty:
        who = "the human votes" if judge is None else f"judge {judge!r}"
        notes.append(f"no battle against {baseline} has an outcome from {who}: no win rate is defined")
        return WinRateView(dataset, baseline, judge, None, n_battles, tuple(notes))
    # one row per (instruction, model): several battles of one pair on one prompt (an arena) are averaged
    per = frame.groupby(["instruction", "model"], as_index=False, sort=True).agg(
        p=("p", "mean"),
        length=("length", "mean"),
        baseline_length=("baseline_length", "mean"),
        instruction_text=("instruction_text", "first"),
    )
    if len(per) < len(frame):
        notes.append("battles of one model on one prompt are averaged into one comparison, as AlpacaEval counts")
    no_lengths = per["length"].isna() | per["baseline_length"].isna()
    if no_lengths.any():
        notes.append(
            f"{int(no_lengths.sum()):,} comparisons have no answer text, so no length: average length and the "
            "length-controlled win rate are undefined"
        )
        per = per.assign(length=per["length"].fillna(0.0), baseline_length=per["baseline_length"].fillna(0.0))
    fixed, slope_prior, method, lc_notes = reference_difficulty(per, baseline, judge)
    result = win_rates(per, baseline, fixed_difficulty=fixed, slope_prior=slope_prior)
    notes.extend(lc_notes)
    if no_lengths.any():
        rows = result.rows.copy()
        rows[["lc_win_rate", "lc_standard_error", "lc_standard_error_glm", "avg_length"]] = np.nan
        result = replace(result, rows=rows)
    return WinRateView(dataset, baseline, judge, result, n_battles, (*notes, *result.notes), method)


def baseline_view(store: Store, dataset: str, judge: str | None) -> WinRateView | Unavailable:
    """The Leaderboard's "Against the baseline" view: the win rates when the dataset's battles share one model
    (AlpacaEval, Arena-Hard), else why there is none."""
    try:
        baseline = infer_baseline(store, dataset)
    except StoreError:
        return Unavailable("no single model takes part in every battle of this dataset, so there is no baseline")
    try:
        return win_rate_view(store, dataset, baseline, judge)
    except (StoreError, ValueError) as exc:
        return Unavailable(str(exc))


def table(view: WinRateView) -> pd.DataFrame:
    """The view's rows as the page shows them (percentages with their standard errors: the LC's is
    AlpacaEval's, the spread of its length-free predictions; 'LC SE (GLM)' adds the fit's own uncertainty)."""

    def pct(x: float, se: float) -> str:
        if x != x:
            return "undefined"
        return f"{x:.1f}" if se != se else f"{x:.1f} ± {se:.1f}"

    r = view.rows
    return pd.DataFrame(
        {
            "model": r["model"],
            "win rate (%)": [pct(x, se) for x, se in zip(r["win_rate"], r["standard_error"])],
            "discrete (%)": r["discrete_win_rate"].round(1),
            "LC win rate (%)": [pct(x, se) for x, se in zip(r["lc_win_rate"], r["lc_standard_error"])],
            "LC SE (GLM)": r["lc_standard_error_glm"].round(1),
            "avg length": r["avg_length"].round(0),
            "n": r["n"],
            "LC caveat": r.get("lc_caveat", ""),
        }
    )


def peer_headline(view: WinRateView, arena_hard: ArenaHardView | None = None) -> str:
    """The first sentence of a star-design dataset's Leaderboard, in the peer's own metric (markdown, every
    name escaped).

    Arena-Hard's score when the judge graded its verdicts (an Arena-Hard import), else AlpacaEval's
    length-controlled win rate (its headline column), with the raw win rate beside it.
    """
    from core.app.safe_text import escape_markdown as esc

    if arena_hard is not None:
        rows = arena_hard.rows.dropna(subset=["score"])
        rows = rows[rows["model"] != arena_hard.baseline]
        if len(rows):
            top = rows.sort_values("score", ascending=False, kind="stable").iloc[0]
            what = "has the highest Arena-Hard score" if len(rows) > 1 else "has an Arena-Hard score of"
            return (
                f"**{esc(top['model'])}** {what} {top['score']:.1f} (95% CI {top['lower']:.1f} – "
                f"{top['upper']:.1f}) against **{esc(arena_hard.baseline)}**, by {esc(arena_hard.judge)}."
            )
    rows = view.rows[view.rows["model"] != view.baseline]
    lc = rows.dropna(subset=["lc_win_rate"])
    who = "the human votes" if view.judge is None else view.judge
    if len(lc):
        top = lc.iloc[0]  # rows are sorted by LC win rate
        caveat = " (read with its caveat below)" if top.get("lc_caveat") else ""
        what = "has the highest length-controlled win rate" if len(lc) > 1 else "has a length-controlled win rate of"
        return (
            f"**{esc(top['model'])}** {what} {top['lc_win_rate']:.1f}% ± {top['lc_standard_error']:.1f} "
            f"(win rate {top['win_rate']:.1f}%) against **{esc(view.baseline)}**, by {esc(who)}{caveat}."
        )
    raw = rows.dropna(subset=["win_rate"]).sort_values("win_rate", ascending=False, kind="stable")
    if len(raw):
        top = raw.iloc[0]
        return (
            f"**{esc(top['model'])}** has the highest win rate against **{esc(view.baseline)}**: "
            f"{top['win_rate']:.1f}% ± {top['standard_error']:.1f}, by {esc(who)}."
        )
    return f"No model has an outcome against **{esc(view.baseline)}** yet."
