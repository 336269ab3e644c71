"""AlpacaEval annotations: ``annotations.json`` files, or AlpacaEval's ``results/`` tree of them.

Each file is a JSON list of one annotator's preferences between a baseline's
output and a model's: ``{instruction, output_1, generator_1, output_2,
generator_2, annotator, preference[, dataset, raw_completion, …]}``.
``output_1`` is the baseline's (``generator_1``).  ``preference`` runs from
1 (output_1 better) to 2 (output_2 better); fractional values are soft
preferences from the judge's log-probabilities, 1.5 is a draw, and 0 is
AlpacaEval 1's code for a draw; null means the annotator gave none.

The path is one file, a directory holding ``annotations.json``, or a tree of
them at any depth (AlpacaEval's ``results/<model>/<annotator config>/``).  A
tree holding several annotator configurations needs ``--annotator NAME`` to
choose one (the error lists them).

* **The model is the folder**: a file at ``<model>/<config>/annotations.json``
  whose records' ``annotator`` is ``<config>`` (AlpacaEval's own layout)
  answers for the model ``<model>``, whatever its ``generator_2`` says, since two
  result folders may reuse one generator name (the meta records both names).
  Any other file takes the model from ``generator_2``.
* A record comparing the baseline with itself (the baseline's own result file,
  both outputs the same text) makes no battle: it is skipped and counted in
  the dataset's meta.  Two different outputs under the baseline's name are
  refused: two models would be merged into one.
* A prompt per distinct instruction text (``dataset`` is its category); a
  completion per (prompt, model).  A model whose output to one instruction
  differs between records (the baseline's, across files) is refused: the
  battles could not say which answer was judged.
* A battle per (instruction, baseline, model) with model_a = the baseline;
  ``external_id`` is ``<file>:<row>`` of its first record.
* Each record is a judgment of judge = ``annotator`` (the ``--judge`` name when
  the record has none) in order ``unknown``: AlpacaEval shows the two outputs
  in a random order and stores the preference un-swapped, so which one the
  annotator saw first is not in the file.  ``p_a = 2 − preference`` (the
  probability that the baseline is better; 0.5 for AlpacaEval 1's 0), verdict
  'a' when p_a > 0.5, 'b' when < 0.5, 'tie' at 0.5.  A null preference is kept
  as an unparsed judgment (verdict None, parse_error "no preference").
  ``raw_output`` is ``raw_completion`` (JSON text when it is not a string).
* The same annotator annotating the same (instruction, baseline, model) twice
  would store one judgment twice: it is refused, naming both records.

Errors name the file, the 1-based position in its list ("row") and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
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
AE1_DRAW = 0  # AlpacaEval 1's files code a draw as preference 0


def annotation_files(root: Path, annotator: str | None = None) -> list[Path]:
    """The ``annotations.json`` files a path stands for: the file, or every one under a directory (one annotator
    configuration: ``annotator``, or the only one there is)."""
    if not root.exists():
        raise IngestError(root, "file does not exist")
    if not root.is_dir():
        return [root]
    files = sorted(f for f in root.rglob(ANNOTATIONS) if f.is_file())
    if not files:
        raise IngestError(root, f"expected AlpacaEval's {ANNOTATIONS} (or a directory holding it, at any depth)")
    if (root / ANNOTATIONS).is_file() and annotator is None:
        return [root / ANNOTATIONS]
    configs: dict[str, list[Path]] = {}
    for f in files:
        configs.setdefault(f.parent.name, []).append(f)
    if annotator is not None:
        if annotator not in configs:
            raise IngestError(
                root,
                f"no annotator configuration {quote(annotator)} here; found {_configs(configs)}",
                field="annotator",
            )
        return configs[annotator]
    if len(configs) > 1:
        raise IngestError(
            root,
            f"annotations of several annotator configurations ({_configs(configs)}): choose one with --annotator",
            field="annotator",
        )
    return files


def _configs(configs: dict[str, list[Path]]) -> str:
    return ", ".join(f"{name} ({len(fs)} file{'s' * (len(fs) != 1)})" for name, fs in sorted(configs.items()))


@dataclass
class _Build:
    """The tables as they grow, file by file."""

    prompt_of: dict[str, int] = field(default_factory=dict)
    prompts: list[dict] = field(default_factory=list)
    texts: dict[tuple[int, str], tuple[str, str]] = field(default_factory=dict)  # (prompt, model) → (text, where)
    battle_of: dict[tuple[int, str, str], int] = field(default_factory=dict)
    battles: list[dict] = field(default_factory=list)
    judged: dict[tuple[int, str], str] = field(default_factory=dict)  # (battle, annotator) → where
    rows: list[dict] = field(default_factory=list)
    skipped_self: int = 0
    renamed: dict[str, str] = field(default_factory=dict)  # model (folder) → its generator name, where they differ


def read(
    path: str | Path, dataset: str | None = None, judge: str | None = None, annotator: str | None = None
) -> DatasetTables:
    """AlpacaEval annotations (a file, a directory, or a ``results/`` tree): battles, texts and verdicts."""
    root = Path(path)
    files = annotation_files(root, annotator)
    build = _Build()
    for file in files:
        _read_file(file, root, build, judge)
    if not build.battles:
        raise IngestError(root, "no annotation compares two different models (only the baseline with itself)")
    comps = pd.DataFrame([{"prompt_key": pk, "model": m, "text": t[0]} for (pk, m), t in build.texts.items()])
    judgments = pd.DataFrame(build.rows)
    judgments["p_a"] = judgments["p_a"].astype(float)
    names = sorted(set(judgments["judge"]))
    battles_df = pd.DataFrame(build.battles).astype({"battle_key": np.int64})
    baselines = sorted(set(battles_df["model_a"]))
    return DatasetTables(
        name=dataset or (root.name if root.is_dir() else "alpaca-eval"),
        source="alpaca-eval",
        models=models_frame(comps["model"]),
        battles=battles_df,
        prompts=pd.DataFrame(build.prompts),
        completions=with_style(comps),
        judges=pd.DataFrame({"judge": names, "family": [known_family(n) for n in names], "prompt_version": "imported"}),
        judgments=judgments,
        meta={
            "format": "alpaca-eval",
            "files": [_where(f, root) for f in files],
            "baseline": baselines[0] if len(baselines) == 1 else baselines,
            "skipped_self_comparisons": build.skipped_self,
            "models_named_by_folder": dict(sorted(build.renamed.items())),
            "judgments": "one per annotation, shown order unknown; p_a = 2 − preference (AlpacaEval 1's 0 = draw)",
        },
    )


def _where(file: Path, root: Path) -> str:
    if root.is_dir() and file.is_relative_to(root):
        return str(file.relative_to(root))
    return file.name


def _read_file(file: Path, root: Path, build: _Build, judge: str | None) -> None:
    data = load_json(file, read_text(file), row=0)
    if not isinstance(data, list):
        raise IngestError(file, f"expected a JSON list of annotations, got {type(data).__name__}")
    if not data:
        raise IngestError(file, "no annotations")
    where = _where(file, root)
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise IngestError(file, f"expected an object, got {quote(rec)}", row=i)
        instruction = text_value(file, rec.get("instruction"), i, "instruction", required=True) or ""
        baseline, generator = _name(file, rec, i, "generator_1"), _name(file, rec, i, "generator_2")
        annotator = _name(file, rec, i, "annotator", default=judge)
        # AlpacaEval's own layout <model>/<annotator config>/annotations.json: the folder names the model
        by_folder = file.parent.name == annotator and file.parent.parent != file.parent
        model = file.parent.parent.name if by_folder else generator
        if by_folder and model != generator:
            build.renamed.setdefault(model, generator)
        p_a, verdict, error = _preference(file, rec, i)
        if model == baseline:  # the baseline's own file: no battle
            if generator != baseline:
                raise IngestError(
                    file,
                    f"the folder {quote(model)} names the baseline but generator_2 is {quote(generator)}",
                    row=i,
                    field="generator_2",
                )
            if rec.get("output_1") != rec.get("output_2"):  # the baseline's own file repeats its answer
                raise IngestError(
                    file,
                    f"generator_1 and generator_2 are both {quote(baseline)} but the two outputs differ "
                    "(two models under one name? their folders must differ)",
                    row=i,
                    field="generator_2",
                )
            build.skipped_self += 1
            continue
        category = text_value(file, rec.get("dataset"), i, "dataset")
        if instruction not in build.prompt_of:
            build.prompt_of[instruction] = len(build.prompts)
            build.prompts.append(
                {"prompt_key": len(build.prompts), "text": instruction, "category": category, "language": "en"}
            )
        pk = build.prompt_of[instruction]
        for who, out in ((baseline, "output_1"), (model, "output_2")):
            if out not in rec or rec[out] is None:
                raise IngestError(file, "missing output", row=i, field=out)
            text = text_value(file, rec[out], i, out) or ""
            first = build.texts.setdefault((pk, who), (text, f"{where} row {i} ({out})"))
            if first[0] != text:
                raise IngestError(
                    file,
                    f"{quote(who)}'s output to this instruction differs from the one at {first[1]}: {quote(text)}",
                    row=i,
                    field=out,
                )
        key = (pk, baseline, model)
        if key not in build.battle_of:
            build.battle_of[key] = len(build.battles)
            build.battles.append(
                {
                    "battle_key": len(build.battles),
                    "prompt_key": pk,
                    "model_a": baseline,
                    "model_b": model,
                    "external_id": f"{where}:{i}",
                    "language": "en",
                }
            )
        bk = build.battle_of[key]
        if (bk, annotator) in build.judged:
            raise IngestError(
                file,
                f"annotator {quote(annotator)} already compared {quote(model)} with {quote(baseline)} on this "
                f"instruction at {build.judged[(bk, annotator)]}",
                row=i,
                field="instruction",
            )
        build.judged[(bk, annotator)] = f"{where} row {i}"
        build.rows.append(
            {
                "battle_key": bk,
                "judge": annotator,
                "order": "unknown",
                "prompt_version": "imported",
                "verdict": verdict,
                "p_a": p_a,
                "raw_output": _raw(file, rec, i),
                "parse_error": error,
                "source_row": f"{where} row {i}",
            }
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
    """(p_a, verdict, None) for a preference in [1, 2] or AlpacaEval 1's draw 0; (None, None, 'no preference') for
    a null one."""
    value = rec.get("preference")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None, None, "no preference"
    lo, hi = PREFERENCE_RANGE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (lo <= value <= hi or value == AE1_DRAW):
        raise IngestError(
            path,
            f"expected a number in [{lo:g}, {hi:g}], {AE1_DRAW} (AlpacaEval 1's draw) or null, got {quote(value)}",
            row=row,
            field="preference",
        )
    if value == AE1_DRAW:
        return 0.5, "tie", None
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
