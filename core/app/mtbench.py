"""The MT-Bench score of a dataset with single-answer grades (FastChat's ``show_result.py --mode single``).

The Leaderboard page, the report, the bundle and ``python -m core mtbench`` all read :func:`mtbench_view`:
the store's grades (``Store.grades_frame``) into :func:`core.stats.mtbench.mtbench_scores`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from core.app import Unavailable
from core.stats.mtbench import MTBenchScores, mtbench_scores
from core.store import Store

NOTE = (
    "MT-Bench score as FastChat's show_result.py --mode single computes it: per model the mean of every grade "
    "(1–10) the judge gave its answers, grades the judge's text did not state (FastChat's -1) left out; turn 1 "
    "and turn 2 are the means at each turn, and the score is the mean over all of the model's grades."
)


@dataclass(frozen=True)
class MTBenchView:
    """The score table of one judge's grades in a dataset, and the other judges that graded it."""

    dataset: str
    judges: tuple[str, ...]  # every judge with grades in the dataset
    scores: MTBenchScores

    @property
    def judge(self) -> str | None:
        return self.scores.judge

    def headline(self, name: Callable[[object], str] = str) -> str:
        """One sentence: who leads, by how much, on how many grades.  ``name`` renders a model or judge name
        (the page passes its Markdown escape; the report escapes the whole sentence as HTML)."""
        t = self.scores.table.dropna(subset=["score"])
        if t.empty:
            return f"No model has a readable grade from {name(self.judge)}."
        top = t.iloc[0]
        lead = f"{top['score']:.3f}"
        if len(t) > 1:
            lead += f", {top['score'] - t.iloc[1]['score']:.3f} ahead of **{name(t.iloc[1]['model'])}**"
        return (
            f"**{name(top['model'])}** has the highest MT-Bench score, {lead} "
            f"({int(top['n'])} grades by {name(self.judge)})."
        )

    def caption(self) -> str:
        s = self.scores
        dropped = f"; {s.n_dropped:,} unreadable grades left out" if s.n_dropped else ""
        return f"{NOTE} Judge {s.judge}: {s.n_grades:,} grades of {len(s.table)} models{dropped}."


def grade_judges(store: Store, dataset: str) -> tuple[str, ...]:
    """The judges with single-answer grades in the dataset (none: it has no grades)."""
    return tuple(sorted(set(store.grades_frame(dataset)["judge"].astype(str))))


def mtbench_view(store: Store, dataset: str, judge: str | None = None) -> MTBenchView | Unavailable:
    """The MT-Bench score table of ``judge``'s grades (default: the judge with the most grades)."""
    grades = store.grades_frame(dataset)
    if grades.empty:
        return Unavailable(f"dataset {dataset!r} has no single-answer grades (FastChat's *_single.jsonl)")
    judges = tuple(sorted(set(grades["judge"].astype(str))))
    if judge is None:
        judge = str(grades["judge"].astype(str).value_counts().sort_index().idxmax())
    elif judge not in judges:
        raise ValueError(f"judge {judge!r} has no grades in dataset {dataset!r} (judges with grades: {list(judges)})")
    mine = grades[grades["judge"] == judge]
    scores = mtbench_scores(
        mine["model"].astype(str).to_numpy(),
        mine["turn"].to_numpy(),
        pd.to_numeric(mine["score"], errors="coerce").to_numpy(dtype=float),
        judge=judge,
    )
    return MTBenchView(dataset, judges, scores)


def display_table(view: MTBenchView) -> pd.DataFrame:
    """The table as shown and exported: rank, model, score and the turn means to 3 decimals, counts."""
    t = view.scores.table
    out = pd.DataFrame(
        {
            "Rank": range(1, len(t) + 1),
            "Model": t["model"],
            "MT-Bench score": t["score"].round(3),
            "Turn 1": t["turn_1"].round(3),
            "Turn 2": t["turn_2"].round(3),
            "Grades": t["n"],
            "Unreadable": t["n_dropped"],
        }
    )
    if out["Turn 2"].isna().all():
        out = out.drop(columns=["Turn 2"])
    return out


def file_stem(view: MTBenchView) -> str:
    """``mtbench_<dataset>_<judge>``: the download's name (letters, digits, ``.``, ``_``, ``-`` kept)."""
    parts = ["mtbench", view.dataset, *([view.judge] if view.judge else [])]
    return "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-.")[:60] or "x" for p in parts)
