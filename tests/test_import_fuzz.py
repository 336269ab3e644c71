"""Imports never crash: ≥ 1,000 corrupted variants across every import format (and the LMArena 55k and
Arena-Hard judgment layouts), through the CLI's own code path.

Each variant either imports (exit 0) and is valid, or is rejected (exit 2) with a message naming the file
and leaving the store exactly as it was (``info --json`` and a checksum of every table unchanged).  No other
outcome (a traceback, exit 1) is allowed.  Corruptions are drawn from a seeded generator: type swaps (lists,
dicts, booleans, huge integers, ±inf, 1e400, NaN), out-of-range and fractional numbers, text over the size
limit, deeply nested JSON, invalid UTF-8, truncated and empty files, missing and renamed columns; for a
bundle also damaged zip members and tables altered with their hashes updated.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import random
import shutil
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from core.cli import main
from core.domain import validate
from core.ingest.common import MAX_QUOTE, MAX_TEXT_CHARS, TSTAMP_RANGE
from core.store import Store

# variants per fuzzed layout (1,030 in all); the key names a layout, FORMAT_OF the --format it is imported as
N_VARIANTS = {
    "softelo": 120,
    "lmarena": 130,
    "lmarena-55k": 100,
    "contests": 100,
    "arena-hard": 100,
    "arena-hard-judgments": 100,
    "alpaca-eval": 100,
    "fastchat-mtbench": 100,
    "mtbench-human": 100,
    "bundle": 80,
}
FORMAT_OF = {"lmarena-55k": "lmarena", "arena-hard-judgments": "arena-hard"}
TABLES = ("datasets", "imports", "models", "prompts", "completions", "battles", "votes", "judges", "judgments")

DEEP = json.loads("[" * 200 + "]" * 200)
BAD_VALUES = [
    None,
    "",
    float("nan"),
    float("inf"),
    -float("inf"),
    "1e400",
    10**30,
    -3,
    1.5,
    True,
    "x" * 20,
    [1, 2],
    {"k": "v"},
    DEEP,
    "a" * (MAX_TEXT_CHARS + 5),
    "\x00\x01",
    "nan",
    0,
    2**31,
    "−1",
]


def _softelo(d: Path) -> Path:
    rows = [
        ("gpt-4", "llama-2", 0.0, 0.0),
        ("llama-2", "claude", 1.0, 0.5),
        ("claude", "gpt-4", 0.5, 1.0),
        ("gpt-4", "claude", 0.0, 0.0),
        ("llama-2", "gpt-4", 1.0, 1.0),
        ("claude", "llama-2", 0.0, 0.5),
    ]
    df = pd.DataFrame(rows, columns=["model_a", "model_b", "human_pref", "judge_pref"])
    df["scores_a"] = ['{"helpfulness": 8, "clarity": 7}'] * len(df)
    df["scores_b"] = ['{"helpfulness": 6, "clarity": 7}'] * len(df)
    df["meta_lang"] = "en"
    df["battle_id"] = [f"b{k}" for k in range(len(df))]
    path = d / "base.csv"
    df.to_csv(path, index=False)
    return path


def _lmarena_frame() -> pd.DataFrame:
    conv = lambda q, a: [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    rows = []
    for k in range(8):
        ma, mb = ("m1", "m2") if k % 2 else ("m2", "m3")
        rows.append(
            {
                "question_id": f"q{k}",
                "model_a": ma,
                "model_b": mb,
                "winner": ["model_a", "model_b", "tie", "tie (bothbad)"][k % 4],
                "judge": f"u{k % 3}",
                "conversation_a": conv(f"question {k}", f"answer a {k}"),
                "conversation_b": conv(f"question {k}", f"answer b {k}"),
                "turn": 1 + k % 2,
                "language": "English",
                "tstamp": 1.7e9 + k,
            }
        )
    return pd.DataFrame(rows)


def _contests(d: Path) -> Path:
    rows = [
        ("j1", "m1", "m2", "q1", "m1"),
        ("j1", "m2", "m1", "q1", "m1"),
        ("j2", "m1", "m3", "q2", "Tie"),
        ("j2", "m3", "m2", "q3", "m2"),
        ("j1", "m3", "m1", "q4", "m3"),
    ]
    path = d / "base.csv"
    pd.DataFrame(rows, columns=["judge", "first", "second", "question_id", "winner"]).to_csv(path, index=False)
    return path


def _arena_hard(d: Path) -> Path:
    root = d / "ah"
    (root / "model_answer").mkdir(parents=True)
    q = [{"uid": f"u{k}", "category": "arena-hard-v0.1", "prompt": f"prompt {k}"} for k in range(4)]
    (root / "question.jsonl").write_text("\n".join(json.dumps(x) for x in q) + "\n")
    for m in ("m1", "m2", "m3"):
        recs = [
            {
                "uid": f"u{k}",
                "model": m,
                "messages": [
                    {"role": "user", "content": f"prompt {k}"},
                    {"role": "assistant", "content": {"answer": f"{m} {k}"}},
                ],
            }
            for k in range(4)
        ]
        (root / "model_answer" / f"{m}.jsonl").write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    return root


def _arena_hard_judgments(d: Path) -> Path:
    from tests.test_arena_hard_judgments import _v01_dir

    return _v01_dir(d / "ahj")


def _alpaca_eval(d: Path) -> Path:
    from tests.test_alpaca_eval import _records, _write

    return _write(d / "run" / "annotations.json", _records())


def _fastchat(d: Path) -> Path:
    from tests.test_fastchat_mtbench import _write

    return _write(d / "mt_bench")


def _mtbench_human_frame() -> pd.DataFrame:
    from tests.test_mtbench_human import GPT4, HUMAN

    return pd.DataFrame(HUMAN + GPT4)


def _frame_55k() -> pd.DataFrame:
    from tests.test_lmarena_releases import _frame_55k

    return _frame_55k()


def _bundle(d: Path) -> Path:
    from core.app.bundle import export_bundle
    from core.app.data import import_path

    with Store.open(":memory:") as s:
        import_path(s, _lmarena_base(d), "lmarena", dataset="b")
        return export_bundle(s, "b", d / "b.zip").path


def _lmarena_base(d: Path) -> Path:
    path = d / "lm.jsonl"
    _write_table(_lmarena_frame(), path)
    return path


BASES = {
    "softelo": _softelo,
    "contests": _contests,
    "arena-hard": _arena_hard,
    "arena-hard-judgments": _arena_hard_judgments,
    "alpaca-eval": _alpaca_eval,
    "fastchat-mtbench": _fastchat,
    "bundle": _bundle,
}
FRAMES = {"lmarena": _lmarena_frame, "lmarena-55k": _frame_55k, "mtbench-human": _mtbench_human_frame}


def _mutate_record(rec: dict, rng: random.Random) -> None:
    """One field of a JSON record, or one field one level inside it (a game, a choice, a turn), made bad."""
    holder: Any = rec
    key: Any = rng.choice(list(rec) + ["turns", "messages", "games"])
    inner = rec.get(key)
    if rng.random() < 0.4 and isinstance(inner, list) and inner:
        holder, key = inner, rng.randrange(len(inner))
        if isinstance(inner[key], dict) and inner[key] and rng.random() < 0.7:
            holder, key = inner[key], rng.choice(list(inner[key]))
    value = rng.choice(BAD_VALUES + [[{"content": 3}], ["text"], [{"role": "assistant", "content": DEEP}]])
    if rng.random() < 0.15 and isinstance(holder, dict):
        holder.pop(key, None)
    else:
        holder[key] = value


def _json_file(target: Path, rng: random.Random) -> None:
    """Corrupt a JSON Lines or JSON-list file: its bytes, or one field of one record."""
    if rng.random() < 0.3:
        _bytes(target, rng)
        return
    text = target.read_text()
    listed = target.suffix == ".json"
    records = json.loads(text) if listed else [json.loads(x) for x in text.splitlines() if x.strip()]
    if not records:
        return
    _mutate_record(rng.choice(records), rng)
    if listed:
        target.write_text(json.dumps(records, allow_nan=True))
    else:
        target.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in records))


def _bundle_variant(base: Path, work: Path, rng: random.Random) -> Path:
    """A damaged bundle: bytes of the zip, a member's bytes, or a table corrupted with its hash updated."""
    out = work / "b.zip"
    with zipfile.ZipFile(base) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    op = rng.choice(["zip bytes", "member bytes", "table", "table", "manifest"])
    manifest = json.loads(members["manifest.json"])
    if op == "member bytes":
        name = rng.choice([n for n in members if n != "manifest.json"])
        data = members[name]
        k = rng.randrange(max(len(data), 1))
        members[name] = data[:k] + bytes([data[k] ^ 0xFF]) + data[k + 1 :] if data else b"x"
    elif op == "table":
        name = rng.choice([n for n in members if n.startswith("tables/") and manifest["files"][n].get("rows")])
        df = _put(pd.read_parquet(io.BytesIO(members[name])), rng)
        buf = io.BytesIO()
        try:
            df.to_parquet(buf, index=False)
        except Exception:
            df = df.astype(str)
            df.to_parquet(buf, index=False)
        members[name] = buf.getvalue()
        manifest["files"][name]["sha256"] = hashlib.sha256(members[name]).hexdigest()
        manifest["files"][name]["rows"] = len(df)
    elif op == "manifest":
        _mutate_record(manifest, rng)
    try:
        members["manifest.json"] = json.dumps(manifest, allow_nan=True, default=str).encode()
    except (TypeError, ValueError, RecursionError):
        members["manifest.json"] = b"{"
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    if op == "zip bytes":
        _bytes(out, rng)
    return out


def _put(df: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    """One cell, one column or one row corrupted."""
    df = df.copy().astype(object)
    op = rng.choice(["cell", "cell", "cell", "column", "drop", "rename", "dup", "empty"])
    col = rng.choice(list(df.columns))
    if op == "cell":
        df.at[rng.randrange(len(df)), col] = rng.choice(BAD_VALUES)
    elif op == "column":
        value = rng.choice(BAD_VALUES)
        df[col] = [value] * len(df)
    elif op == "drop":
        df = df.drop(columns=[col])
    elif op == "rename":
        df = df.rename(columns={col: col + "_x"})
    elif op == "dup":
        df = pd.concat([df, df.iloc[[rng.randrange(len(df))]]], ignore_index=True)
    else:
        df = df.iloc[0:0]
    return df


def _bytes(path: Path, rng: random.Random) -> None:
    """Corrupt a file's bytes: truncated, emptied, invalid UTF-8 or a garbage line."""
    data = path.read_bytes()
    op = rng.choice(["truncate", "empty", "utf8", "garbage"])
    if op == "truncate":
        data = data[: rng.randrange(max(len(data), 1))]
    elif op == "empty":
        data = b""
    elif op == "utf8":
        k = rng.randrange(max(len(data), 1))
        data = data[:k] + b"\xff\xfe\xc3" + data[k:]
    else:
        data = data + b"\n{not json,,,\n"
    path.write_bytes(data)


def _write_table(df: pd.DataFrame, path: Path) -> bool:
    """Write a frame as its suffix says; False when the corruption cannot even be written in that format."""
    try:
        if path.suffix == ".csv":
            out = df.copy()
            for c in out.columns:
                out[c] = [json.dumps(v) if isinstance(v, (list, dict)) else v for v in out[c]]
            out.to_csv(path, index=False)
        elif path.suffix == ".jsonl":
            with path.open("w") as fh:
                for rec in df.to_dict("records"):
                    fh.write(json.dumps(rec, default=str, allow_nan=True) + "\n")
        else:
            df.to_parquet(path, index=False)
    except Exception:
        return False
    return True


def _variant(fmt: str, base: Path, work: Path, rng: random.Random) -> Path | None:
    """A corrupted copy of the format's base file (None when the corruption cannot be represented)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    if fmt == "bundle":
        return _bundle_variant(base, work, rng)
    if fmt in ("arena-hard-judgments", "alpaca-eval", "fastchat-mtbench"):
        root = work / "d"
        shutil.copytree(base.parent if base.is_file() else base, root)
        files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl"))
        _json_file(rng.choice(files), rng)
        return root
    if fmt == "arena-hard":
        root = work / "ah"
        shutil.copytree(base, root)
        files = [root / "question.jsonl", *sorted((root / "model_answer").glob("*.jsonl"))]
        target = rng.choice(files)
        if rng.random() < 0.3:
            _bytes(target, rng)
            return root
        lines = [json.loads(x) for x in target.read_text().splitlines() if x.strip()]
        rec = rng.choice(lines)
        key = rng.choice(list(rec) + ["turns", "messages"])
        value = rng.choice(BAD_VALUES + [[{"content": 3}], ["text"], [{"role": "assistant", "content": DEEP}]])
        if rng.random() < 0.15:
            rec.pop(key, None)
        else:
            rec[key] = value
        with target.open("w") as fh:
            for r in lines:
                fh.write(json.dumps(r, allow_nan=True) + "\n")
        return root
    if fmt in FRAMES:
        df = _put(FRAMES[fmt](), rng)
        path = work / f"battles{rng.choice(['.parquet', '.jsonl', '.csv'])}"
        if not _write_table(df, path):
            return None
    else:
        df = _put(pd.read_csv(base, dtype=str, keep_default_na=False), rng)
        path = work / "file.csv"
        if not _write_table(df, path):
            return None
    if rng.random() < 0.15:
        _bytes(path, rng)
    return path


def _checksums(db: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*), coalesce(sum(hash(x)), 0) FROM {t} x").fetchone() for t in TABLES}
    finally:
        con.close()


def _run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(args)
    return rc, err.getvalue()


def _accepted_is_valid(db: Path, name: str) -> None:
    with Store.open(db, read_only=True) as s:
        frame = s.battle_frame(name)
        validate(frame)
        turns = frame["turn"].dropna()
        assert (turns >= 1).all() and (turns == turns.round()).all()
        stamps = frame["tstamp"].dropna().astype(float)
        assert stamps.map(math.isfinite).all() and stamps.between(*TSTAMP_RANGE).all()
        assert s.models_frame(name)["model"].str.len().max() <= MAX_QUOTE
        comps = s.completions_frame(name, with_text=True)
        assert comps["text"].dropna().str.len().max() <= MAX_TEXT_CHARS if len(comps) else True


SAMPLE = 6


def fuzz_imports(fmt: str, wanted: int, tmp_path: Path) -> dict[int, int]:
    """Import the first ``wanted`` corrupted variants of layout ``fmt`` (a seeded stream) into one store: each
    exits 0 or 2, a rejection changes no byte of the store and says why in a short message, an accepted one
    is valid.  Returns the count of each exit status."""
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    base = BASES.get(fmt, lambda d: d)(base_dir)
    db = tmp_path / "store.duckdb"
    Store.open(db).close()
    before = _checksums(db)
    rng = random.Random(f"fuzz-{fmt}")
    outcomes = {0: 0, 2: 0}
    tried = 0
    while tried < wanted:
        path = _variant(fmt, base, tmp_path / "work", rng)
        if path is None:
            continue
        tried += 1
        name = f"v{tried}"
        rc, err = _run(["import", "--db", str(db), "--format", FORMAT_OF.get(fmt, fmt), "--dataset", name, str(path)])
        assert rc in (0, 2), (fmt, tried, rc, err)
        outcomes[rc] += 1
        if rc == 2:
            assert "error:" in err and len(err) < 2000, err  # a message, quoting at most 200 characters
            assert _checksums(db) == before, (fmt, tried, err)
        else:
            _accepted_is_valid(db, name)
            with Store.open(db) as s:
                s.delete_dataset(name)
            before = _checksums(db)  # the judge registry is store-wide: a deleted dataset leaves its judges
    assert outcomes[0] + outcomes[2] == tried
    return outcomes


# The suite imports a seeded sample of each layout's variants, the first SAMPLE of the stream that
# ``make bench`` imports in full (benchmarks/bench_studies.py --only fuzz): one import costs ~0.1-0.3 s.
@pytest.mark.parametrize("fmt", list(N_VARIANTS))
def test_corrupted_imports_exit_0_or_2_and_a_rejection_changes_nothing(fmt, tmp_path):
    outcomes = fuzz_imports(fmt, SAMPLE, tmp_path)
    assert outcomes[2] > 0.3 * SAMPLE  # the corruptions bite


@pytest.mark.parametrize(
    "column, value",
    [("tstamp", "4102444801"), ("tstamp", "-1"), ("turn", "0"), ("turn", "2147483648")],
)
def test_a_number_outside_its_fields_range_is_refused_by_row_and_field(column, value, tmp_path):
    """A timestamp after 2100 or before 1970, a turn below 1 or past int32: refused, naming row and field
    (the fuzzer's corruptions never write such a number into a range-checked field)."""
    good = {"tstamp": "1700000000", "turn": "1"}
    bad = tmp_path / "battles.csv"
    rows = {**good, column: value}
    bad.write_text(
        "model_a,model_b,winner,tstamp,turn\n"
        f"x,y,model_a,{good['tstamp']},{good['turn']}\n"
        f"y,x,model_b,{rows['tstamp']},{rows['turn']}\n"
    )
    db = tmp_path / "store.duckdb"
    rc, err = _run(["import", "--db", str(db), "--format", "lmarena", str(bad)])
    assert rc == 2 and f"row 2, field '{column}'" in err, err
    assert not db.exists()


def test_a_rejected_import_into_a_missing_store_creates_no_store(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner\nx,y,sideways\n")
    db = tmp_path / "nowhere" / "store.duckdb"
    rc, err = _run(["import", "--db", str(db), "--format", "lmarena", str(bad)])
    assert rc == 2 and "row 1, field 'winner'" in err
    assert not db.exists() and not db.parent.exists()


@pytest.mark.parametrize(
    "value, message",
    [
        (1.5, "whole number"),
        (-3, "whole number"),
        (True, "whole number"),
        (2**31, "whole number"),
    ],
)
def test_lmarena_turn_must_be_a_positive_int32(tmp_path, value, message):
    df = _lmarena_frame()
    df["turn"] = df["turn"].astype(object)
    df.at[2, "turn"] = value
    path = tmp_path / "b.jsonl"
    _write_table(df, path)
    rc, err = _run(["import", "--db", str(tmp_path / "s.duckdb"), "--format", "lmarena", str(path)])
    assert rc == 2 and "row 3, field 'turn'" in err and message in err


@pytest.mark.parametrize("value", [float("inf"), -float("inf"), "1e400", -5.0])
def test_lmarena_tstamp_must_be_a_finite_time(tmp_path, value):
    df = _lmarena_frame()
    df["tstamp"] = df["tstamp"].astype(object)
    df.at[4, "tstamp"] = value
    path = tmp_path / "b.jsonl"
    _write_table(df, path)
    rc, err = _run(["import", "--db", str(tmp_path / "s.duckdb"), "--format", "lmarena", str(path)])
    assert rc == 2 and "row 5, field 'tstamp'" in err


def test_messages_quote_at_most_200_characters_of_a_value(tmp_path):
    df = _lmarena_frame()
    df.at[0, "winner"] = "w" * 1_000_000
    path = tmp_path / "b.parquet"
    _write_table(df, path)
    rc, err = _run(["import", "--db", str(tmp_path / "s.duckdb"), "--format", "lmarena", str(path)])
    assert rc == 2 and "row 1, field 'winner'" in err and len(err) < 600 and "1,000,002 characters" in err


def test_list_content_parts_are_read_as_text(tmp_path):
    """A 140k-style message (content = a list of {type, text, image} parts) is stored as its text."""
    df = _lmarena_frame()
    parts = [{"type": "text", "text": "4", "image": None, "mimeType": None}]
    df.at[0, "conversation_a"] = [
        {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
        {"role": "assistant", "content": parts},
    ]
    path = tmp_path / "b.jsonl"  # Parquet cannot hold a column mixing string and list contents
    assert _write_table(df, path)
    db = tmp_path / "s.duckdb"
    rc, err = _run(["import", "--db", str(db), "--format", "lmarena", "--dataset", "p", str(path)])
    assert rc == 0, err
    with Store.open(db, read_only=True) as s:
        texts = s.completions_frame("p", with_text=True)["text"]
    assert "4" in set(texts) and not any("'type'" in t for t in texts.dropna())
