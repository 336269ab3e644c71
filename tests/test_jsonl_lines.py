"""JSON Lines are split on "\\n" only (issue 37's first item): a JSON string may hold U+2028, U+2029, U+0085,
\\x0b, \\x0c or \\x1c–\\x1e unescaped, where ``str.splitlines`` would cut a valid record in two."""

from __future__ import annotations

import json

import pytest

from core.ingest.common import read_jsonl_lines
from core.text import json_lines
from tests.conftest import shared_path

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_separator_inside_a_string_stays_in_its_record(tmp_path, sep):
    records = [{"uid": "a", "prompt": f"one{sep}two"}, {"uid": "b", "prompt": "three"}]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records), encoding="utf-8")
    got = read_jsonl_lines(path)
    assert [(i, r) for i, r in got] == [(1, records[0]), (2, records[1])]  # line numbers are file lines


def test_line_numbers_count_blank_lines():
    assert json_lines('{"a": 1}\n\n{"b": 2}\n') == [(1, '{"a": 1}'), (2, ""), (3, '{"b": 2}'), (4, "")]


@pytest.mark.shared
def test_arena_hard_v2_questions_read_whole():
    path = shared_path("arena_hard_v2.0") / "question.jsonl"
    rows = read_jsonl_lines(path)  # was: "row 103: invalid JSON"
    assert len(rows) == 750 and [i for i, _ in rows] == list(range(1, 751))
    assert any("\u2028" in r["prompt"] for _, r in rows)
