"""Which views can run on a dataset, and why not: the sidebar says so before anyone clicks.

Read from counts only (votes, annotators, judges and what their judgments
carry, completions with correctness labels), so it is cheap on any store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.store import Store


@dataclass(frozen=True)
class DatasetFacts:
    n_votes: int
    n_annotators: int
    n_battles: int
    judges: tuple[str, ...]
    judge: str | None  # the selected judge
    judge_rubric: bool  # the selected judge gave rubric scores
    judge_both_orders: bool
    judge_template: str | None
    judge_description: str | None
    n_graded: int  # completions with a correctness label


def dataset_facts(store: Store, dataset: str, judge: str | None) -> DatasetFacts:
    """The counts the availability rules read."""
    info = next(d for d in store.info()["datasets"] if d["name"] == dataset)
    caps = store.judge_capabilities(dataset)
    mine = caps[caps["judge"] == judge]
    row = mine.iloc[0] if len(mine) else None
    comps = store.completions_frame(dataset)
    return DatasetFacts(
        n_votes=int(info["n_human_votes"]),
        n_annotators=int(info["n_annotators"]),
        n_battles=int(info["n_battles"]),
        judges=tuple(str(j) for j in caps["judge"]),
        judge=judge if row is not None else None,
        judge_rubric=bool(row is not None and row["n_rubric"] > 0),
        judge_both_orders=bool(row is not None and {"ab", "ba"} <= set(row["orders"])),
        judge_template=None if row is None else _text(row["template"]),
        judge_description=None if row is None else _text(row["profile"]),
        n_graded=int(comps["correct"].notna().sum()) if len(comps) else 0,
    )


def _text(value: object) -> str | None:
    """A text column's value, None when missing (pandas reads a missing value of such a column as NaN, and
    str(NaN) is "nan")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


DATA_PAGES = ("leaderboard", "calibration", "residuals", "bias", "selective", "judges", "analyses")


def unavailable_pages(f: DatasetFacts) -> dict[str, str]:
    """Page key → one line saying why it cannot run on this dataset (pages that can run are absent)."""
    why: dict[str, str] = {}
    votes, judge = f.n_votes > 0, f.judge is not None
    if f.n_battles == 0:
        return dict.fromkeys(DATA_PAGES, "no battles")
    if not votes and not judge:
        why["leaderboard"] = "no human votes and no judgments"
    if not judge:
        for k in ("calibration", "residuals", "bias", "selective"):
            why[k] = "no judge has judged this dataset"
    elif not votes:
        for k in ("calibration", "residuals", "selective"):
            why[k] = "no human votes to compare the judge with"
    if not judge and f.n_annotators == 0:
        why["judges"] = "no judge verdicts and no annotator ids"
    if not votes and not judge and f.n_graded == 0:
        why["analyses"] = "no votes, judgments or correctness labels"
    return why
