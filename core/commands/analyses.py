"""``python -m core alignment|aggregation|budget|languages``: the papers' analyses headless."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store, required

if TYPE_CHECKING:
    from core.app import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alignment", help="accuracy vs pairwise rankings (Kendall τ, K_D; discriminative pairs)")
    _common_args(p)
    p.add_argument(
        "--bootstrap", type=int, default=100, help="bootstrap replicates (models resampled) for the Kendall τ intervals"
    )
    p.set_defaults(func=run_alignment)

    p = sub.add_parser("aggregation", help="win rate vs Bradley–Terry vs online Elo vs TrueSkill")
    _common_args(p)
    p.add_argument("--reference", choices=["auto", "truth", "accuracy", "human"], default="auto")
    p.add_argument("--shuffles", type=int, default=50, help="battle orders averaged for online Elo")
    p.set_defaults(func=run_aggregation)

    p = sub.add_parser("budget", help="Hard- vs Soft-Elo held-out accuracy as a function of the judged budget")
    _common_args(p, judge_required=True)
    p.add_argument("--budgets", default="25,50,100,200", help="judged battles per model, comma separated")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.1)
    p.set_defaults(func=run_budget)

    p = sub.add_parser("languages", help="per-language battle counts, τ, Hard/Soft MAE and Spearman")
    _common_args(p, judge_required=True)
    p.add_argument(
        "--min-decisive",
        type=int,
        default=50,
        help="decisive human battles a language needs for its own τ (below: warning)",
    )
    p.set_defaults(func=run_languages)


def _common_args(p: argparse.ArgumentParser, judge_required: bool = False) -> None:
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", required=judge_required)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")


def _run(args: argparse.Namespace, fn: Callable[[Store], dict]) -> int:
    from core.app import StoreError

    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            out = fn(store)
        except (ValueError, StoreError) as exc:
            raise UserError(str(exc)) from None
    out["seconds"] = time.perf_counter() - t0
    print_json(clean_json(out))
    return 0


def run_alignment(args: argparse.Namespace) -> int:
    from core.app.analyses import alignment

    def fn(store: Store) -> dict:
        res = required(alignment(store, args.dataset, args.judge, n_boot=args.bootstrap, seed=args.seed))
        return {
            "discriminative_share": res.discriminative_share,
            "rows": res.table().to_dict("records"),
            "direct_judge": None if res.direct is None else res.direct.as_dict(),
            "finding": res.finding,
            "accuracy": res.accuracy.to_dict("records"),
        }

    return _run(args, fn)


def run_aggregation(args: argparse.Namespace) -> int:
    from core.app.analyses import aggregation

    def fn(store: Store) -> dict:
        res = required(
            aggregation(
                store, args.dataset, args.judge, reference=args.reference, n_shuffles=args.shuffles, seed=args.seed
            )
        )
        return {"reference": res.reference_name, "n_battles": res.n_battles, "methods": res.table.to_dict("records")}

    return _run(args, fn)


def run_budget(args: argparse.Namespace) -> int:
    from core.app.analyses import budget

    try:
        budgets = [int(x) for x in args.budgets.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--budgets must be whole numbers separated by commas, got {args.budgets!r}") from None
    if not budgets or min(budgets) < 2:
        raise UserError("--budgets needs at least one budget of 2 or more battles per model")

    def fn(store: Store) -> dict:
        res = required(
            budget(
                store, args.dataset, args.judge, budgets=budgets, repeats=args.repeats, alpha=args.alpha, seed=args.seed
            )
        )
        return {
            "budgets": budgets,
            "repeats": args.repeats,
            "curves": res.summary.to_dict("records"),
            "tau_stability": res.tau_summary.to_dict("records"),
        }

    return _run(args, fn)


def run_languages(args: argparse.Namespace) -> int:
    from core.app.analyses import languages

    def fn(store: Store) -> dict:
        res = required(languages(store, args.dataset, args.judge, min_decisive=args.min_decisive))
        return {"pooled_tau": res.pooled_tau, "languages": res.table.to_dict("records"), "warnings": list(res.warnings)}

    return _run(args, fn)
