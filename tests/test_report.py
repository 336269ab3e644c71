"""The hand-out report and the exports: self-contained, with the context and provenance they promise."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from core.app import export
from core.app.leaderboard import export_table, view_for
from core.app.report import report_context, report_html
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def demo_db(demo_store):
    return demo_store


@pytest.mark.integration
def test_cli_report_is_self_contained_and_carries_its_provenance(demo_db, tmp_path):
    out = tmp_path / "report.html"
    done = run_cli(
        "report",
        "--db",
        str(demo_db),
        "--dataset",
        "demo",
        "--judge",
        "judge-strong",
        "--tau",
        "1.2",
        "--alpha",
        "0.2",
        "--out",
        str(out),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    # offline: no script, stylesheet or image is fetched from anywhere (links inside the embedded plotly.js
    # source are strings, not resources, so the check reads the markup outside the scripts)
    markup = re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)
    assert not re.search(r'(src|href)="(https?:)?//', markup) and "<script src" not in html
    assert html.count("plotly.js v") == 1  # the library is embedded once; every chart follows it
    for needed in (
        "data fingerprint",
        "judge configuration",
        "code version",
        "generated",
        "α</dt><dd>0.20",
        "τ fixed in every fold",
        "Calibration of the judge",
        "Caveats",
    ):
        assert needed in html, needed
    assert "τ fixed at 1.2 in every fold" in html  # the coverage statement follows the chosen τ
    with Store.open(demo_db, read_only=True) as s:
        assert s.provenance("demo")["fingerprint"] in html


@pytest.mark.integration
def test_cli_report_rejects_bad_arguments_without_writing(demo_db, tmp_path):
    for args, message in (
        (["--out", str(tmp_path / "r.pdf")], "expected an .html"),
        (["--out", str(tmp_path / "r.html"), "--tau", "-1"], "--tau must be positive"),
        (["--out", str(tmp_path / "r.html"), "--alpha", "1.5"], "α must be in (0, 1)"),
    ):
        done = run_cli("report", "--db", str(demo_db), "--dataset", "demo", *args, cwd=ROOT)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    assert not list(tmp_path.iterdir())


def test_a_human_only_report_ranks_by_human_elo_with_ties(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        html = report_html(s, "demo", None, alpha=0.1)
    assert "human Elo" in html and ("statistically tied" in html or "ahead of every other" in html)
    assert "judge configuration" not in html


def test_exports_carry_context_and_sensible_precision(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        view, _ = view_for(s, "demo", "judge-strong", None, 0.1)
    table = export_table(view)
    context = report_context("demo", "judge-strong", view.tau, 0.1)
    csv = export.to_csv(table)  # a plain table: its context goes to a sidecar (tests/test_report_document.py)
    back = pd.read_csv(io.StringIO(csv))
    assert list(back.columns) == list(table.columns) and len(back) == len(table)
    assert pd.api.types.is_integer_dtype(back["human Elo"])  # ±17 Elo intervals: whole Elo points, not 13 decimals
    md = export.to_markdown(table, context=context)
    assert md.startswith("- dataset: demo\n- judge: judge-strong\n") and "| rank | model |" in md
    tex = export.to_latex(table, caption="Leaderboard", context=context)
    assert r"\caption{Leaderboard; dataset: demo; judge: judge-strong; tau:" in tex
