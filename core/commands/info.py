"""``python -m core info``: what the store holds."""

from __future__ import annotations

import argparse

from core.cli import print_json
from core.commands._common import add_db_arg, open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="datasets, models, votes and judges in the store")
    add_db_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app.data import info as store_info

    with open_store(args.db, read_only=True) as store:
        info = store_info(store)
    if args.json:
        print_json(info)
        return 0
    print(f"store {info['path']} (schema v{info['schema_version']})")
    for d in info["datasets"]:
        print(
            f"- {d['name']} [{d['source']}]: {d['n_models']} models, {_prompts(d)}, "
            f"{d['n_battles']} battles, {d['n_human_votes']} human votes by {d['n_annotators']} annotators, "
            f"{d['n_completions']} completions"
            + (f", {d['n_grades']} single-answer grades" if d.get("n_grades") else "")
        )
        for j in d["judges"]:
            print(f"    judge {j['name']}: {j['n_judgments']} judgments, orders {','.join(j['orders'])}")
    return 0


def _prompts(d: dict) -> str:
    """ "80 questions (160 prompts: one per turn)" for multi-turn data, else "N prompts"."""
    if d.get("n_questions") and d["n_questions"] != d["n_prompts"]:
        return f"{d['n_questions']} questions ({d['n_prompts']} prompts: one per turn)"
    return f"{d['n_prompts']} prompts"
