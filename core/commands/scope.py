"""``python -m core scope``: SCOPE risk–coverage curves with LTT and the baselines (METHODS §6).

Input, one of:

* FILE with columns ``p_fwd``, ``p_rev``, ``human`` ('a' or 'b'): P(a ≻ b)
  from each presentation order and the human vote of each instance;
* FILE in the SoftElo format (model_a, model_b, human_pref, judge_pref,
  scores_a, scores_b): P(a ≻ b) = σ(τ·gap) from the rubric gap of the one
  (order-averaged) judgment, τ fitted by maximum likelihood on the
  human-decisive battles (METHODS §2); instances are the battles where both
  the human and the judge are decisive;
* ``--db PATH --dataset NAME --judge NAME``: a store's battle frame, with
  ``--source`` logprob (default when present), rubric, single or verbal.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store
from core.methods import SCOPE_SOURCES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scope", help="selective judging: SCOPE / LTT / baselines over α (METHODS §6)")
    p.add_argument("file", nargs="?", help="CSV with p_fwd, p_rev, human (a|b), or a SoftElo-format CSV")
    p.add_argument("--db", help="DuckDB store (with --dataset and --judge)")
    p.add_argument("--dataset")
    p.add_argument("--judge")
    p.add_argument(
        "--source",
        choices=list(SCOPE_SOURCES),
        default=None,
        help="where P(a ≻ b) comes from (store default: logprob if present, else rubric; "
        "'single' uses the forward order only)",
    )
    p.add_argument("--alpha", default="0.05,0.1,0.15,0.2,0.25", help="target error rates, comma-separated")
    p.add_argument("--splits", type=int, default=1000, help="random 50/50 calibration/test splits")
    p.add_argument("--delta", type=float, default=0.1, help="LTT: P(risk > α) ≤ δ")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _alphas(text: str) -> tuple[float, ...]:
    try:
        alphas = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"--alpha must be numbers separated by commas, got {text!r}") from None
    if not alphas or any(not 0 < a < 1 for a in alphas):
        raise UserError(f"every --alpha must be in (0, 1), got {text!r}")
    return alphas


def run(args: argparse.Namespace) -> int:
    from core.app import IngestError, StoreError
    from core.app.files import scope_instances
    from core.app.selective import instances_from_store, scope_report

    alphas = _alphas(args.alpha)
    if args.splits < 1:
        raise UserError("--splits must be at least 1")
    if not 0 < args.delta < 1:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    t0 = time.perf_counter()
    try:
        if args.file:
            if args.db or args.dataset or args.judge:
                raise UserError("give either a FILE or --db/--dataset/--judge, not both")
            instances = scope_instances(Path(args.file), args.source)
        else:
            if not (args.db and args.dataset and args.judge):
                raise UserError("give a FILE, or --db, --dataset and --judge")
            with open_store(args.db, read_only=True) as store:
                instances = instances_from_store(store, args.dataset, args.judge, args.source)
        out = scope_report(instances, alphas, n_splits=args.splits, delta=args.delta, seed=args.seed)
    except (IngestError, StoreError, ValueError) as exc:
        raise UserError(str(exc).replace(" Nothing was imported.", "")) from None
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
        return 0
    print(f"{out['n_instances']} instances, {args.splits} splits, δ = {args.delta}")
    for m, d in out["methods"].items():
        cells = []
        for a, r, c, e in zip(alphas, d["risk_mean"], d["coverage_mean"], d["empty_splits"]):
            risk = "—" if r is None or not math.isfinite(r) else f"{r:.3f}"
            cells.append(f"α={a:.2f}: risk {risk} cov {c:.2f}" + (f" ({e} empty)" if e else ""))
        print(f"{m:>9}  " + "  ".join(cells))
    for name, q in out["uncertainty"].items():
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in q.items()))
    return 0
