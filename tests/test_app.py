"""The dashboard through Streamlit's AppTest: every page on three stores, sliders, query params."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.app.data import import_path
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT, shared_path

APP = str(ROOT / "app.py")
PAGES = [
    "app_pages/overview.py",
    "app_pages/leaderboard.py",
    "app_pages/calibration.py",
    "app_pages/residuals.py",
    "app_pages/selective.py",
    "app_pages/judges.py",
    "app_pages/bias.py",
    "app_pages/analyses.py",
]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "demo.duckdb"
    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return str(path)


@pytest.fixture(scope="module")
def softelo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "softelo.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("softelo_sample_annotations.csv"), "softelo")
    return str(path)


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "empty.duckdb"
    Store.open(path).close()
    return str(path)


def _app(db: str, monkeypatch, page: str | None = None, params: dict | None = None) -> AppTest:
    monkeypatch.setenv("ARENA_DB", db)
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    return at


def _no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("store", ["demo_db", "softelo_db", "empty_db"])
def test_every_page_renders(page, store, request, monkeypatch):
    at = _app(request.getfixturevalue(store), monkeypatch, page)
    _no_errors(at)
    if store == "empty_db":
        assert at.info or at.sidebar.info


def _figure(at: AppTest, key: str = "leaderboard_chart") -> dict:
    charts = [c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id] or at.get("plotly_chart")
    return json.loads(charts[0].proto.spec)


def test_sliders_change_the_figure(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    before = _figure(at)
    text_before = at.success[0].value
    at.slider(key="alpha").set_value(0.3).run()
    _no_errors(at)
    assert at.success[0].value != text_before and "0.30" in at.success[0].value
    after_alpha = _figure(at)
    assert after_alpha["data"] != before["data"]  # interval bars shrink
    at.slider(key="tau").set_value(2.0).run()
    _no_errors(at)
    after_tau = _figure(at)
    soft = lambda fig: next(t["x"] for t in fig["data"] if t["name"].startswith("Soft-Elo"))
    assert soft(after_tau) != soft(after_alpha)
    assert at.query_params["tau"] == "2.00" and at.query_params["alpha"] == "0.30"


def test_query_params_reproduce_the_view(demo_db, monkeypatch):
    at = _app(
        demo_db,
        monkeypatch,
        "app_pages/leaderboard.py",
        params={"dataset": "demo", "judge": "judge-position", "alpha": "0.25", "tau": "0.70"},
    )
    _no_errors(at)
    assert at.slider(key="alpha").value == pytest.approx(0.25)
    assert at.slider(key="tau").value == pytest.approx(0.70)
    assert at.query_params["judge"] == "judge-position" and at.query_params["dataset"] == "demo"
    # the page computed the position judge's view: its own fitted τ is in the caption
    from app_pages._shared import _open_store
    from core.stats.calibration import fit_tau

    f = _open_store(demo_db).battle_frame("demo", "judge-position")  # the app's own handle (one per process)
    tau = fit_tau(f["gap"], f["human_y"]).tau
    assert any(f"fitted τ = {tau:.3f}" in c.value for c in at.caption)


def test_softelo_store_says_why_intervals_are_missing_or_shows_them(softelo_db, monkeypatch):
    at = _app(softelo_db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    # 14 models: enough for α = 0.1 (needs 9), so intervals are shown
    assert at.success and "14 held-out models" in at.success[0].value
    at.slider(key="alpha").set_value(0.05).run()
    assert at.warning and "too few" in at.warning[0].value


def test_scope_alpha_slider_moves_the_threshold(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/selective.py")
    _no_errors(at)
    msgs = lambda: [m.value for m in at.success] + [w.value for w in at.warning]
    before = msgs()
    at.slider(key="scope_alpha").set_value(0.3).run()
    _no_errors(at)
    assert msgs() != before and any("0.30" in m for m in msgs())


def test_calibration_tau_slider_changes_the_reliability_curve(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/calibration.py")
    _no_errors(at)
    before = _figure(at, "reliability_chart")
    at.slider(key="tau").set_value(3.0).run()
    _no_errors(at)
    after = _figure(at, "reliability_chart")
    assert before["data"][2]["x"] != after["data"][2]["x"]  # the slider-τ curve moved
