"""``python -m core simulate``: build the seeded demo arena into a store."""

from __future__ import annotations

import sys
import time

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub) -> None:
    p = sub.add_parser("simulate", help="build the demo arena (seeded, with stored ground truth)")
    add_db_arg(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default="demo", help="dataset name (default demo)")
    p.add_argument("--small", action="store_true", help="a small arena (fast; for tests)")
    p.add_argument("--replace", action="store_true", help="replace an existing dataset of that name")
    p.set_defaults(func=run)


def run(args) -> int:
    from core.simulate import DemoConfig, simulate_arena
    from core.store import StoreError

    t0 = time.perf_counter()
    tables = simulate_arena(args.seed, DemoConfig.small() if args.small else None)
    tables.name = args.dataset
    store = open_store(args.db, read_only=False)
    try:
        if args.dataset in set(store.datasets()["name"]) and not args.replace:
            raise UserError(f"dataset {args.dataset!r} already exists in {args.db}; pass --replace to rebuild it")
        store.write_dataset(tables, replace=args.replace)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    print(f"built dataset {args.dataset!r} in {args.db}: {len(tables.models)} models, {len(tables.battles)} battles, "
          f"{0 if tables.judgments is None else len(tables.judgments)} judgments "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
