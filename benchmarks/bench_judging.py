"""Judging throughput against the local fake endpoint, same run as its capacity baseline.

    python benchmarks/bench_judging.py [--calls 1500] [--latency-ms 50] [--concurrency 32]

The fake server answers every request after a fixed latency L; with C requests
in flight its capacity is C / L calls per second.  The client (real `openai`
AsyncOpenAI, parsing, one DuckDB write per judgment) should sustain ≥ 95% of
it.  Client overhead per judgment = client CPU time / judgments.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


async def _raw_baseline(url: str, n: int, concurrency: int) -> float:
    """Calls/s a minimal client (raw asyncio HTTP/1.1, keep-alive) gets from the same server."""
    import asyncio
    from urllib.parse import urlparse

    u = urlparse(url)
    body = json.dumps({"model": "fake", "messages": [{"role": "system", "content": "JSON object"},
                                                     {"role": "user", "content": "q"}]}).encode()
    request = (f"POST {u.path}/chat/completions HTTP/1.1\r\nHost: {u.hostname}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1500)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    from core.ingest import import_path
    from core.judging.config import from_mapping
    from core.judging.runner import plan, run_units
    from core.store import Store

    tmp = Path(tempfile.mkdtemp())
    root = tmp / "ah"
    (root / "model_answer").mkdir(parents=True)
    n_prompts = args.calls // 6 + 1
    with open(root / "question.jsonl", "w") as f:
        for k in range(n_prompts):
            f.write(json.dumps({"uid": f"q{k}", "prompt": f"Question {k}: explain something {k}."}) + "\n")
    for m in ("m1", "m2", "m3"):
        with open(root / "model_answer" / f"{m}.jsonl", "w") as f:
            for k in range(n_prompts):
                f.write(json.dumps({"uid": f"q{k}", "model": m, "messages": [
                    {"role": "user", "content": "."}, {"role": "assistant", "content": {"answer": f"{m} says {k}."}}]}) + "\n")
    import socket
    import subprocess

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # the server runs in its own process so that its CPU is not charged to the client
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_openai_server.py"), str(port),
                               str(args.latency_ms)], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    with Store.open(tmp / "b.duckdb") as store:
        import_path(store, root, "arena-hard", dataset="ah")
        cfg = from_mapping({"name": "bench", "base_url": url, "model": "fake", "concurrency": args.concurrency,
                            "timeout_s": 30.0, "max_retries": 0}, "benchmark")
        units = plan(store, "ah", cfg, limit=args.calls)
        cpu0, t0 = time.process_time(), time.perf_counter()
        _, stats = run_units(store, "ah", cfg, units)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    import asyncio

    baseline = asyncio.run(_raw_baseline(url, args.calls, args.concurrency))
    server.kill()
    capacity = args.concurrency / (args.latency_ms / 1000)
    achieved = stats.finished / wall
    print(f"baseline in the same run: a minimal raw-HTTP client gets {baseline:.0f}/s from the same server "
          f"({baseline / capacity:.1%} of the nominal {capacity:.0f}/s); the judging client reaches "
          f"{achieved / baseline:.1%} of that baseline")
    # the server runs in this process too: its share of the CPU is charged to the client (an upper bound)
    print(f"{stats.finished} judgments in {wall:.2f} s: {achieved:.0f}/s vs server capacity {capacity:.0f}/s "
          f"({achieved / capacity:.1%}); client CPU per judgment {cpu / max(stats.finished, 1) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
