"""``python -m core consistency``: judge consistency as a proxy for the judge's Elo (METHODS §8)."""

from __future__ import annotations

import argparse
import time

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consistency", help="judge consistency vs the judges' own arena Elo")
    p.add_argument("file", nargs="?", help="contests CSV: judge, first, second, question_id, winner")
    p.add_argument("--db")
    p.add_argument("--dataset")
    p.add_argument("--elo", help="CSV with judge, arena_elo (the judges' own Elo)")
    p.add_argument("--contestant-elo", help="CSV with model, elo: needed for --top-matchups")
    p.add_argument("--top-matchups", type=int, help="use only the K matchups with the largest contestant Elo gap")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.app import StoreError, files
    from core.app.judges import consistency_from_contests
    from core.app.judges import contests as store_contests

    t0 = time.perf_counter()
    try:
        if args.file:
            contests = files.contests(args.file)
        elif args.db and args.dataset:
            with open_store(args.db, read_only=True) as store:
                contests = store_contests(store, args.dataset)
        else:
            raise UserError("give a contests FILE, or --db and --dataset")
        elo = files.elo_series(args.elo, "judge", "arena_elo") if args.elo else None
        contestant = files.elo_series(args.contestant_elo, "model", "elo") if args.contestant_elo else None
        s = consistency_from_contests(contests, elo, contestant, args.top_matchups)
    except (StoreError, ValueError) as exc:
        raise UserError(str(exc)) from None
    judges = [
        {
            "judge": r["judge"],
            "consistency": r["consistency"],
            "n_contests": int(r["n_contests"]),
            "arena_elo": r.get("arena_elo"),
            "first_position_win_rate": r["first_position_win_rate"],
            "first_position_ci": [r["first_position_lower"], r["first_position_upper"]],
            "predicted_elo": r.get("predicted_elo"),
        }
        for r in s.judges.to_dict("records")
    ]
    out = {
        "judges": judges,
        "pearson_r": s.pearson_r,
        "elo_mae": s.elo_mae,
        "elo_mae_loo": s.elo_mae_loo,
        "mean_rank_displacement": s.mean_rank_displacement,
        "slope": s.slope,
        "intercept": s.intercept,
        "matchups_used": s.matchups_used,
        "clusters": s.clusters.to_dict("records"),
        "seconds": time.perf_counter() - t0,
    }
    if args.json:
        print_json(clean_json(out))
        return 0
    for j in sorted(judges, key=lambda r: -r["consistency"]):
        print(f"{j['judge']:32s} consistency {j['consistency']:.3f}  first-position {j['first_position_win_rate']:.3f}")
    print(f"Pearson r = {s.pearson_r:.3f}; Elo MAE = {s.elo_mae:.1f} (leave-one-out {s.elo_mae_loo:.1f})")
    return 0
