"""Table export (core/export.py): what a reader of the Markdown / LaTeX / CSV gets back."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from core.app import export


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {"model": ["gpt_4 & co", "50% | bot"], "rank": [1.0, 2.0], "elo": [1234.56, np.nan], "verified": [True, False]}
    )


def _markdown_cells(text: str) -> list[list[str]]:
    """Split a Markdown table back into cells (honouring escaped pipes)."""
    rows = []
    for line in text.strip().splitlines():
        parts = line.strip().strip("|").replace(r"\|", "\0").split("|")
        rows.append([p.strip().replace("\0", "|") for p in parts])
    return rows


def test_markdown_round_trips_cells_escapes_pipes_and_formats_numbers():
    rows = _markdown_cells(export.to_markdown(_table(), digits=1))
    assert rows[0] == ["model", "rank", "elo", "verified"]
    assert rows[1] == [":---", "---:", "---:", ":---"]
    assert rows[2] == ["gpt_4 & co", "1", "1234.6", "yes"]
    assert rows[3] == ["50% | bot", "2", "", "no"]  # a missing Elo is an empty cell, not 'nan'


def test_latex_escapes_specials_and_marks_missing_values():
    tex = export.to_latex(_table(), digits=2, caption="Top 10% & more", label="tab:lb")
    body = tex.splitlines()
    assert body[2] == r"\begin{tabular}{lrrl}"
    assert r"gpt\_4 \& co & 1 & 1234.56 & yes \\" in body
    assert r"50\% | bot & 2 & -- & no \\" in body
    assert r"\caption{Top 10\% \& more}" in body and r"\label{tab:lb}" in body
    assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") == 1


def test_latex_escape_of_every_special_character():
    assert export.latex_escape("a\\b{c}~d^e#f$g") == (
        r"a\textbackslash{}b\{c\}\textasciitilde{}d"
        r"\textasciicircum{}e\#f\$g"
    )


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6), min_size=1, max_size=8)
)
def test_csv_keeps_full_precision(values):
    df = pd.DataFrame({"x": values})
    back = pd.read_csv(io.StringIO(export.to_csv(df)))
    np.testing.assert_array_equal(back["x"].to_numpy(float), np.asarray(values, float))


def test_markdown_has_one_line_per_row_even_with_newlines_in_text():
    df = pd.DataFrame({"note": ["two\nlines", "one"], "n": [3, 4]})
    lines = export.to_markdown(df).strip().splitlines()
    assert len(lines) == 2 + len(df)
    assert lines[2] == "| two lines | 3 |"


def test_every_export_format_redacts_a_secret_in_a_cell_or_the_context(monkeypatch):
    # a judge's raw output or an endpoint's error can carry a key into a table cell; every file a reader
    # downloads passes through the redaction step, whatever its format
    key = "sk-export-7f3a9c1e5b2d4f60"
    monkeypatch.setenv("JUDGE_API_KEY", key)
    df = pd.DataFrame({"model": ["m1", "m2"], "note": [f"401 for key {key}", "ok"]})
    context = {"base_url": f"https://api.example/v1?key={key}"}
    outputs = {
        "csv": export.to_csv(df),
        "markdown": export.to_markdown(df, context=context),
        "latex": export.to_latex(df, context=context),
        "provenance": export.provenance_json(context, df, "table.csv"),
    }
    for name, text in outputs.items():
        assert key not in text, name
    assert "m1" in outputs["csv"] and "401 for key" in outputs["csv"]  # the rest of the cell is kept
