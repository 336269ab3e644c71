"""SoftElo annotation CSV: model_a, model_b, human_pref, judge_pref, scores_a, scores_b[, meta_lang, battle_id/row_id].

One human vote and one order-averaged rubric judgment per row; preferences
map to outcomes by ``core.domain.preference_to_target``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core import domain
from core.domain import CRITERIA, DatasetTables, outcome_of_target, preference_to_target
from core.ingest.common import (
    IngestError,
    float_column,
    models_frame,
    parse_scores,
    quote,
    read_csv,
    require_names,
    text_column,
)


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    df = read_csv(path, ("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b"))
    require_names(path, df, ("model_a", "model_b"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    human = preference_to_target(float_column(path, df, "human_pref", 0.0, 1.0))
    judge_y = preference_to_target(float_column(path, df, "judge_pref", 0.0, 1.0))
    scores = {}
    for side in ("a", "b"):
        field = f"scores_{side}"
        parsed = [parse_scores(path, raw, i + 1, field) for i, raw in enumerate(df[field].tolist())]
        for c in CRITERIA:
            scores[f"{side}_{c}"] = np.array([d.get(c, np.nan) for d in parsed], dtype=float)
    id_col = "battle_id" if "battle_id" in df.columns else ("row_id" if "row_id" in df.columns else None)
    ext = (
        np.array([(t or "").strip() for t in text_column(path, df, id_col)], dtype=object)
        if id_col
        else np.array([str(i) for i in range(len(df))], dtype=object)
    )
    if id_col and (ext == "").any():
        raise IngestError(path, "empty battle id", row=int(np.flatnonzero(ext == "")[0]) + 1, field=id_col)
    dup = pd.Series(ext).duplicated()
    if id_col and dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise IngestError(path, f"duplicate battle id {quote(ext[r])}", row=r + 1, field=id_col)
    n = len(df)
    keys = np.arange(n, dtype=np.int64)
    lang = np.array(text_column(path, df, "meta_lang"), dtype=object)
    battles = pd.DataFrame(
        {"battle_key": keys, "model_a": df["model_a"], "model_b": df["model_b"], "external_id": ext, "language": lang}
    )
    votes = pd.DataFrame({"battle_key": keys, "winner": outcome_of_target(human), "annotator": None})
    judge_name = judge or "softelo-judge"
    judgments = pd.DataFrame(
        {
            "battle_key": keys,
            "judge": judge_name,
            "order": "avg",
            "prompt_version": "imported",
            "verdict": outcome_of_target(judge_y),
            **scores,
        }
    )
    judges = pd.DataFrame(
        {
            "judge": [judge_name],
            "template": ["rubric"],
            "prompt_version": ["imported"],
            "profile": ["imported from a SoftElo annotation file (order unknown / averaged)"],
        }
    )
    return DatasetTables(
        name=dataset or path.stem,
        source="softelo",
        models=models_frame(pd.concat([df.model_a, df.model_b])),
        battles=battles,
        votes=votes,
        judges=judges,
        judgments=judgments,
        meta={"format": "softelo", "file": path.name, "rows": n},
    )


def battle_frame(path: str | Path) -> pd.DataFrame:
    """A SoftElo CSV as a battle frame (``core.domain.BATTLE_FRAME``), without a store.

    Each row is one battle with one human vote and one order-averaged
    judgment: ``gap_avg`` its rubric gap, ``verdict_avg`` the judge's verdict
    (the hard label, METHODS §2).  Validation is the importer's, so bad files
    fail the same way.
    """
    t = read(path)
    j, votes = t.judgments, t.votes
    assert j is not None and votes is not None  # a SoftElo file has both on every row
    gap = domain.rubric_gap(
        j[[f"a_{c}" for c in CRITERIA]].to_numpy(float), j[[f"b_{c}" for c in CRITERIA]].to_numpy(float)
    )
    n = len(t.battles)
    nan = np.full(n, np.nan)
    verdict = j["verdict"].to_numpy(dtype=object)
    return domain.battle_frame(
        {
            "battle_id": np.arange(n, dtype=np.int64),
            "battle_key": t.battles["battle_key"].to_numpy(np.int64),
            "external_id": t.battles["external_id"].to_numpy(dtype=object),
            "model_a": t.battles["model_a"].to_numpy(dtype=object),
            "model_b": t.battles["model_b"].to_numpy(dtype=object),
            "language": t.battles["language"].to_numpy(dtype=object),
            "human_y": domain.outcome_y(votes["winner"]),
            "n_votes": np.ones(n, dtype=np.int64),
            "gap_avg": gap,
            "verdict_avg": verdict,
            "n_judgments": np.ones(n, dtype=np.int64),
            "judge_hard": domain.hard_label(verdict, gap, nan, nan, nan, nan),
            "gap": gap,
        }
    )
