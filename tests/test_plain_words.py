"""Every page in plain words: no identifier of the code, no scientific notation, no process command line on a
page; pages that can only show a notice are marked in the sidebar, and their notice says what would make them work.

The scan reads what a reader sees: text (markdown, captions, notices, titles, metrics), table headers as shown
(a ``column_config`` label replaces the data's column name) and the cells of text columns, and in each chart its
title, axis titles, legend names, annotations and categories.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.app import display
from core.app.data import import_path
from core.store import Store
from core.store.errors import lock_message
from tests.conftest import ROOT, shared_path

APP = str(ROOT / "app.py")
PAGES = ["overview", "calibration", "residuals", "bias", "selective", "judges", "analyses", "evaluate"]

# Identifiers of the code that must never reach a reader, anywhere in what a page shows (matched as whole
# words, case-sensitive, after markdown escapes are removed).  Add one when a page is found showing it.
RAW_IDENTIFIERS = [
    # Residuals: label-smoothing baselines
    "ls_0.55",
    "ls_0.65",
    "ls_0.75",
    "ls_0.85",
    "ls_0.95",
    # Judge bias: style features, echo variants, the style-controlled table
    "log_length",
    "list_items",
    "echo_a",
    "echo_b",
    "rank_raw",
    "rank_controlled",
    "elo_raw",
    "elo_controlled",
    # Selective judging
    "model_a",
    "model_b",
    "p_fwd",
    "p_rev",
    "p_bar",
    "human_a",
    "judge_right",
    "auroc",
    "auprc",
    # Analyses
    "kendall_lo",
    "kendall_hi",
    "kd_lo",
    "kd_hi",
    "kendall_distance",
    "non_discriminative",
    "n_battles",
    "n_models",
    "n_decisive",
    "hard_mae",
    "soft_spearman",
    "tau_sd_across_folds",
    "bradley_terry",
    "win_rate",
    # Evaluate a model
    "evaluation_id",
    "created_at",
    "battle_id",
    "has_human_vote",
    # Judges & annotators, Overview
    "n_contests",
    "first_position_win_rate",
    "n_human_votes",
    "n_judgments",
    "n_parse_errors",
    "true_elo",
    # a process's command line or a CLI flag in a notice
    "--db",
]
# Identifiers that are also words: raw only when one is a whole label (a column header, a cell of a name column,
# a legend entry, a chart category).
RAW_LABELS = [
    "hard",
    "soft",
    "alpha",
    "scope",
    "ltt",
    "naive",
    "heuristic",
    "vanilla",
    "single",
    "original",
    "logprob",
    "ece",
    "mae",
    "spearman",
    "kendall",
    "headers",
]
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")
RAW = [re.compile(rf"(?<![\w.-]){re.escape(raw)}(?![\w-])") for raw in RAW_IDENTIFIERS]


# ------------------------------------------------------------------ stores
@pytest.fixture(scope="module")
def demo_db(demo_store):
    return str(demo_store)


@pytest.fixture(scope="module")
def pandalm_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("plain") / "pandalm.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("pandalm_testset_v1"), "pandalm")
    return str(path)


@pytest.fixture(scope="module")
def softelo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("plain") / "softelo.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("softelo_sample_annotations.csv"), "softelo")
    return str(path)


@pytest.fixture(scope="module")
def evaluated_db(tmp_path_factory):
    """The demo with one model's votes removed and its standing saved as an evaluation (the Evaluate page's
    table, selector and escalations)."""
    from core.app import Unavailable
    from core.app.evaluate import evaluation_row, model_escalations
    from core.app.judging import RunOutcome
    from core.app.leaderboard import human_ratings
    from core.app.newmodel import BattlePlan, Standing, plan_battles, standing
    from core.judging.runner import RunStats
    from tests.test_evaluations import demo_with_an_unrated_model

    path = tmp_path_factory.mktemp("plain") / "evaluated.duckdb"
    new = demo_with_an_unrated_model(path)
    with Store.open(path) as s:
        plan = plan_battles(s, "demo", new, 10)
        assert isinstance(plan, BattlePlan)
        placed = standing(s, "demo", "judge-strong", new, alpha=0.2)
        assert isinstance(placed, Standing), placed
        esc = model_escalations(s, "demo", "judge-strong", new, 0.2)
        human = human_ratings(s, "demo")
        assert not isinstance(human, Unavailable)
        row = evaluation_row(
            "judge-strong", 0.2, plan, 0, RunOutcome(None, RunStats(status="nothing")), placed, esc, human.frame
        )
        s.save_evaluation("demo", row)
    return str(path)


def _page(db: str, page: str, monkeypatch) -> AppTest:
    monkeypatch.setenv("ARENA_DB", db)
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


# ------------------------------------------------------------------- what a reader sees
def _texts(at: AppTest) -> Iterator[tuple[str, str]]:
    """(where, text) of every text element, markdown escapes removed."""
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error"):
        for e in getattr(at, kind):
            yield kind, str(e.value).replace("\\", "")
    for m in at.metric:
        yield "metric", f"{m.label}: {m.value}"


def _tables(at: AppTest) -> Iterator[tuple[str, list[str], list[str]]]:
    """(where, headers as shown, text cells) of every table."""
    for k, d in enumerate(at.dataframe):
        config = json.loads(d.proto.columns or "{}")
        frame = d.value
        headers = []
        for c in frame.columns:
            conf = config.get(str(c), {})
            if not conf.get("hidden"):
                headers.append(str(conf.get("label") or c))
        cells = [v for c in frame.columns if frame[c].dtype == object for v in frame[c] if isinstance(v, str)]
        yield f"table {k}", headers, cells


def _axis_title(axis: dict) -> str:
    title = axis.get("title")
    return str(title.get("text") or "") if isinstance(title, dict) else str(title or "")


def _charts(at: AppTest) -> Iterator[tuple[str, list[str], list[str]]]:
    """(where, texts, labels) of every chart: titles, axis titles and annotations; legend names and categories."""
    for k, c in enumerate(at.get("plotly_chart")):
        spec = json.loads(c.proto.spec)
        layout = spec.get("layout", {})
        texts = [_axis_title({"title": layout.get("title")})]
        texts += [_axis_title(v) for name, v in layout.items() if name.startswith(("xaxis", "yaxis"))]
        texts += [str(a.get("text") or "") for a in layout.get("annotations", [])]
        labels = []
        for trace in spec.get("data", []):
            if trace.get("name"):
                labels.append(str(trace["name"]))
            for attr in ("x", "y", "text"):
                values = trace.get(attr)
                if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
                    labels += values
        yield f"chart {k} ({texts[0][:40]})", texts, labels


def raw_words(at: AppTest) -> list[str]:
    """Every raw identifier, scientific-notation number and raw label a page shows, with where."""
    found = []

    def scan(where: str, text: str) -> None:
        found.extend(f"{where}: {rx.pattern} in {text[:160]!r}" for rx in RAW if rx.search(text))
        found.extend(f"{where}: scientific notation in {text[:160]!r}" for _ in SCIENTIFIC.findall(text))

    for where, text in _texts(at):
        scan(where, text)
    for where, headers, cells in _tables(at):
        for h in headers:
            scan(f"{where} header", h)
            if h in RAW_LABELS:
                found.append(f"{where}: raw header {h!r}")
        for cell in cells:
            if cell in RAW_LABELS:
                found.append(f"{where}: raw cell {cell!r}")
            found.extend(f"{where}: {rx.pattern} in cell {cell!r}" for rx in RAW if rx.fullmatch(cell))
    for where, texts, labels in _charts(at):
        for t in texts:
            scan(where, t)
        for label in labels:
            if label in RAW_LABELS or any(rx.fullmatch(label) for rx in RAW):
                found.append(f"{where}: raw label {label!r}")
    return found


def _sidebar_marks(at: AppTest) -> str:
    notes = [c.value for c in at.sidebar.caption if c.value.startswith("Not available on this dataset")]
    return notes[0] if notes else ""


# ------------------------------------------------------------------ tests
@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("store", ["demo_db", "pandalm_db", "softelo_db"])
def test_no_page_shows_a_raw_identifier_or_scientific_notation(store, page, request, monkeypatch):
    at = _page(request.getfixturevalue(store), page, monkeypatch)
    assert raw_words(at) == []


@pytest.mark.integration
@pytest.mark.parametrize("view", ["Aggregation methods", "Languages"])
def test_the_other_analyses_are_in_plain_words_too(view, demo_db, monkeypatch):
    at = _page(demo_db, "analyses", monkeypatch)
    at.segmented_control(key="analysis").set_value(view).run()
    assert not at.exception and not at.error
    assert at.dataframe, "the analysis drew its table"
    assert raw_words(at) == []


@pytest.mark.integration
def test_budget_curves_are_computed_when_asked_and_in_plain_words(demo_db, monkeypatch):
    at = _page(demo_db, "analyses", monkeypatch)
    at.segmented_control(key="analysis").set_value("Budget curves").run()
    assert not at.get("plotly_chart") and any("press the button" in c.value for c in at.caption)
    at.multiselect(key="budgets").set_value([25, 50]).run()
    at.button(key="run_budget").click().run()
    assert not at.exception and not at.error
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) == 2 and at.dataframe, "both budget charts and the τ table are drawn"
    assert raw_words(at) == []


@pytest.mark.integration
def test_a_saved_evaluation_is_shown_in_plain_words(evaluated_db, monkeypatch):
    at = _page(evaluated_db, "evaluate", monkeypatch)
    headers = [h for _, hs, _ in _tables(at) for h in hs]
    assert "evaluation" in headers and "α" in headers and "started" in headers
    assert "uncertainty (nats)" in headers  # the escalations
    assert raw_words(at) == []


@pytest.mark.integration
def test_residuals_name_every_method_in_words(softelo_db, monkeypatch):
    at = _page(softelo_db, "residuals", monkeypatch)
    table = next(d.value for d in at.dataframe if "method" in d.value.columns)
    assert list(table["method"][:3]) == ["Hard-Elo", "Soft-Elo", "label smoothing (q = 0.55)"]
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "width = 2" in c.proto.spec)
    points = next(t for t in chart["data"] if t.get("mode") == "markers+text")
    assert "label smoothing (q = 0.95)" in points["text"] and "ls_0.95" not in points["text"]
    at.slider(key="alpha").set_value(0.3).run()  # enough models per split: the split evaluation is drawn
    assert not at.exception and not at.error
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    boxes = next(f for f in specs if "random calibration/test splits" in f["layout"]["title"]["text"])
    names = {t["name"] for t in boxes["data"] if t.get("type") == "box"}
    assert {"Hard-Elo", "Soft-Elo", "label smoothing (q = 0.75)"} <= names
    assert raw_words(at) == []


@pytest.mark.integration
def test_the_m_elo_spread_is_said_in_plain_notation(softelo_db, monkeypatch):
    at = _page(softelo_db, "judges", monkeypatch)
    line = next(c.value for c in at.caption if "(m-ELO)" in c.value)
    assert "does not move" in line or re.search(r"moves by \d[\d,]*\.\d{3} Elo", line), line
    assert not SCIENTIFIC.search(line)


@pytest.mark.parametrize(
    "value, places, shown",
    [(4.1e-15, 3, "less than 0.001"), (0.0, 3, "0.000"), (-2.5e-9, 2, "less than 0.01"), (12345.678, 1, "12,345.7")],
)
def test_plain_numbers_never_use_scientific_notation(value, places, shown):
    assert display.plain(value, places) == shown
    assert not SCIENTIFIC.search(display.plain(value, places))


def test_a_movement_below_the_resolution_does_not_move():
    assert display.movement(4.1e-15) == "does not move (by less than 0.001 Elo)"
    assert display.movement(0.0) == "does not move (by less than 0.001 Elo)"
    assert display.movement(4.1) == "moves by 4.100 Elo"


def test_an_estimate_has_the_precision_of_its_interval():
    assert display.estimate(1234.5678, 1200.0, 1270.0, "Elo") == "1,235 Elo (95% CI 1,200–1,270)"
    assert display.estimate(0.43216, 0.393, 0.472) == "0.432 (95% CI 0.393–0.472)"


@pytest.mark.integration
def test_the_sidebar_marks_pages_that_can_only_show_a_notice(demo_db, pandalm_db, softelo_db, monkeypatch):
    demo = _page(demo_db, "overview", monkeypatch)
    assert _sidebar_marks(demo) == ""
    pandalm = _page(pandalm_db, "overview", monkeypatch)
    marks = _sidebar_marks(pandalm)
    assert "**Selective judging**: " in marks and "no confidence" in marks.split("**Selective judging**: ")[1]
    assert "**Judge bias**" not in marks  # position and style control are drawn on PandaLM
    softelo = _page(softelo_db, "overview", monkeypatch)
    marks = _sidebar_marks(softelo)
    assert "**Judge bias**: " in marks and "shown first" in marks.split("**Judge bias**: ")[1]
    assert "**Selective judging**" not in marks  # its averaged rubric gaps give the single-order baseline


@pytest.mark.integration
@pytest.mark.parametrize(
    "store, page, needs",
    [
        ("pandalm_db", "selective", ("rubric", "logprob", "Admin page")),
        ("softelo_db", "bias", ("shown first", "answers' texts", "python -m core import")),
    ],
)
def test_a_notice_only_page_says_why_and_what_would_make_it_work(store, page, needs, request, monkeypatch):
    at = _page(request.getfixturevalue(store), page, monkeypatch)
    infos = [i.value for i in at.info]
    assert len(infos) == 1, infos  # one notice, not a notice and then nothing (or a contradiction)
    why, _, fix = infos[0].partition("**What would make it work:**")
    assert "cannot show results" in why and fix
    for word in needs:
        assert word in infos[0], (word, infos[0])
    assert not at.get("plotly_chart") and not at.dataframe and not at.metric
    # what the notice says matches the sidebar's mark
    reason = (
        _sidebar_marks(at)
        .split("**")[2]
        .removeprefix(": ")
        .split(";")[0]
        .removesuffix(". Each of these pages says what would make it work.")
    )
    assert reason and reason in why.replace("\\", "")


@pytest.mark.integration
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="the lock message names a process from /proc")
def test_the_busy_notice_says_who_is_writing_in_words_not_a_command_line(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "-m", "core", "judge", "--db", str(tmp_path / "x")]
    )
    try:
        cmdline = Path(f"/proc/{holder.pid}/cmdline")
        for _ in range(200):  # until the child has exec'd: its command line is what the lock message names
            if cmdline.exists() and b"core" in cmdline.read_bytes():
                break
            time.sleep(0.05)
        message = lock_message(
            str(tmp_path / "x.duckdb"),
            Exception(f"IO Error: Could not set lock on file: Conflicting lock is held in python (PID {holder.pid})"),
        )
        assert "--db" in message and str(holder.pid) in message  # the CLI's message names the process
        script = f"from app_pages._store import busy_notice\nbusy_notice({message!r})\n"
        at = AppTest.from_string(script, default_timeout=60).run()
    finally:
        holder.kill()
        holder.wait()
    shown = [i.value for i in at.info]
    assert len(shown) == 1 and "a judge run" in shown[0] and "refreshes" in shown[0]
    assert "--db" not in shown[0] and str(holder.pid) not in shown[0] and "python" not in shown[0]
