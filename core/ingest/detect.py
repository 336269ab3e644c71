"""``--format auto``: recognise a file's layout from its shape and field names, without reading its rows.

Each registered format (``core/ingest/formats.py``) states what it needs (a
directory with certain files, or a table with certain fields); the first one,
in the registry's order, whose needs a path meets is its format.  When none
matches, the error lists every layout tried and what the path lacked for it,
so the user sees which file they have and which field is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.ingest import formats
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


def _layouts() -> tuple[Layout, ...]:
    return tuple(Layout(f.name, f.recognise) for f in formats.FORMATS if f.recognise is not None)


def _one_layout(directory: Path) -> str | None:
    """The layout every table file of a directory has (MT-Bench's splits side by side); None when they differ."""
    from core.ingest.common import table_files

    found = set()
    for f in table_files(directory):
        try:
            found.add(detect(f))
        except IngestError:
            return None
    one_file = {f.name for f in formats.FORMATS if f.one_file}
    return found.pop() if len(found) == 1 and next(iter(found)) in one_file else None


ZIP_MAGIC = b"PK\x03\x04"


def damaged_zip(path: Path) -> None:
    """A file that starts as a zip but whose central directory cannot be read (a truncated download, a
    copy cut short) is said to be one, instead of matching no layout."""
    import zipfile

    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError:
        return
    if head != ZIP_MAGIC:
        return
    try:
        with zipfile.ZipFile(path) as zf:
            zf.namelist()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise IngestError(path, f"a damaged or truncated zip file ({exc}): copy or download it again") from None


def detect(path: str | Path) -> str:
    """The registered format of ``path``; an :class:`IngestError` listing each layout tried and what it lacked."""
    path = Path(path)
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if not path.is_dir():
        damaged_zip(path)
    fields = None if path.is_dir() else _fields(path)
    tried = []
    for layout in _layouts():
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
