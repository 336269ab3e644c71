"""``python -m core winrate``: AlpacaEval's numbers for any dataset with a common baseline."""

from __future__ import annotations

import argparse
import math
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "winrate",
        help="win rate against a baseline with its standard error, discrete and length-controlled win rates",
    )
    add_db_arg(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="the judge (default: the dataset's only judge; the human votes when it has none)")
    p.add_argument("--baseline", help="the baseline model (default: the model in every battle)")
    p.add_argument(
        "--arena-hard",
        action="store_true",
        help="the Arena-Hard score instead: the predicted win rate against the baseline of a Bradley–Terry fit "
        "over the judge's graded games, with a 95%% bootstrap interval, as Arena-Hard-Auto's show_result.py",
    )
    p.add_argument(
        "--weight",
        type=int,
        default=None,
        help="with --arena-hard: how many times a strong verdict (A>>B) counts (default 3, Arena-Hard's)",
    )
    p.add_argument(
        "--style-control",
        nargs="?",
        const="v0.1",
        default=None,
        choices=("v0.1", "v2"),
        help="with --arena-hard: control for answer length and markdown (headers, lists, bold), with the features "
        "built as Arena-Hard v0.1's --style-control (the default) or v2.0's --control-features length markdown",
    )
    p.add_argument(
        "--rounds", type=int, default=None, help="with --arena-hard: bootstrap rounds (default 100, Arena-Hard's)"
    )
    p.add_argument("--seed", type=int, default=0, help="with --arena-hard: the bootstrap's seed (default 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run_arena_hard(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.arena_hard import (
        DEFAULT_ROUNDS,
        DEFAULT_WEIGHT,
        SCRIPT_INTERVAL_NOTE,
        arena_hard_view,
        interval_text,
    )

    weight = DEFAULT_WEIGHT if args.weight is None else args.weight
    rounds = DEFAULT_ROUNDS if args.rounds is None else args.rounds
    if weight < 1:
        raise UserError(f"--weight must be a positive integer, got {weight}")
    if rounds < 0:
        raise UserError(f"--rounds must be ≥ 0, got {rounds}")
    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            view = arena_hard_view(
                store,
                args.dataset,
                judge=args.judge,
                baseline=args.baseline,
                weight=weight,
                style_control=args.style_control is not None,
                style_version=args.style_control or "v0.1",
                n_rounds=rounds,
                seed=args.seed,
            )
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    res = view.result
    rows = res.rows.rename(columns={"n_games": "n"})
    if args.json:
        out = {
            "dataset": view.dataset,
            "judge": view.judge,
            "baseline": view.baseline,
            "weight": res.weight,
            "style_control": res.style_version,
            "rounds": res.n_rounds,
            "seed": res.seed,
            "n_games": res.n_games,
            "n_dropped": res.n_dropped,
            "rows": rows.to_dict("records"),
            "coefficients": None if res.coefficients is None else res.coefficients.to_dict("records"),
            "notes": list(view.notes),
            "method": view.method,
            "seconds": time.perf_counter() - t0,
        }
        print_json(clean_json(out))
        return 0
    kind = f"style-controlled ({res.style_version}) Arena-Hard score" if res.style_control else "Arena-Hard score"
    print(
        f"{view.dataset}: {kind} against {view.baseline} (judge {view.judge}; strong verdicts ×{res.weight}, "
        f"{res.n_rounds} bootstrap rounds, seed {res.seed})"
    )
    script = res.script_interval_differs  # Arena-Hard's own script would print another interval: show both
    print(
        f"{'model':32s} {'score':>6s} {'95% CI':>14s}"
        + (f" {'script CI':>14s}" if script else "")
        + f" {'Elo':>7s} {'games':>6s}"
    )
    for r in rows.to_dict("records"):
        ci = interval_text(r["score"], r["lower"], r["upper"])
        script_ci = f" {interval_text(r['score'], r['script_lower'], r['script_upper']):>14s}" if script else ""
        elo = "—" if not math.isfinite(r["elo"]) else f"{r['elo']:.0f}"
        print(f"{r['model'][:32]:32s} {r['score']:6.1f} {ci:>14s}{script_ci} {elo:>7s} {int(r['n']):6d}")
    if script:
        print(f"note: {SCRIPT_INTERVAL_NOTE}")
    if res.coefficients is not None:
        coefs = ", ".join(f"{c['feature']} {c['coef']:+.3f}" for c in res.coefficients.to_dict("records"))
        print(f"style coefficients (logit per sd, in the model's favour): {coefs}")
    for note in view.notes:
        print(f"note: {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.arena_hard:
        return run_arena_hard(args)
    if args.weight is not None or args.style_control is not None or args.rounds is not None:
        raise UserError("--weight, --style-control and --rounds go with --arena-hard")
    from core.app import StoreError
    from core.app.winrate import default_judge, win_rate_view

    t0 = time.perf_counter()
    with open_store(args.db, read_only=True) as store:
        try:
            judge = args.judge if args.judge is not None else default_judge(store, args.dataset)
            view = win_rate_view(store, args.dataset, baseline=args.baseline, judge=judge)
        except (StoreError, ValueError) as exc:
            raise UserError(str(exc)) from None
    rows = view.rows
    if args.json:
        out = {
            "dataset": view.dataset,
            "judge": view.judge,
            "baseline": view.baseline,
            "rows": rows.to_dict("records"),
            "notes": list(view.notes),
            "method": view.method,
            "seconds": time.perf_counter() - t0,
        }
        print_json(clean_json(out))
        return 0
    who = "human votes" if view.judge is None else f"judge {view.judge}"
    print(f"{view.dataset}: win rates against {view.baseline} ({who})")
    print(f"{'model':32s} {'win rate':>13s} {'discrete':>9s} {'LC win rate':>13s} {'avg len':>8s} {'n':>6s}")

    def pct(x: float, se: float) -> str:
        if x is None or math.isnan(x):
            return "undefined"
        return f"{x:5.1f} ± {se:4.1f}" if se == se else f"{x:5.1f}"

    for r in rows.to_dict("records"):
        length = "—" if r["avg_length"] != r["avg_length"] else f"{r['avg_length']:.0f}"
        print(
            f"{r['model'][:32]:32s} {pct(r['win_rate'], r['standard_error']):>13s} {r['discrete_win_rate']:9.1f} "
            f"{pct(r['lc_win_rate'], r['lc_standard_error']):>13s}{'*' if r.get('lc_caveat') else ' '}"
            f"{length:>8s} {int(r['n']):6d}"
        )
    for r in rows.to_dict("records"):
        if r.get("lc_caveat"):
            print(f"* {r['model']}: {r['lc_caveat']}")
    for note in view.notes:
        print(f"note: {note}")
    return 0
