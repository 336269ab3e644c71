"""The report as a document one can email: printed to A4 / Letter, named for what it holds, in its own words;
CSV exports that are plain tables with their provenance beside them."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.app import export
from core.app import report as report_mod
from core.app.leaderboard import display_table, export_table, view_for
from core.app.report import build_report, report_context, report_file_name, report_html
from core.cli import main as cli_main
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
A4_CONTENT_PX = round((210 - 22) / 25.4 * 96)  # A4 less the report's 11 mm side margins, at 96 px/in

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"
)


@pytest.fixture(scope="module")
def demo_db(demo_store) -> Path:
    return demo_store


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory) -> Path:
    """The small arena with 40 models: a table longer than a page (the whole table used to move to page 2)."""
    path = tmp_path_factory.mktemp("document_wide") / "wide.duckdb"
    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, dataclasses.replace(DemoConfig.small(), n_models=40)))
    return path


def _words(text: str) -> str:
    return " ".join(text.split())


def _squeezed(text: str) -> str:
    """Text without any whitespace: a header wrapped over two lines in print ("Soft-" / "Elo") reads whole."""
    return "".join(text.split())


def _markup(html: str) -> str:
    """The report without its scripts (plotly.js's own strings are not the report's words)."""
    return re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)


def _pdf_pages(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages]


# ------------------------------------------------------------------ print
@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_printed_report_holds_headline_figures_and_table_top_on_page_one(wide_db, tmp_path, paper):
    pytest.importorskip("pypdf")
    from playwright.sync_api import sync_playwright

    with Store.open(wide_db, read_only=True) as s:
        doc = build_report(s, "demo", "judge-strong", None, 0.1)
        view, _ = view_for(s, "demo", "judge-strong", None, 0.1)
    page_file = tmp_path / doc.file_name()
    page_file.write_text(doc.html, encoding="utf-8")
    table = display_table(view)
    top10 = [str(m) for m in view.table["model"].head(10)]

    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            pg = chrome.new_page(viewport={"width": A4_CONTENT_PX, "height": 1100})
            pg.goto(page_file.as_uri())
            pg.emulate_media(media="print")
            # both charts drawn: their SVG carries tick labels
            pg.wait_for_function("document.querySelectorAll('.chart .main-svg .ytick text').length > 0")
            pg.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 2")
            assert pg.locator(".modebar-btn").count() == 0  # no toolbar to print

            # the table as wide as the page at most (headers and names wrap rather than run off the edge)
            widths = pg.evaluate(
                """() => { const t = document.querySelector('table.leaderboard');
                           return [t.getBoundingClientRect().right, document.body.getBoundingClientRect().right]; }"""
            )
            assert widths[0] <= widths[1] + 0.5, widths

            # the leaderboard chart: every top-10 model is a whole tick label inside the figure
            ticks = pg.evaluate(
                """() => { const fig = document.querySelector('.chart .js-plotly-plot');
                           const box = fig.querySelector('.main-svg').getBoundingClientRect();
                           return [...fig.querySelectorAll('.ytick text, .xtick text, .g-xtitle text, .g-ytitle text')]
                             .map(t => { const r = t.getBoundingClientRect();
                                         return {text: t.textContent, left: r.left - box.left,
                                                 right: box.right - r.right, width: r.width}; }); }"""
            )
            labels = {t["text"] for t in ticks}
            assert set(top10) <= labels, set(top10) - labels
            cut = [t for t in ticks if t["left"] < -0.5 or t["right"] < -0.5 or t["width"] == 0]
            assert not cut, cut
            fig_right = pg.evaluate("document.querySelector('.chart .main-svg').getBoundingClientRect().right")
            assert fig_right <= widths[1] + 0.5  # the chart fits the page too

            pdf = pg.pdf(format=paper, prefer_css_page_size=False)
        finally:
            chrome.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"report_{paper}.pdf").write_bytes(pdf)

    pages = _pdf_pages(pdf)
    first = _words(pages[0])
    assert _words(view.headline() or "") in first
    assert f"{len(view.table)} models" in first  # the key figures
    flat = _squeezed(pages[0])
    for header in table.columns:
        assert _squeezed(str(header)) in flat, header  # every column header whole, "Δ rank" included
    rows = [
        " ".join("—" if pd.isna(v) else str(v) for v in row)
        for row in table.astype(object).itertuples(index=False, name=None)
    ]
    whole_rows = [r for r in rows if _squeezed(r) in flat]
    assert len(whole_rows) >= 10, (len(whole_rows), first[:800])
    assert _squeezed(rows[0]) in flat  # the top of the table, last column included


@pytest.mark.integration
@pytest.mark.browser
@needs_chromium
def test_cli_prints_the_report_to_pdf_named_for_what_it_holds(demo_db, tmp_path):
    pytest.importorskip("pypdf")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "report",
            "--db",
            str(demo_db),
            "--dataset",
            "demo",
            "--judge",
            "judge-strong",
            "--tau",
            "1.2",
            "--format",
            "pdf",
            "--paper",
            "letter",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "report_demo_judge-strong_tau1.2_alpha0.10.pdf"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    from pypdf import PdfReader

    reader = PdfReader(out)
    box = reader.pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (612, 792)  # Letter, as asked
    first = _words(reader.pages[0].extract_text())
    with Store.open(demo_db, read_only=True) as s:
        view, _ = view_for(s, "demo", "judge-strong", 1.2, 0.1)
    assert _words(view.headline() or "") in first and "Δ rank" in first


def test_pdf_without_chromium_exits_2_with_a_clear_message(demo_db, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv(report_mod.CHROMIUM_ENV, raising=False)
    monkeypatch.setattr(report_mod, "CHROMIUM_DIRS", (str(empty),))
    out = tmp_path / "out"
    out.mkdir()
    code = cli_main(
        ["report", "--db", str(demo_db), "--dataset", "demo", "--judge", "judge-strong", "--format", "pdf"]
        + ["--out", str(out / "r.pdf")]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "headless Chromium" in err and "none was found" in err and "apt-get install chromium" in err, err
    assert "--format html" in err  # what to do instead
    assert not list(out.iterdir())

    # a browser named by the environment that is not there: the same exit, naming it
    monkeypatch.setenv(report_mod.CHROMIUM_ENV, str(empty / "chrome"))
    code = cli_main(["report", "--db", str(demo_db), "--dataset", "demo", "--format", "pdf", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and f"{report_mod.CHROMIUM_ENV}={empty / 'chrome'}" in err, err
    assert not list(out.iterdir())


# ------------------------------------------------------------------ names
@pytest.mark.integration
def test_file_names_carry_dataset_judge_tau_and_alpha_and_are_safe(demo_db, tmp_path):
    names = {
        report_file_name("demo", "judge-strong", tau, alpha) for tau in (0.477, 0.48, 1.2) for alpha in (0.1, 0.05, 0.2)
    }
    assert len(names) == 9  # every τ/α pair its own file
    assert report_file_name("demo", "judge-strong", 0.477, 0.1) == "report_demo_judge-strong_tau0.477_alpha0.10.html"
    assert report_file_name("demo", None, None, 0.1, ".pdf") == "report_demo_alpha0.10.pdf"
    odd = report_file_name("org/arena 55k", "../judge: v2", 0.5, 0.1)
    assert "/" not in odd and " " not in odd and ":" not in odd and not odd.startswith(".")
    assert odd == "report_org-arena-55k_judge-v2_tau0.5_alpha0.10.html"

    # the CLI's default name is the same name, with the τ the report is drawn at (here the fitted one)
    done = subprocess.run(
        [sys.executable, "-m", "core", "report", "--db", str(demo_db), "--dataset", "demo"]
        + ["--judge", "judge-strong", "--alpha", "0.2"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    with Store.open(demo_db, read_only=True) as s:
        fitted = build_report(s, "demo", "judge-strong", None, 0.2).tau
    assert fitted is not None
    assert [p.name for p in tmp_path.iterdir()] == [f"report_demo_judge-strong_tau{fitted:.3g}_alpha0.20.html"]


# ------------------------------------------------------------------ τ caveat
def _independent_tau(gap: np.ndarray, y: np.ndarray) -> float:
    """Maximum-likelihood τ of P(humans prefer a) = σ(τ·gap) by bisection on the score equation."""
    ok = np.isfinite(gap) & ((y == 0) | (y == 1))
    g, t = gap[ok], y[ok]

    def score(tau: float) -> float:
        return float(np.sum(g * (t - 1 / (1 + np.exp(-tau * g)))))

    lo, hi = 1e-4, 50.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if score(mid) > 0 else (lo, mid)
    return math.sqrt(lo * hi)


def _independent_ece(gap: np.ndarray, y: np.ndarray, tau: float, bins: int = 10) -> float:
    """ECE of the soft targets σ(τ|gap|) on the judge's side: equal-mass bins over battles both decisive."""
    ok = np.isfinite(gap) & (gap != 0) & ((y == 0) | (y == 1))
    conf = 1 / (1 + np.exp(-tau * np.abs(gap[ok])))
    right = ((gap[ok] > 0) == (y[ok] == 1)).astype(float)
    order = np.argsort(conf, kind="stable")
    conf, right = conf[order], right[order]
    n = len(conf)
    which = np.minimum(np.arange(n) * bins // n, bins - 1)
    return float(
        sum(abs(right[which == b].mean() - conf[which == b].mean()) * (which == b).sum() / n for b in range(bins))
    )


@pytest.mark.slow
def test_tau_caveat_appears_exactly_when_tau_is_not_the_fitted_one_with_both_eces(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        frame = s.battle_frame("demo", "judge-strong")
        fitted_doc = report_html(s, "demo", "judge-strong", None, 0.1)
        chosen_doc = report_html(s, "demo", "judge-strong", 1.2, 0.1)
        fitted_tau = build_report(s, "demo", "judge-strong", None, 0.1).tau
        assert fitted_tau is not None
        same_doc = report_html(s, "demo", "judge-strong", fitted_tau, 0.1)  # the fitted τ, given by hand
    gap, y = frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float)
    tau_hat = _independent_tau(gap, y)
    assert abs(tau_hat - fitted_tau) < 1e-4

    caveat = re.compile(r'<div class="note tau">(.*?)</div>', re.S)
    assert not caveat.findall(fitted_doc) and not caveat.findall(same_doc)
    found = caveat.findall(chosen_doc)
    assert len(found) == 1
    text = re.sub(r"<[^>]+>", "", found[0])
    m = re.search(r"ECE\) of ([0-9.]+) at the chosen τ and ([0-9.]+) at the fitted τ", text)
    assert m, text
    assert f"fitted τ = {tau_hat:.3f}" in text and "τ = 1.2 was chosen" in text
    assert abs(float(m.group(1)) - _independent_ece(gap, y, 1.2)) <= 0.0006
    assert abs(float(m.group(2)) - _independent_ece(gap, y, tau_hat)) <= 0.0006
    assert float(m.group(1)) > float(m.group(2))  # the judge's scores are calibrated at the fitted τ, not at 1.2

    # the report's own words: what τ is, not which control set it
    markup = _markup(chosen_doc)
    assert f"τ = 1.2 (chosen; the fitted τ is {tau_hat:.3f})" in markup
    assert "slider" not in markup.lower() and "sidebar" not in markup.lower()
    assert "chosen τ = 1.2" in markup  # the reliability curve at the chosen τ, by that name
    assert f"τ = {fitted_tau:.3g} (fitted)" in _markup(fitted_doc)


# ------------------------------------------------------------------ CSV
@pytest.mark.integration
def test_csv_export_is_a_plain_table_with_a_provenance_sidecar(demo_db, tmp_path):
    with Store.open(demo_db, read_only=True) as s:
        view, _ = view_for(s, "demo", "judge-strong", None, 0.1)
    table = export_table(view)
    context = report_context("demo", "judge-strong", view.tau, 0.1)
    csv = export.to_csv(table)
    assert not [line for line in csv.splitlines() if line.startswith("#")]
    assert csv.splitlines()[0].split(",")[:2] == ["rank", "model"]
    back = pd.read_csv(io.StringIO(csv))  # no comment= needed: header then rows
    assert list(back.columns) == list(table.columns) and len(back) == len(table)
    side = json.loads(export.provenance_json(context, table, file="leaderboard.csv"))
    assert side["file"] == "leaderboard.csv" and side["dataset"] == "demo" and side["judge"] == "judge-strong"
    assert side["tau"] == f"{view.tau:.3g}" and side["alpha"] == "0.10" and side["code"] and side["exported"]
    assert side["columns"] == list(table.columns) and side["rows"] == len(table)
    # Markdown and LaTeX keep their context in the file
    assert export.to_markdown(table, context=context).startswith("- dataset: demo\n")
    assert "dataset: demo" in export.to_latex(table, caption="Leaderboard", context=context)

    # the CLI: the CSV alone in its file, the provenance beside it
    out = tmp_path / "battles.csv"
    done = subprocess.run(
        [sys.executable, "-m", "core", "export", "--db", str(demo_db), "--dataset", "demo"]
        + ["--table", "battles", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert not text.startswith("#") and "\n#" not in text
    rows = pd.read_csv(out)
    sidecar = json.loads((tmp_path / "battles.json").read_text())
    with Store.open(demo_db, read_only=True) as s:
        prov = s.provenance("demo")
    assert sidecar["file"] == "battles.csv" and sidecar["table"] == "battles" and sidecar["dataset"] == "demo"
    assert sidecar["data fingerprint"] == prov["fingerprint"] and sidecar["code"]
    assert sidecar["rows"] == len(rows) and sidecar["columns"] == list(rows.columns)


@pytest.fixture(scope="module")
def full_db(tmp_path_factory) -> Path:
    """The demo arena as ``make run`` builds it (48 models): its table spilled three rows onto page 2."""
    path = tmp_path_factory.mktemp("document_full") / "full.duckdb"
    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, DemoConfig()))
    return path


def _filled(pdf: Path) -> list[float]:
    """Each page's share of its height that holds text, top line to bottom line (chart labels included)."""
    from pypdf import PdfReader

    shares = []
    for page in PdfReader(pdf).pages:
        ys: list[float] = []

        def seen(text: str, cm: list[float], tm: list[float], *_: object, ys: list[float] = ys) -> None:
            if text.strip():
                ys.append(tm[5] * cm[3] + cm[5])  # the baseline, in page coordinates

        page.extract_text(visitor_text=seen)
        shares.append((max(ys) - min(ys)) / float(page.mediabox.height) if ys else 0.0)
    return shares


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("store", ["full_db", "wide_db"])
@pytest.mark.parametrize("paper", ["letter", "a4"])
def test_no_page_but_the_last_is_near_empty(store, paper, request, tmp_path):
    """Issue 45: a table spilling three rows left them alone on page 2, the chart of every model on page 3."""
    pytest.importorskip("pypdf")
    db = request.getfixturevalue(store)
    cmd = [sys.executable, "-m", "core", "report", "--db", str(db), "--dataset", "demo", "--judge", "judge-strong"]
    done = subprocess.run(
        [*cmd, "--format", "pdf", "--paper", paper, "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (pdf,) = tmp_path.iterdir()
    shares = _filled(pdf)
    assert len(shares) >= 2 and all(s >= 0.4 for s in shares[:-1]), [round(s, 2) for s in shares]


@pytest.mark.browser
@needs_chromium
@pytest.mark.shared
@pytest.mark.parametrize("paper", ["letter", "a4"])
@pytest.mark.parametrize(
    ("source", "fmt", "judge"),
    [
        ("pandalm_testset_v1", "pandalm", "gpt-3.5-turbo"),
        ("alpaca_eval_2/results/claude-2/weighted_alpaca_eval_gpt4_turbo/annotations.json", "alpaca-eval", None),
    ],
)
def test_a_short_report_leaves_no_page_to_a_few_lines(source, fmt, judge, paper, tmp_path):
    """Issue 45: PandaLM's report (5 models) put its last two to eight provenance lines alone on page 2,
    because its chart was drawn 450 px tall for five rows."""
    pytest.importorskip("pypdf")
    from core.app.data import import_path
    from tests.conftest import shared_path

    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        dataset = import_path(s, shared_path(source), fmt).dataset
        judge = judge or str(s.judges_frame(dataset)["judge"].iloc[0])
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "core", "report", "--db", str(db), "--dataset", dataset, "--judge", judge]
    done = subprocess.run(
        [*cmd, "--format", "pdf", "--paper", paper, "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (pdf,) = out.iterdir()
    shares = _filled(pdf)
    assert all(s >= 0.25 for s in shares), [round(s, 2) for s in shares]  # no page holds only a few lines
