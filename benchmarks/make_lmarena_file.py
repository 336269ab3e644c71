"""Generate an LMArena-format battle file (default 1,000,000 battles, 100 models).

Seeded and realistic: strengths spread over ~500 Elo, popular models battle
more often (Zipf-like pair weights), ~15% ties (some 'tie (bothbad)').

    python benchmarks/make_lmarena_file.py --out benchmarks/out/battles_1m.parquet
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd


def make(n_battles: int = 1_000_000, n_models: int = 100, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.75, n_models)
    popularity = 1.0 / np.arange(1, n_models + 1) ** 0.6
    popularity = rng.permutation(popularity) / popularity.sum()
    a = rng.choice(n_models, n_battles, p=popularity)
    b = rng.choice(n_models, n_battles, p=popularity)
    same = a == b
    while same.any():
        b[same] = rng.choice(n_models, same.sum(), p=popularity)
        same = a == b
    p_a = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    tie = rng.random(n_battles) < 0.15
    a_wins = rng.random(n_battles) < p_a
    winner = np.where(
        tie, np.where(rng.random(n_battles) < 0.3, "tie (bothbad)", "tie"), np.where(a_wins, "model_a", "model_b")
    )
    names = np.array([f"model-{k:03d}" for k in range(n_models)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/out/battles_1m.parquet")
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    make(args.battles, args.models, args.seed).to_parquet(out, index=False)
    print(f"wrote {args.battles} battles over {args.models} models to {out}")


if __name__ == "__main__":
    main()
