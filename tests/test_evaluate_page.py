"""The Evaluate page: saved evaluations for everyone, the form that starts one behind the admin token."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.app import Unavailable
from core.app.evaluate import evaluation_row, model_escalations
from core.app.judging import RunOutcome
from core.app.leaderboard import human_ratings
from core.app.newmodel import BattlePlan, Standing, plan_battles, standing
from core.app.safe_text import escape_markdown
from core.judging.runner import RunStats
from core.store import Store
from tests.conftest import ROOT, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_evaluations import demo_with_an_unrated_model

# multi-process or Streamlit AppTest throughout: the integration tier (pytest.ini)
pytestmark = pytest.mark.integration

APP = str(ROOT / "app.py")
PAGE = "app_pages/evaluate.py"
JUDGE = "judge-strong"


def _page(db, monkeypatch, token: str | None = None) -> AppTest:
    monkeypatch.setenv("ARENA_DB", str(db))
    if token is None:
        monkeypatch.delenv("ARENA_ADMIN_TOKEN", raising=False)
    else:
        monkeypatch.setenv("ARENA_ADMIN_TOKEN", token)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["dataset"] = "demo"
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def demo_db(demo_store):
    return demo_store


@pytest.fixture(scope="module")
def saved_db(tmp_path_factory):
    """The demo with one model's votes removed and its standing under a demo judge saved as an evaluation."""
    db = tmp_path_factory.mktemp("evalpage") / "saved.duckdb"
    new = demo_with_an_unrated_model(db)
    with Store.open(db) as s:
        plan = plan_battles(s, "demo", new, 10)
        assert isinstance(plan, BattlePlan)
        placed = standing(s, "demo", JUDGE, new, alpha=0.2)
        assert isinstance(placed, Standing), placed
        esc = model_escalations(s, "demo", JUDGE, new, 0.2)
        human = human_ratings(s, "demo")
        assert not isinstance(human, Unavailable)
        outcome = RunOutcome(None, RunStats(status="nothing"))
        row = evaluation_row(JUDGE, 0.2, plan, 0, outcome, placed, esc, human.frame)
        eid = s.save_evaluation("demo", row)
    return db, new, placed, esc, eid


def test_without_evaluations_the_page_says_how_to_start_one_and_is_locked(demo_db, monkeypatch):
    at = _page(demo_db, monkeypatch)
    assert not at.error, [e.value for e in at.error]
    infos = [i.value for i in at.info]
    assert any("No model has been evaluated on **demo** yet" in i and "python -m core evaluate" in i for i in infos)
    assert any("starting an evaluation is disabled" in i.lower() for i in infos)
    assert not [b for b in at.button if b.label == "Start the evaluation"]
    assert not [t for t in at.text_input if t.key == "evaluate_token_input"]


def test_a_saved_evaluation_shows_its_interval_and_the_battles_to_escalate(saved_db, monkeypatch):
    db, new, placed, esc, eid = saved_db
    with Store.open(db, read_only=True) as s:
        row = s.evaluation(eid)
    assert row is not None
    at = _page(db, monkeypatch)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Predicted human Elo"] == f"{row['predicted']:.0f}"
    assert metrics["80% conformal interval"] == f"{row['lower']:.0f} – {row['upper']:.0f}"
    assert metrics["Rank among the human-rated models"] == f"#{row['rank_best']} – #{row['rank_worst']}"
    assert any(s.value == escape_markdown(placed.text()) for s in at.success)  # names shown as text
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    point = next(t for t in fig["data"] if t["name"].startswith(f"{new}: predicted"))
    assert point["x"] == [row["predicted"]] and point["y"] == [new]
    assert point["error_x"]["array"] == [pytest.approx(row["upper"] - row["predicted"])]
    assert point["error_x"]["arrayminus"] == [pytest.approx(row["predicted"] - row["lower"])]
    # the chart names the evaluation's judge, whichever judge the sidebar has
    assert f"judge {row['judge']}" in fig["layout"]["title"]["text"]
    other = next(j for j in ("judge-strong", "judge-position", "judge-verbose") if j != row["judge"])
    at.query_params["judge"] = other
    at.run()
    assert at.sidebar.selectbox(key="judge").value == other
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert (
        f"judge {row['judge']}" in fig["layout"]["title"]["text"]
        and f"judge {other}" not in fig["layout"]["title"]["text"]
    )
    # unchanged data: the Leaderboard's standing now is the saved one, so no second answer is shown
    assert not any(i.value.startswith("On the Leaderboard now") for i in at.info)
    anchors = next(t for t in fig["data"] if t["name"].startswith("anchor"))
    assert sorted(anchors["y"]) == sorted(json.loads(row["result_json"])["anchors"])
    # the escalation table is SCOPE's at the slider's α (the evaluation's own by default): the model's battles
    assert at.slider(key=f"escalation_alpha_{eid}").value == pytest.approx(0.2)
    assert any(m.value.startswith("At **α = 0.20**") for m in at.markdown)
    assert not isinstance(esc, Unavailable)
    table = next(d.value for d in at.dataframe if "entropy" in d.value.columns)
    assert sorted(table["battle_id"]) == sorted(esc.frame["battle_id"]) and len(table) == esc.n_escalated > 0
    assert ((table["model_a"] == new) | (table["model_b"] == new)).all()
    at.slider(key=f"escalation_alpha_{eid}").set_value(0.4).run()
    assert not at.exception
    looser = next(d.value for d in at.dataframe if "entropy" in d.value.columns)
    assert len(looser) <= len(table) and any(m.value.startswith("At **α = 0.40**") for m in at.markdown)


def test_the_form_needs_the_token_and_names_the_bad_key(demo_db, monkeypatch):
    at = _page(demo_db, monkeypatch, token="s3cret")
    assert not [b for b in at.button if b.label == "Start the evaluation"]
    at.text_input(key="evaluate_token_input").set_value("wrong").run()
    assert at.error and "Wrong token" in at.error[0].value
    at.text_input(key="evaluate_token_input").set_value("s3cret").run()
    assert not at.exception
    at.radio(key="ev_judge_from").set_value("a new judge endpoint")
    at.text_input(key="ev_j_key").set_value("HOME")  # a server variable outside the allow-list
    next(b for b in at.button if b.label == "Start the evaluation").click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "'api_key_env'" in errors[0] and "the judge endpoint" in errors[0]
    assert "s3cret" not in str([m.value for m in at.markdown]) + str(errors)
    at.text_input(key="ev_j_key").set_value("")
    at.text_input(key="ev_j_url").set_value("not a url")
    next(b for b in at.button if b.label == "Start the evaluation").click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "'base_url'" in errors[0]


def test_an_evaluation_started_from_the_page_runs_in_a_worker_and_is_listed(tmp_path, monkeypatch):
    db = tmp_path / "demo.duckdb"
    new = demo_with_an_unrated_model(db)
    at = _page(db, monkeypatch, token="s3cret")
    at.text_input(key="evaluate_token_input").set_value("s3cret").run()
    with FakeServer(FakeJudge(latency_ms=1)) as srv:
        at.text_input(key="ev_name").set_value(new)
        at.radio(key="ev_judge_from").set_value("a new judge endpoint")
        at.text_input(key="ev_j_name").set_value("page-judge")
        at.text_input(key="ev_j_url").set_value(srv.url)
        at.text_input(key="ev_j_model").set_value("fake-judge")
        at.number_input(key="ev_budget").set_value(120)
        at.number_input(key="ev_alpha").set_value(0.2)
        # the fixed design: a judge new to the dataset and no calibration battles, so only the fixed design's
        # battles against every anchor give the rated models judge Elos to calibrate on
        at.toggle(key="ev_adaptive").set_value(False)
        next(b for b in at.button if b.label == "Start the evaluation").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("Started a worker process" in s.value for s in at.success)

        def saved():  # the saved evaluations (a frame)
            with Store.open(db, read_only=True, wait_s=5) as s:
                return s.evaluations("demo")

        wait_until(lambda: len(saved()) > 0, timeout=120, poll=0.5, what="the worker's saved evaluation")
        listed = saved()
    assert len(listed) == 1, "the worker saved its evaluation"
    r = listed.iloc[0]
    assert r["model"] == new and r["judge"] == "page-judge" and r["alpha"] == 0.2 and r["status"] == "placed"
    at.run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Predicted human Elo"] == f"{r['predicted']:.0f}"


def test_an_adaptive_evaluation_shows_its_width_against_the_calls_and_why_it_stopped(tmp_path, monkeypatch):
    from core.stats.adaptive import STOP_FLOOR, AdaptiveConfig, AdaptiveResult, Round

    db = tmp_path / "adaptive.duckdb"
    new = demo_with_an_unrated_model(db)
    rounds = [Round(20, 1500.0, 60.0, 30.0, 150.0, (2, 9)), Round(84, 1510.0, 25.0, 30.0, 90.0, (3, 7))]
    result = AdaptiveResult(rounds, STOP_FLOOR, 84, 2364)
    with Store.open(db) as s:
        plan = plan_battles(s, "demo", new, 10)
        assert isinstance(plan, BattlePlan)
        placed = standing(s, "demo", JUDGE, new, alpha=0.2)
        assert isinstance(placed, Standing), placed
        human = human_ratings(s, "demo")
        assert not isinstance(human, Unavailable)
        outcome = RunOutcome(None, RunStats(status="nothing"))
        row = evaluation_row(
            JUDGE, 0.2, plan, 0, outcome, placed, Unavailable("none"), human.frame, result, AdaptiveConfig()
        )
        s.save_evaluation("demo", row)
    at = _page(db, monkeypatch)
    assert not at.error, [e.value for e in at.error]
    said = " ".join(m.value for m in at.markdown).replace("\\", "")  # names and figures are escaped as text
    assert "Design: adaptive" in said and "84 judge calls spent in 2 rounds" in said
    assert "the fixed design would spend 2364" in said and "more calls cannot narrow the interval" in said
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    widths = next(c for c in charts if c["layout"]["title"]["text"].startswith("Interval width"))
    trace = widths["data"][0]
    assert trace["x"] == [20, 84] and trace["y"] == [pytest.approx(300.0), pytest.approx(180.0)]
