"""Judge contests CSV (the consistency paper): judge, first, second, question_id, winner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import IngestError, known_family, models_frame, quote, read_csv, require_names, text_column


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """Judge contests: one battle per (question, unordered pair), judgments keep the order shown."""
    path = Path(path)
    df = read_csv(path, ("judge", "first", "second", "question_id", "winner"))
    require_names(path, df, ("judge", "first", "second"))
    qid = pd.Series([(t or "").strip() for t in text_column(path, df, "question_id")], dtype=object)
    empty = np.flatnonzero((qid == "").to_numpy())
    if len(empty):
        raise IngestError(path, "empty question id", row=int(empty[0]) + 1, field="question_id")
    first, second = df["first"].to_numpy(), df["second"].to_numpy()
    same = np.flatnonzero(first == second)
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="second")
    winner = np.array([(t or "").strip() for t in text_column(path, df, "winner")], dtype=object)
    is_tie = np.char.lower(winner.astype(str)) == "tie"
    ok = is_tie | (winner == first) | (winner == second)
    bad = np.flatnonzero(~ok)
    if len(bad):
        r = int(bad[0])
        raise IngestError(
            path,
            f"winner {quote(winner[r])} is neither contestant ({quote(first[r])}, {quote(second[r])}) nor 'Tie'",
            row=r + 1,
            field="winner",
        )
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    key_frame = pd.DataFrame({"q": qid.to_numpy(), "lo": lo, "hi": hi})
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(key_frame))
    # model_a of a battle = the model shown first in its first occurrence.
    first_row = pd.Series(np.arange(len(df))).groupby(codes).min().to_numpy()
    model_a, model_b = first[first_row], second[first_row]
    battles = pd.DataFrame(
        {
            "battle_key": np.arange(len(first_row), dtype=np.int64),
            "model_a": model_a,
            "model_b": model_b,
            "external_id": qid.to_numpy()[first_row],
        }
    )
    order = np.where(first == model_a[codes], "ab", "ba")
    verdict = np.where(is_tie, "tie", np.where(winner == model_a[codes], "a", "b"))
    judgments = pd.DataFrame(
        {
            "battle_key": codes.astype(np.int64),
            "judge": df["judge"].to_numpy(),
            "order": order,
            "prompt_version": "imported",
            "verdict": verdict,
        }
    )
    dup = judgments.duplicated(["battle_key", "judge", "order"])
    if dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise IngestError(
            path, "the same judge judged the same contest in the same order twice", row=r + 1, field="judge"
        )
    judges = pd.DataFrame({"judge": sorted(set(df["judge"])), "prompt_version": "imported", "template": "two-stage"})
    judges["family"] = [known_family(j) for j in judges["judge"]]
    return DatasetTables(
        name=dataset or path.stem,
        source="contests",
        models=models_frame(np.concatenate([first, second])),
        battles=battles,
        judges=judges,
        judgments=judgments,
        meta={"format": "contests", "file": path.name, "rows": len(df)},
    )
