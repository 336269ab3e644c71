"""Bradley–Terry: this project vs arena-rank 0.1.1 on the same 1M-battle file, same run.

    python benchmarks/bench_bt.py [--file benchmarks/out/battles_1m.parquet] [--skip-arena-rank]

arena-rank (LMArena's ranking package) is installed into a throw-away
virtualenv (/tmp/arena-rank-venv), never into the project.  Both sides are
timed inside their own process from "read the file" to "ratings + 95% sandwich
intervals"; interpreter start-up and imports are reported separately.
Parity: Elo differences after centring both, and sandwich half-width ratios.

Whole process: ``python -m core bt FILE --json`` as a subprocess (interpreter
start to exit) against a subprocess that runs arena-rank once (interpreter,
imports, read, fit, sandwich intervals), median of 3 each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VENV = Path(os.environ.get("ARENA_RANK_VENV", "/tmp/arena-rank-venv"))

ARENA_RANK_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import pandas as pd
from arena_rank.utils.data_utils import PairDataset
from arena_rank.models.bradley_terry import BradleyTerry
t_import = time.perf_counter() - t0
runs = []
for _ in range(3):
    t0 = time.perf_counter()
    df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
    ds = PairDataset.from_pandas(df)
    model = BradleyTerry(n_competitors=len(ds.competitors), **json.loads(sys.argv[2]))
    res = model.compute_ratings_and_cis(ds, significance_level=0.05, ci_method="sandwich")
    runs.append(time.perf_counter() - t0)
print(json.dumps({"runs": runs, "import_seconds": t_import,
                  "models": list(res["competitors"]), "elo": [float(x) for x in res["ratings"]],
                  "lower": [float(x) for x in res["rating_lower"]], "upper": [float(x) for x in res["rating_upper"]]}))
"""


def ensure_arena_rank() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(py), "-c", "import arena_rank"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "arena-rank==0.1.1", "pyarrow"], check=True)
    return py


ARENA_RANK_ONCE = r"""
import json, sys
import pandas as pd
from arena_rank.utils.data_utils import PairDataset
from arena_rank.models.bradley_terry import BradleyTerry
df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
ds = PairDataset.from_pandas(df)
res = BradleyTerry(n_competitors=len(ds.competitors), **json.loads(sys.argv[2])).compute_ratings_and_cis(
    ds, significance_level=0.05, ci_method="sandwich")
print(json.dumps({"models": list(res["competitors"]), "elo": [float(x) for x in res["ratings"]],
                  "lower": [float(x) for x in res["rating_lower"]], "upper": [float(x) for x in res["rating_upper"]]}))
"""


# A user's Python writes and reuses its bytecode cache; this sandbox's PYTHONDONTWRITEBYTECODE=1 would make
# every run recompile whatever changed since the caches were written, so both tools run without it.
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed_process(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, env=USER_ENV).stdout
    return time.perf_counter() - t0, out


def whole_process(path: Path, py: Path, runs: int = 5) -> None:
    """Interpreter start to exit after one warm-up run each (bytecode and page caches as a user's second run
    finds them), median of ``runs`` each, and the parity of the two outputs."""
    ours_cmd = [sys.executable, "-m", "core", "bt", str(path), "--json"]
    # Tight tolerances: at its defaults arena-rank stops ~0.03 Elo short of its optimum.
    tight = json.dumps({"gtol": 1e-12, "ftol": 1e-15})
    ref_cmd = [str(py), "-c", ARENA_RANK_ONCE, str(path), tight]
    # Each tool warms up and then runs back to back: run after arena-rank's multi-GB process, ours would also
    # time re-reading the page cache arena-rank evicted.
    timed_process(ours_cmd)
    ours_runs = [timed_process(ours_cmd) for _ in range(runs)]
    timed_process(ref_cmd)
    ref_runs = [timed_process(ref_cmd) for _ in range(runs)]
    ours_s = float(np.median([t for t, _ in ours_runs]))
    ref_s = float(np.median([t for t, _ in ref_runs]))
    mine = json.loads(ours_runs[-1][1])
    ref = json.loads(ref_runs[-1][1].strip().splitlines()[-1])
    models = [r["model"] for r in mine["models"]]
    order = [ref["models"].index(m) for m in models]
    elo = np.array([r["elo"] for r in mine["models"]])
    ref_elo = np.array(ref["elo"])[order]
    d = (elo - elo.mean()) - (ref_elo - ref_elo.mean())
    half = np.array([(r["upper"] - r["lower"]) / 2 for r in mine["models"]])
    ratio = half / ((np.array(ref["upper"]) - np.array(ref["lower"]))[order] / 2)
    print(
        f"whole process (python -m core bt FILE --json vs arena-rank, tight tolerances; start to exit, "
        f"median of {runs} after a warm-up): "
        f"{ours_s:.3f} s vs {ref_s:.3f} s = {ref_s / ours_s:.1f}x"
    )
    print(
        f"  parity: max |dElo| after centring = {np.max(np.abs(d)):.5f} "
        f"({'ok' if np.max(np.abs(d)) <= 0.01 else 'FAIL'}, <= 0.01); sandwich half-width ratio min "
        f"{ratio.min():.4f} max {ratio.max():.4f} ({'ok' if np.all(np.abs(ratio - 1) <= 0.01) else 'FAIL'}, within 1%)"
    )


def ours_once(path: Path) -> dict:
    from core.stats import bt
    from core.store import aggregate_battle_file

    t0 = time.perf_counter()
    cells, _ = aggregate_battle_file(path)
    a, b = cells["model_a"].to_numpy(), cells["model_b"].to_numpy()
    models = tuple(sorted(set(a.tolist()) | set(b.tolist())))
    index = {m: k for k, m in enumerate(models)}
    n, y = cells["n"].to_numpy(float), cells["y"].to_numpy(float)
    comps = bt.Comparisons(
        models, np.array([index[m] for m in a]), np.array([index[m] for m in b]), n, n * y, ss=n * y * y
    )
    fit = bt.fit_bt(comps)
    iv = bt.sandwich_intervals(comps, fit)
    elapsed = time.perf_counter() - t0
    return {
        "seconds": elapsed,
        "comps": comps,
        "fit": fit,
        "models": list(models),
        "elo": fit.elo,
        "lower": iv.lower_elo,
        "upper": iv.upper_elo,
        "sandwich_se": iv.se_elo,
        "iterations": fit.iterations,
    }


def ours(path: Path) -> dict:
    from core.stats import bt

    runs = [ours_once(path) for _ in range(3)]
    out = runs[-1]
    out["runs"] = [r["seconds"] for r in runs]
    t0 = time.perf_counter()
    boot = bt.bootstrap(out["comps"], out["fit"], n_boot=1000, seed=0)
    out["bootstrap_seconds"] = time.perf_counter() - t0
    out["boot_se"] = boot.se_elo
    return out


def compare(mine: dict, ref: dict, label: str) -> None:
    order = [ref["models"].index(m) for m in mine["models"]]
    ref_elo = np.array(ref["elo"])[order]
    ref_half = (np.array(ref["upper"]) - np.array(ref["lower"]))[order] / 2
    my_half = (mine["upper"] - mine["lower"]) / 2
    d = (mine["elo"] - mine["elo"].mean()) - (ref_elo - ref_elo.mean())
    ratio = my_half / ref_half
    print(
        f"arena-rank 0.1.1 ({label}): runs {', '.join(f'{x:.3f}' for x in ref['runs'])} s "
        f"(imports {ref['import_seconds']:.1f} s)"
    )
    print(
        f"  speed-up, first run: {ref['runs'][0] / mine['runs'][0]:.1f}x; warm (median of 3 each): "
        f"{np.median(ref['runs']) / np.median(mine['runs']):.1f}x"
    )
    print(
        f"  parity: max |dElo| after centring = {np.max(np.abs(d)):.5f}; "
        f"sandwich half-width ratio min {ratio.min():.4f} max {ratio.max():.4f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "benchmarks/out/battles_1m.parquet"))
    ap.add_argument("--skip-arena-rank", action="store_true")
    ap.add_argument("--whole-only", action="store_true", help="only the whole-process comparison")
    args = ap.parse_args()
    path = Path(args.file)
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks/make_lmarena_file.py"), "--out", str(path)], check=True)
    if args.whole_only:
        whole_process(path, ensure_arena_rank())
        return
    mine = ours(path)  # timed without tracemalloc, which slows every allocation
    import resource

    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"this project: file -> ratings + sandwich CIs, runs {', '.join(f'{x:.3f}' for x in mine['runs'])} s "
        f"({mine['iterations']} Newton iterations); 1,000 bootstrap replicates {mine['bootstrap_seconds']:.2f} s; "
        f"peak RSS of the whole benchmark process {peak_rss:.0f} MB"
    )
    print(f"bootstrap SE / sandwich SE: median {np.median(mine['boot_se'] / mine['sandwich_se']):.3f}")
    if args.skip_arena_rank:
        return
    py = ensure_arena_rank()
    for label, cfg in (
        ("default settings", {}),
        ("tight tolerances gtol=1e-12, ftol=1e-15", {"gtol": 1e-12, "ftol": 1e-15}),
    ):
        r = subprocess.run(
            [str(py), "-c", ARENA_RANK_SCRIPT, str(path), json.dumps(cfg)], capture_output=True, text=True, check=True
        )
        compare(mine, json.loads(r.stdout.strip().splitlines()[-1]), label)
    whole_process(path, py)


if __name__ == "__main__":
    main()
