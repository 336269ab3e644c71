"""``python -m core heldout``: the Soft-Elo held-out protocol with conformal intervals."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store

if TYPE_CHECKING:
    import pandas as pd


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("heldout", help="leave-one-model-out Hard/Soft-Elo vs human Elo with conformal intervals")
    p.add_argument("file", nargs="?", help="SoftElo-format CSV (or use --db/--dataset/--judge)")
    p.add_argument("--format", choices=["softelo"], default="softelo")
    p.add_argument("--db")
    p.add_argument("--dataset")
    p.add_argument("--judge")
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def load_frame(args: argparse.Namespace) -> pd.DataFrame:
    from core.app import IngestError, StoreError
    from core.app.data import battle_frame
    from core.app.files import softelo_frame

    if args.file:
        try:
            return softelo_frame(args.file)
        except IngestError as exc:
            raise UserError(str(exc)) from None
    if not (args.db and args.dataset and args.judge):
        raise UserError("give a FILE, or --db, --dataset and --judge")
    with open_store(args.db, read_only=True) as store:
        try:
            return battle_frame(store, args.dataset, args.judge)
        except StoreError as exc:
            raise UserError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from core.app.residuals import heldout_report

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    t0 = time.perf_counter()
    frame = load_frame(args)
    try:
        out = heldout_report(frame, alpha=args.alpha, n_splits=args.splits, seed=args.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out["seconds"] = time.perf_counter() - t0
    if args.json:
        print_json(clean_json(out))
        return 0
    tau = out["tau"]
    if tau["full"] is None:
        print(f"τ undefined: {tau.get('reason')}")
    else:
        mean = "undefined" if tau["heldout_mean"] is None else f"{tau['heldout_mean']:.4g}"
        print(f"τ (all battles) = {tau['full']:.4g}; mean held-out τ = {mean}")
    for name, m in out["methods"].items():
        if "undefined" in m:
            print(f"{name:8s} undefined: {m['undefined']}")
            continue
        c = m["conformal"]
        q = "∞ (" + c.get("reason", "") + ")" if c["qhat_all_models"] is None else f"{c['qhat_all_models']:.2f}"
        floor = f"  σ̂ {c['sigma_all_models']:.1f} Elo" if c.get("score") == "floor" else ""
        print(f"{name:8s} MAE {m['mae']:6.1f}  Spearman {m['spearman']:.3f}  Kendall {m['kendall']:.3f}  q̂ {q}{floor}")
    return 0
