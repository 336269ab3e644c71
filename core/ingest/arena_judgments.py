"""Judgments of an existing dataset's battles (Parquet): question_id, judge, order, winner[, rubric scores].

``question_id`` is the battle's id as imported (the LMArena file's
``question_id``, stored as the battle's external id); ``order`` is ``ab``
(the battle's model_a shown first) or ``ba``; ``winner`` is model_a, model_b
or tie (``tie (bothbad)`` counts as a tie) in the battle's terms, whatever
the order shown; ``a_<criterion>`` / ``b_<criterion>`` are the rubric scores
of model_a and model_b (criteria of ``core.domain.CRITERIA``; any subset,
missing values allowed).  The file adds judgments to the dataset named by
``--dataset``: every question_id must name exactly one of its battles, and a
judge's judgment of a battle in an order is stored once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from core.domain import SCORE_COLUMNS, DatasetTables
from core.ingest.common import MAX_QUOTE, SCORE_RANGE, IngestError, known_family, quote
from core.store.bulk import (
    BulkJudgments,
    ParquetFile,
    judgment_columns,
    judgment_keys,
    judgment_rules,
    plain_judgment_types,
)
from core.store.errors import StoreError

REQUIRED = ("question_id", "judge", "order", "winner")
# The winner value (lower case) → the stored verdict, in the battle's terms.
WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie", "both_bad": "tie"}

_MESSAGES: dict[str, Callable[[Any], str]] = {
    "question_id": lambda v: "empty question id",
    "judge": lambda v: (
        "empty judge name"
        if v is None or not str(v).strip()
        else f"a judge name of {len(str(v)):,} characters (at most {MAX_QUOTE})"
    ),
    "order": lambda v: f"unknown order {quote(v)} (expected 'ab': model_a shown first, or 'ba')",
    "winner": lambda v: f"unknown winner {quote(v)} (expected one of {sorted(WINNERS)})",
    "score": lambda v: (
        f"expected a score in [{SCORE_RANGE[0]:g}, {SCORE_RANGE[1]:g}], got {quote(v)}"
        if isinstance(v, (int, float)) and math.isfinite(v)
        else f"expected a finite score, got {quote(v)}"
    ),
}


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """The row-by-row reader this format does not have: only the SQL path (:func:`bulk_plan`) reads it."""
    path = Path(path)
    if path.suffix.lower() != ".parquet":
        raise IngestError(path, "arena-judgments files are Parquet (write one with pandas' DataFrame.to_parquet)")
    raise IngestError(
        path,
        "expected the columns question_id, judge, order, winner as text (question_id may be an integer) and "
        f"numeric rubric scores ({', '.join(SCORE_COLUMNS[:2])}, …)",
    )


def bulk_plan(path: str | Path, dataset: str | None = None, judge: str | None = None) -> BulkJudgments | None:
    """Validate a judgment file in SQL; the store checks the battles it names when it writes."""
    path = Path(path)
    if not dataset:
        raise IngestError(path, "name the dataset whose battles these judgments judge with --dataset")
    if path.suffix.lower() != ".parquet":
        return None  # read() says why
    if path.stat().st_size == 0:
        raise IngestError(path, "the file is empty")
    try:
        pf = ParquetFile(path)
    except StoreError as exc:
        raise IngestError(path, str(exc).removeprefix(f"{path}: ")) from None
    with pf:
        types = pf.types
        for col in REQUIRED:
            if col not in types:
                raise IngestError(path, f"missing required column {col!r}; found {list(types)}", field=col)
        scores = [c for c in SCORE_COLUMNS if c in types]
        if not plain_judgment_types(types, scores):
            return None
        n = pf.n_rows()
        if n == 0:
            raise IngestError(path, "the file has no rows")
        broken = pf.first_violation(judgment_rules(types, scores, tuple(WINNERS), MAX_QUOTE, SCORE_RANGE))
        if broken is not None:
            rule, row, value = broken
            raise IngestError(path, _MESSAGES[rule.kind](value), row=row, field=rule.field)
        keys = judgment_keys(types)
        repeated = pf.first_repeated(keys)
        if repeated is not None:
            raise IngestError(
                path, "the same judge judged the same battle in the same order twice", row=repeated, field="judge"
            )
        columns = judgment_columns(types, scores, WINNERS)
        names = sorted(str(x) for x in pf.distinct_values(columns["judge"]))
    judges = pd.DataFrame(
        {
            "judge": names,
            "family": [known_family(j) for j in names],
            "prompt_version": "imported",
            "template": "rubric" if scores else None,
        }
    )
    return BulkJudgments(path=path, dataset=dataset, key=keys[0], judges=judges, columns=columns, n_rows=n)
