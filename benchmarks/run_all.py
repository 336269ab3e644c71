"""Run every benchmark in turn (``make bench``); each prints its figures against its own in-run baseline.

    python benchmarks/run_all.py [--quick] [--only bt,sparse,heldout,conformal,scope,judging,app,load,first,scale,
                                                  studies]

Inputs the benchmarks need are generated first when missing (the 1M-battle
LMArena file, the 25k SoftElo file, the demo store).  ``--quick`` uses smaller
workloads, for a smoke run; the recorded figures come from the defaults.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"


def _run(title: str, args: list[str]) -> bool:
    print(f"\n=== {title}: {' '.join(args)}", flush=True)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT)
    print(f"=== {title}: exit {done.returncode} after {time.perf_counter() - t0:.0f} s", flush=True)
    return done.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small workloads (a smoke run)")
    ap.add_argument(
        "--only",
        default="bt,sparse,heldout,conformal,scope,judging,app,load,first,scale,studies",
        help="comma-separated subset",
    )
    args = ap.parse_args()
    wanted = set(args.only.split(","))
    OUT.mkdir(parents=True, exist_ok=True)
    ok = True

    if "bt" in wanted:
        n = 100_000 if args.quick else 1_000_000
        battles = OUT / f"battles_{n // 1000}k.parquet"
        if not battles.exists():
            ok &= _run(
                "LMArena battle file", ["benchmarks/make_lmarena_file.py", "--out", str(battles), "--battles", str(n)]
            )
        ok &= _run("Bradley–Terry vs arena-rank", ["benchmarks/bench_bt.py", "--file", str(battles)])
    if "sparse" in wanted:
        sizes = ["--sizes", "10000:30000", "--skip-arena-rank"] if args.quick else []
        ok &= _run("Bradley–Terry at 10k and 100k models", ["benchmarks/bench_bt_sparse.py", *sizes])
    if "heldout" in wanted:
        ok &= _run("held-out protocol", ["benchmarks/bench_heldout.py"])
    if "conformal" in wanted:
        quick = ["--quick"] if args.quick else []
        ok &= _run("conformal floor", ["benchmarks/bench_conformal_floor.py", *quick])
    if "scope" in wanted:
        splits = ["--splits", "200", "--repeats", "2"] if args.quick else []
        ok &= _run("SCOPE", ["benchmarks/bench_scope.py", "--no-write", *splits])
    if "judging" in wanted:
        calls = ["--calls", "600", "--latencies", "50,200"] if args.quick else ["--calls", "4000"]
        ok &= _run("judging throughput", ["benchmarks/bench_judging.py", *calls])
    if "app" in wanted:
        db = ROOT / "data" / "arena.duckdb"
        if not db.exists():
            ok &= _run("demo store", ["-m", "core", "simulate", "--db", str(db)])
        ok &= _run("dashboard", ["benchmarks/bench_app.py", "--db", str(db)])
    if "load" in wanted:
        load = ["--sessions", "5", "--units", "600"] if args.quick else []
        ok &= _run("20 browser sessions while an Admin run writes", ["benchmarks/bench_load.py", *load])
    if "first" in wanted:
        ok &= _run("first start (fresh store to an answering server)", ["benchmarks/bench_first_start.py"])
    if "scale" in wanted:
        size = ["--battles", "300000", "--judged", "100000", "--annotators", "2000"] if args.quick else []
        ok &= _run("the benchmark arena at real scale", ["benchmarks/bench_scale.py", *size])
    if "studies" in wanted:
        quick = ["--quick"] if args.quick else []
        ok &= _run(
            "coverage and robustness studies (the suite's small tests, at full size)",
            ["benchmarks/bench_studies.py", *quick],
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
