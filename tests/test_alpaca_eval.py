"""AlpacaEval annotations.json: one battle per (instruction, generator_1, generator_2), each annotation a judgment.

Small files written here from the documented fields.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.app.data import import_path
from core.app.leaderboard import ratings
from core.ingest import IngestError, load
from core.ingest.detect import detect
from core.store import Store
from tests.conftest import ROOT

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
REF = "gpt4_turbo"
INSTRUCTIONS = [f"Instruction number {k}?" for k in range(5)]


def _ann(k, gen, pref, **over):
    rec = {
        "instruction": INSTRUCTIONS[k],
        "output_1": f"{REF} answers {k}",
        "generator_1": REF,
        "output_2": f"{gen} answers {k}",
        "generator_2": gen,
        "annotator": ANNOTATOR,
        "preference": pref,
        "dataset": "helpful_base" if k % 2 else "koala",
        "price_per_example": 0.01,
        "time_per_example": 1.2,
        "raw_completion": {"logprobs": [{"token": "m", "logprob": -0.1}]},
    }
    rec.update(over)
    return rec


def _records():
    strong = [1.9, 2.0, 1.7, 1.2, 1.95]  # output_2 (strong) better on 4 of 5
    weak = [1.1, 1.0, 1.5, 1.8, None]  # output_1 (the reference) better on 2, a tie, one loss, one failure
    return [_ann(k, "strong", p) for k, p in enumerate(strong)] + [_ann(k, "weak", p) for k, p in enumerate(weak)]


def _write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1))
    return path


def test_annotations_become_battles_with_p_a_and_verdicts(tmp_path):
    t = load(_write(tmp_path / "run" / "annotations.json", _records()), "alpaca-eval")
    assert len(t.battles) == 10 and len(t.judgments) == 10 and len(t.prompts) == 5
    assert len(t.completions) == 15  # the reference's answer to each instruction once, plus each model's
    assert set(t.battles["model_a"]) == {REF} and set(t.judges["judge"]) == {ANNOTATOR}
    assert set(t.judgments["order"]) == {"unknown"}  # AlpacaEval randomised the shown order and did not keep it
    j = t.judgments.merge(t.battles, on="battle_key")
    weak = j[j["model_b"] == "weak"].sort_values("prompt_key")
    assert weak["p_a"].round(6).tolist()[:4] == [0.9, 1.0, 0.5, 0.2]
    assert list(weak["verdict"].fillna("-")) == ["a", "a", "tie", "b", "-"]
    assert weak["parse_error"].tolist()[-1] == "no preference" and weak["p_a"].isna().tolist()[-1]
    strong = j[j["model_b"] == "strong"]
    assert (strong["verdict"] == "b").sum() == 4 and (strong["verdict"] == "a").sum() == 1
    assert json.loads(strong["raw_output"].iloc[0]) == {"logprobs": [{"token": "m", "logprob": -0.1}]}
    assert set(t.prompts["category"]) == {"helpful_base", "koala"}


def test_a_directory_holding_annotations_json_is_read_and_detected(tmp_path):
    f = _write(tmp_path / "run" / "annotations.json", _records())
    assert detect(f.parent) == "alpaca-eval" and detect(f) == "alpaca-eval"
    other = _write(tmp_path / "renamed.json", _records())  # recognised from its fields, whatever its name
    assert detect(other) == "alpaca-eval"
    assert load(f.parent, "alpaca-eval").name == "run"


@pytest.mark.integration
def test_the_cli_imports_with_auto_a_reimport_is_a_no_op_and_hard_elo_ranks_the_winner_first(tmp_path):
    f = _write(tmp_path / "run" / "annotations.json", _records())
    db = tmp_path / "s.duckdb"
    run = subprocess.run(
        [sys.executable, "-m", "core", "import", "--db", str(db), str(f), "--format", "auto", "--dataset", "ae"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    with Store.open(db) as s:
        again = import_path(s, f, "alpaca-eval", dataset="ae")
        info = next(d for d in s.info()["datasets"] if d["name"] == "ae")
        hard = ratings(s, "ae", "hard", judge=ANNOTATOR)
        judgments = s.judgments_frame("ae", ANNOTATOR)
    assert again.status == "already-imported" and info["n_battles"] == 10
    assert len(judgments) == 10 and judgments["p_a"].notna().sum() == 9
    order = list(hard.frame["model"])
    assert order.index("strong") < order.index(REF) < order.index("weak"), hard.frame


@pytest.mark.parametrize(
    "row, over, field",
    [
        (3, {"preference": 2.5}, "preference"),
        (4, {"preference": "1.5"}, "preference"),
        (2, {"preference": True}, "preference"),
        (5, {"generator_2": REF}, "generator_2"),
        (6, {"instruction": None}, "instruction"),
        (7, {"output_2": None}, "output_2"),
        (8, {"output_1": "a different reference answer"}, "output_1"),
        (9, {"annotator": ""}, "annotator"),
    ],
)
def test_a_bad_annotation_names_file_row_and_field_and_changes_no_store(tmp_path, row, over, field):
    good = _write(tmp_path / "good" / "annotations.json", _records())
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, good, "alpaca-eval", dataset="ae")
        before = s.info()["datasets"]
    recs = _records()
    recs[row - 1].update(over)
    bad = _write(tmp_path / "bad" / "annotations.json", recs)
    with Store.open(db) as s:
        with pytest.raises(IngestError) as err:
            import_path(s, bad, "alpaca-eval", dataset="ae2")
        after = s.info()["datasets"]
    assert (err.value.row, err.value.field) == (row, field) and err.value.path.endswith("annotations.json")
    assert f"annotations.json, row {row}, field '{field}'" in str(err.value)
    assert after == before


@pytest.mark.integration
def test_a_duplicate_annotation_is_refused_by_the_cli_and_creates_no_store(tmp_path):
    recs = _records()
    recs.append(dict(recs[1]))  # the same annotator, instruction and generators again
    f = _write(tmp_path / "annotations.json", recs)
    db = tmp_path / "s.duckdb"
    run = subprocess.run(
        [sys.executable, "-m", "core", "import", "--db", str(db), str(f)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 2 and "annotations.json, row 11, field 'instruction'" in run.stderr, run.stderr
    assert "row 2" in run.stderr and not db.exists()


def test_a_second_annotator_judges_the_same_battles(tmp_path):
    recs = _records() + [dict(r, annotator="alpaca_eval_gpt4", preference=1.5) for r in _records()]
    t = load(_write(tmp_path / "annotations.json", recs), "alpaca-eval", dataset="two")
    assert len(t.battles) == 10 and len(t.judgments) == 20
    assert sorted(t.judges["judge"]) == ["alpaca_eval_gpt4", ANNOTATOR]
    assert (t.judgments.loc[t.judgments["judge"] == "alpaca_eval_gpt4", "verdict"] == "tie").all()


def test_the_baselines_own_file_is_skipped_and_counted_and_ae1_draws_are_ties(tmp_path):
    recs = _records() + [_ann(k, REF, 1.5, output_2=f"{REF} answers {k}") for k in range(5)]
    recs[0]["preference"] = 0  # AlpacaEval 1's draw
    t = load(_write(tmp_path / "annotations.json", recs), "alpaca-eval")
    assert t.meta["skipped_self_comparisons"] == 5 and len(t.battles) == 10
    first = t.judgments.iloc[0]
    assert (first["verdict"], first["p_a"]) == ("tie", 0.5)
