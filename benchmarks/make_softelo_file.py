"""Generate a paper-scale SoftElo-format CSV (default 25,000 battles, 55 models).

Human votes come from Bradley–Terry on true strengths with ~35% ties (the
SoftElo sample's share); the judge's six rubric scores per side are 1–10 with
half points and a mean gap stretched relative to human preference strength.

    python benchmarks/make_softelo_file.py --out benchmarks/out/softelo_25k.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

CRITERIA = ("adherence", "helpfulness", "factuality", "completeness", "clarity", "fluency")


def make(n_battles: int = 25_000, n_models: int = 55, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 0.7, n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    d = theta[a] - theta[b]
    tie = rng.random(n_battles) < 0.35
    human = np.where(tie, 0.5, np.where(rng.random(n_battles) < 1 / (1 + np.exp(-d)), 0.0, 1.0))
    gap = (d + rng.normal(0, 0.5, n_battles)) / 0.6
    centre = rng.normal(8.0, 0.8, n_battles)
    noise = rng.normal(0, 0.6, (len(CRITERIA), n_battles))
    sa = np.clip(np.round(2 * (centre + gap / 2 + noise)) / 2, 1, 10)
    sb = np.clip(np.round(2 * (centre - gap / 2 - noise[::-1])) / 2, 1, 10)
    realised = (sa - sb).mean(axis=0)
    judge = np.where(np.abs(realised) < 0.1, 0.5, np.where(realised > 0, 0.0, 1.0))
    names = np.array([f"model-{k:02d}" for k in range(n_models)])
    fmt = lambda s: [str({c: float(s[k, i]) for k, c in enumerate(CRITERIA)}) for i in range(n_battles)]
    return pd.DataFrame(
        {
            "row_id": [f"b{i:06d}" for i in range(n_battles)],
            "model_a": names[a],
            "model_b": names[b],
            "human_pref": human,
            "judge_pref": judge,
            "scores_a": fmt(sa),
            "scores_b": fmt(sb),
            "meta_lang": rng.choice(["en", "ru", "zh", "de"], n_battles, p=[0.6, 0.15, 0.15, 0.1]),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/out/softelo_25k.csv")
    ap.add_argument("--battles", type=int, default=25_000)
    ap.add_argument("--models", type=int, default=55)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    make(args.battles, args.models, args.seed).to_csv(out, index=False)
    print(f"wrote {args.battles} battles over {args.models} models to {out}")


if __name__ == "__main__":
    main()
