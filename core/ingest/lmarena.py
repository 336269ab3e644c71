"""LMArena battles (Parquet, CSV or JSONL).

Columns: model_a, model_b, winner[, judge (the annotator), conversation_a/b, turn, language, tstamp].
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import ARENA_WINNERS, DatasetTables
from core.ingest.common import IngestError, models_frame, read_table_file, require_names, with_style


def _last_assistant_text(conv: Any) -> str | None:
    if conv is None or (isinstance(conv, float) and math.isnan(conv)):
        return None
    if isinstance(conv, str):
        if not conv.strip():
            return None
        conv = json.loads(conv)
    msgs = list(conv)
    for m in reversed(msgs):
        m = dict(m)
        if m.get("role") == "assistant":
            content = m.get("content")
            if isinstance(content, dict):
                content = content.get("answer", json.dumps(content))
            return None if content is None else str(content)
    return None


def _first_user_text(conv: Any) -> str | None:
    if conv is None or (isinstance(conv, float) and math.isnan(conv)):
        return None
    if isinstance(conv, str):
        conv = json.loads(conv) if conv.strip() else []
    for m in list(conv):
        m = dict(m)
        if m.get("role") == "user":
            return str(m.get("content"))
    return None


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
    winners = df["winner"].astype(str).str.strip().str.lower()
    mapped = winners.map(ARENA_WINNERS)
    bad = np.flatnonzero(mapped.isna().to_numpy())
    if len(bad):
        r = int(bad[0])
        raise IngestError(
            path,
            f"unknown winner {df['winner'].iloc[r]!r} (expected one of {sorted(ARENA_WINNERS)})",
            row=r + 1,
            field="winner",
        )
    n = len(df)
    keys = np.arange(n, dtype=np.int64)

    def optional(col: str, cast: Callable[[Any], Any] | None = None) -> np.ndarray | list[None]:
        if col not in df.columns:
            return [None] * n
        s = df[col].replace("", None)
        return s.map(cast, na_action="ignore").to_numpy(dtype=object) if cast else s.to_numpy(dtype=object)

    def _num(col: str, kind: str) -> np.ndarray | None:
        if col not in df.columns:
            return None
        vals = pd.to_numeric(df[col].replace("", None), errors="coerce")
        bad = np.flatnonzero(vals.isna().to_numpy() & df[col].replace("", None).notna().to_numpy())
        if len(bad):
            r = int(bad[0])
            raise IngestError(path, f"expected a {kind}, got {df[col].iloc[r]!r}", row=r + 1, field=col)
        return vals.to_numpy()

    turn, tstamp = _num("turn", "whole number"), _num("tstamp", "number")
    ext = optional("question_id", str)
    battles = pd.DataFrame(
        {
            "battle_key": keys,
            "model_a": df["model_a"].to_numpy(),
            "model_b": df["model_b"].to_numpy(),
            "external_id": ext,
            "language": optional("language", str),
            "turn": turn if turn is not None else [None] * n,
            "tstamp": tstamp if tstamp is not None else [None] * n,
        }
    )
    annot = optional("judge", str)
    votes = pd.DataFrame({"battle_key": keys, "winner": mapped.to_numpy(), "annotator": annot})
    prompts = completions = None
    if "conversation_a" in df.columns and "conversation_b" in df.columns:
        texts_a, texts_b, ptext = [], [], []
        for i, (ca, cb) in enumerate(zip(df["conversation_a"].tolist(), df["conversation_b"].tolist())):
            try:
                texts_a.append(_last_assistant_text(ca))
                texts_b.append(_last_assistant_text(cb))
                ptext.append(_first_user_text(ca))
            except (json.JSONDecodeError, TypeError, ValueError):
                raise IngestError(
                    path, "conversation is not a list of {role, content} messages", row=i + 1, field="conversation_a"
                ) from None
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
