"""``python -m core bt FILE``: fit an LMArena-style battle file without a store."""

from __future__ import annotations

import time

import numpy as np

from core.cli import UserError, clean_json, print_json


def register(sub) -> None:
    p = sub.add_parser("bt", help="Bradley–Terry leaderboard of a battle file (model_a, model_b, winner)")
    p.add_argument("file", help="Parquet, CSV or JSONL file")
    p.add_argument("--ci", choices=["sandwich", "bootstrap", "none"], default="sandwich")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from core import bt
    from core.store import StoreError, aggregate_battle_file

    if args.bootstrap < 2:
        raise UserError("--bootstrap needs at least 2 replicates")
    t0 = time.perf_counter()
    try:
        cells, n_battles = aggregate_battle_file(args.file)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    t1 = time.perf_counter()
    a, b = cells["model_a"].to_numpy(), cells["model_b"].to_numpy()
    models = tuple(sorted(set(a.tolist()) | set(b.tolist())))
    index = {m: k for k, m in enumerate(models)}
    n = cells["n"].to_numpy(float)
    y = cells["y"].to_numpy(float)
    comps = bt.Comparisons(models, np.array([index[m] for m in a]), np.array([index[m] for m in b]), n, n * y,
                           ss=n * y * y)
    t2 = time.perf_counter()
    fit = bt.fit_bt(comps)
    t3 = time.perf_counter()
    intervals = None
    if args.ci == "sandwich":
        intervals = bt.sandwich_intervals(comps, fit)
    elif args.ci == "bootstrap":
        intervals = bt.bootstrap(comps, fit, n_boot=args.bootstrap, seed=args.seed)
    t4 = time.perf_counter()
    frame = bt.LeaderboardFit(fit, intervals).frame()
    n_pairs = int(len(cells.groupby(["model_a", "model_b"])))
    out = {
        "n_battles": n_battles,
        "n_pairs": n_pairs,
        "n_models": len(models),
        "converged": bool(fit.converged),
        "iterations": int(fit.iterations),
        "well_defined": bool(fit.well_defined),
        "issues": [str(i) for i in fit.issues],
        "seconds": {"load": t1 - t0, "aggregate": t2 - t1, "fit": t3 - t2, "ci": t4 - t3},
        "models": [
            {"model": r.model, "elo": r.elo, "lower": r.lower, "upper": r.upper, "se": r.se,
             "n_battles": int(round(r.n_battles))}
            for r in frame.itertuples()
        ],
    }
    if args.json:
        print_json(clean_json(out))
        return 0
    for r in out["models"]:
        print(f"{r['model']:40s} {r['elo']:8.1f}  [{r['lower']:8.1f}, {r['upper']:8.1f}]  n={r['n_battles']}")
    for issue in out["issues"]:
        print(f"note: {issue}")
    return 0
