"""Load: browser sessions on the dashboard while an Admin-page judge run writes the same store.

What a user experiences, measured end to end: the dashboard (``streamlit run app.py``, as ``make run``
starts it) on the demo arena, N Chromium sessions that keep opening the dashboard's pages, and a judge
run started from the Admin page form against a fake endpoint in its own process.  Printed:

- the judge run's throughput alone (the same run from the CLI, no browser) and under load, as a ratio;
- page render times under load (navigation to the page's first "How to read this" caption with
  Streamlit's running indicator gone), median and 90th percentile, beside one session alone;
- whether every planned judgment landed in the store.

Chromium runs at a lower CPU priority (``nice``): the browsers stand in for the users' machines, the
measurement is of the server.  ``--json`` prints the figures as JSON (``tests/test_load.py`` uses it).

    python benchmarks/bench_load.py [--sessions 20] [--units 1200] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

PAGES = ["overview", "leaderboard", "calibration", "residuals", "bias", "selective", "judges", "analyses"]
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


def _nice_chromium(folder: Path) -> str:
    """A launcher that starts Chromium at nice 10 (the browsers stand in for the users' machines)."""
    wrapper = folder / "chromium-nice"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n 10 "{CHROMIUM}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


async def _rendered(pg: object) -> None:
    page = pg  # playwright.async_api.Page
    await page.wait_for_selector("h1", timeout=180_000)  # type: ignore[attr-defined]
    await page.wait_for_selector("text=How to read this", timeout=180_000)  # type: ignore[attr-defined]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if await page.locator("[data-testid='stStatusWidget']").count() == 0:  # type: ignore[attr-defined]
            return
        await asyncio.sleep(0.1)


async def _session(browser: object, url: str, k: int, stop: asyncio.Event, out: list[dict]) -> None:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = await ctx.new_page()
    i = k  # sessions start on different pages
    while not stop.is_set():
        name = PAGES[i % len(PAGES)]
        t0 = time.monotonic()
        try:
            await page.goto(f"{url}/{name}?dataset=demo&judge=judge-strong")
            await _rendered(page)
            out.append({"session": k, "page": name, "s": time.monotonic() - t0, "t": time.time()})
        except Exception as exc:  # a timeout is a result too
            out.append({"session": k, "page": name, "s": float("nan"), "t": time.time(), "error": str(exc)[:200]})
        i += 1
    await ctx.close()


async def _start_admin_run(browser: object, url: str, endpoint: str, units: int, concurrency: int) -> None:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1400})  # type: ignore[attr-defined]
    page = await ctx.new_page()
    await page.goto(f"{url}/admin?dataset=demo")
    await page.get_by_label("Admin token").fill(TOKEN)
    await page.get_by_label("Admin token").press("Enter")
    await page.wait_for_selector("text=Judge configuration", timeout=120_000)
    await page.get_by_label("name", exact=True).fill("admin-load")
    await page.get_by_label("base URL").fill(endpoint)
    await page.get_by_label("model", exact=True).fill("fake-judge")
    limits = (
        ("concurrency", concurrency),
        ("judge at most this many units now", units),
        ("max calls (budget)", 2 * units),
    )
    for label, value in limits:
        box = page.get_by_label(label)
        await box.fill(str(value))
    await page.get_by_text("start run").click()
    await page.get_by_role("button", name="Go").click()
    await page.wait_for_selector("text=Started a worker process", timeout=120_000)
    await ctx.close()


async def _load_phase(url: str, endpoint: str, args: argparse.Namespace, db: Path, folder: Path) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=_nice_chromium(folder),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"],
        )
        # One session alone first: every page once to warm the server's shared caches, then a second
        # round for the single-session render times.
        alone: list[dict] = []
        cold: list[dict] = []
        ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
        page = await ctx.new_page()
        for rnd in range(2):
            for name in PAGES:
                t0 = time.monotonic()
                await page.goto(f"{url}/{name}?dataset=demo&judge=judge-strong")
                await _rendered(page)
                (alone if rnd else cold).append({"page": name, "s": time.monotonic() - t0})
                _log(f"{'warm' if rnd else 'cold'} {name}: {time.monotonic() - t0:.1f} s")
        await ctx.close()
        stop = asyncio.Event()
        loaded: list[dict] = []
        sessions = [asyncio.create_task(_session(browser, url, k, stop, loaded)) for k in range(args.sessions)]
        await asyncio.sleep(5)  # every session is busy before the run starts
        started = time.time()
        _log(f"{args.sessions} sessions browsing; starting the Admin run")
        await _start_admin_run(browser, url, endpoint, args.units, args.concurrency)
        _log("Admin run started")
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline and _judgments_landed(db, "admin-load") < args.units:
            await asyncio.sleep(2)
        ended = time.time()
        stop.set()
        await asyncio.gather(*sessions)
        await browser.close()
    during = [r for r in loaded if started <= r["t"] <= ended]
    return {"alone": alone, "cold": cold, "loaded": during, "run_window": (started, ended)}


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
    ap.add_argument("--units", type=int, default=1200)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=900, help="seconds the loaded run may take")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
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
        app_proc, url = start_app(db, {"ARENA_ADMIN_TOKEN": TOKEN})
        phase = asyncio.run(_load_phase(url, endpoint, args, db, folder))
        loaded_times = _sent_times(log)
        landed = _judgments(db, "admin-load")
    finally:
        if app_proc is not None:
            app_proc.terminate()
            app_proc.wait(timeout=30)
        endpoint_proc.kill()
    renders = [r["s"] for r in phase["loaded"] if r["s"] == r["s"]]
    failures = [r for r in phase["loaded"] if r["s"] != r["s"]]
    alone_renders = [r["s"] for r in phase["alone"]]
    result = {
        "sessions": args.sessions,
        "units": args.units,
        "throughput_alone_per_s": _rate(alone_times),
        "throughput_loaded_per_s": _rate(loaded_times),
        "throughput_ratio": _rate(loaded_times) / _rate(alone_times),
        "renders_under_load": len(renders),
        "render_failures": len(failures),
        "median_render_s": statistics.median(renders) if renders else float("nan"),
        "p90_render_s": statistics.quantiles(renders, n=10)[-1] if len(renders) >= 10 else float("nan"),
        "median_render_alone_s": statistics.median(alone_renders),
        "first_render_s": {r["page"]: r["s"] for r in phase["cold"]},
        "by_page_median_s": {
            name: statistics.median([r["s"] for r in phase["loaded"] if r["page"] == name and r["s"] == r["s"]])
            for name in PAGES
            if any(r["page"] == name and r["s"] == r["s"] for r in phase["loaded"])
        },
        "judgments_planned": args.units,
        "judgments_landed": landed,
    }
    shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.sessions} browser sessions on the demo while an Admin run judges {args.units} battles")
        print(
            f"judge run: {result['throughput_alone_per_s']:.1f}/s alone, {result['throughput_loaded_per_s']:.1f}/s "
            f"under load = {result['throughput_ratio']:.2f}× (target ≥ 0.50)"
        )
        print(
            f"page renders under load: median {result['median_render_s']:.2f} s, p90 {result['p90_render_s']:.2f} s "
            f"over {len(renders)} renders ({len(failures)} failed); one session alone: "
            f"median {result['median_render_alone_s']:.2f} s"
        )
        for name, s in result["by_page_median_s"].items():
            print(f"  {name:<12} median {s:.2f} s")
        print(f"judgments landed: {landed} of {args.units}")
    return result


if __name__ == "__main__":
    main()
