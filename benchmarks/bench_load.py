"""Load: browser sessions on the dashboard while an Admin-page judge run writes the same store.

What a user experiences, measured end to end: the dashboard (``streamlit run app.py``, as ``make run``
starts it) on the demo arena, N sessions, each opening the dashboard once and then moving through its
pages (``--think-s`` seconds on each page; 0: the next page as soon as one is done), and a judge run
started from the Admin page form against a fake endpoint in its own process.

``--browsers`` of the sessions (default 2) are Chromium here, clicking the sidebar; the others make the
same requests over Streamlit's websocket (one script run per page, as a browser's session asks for it)
without drawing anything.  Users' browsers draw on their own machines: twenty Chromiums on this 2-core
machine took ~1.5 of its cores and made the figure their own drawing time (``--browsers 20`` still runs
that setup).  Printed:

- the judge run's throughput alone (the same run from the CLI, no browser) and under load, as a ratio;
- click to page drawn under load in the browsers (as :data:`DRAWN_JS` says), median and 90th
  percentile, beside one session alone; fresh visits (the whole front end loading) apart;
- the websocket sessions' request to "script finished", median and 90th percentile;
- whether every planned judgment landed in the store.

The harness (this process, Playwright's driver and Chromium) stands in for the users' own machines and
runs below the dashboard, the endpoint and the run: at nice 10 (``--harness nice``, the default) or
under SCHED_IDLE (``--harness idle``).  ``--json`` prints the figures as JSON.  The command exits 1 when a
promise that holds on any machine is broken (:func:`broken_promises`: a judgment lost, a session not served
during the run, more than 5% of renders failed); the speed figures are printed against their targets.

    python benchmarks/bench_load.py [--sessions 20] [--browsers 2] [--units 9600] [--latency-ms 50] [--think-s 0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_browser import CHROMIUM  # noqa: E402 (after the path insert)
from tests.test_browser import _start_app as start_app  # noqa: E402

# URL path → the page's title (its h1)
TITLES = {
    "overview": "Overview",
    "leaderboard": "Leaderboard",
    "calibration": "Calibration",
    "residuals": "Residuals",
    "bias": "Judge bias",
    "selective": "Selective judging (SCOPE)",
    "judges": "Judges & annotators",
    "analyses": "Analyses",
}
PAGES = list(TITLES)
TOKEN = "load-test-admin-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sent_times(log: Path) -> list[float]:
    if not log.exists():
        return []
    return [float(line.split("\t")[0]) for line in log.read_text().splitlines() if line]


def _rate(times: list[float]) -> float:
    """Judgments per second over the run's steady part (first to last completion sent)."""
    if len(times) < 2:
        return float("nan")
    return (len(times) - 1) / (times[-1] - times[0])


def _start_endpoint(latency_ms: float, log: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_openai_server.py"), str(port), str(latency_ms), "{}", "0.1"]
        + [str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _config(folder: Path, url: str, name: str, concurrency: int) -> Path:
    p = folder / f"{name}.toml"
    p.write_text(
        f'name = "{name}"\nbase_url = "{url}"\nmodel = "fake-judge"\ntemplate = "rubric"\n'
        f"concurrency = {concurrency}\ntimeout_s = 30\nmax_retries = 5\n"
    )
    return p


def _judgments(db: Path, judge: str) -> int:
    from core.store import Store

    with Store.open(db, read_only=True, wait_s=30) as s:
        return len(s.judgments_frame("demo", judge, variant=None))


# Drawn: the page's h1 reads the title, Streamlit's script run has finished (the run state on the app root)
# and its running indicator is gone, no element is still a placeholder (charts, tables and metrics are
# components loaded on demand: until they mount they are skeletons, and a finished run can show nothing but
# skeletons below its first notice), every chart on the page is drawn by plotly, and its "How to read this"
# caption (or a notice) is on screen, all in one poll.  A page that counted as drawn at its first caption
# would leave its lower sections' computing and drawing to the next figure.  ``bench_scale`` uses it too.
DRAWN_JS = """title => {
    const h1 = document.querySelector('h1');
    if (!h1 || (title !== null && h1.innerText.trim() !== title)) return false;
    if (!document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']")) return false;
    if (document.querySelector("[data-testid='stStatusWidget']")) return false;
    if (document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']")) return false;
    const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
    if (charts.some(c => !c.querySelector('.main-svg'))) return false;
    const text = document.body.innerText;
    return text.includes('How to read this') || !!document.querySelector("[data-testid='stAlert']");
}"""


async def _rendered(pg: object, title: str | None = None, timeout_s: float = 180) -> None:
    """Until the page titled ``title`` is drawn and its script run has finished.

    Drawn as :data:`DRAWN_JS` says (an old page cannot pass: the h1 changes first).
    """
    # One predicate evaluated inside the page every 50 ms: polling from Python would cost the harness
    # (and the CPU the server and the run share with it) a protocol round trip per check and session.
    await pg.wait_for_function(  # type: ignore[attr-defined]
        DRAWN_JS, arg=title, polling=50, timeout=timeout_s * 1000
    )


async def _open(pg: object, url: str, name: str) -> None:
    """A fresh visit: the whole Streamlit front end loads (a user's first page, or a deep link)."""
    path = "" if name == PAGES[0] else name  # the default page lives at the root: /overview is "not found"
    await pg.goto(f"{url}/{path}?dataset=demo&judge=judge-strong")  # type: ignore[attr-defined]
    await _rendered(pg, TITLES[name])


async def _navigate(pg: object, name: str) -> None:
    """What a user does next: a click on the page's link in the sidebar, until that page is drawn."""
    path = "" if name == PAGES[0] else name  # the default page's link is the app's root
    link = pg.locator(f"[data-testid='stSidebarNavLink'][href$='/{path}']")  # type: ignore[attr-defined]
    await link.click()
    await _rendered(pg, TITLES[name])


def _failed(session: int, page: str, error: str) -> dict:
    """A page visit that did not complete (a timeout is a result too)."""
    return {
        "session": session,
        "page": page,
        "kind": "error",
        "s": float("nan"),
        "t": time.time(),
        "error": error[:200],
    }


async def _session(
    browser: object, url: str, k: int, stop: asyncio.Event, out: list[dict], think_s: float = 0.0
) -> None:
    """One user: opens the dashboard, then moves through the pages by the sidebar, reading ``think_s`` each."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = await ctx.new_page()
    i = k  # sessions start on different pages
    first = True
    while not stop.is_set():
        name = PAGES[i % len(PAGES)]
        t0 = time.monotonic()
        try:
            await (_open(page, url, name) if first else _navigate(page, name))
            kind = "open" if first else "click"
            out.append({"session": k, "page": name, "kind": kind, "s": time.monotonic() - t0, "t": time.time()})
            first = False
        except Exception as exc:  # a timeout is a result too
            out.append(_failed(k, name, str(exc)))
            if not browser.is_connected():  # type: ignore[attr-defined]
                break
            shots = os.environ.get("BENCH_LOAD_SCREENSHOTS")  # a folder: what the page looked like
            if shots:
                with contextlib.suppress(Exception):
                    await page.screenshot(path=f"{shots}/failed-{k}-{i}-{name}.png", full_page=True)
            first = True  # start over with a fresh visit
            await asyncio.sleep(1.0)
        i += 1
        if think_s:
            await asyncio.sleep(think_s)
    await ctx.close()


async def _protocol_session(url: str, k: int, stop: asyncio.Event, out: list[dict], think_s: float = 0.0) -> None:
    """One user whose browser runs elsewhere: the same websocket session and requests as a browser's (a
    script run per page, by the page's URL path, with the same query string), timed from the request to
    Streamlit's "script finished"; the drawing, which a user's own machine does, is left out."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    i = k
    while not stop.is_set():
        try:
            async with websockets.connect(
                url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"], max_size=None
            ) as ws:
                kind = "server-open"
                while not stop.is_set():
                    name = PAGES[i % len(PAGES)]
                    request = BackMsg()
                    request.rerun_script.query_string = "dataset=demo&judge=judge-strong"
                    request.rerun_script.page_name = "" if name == PAGES[0] else name
                    t0 = time.monotonic()
                    await ws.send(request.SerializeToString())
                    while True:
                        msg = ForwardMsg()
                        msg.ParseFromString(await asyncio.wait_for(ws.recv(), 180))
                        if msg.WhichOneof("type") == "page_not_found":
                            raise RuntimeError(f"page {name!r} not found")
                        if (
                            msg.WhichOneof("type") == "script_finished"
                            and msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
                        ):
                            break
                    out.append({"session": k, "page": name, "kind": kind, "s": time.monotonic() - t0, "t": time.time()})
                    kind = "server"
                    i += 1
                    if think_s:
                        await asyncio.sleep(think_s)
        except Exception as exc:  # a timeout or a dropped connection is a result too; reconnect
            out.append(_failed(k, PAGES[i % len(PAGES)], f"protocol: {exc}"))
            i += 1
            await asyncio.sleep(1.0)


async def _start_admin_run(browser: object, url: str, endpoint: str, units: int, concurrency: int) -> None:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1400})  # type: ignore[attr-defined]
    ctx.set_default_timeout(300_000)  # the admin's browser shares two busy cores with twenty others
    page = await ctx.new_page()
    await page.goto(f"{url}/admin?dataset=demo")
    await page.get_by_label("Admin token").fill(TOKEN)
    await page.get_by_label("Admin token").press("Enter")
    await page.wait_for_selector("text=Judge configuration", timeout=300_000)
    _log("Admin page signed in")
    await page.get_by_label("name", exact=True).fill("admin-load")
    await page.get_by_label("base URL", exact=True).fill(endpoint)
    await page.get_by_label("model", exact=True).fill("fake-judge")
    limits = (
        ("concurrency", concurrency),
        ("units this run covers", units),
        ("max calls (budget)", 2 * units),
    )
    for label, value in limits:
        box = page.get_by_label(label, exact=True)
        await box.fill(str(value))
    await page.get_by_text("start run").click()
    await page.get_by_role("button", name="Go").click()
    _log("Admin form submitted")
    await page.wait_for_selector("text=Started a worker process", timeout=300_000)
    await ctx.close()


async def _load_phase(url: str, endpoint: str, args: argparse.Namespace, db: Path, folder: Path) -> dict:
    from playwright.async_api import async_playwright

    # The harness (this process, Playwright's driver and the browsers it starts) stands in for the users'
    # own machines, which do not share the server's CPU.  On one machine it can only yield some of it:
    # 'nice' (nice 10: twenty Chromiums still take ~1.5 of 2 cores, pessimistic for the run) or 'idle'
    # (SCHED_IDLE: only the CPU the dashboard, the endpoint and the run leave, pessimistic for clicks).
    if args.harness == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(10)
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-sync",
            ],
        )
        # One session alone first: every page by a fresh visit (the first visitor after a restart,
        # which fills the server's shared caches), then every page by a sidebar click, twice, for the
        # single-session click-to-page times.
        alone: list[dict] = []
        cold: list[dict] = []
        ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
        page = await ctx.new_page()
        for name in PAGES:
            t0 = time.monotonic()
            await _open(page, url, name)
            cold.append({"page": name, "s": time.monotonic() - t0})
            _log(f"first visit {name}: {time.monotonic() - t0:.1f} s")
        for _ in range(2):
            for name in PAGES[1:] + PAGES[:1]:
                t0 = time.monotonic()
                await _navigate(page, name)
                alone.append({"page": name, "s": time.monotonic() - t0})
                _log(f"click {name}: {time.monotonic() - t0:.2f} s")
        await ctx.close()
        stop = asyncio.Event()
        loaded: list[dict] = []
        sessions = [
            asyncio.create_task(
                _session(browser, url, k, stop, loaded, args.think_s)
                if k < args.browsers
                else _protocol_session(url, k, stop, loaded, args.think_s)
            )
            for k in range(args.sessions)
        ]
        try:
            await asyncio.sleep(5)  # every session is busy before the run starts
            started = time.time()
            _log(f"{args.sessions} sessions browsing; starting the Admin run")
            await _start_admin_run(browser, url, endpoint, args.units, args.concurrency)
            _log("Admin run started")
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline and _judgments_landed(db, "admin-load") < args.units:
                await asyncio.sleep(2)
            ended = time.time()
        finally:
            stop.set()
            await asyncio.gather(*sessions, return_exceptions=True)
            await browser.close()
    # under load: every visit that overlapped the run, whether it began before the run started or ended after
    # it landed (a visit slower than the run is still one the run slowed)
    during = [r for r in loaded if r["t"] >= started and r["t"] - _seconds(r) <= ended]
    return {"alone": alone, "cold": cold, "loaded": during, "run_window": (started, ended)}


def _seconds(visit: dict) -> float:
    """How long a visit took; 0 for a failed one (its start is unknown, its end is when it failed)."""
    return 0.0 if math.isnan(visit["s"]) else visit["s"]


def _log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _judgments_landed(db: Path, judge: str) -> int:
    try:
        return _judgments(db, judge)
    except Exception:  # the judge does not exist yet, or the store is busy for longer than the wait
        return 0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument(
        "--browsers",
        type=int,
        default=2,
        help="how many of the sessions run in Chromium on this machine (default 2); the others make the same "
        "requests over Streamlit's websocket without drawing, as users whose browsers run on their own machines",
    )
    ap.add_argument("--units", type=int, default=9600)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument(
        "--think-s", type=float, default=0.0, help="seconds each session reads a page before its next click (default 0)"
    )
    ap.add_argument(
        "--harness",
        choices=["nice", "idle"],
        default="nice",
        help="CPU priority of the browsers: nice 10 (default) or SCHED_IDLE",
    )
    ap.add_argument("--timeout", type=float, default=900, help="seconds the loaded run may take")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.browsers = min(args.browsers, args.sessions)
    folder = Path(tempfile.mkdtemp(prefix="bench_load_"))
    db = folder / "demo.duckdb"
    subprocess.run(
        [sys.executable, "-m", "core", "simulate", "--db", str(db)], cwd=ROOT, check=True, capture_output=True
    )
    log = folder / "sent.log"
    endpoint_proc, endpoint = _start_endpoint(args.latency_ms, log)
    app_proc = None
    try:
        # 1. the run alone: the same worker command the Admin page starts, no dashboard, no browser
        cfg = _config(folder, endpoint, "alone", args.concurrency)
        cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "demo"]
        subprocess.run(cmd + ["--limit", str(args.units)], cwd=ROOT, check=True, capture_output=True)
        alone_times = _sent_times(log)
        log.unlink()
        # 2. the dashboard under load, the run started from its Admin page
        # the background precompute off: what is measured is the sessions and the run
        app_proc, url = start_app(db, {"ARENA_ADMIN_TOKEN": TOKEN, "ARENA_PRECOMPUTE": "0"})
        phase = asyncio.run(_load_phase(url, endpoint, args, db, folder))
        loaded_times = _sent_times(log)
        landed = _judgments(db, "admin-load")
    finally:
        if app_proc is not None:
            app_proc.terminate()
            app_proc.wait(timeout=30)
        endpoint_proc.kill()
    renders = [r["s"] for r in phase["loaded"] if r["kind"] == "click"]
    served = [r["s"] for r in phase["loaded"] if r["kind"] == "server"]
    opens = [r["s"] for r in phase["loaded"] if r["kind"] == "open"]
    failures = [r for r in phase["loaded"] if r["kind"] == "error"]
    alone_renders = [r["s"] for r in phase["alone"]]
    result = {
        "sessions": args.sessions,
        "units": args.units,
        "throughput_alone_per_s": _rate(alone_times),
        "throughput_loaded_per_s": _rate(loaded_times),
        "throughput_ratio": _rate(loaded_times) / _rate(alone_times),
        "browsers": args.browsers,
        "renders_under_load": len(renders),
        "render_failures": len(failures),
        "sessions_served_under_load": len({r["session"] for r in phase["loaded"] if r["kind"] != "error"}),
        "server_runs_under_load": len(served),
        "median_server_run_s": statistics.median(served) if served else float("nan"),
        "p90_server_run_s": statistics.quantiles(served, n=10)[-1] if len(served) >= 10 else float("nan"),
        "median_render_s": statistics.median(renders) if renders else float("nan"),
        "p90_render_s": statistics.quantiles(renders, n=10)[-1] if len(renders) >= 10 else float("nan"),
        "median_render_alone_s": statistics.median(alone_renders),
        "think_s": args.think_s,
        "harness": args.harness,
        "fresh_visits_under_load": len(opens),
        "median_fresh_visit_s": statistics.median(opens) if opens else float("nan"),
        "first_render_s": {r["page"]: r["s"] for r in phase["cold"]},
        "by_page_median_s": {
            name: statistics.median([r["s"] for r in phase["loaded"] if r["page"] == name and r["kind"] == "click"])
            for name in PAGES
            if any(r["page"] == name and r["kind"] == "click" for r in phase["loaded"])
        },
        "failure_samples": sorted({r.get("error", "") for r in failures})[:3],
        "judgments_planned": args.units,
        "judgments_landed": landed,
    }
    shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.sessions} sessions on the demo ({result['browsers']} in Chromium here, the others over the "
            f"websocket) while an Admin run judges {args.units} units"
        )
        print(
            f"judge run: {result['throughput_alone_per_s']:.1f}/s alone, {result['throughput_loaded_per_s']:.1f}/s "
            f"under load = {result['throughput_ratio']:.2f}× (target ≥ 0.50)"
        )
        print(
            f"click to page drawn under load (think time {args.think_s:g} s): "
            f"median {result['median_render_s']:.2f} s, p90 {result['p90_render_s']:.2f} s "
            f"over {len(renders)} clicks ({len(failures)} failed; target median "
            f"≤ 5 s); one session alone: median {result['median_render_alone_s']:.2f} s"
        )
        print(
            f"websocket sessions, request to script finished: median {result['median_server_run_s']:.2f} s, "
            f"p90 {result['p90_server_run_s']:.2f} s over {len(served)} page runs"
        )
        print(
            f"fresh visits (whole front end loads) under load: median {result['median_fresh_visit_s']:.2f} s "
            f"over {len(opens)}"
        )
        for name, s in result["by_page_median_s"].items():
            print(f"  {name:<12} median {s:.2f} s")
        print(f"judgments landed: {landed} of {args.units}")
    return result


def broken_promises(r: dict) -> list[str]:
    """What must hold on any machine, at any size (the speed targets above are this machine's figures, not
    these): every planned judgment lands, every session is served while the run judges, few renders fail."""
    broken = []
    if r["judgments_landed"] != r["judgments_planned"]:
        broken.append(f"judgments landed {r['judgments_landed']} of {r['judgments_planned']} planned")
    if r["sessions_served_under_load"] != r["sessions"]:
        broken.append(f"sessions served during the run {r['sessions_served_under_load']} of {r['sessions']}")
    tried = r["renders_under_load"] + r["server_runs_under_load"] + r["render_failures"]
    if r["render_failures"] > 0.05 * tried:
        broken.append(f"{r['render_failures']} of {tried} page renders failed (more than 5%): {r['failure_samples']}")
    return broken


if __name__ == "__main__":
    broken = broken_promises(main())
    for line in broken:
        print(f"FAILED: {line}", file=sys.stderr)
    sys.exit(1 if broken else 0)
