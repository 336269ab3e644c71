"""``python -m core leaderboard``: one method's leaderboard from the store."""

from __future__ import annotations

import argparse
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store, required
from core.domain import Slice, parse_slice, slice_label
from core.methods import RATING_METHODS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help=f"a leaderboard from the store ({', '.join(RATING_METHODS)})")
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="judge name (hard and soft methods)")
    p.add_argument("--method", choices=list(RATING_METHODS), help="required unless --list-slices")
    p.add_argument("--tau", type=float, help="soft-target temperature (default: fitted on human votes)")
    p.add_argument("--ci", choices=["sandwich", "bootstrap", "none"], default="sandwich")
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates (or online-Elo shuffles)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--turn", type=int, help="only battles of this conversation turn (human, hard, soft)")
    p.add_argument(
        "--slice",
        action="append",
        metavar="KEY=VALUE",
        help="only the battles whose prompt has KEY=VALUE (repeat to AND several: --slice language=en "
        "--slice category=coding); keys: language, turn, category and the prompt attributes the import kept "
        "(--list-slices)",
    )
    p.add_argument(
        "--list-slices", action="store_true", help="list the slices of --dataset (key, value, battles, votes) and stop"
    )
    p.add_argument(
        "--style-control",
        action="store_true",
        help="Bradley–Terry with style covariates (length, headers, bold, lists) next to the raw fit "
        "(human and hard only; 95%% sandwich intervals)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


STYLE_METHODS = ("human", "hard")


def run_style_control(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.style import style_controlled_leaderboard

    if args.method not in STYLE_METHODS:
        raise UserError(
            f"--style-control is available for --method {' or '.join(STYLE_METHODS)} only, not {args.method!r}"
        )
    if args.method == "hard" and args.judge is None:
        raise UserError("--style-control --method hard needs --judge")
    if args.method == "human" and args.judge is not None:
        raise UserError("--style-control --method human rates the human votes: drop --judge")
    if args.turn is not None or args.tau is not None or args.ci != "sandwich":
        raise UserError("--style-control takes no --turn or --tau, and its intervals are sandwich intervals only")
    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            res = required(style_controlled_leaderboard(store, args.dataset, args.judge, where=args.where))
        except (ValueError, StoreError) as exc:
            raise UserError(str(exc)) from None
    out = res.to_json()
    out["method"] = args.method
    out["slice"] = dict(args.where)
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
        return 0
    print(
        f"style-controlled {args.method} leaderboard of {args.dataset}{_on(args.where)} ({res.n_battles:,} battles"
        + (f", {res.n_votes:,} votes" if res.n_votes is not None else "")
        + ")"
    )
    print(f"{'rank':>4}  {'model':40s} {'elo':>7}  {'95% CI':>18}  {'raw elo':>7} {'raw rank':>8} {'change':>6}")
    for r in res.frame.itertuples():
        ci = f"[{r.lower:7.1f}, {r.upper:7.1f}]" if r.lower == r.lower else f"{'—':>18}"
        print(f"{r.rank:4d}  {r.model:40s} {r.elo:7.1f}  {ci}  {r.elo_raw:7.1f} {r.rank_raw:8d} {r.rank_change:+6d}")
    print("style coefficients (logit per SD of the a − b difference, 95% sandwich CI):")
    for c in res.coefficients.itertuples():
        print(f"  {c.feature:12s} {c.coef:+.3f}  [{c.lower:+.3f}, {c.upper:+.3f}]")
    for issue in res.issues:
        print(f"note: {issue}")
    print(f"note: {res.note}")
    return 0


def _on(where: Slice) -> str:
    return f" on {slice_label(where)}" if where else ""


def list_slices(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.leaderboard import slice_values

    with open_store(args.db, read_only=True) as store:
        try:
            values = slice_values(store, args.dataset)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    if args.json:
        print_json({"dataset": args.dataset, "slices": values.to_dict("records")})
        return 0
    if values.empty:
        print(f"dataset {args.dataset} has no slices (no language, turn, category or prompt attribute)")
        return 0
    print(f"{'key':24s} {'value':32s} {'battles':>8} {'votes':>8}")
    for r in values.itertuples():
        print(f"{r.key:24s} {r.value:32s} {r.n_battles:8,d} {r.n_votes:8,d}")
    return 0


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.leaderboard import ratings

    try:
        args.where = parse_slice(args.slice)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.list_slices:
        return list_slices(args)
    if args.method is None:
        raise UserError("--method is required (one of " + ", ".join(RATING_METHODS) + ")")
    if args.style_control:
        return run_style_control(args)
    if args.tau is not None and not args.tau > 0:
        raise UserError(f"--tau must be positive, got {args.tau}")
    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            res = required(
                ratings(
                    store,
                    args.dataset,
                    args.method,
                    judge=args.judge,
                    tau=args.tau,
                    ci=None if args.ci == "none" else args.ci,
                    n_boot=args.bootstrap,
                    seed=args.seed,
                    turns=None if args.turn is None else (args.turn, args.turn),
                    where=args.where,
                )
            )
        except (ValueError, StoreError) as exc:
            raise UserError(str(exc)) from None
    out = res.to_json()
    out["slice"] = dict(args.where)
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
        return 0
    print(
        f"{args.method} leaderboard of {args.dataset}{_on(args.where)} ({res.n_battles:,} battles"
        + (f", {res.n_votes:,} votes" if res.n_votes is not None else "")
        + (f", τ = {res.tau:.3f}" if res.tau else "")
        + ")"
    )
    apart = res.frame["elo_note"].astype(bool) if "elo_note" in res.frame else None
    # rank: with ties on the 95% intervals (METHODS §10), as the page and the report; position: by Elo alone
    print(f"{'rank':>4} {'position':>8}  {'model':40s} {'elo':>7}")
    for r in res.frame.itertuples():
        if apart is not None and r.elo_note:
            continue
        ci = f"  [{r.lower:7.1f}, {r.upper:7.1f}]" if r.lower == r.lower else ""
        if "order_lower" in res.frame:
            ci = f"  order spread {r.order_lower:7.1f}–{r.order_upper:7.1f}"
        votes = f" votes={r.n_votes}" if "n_votes" in res.frame else ""
        position = getattr(r, "position", r.rank)
        print(f"{r.rank:4d} {position:8d}  {r.model:40s} {r.elo:7.1f}{ci}  battles={r.n_battles}{votes}")
    if apart is not None and apart.any():
        print("not ranked (no maximum-likelihood Elo):")
        for r in res.frame[apart].itertuples():
            print(f"     {r.model:40s} {r.elo_note}")
    for issue in res.issues:
        print(f"note: {issue}")
    return 0
