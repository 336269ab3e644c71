"""Importers: files in, validated :class:`~core.domain.DatasetTables` out, one transaction.

One module per format (``softelo``, ``lmarena``, ``contests``, ``arena_hard``);
``core.methods.IMPORT_FORMATS`` is the registry that names each format's
reader.  Every reader validates the whole input before anything is written;
the first problem raises :class:`IngestError` naming the file, the row
(1-based data row; CSV line = row + 1) and the field.  Writing is one store
transaction, so a failure leaves the store unchanged.  Re-importing content
already imported (same SHA-256) changes nothing and says so.
"""

from __future__ import annotations

from pathlib import Path

from core.domain import DatasetTables
from core.ingest.common import ImportResult, IngestError, content_hash
from core.methods import IMPORT_FORMATS, resolve

__all__ = ["ImportResult", "IngestError", "content_hash", "load"]


def load(path: str | Path, fmt: str, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """Read and validate a file (or directory) of a registered format; nothing is written."""
    if fmt not in IMPORT_FORMATS:
        raise IngestError(path, f"unknown format {fmt!r}; expected one of {', '.join(IMPORT_FORMATS)}")
    tables: DatasetTables = resolve(IMPORT_FORMATS[fmt].reader)(path, dataset=dataset, judge=judge)
    return tables
