"""Importers: files in, validated :class:`~core.domain.DatasetTables` out, one transaction.

One module per format (``softelo``, ``lmarena``, ``contests``, ``arena_hard``);
``core.ingest.formats.FORMATS`` is the registry that names each format's
reader and how ``--format auto`` recognises it.  Every reader validates the whole input before anything is written;
the first problem raises :class:`IngestError` naming the file, the row
(1-based data row; CSV line = row + 1) and the field.  Writing is one store
transaction, so a failure leaves the store unchanged.  Re-importing content
already imported (same SHA-256) changes nothing and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.domain import DatasetTables
from core.ingest import formats
from core.ingest.common import TABLE_SUFFIXES, ImportResult, IngestError, content_hash, quote, table_files
from core.methods import resolve

__all__ = ["ImportResult", "IngestError", "ReaderBug", "bulk_plan", "content_hash", "load"]

# What only a reader's own code raises, whatever the file holds: a bug to report, not a file to fix.  Every
# other exception may come from data the reader did not foresee (a list where a mapping was expected raises
# AttributeError, a null TypeError) and is said to be the file's, with the reader's words.
_READER_BUGS = (NameError, ImportError, AssertionError, NotImplementedError, SyntaxError)


class ReaderBug(RuntimeError):
    """A reader failed on its own code, not on the file: the traceback (chained) says where."""


def _format(path: str | Path, fmt: str) -> formats.Format:
    """The registered format named ``fmt``, else an :class:`IngestError` listing the known ones."""
    found = formats.formats().get(fmt)
    if found is None:
        raise IngestError(path, f"unknown format {fmt!r}; expected one of {', '.join(formats.names())}")
    return found


def load(
    path: str | Path,
    fmt: str,
    dataset: str | None = None,
    judge: str | None = None,
    annotator: str | None = None,
    baseline: str | None = None,
) -> DatasetTables:
    """Read and validate a file (or directory) of a registered format; nothing is written.

    Every reader validates types and ranges itself and names the row and
    field; an error it did not foresee still comes back as an
    :class:`IngestError` (never a traceback), naming the file.  ``annotator``
    chooses one annotator configuration of an AlpacaEval ``results/`` tree; ``baseline`` names the model an
    Arena-Hard directory's judgments are against when its records do not.
    """
    entry = _format(path, fmt)
    reader = resolve(entry.reader)
    extra: dict[str, Any] = {}
    if annotator is not None:
        if not entry.annotators:
            takes = ", ".join(f.name for f in formats.FORMATS if f.annotators)
            raise IngestError(path, f"--annotator applies to {takes}, not {fmt}")
        extra["annotator"] = annotator
    if baseline is not None:
        if not entry.baselines:
            takes = ", ".join(f.name for f in formats.FORMATS if f.baselines)
            raise IngestError(path, f"--baseline applies to {takes}, not {fmt}")
        extra["baseline"] = baseline
    if Path(path).is_dir() and entry.one_file:
        return _load_files(Path(path), fmt, dataset, judge)
    try:
        tables: DatasetTables = reader(path, dataset=dataset, judge=judge, **extra)
    except IngestError:
        raise
    except RecursionError:
        raise IngestError(path, "the data is nested too deeply to read") from None
    except _READER_BUGS as exc:
        raise ReaderBug(
            f"the {fmt} reader failed on {path} with {type(exc).__name__}: this is a bug in the reader, not a "
            "problem of the file (nothing was imported); the traceback above says where"
        ) from exc
    except Exception as exc:
        raise IngestError(path, f"could not be read as {fmt} ({type(exc).__name__}: {quote(str(exc))})") from None
    return tables


def _load_files(root: Path, fmt: str, dataset: str | None, judge: str | None) -> DatasetTables:
    """A directory of one file layout's files (MT-Bench's ``human`` and ``gpt4_pair`` splits) as one dataset."""
    from core.ingest.merge import combine

    files = table_files(root)
    if not files:
        raise IngestError(root, f"no table files ({', '.join(TABLE_SUFFIXES)}) in this directory")
    return combine([(f, load(f, fmt, dataset=dataset or root.name, judge=judge)) for f in files])


def bulk_plan(path: str | Path, fmt: str, dataset: str | None = None, judge: str | None = None) -> Any:
    """The format's SQL-validated bulk plan for ``path``, or None when its reader must read the file.

    Errors are the reader's: an ``IngestError`` naming file, row and field.
    """
    bulk = _format(path, fmt).bulk
    if bulk is None:
        return None
    try:
        return resolve(bulk)(path, dataset=dataset, judge=judge)
    except IngestError:
        raise
    except Exception as exc:
        raise IngestError(path, f"could not be read as {fmt} ({type(exc).__name__}: {quote(str(exc))})") from None
