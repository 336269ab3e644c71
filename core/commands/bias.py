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
    f = sub.add_parser("judge-family", help="say which family (organisation) a judge belongs to, for self-preference")
    add_db_arg(f)
    f.add_argument("--judge", required=True)
    f.add_argument("--family", required=True, help="e.g. openai, anthropic, meta (lowercase)")
    f.set_defaults(func=run_family)


def run_family(args: argparse.Namespace) -> int:
    from core.app.judging import set_judge_family

    with open_store(args.db, read_only=False) as store:
        try:
            set_judge_family(store, args.judge, args.family)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    print(f"judge {args.judge}: family {args.family}")
    return 0


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
        if p["n_decisive"]:
            lo, hi = p["ci"]
            flips = "none (one order only)" if p["flip_rate"] is None else f"{p['flip_rate']:.3f}"
            print(f"first-position win rate {p['first_win_rate']:.3f} [{lo:.3f}, {hi:.3f}], flip rate {flips}")
        else:
            print(f"position: {p['note']}")
        v = out["verbosity"]
        if v["n_near_ties"]:
            over = (
                "decisive verdicts (no rubric gaps: not controlled for quality)"
                if v.get("basis") == "decisive"
                else "near-ties"
            )
            print(f"verbosity: longer answer wins {v['longer_win_rate']:.3f} of {v['n_near_ties']:,} {over}")
        else:
            print(f"verbosity: {v['note'] or 'no near-tie battles'}")
        for c in out["style"]["coefficients"]:
            print(f"style {c['feature']:12s} {c['coef']:+.3f} [{c['lower']:+.3f}, {c['upper']:+.3f}]")
    return 0
