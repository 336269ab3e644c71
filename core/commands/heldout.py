"""``python -m core heldout``: the Soft-Elo held-out protocol with conformal intervals."""

from __future__ import annotations

import math
import time

import numpy as np

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store


def register(sub) -> None:
    p = sub.add_parser("heldout", help="leave-one-model-out Hard/Soft-Elo vs human Elo with conformal intervals")
    p.add_argument("file", nargs="?", help="SoftElo-format CSV (or use --db/--dataset/--judge)")
    p.add_argument("--format", choices=["softelo"], default="softelo")
    p.add_argument("--db")
    p.add_argument("--dataset")
    p.add_argument("--judge")
    p.add_argument("--bootstrap", type=int, default=20)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def load_frame(args):
    from core.ingest import IngestError, read_softelo_frame
    from core.store import StoreError

    if args.file:
        try:
            return read_softelo_frame(args.file)
        except IngestError as exc:
            raise UserError(str(exc)) from None
    if not (args.db and args.dataset and args.judge):
        raise UserError("give a FILE, or --db, --dataset and --judge")
    with open_store(args.db, read_only=True) as store:
        try:
            return store.battle_frame(args.dataset, args.judge)
        except StoreError as exc:
            raise UserError(str(exc)) from None


def run(args) -> int:
    from core.conformal import evaluate_splits
    from core.heldout import leave_one_model_out

    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    t0 = time.perf_counter()
    frame = load_frame(args)
    if frame["human_y"].notna().sum() == 0:
        raise UserError("no battle has a human vote: the held-out protocol compares judge Elo with human Elo")
    res = leave_one_model_out(frame, n_boot=args.bootstrap, seed=args.seed)
    table, summary = res.table, res.summary().set_index("method")
    methods = {}
    for name in res.methods:
        if name not in summary.index:
            continue
        s = summary.loc[name]
        ev = evaluate_splits(table[f"{name}_resid"], table[f"{name}_se"], args.alpha, n_splits=args.splits,
                             seed=args.seed)
        from core.conformal import conformal_quantile, scores

        q = conformal_quantile(scores(table[f"{name}_resid"], table[f"{name}_se"]), args.alpha)
        conf = {"alpha": args.alpha, "qhat": q.qhat if math.isfinite(q.qhat) else None,
                "coverage": ev.coverage_mean, "median_width": ev.width_mean, "coverage_min": ev.coverage_min,
                "coverage_max": ev.coverage_max, "n_calibration_models": q.n}
        if not math.isfinite(q.qhat):
            conf["reason"] = q.reason
        if ev.n_infinite:
            conf["split_note"] = (f"{ev.n_infinite} of {ev.n_splits} splits had a calibration half too small for "
                                  f"α = {args.alpha:g} (unbounded intervals; widths averaged over the others)")
        methods[name] = {"n_models": int(s["n_models"]), "mae": s["mae"], "spearman": s["spearman"],
                         "kendall": s["kendall"], "median_se": s["median_se"], "conformal": conf}
    models = [
        {"model": r["model"], "human_elo": r["human_elo"], "hard_elo": r.get("hard_elo"), "soft_elo": r.get("soft_elo"),
         "hard_se": r.get("hard_se"), "soft_se": r.get("soft_se"), "n_target_battles": int(r["n_target_battles"]),
         "tau": r["tau"]}
        for r in table.to_dict("records")
    ]
    out = {"tau": {"full": res.tau_full, "heldout_mean": float(np.nanmean(table["tau"])) if len(table) else None},
           "methods": methods, "models": models, "skipped": res.skipped, "seconds": time.perf_counter() - t0}
    if res.tau_full is None:
        out["tau"]["reason"] = res.tau_reason
    if args.json:
        print_json(clean_json(out))
        return 0
    print(f"τ (all battles) = {res.tau_full}; mean held-out τ = {out['tau']['heldout_mean']}")
    for name, m in methods.items():
        c = m["conformal"]
        q = "∞ (" + c.get("reason", "") + ")" if c["qhat"] is None else f"{c['qhat']:.2f}"
        print(f"{name:8s} MAE {m['mae']:6.1f}  Spearman {m['spearman']:.3f}  Kendall {m['kendall']:.3f}  q̂ {q}")
    return 0
