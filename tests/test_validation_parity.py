"""Every way in validates alike: a bundle as any importer, the SQL path as the row-by-row one.

Each test writes its own files and fails on the code before the fix it names:

1. a bundle whose hashes were updated after hand-editing still meets every importer's rules
   (self-battles, ``turns`` JSON, completions of unknown models, repeated completions);
2. ``arena-judgments`` refuses rubric scores outside ``SCORE_RANGE``;
3. an annotator's second vote on a battle is refused (LMArena both paths, MT-Bench human);
4. a message whose ``content`` key is misspelt is refused instead of dropped;
5. a CSV cut short (last row short of fields with no final newline, or an open quote) is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from core.app.data import import_path
from core.ingest import IngestError, bulk_plan, load
from core.store import Store
from tests.cli import CliResult, run_cli
from tests.conftest import ROOT


def _cli(*args: str) -> CliResult:
    return run_cli(*args, cwd=ROOT)


def _counts(db: Path) -> dict:
    """The datasets of a store and their row counts (the store must not change on a refused import)."""
    if not db.exists():
        return {}
    with Store.open(db, read_only=True) as s:
        con = s._cur()
        names = [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name").fetchall()]
        out: dict = {"datasets": names}
        for table in ("battles", "votes", "judgments", "completions", "prompts", "models", "imports"):
            row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
            out[table] = row[0] if row else None
    return out


# ---------------------------------------------------------------- 1. the bundle
@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, Path]:
    """A small simulated dataset's bundle, and a store that already holds another dataset."""
    folder = tmp_path_factory.mktemp("parity")
    src = folder / "src.duckdb"
    res = _cli("simulate", "--db", str(src), "--small", "--seed", "5")
    assert res.returncode == 0, res.stderr
    out = folder / "demo.zip"
    res = _cli("export", "--db", str(src), "--dataset", "demo", "--bundle", str(out))
    assert res.returncode == 0, res.stderr
    return src, out


def _edited(src: Path, dst: Path, table: str, edit) -> Path:
    """A copy of a bundle with ``tables/<table>.parquet`` changed by ``edit(frame)``, its hash and row count
    updated in the manifest (a hand-edited bundle, made to look intact)."""
    member = f"tables/{table}.parquet"
    with zipfile.ZipFile(src) as zin:
        manifest = json.loads(zin.read("manifest.json"))
        frame = edit(pd.read_parquet(io.BytesIO(zin.read(member))))
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        new = buf.getvalue()
        manifest["files"][member]["sha256"] = hashlib.sha256(new).hexdigest()
        manifest["files"][member]["rows"] = len(frame)
        with zipfile.ZipFile(dst, "w") as zout:
            for name in zin.namelist():
                data = new if name == member else zin.read(name)
                zout.writestr(name, json.dumps(manifest).encode() if name == "manifest.json" else data)
    return dst


def _self_battle(b: pd.DataFrame) -> pd.DataFrame:
    b.loc[6, "model_b"] = b.loc[6, "model_a"]
    return b


def _turns(value: str):
    def edit(p: pd.DataFrame) -> pd.DataFrame:
        p["turns"] = p["turns"].astype(object)
        p.loc[2, "turns"] = value
        return p

    return edit


def _stranger(c: pd.DataFrame) -> pd.DataFrame:
    c.loc[3, "model"] = "nobody-7b"
    return c


def _twice(c: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([c, c.iloc[[4]]], ignore_index=True)


def _revote(v: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([v, v.iloc[[7]]], ignore_index=True)


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.integration
@pytest.mark.parametrize(
    ("table", "edit", "row", "field", "needle"),
    [
        ("battles", _self_battle, 7, "tables/battles.parquet:model_b", "a model cannot battle itself"),
        ("prompts", _turns('["first", "sec'), 3, "tables/prompts.parquet:turns", "invalid JSON"),
        ("prompts", _turns(DEEP), 3, "tables/prompts.parquet:turns", "JSON nested deeper than 32 levels"),
        ("prompts", _turns('{"turn": "one"}'), 3, "tables/prompts.parquet:turns", "expected a list of texts"),
        ("completions", _stranger, 4, "tables/completions.parquet:model", "not in tables/models.parquet"),
        ("completions", _twice, None, "tables/completions.parquet:model", "twice (the first: row 5)"),
        ("votes", _revote, None, "tables/votes.parquet:annotator", "a second vote by annotator"),
    ],
    ids=[
        "self-battle",
        "turns-not-json",
        "turns-5000-deep",
        "turns-not-a-list",
        "unknown-model",
        "completion-twice",
        "vote-twice",
    ],
)
def test_a_hand_edited_bundle_with_updated_hashes_meets_the_importers_rules(
    bundle, tmp_path, table, edit, row, field, needle
):
    _, out = bundle
    bad = _edited(out, tmp_path / "edited.zip", table, edit)
    db = tmp_path / "store.duckdb"
    res = _cli("import", "--db", str(db), str(out), "--dataset", "first")
    assert res.returncode == 0, res.stderr  # a store that already holds a dataset
    before = _counts(db)
    res = _cli("import", "--db", str(db), str(bad))
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in res.stderr and field in res.stderr and "edited.zip" in res.stderr, res.stderr
    if row is not None:
        assert f"row {row}," in res.stderr, res.stderr
    assert _counts(db) == before
    # the API says the same, naming file, row and field
    with pytest.raises(IngestError) as exc:
        load(bad, "bundle")
    assert exc.value.field == field and (row is None or exc.value.row == row)


@pytest.mark.integration
def test_the_unedited_bundle_still_imports_and_exports_its_votes(bundle, tmp_path):
    _, out = bundle
    db = tmp_path / "ok.duckdb"
    res = _cli("import", "--db", str(db), str(out))
    assert res.returncode == 0, res.stderr
    res = _cli("export", "--db", str(db), "--dataset", "demo", "--table", "votes", "--out", str(tmp_path / "v.jsonl"))
    assert res.returncode == 0, res.stderr


# ------------------------------------------------- 2. arena-judgments scores
def _arena_store(tmp_path: Path) -> Path:
    db = tmp_path / "arena.duckdb"
    battles = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "model_a": ["alpha", "beta", "alpha"],
            "model_b": ["beta", "gamma", "gamma"],
            "winner": ["model_a", "tie", "model_b"],
        }
    )
    battles.to_parquet(tmp_path / "battles.parquet", index=False)
    with Store.open(db) as s:
        import_path(s, tmp_path / "battles.parquet", "lmarena", dataset="arena")
    return db


@pytest.mark.integration
@pytest.mark.parametrize(("column", "value"), [("a_helpfulness", 11), ("b_clarity", -1), ("a_fluency", 10.5)])
def test_arena_judgments_refuse_a_score_outside_its_range(tmp_path, column, value):
    db = _arena_store(tmp_path)
    rows = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "judge": "gpt-judge",
            "order": "ab",
            "winner": ["model_a", "tie", "model_b"],
            "a_helpfulness": [7, 5, 3],
            "b_clarity": [6.0, 5.0, 0.0],
            "a_fluency": [10.0, 9.0, 8.0],
        }
    )
    rows[column] = rows[column].astype(float)
    rows.loc[1, column] = value
    path = tmp_path / "judgments.parquet"
    rows.to_parquet(path, index=False)
    before = _counts(db)
    res = _cli("import", "--db", str(db), str(path), "--format", "arena-judgments", "--dataset", "arena")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "row 2" in res.stderr and f"field '{column}'" in res.stderr and "[0, 10]" in res.stderr, res.stderr
    assert _counts(db) == before
    rows.loc[1, column] = 10.0  # the edge of the range is a score
    rows.to_parquet(path, index=False)
    res = _cli("import", "--db", str(db), str(path), "--format", "arena-judgments", "--dataset", "arena")
    assert res.returncode == 0, res.stderr


# ----------------------------------------------------- 3. a second vote
ARENA = pd.DataFrame(
    {
        "question_id": ["q1", "q2", "q1", "q3", "q1"],
        "model_a": ["alpha", "beta", "alpha", "alpha", "beta"],
        "model_b": ["beta", "gamma", "gamma", "gamma", "alpha"],
        "winner": ["model_a", "tie", "model_b", "model_a", "model_b"],
        "judge": ["u1", "u1", "u1", "u2", "u1"],
    }
)


@pytest.mark.integration
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_lmarena_refuses_an_annotators_second_vote_on_a_battle_on_both_paths(tmp_path, suffix):
    # row 5 is row 1's battle (q1, alpha against beta) named the other way round, by the same annotator
    path = tmp_path / f"arena{suffix}"
    if suffix == ".parquet":
        ARENA.to_parquet(path, index=False)
    elif suffix == ".jsonl":
        ARENA.to_json(path, orient="records", lines=True)
    else:
        ARENA.to_csv(path, index=False)
    message = "a second vote by annotator 'u1' on this battle (the first: row 1)"
    if suffix == ".parquet":  # the SQL path takes this file, and says what the reader says
        with pytest.raises(IngestError) as exc:
            bulk_plan(path, "lmarena")
        assert (exc.value.row, exc.value.field) == (5, "judge") and message in str(exc.value)
    with pytest.raises(IngestError) as exc:
        load(path, "lmarena")
    assert (exc.value.row, exc.value.field) == (5, "judge") and message in str(exc.value)
    db = tmp_path / "s.duckdb"
    res = _cli("import", "--db", str(db), str(path), "--format", "lmarena")
    assert res.returncode == 2 and message in res.stderr and not db.exists(), res.stderr


def test_lmarena_votes_of_other_annotators_or_other_turns_are_kept(tmp_path):
    ok = ARENA.copy()
    ok.loc[4, "judge"] = "u3"  # another annotator on q1's battle
    ok.to_parquet(tmp_path / "ok.parquet", index=False)
    plan = bulk_plan(tmp_path / "ok.parquet", "lmarena")
    assert plan is not None and plan.n_rows == 5
    assert len(load(tmp_path / "ok.parquet", "lmarena").votes) == 5
    turns = ARENA.assign(turn=[1, 1, 1, 1, 2])  # the same annotator at the conversation's second turn
    turns.to_parquet(tmp_path / "turns.parquet", index=False)
    assert bulk_plan(tmp_path / "turns.parquet", "lmarena") is not None
    assert len(load(tmp_path / "turns.parquet", "lmarena").votes) == 5
    anonymous = ARENA.assign(judge=["", " ", "", "u2", ""])  # no annotator: nothing to compare
    anonymous.to_parquet(tmp_path / "anon.parquet", index=False)
    assert bulk_plan(tmp_path / "anon.parquet", "lmarena") is not None
    assert len(load(tmp_path / "anon.parquet", "lmarena").votes) == 5


def _mt_row(qid, ma, mb, winner, judge, turn=1):
    conv = [{"role": "user", "content": f"question {qid}"}, {"role": "assistant", "content": f"{{}} on {qid}"}]
    return {
        "question_id": qid,
        "model_a": ma,
        "model_b": mb,
        "winner": winner,
        "judge": judge,
        "conversation_a": [{**m, "content": m["content"].replace("{}", ma)} for m in conv],
        "conversation_b": [{**m, "content": m["content"].replace("{}", mb)} for m in conv],
        "turn": turn,
    }


@pytest.mark.integration
def test_mtbench_human_refuses_an_annotators_second_vote_on_a_battle(tmp_path):
    rows = [
        _mt_row(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "author_2"),
        _mt_row(81, "alpaca-13b", "gpt-3.5-turbo", "tie", "author_4"),
        _mt_row(81, "gpt-3.5-turbo", "alpaca-13b", "model_a", "author_2"),  # the same battle the other way round
    ]
    path = tmp_path / "human.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IngestError) as exc:
        load(path, "mtbench-human")
    assert (exc.value.row, exc.value.field) == (3, "judge")
    assert "a second vote by annotator 'author_2' on this battle (the first: row 1)" in str(exc.value)
    db = tmp_path / "s.duckdb"
    res = _cli("import", "--db", str(db), str(path), "--format", "mtbench-human")
    assert res.returncode == 2 and "row 3" in res.stderr and not db.exists(), res.stderr


# ------------------------------------------------ 4. a misspelt content key
@pytest.mark.parametrize("fmt", ["lmarena", "mtbench-human"])
def test_a_message_without_content_is_refused_not_dropped(tmp_path, fmt):
    rows = [_mt_row(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "author_2")]
    rows.append(_mt_row(82, "alpaca-13b", "claude-v1", "model_a", "author_2"))
    rows[1]["conversation_b"][1] = {"role": "assistant", "contnet": "the answer"}
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IngestError) as exc:
        load(path, fmt)
    assert (exc.value.row, exc.value.field) == (2, "conversation_b")
    assert "message has no 'content'" in str(exc.value)
    rows[1]["conversation_b"][1] = {"role": "assistant", "content": None}  # an explicit null stays legal
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load(path, fmt).battles) == 2


# ------------------------------------------------------ 5. a CSV cut short
SOFTELO = (
    "model_a,model_b,human_pref,judge_pref,scores_a,scores_b,meta_lang\n"
    'alpha,beta,0.2,0.3,"{""helpfulness"": 7}","{""helpfulness"": 5}",en\n'
    'beta,gamma,0.8,0.7,"{""helpfulness"": 4}","{""helpfulness"": 6}",de\n'
)
LMARENA_CSV = (
    "question_id,model_a,model_b,winner,judge,language\nq1,alpha,beta,model_a,u1,en\nq2,beta,gamma,tie,u2,de\n"
)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("name", "text", "fmt", "row", "needle"),
    [
        ("cut.csv", LMARENA_CSV + "q3,alpha,gamma,model_b", "lmarena", 3, "4 of the header's 6 fields"),
        ("cut.tsv", LMARENA_CSV.replace(",", "\t") + "q3\talpha\tgamma\tmodel_b", "lmarena", 3, "cut short"),
        ("quote.csv", LMARENA_CSV + 'q3,alpha,gamma,"model_b,u3,en\n', "lmarena", 3, "quoted field is still open"),
        ("cut.csv", SOFTELO + 'gamma,alpha,0.5,0.5,"{""helpfulness"": 5}"', "softelo", 3, "5 of the header's 7"),
        ("quote.csv", SOFTELO + 'gamma,alpha,0.5,0.5,"{""helpfulness"": 5}","{""help', "softelo", 3, "still open"),
    ],
)
def test_a_csv_cut_short_is_refused_naming_its_last_row(tmp_path, name, text, fmt, row, needle):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(IngestError) as exc:
        load(path, fmt)
    assert exc.value.row == row and needle in str(exc.value), str(exc.value)
    db = tmp_path / "s.duckdb"
    res = _cli("import", "--db", str(db), str(path), "--format", fmt)
    assert res.returncode == 2 and f"row {row}" in res.stderr and not db.exists(), res.stderr


@pytest.mark.parametrize("fmt", ["lmarena", "softelo"])
def test_a_whole_last_row_without_a_final_newline_is_read(tmp_path, fmt):
    path = tmp_path / "whole.csv"
    path.write_text((LMARENA_CSV if fmt == "lmarena" else SOFTELO).rstrip("\n"))
    assert len(load(path, fmt).battles) == 2
