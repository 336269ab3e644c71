"""A page that computes says so where the reader looks (issue 45): on a fresh server with nothing computed
yet, every results page that takes a while shows a spinner or a progress bar inside the first 1440×900 screen.

The full demo arena (48 models, 30,000 battles) with the background precompute off, so the leave-one-model-out
fits and the bias diagnostics are computed while the visitor waits.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app_pages._registry import PAGES
from core.app.access import VIEWER
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.test_browser import CHROMIUM, _start_app

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]
WIDTH, HEIGHT = 1440, 900
BUSY = "[data-testid='stSpinner'], [data-testid='stProgress']"
RUNNING = "[data-testid='stStatusWidget']"
SLOW_S = 2.0  # a page that finishes sooner needs no progress element (it is drawn before one would be read)


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("progress") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig()))
    proc, url = _start_app(db, {"ARENA_PRECOMPUTE": "0"})
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _watch(pg, url: str) -> tuple[float, list[float]]:
    """Open ``url``; until the script has finished, the tops of every busy element seen.  Returns the time
    the page's script took, from its first element drawn (its title, or a progress element shown before it) to
    finished (the front end's own load is not the page's computing), and those tops (px from the top of the
    viewport)."""
    t0 = time.monotonic()
    drawn_since: float | None = None
    pg.goto(url, wait_until="commit")
    tops: list[float] = []
    while time.monotonic() - t0 < 180:
        for el in pg.query_selector_all(BUSY):
            box = el.bounding_box()
            if box is not None:
                tops.append(box["y"])
        if drawn_since is None and (tops or pg.locator("h1").count() > 0):
            drawn_since = time.monotonic()
        if (
            drawn_since is not None
            and pg.locator("h1").count() > 0
            and pg.locator(RUNNING).count() == 0
            and pg.locator(BUSY).count() == 0
        ):
            break
        pg.wait_for_timeout(100)  # a poll interval, not a wait for a state
    return time.monotonic() - (drawn_since or t0), tops


def test_a_page_that_computes_shows_progress_on_the_first_screen(fresh_server):
    from playwright.sync_api import sync_playwright

    viewer_pages = [p.key for p in PAGES if p.role == VIEWER and p.needs]
    slow: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for key in viewer_pages:
                ctx = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                took, tops = _watch(ctx.new_page(), f"{fresh_server}/{key}?dataset=demo&judge=judge-strong")
                ctx.close()
                if took > SLOW_S:
                    slow[key] = tops
        finally:
            browser.close()
    assert slow, "no page computed for long on a fresh server: the test saw nothing to check"
    hidden = {k: tops for k, tops in slow.items() if not any(0 <= y < HEIGHT for y in tops)}
    assert not hidden, hidden
