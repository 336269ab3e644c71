"""``python -m core export``: a table of one dataset to Parquet or CSV."""

from __future__ import annotations

import argparse

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export battles or judgments of a dataset")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--table", required=True, choices=["battles", "judgments"])
    p.add_argument("--out", required=True, help="output file, .parquet or .csv")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.data import export_table

    with open_store(args.db, read_only=True) as store:
        try:
            n = export_table(store, args.dataset, args.table, args.out)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    print(f"wrote {n} rows to {args.out}")
    return 0
