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
    # (instruction, baseline) → the file whose baseline output the shared prompt holds
    baseline_file: dict[tuple[str, str], str] = field(default_factory=dict)
    own_baseline: dict[str, int] = field(default_factory=dict)  # file → battles on its own baseline outputs
    record_annotators: dict[str, dict[str, int]] = field(default_factory=dict)  # config → record name → count


def read(
    path: str | Path, dataset: str | None = None, judge: str | None = None, annotator: str | None = None
) -> DatasetTables:
    """AlpacaEval annotations (a file, a directory, or a ``results/`` tree): battles, texts and verdicts."""
    root = Path(path)
    files = annotation_files(root, annotator)
    loaded = [(f, _load(f)) for f in files]
    layout = _tree_layout(root, loaded, annotator)
    build = _Build()
    for file, data in loaded:
        if file in layout.duplicate_of:
            continue
        _read_file(file, data, root, build, judge, layout.placement.get(file))
    if not build.battles:
        raise IngestError(root, "no annotation compares two different models (only the baseline with itself)")
    comps = pd.DataFrame([{"prompt_key": pk, "model": m, "text": t[0]} for (pk, m), t in build.texts.items()])
    judgments = pd.DataFrame(build.rows)
    judgments["p_a"] = judgments["p_a"].astype(float)
    names = sorted(set(judgments["judge"]))
    battles_df = pd.DataFrame(build.battles).astype({"battle_key": np.int64})
    baselines = sorted(set(battles_df["model_a"]))
    notes = [
        f"{_where(dup, root)} repeats {_where(orig, root)} record for record: skipped as a duplicate"
        for dup, orig in sorted(layout.duplicate_of.items())
    ]
    notes += [
        f"{where}: {n:,} of its baseline outputs differ from the other files'; its battles are scored against "
        f"its own baseline outputs (kept as {n:,} prompts of their own), as AlpacaEval scores each file"
        for where, n in sorted(build.own_baseline.items())
    ]
    return DatasetTables(
        name=dataset or (root.name if root.is_dir() else "alpaca-eval"),
        source="alpaca-eval",
        models=models_frame(comps["model"]),
        battles=battles_df,
        prompts=pd.DataFrame(build.prompts),
        completions=with_style(comps),
        judges=pd.DataFrame(
            {"judge": names, "family": [annotator_family(n) for n in names], "prompt_version": "imported"}
        ),
        judgments=judgments,
        meta={
            "format": "alpaca-eval",
            "files": [_where(f, root) for f in files if f not in layout.duplicate_of],
            "baseline": baselines[0] if len(baselines) == 1 else baselines,
            "skipped_self_comparisons": build.skipped_self,
            "models_named_by_folder": dict(sorted(build.renamed.items())),
            "skipped_duplicate_files": {
                _where(d, root): _where(o, root) for d, o in sorted(layout.duplicate_of.items())
            },
            "files_scored_against_their_own_baseline_outputs": dict(sorted(build.own_baseline.items())),
            "record_annotators": {k: dict(sorted(v.items())) for k, v in sorted(build.record_annotators.items())},
            "notes": notes,
            "judgments": "one per annotation, shown order unknown; p_a = 2 − preference (AlpacaEval 1's 0 = draw)",
        },
    )


@dataclass(frozen=True)
class _Placement:
    """Where AlpacaEval's own layout puts a file: the model its folder names, the configuration that judged it."""

    model: str
    config: str


@dataclass(frozen=True)
class _Layout:
    placement: dict[Path, _Placement]
    duplicate_of: dict[Path, Path]  # a nested copy → the file it repeats


# What makes an annotation: two files agreeing on these, record for record, judged the same battles the same way
# (AlpacaEval's nested copies add fields such as ``glm_preference`` from its own length-controlled fit).
JUDGED_FIELDS = ("instruction", "generator_1", "output_1", "generator_2", "output_2", "annotator", "preference")


def _judged(data: list) -> list[tuple]:
    return [tuple(r.get(k) for k in JUDGED_FIELDS) if isinstance(r, dict) else (r,) for r in data]


def _load(file: Path) -> list:
    data = load_json(file, read_text(file), row=0)
    if not isinstance(data, list):
        raise IngestError(file, f"expected a JSON list of annotations, got {type(data).__name__}")
    if not data:
        raise IngestError(file, "no annotations")
    return data


def _tree_layout(root: Path, loaded: list[tuple[Path, list]], annotator: str | None) -> _Layout:
    """AlpacaEval's ``results/<model>/<annotator config>/annotations.json``: which folder is which.

    A folder is an annotator configuration when it is the one chosen with
    ``--annotator`` or when its files' records name it as their annotator.
    The configuration then decides the judge (a record may name a variant of
    it, e.g. ``alpaca_eval_gpt4_0613`` inside ``alpaca_eval_gpt4``; the names
    the records give are counted per configuration in the dataset's meta,
    ``record_annotators``), and the model is the nearest
    enclosing folder not named like a configuration: a nested copy
    ``<model>/<config>/<config>/annotations.json`` belongs to ``<model>``, and
    when it repeats the parent's annotations record for record
    (:data:`JUDGED_FIELDS`) it is skipped as a duplicate.  Two different files
    for one (model, configuration) are refused.
    """
    if not root.is_dir():
        return _Layout({}, {})
    configs = {annotator} if annotator is not None else set()
    for file, data in loaded:
        named = file.parent.name
        if file.parent != root and any(isinstance(r, dict) and r.get("annotator") == named for r in data):
            configs.add(named)
    placement: dict[Path, _Placement] = {}
    owner: dict[tuple[str, str], tuple[Path, list]] = {}
    duplicate_of: dict[Path, Path] = {}
    # shallower files first: a nested copy is compared with the file it copies
    for file, data in sorted(loaded, key=lambda fd: (len(fd[0].parts), str(fd[0]))):
        config = file.parent.name
        if file.parent == root or config not in configs:
            continue
        folder = file.parent.parent
        while folder.name in configs and folder.parent != folder:
            folder = folder.parent
        if not folder.name or folder.name in configs:
            continue  # no enclosing model folder: the records' generator names the model
        model = folder.name
        first = owner.setdefault((model, config), (file, data))
        if first[0] != file:
            if _judged(first[1]) == _judged(data):
                duplicate_of[file] = first[0]
                continue
            raise IngestError(
                file,
                f"a second {ANNOTATIONS} for model {quote(model)} and annotator configuration {quote(config)}, "
                f"different from {_where(first[0], root)}: keep one",
            )
        placement[file] = _Placement(model, config)
    _copied_folders(loaded, placement, duplicate_of)
    return _Layout(placement, duplicate_of)


def _copied_folders(loaded: list[tuple[Path, list]], placement: dict[Path, _Placement], duplicate_of: dict) -> None:
    """A model folder copied under another name (``results/PHI-2/`` beside ``results/phi-2/``, every record of
    both saying ``generator_2 = phi-2``): two files of one configuration in different model folders that agree
    record for record (:data:`JUDGED_FIELDS`) are one model's annotations.  The file in the folder its records
    name is kept (else the first by path) and the other is skipped as a duplicate, like a nested copy."""
    by_content: dict[tuple[str, int], list[tuple[Path, list]]] = {}
    for file, data in loaded:
        if file in placement:
            key = (placement[file].config, hash(tuple(_judged(data))))
            by_content.setdefault(key, []).append((file, data))
    for group in by_content.values():
        if len({placement[f].model for f, _ in group}) < 2:
            continue
        kept, kept_data = min(group, key=lambda fd: (not _names_its_folder(fd[1], placement[fd[0]].model), str(fd[0])))
        for file, data in group:
            if file != kept and placement[file].model != placement[kept].model and _judged(data) == _judged(kept_data):
                duplicate_of[file] = kept
                del placement[file]


def _names_its_folder(data: list, model: str) -> bool:
    return all(isinstance(r, dict) and r.get("generator_2") == model for r in data)


def _where(file: Path, root: Path) -> str:
    if root.is_dir() and file.is_relative_to(root):
        return str(file.relative_to(root))
    return file.name


def _read_file(file: Path, data: list, root: Path, build: _Build, judge: str | None, placed: _Placement | None) -> None:
    where = _where(file, root)
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise IngestError(file, f"expected an object, got {quote(rec)}", row=i)
        instruction = text_value(file, rec.get("instruction"), i, "instruction", required=True) or ""
        baseline, generator = _name(file, rec, i, "generator_1"), _name(file, rec, i, "generator_2")
        named = _name(file, rec, i, "annotator", default=judge)
        # AlpacaEval's own layout <model>/<annotator config>/annotations.json: the folders name the model and
        # the judge (_tree_layout); the records' own annotator names are counted in the meta
        annotator = placed.config if placed is not None else named
        model = placed.model if placed is not None else generator
        if placed is not None and model != generator:
            build.renamed.setdefault(model, generator)
        if placed is not None:
            seen = build.record_annotators.setdefault(annotator, {})
            seen[named] = seen.get(named, 0) + 1
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
        if "output_1" not in rec or rec["output_1"] is None:
            raise IngestError(file, "missing output", row=i, field="output_1")
        base_text = text_value(file, rec["output_1"], i, "output_1") or ""
        # A file annotated against other baseline outputs than an earlier file's is scored against its own
        # (AlpacaEval scores each file on its own records): its battles go on prompts of their own, so each
        # prompt keeps one baseline answer.  Within one file the baseline's answer must not change.
        prompt_id: tuple[str, str] = (instruction, "")
        shared = build.prompt_of.get(instruction)
        if (
            shared is not None
            and build.texts.get((shared, baseline), (base_text,))[0] != base_text
            and build.baseline_file.get((instruction, baseline)) != where
        ):
            prompt_id = (instruction, where)
            build.own_baseline[where] = build.own_baseline.get(where, 0) + 1
        prompt_name = prompt_id[0] if not prompt_id[1] else f"{prompt_id[0]}\x00{prompt_id[1]}"
        if prompt_name not in build.prompt_of:
            build.prompt_of[prompt_name] = len(build.prompts)
            build.prompts.append(
                {"prompt_key": len(build.prompts), "text": instruction, "category": category, "language": "en"}
            )
        pk = build.prompt_of[prompt_name]
        build.baseline_file.setdefault((instruction, baseline), where)
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


def annotator_family(name: str) -> str | None:
    """The family of the model behind an AlpacaEval annotator configuration: its name without the config's
    decorations ("weighted_alpaca_eval_gpt4_turbo" → "gpt4_turbo" → openai; "alpaca_eval_gpt4" is GPT-4, not
    Stanford's Alpaca)."""
    rest = name.strip().lower()
    for prefix in ("weighted_", "alpaca_eval_", "cot_"):
        rest = rest.removeprefix(prefix)
    return known_family(rest) or known_family(name)
