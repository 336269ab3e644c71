"""The PandaLM test set: battles with their texts, three human labels each, and judges' verdicts.

``testset-v1.json`` is a JSON list of battles (``idx, motivation_app,
cmp_key, instruction, input, response1, response2, annotator1..3``);
``cmp_key`` is ``"<model of response1>_<model of response2>"`` and each
label is 0 (tie), 1 (response1) or 2 (response2).  Judge files beside it,
``<judge>-testset-v1.json``, hold one verdict per ``idx`` in a
``<name>_result`` field (1, 2, 0 / "Tie", or text the judge wrote instead)
with its ``<name>_reason``; each judge saw response1 first.

A battle is one (prompt, response1, response2) unit: its three labels are
three votes on it, never three battles.  A prompt is kept per battle because
the same model's answer to the same instruction differs between battles in
the file (17 times), and both texts are what the annotators saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import IngestError, load_json, models_frame, quote, read_text, with_style

TESTSET = "testset-v1.json"
ANNOTATORS = ("annotator1", "annotator2", "annotator3")
LABEL_WINNER = {0: "tie", 1: "a", 2: "b"}  # a = response1 (model_a), b = response2
TEXT_FIELDS = ("instruction", "input", "response1", "response2")


def _records(path: Path, what: str) -> list[dict]:
    data = load_json(path, read_text(path), row=0)
    if not isinstance(data, list):
        raise IngestError(path, f"expected a JSON list of {what}, got {type(data).__name__}")
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise IngestError(path, f"expected an object, got {quote(rec)}", row=i)
    return data


def _idx(path: Path, rec: dict, row: int) -> int:
    v = rec.get("idx")
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**31:
        raise IngestError(path, f"expected a non-negative integer idx, got {quote(v)}", row=row, field="idx")
    return v


def _label(path: Path, value: Any, row: int, field: str) -> str:
    if isinstance(value, bool) or value not in LABEL_WINNER:
        raise IngestError(path, f"expected 0 (tie), 1 or 2, got {quote(value)}", row=row, field=field)
    return LABEL_WINNER[value]


def _text(path: Path, rec: dict, row: int, field: str) -> str:
    """A text field; a bare JSON scalar is the text it spells (six answers in the real file are the JSON
    literal ``true``: the model answered "True")."""
    v = rec.get(field)
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, float)) and np.isfinite(v):
        return str(v)
    if not isinstance(v, str):
        raise IngestError(path, f"expected text, got {quote(v)}", row=row, field=field)
    return v


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """The test set directory (or its ``testset-v1.json``) with every ``*-testset-v1.json`` judge file beside it."""
    root = Path(path)
    testset = root / TESTSET if root.is_dir() else root
    if not testset.exists():
        raise IngestError(root, f"expected a PandaLM test set directory with {TESTSET}")
    prompts: list[dict] = []
    battles: list[dict] = []
    comps: list[dict] = []
    votes: list[dict] = []
    key_of: dict[int, int] = {}
    for row, rec in enumerate(_records(testset, "battles"), start=1):
        idx = _idx(testset, rec, row)
        if idx in key_of:
            raise IngestError(testset, f"duplicate idx {idx}", row=row, field="idx")
        pair = _text(testset, rec, row, "cmp_key").split("_")
        if len(pair) != 2 or not all(m.strip() for m in pair) or pair[0] == pair[1]:
            raise IngestError(
                testset,
                f"expected '<model1>_<model2>' with two different models, got {quote(rec['cmp_key'])}",
                row=row,
                field="cmp_key",
            )
        instruction, given, first, second = (_text(testset, rec, row, f) for f in TEXT_FIELDS)
        key = key_of[idx] = len(battles)
        prompt = instruction if not given.strip() else f"{instruction}\n\n{given}"
        category = rec.get("motivation_app")
        prompts.append(
            {
                "prompt_key": key,
                "external_id": str(idx),
                "text": prompt,
                "category": category if isinstance(category, str) else None,
                "language": "en",
            }
        )
        model_a, model_b = pair[0].strip(), pair[1].strip()
        battles.append(
            {"battle_key": key, "model_a": model_a, "model_b": model_b, "prompt_key": key, "external_id": str(idx)}
        )
        comps += [
            {"prompt_key": key, "model": model_a, "text": first},
            {"prompt_key": key, "model": model_b, "text": second},
        ]
        for field in ANNOTATORS:
            if field not in rec:
                raise IngestError(testset, "missing human label", row=row, field=field)
            votes.append({"battle_key": key, "winner": _label(testset, rec[field], row, field), "annotator": field})
    if not battles:
        raise IngestError(testset, "no battles")
    judgments = [_judge_file(f, key_of) for f in sorted(testset.parent.glob(f"*-{TESTSET}"))]
    judges = [j for j, _ in judgments]
    return DatasetTables(
        name=dataset or "pandalm",
        source="pandalm",
        models=models_frame(pd.Series([b["model_a"] for b in battles] + [b["model_b"] for b in battles])),
        battles=pd.DataFrame(battles).astype({"battle_key": np.int64}),
        prompts=pd.DataFrame(prompts),
        completions=with_style(pd.DataFrame(comps)),
        votes=pd.DataFrame(votes),
        annotators=pd.DataFrame({"annotator": list(ANNOTATORS)}),
        judges=pd.DataFrame({"judge": judges}) if judges else None,
        judgments=pd.concat([f for _, f in judgments], ignore_index=True) if judges else None,
        meta={
            "format": "pandalm",
            "file": testset.name,
            "annotators": "the file's annotator1..3 columns: three labels per battle, stored as three votes",
        },
    )


def _judge_file(path: Path, key_of: dict[int, int]) -> tuple[str, pd.DataFrame]:
    """One judge's verdicts (response1 shown first): a parsed verdict, or the text it wrote kept as unparseable."""
    judge = path.name[: -len(f"-{TESTSET}")]
    rows, seen = [], set()
    records = _records(path, "verdicts")
    for row, rec in enumerate(records, start=1):
        idx = _idx(path, rec, row)
        if idx not in key_of:
            raise IngestError(path, f"verdict for idx {idx}, which the test set does not have", row=row, field="idx")
        if idx in seen:
            raise IngestError(path, f"second verdict for idx {idx}", row=row, field="idx")
        seen.add(idx)
        results = [k for k in rec if k.endswith("_result")]
        if len(results) != 1:
            raise IngestError(path, "expected one '<name>_result' field", row=row, field="_result")
        field = results[0]
        value, reason = rec[field], rec.get(field.removesuffix("_result") + "_reason")
        verdict, error = _verdict(value)
        raw = f"{value}" if not isinstance(reason, str) else f"{value}\n{reason}"
        rows.append(
            {
                "battle_key": key_of[idx],
                "judge": judge,
                "order": "ab",
                "prompt_version": "imported",
                "verdict": verdict,
                "raw_output": raw,
                "parse_error": error,
            }
        )
    if not rows:
        raise IngestError(path, "no verdicts")
    return judge, pd.DataFrame(rows)


def _verdict(value: Any) -> tuple[str | None, str | None]:
    """(verdict, None) for 1 / 2 / 0 / 'Tie' (as numbers or text); (None, why) for anything else."""
    text = str(value).strip().lower() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    verdict = {"1": "a", "2": "b", "0": "tie", "tie": "tie"}.get(text or "")
    if verdict is None:
        return None, f"not a verdict (1, 2 or tie): {quote(value)}"
    return verdict, None
