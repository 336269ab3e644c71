"""Importers: real shared files, small written files, corruption leaves the store unchanged."""

from __future__ import annotations

import csv
import io
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.app.data import import_path
from core.app.files import softelo_frame
from core.domain import preference_to_target
from core.ingest import IngestError
from core.store import SCHEMA_VERSION, Store
from core.text import style_counts
from tests.cli import CliResult, run_cli
from tests.conftest import ROOT, shared_path

SOFTELO_HEADER = "row_id,model_a,model_b,human_pref,judge_pref,scores_a,scores_b,meta_lang\n"


def _softelo_rows(n: int = 12) -> list[str]:
    rows = []
    models = ["m1", "m2", "m3", "m4"]
    for i in range(n):
        a, b = models[i % 4], models[(i + 1 + i // 4) % 4]
        if a == b:
            b = models[(i + 2) % 4]
        sa = {"adherence": 8.0, "helpfulness": 7.5, "clarity": 9.0}
        sb = {"adherence": 6.0 + (i % 3), "helpfulness": 7.0, "clarity": 8.5}
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(
            [f"r{i}", a, b, [0, 1, 0.5][i % 3], [0, 1, 0.5][(i + 1) % 3], str(sa), json.dumps(sb), "en"]
        )
        rows.append(buf.getvalue())
    return rows


def _write_softelo(path, rows=None) -> None:
    path.write_text(SOFTELO_HEADER + "".join(rows if rows is not None else _softelo_rows()), encoding="utf-8")


@pytest.fixture()
def store_with_data(tmp_path):
    s = Store.open(tmp_path / "s.duckdb")
    good = tmp_path / "good.csv"
    _write_softelo(good)
    import_path(s, good, "softelo", dataset="base")
    yield s
    s.close()


# --------------------------------------------------------------- real files
def test_softelo_real_sample(tmp_path):
    path = shared_path("softelo_sample_annotations.csv")
    with Store.open(tmp_path / "r.duckdb") as s:
        res = import_path(s, path, "softelo")
        info = s.info()["datasets"][0]
        assert (res.n_battles, res.n_votes, res.n_judgments) == (1000, 1000, 1000)
        assert info["n_models"] == 14 and info["n_battles"] == 1000 and info["n_human_votes"] == 1000
        f = s.battle_frame(res.dataset, "softelo-judge")
    raw = pd.read_csv(path)
    # human label mapping of METHODS §2, checked against the raw column
    np.testing.assert_array_equal(f["human_y"].to_numpy(), preference_to_target(raw["human_pref"].to_numpy()))
    # the judge's verdict is the hard label when the file carries one
    np.testing.assert_array_equal(f["judge_hard"].to_numpy(), preference_to_target(raw["judge_pref"].to_numpy()))
    assert (f["human_y"] != 0.5).sum() == 639
    assert f["language"].nunique() == raw["meta_lang"].nunique()
    frame = softelo_frame(path)
    np.testing.assert_allclose(frame["gap"].to_numpy(), f["gap"].to_numpy())


def test_contests_real_file(tmp_path):
    path = shared_path("judge_contests.csv")
    raw = pd.read_csv(path)
    with Store.open(tmp_path / "c.duckdb") as s:
        res = import_path(s, path, "contests")
        info = s.info()["datasets"][0]
        back = s.contests_frame(res.dataset)
    assert res.n_judgments == 66_995 and len(info["judges"]) == 24 and info["n_models"] == 35
    assert (
        info["n_battles"]
        == raw.groupby(
            [raw.question_id, raw[["first", "second"]].min(axis=1), raw[["first", "second"]].max(axis=1)]
        ).ngroups
    )
    # presentation order and winners survive the round trip exactly
    key = ["judge", "first", "second", "question_id", "winner"]
    a = raw.astype({"question_id": str})[key].sort_values(key).reset_index(drop=True)
    b = back[key].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_arena_hard_real_directory(tmp_path):
    path = shared_path("arena_hard_v0.1")
    with Store.open(tmp_path / "h.duckdb") as s:
        res = import_path(s, path, "arena-hard")
        info = s.info()["datasets"][0]
        comps = s.completions_frame(res.dataset, with_text=True)
        todo = s.battles_for_judging(res.dataset)
    assert (info["n_prompts"], info["n_completions"], info["n_battles"], info["n_models"]) == (500, 1500, 1500, 3)
    assert info["n_human_votes"] == 0 and todo["text_a"].notna().all() and todo["prompt"].notna().all()
    sample = comps.iloc[0]
    c = style_counts(sample["text"])
    assert (sample["length"], sample["n_headers"], sample["n_list_items"]) == (c.length, c.n_headers, c.n_list_items)


def test_reimport_is_idempotent(tmp_path, store_with_data):
    before = store_with_data.info()
    again = import_path(store_with_data, tmp_path / "good.csv", "softelo", dataset="other-name")
    assert again.status == "already-imported" and again.dataset == "base"
    assert store_with_data.info() == before


# ----------------------------------------------------------- lmarena files
def _lmarena_frame() -> pd.DataFrame:
    conv = lambda q, a: [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return pd.DataFrame(
        {
            "model_a": ["p", "q", "r", "p"],
            "model_b": ["q", "r", "p", "r"],
            "winner": ["model_a", "tie (bothbad)", "model_b", "tie"],
            "judge": ["ann1", "ann2", "ann1", "ann3"],
            "language": ["English", "German", "English", "French"],
            "turn": [1, 1, 2, 1],
            "tstamp": [1.0, 2.0, 3.0, 4.0],
            "question_id": ["q1", "q2", "q3", "q4"],
            "conversation_a": [
                conv("hi", "# Title\n- one\n- two"),
                conv("x", "**bold** text"),
                conv("y", "plain"),
                conv("z", "1. a\n2. b"),
            ],
            "conversation_b": [conv("hi", "answer b"), conv("x", "b"), conv("y", "c"), conv("z", "d")],
        }
    )


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_lmarena_formats(tmp_path, suffix):
    df = _lmarena_frame()
    path = tmp_path / f"battles{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    elif suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.assign(
            conversation_a=df.conversation_a.map(json.dumps), conversation_b=df.conversation_b.map(json.dumps)
        ).to_csv(path, index=False)
    with Store.open(":memory:") as s:
        res = import_path(s, path, "lmarena")
        votes = s.votes_frame(res.dataset)
        comps = s.completions_frame(res.dataset, with_text=True)
    assert votes["winner"].tolist() == ["a", "both_bad", "b", "tie"]
    assert votes["y"].tolist() == [1.0, 0.5, 0.0, 0.5]
    assert set(votes["annotator"]) == {"ann1", "ann2", "ann3"}
    first = comps[comps["text"] == "# Title\n- one\n- two"].iloc[0]
    assert (first["n_headers"], first["n_list_items"]) == (1, 2)
    assert comps.loc[comps["text"] == "**bold** text", "n_bold"].iloc[0] == 1


# --------------------------------------------------------------- bad input
def _assert_rejected(store, path, fmt, *needles):
    before, token = store.info(), store.version_token()
    with pytest.raises(IngestError) as exc:
        import_path(store, path, fmt)
    msg = str(exc.value)
    assert str(path) in msg or path.name in msg
    for n in needles:
        assert n in msg, msg
    assert store.info() == before and store.version_token() == token
    return msg


def test_specific_errors_name_row_and_field(tmp_path, store_with_data):
    rows = _softelo_rows()
    bad = tmp_path / "bad_scores.csv"
    rows_bad = list(rows)
    rows_bad[4] = rows_bad[4].replace("'adherence': 8.0", "'adherence': eight")
    _write_softelo(bad, rows_bad)
    _assert_rejected(store_with_data, bad, "softelo", "row 5", "scores_a")

    missing = tmp_path / "missing_col.csv"
    missing.write_text(
        SOFTELO_HEADER.replace("judge_pref,", "")
        + "".join(r.split(",", 4)[0] + "," + ",".join(r.split(",")[1:4]) + "," + r.split(",", 5)[5] for r in rows)
    )
    _assert_rejected(store_with_data, missing, "softelo", "judge_pref")

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    _assert_rejected(store_with_data, empty, "softelo", "empty")

    latin = tmp_path / "latin1.csv"
    latin.write_bytes((SOFTELO_HEADER + "".join(rows)).encode() + 'r99,caf\xe9,m2,0,1,"{}","{}",en\n'.encode("latin-1"))
    _assert_rejected(store_with_data, latin, "softelo", "UTF-8")

    winner = tmp_path / "winner.csv"
    pd.DataFrame({"model_a": ["p", "q"], "model_b": ["q", "p"], "winner": ["model_a", "draw"]}).to_csv(
        winner, index=False
    )
    _assert_rejected(store_with_data, winner, "lmarena", "row 2", "winner", "draw")

    pq = tmp_path / "trunc.parquet"
    _lmarena_frame().to_parquet(pq)
    pq.write_bytes(pq.read_bytes()[: pq.stat().st_size // 2])
    _assert_rejected(store_with_data, pq, "lmarena", "Parquet")

    contests = tmp_path / "contests.csv"
    contests.write_text("judge,first,second,question_id,winner\nj,a,b,1,a\nj,a,b,2,c\n")
    _assert_rejected(store_with_data, contests, "contests", "row 2", "winner")


CORRUPTIONS = ["drop_column", "bad_score", "bad_pref", "non_utf8", "truncate", "same_model", "empty_name"]


# Each example is a whole import attempt against a stored dataset (~0.4 s): a small sample in `make check`, the
# full search in `make test` (the slow tier).
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(CORRUPTIONS), row=st.integers(0, 11), cut=st.floats(0.05, 0.95))
def test_any_corruption_is_rejected_and_changes_nothing(tmp_path, store_with_data, kind, row, cut):
    _corrupt_and_import(tmp_path, store_with_data, kind, row, cut)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(CORRUPTIONS), row=st.integers(0, 11), cut=st.floats(0.05, 0.95))
def test_any_corruption_is_rejected_and_changes_nothing_full(tmp_path, store_with_data, kind, row, cut):
    _corrupt_and_import(tmp_path, store_with_data, kind, row, cut)


def _corrupt_and_import(tmp_path, store_with_data, kind: str, row: int, cut: float) -> None:
    rows = _softelo_rows()
    text = SOFTELO_HEADER + "".join(rows)
    path = tmp_path / f"corrupt_{kind}.csv"
    if kind == "drop_column":
        df = pd.read_csv(pd.io.common.StringIO(text))
        df.drop(columns=[["model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b"][row % 6]]).to_csv(
            path, index=False
        )
    elif kind == "non_utf8":
        data = text.encode()
        pos = int(cut * len(data))
        path.write_bytes(data[:pos] + b"\xff\xfe" + data[pos:])
    elif kind == "truncate":
        # cut inside a row: a half row is missing fields or has a broken score dict
        body = "".join(rows[: row + 1])
        cut_at = len(SOFTELO_HEADER) + len("".join(rows[:row])) + max(3, int(cut * (len(rows[row]) - 12)))
        path.write_text((SOFTELO_HEADER + body)[:cut_at])
    else:
        r = rows[row]
        fields = r.rstrip("\n").split(",", 5)
        if kind == "bad_score":
            r = r.replace("'helpfulness': 7.5", "'helpfulness': None")
        elif kind == "bad_pref":
            fields[3] = "maybe"
            r = ",".join(fields) + "\n"
        elif kind == "same_model":
            fields[2] = fields[1]
            r = ",".join(fields) + "\n"
        elif kind == "empty_name":
            fields[1] = " "
            r = ",".join(fields) + "\n"
        rows[row] = r
        path.write_text(SOFTELO_HEADER + "".join(rows))
    _assert_rejected(store_with_data, path, "softelo")


# ------------------------------------------------------------------- CLI
def _cli(*args, cwd=ROOT):
    return run_cli(*args, cwd=cwd)


@pytest.mark.integration
def test_cli_import_info_export_exit_codes(tmp_path):
    db = tmp_path / "cli.duckdb"
    good = tmp_path / "good.csv"
    _write_softelo(good)
    r = _cli("import", "--db", str(db), "--format", "softelo", str(good), "--dataset", "g")
    assert r.returncode == 0, r.stderr
    info1 = _cli("info", "--db", str(db), "--json")
    assert info1.returncode == 0
    payload = json.loads(info1.stdout)
    assert payload["schema_version"] == SCHEMA_VERSION
    d = payload["datasets"][0]
    for key in (
        "name",
        "n_models",
        "n_prompts",
        "n_battles",
        "n_human_votes",
        "n_annotators",
        "n_completions",
        "judges",
    ):
        assert key in d
    assert d["judges"][0]["orders"] == ["avg"] and d["judges"][0]["n_judgments"] == 12

    bad = tmp_path / "bad.csv"
    _write_softelo(bad, _softelo_rows()[:3] + ['r9,m1,m2,0,1,"{\'x\': 1}","{}",en\n'])
    r = _cli("import", "--db", str(db), "--format", "softelo", str(bad))
    assert r.returncode == 2 and "row 4" in r.stderr and "Traceback" not in r.stderr
    assert json.loads(_cli("info", "--db", str(db), "--json").stdout) == payload

    for table in ("battles", "judgments"):
        out = tmp_path / f"{table}.parquet"
        r = _cli("export", "--db", str(db), "--dataset", "g", "--table", table, "--out", str(out))
        assert r.returncode == 0, r.stderr
        df = pd.read_parquet(out)
        assert len(df) == 12
    j = pd.read_parquet(tmp_path / "judgments.parquet")
    for col in ("battle_id", "judge", "order", "verdict", "a_adherence", "b_clarity", "parse_error"):
        assert col in j.columns
    r = _cli("export", "--db", str(db), "--dataset", "nope", "--table", "battles", "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 2 and "no dataset named 'nope'" in r.stderr


@pytest.mark.integration
def test_cli_corrupted_real_files_are_rejected(tmp_path):
    db = tmp_path / "real.duckdb"
    src = shared_path("softelo_sample_annotations.csv")
    assert _cli("import", "--db", str(db), "--format", "softelo", str(src)).returncode == 0
    before = _cli("info", "--db", str(db), "--json").stdout
    # each shared file, corrupted in a different way
    c1 = tmp_path / "softelo_bad.csv"
    lines = src.read_text().splitlines(keepends=True)
    lines[500] = lines[500].replace("'fluency': ", "'fluency': 'x")
    c1.write_text("".join(lines))
    c2 = tmp_path / "contests_bad.csv"
    clines = shared_path("judge_contests.csv").read_text().splitlines(keepends=True)[:2000]
    clines[1234] = clines[1234].rsplit(",", 1)[0] + ",nobody\n"
    c2.write_text("".join(clines))
    c3 = tmp_path / "ah_bad"
    shutil.copytree(shared_path("arena_hard_v0.1"), c3)
    ans = c3 / "model_answer" / "gpt-4-0314.jsonl"
    ans.write_bytes(ans.read_bytes()[:-5000])
    for fmt, path, needle in (("softelo", c1, "row 500"), ("contests", c2, "row 1234"), ("arena-hard", c3, "row")):
        r = _cli("import", "--db", str(db), "--format", fmt, str(path))
        assert r.returncode == 2, (fmt, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr
        assert _cli("info", "--db", str(db), "--json").stdout == before


@pytest.mark.integration
def test_dataset_names_are_validated_and_a_known_file_under_a_new_name_says_where_it_is(tmp_path):
    """#43: a dataset name is a field like any other; a file imported as 'a' and asked for as 'b' says so."""
    from tests.conftest import ROOT

    src = tmp_path / "votes.csv"
    src.write_text("model_a,model_b,winner\nx,y,model_a\ny,z,model_b\nx,z,tie\n")
    db = tmp_path / "s.duckdb"

    def cli(*args: str) -> CliResult:
        return run_cli(*args, cwd=ROOT)

    for bad in ("../../etc/passwd", "x" * 5000, " padded", "a\\b"):
        run = cli("import", "--db", str(db), str(src), "--dataset", bad)
        assert run.returncode == 2 and "field 'dataset'" in run.stderr and "cannot be used" in run.stderr, run.stderr
        assert not db.exists()
    assert cli("import", "--db", str(db), str(src), "--dataset", "a").returncode == 0
    run = cli("import", "--db", str(db), str(src), "--dataset", "b")
    assert run.returncode == 2 and "already in dataset 'a'" in run.stderr and "export" in run.stderr, run.stderr
    same = cli("import", "--db", str(db), str(src), "--dataset", "a")
    assert same.returncode == 0 and "nothing changed" in same.stderr
