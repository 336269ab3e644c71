"""``python -m core agreement``: a judge's agreement with the human votes, under the MT-Bench paper's setups."""

from __future__ import annotations

import argparse
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store, required


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agreement", help="judge–human agreement (vote level with and without ties; unanimous battles)")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", required=True)
    p.add_argument(
        "--setup",
        choices=("votes", "mt-bench"),
        default="votes",
        help="votes: every vote, turns pooled (default); mt-bench: the MT-Bench paper's procedure (FastChat's "
        "compute_agreement: expert votes only, per turn, an inconsistent GPT-4 tie counted as a tie)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.judges import human_agreement

    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            figures = required(human_agreement(store, args.dataset, args.judge, args.setup))
        except StoreError as exc:
            raise UserError(str(exc)) from None
    out = {
        "dataset": args.dataset,
        "judge": args.judge,
        "setup": args.setup,
        **{k: f.as_dict() for k, f in figures.items()},
    }
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
        return 0
    for key, f in figures.items():
        value = "undefined" if f.n == 0 else f"{f.agreement:.1%}"
        print(f"{key:18s} {value:>9s}  n = {f.n:,}  ({f.definition})")
    return 0
