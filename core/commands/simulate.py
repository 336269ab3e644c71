"""``python -m core simulate``: build the seeded demo arena into a store."""

from __future__ import annotations

import argparse
import sys
import time

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="build the demo arena (seeded, with stored ground truth)")
    add_db_arg(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default="demo", help="dataset name (default demo)")
    p.add_argument("--small", action="store_true", help="a small arena (fast; for tests)")
    p.add_argument("--replace", action="store_true", help="replace an existing dataset of that name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.data import build_demo

    t0 = time.perf_counter()
    store = open_store(args.db, read_only=False)
    try:
        built = build_demo(store, seed=args.seed, dataset=args.dataset, small=args.small, replace=args.replace)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    print(
        f"built dataset {built.dataset!r} in {args.db}: {built.n_models} models, {built.n_battles} battles, "
        f"{built.n_judgments} judgments ({time.perf_counter() - t0:.1f} s)",
        file=sys.stderr,
    )
    return 0
