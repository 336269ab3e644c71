"""Evaluations of new models (``python -m core evaluate``): what each one concluded, kept to be read later."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from core import redact
from core.store.base import StoreBase, next_id

EVALUATION_COLUMNS = (
    "model",
    "judge",
    "alpha",
    "status",
    "method",
    "predicted",
    "lower",
    "upper",
    "rank_best",
    "rank_worst",
    "n_rated",
    "n_judged",
    "n_calibration",
    "reason",
    "result_json",
)


def _value(v: Any) -> Any:
    # NaN in a DOUBLE column would read back as a number; a missing value is NULL
    return None if isinstance(v, float) and math.isnan(v) else v


class EvaluationStore(StoreBase):
    """One row per finished evaluation of a model (placed, or why it could not be)."""

    def save_evaluation(self, dataset: str, row: dict) -> int:
        """Store one evaluation (keys of ``EVALUATION_COLUMNS``; model, judge, alpha, status required); its id."""
        unknown = set(row) - set(EVALUATION_COLUMNS)
        if unknown:
            raise ValueError(f"unknown evaluation fields: {', '.join(sorted(unknown))}")
        missing = [k for k in ("model", "judge", "alpha", "status") if row.get(k) is None]
        if missing:
            raise ValueError(f"an evaluation needs {', '.join(missing)}")
        ds = self.dataset(dataset).dataset_id
        values = [_value(row.get(c)) for c in EVALUATION_COLUMNS]
        for k in ("reason", "result_json"):
            i = EVALUATION_COLUMNS.index(k)
            if values[i] is not None:
                values[i] = redact.redact(str(values[i]))
        cols = ", ".join(EVALUATION_COLUMNS)
        marks = ", ".join("?" for _ in EVALUATION_COLUMNS)
        with self.transaction() as cur:
            eid = next_id(cur, "evaluations", "evaluation_id")
            cur.execute(
                f"INSERT INTO evaluations (evaluation_id, dataset_id, {cols}) VALUES (?, ?, {marks})",
                [eid, ds, *values],
            )
        return eid

    def evaluations(self, dataset: str | None = None) -> pd.DataFrame:
        """Every evaluation (of one dataset), newest first, with the dataset's name; result_json excluded."""
        where, params = "", []
        if dataset is not None:
            where, params = "WHERE e.dataset_id = ?", [self.dataset(dataset).dataset_id]
        cols = ", ".join(f"e.{c}" for c in EVALUATION_COLUMNS if c != "result_json")
        return (
            self._cur()
            .execute(
                f"""SELECT e.evaluation_id, d.name AS dataset, {cols}, e.created_at
                    FROM evaluations e JOIN datasets d USING (dataset_id) {where}
                    ORDER BY e.created_at DESC, e.evaluation_id DESC""",
                params,
            )
            .df()
        )

    def evaluation(self, evaluation_id: int) -> dict | None:
        """One evaluation with its result_json (as stored), or None."""
        cols = ", ".join(f"e.{c}" for c in EVALUATION_COLUMNS)
        cur = self._cur().execute(
            f"""SELECT e.evaluation_id, d.name AS dataset, {cols}, e.created_at
                FROM evaluations e JOIN datasets d USING (dataset_id) WHERE e.evaluation_id = ?""",
            [int(evaluation_id)],
        )
        row = cur.fetchone()
        if row is None:
            return None
        names = [d[0] for d in cur.description]
        return dict(zip(names, row, strict=True))
