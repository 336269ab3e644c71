"""``python -m core import``: validate a file, then write it in one transaction."""

from __future__ import annotations

import argparse
import sys

from core.cli import UserError, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    from core.app.data import import_formats

    p = sub.add_parser("import", help="import a battle file into the store (all-or-nothing)")
    add_db_arg(p)
    p.add_argument(
        "--format",
        default="auto",
        metavar="FORMAT",
        # not argparse choices: the format registry (core/ingest/formats.py) is read when the file is, so a
        # format registered there is a valid --format without a second entry; an unknown name exits 2 listing them
        help=f"the file's layout: auto (default: recognised from its fields; an error lists the layouts tried), "
        f"{', '.join(import_formats())}, or any other registered format",
    )
    p.add_argument("path", help="file or directory to import (a directory of one layout's files is one dataset)")
    p.add_argument(
        "--dataset", help="dataset name (default: the file name); an existing dataset gets the file's new battles"
    )
    p.add_argument("--judge", help="judge name for the file's judgments (softelo; default softelo-judge)")
    p.add_argument(
        "--annotator",
        help="AlpacaEval results/ tree: the annotator configuration to import when it holds several",
    )
    p.add_argument(
        "--baseline",
        help="Arena-Hard directory: the model its judgments are against when their records name none "
        "(default: the one answering model no judgment judges, else gpt-4-0314 as Arena-Hard v0.1 assumes)",
    )
    p.add_argument(
        "--leaderboards",
        choices=("check", "warn"),
        default="check",
        help="bundle: its printed leaderboards are recomputed from its tables; one that differs refuses the "
        "import (check, the default) or is imported with a note (warn)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import IngestError, StoreError
    from core.app.data import prepare_import, write_import

    try:
        # validated before the store is opened: a rejected file creates no store and changes none
        prepared = prepare_import(
            args.path,
            args.format,
            dataset=args.dataset,
            judge=args.judge,
            annotator=args.annotator,
            leaderboards=args.leaderboards,
            baseline=args.baseline,
        )
    except IngestError as exc:
        raise UserError(str(exc)) from None
    store = open_store(args.db, read_only=False)
    try:
        result = write_import(store, prepared)
    except (IngestError, StoreError) as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    graded = f", {result.n_grades} single-answer grades" if result.n_grades else ""
    if args.json:
        print_json(result.__dict__)
    elif result.status == "already-imported" and args.dataset is not None and args.dataset != result.dataset:
        # the user asked for another dataset and would otherwise find it missing with exit 0
        raise UserError(
            f"{args.path} is already in dataset {result.dataset!r} (the same content was imported there); "
            f"dataset {args.dataset!r} was not created. To have a copy under that name: python -m core export "
            f"--db {args.db} --dataset {result.dataset} --bundle copy.zip, then import copy.zip --dataset "
            f"{args.dataset}"
        )
    elif result.status == "already-imported":
        print(f"{args.path} was already imported as dataset {result.dataset!r}; nothing changed", file=sys.stderr)
    elif result.status == "added":
        print(
            f"added {args.path} to dataset {result.dataset!r}: {result.n_battles} new battles, "
            f"{result.n_votes} votes, {result.n_judgments} judgments, {result.n_completions} completions{graded}"
        )
    else:
        print(
            f"imported {args.path} as dataset {result.dataset!r}: {result.n_battles} battles, "
            f"{result.n_votes} votes, {result.n_judgments} judgments, {result.n_completions} completions{graded}"
        )
    return 0
