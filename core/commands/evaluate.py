"""``python -m core evaluate``: a new model's predicted human Elo, from its answers to its standing, in one command."""

from __future__ import annotations

import argparse
import sys

from core.cli import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="a new model: answers, battles against anchors, judgments, its standing")
    p.add_argument("--db", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True, help="the new model's name in the store")
    p.add_argument("--config", help="model TOML to generate missing answers (omit when they are imported)")
    p.add_argument("--judge", required=True, help="judge TOML")
    p.add_argument("--budget", type=int, help="judge calls at most (both orders count)")
    p.add_argument("--anchors", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--prompts", type=int, metavar="N", help="with --config: answer the first N prompts (by id), not all"
    )
    p.add_argument(
        "--calibration",
        type=int,
        default=0,
        metavar="N",
        help="also judge N human-voted battles of the rated models (seeded; skipped where already judged): "
        "the judge's labels there calibrate τ and the interval",
    )
    p.add_argument(
        "--adaptive",
        action="store_true",
        help="the sequential design: a placement, then rounds of the most informative battles until more calls "
        "cannot narrow the interval noticeably (METHODS §4); never more calls than the fixed design",
    )
    p.add_argument(
        "--round-size",
        type=int,
        default=64,
        metavar="N",
        help="with --adaptive: judge calls per round (both orders count; default 64)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError
    from core.app.evaluate import evaluate
    from core.app.generation import load_model_toml
    from core.app.judging import EndpointRefused, EndpointUnreachable, PlanError, load_toml
    from core.judging.config import ConfigError

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.prompts is not None and args.prompts < 1:
        raise UserError(f"--prompts must be at least 1, got {args.prompts}")
    if args.calibration < 0:
        raise UserError(f"--calibration must be at least 0, got {args.calibration}")
    if args.budget is not None and args.budget < 2:
        raise UserError("--budget must be at least 2 judge calls")
    if args.round_size < 2:
        raise UserError(
            f"--round-size must be at least 2 judge calls (one battle in both orders), got {args.round_size}"
        )
    if args.round_size != 64 and not args.adaptive:
        raise UserError("--round-size applies to the adaptive design only: add --adaptive")
    try:
        judge = load_toml(args.judge)
        judge.api_key()
        model_cfg = load_model_toml(args.config) if args.config else None
        if model_cfg is not None:
            model_cfg.api_key()
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    try:
        result = evaluate(
            args.db,
            args.dataset,
            args.model,
            judge,
            model_cfg,
            budget=args.budget,
            n_anchors=args.anchors,
            alpha=args.alpha,
            seed=args.seed,
            calibration=args.calibration,
            prompts=args.prompts,
            adaptive=args.adaptive,
            round_size=args.round_size,
            log=lambda line: print(line, file=sys.stderr),
        )
    except (StoreError, ValueError, PlanError) as exc:
        raise UserError(str(exc)) from None
    except (EndpointUnreachable, EndpointRefused) as exc:
        raise UserError(f"the judge endpoint: {exc}") from None
    print(result.text())
    return 0
