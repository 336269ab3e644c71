"""``python -m core bias``: a judge's position, verbosity, self-preference, style and echo diagnostics."""

from __future__ import annotations

import argparse
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bias", help="judge bias diagnostics (METHODS §9)")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.bias import bias_report

    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            out = bias_report(store, args.dataset, args.judge)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
    else:
        p = out["position"]
        print(f"first-position win rate {p['first_win_rate']:.3f} {p['ci']}, flip rate {p['flip_rate']}")
        print(f"verbosity: longer answer wins {out['verbosity']['longer_win_rate']:.3f} of near-ties")
        for c in out["style"]["coefficients"]:
            print(f"style {c['feature']:12s} {c['coef']:+.3f} [{c['lower']:+.3f}, {c['upper']:+.3f}]")
    return 0
