"""``python -m core evaluations``: the saved evaluations of new models, newest first."""

from __future__ import annotations

import argparse

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluations", help="saved evaluations of new models (python -m core evaluate), newest first")
    add_db_arg(p)
    p.add_argument("--dataset", help="only this dataset's evaluations")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def line(r: dict) -> str:
    """One evaluation in a sentence: its interval and rank range, or why it has none."""
    head = f"evaluation {r['evaluation_id']} ({r['created_at']:%Y-%m-%d %H:%M}) {r['model']} on {r['dataset']}, "
    head += f"judge {r['judge']}, α={r['alpha']:.2f}: "
    if r["status"] != "placed":
        return head + f"{r['status']}: {r['reason']}"
    return head + (
        f"predicted human Elo {r['predicted']:.0f}, {1 - r['alpha']:.0%} interval {r['lower']:.0f}–{r['upper']:.0f}, "
        f"rank #{r['rank_best']}–#{r['rank_worst']} of {r['n_rated'] + 1} ({r['n_judged']} judged battles)"
    )


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError

    with open_store(args.db, read_only=True) as store:
        try:
            df = store.evaluations(args.dataset)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    records = df.astype(object).where(df.notna(), None).to_dict("records")
    if args.json:
        print_json(clean_json([{k: (str(v) if k == "created_at" else v) for k, v in r.items()} for r in records]))
        return 0
    if not records:
        print("no evaluations (run one with `python -m core evaluate`)")
    for r in records:
        print(line(r))
    return 0
