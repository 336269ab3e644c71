"""The Arena-Hard score of every model against the baseline, from a judge's graded verdicts (METHODS §10).

``python -m core winrate --arena-hard``, the Leaderboard's "Against the baseline" section, the report and the
bundle all read :func:`arena_hard_view`: the judge's games from the store (``Store.graded_games``), turned into
the model's terms, into :func:`core.stats.arena_hard.arena_hard_score`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.winrate import default_judge, infer_baseline
from core.stats.arena_hard import (
    DEFAULT_ROUNDS,
    DEFAULT_WEIGHT,
    STYLE_FEATURES,
    STYLE_VERSIONS,
    ArenaHardScore,
    arena_hard_score,
    interval_text,
)
from core.store import Store, StoreError

METHOD_NOTE = (
    "Arena-Hard score: the predicted win rate against the baseline of a Bradley–Terry fit over the judge's "
    "games (both shown orders; a strong verdict such as A>>B counted {weight} times, a tie half a win, a game "
    "without a verdict dropped), with a 95% interval from {rounds} bootstrap resamples of the games, as "
    "Arena-Hard-Auto's show_result.py computes it."
)
SCRIPT_INTERVAL_NOTE = (
    "Against a baseline other than gpt-4-0314, Arena-Hard's own script prints another interval (the "
    '"Arena-Hard\'s script" column): its bootstrap anchors each replicate at gpt-4-0314, not at the baseline, '
    "so the baseline's Elo wanders in the replicates (set by its games against itself), and it subtracts the "
    "baseline's percentile from the model's, which is not the percentile of the score. That interval is "
    "narrower and skewed; the 95% CI beside it is the percentile interval of the score itself."
)
STYLE_NOTE = (
    "Style-controlled: the same fit with answer length and markdown header, list and bold counts as covariates "
    "(Arena-Hard's --style-control); the score is the model's win rate at equal style. Length is in {unit}."
)
LENGTH_UNITS = {
    "tokens": "tokens, the answer files' own token_len, as Arena-Hard counts it",
    "characters": "characters: not every answer file gives its token_len, which Arena-Hard counts in",
}
# the columns of the style counts in Store.graded_games, per side, in STYLE_FEATURES order
__all__ = ["DEFAULT_ROUNDS", "DEFAULT_WEIGHT", "STYLE_VERSIONS", "interval_text"]  # for the CLI, re-exported
_STYLE_COLUMNS = dict(zip(STYLE_FEATURES, ("length", "headers", "lists", "bold")))


@dataclass(frozen=True)
class ArenaHardView:
    """Arena-Hard scores of ``judge``'s games against ``baseline`` in ``dataset``."""

    dataset: str
    judge: str
    result: ArenaHardScore
    length_unit: str = "characters"  # of style control's length feature: LENGTH_UNITS

    @property
    def baseline(self) -> str:
        return self.result.baseline

    @property
    def rows(self) -> pd.DataFrame:
        return self.result.rows

    @property
    def notes(self) -> tuple[str, ...]:
        return self.result.notes

    @property
    def method(self) -> str:
        text = METHOD_NOTE.format(weight=self.result.weight, rounds=self.result.n_rounds)
        if self.result.script_interval_differs:
            text = f"{text} {SCRIPT_INTERVAL_NOTE}"
        if not self.result.style_control:
            return text
        return f"{text} {self.style_note}"

    @property
    def style_note(self) -> str:
        """What style control controlled for, in which length unit ('' without style control)."""
        if not self.result.style_control:
            return ""
        style = STYLE_NOTE.format(unit=LENGTH_UNITS[self.length_unit])
        return f"{style} Features built as Arena-Hard {self.result.style_version} builds them."


def games_against(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """``Store.graded_games`` rows in the model's terms: ``model``, ``grade`` (2 = the model much better), and per
    style feature (and ``tokens``, where the frame has them) the model's count and the baseline's
    (``baseline_<feature>``)."""
    base_a = (frame["model_a"] == baseline).to_numpy()
    grade = frame["grade"].astype("float64").to_numpy()
    out = pd.DataFrame(
        {
            "prompt_id": frame["prompt_id"].to_numpy(),
            "model": np.where(base_a, frame["model_b"], frame["model_a"]),
            "grade": np.where(base_a, -grade, grade),
        }
    )
    for feature, column in {**_STYLE_COLUMNS, "tokens": "tokens"}.items():
        if f"{column}_a" not in frame:
            continue
        a = frame[f"{column}_a"].astype("float64").to_numpy()
        b = frame[f"{column}_b"].astype("float64").to_numpy()
        out[feature] = np.where(base_a, b, a)
        out[f"baseline_{feature}"] = np.where(base_a, a, b)
    return out


def arena_hard_view(
    store: Store,
    dataset: str,
    judge: str | None = None,
    baseline: str | None = None,
    *,
    weight: int = DEFAULT_WEIGHT,
    style_control: bool = False,
    style_version: str = "v0.1",
    n_rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
) -> ArenaHardView:
    """The Arena-Hard score of every model against the baseline by ``judge`` (default: the dataset's only judge).

    The baseline defaults to the one the importer inferred (:func:`core.app.winrate.infer_baseline`).  A
    StoreError when the dataset has no judge, no graded verdict, or battles without the baseline."""
    if judge is None:
        judge = default_judge(store, dataset)
        if judge is None:
            raise StoreError(
                f"dataset {dataset!r} has no judge: the Arena-Hard score needs a judge's graded verdicts (A>>B … B>>A)"
            )
    if baseline is None:
        baseline = infer_baseline(store, dataset)
    elif baseline not in set(store.models_frame(dataset)["model"]):
        raise StoreError(f"no model {baseline!r} in dataset {dataset!r}")
    if baseline not in store.common_baselines(dataset):
        raise StoreError(
            f"not every battle of {dataset!r} is against {baseline}: the Arena-Hard score needs a star design, "
            "every model judged against one baseline"
        )
    frame = store.graded_games(dataset, judge)
    if frame.empty or frame["grade"].notna().sum() == 0:
        raise StoreError(
            f"judge {judge!r} has no graded verdict (A>>B, A>B, A=B, B>A, B>>A) in dataset {dataset!r}: the "
            "Arena-Hard score needs an Arena-Hard import (python -m core import DIR --format arena-hard); "
            "`winrate` without --arena-hard gives the win rates of plain verdicts"
        )
    games = games_against(frame, baseline)
    notes: tuple[str, ...] = ()
    if style_control:
        textless = games[[c for f in STYLE_FEATURES for c in (f, f"baseline_{f}")]].isna().any(axis=1)
        if textless.all():
            raise StoreError(f"no game of {dataset!r} has both answers' texts: style control needs them")
        if textless.any():
            # Arena-Hard's script needs every answer for style control; here the games with both are fitted
            notes = (
                f"{int(textless.sum()):,} of {len(games):,} games lack an answer's text and are left out of style "
                "control (Arena-Hard's script needs every answer's metadata; its plain score reads none)",
            )
            games = games[~textless.to_numpy()]
    unit = "characters"
    if style_control and games[["tokens", "baseline_tokens"]].notna().all().all():
        # Arena-Hard's length is the answer files' token_len: used where every answer gives one
        games = games.assign(length=games["tokens"], baseline_length=games["baseline_tokens"])
        unit = "tokens"
    self_grades = store.dataset_meta(dataset).get("baseline_self_grades", {}).get(judge, {})
    result = arena_hard_score(
        games,
        baseline,
        weight=weight,
        style_control=style_control,
        style_version=style_version,
        n_rounds=n_rounds,
        seed=seed,
        baseline_self_grades=np.repeat([float(g) for g in self_grades], [int(n) for n in self_grades.values()]),
    )
    if notes:
        result = replace(result, notes=(*notes, *result.notes))
    return ArenaHardView(dataset, judge, result, unit)


def has_grades(store: Store, dataset: str, judge: str | None) -> bool:
    """Whether ``judge`` graded any game of the dataset (an Arena-Hard import)."""
    if judge is None:
        return False
    return store.has_graded_games(dataset, judge)


@dataclass(frozen=True)
class BaselineScores:
    """The plain and style-controlled Arena-Hard scores side by side (the Leaderboard's and the export's)."""

    plain: ArenaHardView
    styled: ArenaHardView | None  # None when an answer's text is missing
    style_reason: str | None


def baseline_scores(store: Store, dataset: str, judge: str | None) -> BaselineScores | Unavailable:
    """The Leaderboard's Arena-Hard score under "Against the baseline": plain and style-controlled, with
    Arena-Hard's defaults (weight 3, 100 rounds, seed 0); Unavailable when the dataset has no graded games."""
    try:
        if not has_grades(store, dataset, judge):
            return Unavailable("no judge's graded verdicts (Arena-Hard's A>>B … B>>A): no Arena-Hard score")
        plain = arena_hard_view(store, dataset, judge)
    except (StoreError, ValueError) as exc:
        return Unavailable(str(exc))
    try:
        styled = arena_hard_view(store, dataset, judge, style_control=True)
    except (StoreError, ValueError) as exc:
        return BaselineScores(plain, None, str(exc))
    return BaselineScores(plain, styled, None)


def table(scores: BaselineScores) -> pd.DataFrame:
    """The scores as the page, report and bundle show them: score with Arena-Hard's (−, +) interval."""
    r = scores.plain.rows
    out = pd.DataFrame(
        {
            "model": r["model"],
            "score (%)": r["score"].round(1),
            "95% CI": [interval_text(s, lo, hi) for s, lo, hi in zip(r["score"], r["lower"], r["upper"])],
        }
    )
    if scores.plain.result.script_interval_differs:
        out["95% CI (Arena-Hard's script)"] = [
            interval_text(s, lo, hi) for s, lo, hi in zip(r["score"], r["script_lower"], r["script_upper"])
        ]
    if scores.styled is not None:
        s = scores.styled.rows.set_index("model").reindex(r["model"])
        out["style-controlled (%)"] = s["score"].round(1).to_numpy()
        out["95% CI (style)"] = [interval_text(x, lo, hi) for x, lo, hi in zip(s["score"], s["lower"], s["upper"])]
    out["games"] = r["n_games"].to_numpy()
    return out


def export_frame(scores: BaselineScores) -> pd.DataFrame:
    """The bundle's ``leaderboards/arena_hard_score.csv``: one row per model, the plain and style-controlled
    scores with their interval bounds (percent), Elo, graded games and weighted rows."""
    r = scores.plain.rows
    out = r.rename(columns={"score": "score", "lower": "lower", "upper": "upper"}).copy()
    out.insert(0, "baseline", scores.plain.baseline)
    out.insert(0, "judge", scores.plain.judge)
    if scores.styled is not None:
        s = scores.styled.rows.set_index("model").reindex(r["model"])
        out["score_style"] = s["score"].to_numpy()
        out["lower_style"] = s["lower"].to_numpy()
        out["upper_style"] = s["upper"].to_numpy()
    out["weight"] = scores.plain.result.weight
    out["n_rounds"] = scores.plain.result.n_rounds
    return out
