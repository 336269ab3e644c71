"""``python -m core consistency``: judge consistency as a proxy for the judge's Elo (METHODS §8)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store


def register(sub) -> None:
    p = sub.add_parser("consistency", help="judge consistency vs the judges' own arena Elo")
    p.add_argument("file", nargs="?", help="contests CSV: judge, first, second, question_id, winner")
    p.add_argument("--db")
    p.add_argument("--dataset")
    p.add_argument("--elo", help="CSV with judge, arena_elo (the judges' own Elo)")
    p.add_argument("--contestant-elo", help="CSV with model, elo: needed for --top-matchups")
    p.add_argument("--top-matchups", type=int, help="use only the K matchups with the largest contestant Elo gap")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _read_csv(path: str, cols: tuple[str, ...]) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: file does not exist")
    try:
        df = pd.read_csv(p)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: unreadable CSV ({exc})") from None
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UserError(f"{p}, field '{missing[0]}': missing required column (found {list(df.columns)})")
    return df


def run(args) -> int:
    from core.consistency import study
    from core.store import StoreError

    t0 = time.perf_counter()
    if args.file:
        contests = _read_csv(args.file, ("judge", "first", "second", "question_id", "winner"))
        contests["winner"] = contests["winner"].astype(str)
    elif args.db and args.dataset:
        with open_store(args.db, read_only=True) as store:
            try:
                contests = store.contests_frame(args.dataset)
            except StoreError as exc:
                raise UserError(str(exc)) from None
    else:
        raise UserError("give a contests FILE, or --db and --dataset")
    if contests.empty:
        raise UserError("no contests with a verdict to score")
    elo = None
    if args.elo:
        e = _read_csv(args.elo, ("judge", "arena_elo"))
        elo = e.set_index("judge")["arena_elo"].astype(float)
    contestant = None
    if args.contestant_elo:
        c = _read_csv(args.contestant_elo, ("model", "elo"))
        contestant = c.set_index("model")["elo"].astype(float)
    if args.top_matchups is not None and contestant is None:
        raise UserError("--top-matchups needs --contestant-elo (the contested models' Elo)")
    s = study(contests, elo, contestant, args.top_matchups)
    judges = [{"judge": r["judge"], "consistency": r["consistency"], "n_contests": int(r["n_contests"]),
               "arena_elo": r.get("arena_elo"), "first_position_win_rate": r["first_position_win_rate"],
               "first_position_ci": r["first_position_ci"], "predicted_elo": r.get("predicted_elo")}
              for r in s.judges.to_dict("records")]
    out = {"judges": judges, "pearson_r": s.pearson_r, "elo_mae": s.elo_mae, "elo_mae_loo": s.elo_mae_loo,
           "mean_rank_displacement": s.mean_rank_displacement, "slope": s.slope, "intercept": s.intercept,
           "matchups_used": s.matchups_used, "clusters": s.clusters.to_dict("records"),
           "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(clean_json(out))
        return 0
    for j in sorted(judges, key=lambda r: -r["consistency"]):
        print(f"{j['judge']:32s} consistency {j['consistency']:.3f}  first-position {j['first_position_win_rate']:.3f}")
    print(f"Pearson r = {s.pearson_r:.3f}; Elo MAE = {s.elo_mae:.1f} (leave-one-out {s.elo_mae_loo:.1f})")
    return 0
