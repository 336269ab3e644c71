"""First start: how long a new user waits, from a clone with no store to a dashboard that answers.

What ``make run`` does on a fresh clone (the virtual environment already installed), measured whole, interpreter
starts included:

1. ``python -m core simulate --db <fresh store>``: the demo arena;
2. ``python serve.py`` (the launcher ``make run`` uses) until the server answers HTTP on ``/`` and on its
   health endpoint; the background precompute it starts is *not* waited for (pages compute on demand while it
   runs): its own duration is printed apart, from its progress file.

Baseline, measured in the same run: a bare Streamlit server (``python -m streamlit run`` of a one-line app)
until it answers, so the figure is printed as a ratio to what Streamlit itself costs on this machine.  Also
printed: whether the server's output holds any warning (it should hold none).

    python benchmarks/bench_first_start.py [--repeats 3] [--wait-precompute] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
            ok = r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as r:
            return ok and r.status == 200
    except OSError:
        return False


def _serve_until_answer(cmd: list[str], env: dict, port: int, timeout: float = 300.0) -> tuple[float, str]:
    """Seconds from the process start to its first HTTP answer, and what it printed until then."""
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            while not _answers(port):
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    raise RuntimeError(f"the server did not answer ({' '.join(cmd)})")
                time.sleep(0.05)
            took = time.perf_counter() - t0
            time.sleep(1.0)  # what it prints right after it answers counts as start-up output too
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log.seek(0)
        return took, log.read().decode(errors="replace")


def one_start(tmp: Path, wait_precompute: bool = False) -> dict:
    db = tmp / "arena.duckdb"
    env = {**os.environ, "ARENA_DB": str(db)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "core", "simulate", "--db", str(db)], cwd=ROOT, env=env, check=True)
    simulate_s = time.perf_counter() - t0
    port = _free_port()
    serve_s, output = _serve_until_answer(
        [sys.executable, "serve.py", "--server.port", str(port), "--server.headless", "true"], env, port
    )
    warnings = [ln for ln in output.splitlines() if "warning" in ln.lower() or "no runtime found" in ln.lower()]
    hello = tmp / "hello.py"
    hello.write_text("import streamlit as st\nst.write('hello')\n")
    port = _free_port()
    bare_s, _ = _serve_until_answer(
        [sys.executable, "-m", "streamlit", "run", str(hello), "--server.port", str(port), "--server.headless", "true"],
        env,
        port,
    )
    # the background precompute the server started: with --wait-precompute left to finish (its duration read from
    # its progress file), else stopped, so that the next repeat does not share the machine with it
    progress = Path(str(db) + ".precompute.json")
    started = progress.exists()
    precompute_s = None
    deadline = time.monotonic() + (1800 if wait_precompute else 0)
    while started:
        p = json.loads(progress.read_text())
        if p.get("finished"):
            precompute_s = p["finished"] - p["started"]
            break
        alive = p.get("pid") and Path(f"/proc/{p['pid']}").exists()
        if not alive:
            break
        if time.monotonic() >= deadline:
            os.kill(int(p["pid"]), 15)  # it stops its workers with it
            time.sleep(1.0)
            break
        time.sleep(1.0)
    return {
        "background_precompute_started": started,
        "simulate_s": simulate_s,
        "serve_to_answer_s": serve_s,
        "bare_streamlit_s": bare_s,
        "simulate_plus_serve_s": simulate_s + serve_s,
        "warnings": warnings,
        "background_precompute_s": precompute_s,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--wait-precompute", action="store_true", help="also time the background precompute to its end")
    args = ap.parse_args()
    runs = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            runs.append(one_start(Path(d), args.wait_precompute))
    med = {k: statistics.median(r[k] for r in runs) for k in ("simulate_s", "serve_to_answer_s", "bare_streamlit_s")}
    total = statistics.median(r["simulate_plus_serve_s"] for r in runs)
    pre = [r["background_precompute_s"] for r in runs if r["background_precompute_s"] is not None]
    out = {
        "runs": runs,
        "median": {**med, "simulate_plus_serve_s": total},
        "serve_vs_bare_streamlit": med["serve_to_answer_s"] / med["bare_streamlit_s"],
        "warnings": sorted({w for r in runs for w in r["warnings"]}),
        "background_precompute_median_s": statistics.median(pre) if pre else None,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"first start, median of {args.repeats} (fresh store each):")
    print(f"  simulate the demo arena            {med['simulate_s']:6.1f} s")
    print(
        f"  serve.py until it answers HTTP     {med['serve_to_answer_s']:6.1f} s   "
        f"({out['serve_vs_bare_streamlit']:.2f}× a bare Streamlit server: {med['bare_streamlit_s']:.1f} s)"
    )
    print(f"  fresh clone to an answering server {total:6.1f} s   (target ≤ 30 s after simulate)")
    if out["background_precompute_median_s"] is not None:
        print(f"  background precompute (not waited for) {out['background_precompute_median_s']:.0f} s")
    started = sum(r["background_precompute_started"] for r in runs)
    print(f"  background precompute started by the server: {started} of {len(runs)} starts")
    print(f"  warnings at start: {len(out['warnings'])}" + "".join(f"\n    {w}" for w in out["warnings"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
