"""The PandaLM test set: one battle per (prompt, response1, response2), three human votes on each, two judges.

The real files come from ``../shared/datasets/pandalm_testset_v1``; the error
cases use small files written here from the documented fields.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.app import Unavailable
from core.app.data import import_path
from core.app.leaderboard import ratings, view_for
from core.ingest import IngestError, load
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT, shared_path
from tests.test_app import APP


@pytest.fixture(scope="module")
def pandalm(tmp_path_factory):
    path = shared_path("pandalm_testset_v1")
    db = tmp_path_factory.mktemp("pandalm") / "p.duckdb"
    with Store.open(db) as s:
        result = import_path(s, path, "pandalm")
    return db, path, result


def test_the_real_file_imports_as_999_battles_with_2997_votes_and_two_judges(pandalm):
    db, path, result = pandalm
    raw = json.loads((path / "testset-v1.json").read_text())
    with Store.open(db, read_only=True) as s:
        info = next(d for d in s.info()["datasets"] if d["name"] == "pandalm")
        votes = s.votes_frame("pandalm")
        judgments = s.judgments_frame("pandalm", include_raw=True)
        battles = s.battle_frame("pandalm")
    assert info["n_battles"] == 999 and info["n_human_votes"] == 2997 and info["n_annotators"] == 3
    assert len(judgments) == 1998 and sorted(judgments["judge"].unique()) == ["gpt-3.5-turbo", "pandalm-7b"]
    # every battle carries its three labels as three votes, never three battles
    assert votes.groupby("battle_id").size().eq(3).all()
    by_idx = {str(r["idx"]): r for r in raw}
    first = battles.iloc[0]
    rec = by_idx[str(first["external_id"])]
    assert (first["model_a"], first["model_b"]) == tuple(rec["cmp_key"].split("_"))
    mine = votes[votes["battle_id"] == first["battle_id"]].sort_values("annotator")
    assert list(mine["winner"]) == [{0: "tie", 1: "a", 2: "b"}[rec[f"annotator{k}"]] for k in (1, 2, 3)]
    # gpt-3.5-turbo's unparseable answers are kept with their text, not dropped or guessed
    gpt = judgments[judgments["judge"] == "gpt-3.5-turbo"]
    garbage = sum(
        1
        for r in json.loads((path / "gpt-3.5-turbo-testset-v1.json").read_text())
        if str(r["gpt_result"]).strip().lower() not in {"1", "2", "tie", "0"}
    )
    assert garbage > 0 and int(gpt["parse_error"].notna().sum()) == garbage
    assert gpt.loc[gpt["parse_error"].notna(), "raw_output"].str.len().gt(0).all()
    # response-level agreement with the source: the judge saw response1 first
    assert set(judgments["order"]) == {"ab"}


def test_a_second_import_is_a_no_op(pandalm):
    db, path, _ = pandalm
    with Store.open(db) as s:
        again = import_path(s, path, "pandalm")
        info = next(d for d in s.info()["datasets"] if d["name"] == "pandalm")
    assert again.status == "already-imported" and info["n_battles"] == 999


def test_answers_the_json_spells_as_true_are_stored_as_the_text_true(pandalm):
    db, path, _ = pandalm
    raw = json.loads((path / "testset-v1.json").read_text())
    literal = [r for r in raw if r["response1"] is True or r["response2"] is True]
    assert literal  # six in the real file
    with Store.open(db, read_only=True) as s:
        comps = s.completions_frame("pandalm", with_text=True)
    assert (comps["text"] == "True").sum() >= len(literal)


def test_the_human_and_both_judges_leaderboards_have_intervals(pandalm):
    db, _, _ = pandalm
    with Store.open(db, read_only=True) as s:
        human = ratings(s, "pandalm", "human", ci="sandwich")
        views = {j: view_for(s, "pandalm", j, None, 0.2)[0] for j in ("gpt-3.5-turbo", "pandalm-7b")}
    assert not isinstance(human, Unavailable)
    f = human.frame
    assert len(f) == 5 and np.isfinite(f[["lower", "upper"]].to_numpy()).all()
    assert int(f["n_votes"].sum()) == 2 * 2997  # every vote counts, on both sides of its battle
    assert int(f["n_battles"].sum()) == 2 * 999 and (human.n_battles, human.n_votes) == (999, 2997)
    for judge, view in views.items():
        assert view.table["hard_elo"].notna().sum() == 5, judge


@pytest.mark.integration
@pytest.mark.parametrize(
    "page", ["app_pages/leaderboard.py", "app_pages/calibration.py", "app_pages/bias.py", "app_pages/judges.py"]
)
def test_the_pages_draw_pandalm(pandalm, page, monkeypatch):
    db, _, _ = pandalm
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("empty" in e.value.lower() for e in at.error)


# ------------------------------------------------------------------ bad input
def _write_set(root, battles, judges=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "testset-v1.json").write_text(json.dumps(battles))
    for name, recs in (judges or {}).items():
        (root / f"{name}-testset-v1.json").write_text(json.dumps(recs))
    return root


def _battle(idx=0, **over):
    rec = {
        "idx": idx,
        "motivation_app": "Grammarly",
        "cmp_key": "llama-7b_opt-7b",
        "instruction": "Say hi.",
        "input": "",
        "response1": "hi",
        "response2": "hello",
        "annotator1": 1,
        "annotator2": 2,
        "annotator3": 0,
    }
    rec.update(over)
    return rec


@pytest.mark.parametrize(
    "bad, row, field",
    [
        ({"annotator2": 3}, 2, "annotator2"),
        ({"annotator1": True}, 2, "annotator1"),
        ({"cmp_key": "llama-7b"}, 2, "cmp_key"),
        ({"cmp_key": "opt-7b_opt-7b"}, 2, "cmp_key"),
        ({"response2": None}, 2, "response2"),
        ({"idx": -1}, 2, "idx"),
        ({"idx": 0}, 2, "idx"),  # a duplicate of the first battle's idx
    ],
)
def test_a_bad_battle_names_file_row_and_field(tmp_path, bad, row, field):
    root = _write_set(tmp_path / "set", [_battle(0), {**_battle(1), **bad}])
    with pytest.raises(IngestError) as err:
        load(root, "pandalm")
    assert err.value.row == row and err.value.field == field and "testset-v1.json" in str(err.value)


@pytest.mark.integration
def test_a_verdict_for_an_unknown_battle_is_refused_and_nothing_is_written(tmp_path):
    root = _write_set(
        tmp_path / "set",
        [_battle(0)],
        {"judge-x": [{"idx": 0, "x_result": "1", "x_reason": "r"}, {"idx": 7, "x_result": "2"}]},
    )
    db = tmp_path / "s.duckdb"
    run = run_cli("import", "--db", str(db), "--format", "pandalm", str(root), cwd=ROOT)
    assert run.returncode == 2 and "judge-x-testset-v1.json, row 2, field 'idx'" in run.stderr
    assert not db.exists()  # a rejected import creates nothing


def test_a_small_set_with_a_judge_imports_votes_and_verdicts(tmp_path):
    root = _write_set(
        tmp_path / "set",
        [_battle(0), _battle(1, cmp_key="opt-7b_llama-7b", annotator1=2, annotator2=2, annotator3=2)],
        {"judge-x": [{"idx": 0, "x_result": "Tie", "x_reason": "same"}, {"idx": 1, "x_result": "no idea"}]},
    )
    t = load(root, "pandalm")
    assert (
        len(t.battles) == 2
        and len(t.votes) == 6
        and set(t.votes["annotator"])
        == {
            "annotator1",
            "annotator2",
            "annotator3",
        }
    )
    assert list(t.judgments["verdict"].fillna("-")) == ["tie", "-"]
    assert t.judgments["parse_error"].notna().tolist() == [False, True]
    assert t.judgments["raw_output"].iloc[0] == "Tie\nsame"


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_a_verdict_only_judge_gets_a_hard_label_reliability(pandalm, judge):
    """No score gap, so no τ: the Calibration page shows how often unanimous humans agree with the verdicts."""
    from core.app.calibration import label_reliability

    db, _, result = pandalm
    with Store.open(db, read_only=True) as s:
        frame = s.battle_frame(result.dataset, judge)
    hard, smooth = label_reliability(frame, 0.75)
    decisive_human = frame["human_y"].isin([0.0, 1.0])
    decisive_judge = frame["judge_hard"].isin([0.0, 1.0])
    both = frame[decisive_human & decisive_judge]
    agree = float((both["human_y"] == both["judge_hard"]).mean())
    assert hard.n == smooth.n == len(both) > 500
    assert hard.accuracy == pytest.approx(agree) and smooth.accuracy == pytest.approx(agree)
    assert hard.ece == pytest.approx(1 - agree)  # one bin at confidence 1
    assert smooth.ece == pytest.approx(abs(agree - 0.75))  # one bin at confidence q
