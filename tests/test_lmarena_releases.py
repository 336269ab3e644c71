"""LMArena's public releases, each in its own layout, and multi-turn conversations kept whole.

Fixtures are written from the documented fields of each release (chatbot_arena_conversations,
arena-human-preference-55k / -100k / -140k); the judge prompt of a multi-turn battle must show every
turn of both conversations, in the order the run presents them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from core.app.data import import_path
from core.app.judging import plan_run
from core.ingest import IngestError
from core.ingest.detect import detect
from core.judging.config import from_mapping
from core.judging.prompts import render
from core.store import Store
from tests.conftest import ROOT


def _parts(text: str) -> list[dict]:
    """140k's message content: a list of typed parts."""
    return [{"type": "text", "text": text, "image": None, "mimeType": None}]


def _frame_55k() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [30192, 53567, 65089],
            "model_a": ["gpt-4-1106-preview", "koala-13b", "gpt-3.5-turbo-0613"],
            "model_b": ["gpt-4-0613", "gpt-4-0613", "mistral-medium"],
            "prompt": [
                json.dumps(["Is it morally right to kill mosquitoes?"]),
                json.dumps(["What is 2+2?", "And times 3?"]),
                json.dumps(["Say hi"]),
            ],
            "response_a": [
                json.dumps(["# Ethics\n- one view\n- another"]),
                json.dumps(["4", "12"]),
                json.dumps([None]),
            ],
            "response_b": [json.dumps(["It depends."]), json.dumps(["Four.", "Twelve."]), json.dumps(["hi"])],
            "winner_model_a": [1, 0, 0],
            "winner_model_b": [0, 1, 0],
            "winner_tie": [0, 0, 1],
        }
    )


def test_55k_one_hot_winners_and_turn_lists(tmp_path):
    path = tmp_path / "train.csv"
    _frame_55k().to_csv(path, index=False)
    assert detect(path) == "lmarena"
    with Store.open(":memory:") as s:
        res = import_path(s, path, "auto")
        votes = s.votes_frame(res.dataset)
        battles = s.battles_for_judging(res.dataset).set_index("battle_id")
    assert votes["winner"].tolist() == ["a", "b", "tie"]
    second = battles.iloc[1]
    assert second["prompt"] == "What is 2+2?"
    assert json.loads(second["prompt_turns"]) == ["What is 2+2?", "And times 3?"]
    assert json.loads(second["turns_a"]) == ["4", "12"] and second["text_a"] == "4\n\n12"
    assert json.loads(second["turns_b"]) == ["Four.", "Twelve."]
    assert battles.iloc[0]["prompt_turns"] is None or pd.isna(battles.iloc[0]["prompt_turns"])
    assert pd.isna(battles.iloc[2]["text_a"])  # a turn with no answer stays missing, not "None"


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("winner_tie", 1, "exactly one winner column must be 1"),
        ("winner_model_b", 7, "expected 0 or 1"),
        ("prompt", "[1, 2]", "a turn is not a text"),
        ("response_a", '["unterminated', "invalid JSON"),
    ],
)
def test_55k_bad_rows_name_row_and_field(tmp_path, column, value, needle):
    df = _frame_55k()
    df[column] = df[column].astype(object)
    df.loc[1, column] = value
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    with Store.open(":memory:") as s, pytest.raises(IngestError) as exc:
        import_path(s, path, "lmarena")
    msg = str(exc.value)
    assert "bad.csv" in msg and "row 2" in msg and needle in msg, msg
    field = "winner_model_a" if "exactly one" in needle else column
    assert field in msg, msg


def _frame_140k() -> pd.DataFrame:
    def conv(*turns: tuple[str, str]) -> list[dict]:
        out = []
        for q, a in turns:
            out += [{"role": "user", "content": _parts(q)}, {"role": "assistant", "content": _parts(a)}]
        return out

    return pd.DataFrame(
        {
            "id": ["c1", "c2"],
            "model_a": ["m1", "m2"],
            "model_b": ["m2", "m3"],
            "winner": ["both_bad", "model_a"],
            "conversation_a": [conv(("What is 2+2?", "4")), conv(("Name a colour", "Red"), ("Another", "Blue"))],
            "conversation_b": [conv(("What is 2+2?", "5")), conv(("Name a colour", "Green"), ("Another", "Teal"))],
            "language": ["en", "en"],
            "conv_metadata": [{"sum_assistant_a_tokens": 1}, {"sum_assistant_a_tokens": 2}],
        }
    )


def test_140k_content_parts_are_text_not_their_repr(tmp_path):
    path = tmp_path / "arena140k.parquet"
    _frame_140k().to_parquet(path)
    with Store.open(":memory:") as s:
        res = import_path(s, path, "auto")
        votes = s.votes_frame(res.dataset)
        b = s.battles_for_judging(res.dataset)
    assert votes["winner"].tolist() == ["both_bad", "a"]
    assert b["text_a"].tolist() == ["4", "Red\n\nBlue"] and b["text_b"].tolist() == ["5", "Green\n\nTeal"]
    assert json.loads(b["turns_b"].iloc[1]) == ["Green", "Teal"]
    assert b["language"].tolist() == ["en", "en"]


def _judge_cfg(template: str):
    return from_mapping({"name": "j", "model": "m", "base_url": "http://127.0.0.1:9/v1", "template": template})


@pytest.mark.parametrize("template", ["rubric", "ab-logprob", "two-stage"])
def test_the_judge_sees_every_turn_in_the_run_order(tmp_path, template):
    path = tmp_path / "arena140k.parquet"
    _frame_140k().to_parquet(path)
    with Store.open(tmp_path / "s.duckdb") as s:
        res = import_path(s, path, "lmarena")
        units = plan_run(s, res.dataset, _judge_cfg(template)).units
    multi = {u.order: u for u in units if u.turns is not None}
    assert set(multi) == {"ab", "ba"} and sum(u.turns is None for u in units) == 2  # the one-turn battle
    shown = {"ab": (("Red", "Blue"), ("Green", "Teal")), "ba": (("Green", "Teal"), ("Red", "Blue"))}
    for order, (first, second) in shown.items():
        u = multi[order]
        text = render(template, u.prompt, u.text_a, u.text_b, u.order, u.turns)[-1]["content"]
        spots = [text.index(x) for x in ("Name a colour", first[0], "Another", first[1])]
        assert spots == sorted(spots), text  # turn 1 before turn 2, question before answer
        a_end = text.index("[End of conversation with Assistant A]")
        assert text.index(first[1]) < a_end < text.index(second[0]) < text.index(second[1]), text
    single = next(u for u in units if u.turns is None)
    plain = render(template, single.prompt, single.text_a, single.text_b, single.order)[-1]["content"]
    assert (
        plain
        == render(template, single.prompt, single.text_a, single.text_b, single.order, single.turns)[-1]["content"]
    )


@pytest.mark.integration
def test_chatbot_arena_conversations_multi_turn_through_the_cli(tmp_path):
    rows = [
        {
            "question_id": "q1",
            "model_a": "a",
            "model_b": "b",
            "winner": "tie (bothbad)",
            "judge": "arena_user_1",
            "conversation_a": [
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "A1"},
                {"role": "user", "content": "two"},
                {"role": "assistant", "content": "A2"},
            ],
            "conversation_b": [
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "B1"},
                {"role": "user", "content": "two"},
                {"role": "assistant", "content": "B2"},
            ],
            "turn": 2,
            "language": "English",
            "tstamp": 1682351591.1322,
        }
    ]
    path = tmp_path / "conv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    db = tmp_path / "arena.duckdb"
    cmd = [sys.executable, "-m", "core", "import", "--db", str(db), str(path)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with Store.open(db, read_only=True) as s:
        b = s.battles_for_judging("conv").iloc[0]
    assert json.loads(b["prompt_turns"]) == ["one", "two"]
    assert (b["text_a"], b["text_b"]) == ("A1\n\nA2", "B1\n\nB2")
