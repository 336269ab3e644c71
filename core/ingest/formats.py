"""The import formats: one :class:`Format` each, the only place a format is described.

``core.ingest.load`` reads a path with its format's ``reader``; ``--format auto`` (``core.ingest.detect``)
tries each format's ``recognise`` test in the order of :data:`FORMATS` and takes the first that matches;
``core.ingest.merge`` reads ``adds_by`` to match a file's battles with a dataset's; ``python -m core import``
lists the names.  Adding a format is one entry here and its reader module.

Everything reads :data:`FORMATS` when called, so a format registered later (or by a test) is detected, read
and added to a dataset like the built-in ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# ``recognise(path, fields)``: None when the path is of the format, else what it lacks (that text goes into
# the error that lists every format tried).  ``fields``: a table file's field names (None for a directory or
# a file without named fields).
Recogniser = Callable[[Path, frozenset[str] | None], str | None]


@dataclass(frozen=True)
class Format:
    """A file layout ``core.ingest.load`` reads."""

    name: str
    # ``reader(path, dataset=None, judge=None) -> core.domain.DatasetTables`` as ``"module:function"``;
    # it validates the whole input and raises ``core.ingest.IngestError`` naming file, row and field
    reader: str
    recognise: Recogniser | None = None  # None: never chosen by ``--format auto``
    label: str = ""  # a short name for people ("LMArena battles (Parquet, CSV, JSONL)")
    origin: str = ""  # where such files come from and the fields they hold
    # ``bulk(path, dataset=None, judge=None)``: a plan the store writes with INSERT … SELECT after validating in
    # SQL, or None when the file needs ``reader`` (not Parquet, texts, unusual column types); core/store/bulk.py
    bulk: str | None = None
    one_file: bool = False  # a table layout of one file: a directory of such files is read as one dataset
    annotators: bool = False  # its files hold several annotator configurations (``--annotator`` chooses one)
    baselines: bool = False  # its judgments may leave their baseline unnamed (``--baseline`` names it)
    # How a file of this format adds to a dataset of the same format (``core.ingest.merge``): "id", battles
    # carry their own id (LMArena's question_id, PandaLM's idx); "pair", one battle per (prompt, model pair,
    # turn), matched in either order; None, files are whole datasets and add to none.
    adds_by: Literal["id", "pair"] | None = None


def _table(*required: str) -> Callable[[Path, frozenset[str] | None], str | None]:
    def missing(path: Path, fields: frozenset[str] | None) -> str | None:
        if path.is_dir():
            return "a file, not a directory"
        if fields is None:
            return "a table with named fields (Parquet, CSV, JSONL or JSON)"
        lacking = [c for c in required if c not in fields]
        return f"field(s) {', '.join(lacking)}" if lacking else None

    return missing


def _pandalm(path: Path, fields: frozenset[str] | None) -> str | None:
    from core.ingest.pandalm import TESTSET

    if path.is_dir():
        return None if (path / TESTSET).exists() else TESTSET
    return None if path.name == TESTSET else f"a directory with {TESTSET} (or that file)"


def _arena_hard(path: Path, fields: frozenset[str] | None) -> str | None:
    """question.jsonl and model_answer/, or model_judgment/<judge>/*.jsonl alone (all Arena-Hard's show_result
    reads for its uncontrolled score)."""
    if not path.is_dir():
        return "a directory"
    judged = path / "model_judgment"
    if judged.is_dir() and any(f.is_file() for f in judged.glob("*/*.jsonl")):
        return None
    lacking = [n for n in ("question.jsonl", "model_answer") if not (path / n).exists()]
    return ", ".join(lacking) if lacking else None


def _fastchat_mtbench(path: Path, fields: frozenset[str] | None) -> str | None:
    """model_judgment/*_pair.jsonl or *_single.jsonl (all FastChat's show_result reads, so a directory of
    judgments alone is one), or question.jsonl and model_answer/ like Arena-Hard's with question turns that are
    plain strings (Arena-Hard's are {content} objects or a prompt)."""
    if not path.is_dir():
        return "a directory"
    judged = path / "model_judgment"
    if judged.is_dir() and (any(judged.glob("*_pair.jsonl")) or any(judged.glob("*_single.jsonl"))):
        return None
    lacking = [n for n in ("question.jsonl", "model_answer") if not (path / n).exists()]
    if lacking:
        return ", ".join(lacking)
    try:
        with (path / "question.jsonl").open(encoding="utf-8-sig", errors="replace") as f:
            first = next((line for line in f if line.strip()), "")
        turns = json.loads(first).get("turns") if first else None
    except (OSError, ValueError, AttributeError):
        turns = None
    if isinstance(turns, list) and turns and all(isinstance(t, str) for t in turns):
        return None
    return "model_judgment/*_pair.jsonl, or question turns given as plain strings"


def _mtbench_human(path: Path, fields: frozenset[str] | None) -> str | None:
    """model_a, model_b, winner, judge and turn, without an LMArena dump's tstamp / anony / language."""
    lacking = _table("question_id", "model_a", "model_b", "winner", "judge", "turn")(path, fields)
    if lacking is not None or fields is None:
        return lacking
    arena = sorted(fields & {"tstamp", "anony", "language"})
    return f"no LMArena field(s) (has {', '.join(arena)})" if arena else None


def _alpaca_eval(path: Path, fields: frozenset[str] | None) -> str | None:
    """AlpacaEval's annotations.json (or a directory holding it): output_1/2, generator_1/2, preference."""
    from core.ingest.alpaca_eval import ANNOTATIONS

    if path.is_dir():  # the file itself, or AlpacaEval's results/<model>/<annotator config>/ tree of them
        found = (path / ANNOTATIONS).is_file() or any(f.is_file() for f in path.rglob(ANNOTATIONS))
        return None if found else f"{ANNOTATIONS} (in it or in its folders)"
    if fields is None and path.name == ANNOTATIONS:
        return None  # the first record could not be cut out of the file; its name says what it is
    return _table("instruction", "output_1", "output_2", "generator_1", "generator_2", "preference")(path, fields)


def _lmarena(path: Path, fields: frozenset[str] | None) -> str | None:
    """model_a, model_b and a winner: one column, or the 55k release's one-hot columns."""
    from core.ingest.lmarena import ONE_HOT_WINNERS

    one_hot = fields is not None and all(c in fields for c in ONE_HOT_WINNERS)
    return _table("model_a", "model_b", *(() if one_hot else ("winner",)))(path, fields)


def _bundle(path: Path, fields: frozenset[str] | None) -> str | None:
    import zipfile

    if path.is_dir() or path.suffix.lower() != ".zip":
        return "a .zip file"
    try:
        with zipfile.ZipFile(path) as zf:
            return None if "manifest.json" in zf.namelist() else "manifest.json inside the zip"
    except (zipfile.BadZipFile, OSError):
        return "a readable zip file"


# In the order ``--format auto`` tries them: the most specific first (a softelo or contests file also has
# model_a / model_b-like fields; an Arena-Hard directory looks like a FastChat one without its judgments).
FORMATS: tuple[Format, ...] = (
    Format(
        "bundle",
        "core.ingest.bundle:read",
        _bundle,
        label="a bundle zip (export --bundle)",
        origin="a zip written by `python -m core export --bundle`: the dataset's tables, its leaderboards and a "
        "manifest with hashes and parameters",
    ),
    Format(
        "pandalm",
        "core.ingest.pandalm:read",
        _pandalm,
        label="PandaLM test set (directory or testset-v1.json)",
        origin="the PandaLM test set (github.com/WeOpenML/PandaLM, data/): battles with texts and three human "
        "labels each, and judge files <judge>-testset-v1.json beside it",
        adds_by="id",
    ),
    Format(
        "fastchat-mtbench",
        "core.ingest.fastchat:read",
        _fastchat_mtbench,
        label="FastChat MT-Bench directory",
        origin="a FastChat MT-Bench data directory (fastchat/llm_judge/data/mt_bench/): question.jsonl, "
        "model_answer/*.jsonl and model_judgment/<judge>_pair.jsonl[, <judge>_single.jsonl]",
        adds_by="pair",
    ),
    Format(
        "arena-hard",
        "core.ingest.arena_hard:read",
        _arena_hard,
        label="Arena-Hard directory",
        origin="an Arena-Hard-Auto data directory: question.jsonl and model_answer/*.jsonl, with the judges' "
        "games against the baseline from model_judgment/<judge>/*.jsonl when present",
        baselines=True,
        adds_by="pair",
    ),
    Format(
        "alpaca-eval",
        "core.ingest.alpaca_eval:read",
        _alpaca_eval,
        label="AlpacaEval annotations (annotations.json or its directory)",
        origin="AlpacaEval's annotations.json (results/<model>/<annotator>/ in github.com/tatsu-lab/alpaca_eval): "
        "instruction, output_1/2, generator_1/2, annotator, preference 1–2",
        annotators=True,
        adds_by="pair",
    ),
    Format(
        "softelo",
        "core.ingest.softelo:read",
        _table("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b"),
        label="SoftElo annotation CSV",
        origin="the Soft-Elo paper's annotation files: model_a, model_b, human_pref, judge_pref, scores_a, scores_b",
        one_file=True,
        adds_by="id",
    ),
    Format(
        "contests",
        "core.ingest.contests:read",
        _table("judge", "first", "second", "question_id", "winner"),
        label="judge contests CSV",
        origin="the consistency paper's judge_contests.csv: judge, first, second, question_id, winner",
        one_file=True,
        adds_by="id",
    ),
    Format(
        "arena-judgments",
        "core.ingest.arena_judgments:read",
        _table("question_id", "judge", "order", "winner"),
        label="judgments of a dataset's battles (Parquet)",
        origin="judge verdicts and rubric scores for battles already imported: question_id, judge, order "
        "(ab/ba), winner[, a_<criterion>, b_<criterion>]; needs --dataset",
        bulk="core.ingest.arena_judgments:bulk_plan",
        one_file=True,
    ),
    Format(
        "mtbench-human",
        "core.ingest.mtbench_human:read",
        _mtbench_human,
        label="MT-Bench human judgments (Parquet, CSV, JSONL)",
        origin="a split file of lmsys/mt_bench_human_judgments (human or gpt4_pair): question_id, model_a, "
        "model_b, winner, judge, conversation_a/b, turn",
        one_file=True,
        adds_by="pair",
    ),
    Format(
        "lmarena",
        "core.ingest.lmarena:read",
        _lmarena,
        label="LMArena battles (Parquet, CSV, JSONL)",
        origin="LMArena / Chatbot Arena battle dumps: model_a, model_b, winner[, judge, conversation_a/b, turn, "
        "language, tstamp]",
        bulk="core.ingest.lmarena:bulk_plan",
        one_file=True,
        adds_by="id",
    ),
)


def formats() -> dict[str, Format]:
    """Name → format, in detection order (read from :data:`FORMATS` at each call)."""
    return {f.name: f for f in FORMATS}


def names() -> list[str]:
    """Every registered format's name, in detection order."""
    return [f.name for f in FORMATS]
