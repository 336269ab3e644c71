"""Which views can run on a dataset, and why not: the sidebar says so before anyone clicks.

Read from counts only (votes, annotators, judges and what their judgments
carry, completions with correctness labels), so it is cheap on any store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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
    judge_order_known: bool  # some of the judge's verdicts say which answer was shown first
    judge_confidence: bool  # rubric scores, first-token probabilities or a stated confidence (SCOPE needs one)
    judge_template: str | None
    judge_description: str | None
    n_graded: int  # completions with a correctness label
    n_measured: int = 0  # completions with a length (style and verbosity need them)
    n_grades: int = 0  # single-answer grades (the MT-Bench score)


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
        judge_order_known=bool(row is not None and {"ab", "ba"} & set(row["orders"])),
        judge_confidence=bool(
            row is not None and (row["n_rubric"] > 0 or row["n_logprob"] > 0 or row["n_confidence"] > 0)
        ),
        judge_template=None if row is None else _text(row["template"]),
        judge_description=None if row is None else _text(row["profile"]),
        n_graded=int(comps["correct"].notna().sum()) if len(comps) else 0,
        n_measured=int(comps["length"].notna().sum()) if len(comps) else 0,
        n_grades=int(info.get("n_grades", 0)),
    )


def _text(value: object) -> str | None:
    """A text column's value, None when missing (pandas reads a missing value of such a column as NaN, and
    str(NaN) is "nan")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


# What would make a page work, per reason: which data (human votes, which judge output) and where it comes from
# (an Admin action, the Vote page, an import).  The page's notice says it; the sidebar names only the reason.
IMPORT = "import a file with `python -m core import` (README, section Data, lists the formats)"
RUN_JUDGE = "run a judge from the Admin page (it judges the answers' texts) or " + IMPORT.replace("a file", "judgments")
ADD_VOTES = "import a file with human votes, or collect votes on the Vote page"
ADD_CONFIDENCE = (
    "a judge that gives a confidence with its verdict: rubric scores (the *rubric* template) or first-token A/B "
    "logprobs (the *ab-logprob* template) — run one from the Admin page, best with *judge both presentation "
    "orders* ticked — or import judgments that carry scores or probabilities"
)
ADD_RUBRIC = (
    "rubric scores from the judge on battles with a decisive human vote: run a judge with the *rubric* template "
    "from the Admin page, or import judgments that carry scores"
)
ADD_BOTH_ORDERS = (
    "the judge's verdicts in both presentation orders: run it from the Admin page with *judge both presentation "
    "orders* ticked, or import judgments that record each order"
)
ADD_ORDER = (
    "judgments that record which answer the judge saw first, or the answers' texts (then the Admin page can "
    "judge both presentation orders, and length and formatting can be measured): " + IMPORT
)


def unavailable_pages(f: DatasetFacts, needs: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Page key → one line saying why it cannot run on this dataset, or can only show a notice (pages that can
    show results are absent).  ``needs``: page key → the names of :data:`REQUIREMENTS` it checks, in order (the
    page registry, ``app_pages/_registry.py``); the first one the dataset fails is the reason.
    :func:`remedies` says what would make each work."""
    return {page: why for page, (why, _) in _reasons(f, needs).items()}


def remedies(f: DatasetFacts, needs: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Page key → what would make it work (data and where it comes from), for the pages :func:`unavailable_pages`
    lists."""
    return {page: fix for page, (_, fix) in _reasons(f, needs).items()}


Reason = tuple[str, str]  # (why the page cannot run, what would make it work)


def _battles(f: DatasetFacts) -> Reason | None:
    return ("no battles", IMPORT) if f.n_battles == 0 else None


def _battles_or_grades(f: DatasetFacts) -> Reason | None:
    """Battles to rate, or single-answer grades to score (the Leaderboard shows the MT-Bench score)."""
    return None if f.n_grades else _battles(f)


def _votes_judge_or_grades(f: DatasetFacts) -> Reason | None:
    return None if f.n_grades else _votes_or_judge(f)


def _votes_or_judge(f: DatasetFacts) -> Reason | None:
    if f.n_votes == 0 and f.judge is None:
        return "no human votes and no judgments", f"{ADD_VOTES}, or {RUN_JUDGE}"
    return None


def _judge(f: DatasetFacts) -> Reason | None:
    return ("no judge has judged this dataset", RUN_JUDGE) if f.judge is None else None


def _votes(f: DatasetFacts) -> Reason | None:
    """Human votes to compare the judge with."""
    return ("no human votes to compare the judge with", ADD_VOTES) if f.n_votes == 0 else None


def _confidence(f: DatasetFacts) -> Reason | None:
    if f.judge is not None and f.n_votes > 0 and not f.judge_confidence:
        return (
            "the judge gives no confidence with its verdicts (no rubric scores, logprobs or stated confidence)",
            ADD_CONFIDENCE,
        )
    return None


def _order_or_texts(f: DatasetFacts) -> Reason | None:
    # position needs the shown order, style and verbosity the answers' lengths, self-preference other judges
    if f.judge is not None and not f.judge_order_known and f.n_measured == 0 and len(f.judges) < 2:
        return (
            "the judge's verdicts do not say which answer was shown first, and there are no answer texts to measure",
            ADD_ORDER,
        )
    return None


def _judge_or_annotators(f: DatasetFacts) -> Reason | None:
    if f.judge is None and f.n_annotators == 0:
        return "no judge verdicts and no annotator ids", f"{RUN_JUDGE}, or import human votes with annotator ids"
    return None


def _any_signal(f: DatasetFacts) -> Reason | None:
    if f.n_votes == 0 and f.judge is None and f.n_graded == 0:
        return (
            "no votes, judgments or correctness labels",
            f"{ADD_VOTES}, {RUN_JUDGE}, or import a benchmark whose answers are graded correct or not",
        )
    return None


# What a page can need, by name (a page lists the names it needs in the page registry): each test returns
# None when the dataset has it, else why not and what would make it work.
REQUIREMENTS: dict[str, Callable[[DatasetFacts], Reason | None]] = {
    "battles": _battles,
    "battles-or-grades": _battles_or_grades,
    "votes-judge-or-grades": _votes_judge_or_grades,
    "votes-or-judge": _votes_or_judge,
    "judge": _judge,
    "votes": _votes,
    "confidence": _confidence,
    "order-or-texts": _order_or_texts,
    "judge-or-annotators": _judge_or_annotators,
    "any-signal": _any_signal,
}


def _reasons(f: DatasetFacts, needs: Mapping[str, Sequence[str]]) -> dict[str, Reason]:
    why: dict[str, Reason] = {}
    for page, names in needs.items():
        for name in names:
            reason = REQUIREMENTS[name](f)
            if reason is not None:
                why[page] = reason
                break
    return why
