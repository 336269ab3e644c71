"""``python -m core report``: the leaderboard report as one self-contained HTML file (prints to PDF)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli import UserError
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="a self-contained HTML report of a leaderboard (headline, table, calibration, caveats, provenance)",
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="judge whose Hard/Soft-Elo and intervals to report (default: none)")
    p.add_argument("--tau", type=float, help="soft-target temperature (default: the judge's fitted τ)")
    p.add_argument("--alpha", type=float, default=0.1, help="miscoverage of the conformal intervals (default 0.1)")
    p.add_argument("--out", required=True, help="output file (.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.report import report_html

    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--out {out}: expected an .html file name")
    if args.tau is not None and not args.tau > 0:
        raise UserError(f"--tau must be positive, got {args.tau}")
    with open_store(args.db, read_only=True) as store:
        try:
            text = report_html(store, args.dataset, args.judge, args.tau, args.alpha)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text.encode()) / 1e6:.1f} MB, opens without a network)", file=sys.stderr)
    return 0
