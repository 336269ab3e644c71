"""An Arena-Hard-Auto directory: question.jsonl, model_answer/*.jsonl and, when present, model_judgment/.

Without ``model_judgment/`` the directory gives prompts, real completions and
one unjudged battle per prompt and pair of answering models.

With ``model_judgment/<judge>/<model>.jsonl`` files, each record is one
judge's two games of a model against the baseline on one question:

* v0.1: ``{question_id, model, judge, games: [{user_prompt, judgment, score}, …]}``;
  the baseline is implicit, :data:`DEFAULT_BASELINE` (Arena-Hard v0.1's
  ``baseline_model``);
* v2: ``{uid, category, judge, model, baseline, games: [{score, judgment, prompt}, …]}``,
  ``judgment`` a string or ``{answer, …}``.

Game 1 shows the baseline as A and the model as B; game 2 swaps them.  The
battles are then the judged ones: one per (question, baseline, model) with
model_a = the baseline and model_b = the model (answers of models nobody
judged stay as completions, in no battle).  Game 1 is the judgment in order
``ab``, game 2 in order ``ba``.  The judge is the record's ``judge`` field
(the folder name when the field is absent; the two are not required to
agree, since folders get renamed).

Scores ``A>>B, A>B, A=B (B=A), B>A, B>>A`` are converted to battle terms:
``grade`` 2 … −2 (2 = model_a much better) and ``verdict`` its direction
('a', 'b', 'tie').  A null score (the judge wrote no ``[[verdict]]``) or an
unrecognised one is kept as an unparsed judgment: verdict None, its text in
``raw_output`` and the reason in ``parse_error``.  The hard label the
leaderboard fits uses the direction only: Arena-Hard's own practice of
counting a strong verdict (A>>B) as several wins is NOT applied there; the
grade is stored for the Arena-Hard score (``winrate --arena-hard``,
:mod:`core.stats.arena_hard`), which applies it.  The dataset's meta names the
baseline (``baseline``), which ``winrate`` uses when a single judged model is,
like the baseline, in every battle.

A record judging the baseline against itself makes no battle and is skipped
(counted in the dataset's meta).  The reading contract is Arena-Hard's own ``show_result`` (docs/formats.md): the
uncontrolled score reads the judgments alone, so a judged battle whose answers model_answer/ lacks keeps its games
(a note counts them), an empty answer is kept as an empty text and an answer longer than ``MAX_TEXT_CHARS`` is
kept cut to that length (notes say which).  v0.1 records name no baseline: ``--baseline NAME`` names it, else
``gpt-4-0314`` when it answered here, else the one answering model no record judges; several candidates are an
error that lists them.  A directory of model_judgment/ alone is read (prompts known by id, no answers); with
question.jsonl present, a judgment of a question it lacks is refused, naming file, row and field.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    MAX_TEXT_CHARS,
    IngestError,
    is_missing,
    known_family,
    message_text,
    models_frame,
    quote,
    read_jsonl_lines,
    text_value,
    with_style,
)

DEFAULT_BASELINE = "gpt-4-0314"  # v0.1 judgments name no baseline: Arena-Hard v0.1's baseline_model
JUDGMENT_DIR = "model_judgment"
# A game's score (A shown first) → the grade of A over B: 2 = A much better … −2 = B much better.
GAME_GRADES = {"A>>B": 2, "A>B": 1, "A=B": 0, "B=A": 0, "B>A": -1, "B>>A": -2}
GRADE_VERDICT = {2: "a", 1: "a", 0: "tie", -1: "b", -2: "b"}
# a question's fields kept as prompt attributes (its ``category`` is the prompt's own): v0.1's topic cluster,
# v2.0's subcategory (coding, math, creative_writing under the hard_prompt and creative_writing categories)
PROMPT_ATTRIBUTES = ("cluster", "subcategory")


def read(
    path: str | Path, dataset: str | None = None, judge: str | None = None, baseline: str | None = None
) -> DatasetTables:
    """Prompts, real completions, and either the judged battles (with model_judgment/) or one unjudged battle
    per prompt and model pair.  ``baseline`` names the model v0.1 records are against (they name none)."""
    root = Path(path)
    qfile, adir = root / "question.jsonl", root / "model_answer"
    if not root.is_dir():
        raise IngestError(root, "expected an Arena-Hard directory (question.jsonl, model_answer/)")
    jdir = root / JUDGMENT_DIR
    jfiles = sorted(f for f in jdir.glob("*/*.jsonl") if f.is_file()) if jdir.is_dir() else []
    answered_any = adir.is_dir() and any(adir.glob("*.jsonl"))
    if not jfiles:  # without judgments the answers are the dataset: both files are needed
        if not qfile.exists():
            raise IngestError(qfile, "missing question.jsonl")
        if not answered_any:
            raise IngestError(adir, "missing model_answer/*.jsonl")
    notes: list[str] = []
    prompts: list[dict] = []
    attributes: list[dict] = []
    uid_key: dict[str, int] = {}
    if not qfile.exists():
        notes.append("no question.jsonl: the prompts have no text (the score reads only the judgments)")
    if not answered_any:
        notes.append("no model_answer/*.jsonl: no answer texts (style control and the views of texts need them)")
    for i, q in read_jsonl_lines(qfile) if qfile.exists() else ():
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
            if "content" not in turns[0]:
                raise IngestError(
                    qfile, f"turn 1 has no 'content' (keys {quote(sorted(turns[0]))})", row=i, field=field
                )
            text = turns[0]["content"]
        text = message_text(qfile, text, i, field)
        if not text:
            raise IngestError(qfile, "missing prompt text", row=i, field="prompt")
        if uid in uid_key:
            raise IngestError(qfile, f"duplicate uid {quote(uid)}", row=i, field="uid")
        category = text_value(qfile, q.get("category"), i, "category")
        for key in PROMPT_ATTRIBUTES:  # the slices a leaderboard of this file can be drawn on
            value = text_value(qfile, q.get(key), i, key)
            if value:
                attributes.append({"prompt_key": len(prompts), "key": key, "value": value})
        uid_key[uid] = len(prompts)
        prompts.append(
            {"prompt_key": len(prompts), "external_id": uid, "text": text, "category": category, "language": "en"}
        )
    completions = _read_answers(adir, uid_key, prompts, notes)
    if jfiles:
        answered = set(zip(completions["prompt_key"].tolist(), completions["model"].tolist()))
        battles_df, judgments, skipped, named, self_grades = _judged(
            jfiles, uid_key, answered, prompts, baseline, notes, questions_known=qfile.exists()
        )
        names = sorted(set(judgments["judge"]))
        baselines = sorted(set(battles_df["model_a"]))  # the importer puts the baseline as model_a
        return DatasetTables(
            name=dataset or root.name,
            source="arena-hard",
            models=models_frame(set(completions["model"]) | set(battles_df["model_a"]) | set(battles_df["model_b"])),
            battles=battles_df,
            prompts=pd.DataFrame(prompts),
            prompt_attributes=_attributes(attributes),
            completions=completions if len(completions) else None,
            judges=pd.DataFrame(
                {"judge": names, "family": [known_family(n) for n in names], "prompt_version": "imported"}
            ),
            judgments=judgments,
            meta={
                "format": "arena-hard",
                "dir": root.name,
                "judgments": "games against the baseline; grade −2…2 kept, hard labels use its direction only",
                "skipped_self_judgments": skipped,
                "baseline_self_grades": self_grades,
                "baseline": baselines[0] if len(baselines) == 1 else baselines,
                "baseline_from": named,
                "notes": notes,
            },
        )
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
    # One answering model (v2.0 publishes answer files one model at a time) gives prompts and completions and no
    # battle yet: the battles come when a second model's answers are added to the dataset or generated.
    battles_df = pd.DataFrame(battles, columns=["prompt_key", "model_a", "model_b", "external_id", "language"])
    battles_df.insert(0, "battle_key", np.arange(len(battles_df), dtype=np.int64))
    return DatasetTables(
        name=dataset or root.name,
        source="arena-hard",
        models=models_frame(completions["model"]),
        battles=battles_df,
        prompts=pd.DataFrame(prompts),
        prompt_attributes=_attributes(attributes),
        completions=completions,
        meta={"format": "arena-hard", "dir": root.name, "notes": notes},
    )


def _attributes(rows: list[dict]) -> pd.DataFrame | None:
    return pd.DataFrame(rows, columns=["prompt_key", "key", "value"]) if rows else None


def _read_answers(adir: Path, uid_key: dict[str, int], prompts: list[dict], notes: list[str]) -> pd.DataFrame:
    """Every answer of model_answer/*.jsonl as a completion.  An empty or whitespace-only answer is kept as an
    empty text and counted in the notes; an answer longer than ``MAX_TEXT_CHARS`` is kept cut to that length
    (its first characters are what a page can show) with a note; a question a model answered twice keeps the
    last answer, as Arena-Hard's ``load_model_answers`` does, with a note."""
    comps: dict[tuple[int, str], dict] = {}
    empty: list[str] = []
    clipped: list[str] = []
    repeated = 0
    for f in sorted(adir.glob("*.jsonl")):
        for i, rec in read_jsonl_lines(f):
            uid = text_value(f, rec.get("uid", rec.get("question_id")), i, "uid") or ""
            if uid not in uid_key:
                raise IngestError(f, f"answer to unknown question uid {quote(uid)}", row=i, field="uid")
            model = (text_value(f, rec.get("model", rec.get("model_id")), i, "model") or f.stem).strip()
            if not model or len(model) > MAX_QUOTE:
                raise IngestError(f, f"model name {quote(model)} is empty or too long", row=i, field="model")
            answer, full_length = _answer(f, rec, i)
            where = f"{f.name} row {i}"
            if not answer.strip():
                empty.append(where)
            if full_length > len(answer):
                clipped.append(f"{where} ({full_length:,} characters)")
            key = (uid_key[uid], model)
            repeated += key in comps
            comps[key] = {"prompt_key": uid_key[uid], "model": model, "text": answer, "n_tokens": _tokens(f, rec, i)}
    if empty:
        notes.append(
            f"{len(empty)} empty answer(s) kept as empty texts (their judgments count): {', '.join(empty[:5])}"
            + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        )
    if clipped:
        notes.append(
            f"{len(clipped)} answer(s) longer than {MAX_TEXT_CHARS:,} characters kept cut to that length (their "
            f"judgments count; the length measures and style control see the cut text): {', '.join(clipped[:5])}"
        )
    if repeated:
        notes.append(f"{repeated} question(s) answered twice by the same model: the last answer is kept")
    frame = pd.DataFrame(list(comps.values()), columns=["prompt_key", "model", "text", "n_tokens"])
    return with_style(frame.astype({"n_tokens": "Int64"}))


def _tokens(path: Path, rec: dict, row: int) -> int | None:
    """The answer's length in tokens as Arena-Hard recorded it, which its style control reads: ``conv_metadata``'s
    ``token_len`` (the layout gen_answer writes since style control), else the sum of the turns' ``token_len``
    (v0.1 as published from April 2024); None when the record has neither.  A count that is not a
    non-negative integer is an error naming the field."""
    meta = rec.get("conv_metadata")
    if isinstance(meta, dict) and not is_missing(meta.get("token_len")):
        return _count(path, meta["token_len"], row, "conv_metadata.token_len")
    choices = rec.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        turns = choices[0].get("turns")
        if isinstance(turns, list) and turns and all(isinstance(t, dict) and "token_len" in t for t in turns):
            return sum(_count(path, t["token_len"], row, "choices[0].turns.token_len") for t in turns)
    return None


def _count(path: Path, value: object, row: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise IngestError(
            path, f"expected a token count (a non-negative integer), got {quote(value)}", row=row, field=field
        )
    return value


def _clip(content: object) -> tuple[object, int]:
    """A string content cut to ``MAX_TEXT_CHARS`` and its full length (other contents as they are, length 0)."""
    if isinstance(content, str) and len(content) > MAX_TEXT_CHARS:
        return content[:MAX_TEXT_CHARS], len(content)
    return content, 0


def _answer(path: Path, rec: dict, row: int) -> tuple[str, int]:
    """The answer of one record in either layout, and its length before a cut (0: not cut): the current
    ``messages[-1].content`` (a ``{thought, answer}`` object gives its answer) or the original v0.1
    ``choices[0].turns`` (FastChat's; turns joined).  No text there is an empty answer; a record with neither
    field is an error."""
    if "messages" not in rec and "choices" in rec:
        choices = rec["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise IngestError(
                path, f"expected a list of {{turns}} choices, got {quote(choices)}", row=row, field="choices"
            )
        return _turns_text(path, choices[0].get("turns"), row)
    msgs = rec.get("messages")
    if not isinstance(msgs, list) or not msgs or not isinstance(msgs[-1], dict):
        raise IngestError(
            path, "no answer text at messages[-1].content (or choices[0].turns)", row=row, field="messages"
        )
    content, full = _clip(msgs[-1].get("content"))
    return message_text(path, content, row, "messages") or "", full


def _turns_text(path: Path, turns: object, row: int) -> tuple[str, int]:
    """The answer of FastChat's ``choices[0].turns``: strings (the restructured layout) or, as Arena-Hard v0.1
    was published from April 2024, ``{content, token_len}`` objects; turns joined by a newline, cut to
    ``MAX_TEXT_CHARS`` (with the full length; 0 when not cut).  An object without ``content`` (a misspelt key)
    is an error, never a silently dropped answer."""
    field = "choices[0].turns"
    if is_missing(turns):
        return "", 0
    if isinstance(turns, str):
        content, full = _clip(turns)
        return text_value(path, content, row, field) or "", full
    if not isinstance(turns, list):
        raise IngestError(path, f"expected a list of turns, got {quote(turns)}", row=row, field=field)
    texts = []
    original = 0  # the characters before any cut
    for k, turn in enumerate(turns):
        if isinstance(turn, dict):
            if "content" not in turn:
                raise IngestError(
                    path, f"turn {k + 1} has no 'content' (keys {quote(sorted(turn))})", row=row, field=field
                )
            content, full = _clip(turn["content"])
            turn = message_text(path, content, row, field)
        elif not isinstance(turn, str):
            raise IngestError(path, f"turn {k + 1} is {quote(turn)}, not text", row=row, field=field)
        else:
            turn, full = _clip(turn)
        if turn is not None:
            texts.append(turn)
            original += full or len(turn)
    original += max(len(texts) - 1, 0)
    content, _ = _clip("\n".join(texts))
    text = text_value(path, content, row, field) or ""
    return text, original if original > len(text) else 0


def _name(path: Path, rec: dict, row: int, field: str, default: str | None = None) -> str:
    """A model, baseline or judge name: non-empty text of at most ``MAX_QUOTE`` characters."""
    value = text_value(path, rec.get(field), row, field)
    name = (value if value is not None else default or "").strip()
    if not name:
        raise IngestError(path, "missing name", row=row, field=field)
    if len(name) > MAX_QUOTE:
        raise IngestError(path, f"a name of {len(name):,} characters (at most {MAX_QUOTE})", row=row, field=field)
    return name


def _judged(
    files: list[Path],
    uid_key: dict[str, int],
    answered: set[tuple[int, str]],
    prompts: list[dict],
    baseline: str | None,
    notes: list[str],
    questions_known: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, int, str, dict[str, dict[str, int]]]:
    """The judged battles (baseline as model_a), their judgments in battle terms, how many records judged the
    baseline against itself (skipped), where the baseline of records naming none came from, and per judge the
    grades of the baseline's games against itself (count per grade, battle terms).

    Arena-Hard's ``show_result`` reads the judgment files alone: a battle whose answers model_answer/ lacks keeps
    its games (counted in the notes)."""
    records = []
    for f in files:
        for i, rec in read_jsonl_lines(f):
            qfield = "uid" if "uid" in rec else "question_id"
            uid = text_value(f, rec.get(qfield), i, qfield)
            if uid is None:
                raise IngestError(f, "missing question id", row=i, field=qfield)
            if uid not in uid_key:
                if questions_known:
                    raise IngestError(f, f"judgment of unknown question {quote(uid)}", row=i, field=qfield)
                uid_key[uid] = len(prompts)  # no question.jsonl: the prompt is known by its id alone
                prompts.append(
                    {"prompt_key": len(prompts), "external_id": uid, "text": None, "category": None, "language": "en"}
                )
            model = _name(f, rec, i, "model")
            named = _name(f, rec, i, "baseline") if not is_missing(rec.get("baseline")) else None
            judge = _name(f, rec, i, "judge", f.parent.name)
            games = rec.get("games")
            if not isinstance(games, list) or not 1 <= len(games) <= 2 or not all(isinstance(g, dict) for g in games):
                raise IngestError(
                    f,
                    f"expected a list of one or two games {{score, judgment}}, got {quote(games)}",
                    row=i,
                    field="games",
                )
            records.append((f, i, qfield, uid, model, named, judge, games))
    implicit, source = _implicit_baseline(
        files[0].parent.parent, baseline, {m for (_, m) in answered}, {r[4] for r in records if r[5] is None}, notes
    )
    skipped = 0
    self_grades: dict[str, dict[str, int]] = {}
    battle_of: dict[tuple[int, str, str], int] = {}
    battles: list[dict] = []
    rows: list[dict] = []
    seen: dict[tuple[int, str], tuple[Path, int]] = {}
    unanswered = 0
    for f, i, qfield, uid, model, named, judge, games in records:
        pk = uid_key[uid]
        against = named or implicit
        if model == against:  # the baseline against itself: no battle (Arena-Hard scores it 50% by fiat)
            skipped += 1
            # ... but its games enter Arena-Hard's own bootstrap interval (core.stats.arena_hard.script_interval)
            tally = self_grades.setdefault(judge, {})
            for g, game in enumerate(games):
                grade = _game(f, i, g, game, -1, judge)["grade"]
                if grade is not None:
                    tally[str(grade)] = tally.get(str(grade), 0) + 1
            continue
        key = (pk, against, model)
        if key not in battle_of:
            battle_of[key] = len(battles)
            unanswered += not ((pk, model) in answered and (pk, against) in answered)
            battles.append(
                {
                    "battle_key": len(battles),
                    "prompt_key": pk,
                    "model_a": against,
                    "model_b": model,
                    "external_id": prompts[pk]["external_id"],
                    "language": "en",
                }
            )
        done = (battle_of[key], judge)
        if done in seen:
            first, first_row = seen[done]
            raise IngestError(
                f,
                f"judge {quote(judge)} judged {quote(model)} against {quote(against)} on question {quote(uid)} "
                f"twice (first in {first.name}, row {first_row})",
                row=i,
                field=qfield,
            )
        seen[done] = (f, i)
        for g, game in enumerate(games):
            rows.append(_game(f, i, g, game, battle_of[key], judge))
    if not battles:
        raise IngestError(
            files[0].parent.parent, "no judgment of a model against its baseline in model_judgment/*/*.jsonl"
        )
    single = [f"{f.name} row {i}" for f, i, *_, games in records if len(games) == 1]
    if single:
        notes.append(
            f"{len(single)} record(s) hold one game, counted once: {', '.join(single[:5])}"
            + (f" and {len(single) - 5} more" if len(single) > 5 else "")
            + " (Arena-Hard's show_result expects two; some forks' scripts read the one game again as the "
            "second, with the answers' sides swapped, which turns its verdict into a win and a loss)"
        )
    if unanswered:
        notes.append(
            f"{unanswered} of {len(battles)} judged battles lack an answer in model_answer/: their games count "
            "in the score (Arena-Hard's show_result reads only the judgments); the views that read answers "
            "leave them out"
        )
    battles_df = pd.DataFrame(battles).astype({"battle_key": np.int64})
    judgments = pd.DataFrame(rows)
    judgments["grade"] = judgments["grade"].astype("Int64")
    return battles_df, judgments, skipped, source, self_grades


def _implicit_baseline(
    where: Path, given: str | None, answering: set[str], judged: set[str], notes: list[str]
) -> tuple[str, str]:
    """The baseline of records that name none (Arena-Hard v0.1's) and how it was chosen: ``--baseline``; else
    Arena-Hard v0.1's own ``gpt-4-0314`` when it answered here; else the one answering model no such record
    judges (every other model was judged against it); else ``gpt-4-0314`` when nothing answered (the judgments
    alone say nothing about it).  Several candidates and no ``--baseline`` is an error listing them."""
    if not judged:
        return given or DEFAULT_BASELINE, "named by every record"
    if given is not None:
        notes.append(f"the records name no baseline: {quote(given)}, as --baseline says")
        return given, "--baseline"
    configured = _configured_baseline(where.parent)
    if configured is not None:
        config, name = configured
        notes.append(
            f"the records name no baseline: {quote(name)}, the baseline_model of {config} (the judge "
            "configuration gen_judgment read for this bench; --baseline NAME says otherwise)"
        )
        return name, f"{config}"
    if DEFAULT_BASELINE in answering or not answering:
        return DEFAULT_BASELINE, "Arena-Hard v0.1's default (gpt-4-0314)"
    candidates = sorted(answering - judged)
    if len(candidates) == 1:
        notes.append(
            f"the records name no baseline and {DEFAULT_BASELINE} (Arena-Hard v0.1's) did not answer here: "
            f"the baseline is {quote(candidates[0])}, the one answering model no record judges "
            "(--baseline NAME says otherwise)"
        )
        return candidates[0], "the one answering model no record judges"
    unjudged = (
        f"the answering models no record judges are {', '.join(quote(c) for c in candidates[:10])}"
        if candidates
        else "every answering model is judged by some record (the baseline's own file judges it against itself)"
    )
    raise IngestError(
        where,
        f"the records name no baseline, {DEFAULT_BASELINE} (Arena-Hard v0.1's) did not answer here, no "
        f"config/judge_config.yaml names one for this bench, and {unjudged}: name it with --baseline NAME",
        field="baseline",
    )


BASELINE_LINE = re.compile(r"^baseline_model:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(?:#.*)?$", re.M)
BENCH_LINE = re.compile(r"^bench_name:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(?:#.*)?$", re.M)


def _configured_baseline(root: Path) -> tuple[str, str] | None:
    """The ``baseline_model`` of the Arena-Hard judge configuration that judged this bench, when the directory
    sits where Arena-Hard keeps it (``data/<bench>/`` beside ``config/judge_config.yaml``) or holds the file,
    and the configuration names this bench (or no bench): (the file as shown, the name)."""
    for config in (root / "judge_config.yaml", root.parent.parent / "config" / "judge_config.yaml"):
        try:
            text = config.read_text(encoding="utf-8", errors="replace")[:1_000_000]
        except OSError:
            continue
        bench, baseline = BENCH_LINE.search(text), BASELINE_LINE.search(text)
        if baseline and (bench is None or bench.group(1).strip() == root.name):
            shown = "judge_config.yaml" if config.parent == root else "config/judge_config.yaml"
            return shown, baseline.group(1).strip()[:MAX_QUOTE]
    return None


def _game(path: Path, row: int, g: int, game: dict, battle_key: int, judge: str) -> dict:
    """One game as a judgment in battle terms: game 1 shows model_a (the baseline) as A, game 2 as B."""
    field = f"games[{g + 1}]"
    raw = message_text(path, game.get("judgment"), row, f"{field}.judgment")
    score = game.get("score")
    grade: int | None = None
    error: str | None = None
    if score is None:
        error = "no score: the judge's output had no [[verdict]]"
    elif not isinstance(score, str):
        raise IngestError(
            path, f"expected a score such as 'A>B' or null, got {quote(score)}", row=row, field=f"{field}.score"
        )
    elif score.strip() in GAME_GRADES:
        grade = GAME_GRADES[score.strip()] * (1 if g == 0 else -1)
    else:
        error = f"unrecognised score {quote(score)} (expected one of {', '.join(GAME_GRADES)})"
    return {
        "battle_key": battle_key,
        "judge": judge,
        "order": "ab" if g == 0 else "ba",
        "prompt_version": "imported",
        "verdict": None if grade is None else GRADE_VERDICT[grade],
        "grade": grade,
        "raw_output": raw,
        "parse_error": error,
    }
