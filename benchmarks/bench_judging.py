"""Judging throughput against the local fake endpoint, each figure next to a baseline from the same run.

    python benchmarks/bench_judging.py [--calls 1500] [--latencies 25,50,100,200] [--jitters 0,0.1]
                                       [--concurrency 32]

The fake server (``tests/fake_openai_server.py``, one asyncio loop in its own
process) answers every request after a latency of mean L, so with C requests
in flight its capacity is C / L calls per second.  Jitter 0 means every call
takes exactly L; jitter 0.1 draws each latency uniformly from L ± 10%, as a
real endpoint varies.  For each L and jitter the benchmark runs

* the baseline: a minimal raw-HTTP/1.1 keep-alive client with C connections,
  which measures what the server really delivers on this machine;
* the judging client: ``core.app.judging.run`` (the real
  ``openai.AsyncOpenAI`` client, prompt rendering, parsing, group commits into
  a DuckDB store), exactly what ``python -m core judge`` runs.

It prints throughput as a share of the nominal capacity and of the baseline,
and the client's CPU per judgment split into the event-loop thread and the
writer thread.  Imports are done before timing: a server process pays them
once.  ``--transport httpx`` measures the SDK's default transport instead of
aiohttp.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def _raw_baseline(url: str, n: int, concurrency: int) -> float:
    """Calls/s a minimal client (raw asyncio HTTP/1.1, keep-alive) gets from the same server."""
    u = urlparse(url)
    body = json.dumps(
        {"model": "fake", "messages": [{"role": "system", "content": "JSON object"}, {"role": "user", "content": "q"}]}
    ).encode()
    request = (
        f"POST {u.path}/chat/completions HTTP/1.1\r\nHost: {u.hostname}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    remaining = n

    async def worker():
        nonlocal remaining
        reader, writer = await asyncio.open_connection(u.hostname, u.port)
        while remaining > 0:
            remaining -= 1
            writer.write(request)
            await writer.drain()
            length = 0
            while True:
                line = await reader.readline()
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b""):
                    break
            await reader.readexactly(length)
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - t0)


def _arena_hard_dir(root: Path, n_units: int) -> Path:
    """An Arena-Hard style directory with enough prompt × answer battles for ``n_units`` calls."""
    (root / "model_answer").mkdir(parents=True)
    n_prompts = n_units // 6 + 1  # 3 models → 3 battles per prompt, 2 orders each
    with open(root / "question.jsonl", "w") as f:
        for k in range(n_prompts):
            f.write(json.dumps({"uid": f"q{k}", "prompt": f"Question {k}: explain something {k}."}) + "\n")
    for m in ("m1", "m2", "m3"):
        with open(root / "model_answer" / f"{m}.jsonl", "w") as f:
            for k in range(n_prompts):
                f.write(
                    json.dumps(
                        {
                            "uid": f"q{k}",
                            "model": m,
                            "messages": [
                                {"role": "user", "content": "."},
                                {"role": "assistant", "content": {"answer": f"{m} says {k}, at some length."}},
                            ],
                        }
                    )
                    + "\n"
                )
    return root


def _start_server(latency_ms: float, jitter: float) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # its own process, so that the server's CPU is not charged to the client
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_openai_server.py"), str(port), str(latency_ms), "{}", str(jitter)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return server, server.stdout.readline().strip()


def measure(
    source: Path, workdir: Path, latency_ms: float, jitter: float, calls: int, concurrency: int, transport: str
) -> dict:
    from core.app import judging as app_judging
    from core.app.data import import_path
    from core.judging import runner
    from core.judging.config import from_mapping
    from core.store import Store

    writer_cpu = [0.0]
    original_run = runner._Writer.run

    def timed_run(self):
        t = time.thread_time()
        try:
            original_run(self)
        finally:
            writer_cpu[0] += time.thread_time() - t

    server, url = _start_server(latency_ms, jitter)
    runner._Writer.run = timed_run
    try:
        with Store.open(workdir / f"bench-{latency_ms:g}-{jitter:g}.duckdb") as store:
            import_path(store, source, "arena-hard", dataset="ah")
            cfg = from_mapping(
                {
                    "name": "bench",
                    "base_url": url,
                    "model": "fake",
                    "concurrency": concurrency,
                    "timeout_s": 30.0,
                    "max_retries": 0,
                },
                "benchmark",
            )
            units = app_judging.plan_run(store, "ah", cfg, limit=calls).units
            os.environ["JUDGE_HTTP_TRANSPORT"] = transport
            times0, main0, t0 = os.times(), time.thread_time(), time.perf_counter()
            _, stats = app_judging.run(store, "ah", cfg, units)
            wall = time.perf_counter() - t0
            times1, main = os.times(), time.thread_time() - main0
            user, system = times1.user - times0.user, times1.system - times0.system
            stored = len(store.judgments_frame("ah", "bench", variant=None))
        baseline = asyncio.run(_raw_baseline(url, calls, concurrency))
    finally:
        runner._Writer.run = original_run
        server.kill()
        server.wait()
    n = max(stats.finished, 1)
    return {
        "latency_ms": latency_ms,
        "jitter": jitter,
        "capacity": concurrency / (latency_ms / 1000),
        "baseline": baseline,
        "achieved": stats.finished / wall,
        "finished": stats.finished,
        "stored": stored,
        "wall": wall,
        "cpu_ms": (user + system) / n * 1000,
        "user_ms": user / n * 1000,
        "sys_ms": system / n * 1000,
        "main_ms": main / n * 1000,
        "writer_ms": writer_cpu[0] / n * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1500)
    ap.add_argument("--latencies", default="25,50,100,200", help="server latencies in ms, comma-separated")
    ap.add_argument("--jitters", default="0,0.1", help="latency jitter fractions, comma-separated")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--transport", choices=["aiohttp", "httpx"], default="aiohttp")
    args = ap.parse_args()

    t = time.process_time()
    import aiohttp  # noqa: F401
    import openai  # noqa: F401

    import core.judging.runner
    import core.store  # noqa: F401

    print(f"imports (once per process, not timed below): {time.process_time() - t:.2f} s CPU")

    tmp = Path(tempfile.mkdtemp())
    source = _arena_hard_dir(tmp / "ah", args.calls)
    print(f"concurrency {args.concurrency}, {args.calls} judgments per row, transport {args.transport}")
    header = (
        f"{'L ms':>5} {'jitter':>6} {'capacity/s':>10} {'baseline/s':>10} {'client/s':>9} {'of capacity':>11} "
        f"{'of baseline':>11} {'CPU ms/j':>8} {'user':>5} {'kernel':>6} {'loop':>5} {'writer':>6}  stored"
    )
    print(header)
    cases = [(float(lat), float(jit)) for lat in args.latencies.split(",") for jit in args.jitters.split(",")]
    for latency, jitter in cases:
        r = measure(source, tmp, latency, jitter, args.calls, args.concurrency, args.transport)
        print(
            f"{r['latency_ms']:>5g} {r['jitter']:>6.0%} {r['capacity']:>10.0f} {r['baseline']:>10.0f} "
            f"{r['achieved']:>9.0f} "
            f"{r['achieved'] / r['capacity']:>11.1%} {r['achieved'] / r['baseline']:>11.1%} {r['cpu_ms']:>8.2f} "
            f"{r['user_ms']:>5.2f} {r['sys_ms']:>6.2f} "
            f"{r['main_ms']:>5.2f} {r['writer_ms']:>6.2f}  {r['stored']}/{r['finished']}"
        )


if __name__ == "__main__":
    main()
