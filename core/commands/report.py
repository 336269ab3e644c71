"""``python -m core report``: the leaderboard report as one self-contained HTML file, or printed to PDF."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli import UserError
from core.commands._common import add_db_arg, open_store

if TYPE_CHECKING:
    from core.app import Store

SUFFIXES = {"html": (".html", ".htm"), "pdf": (".pdf",)}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="a self-contained HTML report of a leaderboard (headline, table, calibration, caveats, provenance), "
        "or that report printed to PDF by headless Chromium",
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument(
        "--judge",
        help="judge whose Hard/Soft-Elo and intervals to report (default: the only judge of a dataset without "
        "human votes; none otherwise)",
    )
    p.add_argument("--tau", type=float, help="soft-target temperature (default: the judge's fitted τ)")
    p.add_argument("--alpha", type=float, default=0.1, help="miscoverage of the conformal intervals (default 0.1)")
    p.add_argument(
        "--format",
        choices=list(SUFFIXES),
        default="html",
        help="html (default): one file that opens without a network; pdf: that file printed by headless Chromium "
        "(chromium, chromium-browser or google-chrome on PATH or in /usr/bin, or $ARENA_CHROMIUM)",
    )
    p.add_argument("--paper", choices=["a4", "letter"], default="a4", help="pdf: the paper size (default a4)")
    p.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="NAME",
        help="a registered rating method to add to the table beside human, Hard- and Soft-Elo (repeatable)",
    )
    p.add_argument(
        "--previous",
        metavar="BUNDLE.zip",
        help="the bundle of an earlier report (export --bundle): adds 'Changes since <bundle>', each model's "
        "change of Elo with its 95%% interval and a Holm verdict at family-wise α = 0.05",
    )
    p.add_argument(
        "--out",
        help="output file (.html, or .pdf with --format pdf), or a folder; default: "
        "report_<dataset>_<judge>_tau<τ>_alpha<α>.<format> in the current folder",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import IngestError, StoreError
    from core.app.report import NoChromium, build_report, find_chromium, html_to_pdf

    suffixes = SUFFIXES[args.format]
    out = Path(args.out) if args.out else None
    if out is not None and not out.is_dir() and out.suffix.lower() not in suffixes:
        hint = "" if args.format == "pdf" else " (or --format pdf for a .pdf)"
        raise UserError(f"--out {out}: expected an {suffixes[0]} file name{hint}")
    if args.tau is not None and not args.tau > 0:
        raise UserError(f"--tau must be positive, got {args.tau}")
    chromium = None
    if args.format == "pdf":
        try:
            chromium = find_chromium()  # before the report is computed: say at once that it cannot be printed
        except NoChromium as exc:
            raise UserError(str(exc)) from None
    if args.previous is not None and not Path(args.previous).is_file():
        raise UserError(f"--previous {args.previous}: no such file (a bundle written by export --bundle)")
    with open_store(args.db, read_only=True) as store:
        try:
            # a dataset with one judge and no human votes has nothing to report without it: take it
            judge = args.judge if args.judge is not None else _default_judge(store, args.dataset)
            report = build_report(
                store, args.dataset, judge, args.tau, args.alpha, previous=args.previous, others=args.method
            )
        except (StoreError, ValueError, IngestError) as exc:
            raise UserError(str(exc)) from None
    name = report.file_name(suffixes[0])
    target = Path(name) if out is None else out / name if out.is_dir() else out
    if chromium is not None:
        try:
            html_to_pdf(report.html, target, paper=args.paper, chromium=chromium)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB, {args.paper.upper()})", file=sys.stderr)
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report.html, encoding="utf-8")
    size = len(report.html.encode()) / 1e6
    print(f"wrote {target} ({size:.1f} MB, opens without a network)", file=sys.stderr)
    return 0


def _default_judge(store: Store, dataset: str) -> str | None:
    """The only judge of a dataset without human votes (None otherwise: the report rates the votes)."""
    from core.app.leaderboard import only_judge

    if store.dataset_counts(dataset)["votes"] > 0:
        return None
    return only_judge(store, dataset)
