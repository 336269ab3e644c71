"""LMArena battles (Parquet, CSV or JSONL).

Columns: model_a, model_b, winner[, judge (the annotator), conversation_a/b, turn, language, tstamp].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import ARENA_WINNERS, DatasetTables
from core.ingest.common import (
    INT32_MAX,
    TSTAMP_RANGE,
    IngestError,
    conversation,
    float_values,
    int_column,
    models_frame,
    quote,
    read_table_file,
    require_names,
    text_column,
    with_style,
)


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    df = read_table_file(path)
    df.columns = [str(c).strip() for c in df.columns]
    for col in ("model_a", "model_b", "winner"):
        if col not in df.columns:
            raise IngestError(path, f"missing required column {col!r}; found {list(df.columns)}", field=col)
    if df.empty:
        raise IngestError(path, "the file has no rows")
    require_names(path, df, ("model_a", "model_b"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    winners = []
    for i, v in enumerate(df["winner"].tolist()):
        code = ARENA_WINNERS.get(str(v).strip().lower()) if isinstance(v, str) else None
        if code is None:
            raise IngestError(
                path, f"unknown winner {quote(v)} (expected one of {sorted(ARENA_WINNERS)})", row=i + 1, field="winner"
            )
        winners.append(code)
    n = len(df)
    keys = np.arange(n, dtype=np.int64)
    ext = text_column(path, df, "question_id")
    battles = pd.DataFrame(
        {
            "battle_key": keys,
            "model_a": df["model_a"].to_numpy(),
            "model_b": df["model_b"].to_numpy(),
            "external_id": ext,
            "language": text_column(path, df, "language"),
            "turn": pd.array(int_column(path, df, "turn", 1, INT32_MAX), dtype="Int32"),
            "tstamp": pd.array(float_values(path, df, "tstamp", *TSTAMP_RANGE), dtype="Float64"),
        }
    )
    votes = pd.DataFrame({"battle_key": keys, "winner": winners, "annotator": text_column(path, df, "judge")})
    prompts = completions = None
    if "conversation_a" in df.columns and "conversation_b" in df.columns:
        texts_a, texts_b, ptext = [], [], []
        for i, (ca, cb) in enumerate(zip(df["conversation_a"].tolist(), df["conversation_b"].tolist())):
            conv_a = conversation(path, ca, i + 1, "conversation_a")
            conv_b = conversation(path, cb, i + 1, "conversation_b")
            texts_a.append(next((text for role, text in reversed(conv_a) if role == "assistant"), None))
            texts_b.append(next((text for role, text in reversed(conv_b) if role == "assistant"), None))
            ptext.append(next((text for role, text in conv_a if role == "user"), None))
        # Each battle gets its own prompt: the same question id can carry
        # different conversations (multi-turn), so completions are per battle.
        prompts = pd.DataFrame({"prompt_key": keys, "external_id": ext, "text": ptext, "language": battles["language"]})
        comp = pd.DataFrame(
            {
                "prompt_key": np.concatenate([keys, keys]),
                "model": np.concatenate([battles.model_a.to_numpy(), battles.model_b.to_numpy()]),
                "text": texts_a + texts_b,
            }
        )
        completions = with_style(comp)
        battles["prompt_key"] = keys
    return DatasetTables(
        name=dataset or path.stem,
        source="lmarena",
        models=models_frame(pd.concat([df.model_a, df.model_b])),
        battles=battles,
        votes=votes,
        prompts=prompts,
        completions=completions,
        meta={"format": "lmarena", "file": path.name, "rows": n},
    )
