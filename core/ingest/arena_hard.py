"""An Arena-Hard-Auto directory: question.jsonl and model_answer/*.jsonl (real completions, no verdicts)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import IngestError, models_frame, read_jsonl, with_style


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
    questions = read_jsonl(qfile)
    prompts: list[dict] = []
    uid_key: dict[str, int] = {}
    for i, q in enumerate(questions, start=1):
        uid = q.get("uid", q.get("question_id"))
        if uid is None or str(uid) == "":
            raise IngestError(qfile, "missing uid", row=i, field="uid")
        text = q.get("prompt")
        if text is None and isinstance(q.get("turns"), list) and q["turns"]:
            text = q["turns"][0].get("content")
        if not isinstance(text, str) or not text:
            raise IngestError(qfile, "missing prompt text", row=i, field="prompt")
        if str(uid) in uid_key:
            raise IngestError(qfile, f"duplicate uid {uid!r}", row=i, field="uid")
        uid_key[str(uid)] = len(prompts)
        prompts.append(
            {
                "prompt_key": len(prompts),
                "external_id": str(uid),
                "text": text,
                "category": q.get("cluster") or q.get("category"),
                "language": "en",
            }
        )
    comps = []
    for f in sorted(adir.glob("*.jsonl")):
        for i, rec in enumerate(read_jsonl(f), start=1):
            uid = str(rec.get("uid", rec.get("question_id", "")))
            if uid not in uid_key:
                raise IngestError(f, f"answer to unknown question uid {uid!r}", row=i, field="uid")
            model = rec.get("model") or f.stem
            try:
                msgs = rec["messages"]
                answer = msgs[-1]["content"]
                if isinstance(answer, dict):
                    answer = answer["answer"]
            except (KeyError, IndexError, TypeError):
                raise IngestError(f, "no answer text at messages[1].content.answer", row=i, field="messages") from None
            if not isinstance(answer, str):
                raise IngestError(f, "answer text is not a string", row=i, field="messages")
            comps.append({"prompt_key": uid_key[uid], "model": str(model), "text": answer})
    completions = pd.DataFrame(comps)
    dup = completions.duplicated(["prompt_key", "model"])
    if dup.any():
        r = completions[dup].iloc[0]
        raise IngestError(
            adir, f"model {r.model!r} answered question {prompts[r.prompt_key]['external_id']!r} twice", field="uid"
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
