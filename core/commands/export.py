"""``python -m core export``: a table of one dataset to Parquet or CSV."""

from __future__ import annotations

from pathlib import Path

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub) -> None:
    p = sub.add_parser("export", help="export battles or judgments of a dataset")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--table", required=True, choices=["battles", "judgments"])
    p.add_argument("--out", required=True, help="output file, .parquet or .csv")
    p.set_defaults(func=run)


def run(args) -> int:
    from core.store import StoreError

    out = Path(args.out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise UserError(f"--out {out}: expected a .parquet or .csv file name")
    with open_store(args.db, read_only=True) as store:
        try:
            df = store.table_frame(args.dataset, args.table)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".parquet":
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    print(f"wrote {len(df)} rows to {out}")
    return 0
