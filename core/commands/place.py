"""``python -m core plan-battles`` and ``python -m core standing``: a new model against human-rated anchors.

The loop: ``generate`` its answers, ``plan-battles`` against anchors, ``judge`` the new battles, then
``standing`` reads its predicted human Elo and conformal interval off the Leaderboard's fits.
"""

from __future__ import annotations

import argparse

from core.cli import UserError, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan-battles", help="add battles of a new model against human-rated anchor models")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, help="the new model (its answers must be in the dataset)")
    p.add_argument("--anchors", type=int, default=10, help="human-rated models to battle, spread over the range")
    p.add_argument("--per-anchor", type=int, help="prompts per anchor (default: every prompt both answered)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="say what would be added; add nothing")
    p.set_defaults(func=run_plan)
    q = sub.add_parser("standing", help="a model's predicted human Elo with its conformal interval")
    add_db_arg(q)
    q.add_argument("--dataset", required=True)
    q.add_argument("--judge", required=True)
    q.add_argument("--model", required=True)
    q.add_argument("--alpha", type=float, default=0.1)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run_standing)


def run_plan(args: argparse.Namespace) -> int:
    from core.app import StoreError, Unavailable
    from core.app.newmodel import plan_battles

    if args.anchors < 1 or (args.per_anchor is not None and args.per_anchor < 1):
        raise UserError("--anchors and --per-anchor must be at least 1")
    with open_store(args.db, read_only=args.dry_run) as store:
        try:
            plan = plan_battles(store, args.dataset, args.model, args.anchors, args.per_anchor, args.seed)
            if isinstance(plan, Unavailable):
                raise UserError(plan.reason)
            added = 0 if args.dry_run else store.add_battles(args.dataset, plan.battles)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    verb = "would add" if args.dry_run else f"added {added} of"
    print(f"{verb} {len(plan.battles)} battles of {args.model} against {', '.join(plan.anchors)} ({plan.rule})")
    return 0


def run_standing(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from core.app import StoreError, Unavailable
    from core.app.newmodel import standing

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    with open_store(args.db, read_only=True) as store:
        try:
            res = standing(store, args.dataset, args.judge, args.model, args.alpha)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    if isinstance(res, Unavailable):
        raise UserError(res.reason)
    if args.json:
        print_json({**asdict(res), "text": res.text()})
    else:
        print(res.text())
    return 0
