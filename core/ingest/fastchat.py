"""A FastChat MT-Bench data directory (``fastchat/llm_judge/data/mt_bench/``): questions, answers, GPT-4 verdicts.

Files read:

* ``model_judgment/<judge>_pair.jsonl``: ``{question_id, model_1, model_2, g1_winner, g2_winner,
  judge: [judge model, prompt name], g1_judgment, g2_judgment, turn, tstamp}``;
* ``model_judgment/<judge>_single.jsonl``: ``{question_id, model, judge, judgment, score, turn}``
  (pair files, single files or both);
* when present, ``question.jsonl``: ``{question_id, category, turns: [user turn 1, user turn 2], reference?}``;
* when present, ``model_answer/<model>.jsonl`` (subfolders too):
  ``{question_id, model_id, choices: [{turns: [answer 1, answer 2]}]}``.

The reading contract is FastChat's own (docs/formats.md): ``show_result.py`` reads the judgment files alone, so
they are the dataset and are checked row by row (a bad row refuses the import with file, row and field).  The
questions and answers are extras that give the prompts and answers their texts: a directory without them is
read, a row of them that cannot be read is left out with a note, and a model is named by its answer file's
stem as FastChat and its grades name it (``model_id`` is ignored, with a note where it differs).  A question
answered twice in one file keeps the last answer, as FastChat's ``load_model_answers`` does.  A judgment of a
question ``question.jsonl`` lacks is kept without text; one of a turn past the question's last is refused.

A battle is one (question, model_1, model_2, turn) of the pair judgments,
model_a = model_1 of the first record that names the pair (a later record
with the two models swapped judges the same battle).  Game 1 (``g1_*``)
showed model_1 first, game 2 (``g2_*``) model_2 first, so each record gives
two judgments, orders ``ab``/``ba`` in battle terms; ``g*_winner`` names the
winner as model_1 / model_2 (not by position) and becomes a verdict in battle
terms.  A winner ``"error"`` (FastChat could not parse the judge's output) is
a judgment with no verdict, a ``parse_error`` and the judge's text as
``raw_output``.  The judge is the judge model (``"gpt-4"``); the prompt name
(``"pair-v2"``, ``"pair-v2-multi-turn"``, …) is the judgment's
``prompt_version``.

At turn 1 a battle's prompt is the first user turn and the completions the
first answers; at turn 2 the prompt's ``turns`` holds both user turns and each
completion's ``turns`` both answers (``text`` = the answers joined).  Prompts
are kept per (question, turn), completions per (prompt, model).

Single-answer grades (1–10 per model, question and turn; ``-1`` when FastChat
could not parse the grade) are kept as grades (``DatasetTables.grades``: the
MT-Bench score, :mod:`core.stats.mtbench`), ``-1`` as no score with a
``parse_error``.  A second grade of the same answer by the same judge (a run
appended to the file) is ``run`` 2, 3, …; a grade whose answer the directory
lacks is kept without a completion.  They also compare the two sides of a pair
battle: for each battle whose two models were both graded (first run) by the
same judge at that question and turn, one judgment of the judge
``"<judge>-single"`` (order ``ab``; the answers were graded apart, so no order
was shown), verdict = the higher grade (equal grades: tie), and both grades and
both grading texts in ``raw_output`` as JSON; a ``-1`` grade gives a judgment
with no verdict and a ``parse_error``.

A second pair judgment of the same battle by the same judge, prompt and order
(FastChat's ``gen_judgment`` appends a new run to the file) is the variant
``repeat-1`` (then ``repeat-2``, …), never an error.  An empty judgment file
(FastChat creates ``<judge>_pair.jsonl`` when pair judging starts) is skipped
with a note in the meta (``notes``).  A directory with grades and no pair
judgments is a dataset without battles; one with no judgment rows at all is
refused.  A pair battle whose answers the directory lacks keeps its verdicts (the
pairwise win rate reads nothing else) and is counted in the notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    TSTAMP_RANGE,
    IngestError,
    is_missing,
    models_frame,
    quote,
    read_jsonl_lines,
    text_value,
    with_style,
)

QUESTIONS = "question.jsonl"
ANSWERS = "model_answer"
JUDGMENTS = "model_judgment"
PAIR_WINNERS = ("model_1", "model_2", "tie", "error")
MAX_TURN = 100
BATTLE_FIELDS = ("battle_key", "model_a", "model_b", "external_id", "turn", "tstamp", "language")
GRADE_FIELDS = ("prompt_key", "model", "judge", "prompt_version", "turn", "run", "score", "raw_output", "parse_error")


def _int(path: Path, value: Any, row: int, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise IngestError(path, f"expected a whole number in [{lo}, {hi}], got {quote(value)}", row=row, field=field)
    if isinstance(value, (float, np.floating)) and not (np.isfinite(value) and float(value).is_integer()):
        raise IngestError(path, f"expected a whole number in [{lo}, {hi}], got {quote(value)}", row=row, field=field)
    if not lo <= int(value) <= hi:
        raise IngestError(path, f"expected a whole number in [{lo}, {hi}], got {quote(value)}", row=row, field=field)
    return int(value)


def _qid(path: Path, rec: dict, row: int) -> str:
    """A question id (FastChat's are integers; text ids are kept as text)."""
    v = rec.get("question_id")
    if isinstance(v, bool) or not isinstance(v, (int, str)) or (isinstance(v, str) and not v.strip()):
        raise IngestError(
            path, f"expected an integer or text question_id, got {quote(v)}", row=row, field="question_id"
        )
    return str(v).strip()


def _name(path: Path, value: Any, row: int, field: str) -> str:
    text = text_value(path, value, row, field, required=True) or ""
    text = text.strip()
    if len(text) > MAX_QUOTE:
        raise IngestError(path, f"a name of {len(text):,} characters (at most {MAX_QUOTE})", row=row, field=field)
    return text


def _strings(path: Path, value: Any, row: int, field: str, allow_empty: bool) -> list[str]:
    """A non-empty list of strings (question or answer turns)."""
    if not isinstance(value, list) or not value:
        raise IngestError(path, f"expected a non-empty list of texts, got {quote(value)}", row=row, field=field)
    out = []
    for item in value:
        if not isinstance(item, str):
            raise IngestError(path, f"expected text for each turn, got {quote(item)}", row=row, field=field)
        text = text_value(path, item, row, field)
        if text is None and not allow_empty:
            raise IngestError(path, "an empty turn", row=row, field=field)
        out.append(text or "")
    return out


def _tstamp(path: Path, rec: dict, row: int) -> float | None:
    v = rec.get("tstamp")
    if is_missing(v):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not TSTAMP_RANGE[0] <= float(v) <= TSTAMP_RANGE[1]:
        lo, hi = TSTAMP_RANGE
        raise IngestError(path, f"expected a number in [{lo:g}, {hi:g}], got {quote(v)}", row=row, field="tstamp")
    return float(v)


def _judge(path: Path, rec: dict, row: int) -> tuple[str, str]:
    """(judge model, prompt name) of ``judge: [model, prompt]`` (a bare name has prompt 'imported')."""
    v = rec.get("judge")
    if isinstance(v, str):
        return _name(path, v, row, "judge"), "imported"
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise IngestError(path, f"expected [judge model, prompt name], got {quote(v)}", row=row, field="judge")
    prompt = v[1].strip() if len(v) > 1 and v[1].strip() else "imported"
    return _name(path, v[0], row, "judge"), prompt[:MAX_QUOTE]


def _optional_text(path: Path, rec: dict, row: int, field: str) -> str | None:
    v = rec.get(field)
    if is_missing(v):
        return None
    if not isinstance(v, str):
        raise IngestError(path, f"expected text, got {quote(v)}", row=row, field=field)
    return text_value(path, v, row, field)


def _read_questions(qfile: Path, notes: list[str]) -> dict[str, dict]:
    """The questions by id (empty without ``question.jsonl``); a row that cannot be read is left out with a note:
    the score does not read this file, the prompt texts do."""
    questions: dict[str, dict] = {}
    if not qfile.is_file():
        notes.append(f"no {QUESTIONS}: the prompts have no text (the MT-Bench score does not need them)")
        return questions
    skipped = _Skipped(qfile.name, "question")
    for row, rec in read_jsonl_lines(qfile):
        try:
            qid = _qid(qfile, rec, row)
            turns = _strings(qfile, rec.get("turns"), row, "turns", allow_empty=False)
            category = rec.get("category")
            if not is_missing(category) and not isinstance(category, str):
                raise IngestError(qfile, f"expected text, got {quote(category)}", row=row, field="category")
            reference = rec.get("reference")
            refs = _strings(qfile, reference, row, "reference", allow_empty=True) if not is_missing(reference) else []
        except IngestError as exc:
            skipped.add(exc)
            continue
        if qid in questions:
            skipped.repeated += 1
        questions[qid] = {"turns": turns, "category": category or None, "reference": refs}
    notes.extend(skipped.notes())
    return questions


class _Skipped:
    """Rows of a file the score does not read, left out (or overwritten) and said in the import's notes."""

    SHOWN = 5

    def __init__(self, where: str, what: str) -> None:
        self.where, self.what = where, what
        self.errors: list[IngestError] = []
        self.repeated = 0

    def add(self, exc: IngestError) -> None:
        self.errors.append(exc)

    def notes(self) -> list[str]:
        out = []
        if self.repeated:
            out.append(
                f"{self.where}: {self.repeated} {self.what}(s) given again; the last one is kept, as FastChat keeps it"
            )
        if self.errors:
            first = "; ".join(f"{e}" for e in self.errors[: self.SHOWN])
            more = f" (and {len(self.errors) - self.SHOWN} more)" if len(self.errors) > self.SHOWN else ""
            out.append(f"{len(self.errors)} {self.what} row(s) left out: {first}{more}")
        return out


class _Answers:
    """Each answer file's turns by question, named as FastChat names a model: by the file's stem.

    An answer file in a subfolder (``model_answer/<org>/<model>.jsonl``, what ``gen_model_answer`` writes for a
    model id with a slash) answers to both ``<model>`` and ``<org>/<model>``; a stem two files share names
    neither of them (only the path does)."""

    def __init__(self) -> None:
        self.by_file: dict[str, dict[str, list[str]]] = {}  # path under model_answer/ without .jsonl → turns
        self.names: dict[str, str | None] = {}  # a name → its file's path (None: two files' stems)

    def add_file(self, key: str, turns: dict[str, list[str]]) -> None:
        self.by_file[key] = turns
        self.names = {k: k for k in self.by_file}  # a path names its file first; a stem only where unclaimed
        stems: dict[str, list[str]] = {}
        for k in self.by_file:
            stems.setdefault(k.rsplit("/", 1)[-1], []).append(k)
        for stem, keys in stems.items():
            if stem not in self.names:
                self.names[stem] = keys[0] if len(keys) == 1 else None

    def get(self, qid: str, model: str) -> list[str] | None:
        key = self.names.get(model)
        return None if key is None else self.by_file[key].get(qid)

    def has(self, qid: str, model: str, turn: int) -> bool:
        answer = self.get(qid, model)
        return answer is not None and len(answer) >= turn

    @property
    def models(self) -> set[str]:
        """One name per answer file: its stem, or its path where the stem is not its alone."""
        out = set()
        for key in self.by_file:
            stem = key.rsplit("/", 1)[-1]
            out.add(stem if self.names.get(stem) == key else key)
        return out

    def __len__(self) -> int:
        return sum(len(t) for t in self.by_file.values())


def _read_answers(adir: Path, questions: dict[str, dict], notes: list[str]) -> _Answers:
    """Every answer file under ``model_answer/`` (subfolders too).  A row that cannot be read is left out with a
    note, a question answered twice keeps the last answer (FastChat's ``load_model_answers`` does), an answer
    whose ``model_id`` is not the file's stem is still the stem's (FastChat ignores ``model_id``)."""
    answers = _Answers()
    if not adir.is_dir():
        notes.append(f"no {ANSWERS}/: the answers' texts are unknown (the MT-Bench score does not need them)")
        return answers
    for f in sorted(adir.rglob("*.jsonl")):
        key = f.relative_to(adir).with_suffix("").as_posix()
        skipped = _Skipped(f"{ANSWERS}/{key}.jsonl", "answer")
        turns_of: dict[str, list[str]] = {}
        other_ids: set[str] = set()
        unknown = 0
        for row, rec in read_jsonl_lines(f):
            try:
                qid = _qid(f, rec, row)
                model_id = rec.get("model_id")
                if isinstance(model_id, str) and model_id.strip() and model_id.strip() != f.stem:
                    other_ids.add(model_id.strip()[:MAX_QUOTE])
                choices = rec.get("choices")
                if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                    raise IngestError(
                        f, f"expected a list of {{turns}} choices, got {quote(choices)}", row=row, field="choices"
                    )
                turns = _strings(f, choices[0].get("turns"), row, "choices", allow_empty=True)
            except IngestError as exc:
                skipped.add(exc)
                continue
            if questions and qid not in questions:
                unknown += 1
                continue
            if qid in turns_of:
                skipped.repeated += 1
            turns_of[qid] = turns
        notes.extend(skipped.notes())
        if unknown:
            notes.append(f"{ANSWERS}/{key}.jsonl: {unknown} answer(s) to questions {QUESTIONS} lacks, left out")
        if other_ids:
            notes.append(
                f"{ANSWERS}/{key}.jsonl: its answers say model_id {', '.join(quote(m) for m in sorted(other_ids))}; "
                f"the model is {quote(f.stem)}, named by the file as FastChat and its grades name it"
            )
        answers.add_file(key, turns_of)
    shared = sorted(name for name, key in answers.names.items() if key is None)
    if shared:
        notes.append(
            f"answer files in different folders share the name(s) {', '.join(quote(n) for n in shared)}: "
            "judgments naming them have no answer text (their paths under model_answer/ still name them)"
        )
    return answers


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """An MT-Bench directory: model_judgment/*_pair.jsonl and/or *_single.jsonl, with question.jsonl and
    model_answer/ when present (FastChat's ``show_result`` reads the judgment files alone)."""
    root = Path(path)
    if not root.is_dir():
        raise IngestError(root, f"expected an MT-Bench directory ({JUDGMENTS}/, with {QUESTIONS} and {ANSWERS}/)")
    qfile, adir, jdir = root / QUESTIONS, root / ANSWERS, root / JUDGMENTS
    notes: list[str] = []
    pair_files = _with_judgments(sorted(jdir.glob("*_pair.jsonl")) if jdir.is_dir() else [], notes)
    single_files = _with_judgments(sorted(jdir.glob("*_single.jsonl")) if jdir.is_dir() else [], notes)
    if not pair_files and not single_files:
        has = "answers" if adir.is_dir() and any(adir.rglob("*.jsonl")) else "no answers"
        raise IngestError(
            root,
            f"the directory has {has} but no judgments ({JUDGMENTS}/*_pair.jsonl or *_single.jsonl"
            f"{' with rows' if notes else ''}); answers nobody compared or graded form no battles and no scores",
        )
    questions = _read_questions(qfile, notes)
    answers = _read_answers(adir, questions, notes)
    unknown_questions: set[str] = set()

    def known(f: Path, row: int, qid: str, turn: int, field: str = "turn") -> None:
        """A judgment's question and turn: one question.jsonl lacks is kept (FastChat's show_result never reads
        that file) and counted; a turn past the question's last is refused (the files contradict each other)."""
        if qid not in questions:
            unknown_questions.add(qid)
        elif turn > len(questions[qid]["turns"]):
            raise IngestError(
                f,
                f"turn {turn} of question {quote(qid)}, which has {len(questions[qid]['turns'])}",
                row=row,
                field=field,
            )

    battles: dict[tuple[str, str, str, int], dict] = {}  # (qid, model_a, model_b, turn) → battle row
    judgments: list[dict] = []
    runs: dict[tuple[int, str, str, str], int] = {}  # judgments of a battle by a judge in an order so far

    def battle_of(f: Path, row: int, qid: str, m1: str, m2: str, turn: int, tstamp: float | None) -> tuple[dict, bool]:
        """The battle of (qid, m1, m2, turn) and whether m1 is its model_a (created when new)."""
        for (first, second), forward in (((m1, m2), True), ((m2, m1), False)):
            if (qid, first, second, turn) in battles:
                return battles[(qid, first, second, turn)], forward
        b = {
            "battle_key": len(battles),
            "model_a": m1,
            "model_b": m2,
            "external_id": qid,
            "turn": turn,
            "tstamp": tstamp,
            "language": "en",
        }
        battles[(qid, m1, m2, turn)] = b
        return b, True

    def add(j: dict) -> None:
        """A judgment; a second one of the same battle by the same judge, prompt and order (a run appended to
        the file, as FastChat's gen_judgment does) is kept as the variant 'repeat-1', a third 'repeat-2', …"""
        key = (j["battle_key"], j["judge"], j["prompt_version"], j["order"])
        runs[key] = runs.get(key, 0) + 1
        j["variant"] = "original" if runs[key] == 1 else f"repeat-{runs[key] - 1}"
        judgments.append(j)

    for f in pair_files:
        for row, rec in read_jsonl_lines(f):
            qid = _qid(f, rec, row)
            m1 = _name(f, rec.get("model_1"), row, "model_1")
            m2 = _name(f, rec.get("model_2"), row, "model_2")
            if m1 == m2:
                raise IngestError(f, "a model cannot battle itself", row=row, field="model_2")
            turn = _int(f, rec.get("turn"), row, "turn", 1, MAX_TURN)
            known(f, row, qid, turn)
            name, prompt = _judge(f, rec, row)
            winners = []
            for game in ("g1", "g2"):
                w = rec.get(f"{game}_winner")
                if not isinstance(w, str) or w.strip().lower() not in PAIR_WINNERS:
                    raise IngestError(
                        f,
                        f"unknown winner {quote(w)} (expected one of {', '.join(PAIR_WINNERS)})",
                        row=row,
                        field=f"{game}_winner",
                    )
                winners.append(w.strip().lower())
            texts = [_optional_text(f, rec, row, f"{game}_judgment") for game in ("g1", "g2")]
            battle, forward = battle_of(f, row, qid, m1, m2, turn, _tstamp(f, rec, row))
            for game, winner, text in zip(("g1", "g2"), winners, texts):
                model_1_first = game == "g1"
                order = "ab" if model_1_first == forward else "ba"
                verdict = {"model_1": "a" if forward else "b", "model_2": "b" if forward else "a", "tie": "tie"}.get(
                    winner
                )
                add(
                    {
                        "battle_key": battle["battle_key"],
                        "judge": name,
                        "order": order,
                        "prompt_version": prompt,
                        "verdict": verdict,
                        "raw_output": text,
                        "parse_error": None if verdict else "FastChat could not read a verdict (winner 'error')",
                    },
                )
    grades = _read_grades(single_files, known)
    singles, unused = _single_judgments(grades, battles)
    for j in singles:
        add(j)

    battle_rows = sorted(battles.values(), key=lambda b: b["battle_key"])
    needed = [(b["external_id"], b["turn"], m) for b in battle_rows for m in (b["model_a"], b["model_b"])]
    needed += [(g["qid"], g["turn"], g["model"]) for g in grades]
    prompts, comps = _texts(needed, questions, answers)
    for b in battle_rows:
        b["prompt_key"] = prompts.index[(b["external_id"], b["turn"])]
    without_text = sum(
        1
        for b in battle_rows
        if not all(answers.has(b["external_id"], m, b["turn"]) for m in (b["model_a"], b["model_b"]))
    )
    if without_text:
        notes.append(
            f"{without_text} of {len(battle_rows)} pair battles lack an answer's text; their verdicts count, "
            "the views that read answers leave them out"
        )
    if unknown_questions:
        notes.append(
            f"judgments of {len(unknown_questions)} question(s) {QUESTIONS} does not hold are kept without the "
            "question's text"
        )
    judges = sorted({j["judge"] for j in judgments})
    battles_df = pd.DataFrame(battle_rows, columns=[*BATTLE_FIELDS, "prompt_key"])
    battles_df = battles_df.astype({"battle_key": np.int64, "prompt_key": np.int64})
    battles_df["turn"] = battles_df["turn"].astype("Int32")
    battles_df["tstamp"] = pd.array(battles_df["tstamp"].tolist(), dtype="Float64")
    grades_df = pd.DataFrame(
        [
            {
                "prompt_key": prompts.index[(g["qid"], g["turn"])],
                **{k: g[k] for k in ("model", "judge", "prompt_version", "turn", "run", "score")},
                "raw_output": g["text"],
                "parse_error": None if g["score"] is not None else "FastChat could not read a grade (score -1)",
            }
            for g in grades
        ],
        columns=list(GRADE_FIELDS),
    ).astype({"prompt_key": np.int64, "turn": np.int64, "run": np.int64, "score": np.float64})
    answered = answers.models
    in_battles = set(battles_df["model_a"]) | set(battles_df["model_b"])
    graded = set(grades_df["model"])
    return DatasetTables(
        name=dataset or root.name,
        source="fastchat-mtbench",
        models=models_frame(in_battles | graded),
        battles=battles_df,
        prompts=prompts.frame,
        completions=comps,
        judges=pd.DataFrame({"judge": judges}) if judges else None,
        judgments=pd.DataFrame(judgments) if judgments else None,
        grades=grades_df if len(grades_df) else None,
        meta={
            "format": "fastchat-mtbench",
            "dir": root.name,
            "questions": len(questions),
            "answers": len(answers),
            "models_without_pair_judgments": sorted(answered - in_battles),
            "pair_files": [f.name for f in pair_files],
            "single_files": [f.name for f in single_files],
            "pair_judgments_repeated": sum(1 for j in judgments if j["variant"] != "original"),
            "grades": len(grades),
            "grades_unread": sum(1 for g in grades if g["score"] is None),
            "grades_repeated": sum(1 for g in grades if g["run"] > 1),
            "grades_without_answer": sum(1 for g in grades if not answers.has(g["qid"], g["model"], g["turn"])),
            "battles_without_answers": without_text,
            "single_grades_used": len(singles),
            "single_grades_unused": unused,
            "single_grades": "kept as grades (the MT-Bench score); also a '<judge>-single' judgment (order ab) per "
            "pair battle whose two models were both graded: the higher first-run grade wins, equal grades tie; "
            "both grades in raw_output",
            "notes": notes,
        },
    )


def _with_judgments(files: list[Path], notes: list[str]) -> list[Path]:
    """The judgment files that hold something; an empty one (FastChat creates the pair file when pair judging
    starts) is skipped with a note."""
    kept = []
    for f in files:
        if f.is_file() and not f.read_bytes().strip():
            notes.append(f"{JUDGMENTS}/{f.name}: no judgments in this file")
        else:
            kept.append(f)
    return kept


class _Prompts:
    """Prompt rows keyed by (question id, turn)."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, int], int] = {}
        self.rows: list[dict] = []

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


def _turns_json(turns: list[str]) -> str | None:
    return json.dumps(turns, ensure_ascii=False) if len(turns) > 1 else None


def _texts(
    needed: list[tuple[str, int, str]], questions: dict[str, dict], answers: _Answers
) -> tuple[_Prompts, pd.DataFrame | None]:
    """Prompts per (question, turn) and completions per (prompt, model) of each needed (question, turn, model)
    that has an answer, in the order first needed: turns 1..turn.  A question ``question.jsonl`` lacks is a
    prompt without text."""
    prompts = _Prompts()
    comps: dict[tuple[int, str], dict] = {}
    for qid, turn, model in needed:
        q = questions.get(qid)
        if (qid, turn) not in prompts.index:
            key = prompts.index[(qid, turn)] = len(prompts.rows)
            user = q["turns"][:turn] if q else []
            refs = q["reference"] if q else []
            prompts.rows.append(
                {
                    "prompt_key": key,
                    "external_id": qid if turn == 1 else f"{qid}/turn-{turn}",
                    "text": user[0] if user else None,
                    "turns": _turns_json(user),
                    "category": q["category"] if q else None,
                    "reference": refs[turn - 1] if len(refs) >= turn and refs[turn - 1] else None,
                    "language": "en",
                }
            )
        key = prompts.index[(qid, turn)]
        answer = answers.get(qid, model)
        if (key, model) not in comps and answer is not None and len(answer) >= turn:
            said = answer[:turn]
            comps[(key, model)] = {
                "prompt_key": key,
                "model": model,
                "text": "\n\n".join(said),
                "turns": _turns_json(said),
            }
    return prompts, with_style(pd.DataFrame(list(comps.values()))) if comps else None


def _read_grades(files: list[Path], known: Callable[[Path, int, str, int], None]) -> list[dict]:
    """Every single-answer grade, in file order: judge, prompt name, question, model, turn, run, score (None for
    FastChat's -1), the judge's text.  A second grade of the same answer by the same judge (a run appended to
    the file) is run 2, and so on: FastChat's ``show_result`` counts every row, and so does the score.  A grade
    whose answer the directory lacks (published directories do) is kept; the answer's text is then unknown.
    ``known`` checks the question and turn against question.jsonl."""
    grades: list[dict] = []
    runs: dict[tuple[str, str, str, int], int] = {}
    for f in files:
        for row, rec in read_jsonl_lines(f):
            qid = _qid(f, rec, row)
            model = _name(f, rec.get("model"), row, "model")
            turn = _int(f, rec.get("turn"), row, "turn", 1, MAX_TURN)
            known(f, row, qid, turn)
            name, prompt = _judge(f, rec, row)
            score = rec.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not (score == -1 or 0 <= score <= 10):
                raise IngestError(f, f"expected a grade in [0, 10] or -1, got {quote(score)}", row=row, field="score")
            key = (name, qid, model, turn)
            runs[key] = runs.get(key, 0) + 1
            grades.append(
                {
                    "judge": name,
                    "prompt_version": prompt,
                    "qid": qid,
                    "model": model,
                    "turn": turn,
                    "run": runs[key],
                    "score": None if score == -1 else float(score),
                    "text": _optional_text(f, rec, row, "judgment"),
                }
            )
    return grades


def _single_judgments(grades: list[dict], battles: dict[tuple[str, str, str, int], dict]) -> tuple[list[dict], int]:
    """Judgments from the first-run grades (see the module docstring) and how many grades no battle used."""
    first = {(g["judge"], g["qid"], g["model"], g["turn"]): g for g in grades if g["run"] == 1}
    used: set[tuple[str, str, str, int]] = set()
    out = []
    names = sorted({k[0] for k in first})
    for (qid, ma, mb, turn), b in battles.items():
        for name in names:
            ga, gb = first.get((name, qid, ma, turn)), first.get((name, qid, mb, turn))
            if ga is None or gb is None:
                continue
            used |= {(name, qid, ma, turn), (name, qid, mb, turn)}
            sa, sb = ga["score"], gb["score"]
            failed = sa is None or sb is None
            verdict = None if failed else "a" if sa > sb else "b" if sb > sa else "tie"
            raw = json.dumps(
                {
                    "score_a": -1.0 if sa is None else sa,
                    "score_b": -1.0 if sb is None else sb,
                    "judgment_a": ga["text"],
                    "judgment_b": gb["text"],
                },
                ensure_ascii=False,
            )
            out.append(
                {
                    "battle_key": b["battle_key"],
                    "judge": f"{name}-single",
                    "order": "ab",
                    "prompt_version": ga["prompt_version"],
                    "verdict": verdict,
                    "raw_output": raw,
                    "parse_error": "FastChat could not read a grade (score -1)" if failed else None,
                }
            )
    return out, len(grades) - len(used)
