"""What every importer shares: the error type, file readers, validation helpers, model families."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import CRITERIA
from core.text import style_counts

SCORE_RANGE = (0.0, 10.0)


class IngestError(ValueError):
    """Invalid input; the message names file, row and field."""

    def __init__(self, path: str | Path, message: str, row: int | None = None, field: str | None = None):
        self.path, self.row, self.field = str(path), row, field
        where = [f"{self.path}"]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}. Nothing was imported.")


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    status: str  # 'imported' or 'already-imported'
    n_battles: int
    n_votes: int
    n_judgments: int
    n_completions: int


def content_hash(path: str | Path) -> str:
    """SHA-256 of a file, or of a directory's files (relative paths + bytes)."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            h.update(str(f.relative_to(p)).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def read_text(path: Path) -> str:
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if path.is_dir():
        raise IngestError(path, "expected a file, got a directory")
    data = path.read_bytes()
    if not data.strip():
        raise IngestError(path, "the file is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(path, f"not valid UTF-8 (byte {exc.start}, line {line})", field=None) from None


def read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    text = read_text(path)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[])
    except pd.errors.ParserError as exc:
        raise IngestError(path, f"malformed CSV ({exc})") from None
    except pd.errors.EmptyDataError:
        raise IngestError(path, "the file has no header") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise IngestError(path, f"missing required column(s) {missing}; found {list(df.columns)}", field=missing[0])
    if df.empty:
        raise IngestError(path, "the file has a header but no rows")
    return df


def require_names(path: Path, df: pd.DataFrame, cols: tuple[str, ...]) -> None:
    for col in cols:
        values = df[col].astype(str).str.strip()
        bad = np.flatnonzero((values == "") | df[col].isna().to_numpy())
        if len(bad):
            raise IngestError(path, "empty model name", row=int(bad[0]) + 1, field=col)
        df[col] = values


def float_column(path: Path, df: pd.DataFrame, col: str, lo: float, hi: float) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < lo) | (values > hi))
    if len(bad):
        r = int(bad[0])
        raise IngestError(path, f"expected a number in [{lo}, {hi}], got {df[col].iloc[r]!r}", row=r + 1, field=col)
    return values


def parse_scores(path: Path, raw: str, row: int, field: str) -> dict[str, float]:
    text = str(raw).strip()
    if not text:
        raise IngestError(path, "empty score dictionary", row=row, field=field)
    obj: Any
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        try:
            obj = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise IngestError(path, f"unparseable score dictionary {text[:60]!r}", row=row, field=field) from None
    if not isinstance(obj, dict) or not obj:
        raise IngestError(path, f"expected a dictionary of criterion scores, got {text[:60]!r}", row=row, field=field)
    out = {}
    for k, v in obj.items():
        key = str(k).strip().lower()
        if key not in CRITERIA:
            raise IngestError(path, f"unknown criterion {k!r} (expected {', '.join(CRITERIA)})", row=row, field=field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise IngestError(path, f"criterion {key!r} has non-numeric score {v!r}", row=row, field=field)
        if not SCORE_RANGE[0] <= v <= SCORE_RANGE[1]:
            raise IngestError(path, f"criterion {key!r} score {v} outside {SCORE_RANGE}", row=row, field=field)
        out[key] = float(v)
    return out


def models_frame(names: Iterable[str]) -> pd.DataFrame:
    names = sorted(set(names))
    return pd.DataFrame({"model": names, "family": [guess_family(n) for n in names]})


def guess_family(name: str) -> str:
    """Provider family from a model name (used for self-preference); 'other' if unknown."""
    n = name.lower()
    for key, fam in (
        ("gpt", "openai"),
        ("chatgpt", "openai"),
        ("o1", "openai"),
        ("claude", "anthropic"),
        ("gemini", "google"),
        ("gemma", "google"),
        ("palm", "google"),
        ("llama", "meta"),
        ("mistral", "mistral"),
        ("mixtral", "mistral"),
        ("qwen", "qwen"),
        ("phi", "microsoft"),
        ("yi-", "01-ai"),
        ("deepseek", "deepseek"),
        ("command", "cohere"),
        ("vicuna", "lmsys"),
        ("rwkv", "rwkv"),
        ("glm", "zhipu"),
        ("athene", "nexusflow"),
        ("reka", "reka"),
        ("grok", "xai"),
        ("nemotron", "nvidia"),
        ("jamba", "ai21"),
        ("wizard", "microsoft"),
        ("alpaca", "stanford"),
        ("koala", "berkeley"),
        ("dolly", "databricks"),
        ("dbrx", "databricks"),
        ("starling", "nexusflow"),
        ("openchat", "openchat"),
        ("zephyr", "huggingface"),
        ("tulu", "allenai"),
        ("olmo", "allenai"),
        ("falcon", "tii"),
        ("mpt", "mosaic"),
        ("stablelm", "stability"),
        ("chatglm", "zhipu"),
        ("guanaco", "uw"),
        ("oasst", "laion"),
        ("fastchat", "lmsys"),
        ("solar", "upstage"),
    ):
        if key in n:
            return fam
    return "other"


def read_table_file(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        if path.stat().st_size == 0:
            raise IngestError(path, "the file is empty")
        try:
            return pq.read_table(path).to_pandas()
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise IngestError(path, f"unreadable Parquet file ({type(exc).__name__}: {str(exc)[:120]})") from None
    if suffix in (".jsonl", ".ndjson", ".json"):
        return pd.DataFrame(read_jsonl(path))
    if suffix in (".csv", ".tsv"):
        text = read_text(path)
        try:
            return pd.read_csv(
                io.StringIO(text), sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False
            )
        except pd.errors.ParserError as exc:
            raise IngestError(path, f"malformed CSV ({exc})") from None
    raise IngestError(path, f"unknown file type {suffix!r}: expected .parquet, .csv or .jsonl")


def read_jsonl(path: Path) -> list[dict]:
    text = read_text(path)
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(path, f"invalid JSON ({exc.msg})", row=i) from None
        if not isinstance(obj, dict):
            raise IngestError(path, "each line must be a JSON object", row=i)
        out.append(obj)
    if not out:
        raise IngestError(path, "the file has no records")
    return out


def with_style(comp: pd.DataFrame) -> pd.DataFrame:
    counts = [style_counts(t) for t in comp["text"].tolist()]
    comp = comp.copy()
    comp["length"] = [c.length if c else None for c in counts]
    comp["n_headers"] = [c.n_headers if c else None for c in counts]
    comp["n_bold"] = [c.n_bold if c else None for c in counts]
    comp["n_list_items"] = [c.n_list_items if c else None for c in counts]
    return comp
