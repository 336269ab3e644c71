"""A bundle written by ``python -m core export --bundle`` (see :mod:`core.app.bundle`).

Every file is checked against the manifest's SHA-256 before anything is read, then each table's
fields and values are checked as any importer checks them; the dataset is written as it was stored
(same keys, same row order), so its leaderboards come out the same.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import HUMAN_WINNERS, ORDERS, SCORE_COLUMNS, TABLE_SPEC, VERDICTS, DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    MAX_TEXT_CHARS,
    SCORE_RANGE,
    TSTAMP_RANGE,
    IngestError,
    is_missing,
    load_json,
    quote,
    text_value,
)
from core.ingest.lmarena import second_vote

FORMAT = "arena-leaderboard-bundle"
VERSION = 1
MAX_MEMBER_BYTES = 4 << 30  # a member larger than this is refused before it is inflated


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    from core.ingest.detect import damaged_zip

    damaged_zip(path)
    if not zipfile.is_zipfile(path):
        raise IngestError(path, "not a zip file (a bundle is the .zip that `export --bundle` writes)")
    with zipfile.ZipFile(path) as zf:
        manifest = _manifest(path, zf)
        files = manifest["files"]
        frames: dict[str, pd.DataFrame] = {}
        for member, entry in files.items():
            if not member.startswith("tables/"):
                continue
            data = _member(path, zf, member, entry)
            table = member.removeprefix("tables/").removesuffix(".parquet")
            if table not in TABLE_SPEC:
                raise IngestError(path, f"unknown table {quote(table)}", field=member)
            try:
                frames[table] = pd.read_parquet(io.BytesIO(data))
            except Exception as exc:
                raise IngestError(path, f"unreadable Parquet ({type(exc).__name__})", field=member) from None
            if "rows" in entry and entry["rows"] != len(frames[table]):
                raise IngestError(
                    path, f"{len(frames[table])} rows where the manifest says {entry['rows']}", field=member
                )
        for member, entry in files.items():  # the leaderboards and configurations are checked, not read
            if not member.startswith("tables/"):
                _member(path, zf, member, entry)
    for table in ("models", "battles"):
        if table not in frames:
            raise IngestError(path, f"the bundle has no tables/{table}.parquet", field="files")
    for table, df in frames.items():
        _check_table(path, table, df)
    _check_links(path, frames)
    ds = manifest["dataset"]
    meta = dict(ds.get("meta") or {})
    # the notes of the import that made the dataset stay with it, but are not this import's news
    if "notes" in meta:
        meta["original_import_notes"] = meta.pop("notes")
    return DatasetTables(
        name=dataset or str(ds["name"]),
        source=str(ds.get("source") or "bundle"),
        meta={**meta, "bundle": {"file": path.name, "code_version": manifest.get("code_version")}},
        **frames,
    )


def _manifest(path: Path, zf: zipfile.ZipFile) -> dict:
    try:
        raw = zf.read("manifest.json")
    except KeyError:
        raise IngestError(path, "no manifest.json in the zip", field="manifest.json") from None
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError):
        raise IngestError(path, "manifest.json is not valid JSON", field="manifest.json") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else manifest
        raise IngestError(path, f"not a bundle of {FORMAT!r} (format {quote(got)})", field="manifest.json:format")
    if manifest.get("bundle_version") != VERSION:
        raise IngestError(
            path,
            f"bundle version {quote(manifest.get('bundle_version'))}; this version reads {VERSION}",
            field="manifest.json:bundle_version",
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise IngestError(path, "the manifest lists no files", field="manifest.json:files")
    ds = manifest.get("dataset")
    if not isinstance(ds, dict) or not isinstance(ds.get("name"), str) or not ds["name"].strip():
        raise IngestError(path, "the manifest names no dataset", field="manifest.json:dataset")
    if "meta" in ds and ds["meta"] is not None and not isinstance(ds["meta"], dict):
        raise IngestError(path, f"expected an object, got {quote(ds['meta'])}", field="manifest.json:dataset.meta")
    # what the import's leaderboard check reads (core.app.bundle.check_leaderboards): its α and judges
    params = manifest.get("parameters", {})
    if not isinstance(params, dict):
        raise IngestError(path, f"expected an object, got {quote(params)}", field="manifest.json:parameters")
    alpha = params.get("alpha", 0.1)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise IngestError(
            path, f"expected a number in (0, 1), got {quote(alpha)}", field="manifest.json:parameters.alpha"
        )
    judges = manifest.get("judges", [])
    if not isinstance(judges, list) or not all(isinstance(j, str) for j in judges):
        raise IngestError(path, f"expected a list of judge names, got {quote(judges)}", field="manifest.json:judges")
    listed = set(files) | {"manifest.json"}
    extra = sorted(set(zf.namelist()) - listed)
    if extra:
        raise IngestError(path, f"file {quote(extra[0])} is not in the manifest", field="manifest.json:files")
    return manifest


def _member(path: Path, zf: zipfile.ZipFile, member: str, entry: dict) -> bytes:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise IngestError(path, "listed in the manifest but missing from the zip", field=member) from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise IngestError(path, f"{info.file_size:,} bytes (at most {MAX_MEMBER_BYTES:,})", field=member)
    try:
        data = zf.read(member)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise IngestError(path, f"corrupt zip member ({quote(str(exc))})", field=member) from None
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise IngestError(path, "content does not match its SHA-256 in the manifest (changed or damaged)", field=member)
    return data


# Each non-text column's kind and range, as the store's schema holds it (INTEGER is 32-bit, grade −2…2).
_INT32 = (-(2**31), 2**31 - 1)
_KINDS: dict[str, tuple[str, tuple[float, float]]] = {
    **dict.fromkeys(("length", "n_headers", "n_bold", "n_list_items", "n_tokens"), ("int", (0, _INT32[1]))),
    **dict.fromkeys(("prompt_tokens", "completion_tokens"), ("int", (0, _INT32[1]))),
    "turn": ("int", (1, _INT32[1])),
    "run": ("int", (1, _INT32[1])),
    "score": ("float", (0.0, 10.0)),  # a single-answer grade (FastChat's 1–10)
    "grade": ("int", (-2, 2)),
    "battle_key": ("int", (-(2**63), 2**63 - 1)),
    "prompt_key": ("int", (-(2**63), 2**63 - 1)),
    "tstamp": ("float", TSTAMP_RANGE),
    "p_a": ("float", (0.0, 1.0)),
    "confidence": ("float", (0.0, 1.0)),
    "latency_ms": ("float", (0.0, 1e12)),
    "true_elo": ("float", (-1e6, 1e6)),
    "true_ability": ("float", (-1e6, 1e6)),
    **dict.fromkeys(SCORE_COLUMNS, ("float", SCORE_RANGE)),
    **dict.fromkeys(("verifiable", "correct", "echo"), ("bool", (0, 1))),
    "voted_at": ("time", (0, 0)),
}


def _check_kinds(path: Path, table: str, df: pd.DataFrame) -> None:
    for col in df.columns:
        kind = _KINDS.get(col)
        values = df[col].tolist()
        for i, v in enumerate(values):
            if v is None or (isinstance(v, float) and v != v) or v is pd.NA or v is pd.NaT:
                continue
            if kind is None:
                if not isinstance(v, str):
                    _fail(path, table, col, i, v, "expected text")
                if len(v) > MAX_TEXT_CHARS:
                    _fail(path, table, col, i, None, f"text of {len(v):,} characters (at most {MAX_TEXT_CHARS:,})")
                continue
            what, (lo, hi) = kind
            if what == "time":
                if not isinstance(v, (pd.Timestamp, datetime.datetime)):
                    _fail(path, table, col, i, v, "expected a timestamp")
                continue
            if what == "bool":
                if not isinstance(v, (bool, np.bool_)):
                    _fail(path, table, col, i, v, "expected true or false")
                continue
            number = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
            if not number or not np.isfinite(float(v)) or (what == "int" and float(v) != int(v)):
                _fail(path, table, col, i, v, f"expected a {'whole ' if what == 'int' else ''}number")
            if not lo <= v <= hi:
                bounds = f"[{int(lo):,}, {int(hi):,}]" if what == "int" else f"[{lo:g}, {hi:g}]"
                _fail(path, table, col, i, v, f"expected a value in {bounds}")


_ALLOWED: dict[tuple[str, str], tuple[str, ...]] = {
    ("votes", "winner"): tuple(HUMAN_WINNERS),
    ("votes", "shown_order"): ("ab", "ba"),
    ("judgments", "order"): tuple(ORDERS),
    ("judgments", "verdict"): tuple(VERDICTS),
}
_KEYS = {"battles": ("battle_key",), "prompts": ("prompt_key",), "models": ("model",), "annotators": ("annotator",)}


def _check_table(path: Path, table: str, df: pd.DataFrame) -> None:
    spec = TABLE_SPEC[table]
    field_of = f"tables/{table}.parquet"
    for col in spec["required"]:
        if col not in df.columns:
            raise IngestError(path, f"missing column {col!r}", field=f"{field_of}:{col}")
    unknown = sorted(set(df.columns) - set(spec["required"]) - set(spec["optional"]))
    if unknown:
        raise IngestError(path, f"unknown column {quote(unknown[0])}", field=f"{field_of}:{unknown[0]}")
    for col in spec["required"]:
        bad = df[col].isna().to_numpy()
        if bad.any():
            _fail(path, table, col, int(bad.argmax()), None, "missing value")
    _check_kinds(path, table, df)
    for (t, col), allowed in _ALLOWED.items():
        if t == table and col in df.columns:
            values = df[col].tolist()
            for i, v in enumerate(values):
                if v is not None and v == v and v not in allowed:
                    _fail(path, table, col, i, v, f"expected one of {list(allowed)}")
    for col in _KEYS.get(table, ()):
        dup = df[col].duplicated().to_numpy()
        if dup.any():
            _fail(path, table, col, int(dup.argmax()), df[col].iloc[int(dup.argmax())], "duplicate key")
    for col, what in _NAMES.items():  # as the importers' require_names
        if col in df.columns:
            for i, v in enumerate(df[col].tolist()):
                if is_missing(v):
                    continue
                if not v.strip():
                    _fail(path, table, col, i, None, f"empty {what} name")
                if len(v) > MAX_QUOTE:
                    _fail(path, table, col, i, None, f"a name of {len(v):,} characters (at most {MAX_QUOTE})")
    if table == "battles":
        same = np.flatnonzero(df["model_a"].to_numpy(dtype=object) == df["model_b"].to_numpy(dtype=object))
        if len(same):
            _fail(path, table, "model_b", int(same[0]), None, "a model cannot battle itself")
    if "turns" in df.columns:  # prompts and completions: a JSON list of the turns' texts
        field = f"{field_of}:turns"
        for i, v in enumerate(df["turns"].tolist()):
            if not is_missing(v):
                _turn_list(path, v, i + 1, field)


_NAMES = {"model": "model", "model_a": "model", "model_b": "model", "judge": "judge", "annotator": "annotator"}


def _turn_list(path: Path, text: str, row: int, field: str) -> None:
    """A stored ``turns`` value: JSON (nested at most ``MAX_NESTING`` deep), a list of texts or nulls."""
    turns = load_json(path, text, row, field)
    if not isinstance(turns, list):
        raise IngestError(path, f"expected a list of texts, one per turn, got {quote(turns)}", row=row, field=field)
    for turn in turns:
        if turn is not None and not isinstance(turn, str):
            raise IngestError(path, f"a turn is not a text: {quote(turn)}", row=row, field=field)
        text_value(path, turn, row, field)


def _first_repeat(df: pd.DataFrame, cols: list[str]) -> tuple[int, int] | None:
    """(position, position of the first) of the first row whose ``cols`` repeat an earlier row's, or None."""
    dup = df.duplicated(cols).to_numpy()
    if not dup.any():
        return None
    i = int(dup.argmax())
    group = df.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    return i, int(np.flatnonzero(group == group[i])[0])


def _check_links(path: Path, frames: dict[str, pd.DataFrame]) -> None:
    """What one table says of another: every model, prompt and battle named is in its table, and nothing is
    there twice (a model's answer to a prompt, an annotator's vote on a battle, a judge's judgment of a battle
    in an order)."""

    def unknown(table: str, col: str, known: set, of: str) -> None:
        df = frames.get(table)
        if df is None or col not in df.columns:
            return
        values = df[col].tolist()
        for i, v in enumerate(values):
            if not is_missing(v) and v not in known:
                _fail(path, table, col, i, v, f"not in tables/{of}.parquet")

    models = set(frames["models"]["model"].tolist())
    prompts = set(frames["prompts"]["prompt_key"].tolist()) if "prompts" in frames else set()
    battles = set(frames["battles"]["battle_key"].tolist())
    unknown("battles", "model_a", models, "models")
    unknown("battles", "model_b", models, "models")
    unknown("battles", "prompt_key", prompts, "prompts")
    unknown("completions", "prompt_key", prompts, "prompts")
    unknown("prompt_attributes", "prompt_key", prompts, "prompts")
    unknown("completions", "model", models, "models")
    unknown("votes", "battle_key", battles, "battles")
    unknown("judgments", "battle_key", battles, "battles")
    unknown("grades", "prompt_key", prompts, "prompts")
    unknown("grades", "model", models, "models")
    comp = frames.get("completions")
    if comp is not None:
        twice = _first_repeat(comp, ["prompt_key", "model"])
        if twice is not None:
            i, first = twice
            r = comp.iloc[i]
            why = f"model {quote(r['model'])} answered prompt {r['prompt_key']} twice (the first: row {first + 1})"
            _fail(path, "completions", "model", i, None, why)
    attrs = frames.get("prompt_attributes")
    if attrs is not None:
        twice = _first_repeat(attrs, ["prompt_key", "key"])
        if twice is not None:
            i, first = twice
            why = f"prompt {attrs['prompt_key'].iloc[i]} has attribute {quote(attrs['key'].iloc[i])} twice"
            _fail(path, "prompt_attributes", "key", i, None, f"{why} (the first: row {first + 1})")
    votes = frames.get("votes")
    if votes is not None and "annotator" in votes.columns:
        named = np.flatnonzero(votes["annotator"].notna().to_numpy())  # a vote without an annotator is no one's
        twice = _first_repeat(votes.iloc[named].reset_index(drop=True), ["battle_key", "annotator"])
        if twice is not None:
            i, first = (int(named[k]) for k in twice)
            _fail(path, "votes", "annotator", i, None, second_vote(votes["annotator"].iloc[i], first + 1))
    grades = frames.get("grades")
    if grades is not None:
        keys = grades.reindex(columns=["prompt_key", "model", "judge", "run"]).astype(object)
        keys["run"] = keys["run"].where(keys["run"].notna(), 1)
        twice = _first_repeat(keys, list(keys.columns))
        if twice is not None:
            i, first = twice
            why = f"the same judge graded the same answer twice in one run (the first: row {first + 1})"
            _fail(path, "grades", "judge", i, None, why)
    judgments = frames.get("judgments")
    if judgments is not None:
        keys = judgments.reindex(columns=["battle_key", "judge", "order", "prompt_version", "variant"]).astype(object)
        keys["prompt_version"] = keys["prompt_version"].where(keys["prompt_version"].notna(), "imported")
        keys["variant"] = keys["variant"].where(keys["variant"].notna(), "original")
        twice = _first_repeat(keys, list(keys.columns))
        if twice is not None:
            i, first = twice
            why = f"the same judge judged the same battle in the same order twice (the first: row {first + 1})"
            _fail(path, "judgments", "judge", i, None, why)


def _fail(path: Path, table: str, col: str, i: int, value: Any, why: str) -> None:
    got = "" if value is None else f": {quote(value)}"
    raise IngestError(path, f"{why}{got}", row=i + 1, field=f"tables/{table}.parquet:{col}")
