"""``python -m core bt FILE``: Bradley–Terry leaderboard of an LMArena-style battle file, no store needed.

FILE (Parquet, CSV or JSONL) has columns model_a, model_b, winner with
winner ∈ {model_a, model_b, tie, tie (bothbad), both_bad}; ties count as half
a win for each side.  The file is read and aggregated to (pair, outcome)
cells in DuckDB, then fitted by Newton on the cells.
"""

from __future__ import annotations

import argparse

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
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.files import bt_report

    try:
        out = bt_report(
            args.file, ci=None if args.ci == "none" else args.ci, n_boot=args.bootstrap, seed=args.seed, lam=args.lam
        )
    except (StoreError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print_json(clean_json(out))
        return 0
    for r in out["models"]:
        print(f"{r['model']:40s} {r['elo']:8.1f}  [{r['lower']:8.1f}, {r['upper']:8.1f}]  n={r['n_battles']}")
    for issue in out["issues"]:
        print(f"note: {issue['message']}")
    return 0
