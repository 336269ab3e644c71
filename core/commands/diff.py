"""``python -m core diff``: what changed between two snapshots (two bundles, or two datasets of one store)."""

from __future__ import annotations

import argparse

from core.cli import UserError, clean_json, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        help="per-model Elo change between two snapshots with intervals and Holm-controlled verdicts; "
        "added and removed models",
    )
    p.add_argument("old", nargs="?", help="the old snapshot: a bundle written by export --bundle")
    p.add_argument("new", nargs="?", help="the new snapshot: a bundle")
    p.add_argument("--db", help="a store holding both snapshots as datasets (with --dataset-old, --dataset-new)")
    p.add_argument("--dataset-old")
    p.add_argument("--dataset-new")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise error level of the verdicts (Holm)")
    p.add_argument("--judge", help="compare this judge's hard-label Elo instead of the human-vote Elo")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import IngestError
    from core.app.diff import diff_json, diff_tables, load_snapshot

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.db is not None:
        if args.old or args.new or not (args.dataset_old and args.dataset_new):
            raise UserError("--db needs --dataset-old and --dataset-new (and no bundle paths)")
        from core.app import StoreError
        from core.commands._common import open_store

        with open_store(args.db, read_only=True) as store:
            judges = None if args.judge is None else [args.judge]
            try:
                old = store.dataset_tables(args.dataset_old, judges=judges)
                new = store.dataset_tables(args.dataset_new, judges=judges)
            except StoreError as exc:
                raise UserError(str(exc)) from None
    else:
        if not (args.old and args.new) or args.dataset_old or args.dataset_new:
            raise UserError("give two bundles (OLD NEW), or --db with --dataset-old and --dataset-new")
        try:
            old, new = load_snapshot(args.old), load_snapshot(args.new)
        except IngestError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            raise UserError(f"cannot read {exc.filename}: {exc.strerror}") from None
    try:
        result = diff_tables(old, new, alpha=args.alpha, judge=args.judge)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    doc = diff_json(result, judge=args.judge)
    if args.json:
        print_json(clean_json(doc))
        return 0
    print(f"{len(result.rows)} models in both snapshots; {doc['method']}")
    for r in result.rows:
        print(
            f"{r.model:30s} {r.elo_old:7.1f} (#{r.rank_old}) → {r.elo_new:7.1f} (#{r.rank_new})  "
            f"Δ {r.delta:+6.1f} [{r.delta_lower:+.1f}, {r.delta_upper:+.1f}]  {r.verdict}"
        )
    if result.added:
        print("added: " + ", ".join(result.added))
    if result.removed:
        print("removed: " + ", ".join(result.removed))
    return 0
