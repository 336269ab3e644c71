"""FastChat MT-Bench directories: one battle per (question, model pair, turn), two games per pair judgment.

The fixtures are small directories written here from FastChat's documented
fields (fastchat/llm_judge/data/mt_bench/).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from core.app.data import import_path
from core.ingest import IngestError, load
from core.ingest.detect import detect
from core.store import Store
from tests.conftest import ROOT

MODELS = ("vicuna-13b", "llama-13b", "alpaca-13b", "gpt-3.5-turbo")
QUESTIONS = {
    81: ("writing", ["Write a travel blog post about Hawaii.", "Rewrite it starting every sentence with A."]),
    101: ("reasoning", ["You overtake the second person. What is your position?", "And if the last person?"]),
    121: ("coding", ["Write a program that counts words.", "Can you parallelize it?"]),
}


def _answer(model: str, qid: int, turn: int) -> str:
    return f"{model} answer to {qid} turn {turn}"


def _pair(qid, m1, m2, g1, g2, turn=1, judge="gpt-4", **over):
    prompt = "pair-v2" if turn == 1 else "pair-v2-multi-turn"
    rec = {
        "question_id": qid,
        "model_1": m1,
        "model_2": m2,
        "g1_winner": g1,
        "g2_winner": g2,
        "judge": [judge, prompt],
        "g1_user_prompt": "[User Question] ...",
        "g1_judgment": f"g1 says {g1}: [[{'A' if g1 == 'model_1' else 'B'}]]",
        "g2_user_prompt": "[User Question] ...",
        "g2_judgment": f"g2 says {g2}",
        "turn": turn,
        "tstamp": 1687222000.5,
    }
    rec.update(over)
    return rec


def _single(qid, model, score, turn=1, judge="gpt-4"):
    return {
        "question_id": qid,
        "model": model,
        "judge": [judge, "single-v1" if turn == 1 else "single-v1-multi-turn"],
        "user_prompt": "...",
        "judgment": f"Rating: [[{score}]]",
        "score": score,
        "turn": turn,
        "tstamp": 1687222000.0,
    }


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


PAIRS = [
    # model_2 wins both games: verdict 'b' in both orders (model_a = model_1)
    _pair(81, "vicuna-13b", "llama-13b", "model_2", "model_2"),
    _pair(81, "vicuna-13b", "alpaca-13b", "model_1", "tie"),
    _pair(101, "gpt-3.5-turbo", "llama-13b", "model_1", "error"),
    _pair(81, "vicuna-13b", "llama-13b", "model_1", "model_2", turn=2),
    _pair(121, "alpaca-13b", "gpt-3.5-turbo", "tie", "tie", turn=2),
]
# a second judge names one pair the other way round: the same battle, orders swapped
OTHER = [_pair(81, "llama-13b", "vicuna-13b", "model_1", "model_1", judge="palm-2")]
SINGLES = [
    _single(81, "vicuna-13b", 8),
    _single(81, "llama-13b", 9),
    _single(81, "alpaca-13b", 8),
    _single(101, "gpt-3.5-turbo", -1),
    _single(101, "llama-13b", 4),
    _single(121, "vicuna-13b", 7),  # meets no pair battle
]


def _write(root, pairs=PAIRS, other=OTHER, singles=SINGLES, answers=None):
    _jsonl(
        root / "question.jsonl",
        [{"question_id": q, "category": c, "turns": t} for q, (c, t) in QUESTIONS.items()],
    )
    for model in MODELS:
        recs = answers.get(model) if answers and model in answers else None
        if recs is None:
            recs = [
                {
                    "question_id": q,
                    "answer_id": f"{model}-{q}",
                    "model_id": model,
                    "choices": [{"index": 0, "turns": [_answer(model, q, 1), _answer(model, q, 2)]}],
                    "tstamp": 1687000000.0,
                }
                for q in QUESTIONS
            ]
        _jsonl(root / "model_answer" / f"{model}.jsonl", recs)
    if pairs is not None:  # [] writes the empty file FastChat leaves
        _jsonl(root / "model_judgment" / "gpt-4_pair.jsonl", pairs)
    if other:
        _jsonl(root / "model_judgment" / "palm-2_pair.jsonl", other)  # read after gpt-4's
    if singles:
        _jsonl(root / "model_judgment" / "gpt-4_single.jsonl", singles)
    return root


def _cli(db, path, *extra):
    return subprocess.run(
        [sys.executable, "-m", "core", "import", "--db", str(db), str(path), "--format", "auto", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_battles_games_and_verdicts_in_battle_terms(tmp_path):
    t = load(_write(tmp_path / "mt_bench"), "fastchat-mtbench")
    b = t.battles
    # five pair battles; the swapped palm-2 record joins the first, never a sixth
    assert len(b) == 5 and b["battle_key"].tolist() == [0, 1, 2, 3, 4]
    assert sorted(b["turn"].tolist()) == [1, 1, 1, 2, 2]
    assert set(t.models["model"]) == set(MODELS)
    j = t.judgments
    pair = j[j["judge"] == "gpt-4"]
    assert len(pair) == 10  # two games per record
    first = pair[pair["battle_key"] == 0].set_index("order")
    assert (b.loc[0, "model_a"], b.loc[0, "model_b"]) == ("vicuna-13b", "llama-13b")
    assert first.loc["ab", "verdict"] == "b" and first.loc["ba", "verdict"] == "b"
    assert first.loc["ab", "prompt_version"] == "pair-v2"
    assert first.loc["ab", "raw_output"].startswith("g1 says") and first.loc["ba", "raw_output"].startswith("g2 says")
    second = pair[pair["battle_key"] == 1].set_index("order")
    assert second.loc["ab", "verdict"] == "a" and second.loc["ba", "verdict"] == "tie"
    # an "error" game is kept with its text and no verdict
    err = pair[(pair["battle_key"] == 2) & (pair["order"] == "ba")].iloc[0]
    assert pd.isna(err["verdict"]) and "error" in err["parse_error"] and err["raw_output"] == "g2 says error"
    # the other judge's record names llama-13b first: its g1 showed the battle's model_b first
    other = j[j["judge"] == "palm-2"].set_index("order")
    assert len(other) == 2 and set(other["battle_key"]) == {0}
    assert other.loc["ba", "verdict"] == "b" and other.loc["ab", "verdict"] == "b"  # model_1 = llama-13b = b
    assert other.loc["ba", "raw_output"].startswith("g1 says")


def test_single_grades_compare_the_two_sides_of_pair_battles(tmp_path):
    t = load(_write(tmp_path / "mt_bench"), "fastchat-mtbench")
    single = t.judgments[t.judgments["judge"] == "gpt-4-single"].set_index("battle_key")
    # battle 0 (vicuna 8 vs llama 9), battle 1 (vicuna 8 vs alpaca 8), battle 2 (gpt-3.5 -1 vs llama 4)
    assert sorted(single.index) == [0, 1, 2] and set(single["order"]) == {"ab"}
    assert single.loc[0, "verdict"] == "b" and single.loc[1, "verdict"] == "tie"
    assert pd.isna(single.loc[2, "verdict"]) and "score -1" in single.loc[2, "parse_error"]
    assert (
        json.loads(single.loc[0, "raw_output"])["score_a"] == 8
        and json.loads(single.loc[0, "raw_output"])["score_b"] == 9
    )
    assert t.meta["single_grades_used"] == 3 and t.meta["single_grades_unused"] == 1


def test_turn_two_keeps_both_turns_of_prompt_and_answers(tmp_path):
    t = load(_write(tmp_path / "mt_bench"), "fastchat-mtbench")
    p = t.prompts.set_index("prompt_key")
    b = t.battles.set_index("battle_key")
    turn1, turn2 = b.loc[0, "prompt_key"], b.loc[3, "prompt_key"]
    assert turn1 != turn2
    assert p.loc[turn1, "text"] == QUESTIONS[81][1][0] and pd.isna(p.loc[turn1, "turns"])
    assert p.loc[turn2, "text"] == QUESTIONS[81][1][0] and json.loads(p.loc[turn2, "turns"]) == QUESTIONS[81][1]
    c = t.completions.set_index(["prompt_key", "model"])
    one, two = c.loc[(turn1, "vicuna-13b")], c.loc[(turn2, "vicuna-13b")]
    assert one["text"] == _answer("vicuna-13b", 81, 1) and pd.isna(one["turns"])
    both = [_answer("vicuna-13b", 81, 1), _answer("vicuna-13b", 81, 2)]
    assert json.loads(two["turns"]) == both and two["text"] == "\n\n".join(both)
    assert two["length"] == len(two["text"])
    # one prompt per (question, turn) and one completion per (prompt, model); a grade outside the battles (121 at
    # turn 1) brings its prompt
    assert len(t.prompts) == 5 and not t.completions.duplicated(["prompt_key", "model"]).any()


@pytest.mark.integration
def test_auto_detects_it_and_the_cli_imports_it_once(tmp_path):
    root = _write(tmp_path / "mt_bench")
    assert detect(root) == "fastchat-mtbench"
    db = tmp_path / "s.duckdb"
    run = _cli(db, root)
    assert run.returncode == 0, run.stderr
    with Store.open(db, read_only=True) as s:
        info = next(d for d in s.info()["datasets"] if d["name"] == "mt_bench")
        judgments = s.judgments_frame("mt_bench")
        frame = s.battle_frame("mt_bench")
        turns = s._cur().execute("SELECT count(*) FROM prompts WHERE turns IS NOT NULL").fetchone()[0]
    assert info["n_battles"] == 5 and len(judgments) == 10 + 2 + 3 and turns == 2
    assert frame["completion_a"].notna().all() and frame["completion_b"].notna().all()
    again = _cli(db, root)
    assert again.returncode == 0, again.stderr
    with Store.open(db) as s:
        assert import_path(s, root, "fastchat-mtbench").status == "already-imported"
        assert len(s.datasets()) == 1 and len(s.judgments_frame("mt_bench")) == 15


def test_grades_without_pair_judgments_form_a_dataset_without_battles(tmp_path):
    root = _write(tmp_path / "mt_bench", pairs=None, other=None)
    assert detect(root) == "fastchat-mtbench"
    t = load(root, "fastchat-mtbench")
    assert t.battles.empty and t.judgments is None and t.grades is not None and len(t.grades) == 6
    assert set(t.grades["model"]) <= set(t.models["model"]) and t.grades["score"].isna().sum() == 1


def test_answers_without_any_judgments_are_refused(tmp_path):
    root = _write(tmp_path / "mt_bench", pairs=[], other=None, singles=None)
    with pytest.raises(IngestError, match="no judgments"):
        load(root, "fastchat-mtbench")


def test_the_same_games_twice_are_a_repeat_not_an_error(tmp_path):
    root = _write(tmp_path / "mt_bench", pairs=[PAIRS[0], PAIRS[0]], other=None, singles=None)
    j = load(root, "fastchat-mtbench").judgments
    assert sorted(j["variant"]) == ["original", "original", "repeat-1", "repeat-1"]


@pytest.mark.integration
@pytest.mark.parametrize(
    "pairs, row, field",
    [
        ([PAIRS[0], {k: v for k, v in PAIRS[1].items() if k != "model_2"}], 2, "model_2"),  # missing field
        ([PAIRS[0], _pair(81, "vicuna-13b", "alpaca-13b", "model_3", "tie")], 2, "g1_winner"),  # bad winner
        ([PAIRS[0], _pair(81, "vicuna-13b", "alpaca-13b", "tie", "tie", turn="two")], 2, "turn"),  # not an int
        ([PAIRS[0], _pair(81, "vicuna-13b", "alpaca-13b", "tie", "tie", turn=1.5)], 2, "turn"),
        ([PAIRS[0], _pair(81, "vicuna-13b", "vicuna-13b", "tie", "tie")], 2, "model_2"),  # battles itself
        ([PAIRS[0], _pair(81, "vicuna-13b", "alpaca-13b", "tie", "tie", turn=3)], 2, "turn"),  # no third turn
    ],
)
def test_a_bad_pair_judgment_names_file_row_and_field_and_writes_nothing(tmp_path, pairs, row, field):
    root = _write(tmp_path / "mt_bench", pairs=pairs, other=None, singles=None)
    with pytest.raises(IngestError) as err:
        load(root, "fastchat-mtbench")
    assert err.value.row == row and err.value.field == field and "gpt-4_pair.jsonl" in str(err.value)
    db = tmp_path / "s.duckdb"
    run = _cli(db, root)
    assert run.returncode == 2 and f"row {row}, field '{field}'" in run.stderr and not db.exists()


def test_a_malformed_json_line_names_its_line(tmp_path):
    root = _write(tmp_path / "mt_bench")
    path = root / "model_judgment" / "gpt-4_pair.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestError) as err:
        load(root, "fastchat-mtbench")
    assert err.value.row == 3 and "gpt-4_pair.jsonl" in str(err.value) and "invalid JSON" in str(err.value)


def test_a_bad_answer_row_is_left_out_with_a_note_and_a_bad_grade_refuses(tmp_path):
    """The answers are extras (FastChat's show_result never reads them): a row that cannot be read is left out
    and named by file, row and field in the notes; the grades are the score, so a bad one refuses the import."""
    broken = {
        "llama-13b": [
            {"question_id": 81, "model_id": "llama-13b", "choices": [{"turns": ["a", "b"]}]},
            {"question_id": 101, "model_id": "llama-13b", "choices": [{"turns": "not a list"}]},
        ]
    }
    t = load(_write(tmp_path / "a", answers=broken), "fastchat-mtbench")
    note = next(n for n in t.meta["notes"] if "left out" in n)
    assert "llama-13b.jsonl" in note and "row 2" in note and "'choices'" in note
    assert len(t.battles) == len(PAIRS)  # every pair battle kept, with or without llama's text
    assert t.meta["battles_without_answers"] == 1  # 101: gpt-3.5-turbo vs llama-13b
    with pytest.raises(IngestError) as err:
        load(_write(tmp_path / "b", singles=[*SINGLES, _single(81, "llama-13b", 11)]), "fastchat-mtbench")
    assert (err.value.row, err.value.field) == (7, "score") and "gpt-4_single.jsonl" in str(err.value)


def test_models_are_named_by_the_answer_files_stem_not_their_model_id(tmp_path):
    renamed = {
        "llama-13b": [
            {
                "question_id": q,
                "model_id": "meta/llama-13b-hf",
                "choices": [{"turns": [_answer("llama-13b", q, 1)] * 2}],
            }
            for q in QUESTIONS
        ]
    }
    t = load(_write(tmp_path / "mt_bench", answers=renamed), "fastchat-mtbench")
    assert "meta/llama-13b-hf" not in set(t.models["model"]) and "llama-13b" in set(t.models["model"])
    assert (t.completions["model"] == "llama-13b").sum() > 0 and t.meta["battles_without_answers"] == 0
    assert any("model_id 'meta/llama-13b-hf'" in n and "'llama-13b'" in n for n in t.meta["notes"])


def test_answers_in_a_subfolder_answer_to_their_stem_and_to_their_path(tmp_path):
    root = _write(tmp_path / "mt_bench")
    (root / "model_answer" / "org").mkdir()
    (root / "model_answer" / "llama-13b.jsonl").rename(root / "model_answer" / "org" / "llama-13b.jsonl")
    (root / "model_answer" / "vicuna-13b.jsonl").rename(root / "model_answer" / "org" / "vicuna-13b.jsonl")
    pairs = [*PAIRS[:3], _pair(101, "org/vicuna-13b", "alpaca-13b", "model_1", "model_1")]
    _jsonl(root / "model_judgment" / "gpt-4_pair.jsonl", pairs)
    t = load(root, "fastchat-mtbench")
    assert detect(root) == "fastchat-mtbench"
    named = set(t.completions["model"])
    assert {"llama-13b", "vicuna-13b", "org/vicuna-13b"} <= named  # each as the judgments name it
    assert t.meta["battles_without_answers"] == 0


def test_a_question_answered_twice_keeps_the_last_answer_as_fastchat_does(tmp_path):
    twice = {
        "vicuna-13b": [
            {"question_id": 81, "model_id": "vicuna-13b", "choices": [{"turns": ["first try", "first try 2"]}]},
            {"question_id": 81, "model_id": "vicuna-13b", "choices": [{"turns": ["second try", "second try 2"]}]},
        ]
    }
    t = load(_write(tmp_path / "mt_bench", answers=twice), "fastchat-mtbench")
    mine = t.completions[t.completions["model"] == "vicuna-13b"]
    assert set(mine["text"]) <= {"second try", "second try\n\nsecond try 2"} and len(mine) > 0
    assert any("given again" in n and "last one is kept" in n for n in t.meta["notes"])


def test_a_directory_of_judgments_alone_is_read_as_fastchats_show_result_reads_it(tmp_path):
    full = load(_write(tmp_path / "full"), "fastchat-mtbench")
    bare = tmp_path / "bare"
    (bare / "model_judgment").mkdir(parents=True)
    for f in (tmp_path / "full" / "model_judgment").iterdir():
        (bare / "model_judgment" / f.name).write_bytes(f.read_bytes())
    assert detect(bare) == "fastchat-mtbench"
    t = load(bare, "fastchat-mtbench")
    # the same battles, verdicts and grades; no texts, and the notes say so
    assert len(t.battles) == len(full.battles) and len(t.judgments) == len(full.judgments)
    pd.testing.assert_series_equal(t.grades["score"], full.grades["score"])
    assert t.completions is None and t.prompts["text"].isna().all()
    assert any("no question.jsonl" in n for n in t.meta["notes"]) and any(
        "no model_answer/" in n for n in t.meta["notes"]
    )
    db = tmp_path / "s.duckdb"
    run = _cli(db, bare)
    assert run.returncode == 0, run.stderr


def test_a_pair_judgment_of_a_model_without_answers_keeps_its_verdicts(tmp_path):
    root = _write(tmp_path / "mt_bench", pairs=[PAIRS[0], _pair(81, "vicuna-13b", "nobody-7b", "model_2", "tie")])
    t = load(root, "fastchat-mtbench")
    assert "nobody-7b" in set(t.models["model"]) and t.meta["battles_without_answers"] == 1
    b = t.battles.set_index("battle_key")
    nobody = t.judgments[t.judgments["battle_key"] == b.index[b["model_b"] == "nobody-7b"][0]]
    assert sorted(nobody["verdict"]) == ["b", "tie"]


def test_an_arena_hard_directory_is_still_arena_hard(tmp_path):
    root = tmp_path / "ah"
    _jsonl(root / "question.jsonl", [{"question_id": "abc", "turns": [{"content": "hi"}]}])
    _jsonl(root / "model_answer" / "m.jsonl", [{"question_id": "abc", "choices": [{"turns": [{"content": "x"}]}]}])
    assert detect(root) == "arena-hard"
