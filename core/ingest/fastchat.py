"""A FastChat MT-Bench data directory (``fastchat/llm_judge/data/mt_bench/``): questions, answers, GPT-4 verdicts.

Files read:

* ``question.jsonl``: ``{question_id, category, turns: [user turn 1, user turn 2], reference?}``;
* ``model_answer/<model>.jsonl``: ``{question_id, model_id, choices: [{turns: [answer 1, answer 2]}]}``;
* ``model_judgment/<judge>_pair.jsonl``: ``{question_id, model_1, model_2, g1_winner, g2_winner,
  judge: [judge model, prompt name], g1_judgment, g2_judgment, turn, tstamp}``;
* ``model_judgment/<judge>_single.jsonl``: ``{question_id, model, judge, judgment, score, turn}``
  (pair files, single files or both).

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
refused.
"""

from __future__ import annotations

import json
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


def _read_questions(qfile: Path) -> dict[str, dict]:
    questions: dict[str, dict] = {}
    for row, rec in read_jsonl_lines(qfile):
        qid = _qid(qfile, rec, row)
        if qid in questions:
            raise IngestError(qfile, f"duplicate question_id {quote(qid)}", row=row, field="question_id")
        turns = _strings(qfile, rec.get("turns"), row, "turns", allow_empty=False)
        category = rec.get("category")
        if not is_missing(category) and not isinstance(category, str):
            raise IngestError(qfile, f"expected text, got {quote(category)}", row=row, field="category")
        reference = rec.get("reference")
        refs = _strings(qfile, reference, row, "reference", allow_empty=True) if not is_missing(reference) else []
        questions[qid] = {"turns": turns, "category": category or None, "reference": refs}
    return questions


def _read_answers(adir: Path, questions: dict[str, dict]) -> dict[tuple[str, str], list[str]]:
    """Each model's answer turns, by (question id, model)."""
    answers: dict[tuple[str, str], list[str]] = {}
    where: dict[tuple[str, str], tuple[Path, int]] = {}
    for f in sorted(adir.glob("*.jsonl")):
        for row, rec in read_jsonl_lines(f):
            qid = _qid(f, rec, row)
            if qid not in questions:
                raise IngestError(f, f"answer to unknown question_id {quote(qid)}", row=row, field="question_id")
            model = _name(f, rec.get("model_id", f.stem), row, "model_id")
            choices = rec.get("choices")
            if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                raise IngestError(
                    f, f"expected a list of {{turns}} choices, got {quote(choices)}", row=row, field="choices"
                )
            turns = _strings(f, choices[0].get("turns"), row, "choices", allow_empty=True)
            if (qid, model) in answers:
                first, first_row = where[(qid, model)]
                raise IngestError(
                    f,
                    f"second answer of {quote(model)} to question {quote(qid)} "
                    f"(the first: {first.name} row {first_row})",
                    row=row,
                    field="question_id",
                )
            answers[(qid, model)] = turns
            where[(qid, model)] = (f, row)
    if not answers:
        raise IngestError(adir, "no answers in model_answer/*.jsonl")
    return answers


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """An MT-Bench directory: question.jsonl, model_answer/*.jsonl and model_judgment/*_pair.jsonl."""
    root = Path(path)
    if not root.is_dir():
        raise IngestError(root, f"expected an MT-Bench directory ({QUESTIONS}, {ANSWERS}/, {JUDGMENTS}/)")
    qfile, adir, jdir = root / QUESTIONS, root / ANSWERS, root / JUDGMENTS
    if not qfile.exists():
        raise IngestError(qfile, f"missing {QUESTIONS}")
    if not adir.is_dir() or not any(adir.glob("*.jsonl")):
        raise IngestError(adir, f"missing {ANSWERS}/*.jsonl")
    questions = _read_questions(qfile)
    answers = _read_answers(adir, questions)
    notes: list[str] = []
    pair_files = _with_judgments(sorted(jdir.glob("*_pair.jsonl")) if jdir.is_dir() else [], notes)
    single_files = _with_judgments(sorted(jdir.glob("*_single.jsonl")) if jdir.is_dir() else [], notes)
    if not pair_files and not single_files:
        raise IngestError(
            root,
            f"the directory has answers but no judgments ({JUDGMENTS}/*_pair.jsonl or *_single.jsonl"
            f"{' with rows' if notes else ''}); answers nobody compared or graded form no battles and no scores",
        )

    battles: dict[tuple[str, str, str, int], dict] = {}  # (qid, model_a, model_b, turn) → battle row
    judgments: list[dict] = []
    runs: dict[tuple[int, str, str, str], int] = {}  # judgments of a battle by a judge in an order so far

    def battle_of(f: Path, row: int, qid: str, m1: str, m2: str, turn: int, tstamp: float | None) -> tuple[dict, bool]:
        """The battle of (qid, m1, m2, turn) and whether m1 is its model_a (created when new)."""
        for (first, second), forward in (((m1, m2), True), ((m2, m1), False)):
            if (qid, first, second, turn) in battles:
                return battles[(qid, first, second, turn)], forward
        for field, model in (("model_1", m1), ("model_2", m2)):
            answer = answers.get((qid, model))
            if answer is None:
                raise IngestError(f, f"{quote(model)} has no answer to question {quote(qid)}", row=row, field=field)
            if len(answer) < turn:
                raise IngestError(
                    f, f"{quote(model)} answered {len(answer)} turn(s) of question {quote(qid)}", row=row, field=field
                )
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
            if qid not in questions:
                raise IngestError(f, f"judgment of unknown question_id {quote(qid)}", row=row, field="question_id")
            m1 = _name(f, rec.get("model_1"), row, "model_1")
            m2 = _name(f, rec.get("model_2"), row, "model_2")
            if m1 == m2:
                raise IngestError(f, "a model cannot battle itself", row=row, field="model_2")
            turn = _int(f, rec.get("turn"), row, "turn", 1, MAX_TURN)
            if turn > len(questions[qid]["turns"]):
                raise IngestError(
                    f,
                    f"turn {turn} of question {quote(qid)}, which has {len(questions[qid]['turns'])}",
                    row=row,
                    field="turn",
                )
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
    grades = _read_grades(single_files, questions, answers)
    singles, unused = _single_judgments(grades, battles)
    for j in singles:
        add(j)

    battle_rows = sorted(battles.values(), key=lambda b: b["battle_key"])
    needed = [(b["external_id"], b["turn"], m) for b in battle_rows for m in (b["model_a"], b["model_b"])]
    needed += [(g["qid"], g["turn"], g["model"]) for g in grades]
    prompts, comps = _texts(needed, questions, answers)
    for b in battle_rows:
        b["prompt_key"] = prompts.index[(b["external_id"], b["turn"])]
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
    answered = {m for (_, m) in answers}
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
            "grades_without_answer": sum(1 for g in grades if (g["qid"], g["model"]) not in answers),
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
    needed: list[tuple[str, int, str]], questions: dict[str, dict], answers: dict[tuple[str, str], list[str]]
) -> tuple[_Prompts, pd.DataFrame]:
    """Prompts per (question, turn) and completions per (prompt, model) of each needed (question, turn, model)
    that has an answer, in the order first needed: turns 1..turn."""
    prompts = _Prompts()
    comps: dict[tuple[int, str], dict] = {}
    for qid, turn, model in needed:
        q = questions[qid]
        if (qid, turn) not in prompts.index:
            key = prompts.index[(qid, turn)] = len(prompts.rows)
            user = q["turns"][:turn]
            refs = q["reference"]
            prompts.rows.append(
                {
                    "prompt_key": key,
                    "external_id": qid if turn == 1 else f"{qid}/turn-{turn}",
                    "text": user[0],
                    "turns": _turns_json(user),
                    "category": q["category"],
                    "reference": refs[turn - 1] if len(refs) >= turn and refs[turn - 1] else None,
                    "language": "en",
                }
            )
        key = prompts.index[(qid, turn)]
        if (key, model) not in comps and (qid, model) in answers:
            said = answers[(qid, model)][:turn]
            comps[(key, model)] = {
                "prompt_key": key,
                "model": model,
                "text": "\n\n".join(said),
                "turns": _turns_json(said),
            }
    return prompts, with_style(pd.DataFrame(list(comps.values())))


def _read_grades(
    files: list[Path], questions: dict[str, dict], answers: dict[tuple[str, str], list[str]]
) -> list[dict]:
    """Every single-answer grade, in file order: judge, prompt name, question, model, turn, run, score (None for
    FastChat's -1), the judge's text.  A second grade of the same answer by the same judge (a run appended to
    the file) is run 2, and so on: FastChat's ``show_result`` counts every row, and so does the score.  A grade
    whose answer the directory lacks (published directories do) is kept; the answer's text is then unknown."""
    grades: list[dict] = []
    runs: dict[tuple[str, str, str, int], int] = {}
    for f in files:
        for row, rec in read_jsonl_lines(f):
            qid = _qid(f, rec, row)
            if qid not in questions:
                raise IngestError(f, f"grade of unknown question_id {quote(qid)}", row=row, field="question_id")
            model = _name(f, rec.get("model"), row, "model")
            turn = _int(f, rec.get("turn"), row, "turn", 1, MAX_TURN)
            answer = answers.get((qid, model))
            if turn > len(questions[qid]["turns"]) or (answer is not None and turn > len(answer)):
                raise IngestError(
                    f,
                    f"turn {turn} of question {quote(qid)}, which {quote(model)} did not answer",
                    row=row,
                    field="turn",
                )
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
