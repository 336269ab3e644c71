"""An Arena-Hard-Auto directory: question.jsonl and model_answer/*.jsonl (real completions, no verdicts)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    IngestError,
    message_text,
    models_frame,
    quote,
    read_jsonl_lines,
    text_value,
    with_style,
)


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """Prompts, real completions, and one unjudged battle per prompt and model pair."""
    root = Path(path)
    qfile, adir = root / "question.jsonl", root / "model_answer"
    if not root.is_dir():
        raise IngestError(root, "expected an Arena-Hard directory (question.jsonl, model_answer/)")
    if not qfile.exists():
        raise IngestError(qfile, "missing question.jsonl")
    if not adir.is_dir() or not any(adir.glob("*.jsonl")):
        raise IngestError(adir, "missing model_answer/*.jsonl")
    prompts: list[dict] = []
    uid_key: dict[str, int] = {}
    for i, q in read_jsonl_lines(qfile):
        uid = text_value(qfile, q.get("uid", q.get("question_id")), i, "uid")
        if uid is None:
            raise IngestError(qfile, "missing uid", row=i, field="uid")
        text = q.get("prompt")
        field = "prompt"
        if text is None and "turns" in q:
            field = "turns"
            turns = q["turns"]
            if not isinstance(turns, list) or not turns or not isinstance(turns[0], dict):
                raise IngestError(
                    qfile, f"expected a list of {{content}} turns, got {quote(turns)}", row=i, field=field
                )
            text = turns[0].get("content")
        text = message_text(qfile, text, i, field)
        if not text:
            raise IngestError(qfile, "missing prompt text", row=i, field="prompt")
        if uid in uid_key:
            raise IngestError(qfile, f"duplicate uid {quote(uid)}", row=i, field="uid")
        category = text_value(qfile, q.get("cluster", q.get("category")), i, "category")
        uid_key[uid] = len(prompts)
        prompts.append(
            {"prompt_key": len(prompts), "external_id": uid, "text": text, "category": category, "language": "en"}
        )
    comps = []
    for f in sorted(adir.glob("*.jsonl")):
        for i, rec in read_jsonl_lines(f):
            uid = text_value(f, rec.get("uid", rec.get("question_id")), i, "uid") or ""
            if uid not in uid_key:
                raise IngestError(f, f"answer to unknown question uid {quote(uid)}", row=i, field="uid")
            model = (text_value(f, rec.get("model", rec.get("model_id")), i, "model") or f.stem).strip()
            if not model or len(model) > MAX_QUOTE:
                raise IngestError(f, f"model name {quote(model)} is empty or too long", row=i, field="model")
            answer = _answer(f, rec, i)
            comps.append({"prompt_key": uid_key[uid], "model": model, "text": answer})
    completions = pd.DataFrame(comps)
    dup = completions.duplicated(["prompt_key", "model"])
    if dup.any():
        r = completions[dup].iloc[0]
        raise IngestError(
            adir,
            f"model {quote(r.model)} answered question {quote(prompts[r.prompt_key]['external_id'])} twice",
            field="uid",
        )
    completions = with_style(completions)
    battles = []
    for pk, grp in completions.groupby("prompt_key", sort=True):
        for ma, mb in itertools.combinations(sorted(grp["model"]), 2):
            battles.append(
                {
                    "prompt_key": pk,
                    "model_a": ma,
                    "model_b": mb,
                    "external_id": prompts[pk]["external_id"],
                    "language": "en",
                }
            )
    battles_df = pd.DataFrame(battles)
    battles_df.insert(0, "battle_key", np.arange(len(battles_df), dtype=np.int64))
    return DatasetTables(
        name=dataset or root.name,
        source="arena-hard",
        models=models_frame(completions["model"]),
        battles=battles_df,
        prompts=pd.DataFrame(prompts),
        completions=completions,
        meta={"format": "arena-hard", "dir": root.name},
    )


def _answer(path: Path, rec: dict, row: int) -> str:
    """The answer of one record in either layout: the current ``messages[-1].content`` (a ``{thought, answer}``
    object gives its answer) or the original v0.1 ``choices[0].turns`` (FastChat's; turns joined)."""
    if "messages" not in rec and "choices" in rec:
        choices = rec["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise IngestError(
                path, f"expected a list of {{turns}} choices, got {quote(choices)}", row=row, field="choices"
            )
        answer = message_text(path, choices[0].get("turns"), row, "choices")
        if answer is None:
            raise IngestError(path, "no answer text at choices[0].turns", row=row, field="choices")
        return answer
    msgs = rec.get("messages")
    if not isinstance(msgs, list) or not msgs or not isinstance(msgs[-1], dict):
        raise IngestError(
            path, "no answer text at messages[-1].content (or choices[0].turns)", row=row, field="messages"
        )
    answer = message_text(path, msgs[-1].get("content"), row, "messages")
    if answer is None:
        raise IngestError(path, "no answer text at messages[-1].content", row=row, field="messages")
    return answer
