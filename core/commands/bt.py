"""``python -m core bt FILE``: Bradley–Terry leaderboard of an LMArena-style battle file, no store needed.

FILE (Parquet, CSV or JSONL) has columns model_a, model_b, winner with
winner ∈ {model_a, model_b, tie, tie (bothbad), both_bad}; ties count as half
a win for each side.  The file is read and aggregated to (pair, outcome)
cells in DuckDB (``core.store.aggregate_battle_file``), then fitted by Newton
on the cells.
"""

from __future__ import annotations

import time

from core.cli import UserError, clean_json, print_json


def register(sub) -> None:
    p = sub.add_parser("bt", help="Bradley–Terry leaderboard of a battle file (model_a, model_b, winner)")
    p.add_argument("file", help="Parquet, CSV or JSONL file with model_a, model_b, winner")
    p.add_argument("--ci", choices=["sandwich", "bootstrap", "none"], default="sandwich",
                   help="95%% intervals: sandwich (±1.96 SE), battle bootstrap (percentile), or none")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--lam", type=float, default=0.0, help="L2 penalty on θ (sum scale; default 0)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def cells_to_comparisons(cells):
    """(model_a, model_b, y, n) cells of identical battles → :class:`core.bt.Comparisons`."""
    from core import bt

    n, y = cells["n"].to_numpy(float), cells["y"].to_numpy(float)
    return bt.comparisons_from_pair_table(cells.assign(s=n * y, ss=n * y * y, count=n))


def run(args) -> int:
    from core import bt
    from core.store import StoreError, aggregate_battle_file

    if args.ci == "bootstrap" and args.bootstrap < 2:
        raise UserError("--bootstrap needs at least 2 replicates")
    if args.lam < 0:
        raise UserError("--lam must be >= 0")
    t0 = time.perf_counter()
    try:
        cells, n_battles = aggregate_battle_file(args.file)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    t1 = time.perf_counter()
    comps = cells_to_comparisons(cells)
    n_pairs = int(len(set(zip(comps.i.tolist(), comps.j.tolist()))))
    t2 = time.perf_counter()
    fit = bt.fit_bt(comps, lam=args.lam)
    t3 = time.perf_counter()
    intervals = None
    if args.ci == "sandwich":
        intervals = bt.sandwich_intervals(comps, fit)
    elif args.ci == "bootstrap":
        intervals = bt.bootstrap(comps, fit, n_boot=args.bootstrap, seed=args.seed)
    t4 = time.perf_counter()
    frame = bt.LeaderboardFit(fit, intervals).frame()
    issues = [i.as_dict() for i in fit.issues]
    if intervals is not None and intervals.note:
        issues.append({"kind": "intervals", "models": [], "message": intervals.note})
    out = {
        "n_battles": n_battles,
        "n_pairs": n_pairs,
        "n_models": comps.n_models,
        "converged": bool(fit.converged),
        "iterations": int(fit.iterations),
        "seconds": {"load": t1 - t0, "aggregate": t2 - t1, "fit": t3 - t2, "ci": t4 - t3},
        "models": [
            {"model": r.model, "elo": r.elo, "lower": r.lower, "upper": r.upper, "se": r.se,
             "n_battles": int(round(r.n_battles))}
            for r in frame.itertuples()
        ],
        "issues": issues,
    }
    if args.json:
        print_json(clean_json(out))
        return 0
    for r in out["models"]:
        print(f"{r['model']:40s} {r['elo']:8.1f}  [{r['lower']:8.1f}, {r['upper']:8.1f}]  n={r['n_battles']}")
    for issue in issues:
        print(f"note: {issue['message']}")
    return 0
