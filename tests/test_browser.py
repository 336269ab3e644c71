"""End to end in a real headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Starts the app on a small demo store, opens every page, moves the α slider
with the keyboard and checks that the rendered text changes.  Screenshots go
to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.store import Store
from tests.conftest import ROOT, viewer_pages

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
PAGES = list(viewer_pages())  # Vote and Admin (role-gated): AppTest and their own browser tests

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_app(
    db: Path, extra_env: dict[str, str] | None = None, port: int | None = None
) -> tuple[subprocess.Popen, str]:
    """The dashboard on ``port`` (default a free one), started as ``make run`` starts it: ``serve.py``
    (``streamlit run app.py`` with the page modules imported first)."""
    return _start_streamlit([str(ROOT / "serve.py")], {"ARENA_DB": str(db), **(extra_env or {})}, port)


def _start_streamlit(
    launch: list[str], extra_env: dict[str, str] | None = None, port: int | None = None
) -> tuple[subprocess.Popen, str]:
    """``python *launch`` (a launcher that ends in ``streamlit run``, given the server's options) headless on
    ``port`` (default a free local one), once the server answers its health check; (process, URL)."""
    port = port or _free_port()
    options = ["--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1"]
    proc = subprocess.Popen(
        [sys.executable, *launch, *options, "--browser.gatherUsageStats", "false"],
        cwd=ROOT,
        env={**os.environ, **(extra_env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    # a bound for a hang: make test runs two browser tests at once, so a start may share the cores with both
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("streamlit did not start within 180 s")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """This module's own copy of the precomputed demo: a test here votes through the server."""
    from tests import stores

    return stores.fresh_copy("demo", tmp_path_factory.mktemp("browser-demo"))


@pytest.fixture(scope="module")
def app_url(demo_db):
    proc, url = _start_app(demo_db)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def page(app_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        yield pg
        browser.close()


# The script has finished and the front end has drawn what it sent: no running indicator, and no element still
# a grey placeholder while its component's code loads (a fresh browser's first page shows several).
_IDLE_JS = (
    "() => !!document.querySelector(\"[data-testid='stApp'][data-test-script-state='notRunning']\") && "
    "!document.querySelector(\"[data-testid='stStatusWidget']\") && "
    "!document.querySelector(\"[data-testid='stSkeleton']\")"
)


def _wait_idle(pg) -> None:
    """The page script has run: a title is there, the app is not running and Streamlit's running indicator
    is gone (states, not a pause)."""
    pg.wait_for_selector("h1", timeout=120_000)  # the page script has run st.title
    pg.wait_for_function(_IDLE_JS, timeout=120_000)


def _wait_settled(pg) -> None:
    """A freshly loaded page's script has run to its end: its title is drawn, the app is not running,
    Streamlit's running indicator is gone and every chart is drawn (pages with or without charts)."""
    _wait_idle(pg)
    pg.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='stPlotlyChart']\")]"
        ".every(c => c.querySelector('.main-svg'))",
        timeout=120_000,
    )


# True unless the Leaderboard shows intervals from before the newest votes: the current table is then computed
# in the background, and the page polls for it (a run_every fragment) and redraws itself once it is in.
_CURRENT_JS = "() => !document.body.innerText.includes('The intervals are calibrated without')"


def _wait_rendered(pg) -> None:
    # every page explains its first chart with a "How to read this" caption once computed
    pg.wait_for_selector("text=How to read this", timeout=120_000)
    _wait_idle(pg)
    # A test that moves a widget waits for the current intervals first: while the page polls for them, a
    # change made as a poll runs can be dropped by Streamlit on a loaded machine (1-2 in 20 in a harness with a
    # bare multiselect beside a run_every fragment, none without the fragment), and a test after one that
    # voted would then find its slice or slider back where it was.
    pg.wait_for_function(_CURRENT_JS, timeout=600_000, polling=250)
    _wait_idle(pg)


def test_the_first_visitor_after_a_server_start_can_follow_a_deep_link(page, demo_db):
    """A fresh server whose very first visitor follows a shared link sees the right page and no modal."""
    proc, url = _start_app(demo_db)
    context = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = context.new_page()
        pg.goto(f"{url}/leaderboard?dataset=demo&judge=judge-strong")
        _wait_rendered(pg)
        assert pg.get_by_text("covers the human Elo of a new model").count() >= 1  # the right page is there
        assert pg.locator("[role='dialog']", has_text="Page not found").count() == 0
    finally:
        context.close()
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("name", PAGES)
def test_every_page_opens_without_an_exception(page, app_url, name):
    # every page at its own pathname, the default (served at "/") included: "/overview" links must work too
    page.goto(f"{app_url}/{name}?dataset=demo&judge=judge-position")
    _wait_settled(page)
    assert page.get_by_text("Page not found").count() == 0  # a modal that would block the sidebar
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("h1").count() >= 1
    # the deep link went through app.py: the sidebar selectors are there and keep the URL's judge
    assert page.locator("[data-testid='stSelectbox']").count() >= 2
    assert "judge=judge-position" in page.url
    assert (
        page.locator("section[data-testid='stSidebar'] input[value='judge-position']").count() == 1
        or "judge-position" in page.locator("section[data-testid='stSidebar']").inner_html()
    )


def test_alpha_slider_changes_the_rendered_statement(page, app_url):
    page.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong&alpha=0.10")
    _wait_rendered(page)
    before = page.get_by_text("covers the human Elo of a new model").first.inner_text()
    _move_slider(page, ALPHA, 0.20)
    from playwright.sync_api import expect

    expect(page.get_by_text("covers the human Elo of a new model").first).to_contain_text("α = 0.20", timeout=90_000)
    _wait_rendered(page)
    after = page.get_by_text("covers the human Elo of a new model").first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "leaderboard_alpha_moved.png"), full_page=True)
    assert after != before and "α = 0.20" in after


TAU, ALPHA = "τ (soft-target temperature)", "α (miscoverage of the intervals)"


def _slider_text(pg, label: str) -> str:
    """What the slider shows (its value, or a select slider's option label)."""
    return pg.get_by_role("slider", name=label).get_attribute("aria-valuetext") or ""


# Counts the changes of the app's script state (initial → running → notRunning …) from the moment it is armed,
# so a wait can tell the rerun a key press caused from the state the page was already in.
_ARM_JS = """() => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!window.__scriptStateChanges) {
        window.__scriptStateChanges = 0;
        new MutationObserver(records => { window.__scriptStateChanges += records.length; })
            .observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
    }
    return window.__scriptStateChanges;
}"""
_RERUN_DONE_JS = """n => window.__scriptStateChanges >= n + 2 &&
    !!document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']")"""


def _arm(pg) -> int:
    """Start counting script-state changes (once per page); the count so far."""
    return int(pg.evaluate(_ARM_JS))


def _settle(pg, label: str, before: str, armed: int) -> None:
    """Wait until the slider shows a new value, then for a script run that started after ``armed`` (the
    rerun the new value causes) to finish."""
    from playwright.sync_api import expect

    expect(pg.get_by_role("slider", name=label)).not_to_have_attribute("aria-valuetext", before, timeout=30_000)
    pg.wait_for_function(_RERUN_DONE_JS, arg=armed, timeout=120_000)
    _wait_rendered(pg)


def _move_slider(pg, label: str, target: float, step: float = 0.01) -> None:
    """Move a numeric slider to ``target`` with the keyboard, as a user does.

    On a loaded machine the page may rerun on a value the slider passed through before the last presses land
    (the rerun redraws the slider there): the presses still missing are then sent again, until it shows
    ``target``.
    """
    slider = pg.get_by_role("slider", name=label)
    for _ in range(5):
        presses = round((target - float(slider.input_value())) / step)
        if presses == 0:
            return
        before, armed = _slider_text(pg, label), _arm(pg)
        slider.focus()
        for _ in range(abs(presses)):
            pg.keyboard.press("ArrowRight" if presses > 0 else "ArrowLeft")
        _settle(pg, label, before, armed)
    raise AssertionError(f"the {label!r} slider did not reach {target} (it shows {_slider_text(pg, label)})")


def _step_slider(pg, label: str, steps: int) -> str:
    """Move a (select) slider by ``steps`` options with the keyboard; returns the label it then shows."""
    before, armed = _slider_text(pg, label), _arm(pg)
    pg.get_by_role("slider", name=label).focus()
    for _ in range(abs(steps)):
        pg.keyboard.press("ArrowRight" if steps > 0 else "ArrowLeft")
    _settle(pg, label, before, armed)
    return _slider_text(pg, label)


def _open_page_from_sidebar(pg, title: str) -> None:
    pg.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    pg.wait_for_function(
        f"() => document.querySelector('h1') && document.querySelector('h1').innerText.includes({title!r})",
        timeout=90_000,
    )
    _wait_rendered(pg)


def test_tau_and_alpha_survive_a_trip_to_another_page_and_the_statement_follows_tau(page, app_url):
    """Move τ and α on the Leaderboard, open Calibration from the sidebar and come back: both are kept, and
    the coverage statement names the procedure behind the bars at the chosen τ."""
    page.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong")
    _wait_rendered(page)
    assert "(fitted)" in _slider_text(page, TAU)
    assert "τ refitted on every fold" in page.get_by_text("covers the human Elo of a new model").first.inner_text()
    tau = _step_slider(page, TAU, 6)  # six steps up the log-spaced grid, away from the fitted τ
    assert "fitted" not in tau
    _move_slider(page, ALPHA, 0.12)
    assert f"tau={tau}" in page.url and "alpha=0.12" in page.url
    statement = page.get_by_text("covers the human Elo of a new model").first.inner_text()
    assert f"τ fixed at {tau} in every fold" in statement and "α = 0.12" in statement
    page.screenshot(path=str(ARTIFACTS / "leaderboard_tau_moved.png"), full_page=True)

    _open_page_from_sidebar(page, "Calibration")
    assert _slider_text(page, "τ to compare with the fitted one") == tau
    assert f"tau={tau}" in page.url and "alpha=0.12" in page.url
    assert page.get_by_text(f"slider τ = {float(tau):.2f}").count() >= 1  # the reliability diagram draws it

    _open_page_from_sidebar(page, "Leaderboard")
    assert _slider_text(page, TAU) == tau and _slider_text(page, ALPHA) == "0.12"
    assert f"tau={tau}" in page.url and "alpha=0.12" in page.url
    assert f"τ fixed at {tau} in every fold" in page.get_by_text("covers the human Elo").first.inner_text()


def _tau_note_beside_the_headline(pg, tau: str, height: int) -> str:
    """The τ in use, shown right under the headline and within the first screen; its text."""
    headline = pg.locator("h3", has_text="#1 ").first.bounding_box()
    note = pg.get_by_text(f"τ = {tau}, chosen").first
    box = note.bounding_box()
    assert headline is not None and box is not None
    assert headline["y"] < box["y"] <= headline["y"] + headline["height"] + 120  # directly under the headline
    assert box["y"] + box["height"] <= height  # on the first screen
    return note.inner_text()


def test_the_tau_in_use_is_on_the_first_screen_at_the_sliders_minimum_and_on_a_deep_link(page, app_url):
    """Issue 32: at τ = 0.02 (the slider's minimum) and on a shared link at τ = 0.89 the first screen says which
    τ the Soft-Elo and its bars are drawn at, beside the headline, and that the votes reject it."""
    width, height = 1440, 900
    context = page.context.browser.new_context(viewport={"width": width, "height": height})
    try:
        pg = context.new_page()
        pg.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong&tau=0.89")
        _wait_rendered(pg)
        text = _tau_note_beside_the_headline(pg, "0.89", height)
        assert "outside the fitted τ's 95% interval" in text and "fitted 0." in text
        statement = pg.get_by_text("covers the human Elo of a new model").first.inner_text()
        assert "is not a τ the data supports" in statement
        # the box is a warning, not the green success box
        assert pg.locator("[data-testid='stAlertContentSuccess']", has_text="covers the human Elo").count() == 0
        pg.screenshot(path=str(ARTIFACTS / "leaderboard_deep_link_tau_0.89.png"))

        before, armed = _slider_text(pg, TAU), _arm(pg)
        pg.get_by_role("slider", name=TAU).focus()
        pg.keyboard.press("Home")  # the slider's minimum
        _settle(pg, TAU, before, armed)
        assert _slider_text(pg, TAU) == "0.02"
        _tau_note_beside_the_headline(pg, "0.02", height)
        pg.screenshot(path=str(ARTIFACTS / "leaderboard_tau_minimum.png"))
    finally:
        context.close()


def test_the_human_elo_bars_are_drawn_when_soft_elo_is_not(page, app_url):
    """Issue 32: with only human and Hard-Elo drawn the legend promised human-Elo bars and the chart had none."""
    page.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong&show=human,hard")
    _wait_rendered(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    traces = page.eval_on_selector(
        "[data-testid='stPlotlyChart'] .js-plotly-plot",
        """el => el._fullData.map(t => ({name: t.name,
                 bars: t.error_x && t.error_x.visible && t.error_x.array
                       ? Array.from(t.error_x.array).filter(v => v !== null && !Number.isNaN(v)).length : 0}))""",
    )
    names = {t["name"]: t["bars"] for t in traces}
    assert set(names) == {"human Elo", "Hard-Elo (judge labels)"}
    assert names["human Elo"] > 0 and names["Hard-Elo (judge labels)"] == 0
    # and the SVG draws them: one error-bar group per point of the human trace
    assert page.locator(".js-plotly-plot g.errorbar").count() >= names["human Elo"]


@pytest.mark.parametrize("width, height", [(1440, 900), (1920, 1080)])
def test_the_answer_is_on_the_first_screen(page, app_url, width, height):
    """Headline and the top rows of the table are visible without scrolling."""
    context = page.context.browser.new_context(viewport={"width": width, "height": height})
    try:
        pg = context.new_page()
        pg.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong")
        _wait_rendered(pg)
        headline = pg.locator("h3", has_text="#1 ").first.bounding_box()
        table = pg.locator("[data-testid='stDataFrame']").first.bounding_box()
        assert headline is not None and table is not None
        assert headline["y"] + headline["height"] <= height
        assert table["y"] + 4 * 35 <= height  # the header and at least the top three rows
        assert table["x"] + table["width"] <= width
        pg.screenshot(path=str(ARTIFACTS / f"leaderboard_first_screen_{width}x{height}.png"))
    finally:
        context.close()


def test_presentation_mode_has_no_controls_and_large_chart_text(page, app_url):
    context = page.context.browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        pg = context.new_page()
        pg.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong&present=1")
        _wait_idle(pg)
        pg.wait_for_selector(".js-plotly-plot text", timeout=60_000)
        assert pg.locator("h3", has_text="#1 ").count() == 1
        widgets = (
            "stSlider",
            "stSelectSlider",
            "stSelectbox",
            "stMultiSelect",
            "stTextInput",
            "stButton",
            "stDownloadButton",
            "stRadio",
            "stCheckbox",
            "stToggle",
            "stButtonGroup",
            "stSidebar",
        )
        visible = [
            w
            for w in widgets
            if pg.locator(f"[data-testid='{w}']")
            .filter(visible=True)
            .filter(has_not_text="Exit presentation mode")  # the way out is the one widget
            .count()
        ]
        assert not visible, visible
        # a state, not an instant: on a loaded machine a rerun (the URL rewritten to the snapped τ) may be redrawing
        pg.get_by_role("button", name="Exit presentation mode").wait_for(state="visible", timeout=60_000)
        assert pg.locator(".modebar-container").filter(visible=True).count() == 0  # no chart toolbar
        sizes = pg.eval_on_selector_all(
            ".js-plotly-plot text",
            "els => els.filter(e => e.textContent.trim()).map(e => parseFloat(getComputedStyle(e).fontSize))",
        )
        assert sizes and min(sizes) >= 16, sorted(sizes)[:5]
        cells = pg.eval_on_selector_all(
            "[data-testid='stTable'] td, [data-testid='stTable'] th",
            "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))",
        )
        assert cells and min(cells) >= 20, sorted(cells)[:5]  # tables a projector's back row can read
        pg.goto(f"{app_url}/?dataset=demo&judge=judge-strong&present=1")  # the Overview's key figures
        _wait_idle(pg)
        pg.wait_for_selector("[data-testid='stMetricValue']", timeout=60_000)
        kpis = pg.eval_on_selector_all(
            "[data-testid='stMetricValue'] div", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        assert kpis and min(kpis) >= 28, sorted(kpis)[:5]
        pg.screenshot(path=str(ARTIFACTS / "leaderboard_presentation_1920x1080.png"))
    finally:
        context.close()


def test_presentation_mode_exits_in_the_same_tab_and_keeps_every_row_label(page, app_url):
    context = page.context.browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        pg = context.new_page()
        pg.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong&present=1")
        _wait_idle(pg)
        pg.wait_for_selector(".js-plotly-plot text", timeout=60_000)
        # every model of the chart keeps its label on the projector (Plotly drops overlapping ones otherwise)
        labels = set(
            pg.eval_on_selector_all(".js-plotly-plot .yaxislayer-above text", "els => els.map(e => e.textContent)")
        )
        rows = set(
            pg.evaluate(
                "() => document.querySelector('.js-plotly-plot').data"
                ".flatMap(t => (t.y || []).filter(v => typeof v === 'string'))"
            )
        )
        assert len(rows) >= 10 and rows <= labels, sorted(rows - labels)[:5]
        pg.get_by_role("button", name="Exit presentation mode").click()
        pg.wait_for_function("() => !location.search.includes('present=1')", timeout=30_000)
        _wait_idle(pg)
        assert len(context.pages) == 1  # no new tab
        assert pg.locator("[data-testid='stSidebar']").filter(visible=True).count() == 1  # out of presentation
        assert pg.get_by_role("button", name="Exit presentation mode").count() == 0
    finally:
        context.close()


def test_the_sliders_and_the_vote_buttons_are_on_the_first_screen_at_1440x900(page, app_url):
    context = page.context.browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        pg = context.new_page()
        pg.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong")
        _wait_rendered(pg)
        for label in (TAU, ALPHA):
            box = pg.get_by_label(label, exact=True).first.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 900, (label, box)
        pg.goto(f"{app_url}/vote?dataset=demo&annotator=screen-tester")
        pg.wait_for_selector("h4", timeout=90_000)
        _wait_idle(pg)
        pg.screenshot(path=str(ARTIFACTS / "vote_first_screen_1440x900.png"))
        for name in ("Left is better", "Right is better", "Tie", "Both bad", "Skip"):
            box = pg.get_by_role("button", name=name).first.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 900, (name, box)
        battle = pg.locator("h4", has_text="Battle").first.inner_text()
        pg.get_by_role("button", name="Left is better").click()
        pg.wait_for_function(
            "b => [...document.querySelectorAll('h4')].some(h => h.textContent.startsWith('Battle') && "
            "h.textContent !== b)",
            arg=battle,
            timeout=60_000,
        )
        _wait_idle(pg)
        main = pg.locator("[data-testid='stMain']").inner_text()
        assert "Left was" not in main  # the previous battle's models are not left above the next battle
        pg.screenshot(path=str(ARTIFACTS / "vote_first_screen_1440x900.png"))
    finally:
        context.close()


def test_report_downloads_and_opens_offline_with_its_provenance(page, app_url, tmp_path):
    page.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong")
    _wait_rendered(page)
    with page.expect_download(timeout=120_000) as info:
        page.get_by_role("button", name="Report (HTML, prints to PDF)").click()
    path = tmp_path / "report.html"
    info.value.save_as(path)
    offline = page.context.browser.new_context(offline=True)
    try:
        pg = offline.new_page()
        errors: list[str] = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(path.as_uri())
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        text = pg.locator("body").inner_text()
        assert not errors, errors
        for needed in (
            "Provenance",
            "data fingerprint",
            "judge configuration",
            "code version",
            "Caveats",
            "#1 ",
            "Calibration of the judge",
        ):
            assert needed in text, needed
        pg.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
    finally:
        offline.close()


def test_page_tour_screenshots(page, app_url):
    """The README's page tour: one first-screen screenshot per page at 1440×900 (``make tour`` writes them to
    docs/tour/ from the full demo arena; a normal run writes them to test-artifacts/)."""
    out = Path(os.environ.get("TOUR_DIR") or ARTIFACTS / "tour")
    out.mkdir(parents=True, exist_ok=True)
    proc, url = _start_app(Path(os.environ["TOUR_DB"])) if os.environ.get("TOUR_DB") else (None, app_url)
    context = page.context.browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        pg = context.new_page()
        for key in PAGES:
            pg.goto(f"{url}/{key}?dataset=demo")
            _wait_settled(pg)
            assert pg.locator("[data-testid='stException']").count() == 0
            pg.screenshot(path=str(out / f"{key}.png"))
        pg.goto(f"{url}/leaderboard?dataset=demo&present=1")
        _wait_idle(pg)
        pg.wait_for_selector(".js-plotly-plot text", timeout=60_000)
        widths = (
            "() => [...document.querySelectorAll('.js-plotly-plot .main-svg')]"
            ".map(s => s.getBoundingClientRect().width)"
        )
        before = pg.evaluate(widths)
        pg.set_viewport_size({"width": 1920, "height": 1080})
        # the charts follow the wider window (Plotly relayouts on resize)
        pg.wait_for_function(f"b => ({widths})().every((w, k) => w > b[k])", arg=before, timeout=60_000)
        pg.screenshot(path=str(out / "presentation.png"))
    finally:
        context.close()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
    assert len(list(out.glob("*.png"))) >= len(PAGES) + 1


@pytest.fixture(scope="module")
def pandalm_app(shared_dir, tmp_path_factory):
    """The dashboard over the real PandaLM test set (999 battles, 3 human labels each, two real judges)."""
    from core.app.data import import_path

    db = tmp_path_factory.mktemp("pandalm") / "pandalm.duckdb"
    with Store.open(db) as s:
        import_path(s, shared_dir / "pandalm_testset_v1", "pandalm", dataset="pandalm")
    proc, url = _start_app(db)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.parametrize("judge", ["gpt-3.5-turbo", "pandalm-7b"])
def test_pandalm_pages_show_results_in_a_browser(page, pandalm_app, judge):
    """Human leaderboard, each judge's Hard-Elo, calibration, bias and am-ELO on the real PandaLM file."""
    context = page.context.browser.new_context(viewport={"width": 1400, "height": 1400})
    try:
        pg = context.new_page()
        seen = {}
        for name in ("leaderboard", "calibration", "bias", "judges"):
            pg.goto(f"{pandalm_app}/{name}?dataset=pandalm&judge={judge}")
            try:
                _wait_rendered(pg)
            except Exception:
                pg.screenshot(path=str(ARTIFACTS / f"pandalm-{judge}-{name}-timeout.png"), full_page=True)
                raise AssertionError(f"{name}: {pg.locator('[data-testid=stMain]').inner_text()[:1500]}") from None
            assert pg.locator("[data-testid='stException']").count() == 0, name
            assert pg.get_by_text("has no judgments yet").count() == 0, name
            pg.screenshot(path=str(ARTIFACTS / f"pandalm-{judge}-{name}.png"), full_page=True)
            seen[name] = pg.locator("[data-testid='stMain']").inner_text()
        # the human leaderboard ranks the five models (llama-7b first on these votes), says its intervals
        # are cluster-robust, and places each judge's Hard-Elo beside it
        assert "#1 llama-7b" in seen["leaderboard"]
        assert "Read the human Elo with care" in seen["leaderboard"]
        assert "Hard-Elo" in seen["leaderboard"]
        assert "ECE" in seen["calibration"]
        assert "Annotator reliability (am-ELO)" in seen["judges"] and "adversarial" in seen["judges"]
        assert "Position bias" in seen["bias"] or "position" in seen["bias"].lower()
    finally:
        context.close()


def test_the_slice_picker_and_the_style_toggle_redraw_the_leaderboard(page, app_url, demo_db):
    """Issue 36: choosing a slice fits every method on its battles (the vote count is the slice's), and the
    style-control toggle adds the style-controlled leaderboards; both land in the URL, so the view is shareable."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    with Store.open(demo_db, read_only=True) as s:
        n_de = (
            s._cur()
            .execute("SELECT count(*) FROM votes JOIN battles USING (battle_id) WHERE language = 'de'")
            .fetchone()[0]
        )
    page.goto(f"{app_url}/leaderboard?dataset=demo&judge=judge-strong")
    _wait_rendered(page)
    picker = page.locator("[data-testid='stMultiSelect']", has_text="Slice")
    for _ in range(3):  # on a loaded machine a rerun can close the list under the click: choose again
        if picker.get_by_text(re.compile(r"^language = de \(")).count():
            break  # chosen (its chip is there): the URL follows with the rerun
        picker.locator("input").click()
        option = page.get_by_role("option", name=re.compile(r"^language = de \("))
        option.wait_for(timeout=60_000)
        option.click()
        page.keyboard.press("Escape")
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_url(re.compile(r"slice=language"), timeout=60_000)
            break
    expect(page.get_by_text("On the slice language = de only", exact=False).first).to_be_visible(timeout=120_000)
    _wait_rendered(page)
    assert page.get_by_text(f"Human Elo from {n_de:,} human votes", exact=False).count() >= 1  # the slice's own
    assert "slice=language" in page.url
    page.get_by_text("Style control", exact=True).click()
    expect(page.get_by_role("heading", name="With style control on language = de")).to_be_visible(timeout=120_000)
    _wait_rendered(page)
    assert "style=1" in page.url
    assert page.get_by_role("tab", name="Human votes").count() == 1
    assert page.get_by_role("tab", name="judge-strong (Hard-Elo)").count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(ARTIFACTS / "leaderboard_slice_style.png"), full_page=True)
