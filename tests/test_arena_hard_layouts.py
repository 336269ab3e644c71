"""Arena-Hard-Auto answers in both published layouts: the original v0.1 (FastChat's ``choices[0].turns``) and
the current one (``messages[-1].content``, with ``{thought, answer}`` content)."""

from __future__ import annotations

import json

import pytest

from core.ingest import IngestError, load


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _questions(root):
    _jsonl(
        root / "question.jsonl",
        [
            {"question_id": "q1", "category": "arena-hard-v0.1", "cluster": "c", "turns": [{"content": "2+2?"}]},
            {"question_id": "q2", "category": "arena-hard-v0.1", "cluster": "c", "turns": [{"content": "Hi?"}]},
        ],
    )


def test_the_original_v01_layout_reads_the_answers_from_choices_turns(tmp_path):
    root = tmp_path / "ah"
    _questions(root)
    for model, answers in (("gpt-4-0314", ["4", "Hello"]), ("my-model", ["four", "Hey"])):
        _jsonl(
            root / "model_answer" / f"{model}.jsonl",
            [
                {"question_id": q, "answer_id": "x", "model_id": model, "choices": [{"index": 0, "turns": [a]}]}
                for q, a in zip(("q1", "q2"), answers)
            ],
        )
    t = load(root, "arena-hard")
    texts = {(r.model, r.prompt_key): r.text for r in t.completions.itertuples()}
    assert texts == {
        ("gpt-4-0314", 0): "4",
        ("gpt-4-0314", 1): "Hello",
        ("my-model", 0): "four",
        ("my-model", 1): "Hey",
    }
    assert len(t.battles) == 2 and set(t.models["model"]) == {"gpt-4-0314", "my-model"}


def test_the_current_layout_keeps_the_answer_apart_from_the_thought(tmp_path):
    root = tmp_path / "ah"
    _questions(root)
    for model in ("a", "b"):
        _jsonl(
            root / "model_answer" / f"{model}.jsonl",
            [
                {
                    "uid": q,
                    "model": model,
                    "messages": [
                        {"role": "user", "content": "?"},
                        {"role": "assistant", "content": {"thought": "long reasoning", "answer": f"{model}-{q}"}},
                    ],
                }
                for q in ("q1", "q2")
            ],
        )
    t = load(root, "arena-hard")
    assert sorted(t.completions["text"]) == ["a-q1", "a-q2", "b-q1", "b-q2"]


def test_an_answer_without_either_layout_names_row_and_field(tmp_path):
    root = tmp_path / "ah"
    _questions(root)
    _jsonl(root / "model_answer" / "m.jsonl", [{"question_id": "q1", "model_id": "m", "choices": []}])
    with pytest.raises(IngestError) as err:
        load(root, "arena-hard")
    assert err.value.row == 1 and err.value.field == "choices" and "m.jsonl" in str(err.value)
