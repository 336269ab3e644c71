"""Bradley–Terry at 10,000 and 100,000 models, with hubs and without: whole-process CLI timings vs arena-rank.

    python benchmarks/bench_bt_sparse.py [--sizes 10000:30000,100000:1000000] [--graphs zipf,hubless]
                                         [--skip-arena-rank] [--skip-dense] [--arena-timeout 300]

The hubless graph (a ring with random chords, as a Swiss-style schedule makes) is the hard case for the SE
solves: see ``core.stats.bt.DENSE_SPEEDUP``.

For each size a seeded LMArena-style Parquet file (model_a, model_b, winner)
is written to benchmarks/out/ (reused when present).  Popularity is Zipf
(weight ∝ 1/rank): the top model is in ~8% of all battles while the median
model has a handful; every model gets at least one battle, so the graph is
connected.  Many one- and two-battle models have perfect records, so the MLE
does not exist and the fit is the fallback ridge — the normal case for a
real long tail.

Timed: the WHOLE process ``python -m core bt FILE --json`` (interpreter
start, imports, DuckDB aggregation, fit, sandwich SEs, JSON on stdout), wall
clock from spawn to exit, peak RSS of that child from /usr/bin/time.  Parity:
the in-process dense fit (``solver='dense'``) where its (m+k)² information
fits in memory, and arena-rank on the 10k file, both in the same run, same
machine, same file.  arena-rank runs in the throw-away virtualenv of
``bench_bt.py`` with a time limit; "did not finish" means it hit it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bt import ensure_arena_rank  # noqa: E402  (the benchmarks directory is not a package)

# The dense information matrix is (m+k)² doubles, copied a few times per step.
DENSE_MAX_MODELS = 12_000
# Whole-process targets on a 2-core machine: seconds by model count, and peak memory.
TARGET_SECONDS = {10_000: 10.0, 100_000: 120.0}
TARGET_RSS_MB = 4096

ARENA_RANK_SCRIPT = r"""
import json, sys
import pandas as pd
from arena_rank.utils.data_utils import PairDataset
from arena_rank.models.bradley_terry import BradleyTerry
df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
ds = PairDataset.from_pandas(df)
model = BradleyTerry(n_competitors=len(ds.competitors))
res = model.compute_ratings_and_cis(ds, significance_level=0.05, ci_method="sandwich")
print(json.dumps({"models": list(res["competitors"]), "elo": [float(x) for x in res["ratings"]]}))
"""


def make_battles(n_models: int, n_battles: int, seed: int = 0) -> pd.DataFrame:
    """Seeded long-tailed battles: Zipf popularity, one guaranteed battle per model, 10% ties."""
    if n_battles < n_models:
        raise ValueError("need at least one battle per model")
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_models)
    popularity = 1.0 / np.arange(1, n_models + 1)
    popularity /= popularity.sum()
    # Every model's first battle is against a popular opponent (how a new model
    # enters an arena); the rest pick both sides by popularity.
    a = np.r_[np.arange(n_models), rng.choice(n_models, n_battles - n_models, p=popularity)]
    b = rng.choice(n_models, n_battles, p=popularity)
    same = a == b
    while same.any():
        b[same] = rng.choice(n_models, int(same.sum()), p=popularity)
        same = a == b
    p_a = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    winner = np.where(rng.random(n_battles) < 0.1, "tie", np.where(rng.random(n_battles) < p_a, "model_a", "model_b"))
    order = rng.permutation(n_battles)
    names = np.array([f"model-{k:06d}" for k in range(n_models)])
    return pd.DataFrame({"model_a": names[a[order]], "model_b": names[b[order]], "winner": winner[order]})


def make_hubless_battles(n_models: int, n_battles: int, seed: int = 0) -> pd.DataFrame:
    """Seeded battles without hubs (a Swiss-style schedule): a ring (each model against the next) plus random
    chords.  The graph is an expander: no model is in more than a few dozen battles, Jacobi-preconditioned CG
    needs many iterations, and a sparse LU fills in (~14% dense at 10,000 models)."""
    if n_battles < n_models:
        raise ValueError("need at least one battle per model")
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_models)
    a = np.r_[np.arange(n_models), rng.integers(0, n_models, n_battles - n_models)]
    b = np.r_[(np.arange(n_models) + 1) % n_models, rng.integers(0, n_models, n_battles - n_models)]
    same = a == b
    while same.any():
        b[same] = rng.integers(0, n_models, int(same.sum()))
        same = a == b
    p_a = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    winner = np.where(rng.random(n_battles) < 0.1, "tie", np.where(rng.random(n_battles) < p_a, "model_a", "model_b"))
    names = np.array([f"model-{k:06d}" for k in range(n_models)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


GRAPHS = {"zipf": make_battles, "hubless": make_hubless_battles}


def battle_file(n_models: int, n_battles: int, graph: str = "zipf") -> Path:
    prefix = "sparse" if graph == "zipf" else graph
    path = OUT / f"{prefix}_{n_models // 1000}k_models_{n_battles // 1000}k_battles.parquet"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        GRAPHS[graph](n_models, n_battles).to_parquet(path, index=False)
    return path


def timed_child(args: list[str], timeout: float) -> dict:
    """Run ``args``: wall seconds, peak RSS (MB) of that process, stdout; None seconds on timeout.

    Peak RSS comes from /usr/bin/time wrapped around the child: Linux keeps a
    forked child's high-water mark from its parent across exec, so
    ``wait4``/``RUSAGE_CHILDREN`` here would report this benchmark's own
    memory (gigabytes after the dense fit) instead of the child's.
    """
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, *args],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.PIPE,
            start_new_session=True,  # so a timeout kills the child, not just /usr/bin/time
        )
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"seconds": None, "rss_mb": None, "stdout": ""}
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {stderr.decode()[-2000:]}")
        out.seek(0)
        return {"seconds": seconds, "rss_mb": int(rss.read().split()[-1]) / 1024, "stdout": out.read().decode()}


def ours_cli(path: Path, timeout: float) -> dict:
    run = timed_child([sys.executable, "-m", "core", "bt", str(path), "--json"], timeout)
    if run["seconds"] is None:
        return run
    report = json.loads(run["stdout"])
    rows = report["models"]
    names = [r["model"] for r in rows]
    run.update(
        report=report,
        elo=pd.Series([r["elo"] for r in rows], index=names),
        n_battles=pd.Series([r["n_battles"] for r in rows], index=names),
        n_se=sum(r["se"] is not None for r in rows),
    )
    return run


def dense_parity(path: Path, elo: pd.Series) -> tuple[float, float]:
    """In-process dense fit of the same file: (seconds, max |ΔElo| vs the CLI's sparse fit)."""
    from core.stats import bt
    from core.store import aggregate_battle_file

    cells, _ = aggregate_battle_file(path)
    n, y = cells["n"].to_numpy(float), cells["y"].to_numpy(float)
    comps = bt.comparisons_from_pair_table(cells.assign(s=n * y, ss=n * y * y, count=n))
    t0 = time.perf_counter()
    fit = bt.fit_bt(comps, solver="dense")
    seconds = time.perf_counter() - t0
    dense = pd.Series(fit.elo, index=list(fit.models))
    return seconds, float(np.max(np.abs(dense - elo.loc[dense.index])))


def arena_rank(path: Path, mine: dict, timeout: float, min_battles: int = 20) -> dict:
    """arena-rank's whole process on ``path``; Elo parity with our CLI run ``mine``.

    arena-rank does not regularise, so models with a perfect record drift
    towards ±∞ until its optimiser stops, where we report the fallback-ridge
    fit: parity is measured on models with at least ``min_battles`` battles,
    both centred on that set.
    """
    py = ensure_arena_rank()
    run = timed_child([str(py), "-c", ARENA_RANK_SCRIPT, str(path)], timeout)
    if run["seconds"] is None:
        return run
    ref = json.loads(run["stdout"].strip().splitlines()[-1])
    theirs = pd.Series(ref["elo"], index=ref["models"])
    solid = mine["n_battles"].index[mine["n_battles"] >= min_battles]
    a, b = mine["elo"].loc[solid], theirs.loc[solid]
    run["parity"] = (
        f"max |ΔElo| on the {len(solid)} models with >= {min_battles} battles "
        f"= {float(np.max(np.abs((a - a.mean()) - (b - b.mean())))):.3f} (after centring both); "
        f"Elo range of all models: ours {np.ptp(mine['elo']):.0f}, arena-rank {np.ptp(theirs):.0f}"
    )
    return run


def _fmt(x: float | None, spec: str, missing: str = "did not finish") -> str:
    return missing if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000:30000,100000:1000000", help="models:battles,…")
    ap.add_argument(
        "--graphs",
        default="zipf,hubless",
        help="zipf (long tail with hubs) and/or hubless (ring + random chords); hubless runs at 10,000 models or "
        "fewer (its dense path needs (m+k)² doubles)",
    )
    ap.add_argument("--skip-arena-rank", action="store_true")
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed for each CLI run")
    ap.add_argument("--arena-timeout", type=float, default=300, help="seconds allowed for arena-rank")
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in part.split(":")) for part in args.sizes.split(",")]

    graphs = args.graphs.split(",")
    cases = [(g, n, b) for n, b in sizes for g in graphs if g == "zipf" or n <= DENSE_MAX_MODELS]
    rows = []
    for graph, n_models, n_battles in cases:
        path = battle_file(n_models, n_battles, graph)
        run = ours_cli(path, args.timeout)
        row = {
            "case": f"{graph}: {n_models:,} models / {n_battles:,} battles",
            "tool": "this project: python -m core bt --json (sparse)",
            "seconds": run["seconds"],
            "rss_mb": run["rss_mb"],
            "detail": "",
        }
        rows.append(row)
        if run["seconds"] is None:
            continue
        rep = run["report"]
        steps = ", ".join(f"{k} {v:.2f}" for k, v in rep["seconds"].items())
        row["detail"] = (
            f"{rep['iterations']} Newton its, converged={rep['converged']}; SEs for {run['n_se']:,} models; "
            f"in-process s: {steps}"
        )
        if n_models in TARGET_SECONDS:
            met = run["seconds"] <= TARGET_SECONDS[n_models] and run["rss_mb"] <= TARGET_RSS_MB
            row["detail"] += (
                f"; target <= {TARGET_SECONDS[n_models]:.0f} s and <= {TARGET_RSS_MB} MB: {'met' if met else 'MISSED'}"
            )
        if not args.skip_dense and n_models <= DENSE_MAX_MODELS:
            seconds, delo = dense_parity(path, run["elo"])
            rows.append(
                {
                    "case": row["case"],
                    "tool": "this project: in-process dense fit (fit only)",
                    "seconds": seconds,
                    "rss_mb": None,
                    "detail": f"max |ΔElo| vs sparse CLI = {delo:.2e}",
                }
            )
        elif not args.skip_dense:
            gb = 8 * n_models**2 / 1e9
            rows.append(
                {
                    "case": row["case"],
                    "tool": "this project: in-process dense fit",
                    "seconds": None,
                    "rss_mb": None,
                    "missing": "not run",
                    "detail": f"not run: one dense information matrix alone is {gb:.0f} GB",
                }
            )
        if not args.skip_arena_rank and n_models <= 10_000:
            ref = arena_rank(path, run, args.arena_timeout)
            rows.append(
                {
                    "case": row["case"],
                    "tool": "arena-rank 0.1.1 (whole process, sandwich CIs)",
                    "seconds": ref["seconds"],
                    "rss_mb": ref["rss_mb"],
                    "detail": (f"time limit {args.arena_timeout:.0f} s" if ref["seconds"] is None else ref["parity"]),
                }
            )

    print(f"\n{'case':42s} {'tool':50s} {'wall s':>14s} {'peak RSS MB':>12s}  detail")
    for r in rows:
        print(
            f"{r['case']:42s} {r['tool']:50s} {_fmt(r['seconds'], '14.2f', r.get('missing', 'did not finish')):>14s} "
            f"{_fmt(r['rss_mb'], '12.0f', '-'):>12s}  {r['detail']}"
        )


if __name__ == "__main__":
    main()
