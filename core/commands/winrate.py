"""``python -m core winrate``: AlpacaEval's numbers for any dataset with a common baseline."""

from __future__ import annotations

import argparse
import math
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "winrate",
        help="win rate against a baseline with its standard error, discrete and length-controlled win rates",
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="the judge (default: the dataset's only judge; the human votes when it has none)")
    p.add_argument("--baseline", help="the baseline model (default: the model in every battle)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.winrate import DIFFICULTY_NOTE, default_judge, win_rate_view

    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            judge = args.judge if args.judge is not None else default_judge(store, args.dataset)
            view = win_rate_view(store, args.dataset, baseline=args.baseline, judge=judge)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    rows = view.rows
    if args.json:
        out = {
            "dataset": view.dataset,
            "judge": view.judge,
            "baseline": view.baseline,
            "rows": rows.to_dict("records"),
            "notes": list(view.notes),
            "method": DIFFICULTY_NOTE,
            "seconds": time.perf_counter() - t0,
        }
        print_json(clean_json(out))
        return 0
    who = "human votes" if view.judge is None else f"judge {view.judge}"
    print(f"{view.dataset}: win rates against {view.baseline} ({who})")
    print(f"{'model':32s} {'win rate':>13s} {'discrete':>9s} {'LC win rate':>13s} {'avg len':>8s} {'n':>6s}")

    def pct(x: float, se: float) -> str:
        if x is None or math.isnan(x):
            return "undefined"
        return f"{x:5.1f} ± {se:4.1f}" if se == se else f"{x:5.1f}"

    for r in rows.to_dict("records"):
        length = "—" if r["avg_length"] != r["avg_length"] else f"{r['avg_length']:.0f}"
        print(
            f"{r['model'][:32]:32s} {pct(r['win_rate'], r['standard_error']):>13s} {r['discrete_win_rate']:9.1f} "
            f"{pct(r['lc_win_rate'], r['lc_standard_error']):>13s} {length:>8s} {int(r['n']):6d}"
        )
    for note in view.notes:
        print(f"note: {note}")
    return 0
