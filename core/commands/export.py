"""``python -m core export``: a table of one dataset to Parquet or CSV, or a publishable bundle."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="export a dataset: battles, judgments, arena-rank's layout, or a bundle with its leaderboards"
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--table",
        choices=["battles", "judgments", "arena-rank", "votes"],
        help="one table to --out; arena-rank: model_a, model_b, winner per human vote (or per battle with --judge); "
        "votes: every human vote in LMArena's layout (.jsonl or .parquet), readable by import --format lmarena",
    )
    what.add_argument(
        "--bundle",
        metavar="OUT.zip",
        help="a zip with the dataset, its leaderboards with intervals, judge configurations and a manifest",
    )
    p.add_argument("--out", help="output file for --table, .parquet or .csv")
    p.add_argument("--judge", help="arena-rank: this judge's hard labels; bundle: only this judge's judgments")
    p.add_argument("--alpha", type=float, default=0.1, help="bundle: miscoverage of the conformal intervals")
    p.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="NAME",
        help="bundle: a registered rating method to print beside human, Hard- and Soft-Elo (repeatable; "
        "`leaderboard --help` lists them)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.data import export_arena_rank, export_table, export_votes
    from core.redact import redact

    if args.table and not args.out:
        raise UserError("--table needs --out (a .parquet or .csv file; .jsonl too for votes)")
    if args.bundle:
        from core.app.bundle import export_bundle

        with open_store(args.db, read_only=True) as store:
            try:
                done = export_bundle(
                    store, args.dataset, args.bundle, judge=args.judge, alpha=args.alpha, methods=args.method
                )
            except (StoreError, ValueError) as exc:
                raise UserError(str(exc)) from None
        print(redact(f"wrote {done.path}: {done.n_files} files, leaderboards {', '.join(done.leaderboards)}"))
        return 0
    if args.method:
        raise UserError("--method applies to --bundle")
    if args.judge and args.table != "arena-rank":
        raise UserError("--judge applies to --table arena-rank and to --bundle")
    with open_store(args.db, read_only=True) as store:
        try:
            if args.table == "arena-rank":
                n = export_arena_rank(store, args.dataset, args.out, judge=args.judge)
            elif args.table == "votes":
                n = export_votes(store, args.dataset, args.out)
            else:
                n = export_table(store, args.dataset, args.table, args.out)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
        sidecar = _csv_sidecar(store, args, n) if Path(args.out).suffix.lower() == ".csv" else None
    print(redact(f"wrote {n} rows to {args.out}" + (f" (provenance in {sidecar})" if sidecar else "")))
    return 0


def _csv_sidecar(store: Any, args: argparse.Namespace, n: int) -> Path:
    """``<name>.json`` beside the CSV ``<name>.csv``: what the table is and where it comes from (a CSV stays a
    plain table that a spreadsheet opens as it is)."""
    from datetime import UTC, datetime

    import pandas as pd

    from core.app.export import provenance_json
    from core.version import code_version

    out = Path(args.out)
    prov = store.provenance(args.dataset)
    context: dict[str, Any] = {
        "table": args.table,
        "dataset": str(prov["dataset"]),
        "source": str(prov["source"]),
        "data fingerprint": str(prov["fingerprint"]),
    }
    if args.judge:
        context["judge"] = args.judge
    context |= {"rows": n, "code": code_version(), "exported": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"}
    text = provenance_json(context, pd.read_csv(out, nrows=0), file=out.name)  # the header gives the columns
    sidecar = out.with_suffix(".json")
    sidecar.write_text(text, encoding="utf-8")
    return sidecar
