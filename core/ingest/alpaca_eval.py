"""AlpacaEval annotations: ``annotations.json``, a JSON list of one annotator's preference between two outputs.

Each record is ``{instruction, output_1, generator_1, output_2, generator_2,
annotator, preference[, dataset, raw_completion, price_per_example,
time_per_example]}``; ``preference`` runs from 1 (output_1 better) to 2
(output_2 better), fractional values are soft preferences (1.5 a tie), and
null means the annotator gave none.  The path is the file or a directory
holding it; ``model_outputs.json`` beside it is not read (the annotations
carry both outputs).

* A prompt per distinct instruction text (``dataset`` is its category); a
  completion per (prompt, generator).  A generator whose output to the same
  instruction differs between records is refused: the battles could not say
  which answer was judged.
* A battle per (instruction, generator_1, generator_2) with model_a =
  generator_1; ``external_id`` is the 1-based position of its first record.
* Each record is a judgment of judge = ``annotator`` (the ``--judge`` name
  when the record has none) in order ``unknown``: AlpacaEval shows the two
  outputs in a random order and stores the preference un-swapped, so which
  one the annotator saw first is not in the file (output_1 is always the
  baseline's); with
  ``p_a = 2 − preference`` (the probability that model_a is better) and the
  verdict 'a' when p_a > 0.5, 'b' when < 0.5, 'tie' at 0.5.  A null
  preference is kept as an unparsed judgment (verdict None, parse_error "no
  preference").  ``raw_output`` is ``raw_completion`` (JSON text when it is
  not a string).
* The same annotator annotating the same (instruction, generator_1,
  generator_2) twice would store one judgment twice: it is refused, naming
  the second record.

Errors name the file, the 1-based position in the list ("row") and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    MAX_TEXT_CHARS,
    IngestError,
    known_family,
    load_json,
    models_frame,
    quote,
    read_text,
    text_value,
    with_style,
)

ANNOTATIONS = "annotations.json"
PREFERENCE_RANGE = (1.0, 2.0)


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """An AlpacaEval ``annotations.json`` (or a directory holding one): battles, texts and annotator verdicts."""
    root = Path(path)
    file = root / ANNOTATIONS if root.is_dir() else root
    if not file.exists():
        raise IngestError(root, f"expected AlpacaEval's {ANNOTATIONS} (or a directory holding it)")
    data = load_json(file, read_text(file), row=0)
    if not isinstance(data, list):
        raise IngestError(file, f"expected a JSON list of annotations, got {type(data).__name__}")
    if not data:
        raise IngestError(file, "no annotations")
    prompt_of: dict[str, int] = {}
    prompts: list[dict] = []
    texts: dict[tuple[int, str], tuple[str, int, str]] = {}  # (prompt, generator) → (text, row, field)
    battle_of: dict[tuple[int, str, str], int] = {}
    battles: list[dict] = []
    judged: dict[tuple[int, str], int] = {}  # (battle, annotator) → row
    rows: list[dict] = []
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise IngestError(file, f"expected an object, got {quote(rec)}", row=i)
        instruction = text_value(file, rec.get("instruction"), i, "instruction", required=True) or ""
        gen_a, gen_b = _name(file, rec, i, "generator_1"), _name(file, rec, i, "generator_2")
        if gen_a == gen_b:
            raise IngestError(file, f"generator {quote(gen_a)} compared with itself", row=i, field="generator_2")
        annotator = _name(file, rec, i, "annotator", default=judge)
        p_a, verdict, error = _preference(file, rec, i)
        category = text_value(file, rec.get("dataset"), i, "dataset")
        if instruction not in prompt_of:
            prompt_of[instruction] = len(prompts)
            prompts.append({"prompt_key": len(prompts), "text": instruction, "category": category, "language": "en"})
        pk = prompt_of[instruction]
        for gen, field in ((gen_a, "output_1"), (gen_b, "output_2")):
            if field not in rec or rec[field] is None:
                raise IngestError(file, "missing output", row=i, field=field)
            text = text_value(file, rec[field], i, field) or ""
            first = texts.setdefault((pk, gen), (text, i, field))
            if first[0] != text:
                raise IngestError(
                    file,
                    f"{quote(gen)}'s output to this instruction differs from the one at row {first[1]} "
                    f"({first[2]}): {quote(text)}",
                    row=i,
                    field=field,
                )
        key = (pk, gen_a, gen_b)
        if key not in battle_of:
            battle_of[key] = len(battles)
            battles.append(
                {
                    "battle_key": len(battles),
                    "prompt_key": pk,
                    "model_a": gen_a,
                    "model_b": gen_b,
                    "external_id": str(i),
                    "language": "en",
                }
            )
        bk = battle_of[key]
        if (bk, annotator) in judged:
            raise IngestError(
                file,
                f"annotator {quote(annotator)} already compared {quote(gen_a)} with {quote(gen_b)} on this "
                f"instruction at row {judged[(bk, annotator)]}",
                row=i,
                field="instruction",
            )
        judged[(bk, annotator)] = i
        rows.append(
            {
                "battle_key": bk,
                "judge": annotator,
                "order": "unknown",
                "prompt_version": "imported",
                "verdict": verdict,
                "p_a": p_a,
                "raw_output": _raw(file, rec, i),
                "parse_error": error,
            }
        )
    comps = pd.DataFrame([{"prompt_key": pk, "model": gen, "text": t[0]} for (pk, gen), t in texts.items()])
    judgments = pd.DataFrame(rows)
    judgments["p_a"] = judgments["p_a"].astype(float)
    names = sorted(set(judgments["judge"]))
    battles_df = pd.DataFrame(battles).astype({"battle_key": np.int64})
    return DatasetTables(
        name=dataset or (root.name if root.is_dir() else "alpaca-eval"),
        source="alpaca-eval",
        models=models_frame(pd.concat([battles_df["model_a"], battles_df["model_b"]])),
        battles=battles_df,
        prompts=pd.DataFrame(prompts),
        completions=with_style(comps),
        judges=pd.DataFrame({"judge": names, "family": [known_family(n) for n in names], "prompt_version": "imported"}),
        judgments=judgments,
        meta={
            "format": "alpaca-eval",
            "file": file.name,
            "judgments": "one per annotation, output_1 shown first; p_a = 2 − preference",
        },
    )


def _name(path: Path, rec: dict, row: int, field: str, default: str | None = None) -> str:
    value = text_value(path, rec.get(field), row, field)
    name = (value if value is not None else default or "").strip()
    if not name:
        raise IngestError(path, "missing name", row=row, field=field)
    if len(name) > MAX_QUOTE:
        raise IngestError(path, f"a name of {len(name):,} characters (at most {MAX_QUOTE})", row=row, field=field)
    return name


def _preference(path: Path, rec: dict, row: int) -> tuple[float | None, str | None, str | None]:
    """(p_a, verdict, None) for a preference in [1, 2]; (None, None, 'no preference') for a null one."""
    value = rec.get("preference")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None, None, "no preference"
    lo, hi = PREFERENCE_RANGE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise IngestError(
            path, f"expected a number in [{lo:g}, {hi:g}] or null, got {quote(value)}", row=row, field="preference"
        )
    p_a = 2.0 - float(value)
    return p_a, "a" if p_a > 0.5 else "b" if p_a < 0.5 else "tie", None


def _raw(path: Path, rec: dict, row: int) -> str | None:
    value: Any = rec.get("raw_completion")
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_TEXT_CHARS:
        raise IngestError(
            path,
            f"text of {len(text):,} characters exceeds the limit of {MAX_TEXT_CHARS:,}",
            row=row,
            field="raw_completion",
        )
    return text
