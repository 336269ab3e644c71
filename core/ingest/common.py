"""What every importer shares: the error type, file readers, validation helpers, model families."""

from __future__ import annotations

import ast
import csv
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
from core.text import detect_echo, json_lines, style_counts

SCORE_RANGE = (0.0, 10.0)
MAX_TEXT_CHARS = 1_000_000  # a prompt or answer longer than this is refused (no real answer comes close)
MAX_NESTING = 32  # JSON nested deeper than this is refused (conversations and scores are 2–4 levels)
MAX_QUOTE = 200  # characters of an offending value an error message quotes
INT32_MAX = 2**31 - 1
TSTAMP_RANGE = (0.0, 4102444800.0)  # Unix seconds from 1970 to 2100


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


def quote(value: Any) -> str:
    """A value as an error message shows it: its repr, cut to ``MAX_QUOTE`` characters."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    if len(text) <= MAX_QUOTE:
        return text
    return f"{text[:MAX_QUOTE]}… ({len(text):,} characters)"


def is_missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def text_value(path: Path, value: Any, row: int, field: str, required: bool = False) -> str | None:
    """A scalar text (a string, or a number for ids), at most ``MAX_TEXT_CHARS`` long; None when missing."""
    if is_missing(value) or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise IngestError(path, "missing value", row=row, field=field)
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float, np.integer, np.floating)):
        raise IngestError(path, f"expected text, got {type(value).__name__} {quote(value)}", row=row, field=field)
    text = str(value)
    if len(text) > MAX_TEXT_CHARS:
        raise IngestError(
            path, f"text of {len(text):,} characters exceeds the limit of {MAX_TEXT_CHARS:,}", row=row, field=field
        )
    if required and not text.strip():
        raise IngestError(path, "empty value", row=row, field=field)
    return text


def text_column(path: Path, df: pd.DataFrame, col: str, required: bool = False) -> list[str | None]:
    """Every value of a column as scalar text (see :func:`text_value`)."""
    if col not in df.columns:
        return [None] * len(df)
    return [text_value(path, v, i + 1, col, required) for i, v in enumerate(df[col].tolist())]


def int_column(path: Path, df: pd.DataFrame, col: str, lo: int, hi: int) -> list[int | None]:
    """Whole numbers in [lo, hi] (booleans, fractions and out-of-range values refused); None when missing."""
    if col not in df.columns:
        return [None] * len(df)
    out: list[int | None] = []
    for i, v in enumerate(df[col].tolist()):
        if is_missing(v) or (isinstance(v, str) and not v.strip()):
            out.append(None)
            continue
        number: float | int | None = None
        if isinstance(v, (bool, np.bool_)):
            number = None
        elif (
            isinstance(v, (int, np.integer))
            or isinstance(v, (float, np.floating))
            and math.isfinite(v)
            and float(v).is_integer()
        ):
            number = int(v)
        elif isinstance(v, str):
            try:
                number = int(v.strip())
            except ValueError:
                number = None
        if number is None or not lo <= number <= hi:
            raise IngestError(path, f"expected a whole number in [{lo}, {hi:,}], got {quote(v)}", row=i + 1, field=col)
        out.append(int(number))
    return out


def float_values(
    path: Path, df: pd.DataFrame, col: str, lo: float, hi: float, required: bool = False
) -> list[float | None]:
    """Finite numbers in [lo, hi]; None when missing (an error when ``required``)."""
    if col not in df.columns:
        return [None] * len(df)
    out: list[float | None] = []
    for i, v in enumerate(df[col].tolist()):
        if is_missing(v) or (isinstance(v, str) and not v.strip()):
            if required:
                raise IngestError(path, "missing value", row=i + 1, field=col)
            out.append(None)
            continue
        x: float | None = None
        if not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, str, np.integer, np.floating)):
            try:
                x = float(v)
            except (ValueError, OverflowError):
                x = None
        if x is None or not math.isfinite(x) or not lo <= x <= hi:
            raise IngestError(path, f"expected a number in [{lo:g}, {hi:g}], got {quote(v)}", row=i + 1, field=col)
        out.append(x)
    return out


def depth_ok(obj: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``obj`` nests lists and dicts at most ``limit`` deep (iteratively: no recursion to blow)."""
    stack = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, (list, tuple, np.ndarray)):
            stack.extend((v, depth + 1) for v in node)
    return True


def load_json(path: Path, text: str, row: int, field: str | None = None) -> Any:
    """``json.loads`` with the failures a corrupted file produces turned into named errors."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(path, f"invalid JSON ({exc.msg})", row=row, field=field) from None
    except RecursionError:
        raise IngestError(path, f"JSON nested deeper than {MAX_NESTING} levels", row=row, field=field) from None
    if not depth_ok(obj):
        raise IngestError(path, f"JSON nested deeper than {MAX_NESTING} levels", row=row, field=field)
    return obj


def message_text(path: Path, content: Any, row: int, field: str) -> str | None:
    """The text of one message's ``content``: a string; ``{answer, thought}`` (the answer); or a list of
    parts ``{type, text, …}`` (the text parts joined).  Anything else is an error naming row and field."""
    if is_missing(content):
        return None
    if isinstance(content, str):
        return text_value(path, content, row, field)
    if isinstance(content, dict):
        return message_text(path, content.get("answer", content.get("text")), row, field)
    if isinstance(content, (list, tuple, np.ndarray)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and (part.get("type") in (None, "text")):
                if part.get("text") is not None:
                    texts.append(text_value(path, part.get("text"), row, field) or "")
            elif not (isinstance(part, dict) and part.get("type") in ("image", "image_url", "file")):
                raise IngestError(
                    path, f"a message part is neither text nor an image: {quote(part)}", row=row, field=field
                )
        return text_value(path, "\n".join(texts), row, field) if texts else None
    raise IngestError(path, f"message content is {type(content).__name__} {quote(content)}", row=row, field=field)


def conversation(path: Path, value: Any, row: int, field: str) -> list[tuple[str, str | None]]:
    """A conversation as (role, text) pairs: a list (or JSON text) of ``{role, content}`` messages."""
    if is_missing(value):
        return []
    if isinstance(value, str):
        if not value.strip():
            return []
        if len(value) > MAX_TEXT_CHARS * 4:
            raise IngestError(path, f"conversation of {len(value):,} characters", row=row, field=field)
        value = load_json(path, value, row, field)
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise IngestError(
            path, f"expected a list of {{role, content}} messages, got {quote(value)}", row=row, field=field
        )
    if not depth_ok(value):
        raise IngestError(path, f"conversation nested deeper than {MAX_NESTING} levels", row=row, field=field)
    out: list[tuple[str, str | None]] = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise IngestError(
                path, f"a message is not a {{role, content}} object: {quote(message)}", row=row, field=field
            )
        if "content" not in message:  # a misspelt key would otherwise drop the message's text unnoticed
            raise IngestError(path, f"message has no 'content': {quote(message)}", row=row, field=field)
        out.append((message["role"], message_text(path, message["content"], row, field)))
    return out


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    status: str  # 'imported', 'added' (to a dataset that existed) or 'already-imported'
    n_battles: int
    n_votes: int
    n_judgments: int
    n_completions: int
    n_grades: int = 0  # single-answer grades (FastChat's MT-Bench scores)
    # What the reader decided and the user should know (a duplicate file skipped, a file scored against its
    # own baseline outputs, an empty judgment file): the reader's ``meta["notes"]``.
    notes: tuple[str, ...] = ()


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


def read_csv(path: Path, required: tuple[str, ...], *, sep: str = ",", allow_empty: bool = False) -> pd.DataFrame:
    """A CSV (or, with ``sep="\\t"``, TSV) file as text columns (nothing read as missing), names stripped.

    A file cut short is refused naming its last row: one that ends inside a quoted field, or that does not end
    with a newline and whose last row has fewer fields than the header (a cut row is never a short battle).
    """
    text = read_text(path)
    broken: pd.errors.ParserError | None = None
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_values=[])
    except pd.errors.ParserError as exc:
        broken = exc
    except pd.errors.EmptyDataError:
        raise IngestError(path, "the file has no header") from None
    open_quote = broken is not None and "EOF inside string" in str(broken)
    if open_quote or (broken is None and not text.endswith(("\n", "\r"))):
        # the records as Python's csv module splits them (as pandas does; blank lines skipped): an open quote
        # runs to the end of the file, so the last record is the cut one
        records = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep) if r]
        header = [c.strip() for c in records[0]]
        last = records[-1]
        if open_quote and len(records) > 1:
            raise IngestError(
                path,
                "a quoted field is still open at the end of the file: the last row is cut short",
                row=len(records) - 1,
                field=header[min(len(last), len(header)) - 1],
            )
        if len(records) > 1 and len(last) < len(header):
            raise IngestError(
                path,
                f"the last row has {len(last)} of the header's {len(header)} fields and the file does not end "
                "with a newline: it is cut short",
                row=len(records) - 1,
                field=header[len(last)],
            )
    if broken is not None:
        raise IngestError(path, f"malformed CSV ({broken})") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise IngestError(path, f"missing required column(s) {missing}; found {list(df.columns)}", field=missing[0])
    if df.empty and not allow_empty:
        raise IngestError(path, "the file has a header but no rows")
    return df


def require_names(path: Path, df: pd.DataFrame, cols: tuple[str, ...]) -> None:
    """Model (or judge) names: non-empty scalar text of at most 200 characters, stripped in place."""
    for col in cols:
        names = []
        for i, v in enumerate(df[col].tolist()):
            text = text_value(path, v, i + 1, col)
            if text is None or not text.strip():
                raise IngestError(path, "empty model name", row=i + 1, field=col)
            if len(text) > MAX_QUOTE:
                raise IngestError(
                    path, f"a name of {len(text):,} characters (at most {MAX_QUOTE})", row=i + 1, field=col
                )
            names.append(text.strip())
        df[col] = names


def float_column(path: Path, df: pd.DataFrame, col: str, lo: float, hi: float) -> np.ndarray:
    """A required numeric column, every value finite in [lo, hi]."""
    return np.array(float_values(path, df, col, lo, hi, required=True), dtype=float)


def parse_scores(path: Path, raw: str, row: int, field: str) -> dict[str, float]:
    text = str(raw).strip()
    if not text:
        raise IngestError(path, "empty score dictionary", row=row, field=field)
    if len(text) > 10_000:  # six criteria fit in a few hundred characters
        raise IngestError(path, f"score dictionary of {len(text):,} characters", row=row, field=field)
    obj: Any
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        try:
            obj = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            raise IngestError(path, f"unparseable score dictionary {quote(text)}", row=row, field=field) from None
    if not isinstance(obj, dict) or not obj:
        raise IngestError(path, f"expected a dictionary of criterion scores, got {quote(text)}", row=row, field=field)
    out = {}
    for k, v in obj.items():
        key = str(k).strip().lower()
        if key not in CRITERIA:
            raise IngestError(
                path, f"unknown criterion {quote(k)} (expected {', '.join(CRITERIA)})", row=row, field=field
            )
        number = None
        if not isinstance(v, bool) and isinstance(v, (int, float)):
            try:
                number = float(v)
            except OverflowError:
                number = None
        if number is None or not math.isfinite(number):
            raise IngestError(path, f"criterion {key!r} has non-numeric score {quote(v)}", row=row, field=field)
        if not SCORE_RANGE[0] <= number <= SCORE_RANGE[1]:
            raise IngestError(path, f"criterion {key!r} score {quote(v)} outside {SCORE_RANGE}", row=row, field=field)
        out[key] = number
    return out


def models_frame(names: Iterable[str]) -> pd.DataFrame:
    names = sorted(set(names))
    return pd.DataFrame({"model": names, "family": [known_family(n) for n in names]})


# Organisation by the prefix a model or judge name starts with (after an "org/" part, case-insensitive).  The
# prefix must end the name or be followed by a digit or a separator, so that "phind" is not "phi" and the "gpt" in
# "cerebras-gpt" or "gpt-j" is not OpenAI's.  Longer prefixes are tried first.  A name no prefix matches has no
# organisation: it is left blank rather than guessed (self-preference then treats it as unknown).
KNOWN_PREFIXES: dict[str, str] = {
    "gpt-j": "eleutherai",
    "gpt-neo": "eleutherai",
    "pythia": "eleutherai",
    "gpt": "openai",
    "chatgpt": "openai",
    "text-davinci": "openai",
    "davinci": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "claude": "anthropic",
    "gemini": "google",
    "gemma": "google",
    "palm": "google",
    "bard": "google",
    "flan-t5": "google",
    "llama-3.1-nemotron": "nvidia",
    "nemotron": "nvidia",
    "llama": "meta",
    "meta-llama": "meta",
    "opt": "meta",
    "mistral": "mistral",
    "mixtral": "mistral",
    "ministral": "mistral",
    "codestral": "mistral",
    "qwen": "qwen",
    "phi": "microsoft",
    "wizardlm": "microsoft",
    "yi": "01-ai",
    "deepseek": "deepseek",
    "command": "cohere",
    "c4ai-aya": "cohere",
    "vicuna": "lmsys",
    "fastchat": "lmsys",
    "rwkv": "rwkv",
    "glm": "zhipu",
    "chatglm": "zhipu",
    "athene": "nexusflow",
    "starling": "nexusflow",
    "reka": "reka",
    "grok": "xai",
    "jamba": "ai21",
    "alpaca": "stanford",
    "koala": "berkeley",
    "dolly": "databricks",
    "dbrx": "databricks",
    "openchat": "openchat",
    "zephyr": "huggingface",
    "tulu": "allenai",
    "olmo": "allenai",
    "falcon": "tii",
    "mpt": "mosaic",
    "stablelm": "stability",
    "guanaco": "uw",
    "oasst": "laion",
    "solar": "upstage",
    "cerebras-gpt": "cerebras",
    "bloom": "bigscience",
}
_PREFIX_ORDER = sorted(KNOWN_PREFIXES, key=len, reverse=True)


def known_family(name: str) -> str | None:
    """The organisation behind a model or judge name by :data:`KNOWN_PREFIXES`; None when no prefix matches."""
    n = name.strip().lower().rsplit("/", 1)[-1]
    for prefix in _PREFIX_ORDER:
        if n.startswith(prefix):
            rest = n[len(prefix) :]
            if not rest or not rest[0].isalpha():
                return KNOWN_PREFIXES[prefix]
    return None


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
        return read_csv(path, (), sep="\t" if suffix == ".tsv" else ",", allow_empty=True)
    raise IngestError(path, f"unknown file type {suffix!r}: expected .parquet, .csv or .jsonl")


TABLE_SUFFIXES = (".parquet", ".csv", ".tsv", ".jsonl", ".ndjson", ".json")


def table_files(directory: Path) -> list[Path]:
    """The table files directly in a directory (hidden files left out), by name."""
    return sorted(
        f
        for f in directory.iterdir()
        if f.is_file() and f.suffix.lower() in TABLE_SUFFIXES and not f.name.startswith(".")
    )


def read_jsonl_lines(path: Path) -> list[tuple[int, dict]]:
    """The records of a JSON Lines file with their line numbers (blank lines skipped), for errors that name them."""
    text = read_text(path)
    out = []
    for i, line in json_lines(text):
        if not line.strip():
            continue
        obj = load_json(path, line, i)
        if not isinstance(obj, dict):
            raise IngestError(path, "each line must be a JSON object", row=i)
        out.append((i, obj))
    if not out:
        raise IngestError(path, "the file has no records")
    return out


def read_jsonl(path: Path) -> list[dict]:
    return [obj for _, obj in read_jsonl_lines(path)]


def with_style(comp: pd.DataFrame) -> pd.DataFrame:
    counts = [style_counts(t) if isinstance(t, str) else None for t in comp["text"].tolist()]
    comp = comp.copy()
    comp["length"] = [c.length if c else None for c in counts]
    comp["n_headers"] = [c.n_headers if c else None for c in counts]
    comp["n_bold"] = [c.n_bold if c else None for c in counts]
    comp["n_list_items"] = [c.n_list_items if c else None for c in counts]
    # Echo (an answer that repeats itself or writes new question–answer pairs after its final answer) is read
    # from the text, so every dataset with answer texts gets the Judge bias page's echo section, not only the
    # simulated one; a source's own flag wins.
    found = [detect_echo(t).is_echo if isinstance(t, str) and t else None for t in comp["text"].tolist()]
    given = comp["echo"] if "echo" in comp else pd.Series([None] * len(comp), index=comp.index, dtype=object)
    comp["echo"] = [g if g is not None and not pd.isna(g) else f for g, f in zip(given.tolist(), found, strict=True)]
    return comp
