"""``python -m core runs``: judge runs with what each covers, how far it got, its tokens and cost."""

from __future__ import annotations

import argparse
import json

from core.cli import clean_json, print_json
from core.commands._common import add_db_arg, open_store

COLUMNS = (
    "run_id",
    "judge",
    "dataset",
    "status",
    "covers",
    "planned",
    "done",
    "failed",
    "parse_errors",
    "deferred",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "started_at",
    "finished_at",
    "message",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="judge runs: definition, progress, tokens and cost (resume with judge --resume)")
    add_db_arg(p)
    p.add_argument("--dataset", help="only this dataset's runs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def describe(definition_json: object) -> str:
    """A run's definition in a few words: "first 240 units (sample all, seed 0)"."""
    if not isinstance(definition_json, str) or not definition_json:
        return "(not recorded)"
    d = json.loads(definition_json)
    if "echo_intervention" in d:
        return f"echo intervention on {d['echo_intervention']} battles (seed {d.get('seed', 0)})"
    text = f"first {d['limit']:,} units" if d.get("limit") else f"all {d.get('units', 0):,} units"
    extra = ", refused calls retried" if d.get("retry_failed") else ""
    return f"{text} (sample {d.get('sample', 'all')}, seed {d.get('seed', 0)}{extra})"


def run(args: argparse.Namespace) -> int:
    from core.app.judging import runs as run_list

    with open_store(args.db, read_only=True) as store:
        df = run_list(store, args.dataset)
    if df.empty:
        if args.json:
            print_json([])
        else:
            print("no judge runs")
        return 0
    df["covers"] = [describe(d) for d in df["definition_json"]]
    rows = df[list(COLUMNS)]
    if args.json:
        records = rows.astype(object).where(rows.notna(), None).to_dict("records")
        print_json(
            clean_json(
                [{k: (str(v) if k.endswith("_at") and v is not None else v) for k, v in r.items()} for r in records]
            )
        )
        return 0
    for r in rows.itertuples():
        cost = "" if r.cost_usd is None or r.cost_usd != r.cost_usd else f", ${r.cost_usd:,.4f}"
        print(
            f"run {r.run_id} {r.judge} on {r.dataset}: {r.status}; {r.covers}; {r.done}/{r.planned} judged, "
            f"{r.failed} refused, {r.parse_errors} unparseable, {r.prompt_tokens + r.completion_tokens:,} tokens{cost}"
            + (f" — {r.message}" if isinstance(r.message, str) and r.message else "")
        )
    return 0
