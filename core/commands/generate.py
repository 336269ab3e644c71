"""``python -m core generate``: a model's answers to a dataset's prompts (resumable; one answer per prompt).

Exit codes: 0 every covered prompt has an answer; 75 some failed (stored with the reason; run the same
command again to retry them); 3 the endpoint refused every call; 130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import sys
import threading

from core.cli import UserError
from core.commands._common import EXIT_RESUME, ProgressLine, stop_on_signals


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generate", help="generate a model's answers to a dataset's prompts (OpenAI-compatible)")
    p.add_argument("--db", required=True)
    p.add_argument("--config", required=True, help="model TOML file: name, base_url, model[, api_key_env, …]")
    p.add_argument("--dataset", required=True)
    p.add_argument(
        "--limit", type=int, help="answer the first N prompts (by id); the same command again completes them"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with stop_on_signals() as stop:
        return _run(args, stop.event, stop.signals)


def _run(args: argparse.Namespace, cancel: threading.Event, received: list[int]) -> int:
    from core.app import StoreError
    from core.app.generation import GenerationStats, generate, load_model_toml
    from core.judging.config import ConfigError

    try:
        cfg = load_model_toml(args.config)
        cfg.api_key()
    except ConfigError as exc:
        raise UserError(str(exc)) from None

    line = ProgressLine()

    def bar(s: GenerationStats) -> None:
        line(f"{s.finished}/{s.planned} answered, {s.failed} failed")

    try:
        plan, stats = generate(args.db, args.dataset, cfg, limit=args.limit, progress=bar, cancel=cancel)
    except (StoreError, ValueError) as exc:
        raise UserError(str(exc)) from None
    finally:
        line.close()
    if not plan.todo:
        print(f"nothing to do: the {plan.defined:,} prompts covered have answers from {cfg.name}", file=sys.stderr)
        return 0
    cost = cfg.cost(stats.prompt_tokens, stats.completion_tokens)
    print(
        f"{cfg.name}: {stats.ok} answers stored, {stats.failed} failed (stored with the reason; run again to retry), "
        f"{stats.prompt_tokens + stats.completion_tokens:,} tokens" + (f" (${cost:,.4f})" if cost is not None else ""),
        file=sys.stderr,
    )
    for err in stats.errors[:3]:
        print(f"  failure: {err}", file=sys.stderr)
    if received:
        return 128 + received[0]
    if stats.failed and not stats.ok:
        return 3
    return EXIT_RESUME if stats.failed or stats.finished < stats.planned else 0
