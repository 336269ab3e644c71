"""`--format auto`: each layout is recognised from its fields; an unknown one gets the list of layouts tried."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from core.ingest import IngestError, formats
from core.ingest.detect import detect
from tests.cli import run_cli
from tests.conftest import ROOT, shared_path


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("softelo_sample_annotations.csv", "softelo"),
        ("judge_contests.csv", "contests"),
        ("arena_hard_v0.1", "arena-hard"),
        ("pandalm_testset_v1", "pandalm"),
        ("pandalm_testset_v1/testset-v1.json", "pandalm"),
    ],
)
def test_the_real_files_are_recognised(name, fmt):
    assert detect(shared_path(name)) == fmt


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_lmarena_battles_and_judgments_are_recognised_in_every_table_format(tmp_path, suffix):
    battles = pd.DataFrame({"question_id": ["q1"], "model_a": ["x"], "model_b": ["y"], "winner": ["model_a"]})
    judgments = pd.DataFrame({"question_id": ["q1"], "judge": ["j"], "order": ["ab"], "winner": ["model_a"]})
    for frame, fmt in ((battles, "lmarena"), (judgments, "arena-judgments")):
        path = tmp_path / f"{fmt}{suffix}"
        if suffix == ".parquet":
            frame.to_parquet(path)
        elif suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_json(path, orient="records", lines=True)
        assert detect(path) == fmt


def test_an_unknown_layout_lists_every_layout_tried_and_what_it_lacked(tmp_path):
    path = tmp_path / "mystery.csv"
    path.write_text("prompt,answer\nhi,hello\n")
    with pytest.raises(IngestError) as err:
        detect(path)
    message = str(err.value)
    for fmt in formats.FORMATS:
        assert fmt.name in message
    assert "field(s) model_a, model_b, winner" in message and "'answer'" in message and "mystery.csv" in message


@pytest.mark.integration
def test_the_cli_imports_with_auto_by_default_and_refuses_an_unknown_layout(tmp_path):
    good = tmp_path / "b.jsonl"
    good.write_text(json.dumps({"model_a": "x", "model_b": "y", "winner": "tie"}) + "\n")
    db = tmp_path / "s.duckdb"
    ok = run_cli("import", "--db", str(db), str(good), cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    assert "1 battles, 1 votes" in ok.stdout
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    other = tmp_path / "t.duckdb"
    run = run_cli("import", "--db", str(other), str(bad), cwd=ROOT)
    assert run.returncode == 2 and "no known layout matches" in run.stderr and not other.exists()
