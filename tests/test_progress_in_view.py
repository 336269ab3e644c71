"""A page that waits on a long computation says so where the reader looks (issue 45): on a fresh server with
nothing computed yet, while a results page waits on one, a spinner or a progress bar is inside the first
1440×900 screen.

The full demo arena (48 models, 30,000 battles) with the background precompute off, so the leave-one-model-out
fits and the bias diagnostics are computed while the visitor waits.  How long they take depends on the machine
(a fast one finishes them in about a second, too soon for a spinner to be read, or seen by a test), so the
server is ``tests/slow_results_server.py``: ``serve.py`` with those two computations delayed by a fixed 3 s,
each logged with when it ran.  The test checks every page over the time each long computation ran during its
visit; a page that is slow from many short steps (Streamlit's own running indicator shows it) is not in scope.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app_pages._registry import PAGES
from core.app.access import VIEWER
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT
from tests.test_browser import CHROMIUM, _start_streamlit

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]
WIDTH, HEIGHT = 1440, 900
BUSY = "[data-testid='stSpinner'], [data-testid='stProgress']"
# the script is running, or Streamlit's running indicator is still up
RUNNING = "[data-testid='stApp']:not([data-test-script-state='notRunning']), [data-testid='stStatusWidget']"
DELAY_S = 3.0
# a computation is "seen" over its middle: the page's first draw and the last poll may miss its ends
MARGIN_S = 0.5


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("progress")
    db, log = tmp / "demo.duckdb", tmp / "slow.log"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))  # every result delayed alike
    launcher = str(ROOT / "tests" / "slow_results_server.py")
    env = {"ARENA_DB": str(db), "ARENA_PRECOMPUTE": "0", "ARENA_SLOW_RESULT_S": str(DELAY_S)}
    env["ARENA_SLOW_LOG"] = str(log)
    proc, url = _start_streamlit([launcher], env)
    yield url, log
    proc.terminate()
    proc.wait(timeout=10)


def _watch(pg, url: str) -> list[tuple[float, float]]:
    """Open ``url`` and poll until its script has finished (its title drawn, the app not running, no busy
    element); every busy element seen, as (wall-clock time, its top in px from the top of the viewport)."""
    t0 = time.monotonic()
    pg.goto(url, wait_until="commit")
    seen: list[tuple[float, float]] = []
    while time.monotonic() - t0 < 180:
        busy = pg.query_selector_all(BUSY)
        for el in busy:
            box = el.bounding_box()
            if box is not None:
                seen.append((time.time(), box["y"]))
        if not busy and pg.locator("h1").count() > 0 and pg.locator(RUNNING).count() == 0:
            break
        pg.wait_for_timeout(100)  # a poll interval, not a wait for a state
    return seen


# the thread of core.app.persist.BackgroundRefresh: a page that shows an older result does not wait for it
BACKGROUND_THREAD = "results-refresh"


def _long_computations(log: Path) -> list[tuple[str, float, float]]:
    """The delayed computations a page waited on: every one but those of the background refresh (on a busy
    machine one of those can run wholly inside a visit whose page never waited for it)."""
    if not log.exists():
        return []
    rows = [line.split(maxsplit=3) for line in log.read_text().splitlines()]
    return [(name, float(start), float(end)) for name, start, end, thread in rows if thread != BACKGROUND_THREAD]


def test_a_page_waiting_on_a_long_computation_shows_progress_on_the_first_screen(fresh_server):
    from playwright.sync_api import sync_playwright

    url, log = fresh_server
    viewer_pages = [p.key for p in PAGES if p.role == VIEWER and p.needs]
    checked: list[str] = []
    hidden: dict[str, list[str]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for key in viewer_pages:
                ctx = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                visit_start = time.time()
                seen = _watch(ctx.new_page(), f"{url}/{key}?dataset=demo&judge=judge-strong")
                visit_end = time.time()
                ctx.close()
                # the computations this visit waited on: run within it (one in the background, whose page does
                # not wait for it, may end after the visit and is not this page's wait)
                waited = [c for c in _long_computations(log) if visit_start <= c[1] and c[2] <= visit_end]
                for name, start, end in waited:
                    checked.append(f"{key}: {name}")
                    during = [y for t, y in seen if start + MARGIN_S <= t <= end - MARGIN_S]
                    if not any(0 <= y < HEIGHT for y in during):
                        hidden.setdefault(key, []).append(f"{name}: busy tops {during}")
        finally:
            browser.close()
    # the precompute is off: the first page reading each delayed result computes it
    assert checked, "no page waited on a long computation on a fresh server: the test saw nothing to check"
    assert not hidden, hidden
