"""Dashboard timings with Streamlit's AppTest on the default demo arena.

    python benchmarks/bench_app.py [--db data/arena.duckdb]

Cold start: the first Leaderboard render after the store exists and its
results were precomputed (as ``make run`` builds the demo).  Reruns: median over distinct slider
values (each value new, so nothing is served from a result cache), compared
with a baseline rerun in the same run that changes nothing.

In Chromium (when installed): the first Leaderboard after a fresh ``serve.py``
in a fresh browser, three times, by a deep link and from the landing page's
sidebar, alternating with the smallest page of the same kind
(``benchmarks/floor_app.py``: a table and a chart) as the deep link's baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="an existing store with the demo (default: build one in a temp dir)")
    args = ap.parse_args()
    db = args.db
    if db is None:
        from core.simulate import simulate_arena
        from core.store import Store

        db = str(Path(tempfile.mkdtemp()) / "demo.duckdb")
        with Store.open(db) as s:
            s.write_dataset(simulate_arena(0))
        # as `make run` builds the demo: its pages' results computed once, before the first visit
        subprocess.run([sys.executable, "-m", "core", "precompute", "--db", db], cwd=ROOT, check=True)
    os.environ["ARENA_DB"] = db
    os.environ["ARENA_PRECOMPUTE"] = "0"  # what is measured is the page, not a background precompute
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["judge"] = "judge-strong"
    t0 = time.perf_counter()
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    cold = time.perf_counter() - t0

    def timed(action) -> float:
        t = time.perf_counter()
        action()
        return time.perf_counter() - t

    base = [timed(lambda: at.run()) for _ in range(5)]
    alpha = [timed(lambda v=v: at.slider(key="alpha").set_value(v).run()) for v in (0.12, 0.15, 0.2, 0.25, 0.3)]
    # τ moves on a log-spaced grid; its labels are the values (3 significant digits), the fitted one marked
    grid = [float(str(o).split()[0]) for o in at.select_slider(key="tau").options if "fitted" not in str(o)]
    steps = [grid[k] for k in range(len(grid) // 4, len(grid), max(1, len(grid) // 8))][:5]
    tau = [timed(lambda v=v: at.select_slider(key="tau").set_value(v).run()) for v in steps]
    assert not at.exception
    in_browser = _first_leaderboard_in_chromium(Path(db))
    med = statistics.median
    print(f"cold start to the first leaderboard (store exists): {cold:.2f} s")
    if in_browser is not None:
        board, via, floor = in_browser["deep link"], in_browser["landing, then sidebar"], in_browser["floor"]
        print("first leaderboard in Chromium, a fresh server (as make run starts it) and a fresh browser:")
        print(f"  a deep link to it, link to page drawn: median {med(board):.2f} s of {_seconds(board)} (target <= 2s)")
        print(
            f"  beside it, a title, a 50-row table and a 50-point chart (benchmarks/floor_app.py) the same way: "
            f"median {med(floor):.2f} s of {_seconds(floor)}; the Leaderboard takes {med(board) / med(floor):.2f}x"
        )
        print(
            f"  the server's URL (the Overview), then the Leaderboard in the sidebar, click to page drawn: "
            f"median {med(via):.2f} s of {_seconds(via)}"
        )
    print(f"rerun with nothing changed (baseline): {med(base) * 1000:.0f} ms")
    print(f"rerun after an α change: {med(alpha) * 1000:.0f} ms ({med(alpha) / med(base):.1f}x baseline)")
    print(f"rerun after a τ change: {med(tau) * 1000:.0f} ms ({med(tau) / med(base):.1f}x baseline)")


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _first_leaderboard_in_chromium(db: Path, rounds: int = 3) -> dict[str, list[float]] | None:
    """Seconds to the first Leaderboard drawn (``bench_load.DRAWN_JS``) in a fresh Chromium on a fresh server
    (``serve.py``, as ``make run`` starts it), ``rounds`` times each, alternating: ``deep link`` opens the
    Leaderboard's URL; ``landing, then sidebar`` opens the server's URL (the Overview) and, once drawn,
    clicks the Leaderboard in the sidebar (timed from the click); ``floor`` opens
    :mod:`benchmarks.floor_app` as ``deep link`` opens the Leaderboard.  None without Chromium."""
    from tests.test_browser import CHROMIUM
    from tests.test_browser import _start_app as start_app

    if not Path(CHROMIUM).exists():
        return None
    times: dict[str, list[float]] = {"deep link": [], "landing, then sidebar": [], "floor": []}
    for _ in range(rounds):
        proc, url = start_app(db, {"ARENA_PRECOMPUTE": "0"})
        times["deep link"].append(_first_draw(proc, f"{url}/leaderboard?dataset=demo&judge=judge-strong"))
        proc, url = start_app(db, {"ARENA_PRECOMPUTE": "0"})
        times["landing, then sidebar"].append(_first_draw(proc, url, landing="Overview"))
        proc, url = _start_floor_app()
        times["floor"].append(_first_draw(proc, url))
    return times


def _start_floor_app() -> tuple[subprocess.Popen, str]:
    from tests.test_browser import _start_streamlit

    # its modules imported before the server starts, as serve.py imports the dashboard's
    launch = (
        "import sys, numpy, pandas, plotly.graph_objects; from streamlit.web import cli; "
        "sys.argv = ['streamlit', 'run', *sys.argv[1:]]; sys.exit(cli.main())"
    )
    return _start_streamlit(["-c", launch, str(ROOT / "benchmarks" / "floor_app.py")])


def _first_draw(proc: subprocess.Popen, url: str, landing: str | None = None) -> float:
    """Seconds from opening ``url`` in a fresh Chromium to its "Leaderboard" page drawn; with ``landing``, the
    page ``url`` opens is drawn first and the seconds run from the click on the sidebar's Leaderboard.
    Stops ``proc``."""
    from playwright.sync_api import sync_playwright

    from benchmarks.bench_load import DRAWN_JS
    from tests.test_browser import CHROMIUM

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(url)
            if landing is not None:
                page.wait_for_function(DRAWN_JS, arg=landing, polling=50, timeout=300_000)
                link = page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Leaderboard")
                start = time.perf_counter()
                link.click()
            page.wait_for_function(DRAWN_JS, arg="Leaderboard", polling=50, timeout=300_000)
            seconds = time.perf_counter() - start
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return seconds


if __name__ == "__main__":
    main()
