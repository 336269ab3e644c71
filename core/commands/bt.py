"""``python -m core bt FILE``: Bradley–Terry leaderboard of an LMArena-style battle file, no store needed.

FILE (Parquet, CSV or JSONL) has columns model_a, model_b, winner with
winner ∈ {model_a, model_b, tie, tie (bothbad), both_bad}; ties count as half
a win for each side.  The file is read and aggregated to (pair, outcome)
cells in DuckDB, then fitted by Newton on the cells.
"""

from __future__ import annotations

import argparse
import math

from core.cli import UserError, clean_json, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bt", help="Bradley–Terry leaderboard of a battle file (model_a, model_b, winner)")
    p.add_argument("file", help="Parquet, CSV or JSONL file with model_a, model_b, winner")
    p.add_argument(
        "--ci",
        choices=["sandwich", "bootstrap", "none"],
        default="sandwich",
        help="95%% intervals: sandwich (±1.96 SE), battle bootstrap (percentile), or none",
    )
    p.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--lam", type=float, default=0.0, help="L2 penalty on θ (sum scale; default 0)")
    p.add_argument(
        "--se-model",
        action="append",
        default=[],
        metavar="MODEL",
        help="with very many models only the top ones get a sandwich SE: also compute it for MODEL (repeatable)",
    )
    p.add_argument(
        "--se-top", type=int, default=None, metavar="K", help="with very many models: SEs for the K best (default 500)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # DuckDB scans the file while numpy and the fitting code are imported (it releases the interpreter lock).
    from core.store.filescan import FileScan

    scan = FileScan(args.file)
    from core.app import StoreError
    from core.app.files import bt_report

    try:
        out = bt_report(
            scan,
            ci=None if args.ci == "none" else args.ci,
            n_boot=args.bootstrap,
            seed=args.seed,
            lam=args.lam,
            se_models=args.se_model,
            se_top=args.se_top,
        )
    except (StoreError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print_json(clean_json(out))
        return 0
    for r in out["models"]:
        lo, hi = r["lower"], r["upper"]
        defined = lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi)
        interval = f"[{lo:8.1f}, {hi:8.1f}]" if defined else f"[{'undefined':>18s}]"
        note = f"  ({r['interval_note']})" if r.get("interval_note") else ""
        print(f"{r['model']:40s} {r['elo']:8.1f}  {interval}  n={r['n_battles']}{note}")
    for issue in out["issues"]:
        print(f"note: {issue['message']}")
    return 0
