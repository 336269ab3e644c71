"""``python -m core mtbench``: the MT-Bench score table of a dataset's single-answer grades."""

from __future__ import annotations

import argparse

from core.cli import UserError, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mtbench",
        help="MT-Bench score per model from single-answer grades (as FastChat's show_result.py --mode single)",
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True, help="a dataset with single-answer grades")
    p.add_argument("--judge", default=None, help="the grading judge (default: the one with the most grades)")
    p.add_argument("--json", action="store_true", help="print JSON rows: model, score, turn_1, turn_2, n, n_dropped")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError, Unavailable
    from core.app.mtbench import display_table, mtbench_view

    with open_store(args.db, read_only=True) as store:
        try:
            view = mtbench_view(store, args.dataset, args.judge)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    if isinstance(view, Unavailable):
        raise UserError(view.reason)
    if args.json:
        s = view.scores
        print_json(
            {
                "dataset": view.dataset,
                "judge": s.judge,
                "judges": list(view.judges),
                "n_grades": s.n_grades,
                "n_dropped": s.n_dropped,
                "rows": s.rows(),
            }
        )
        return 0
    print(view.caption())
    print(display_table(view).to_string(index=False))
    return 0
