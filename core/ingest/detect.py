"""``--format auto``: recognise a file's layout from its shape and field names, without reading its rows.

Each registered layout states what it needs (a directory with certain files,
or a table with certain fields); the first one whose needs a path meets is
its format.  When none matches, the error lists every layout tried and what
the path lacked for it, so the user sees which file they have and which
field is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.ingest.common import IngestError, quote

AUTO = "auto"


@dataclass(frozen=True)
class Layout:
    """A format and the test a path must pass for it: None when it matches, else what is missing."""

    fmt: str
    missing: Callable[[Path, frozenset[str] | None], str | None]


def _fields(path: Path) -> frozenset[str] | None:
    """The field names of a table file (Parquet schema, CSV header, first JSON record); None if unreadable."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return frozenset(str(n).strip() for n in pq.read_schema(path).names)
        if suffix in (".csv", ".tsv"):
            with path.open(encoding="utf-8-sig", errors="replace") as f:
                header = f.readline()
            sep = "\t" if suffix == ".tsv" else ","
            return frozenset(c.strip().strip('"') for c in header.rstrip("\r\n").split(sep))
        if suffix in (".jsonl", ".ndjson"):
            with path.open(encoding="utf-8-sig", errors="replace") as f:
                for line in f:
                    if line.strip():
                        rec = json.loads(line)
                        return frozenset(rec) if isinstance(rec, dict) else None
            return None
        if suffix == ".json":
            with path.open(encoding="utf-8-sig", errors="replace") as f:
                head = f.read(1 << 20)
            start = head.find("{")
            if start < 0:
                return None
            depth, end = 0, -1
            for k, ch in enumerate(head[start:], start):  # the first object, without parsing the whole file
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    end = k
                    break
            rec = json.loads(head[start : end + 1]) if end > 0 else None
            return frozenset(rec) if isinstance(rec, dict) else None
    except (OSError, ValueError, UnicodeError):
        return None
    except Exception:  # a corrupt Parquet footer raises several pyarrow types
        return None
    return None


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
    if not path.is_dir():
        return "a directory"
    lacking = [n for n in ("question.jsonl", "model_answer") if not (path / n).exists()]
    return ", ".join(lacking) if lacking else None


def _fastchat_mtbench(path: Path, fields: frozenset[str] | None) -> str | None:
    """question.jsonl and model_answer/ like Arena-Hard, told apart by model_judgment/*_pair.jsonl or
    *_single.jsonl, or by question turns that are plain strings (Arena-Hard's are {content} objects or a prompt)."""
    if not path.is_dir():
        return "a directory"
    lacking = [n for n in ("question.jsonl", "model_answer") if not (path / n).exists()]
    if lacking:
        return ", ".join(lacking)
    judged = path / "model_judgment"
    if judged.is_dir() and (any(judged.glob("*_pair.jsonl")) or any(judged.glob("*_single.jsonl"))):
        return None
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


# Most specific first: a softelo or contests file also has model_a / model_b-like fields.
def _bundle(path: Path, fields: frozenset[str] | None) -> str | None:
    import zipfile

    if path.is_dir() or path.suffix.lower() != ".zip":
        return "a .zip file"
    try:
        with zipfile.ZipFile(path) as zf:
            return None if "manifest.json" in zf.namelist() else "manifest.json inside the zip"
    except (zipfile.BadZipFile, OSError):
        return "a readable zip file"


LAYOUTS = (
    Layout("bundle", _bundle),
    Layout("pandalm", _pandalm),
    Layout("fastchat-mtbench", _fastchat_mtbench),
    Layout("arena-hard", _arena_hard),
    Layout("alpaca-eval", _alpaca_eval),
    Layout("softelo", _table("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b")),
    Layout("contests", _table("judge", "first", "second", "question_id", "winner")),
    Layout("arena-judgments", _table("question_id", "judge", "order", "winner")),
    Layout("mtbench-human", _mtbench_human),
    Layout("lmarena", _lmarena),
)


def _one_layout(directory: Path) -> str | None:
    """The layout every table file of a directory has (MT-Bench's splits side by side); None when they differ."""
    from core.ingest import FILE_FORMATS
    from core.ingest.common import table_files

    found = set()
    for f in table_files(directory):
        try:
            found.add(detect(f))
        except IngestError:
            return None
    return found.pop() if len(found) == 1 and next(iter(found)) in FILE_FORMATS else None


def detect(path: str | Path) -> str:
    """The registered format of ``path``; an :class:`IngestError` listing each layout tried and what it lacked."""
    path = Path(path)
    if not path.exists():
        raise IngestError(path, "file does not exist")
    fields = None if path.is_dir() else _fields(path)
    tried = []
    for layout in LAYOUTS:
        lacking = layout.missing(path, fields)
        if lacking is None:
            return layout.fmt
        tried.append(f"{layout.fmt} (needs {lacking})")
    if path.is_dir():
        one = _one_layout(path)
        if one is not None:
            return one
    found = "" if fields is None else f"; its fields are {quote(sorted(fields))}"
    raise IngestError(path, f"no known layout matches{found}. Tried: {'; '.join(tried)}. Pass --format to choose")
