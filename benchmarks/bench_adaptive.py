"""The adaptive design against the fixed one: judge calls, interval width, error and coverage (METHODS §4).

    python benchmarks/bench_adaptive.py            # the figures in docs/benchmarks.md
    python benchmarks/bench_adaptive.py --quick    # fewer arenas and models, under a minute

1. Simulated arenas with known truth (``core.stats.adaptive_sim``): demo-shaped arenas (47 human-rated models,
   600 prompts), hidden new models drawn over the range widened by 150 Elo both ways (so some are stronger or
   weaker than every anchor); each placed by the fixed design (10 anchors, every shared prompt, both orders) and
   by the adaptive one (default settings), both in the same run.
2. A replay of real judgments: ``softelo_sample_annotations.csv`` (1,000 real LMArena battles, 14 models, a human
   vote and a real judge verdict each), read in place from ``../shared/datasets`` (or ``ARENA_DATA_HOME``).
   Each model in turn is the new one: the others' human Elo (Bradley–Terry on the human votes of every
   battle) is the truth and their judge Elo (on the judge's verdicts of the battles without the new model) places
   it; a judge call of the new model against an anchor is answered by the real verdict of its next unused real
   battle with that anchor.  Calibration: the other models' residual judge − human Elo and their Fisher SE
   (not the Leaderboard's held-out protocol; a simplification stated with the figures).

Ratios are against the fixed design measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.domain import ELO_PER_LOGIT
from core.stats.adaptive import (
    AdaptiveConfig,
    Round,
    fit_rating,
    next_round,
    placement,
    stop_reason,
)
from core.stats.adaptive_sim import compare
from core.stats.conformal import calibrate

ALPHAS = (0.1, 0.2)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    cols = {"calls": "mean", "half_0.1": "mean", "error": "mean", "covered_0.1": "mean", "covered_0.2": "mean"}
    out = frame.groupby("design").agg(cols).rename(columns={"half_0.1": "width_0.1"})
    out["width_0.1"] *= 2
    out["n"] = frame.groupby("design").size()
    return out


def report(name: str, frame: pd.DataFrame) -> None:
    s = summary(frame)
    print(f"\n## {name}")
    print(s.round(3).to_string())
    a, f = s.loc["adaptive"], s.loc["fixed"]
    print(
        f"calls fixed/adaptive {f['calls'] / a['calls']:.2f}×; "
        f"width adaptive/fixed {a['width_0.1'] / f['width_0.1']:.3f}; "
        f"error adaptive/fixed {a['error'] / f['error']:.3f}"
    )
    if "outside" in frame:
        for flag, part in frame.groupby("outside"):
            p = summary(part)
            label = "beyond every anchor" if flag else "inside the anchors' range"
            print(
                f"  {label} (n={int(p['n'].iloc[0])}): calls fixed/adaptive "
                f"{p.loc['fixed', 'calls'] / p.loc['adaptive', 'calls']:.2f}×, width adaptive/fixed "
                f"{p.loc['adaptive', 'width_0.1'] / p.loc['fixed', 'width_0.1']:.3f}, coverage α=0.1 "
                f"{p.loc['adaptive', 'covered_0.1']:.3f} / {p.loc['fixed', 'covered_0.1']:.3f} (adaptive / fixed)"
            )
    if "stop" in frame:
        print("  adaptive stop reasons:", frame.loc[frame["design"] == "adaptive", "stop"].value_counts().to_dict())


# ------------------------------------------------------------------ replay of real judgments
def _bt(i: np.ndarray, j: np.ndarray, y: np.ndarray, m: int, iters: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Bradley–Terry on the Elo scale (mean 0) with its Fisher SE; a tiny ridge keeps a perfect record finite."""
    theta = np.zeros(m)
    lam = 1e-4
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
        g = np.zeros(m)
        np.add.at(g, i, y - p)
        np.add.at(g, j, p - y)
        w = p * (1 - p)
        h = np.zeros((m, m))
        np.add.at(h, (i, i), w)
        np.add.at(h, (j, j), w)
        np.add.at(h, (i, j), -w)
        np.add.at(h, (j, i), -w)
        h += lam * np.eye(m)
        step = np.linalg.solve(h, g - lam * theta)
        theta += step
        if np.abs(step).max() < 1e-9:
            break
    cov = np.linalg.pinv(h - lam * np.eye(m))  # the centred parameters' covariance: no ridge in it
    return (theta - theta.mean()) * ELO_PER_LOGIT, np.sqrt(np.clip(np.diag(cov), 0, None)) * ELO_PER_LOGIT


def replay(path: Path, cfg: AdaptiveConfig, reps: int, seed: int) -> pd.DataFrame:
    raw = pd.read_csv(path)
    raw = raw[raw["human_pref"].isin([0, 0.5, 1]) & raw["judge_pref"].isin([0, 0.5, 1])]
    models = sorted(set(raw["model_a"]) | set(raw["model_b"]))
    code = {m: k for k, m in enumerate(models)}
    ia, ib = raw["model_a"].map(code).to_numpy(), raw["model_b"].map(code).to_numpy()
    human_y = 1 - raw["human_pref"].to_numpy(float)  # 1: a wins
    judge_y = 1 - raw["judge_pref"].to_numpy(float)
    human, _ = _bt(ia, ib, human_y, len(models))
    rng = np.random.default_rng(seed)
    rows = []
    for new in range(len(models)):
        others = [k for k in range(len(models)) if k != new]
        keep = (ia != new) & (ib != new)
        remap = {k: n for n, k in enumerate(others)}
        g, se = _bt(
            np.array([remap[k] for k in ia[keep]]), np.array([remap[k] for k in ib[keep]]), judge_y[keep], len(others)
        )
        h = human[others]
        shift = h.mean() - g.mean()  # both scales centred on the rated models
        g = g + shift
        residual = g - h
        quantiles = {a: calibrate(residual, se, a, score="floor") for a in ALPHAS}
        # the new model's real battles against each anchor: (anchor, its score, 1 win / 0.5 tie / 0 loss)
        mine = ~keep
        opp = np.where(ia[mine] == new, ib[mine], ia[mine])
        score = np.where(ia[mine] == new, judge_y[mine], 1 - judge_y[mine])
        names = [models[k] for k in others]
        human_elo = dict(zip(names, h, strict=True))
        judge_elo = dict(zip(names, g, strict=True))
        for rep in range(reps):
            battles: dict[str, list[float]] = {}
            for o, s in zip(opp, score, strict=True):
                battles.setdefault(models[o], []).append(float(s))
            for name in battles:
                battles[name] = list(rng.permutation(battles[name]))
            ordered = {name: list(range(len(v))) for name, v in battles.items()}
            truth = float(human[new])
            # fixed: 10 anchors evenly spaced in human Elo, every battle with them
            rated = sorted((n for n in names if n in battles), key=lambda n: -human_elo[n])
            picks = np.unique(np.round(np.linspace(0, len(rated) - 1, min(10, len(rated)))).astype(int))
            fixed_pairs = [(rated[i], p) for i in picks for p in ordered[rated[i]]]
            placed = {"fixed": (fixed_pairs, "every planned battle")}
            # adaptive, one call per battle (the file holds one order)
            design = AdaptiveConfig(
                placement_anchors=cfg.placement_anchors,
                placement_prompts=cfg.placement_prompts,
                round_size=cfg.round_size,
                share=cfg.share,
                stable_rounds=cfg.stable_rounds,
                orders=1,
            )
            cap = len(fixed_pairs)
            chosen: list[tuple[str, int]] = placement(human_elo, ordered, design)[:cap]
            rounds: list[Round] = []
            q = quantiles[0.1]
            while True:
                o = np.array([judge_elo[n] for n, _ in chosen])
                y = np.array([battles[n][p] for n, p in chosen])
                est, s_e = fit_rating(o, y)
                half = float(q.half_width(s_e)) if q.finite else float("inf")
                rounds.append(Round(len(chosen), est, s_e, q.sigma, half, None))
                remaining = sum(len(v) for v in ordered.values()) - len(chosen)
                reason = stop_reason(rounds, design, cap, remaining)
                if reason is None:
                    more = next_round(est, s_e, judge_elo, ordered, set(chosen), design, max_calls=cap - len(chosen))
                    if not more:
                        reason = "budget" if cap - len(chosen) < design.round_size else "exhausted"
                    chosen += more
                if reason is not None:
                    break
            placed["adaptive"] = (chosen, reason)
            for design_name, (pairs, why) in placed.items():
                o = np.array([judge_elo[n] for n, _ in pairs])
                y = np.array([battles[n][p] for n, p in pairs])
                est, s_e = fit_rating(o, y)
                row = {
                    "new": models[new],
                    "rep": rep,
                    "design": design_name,
                    "calls": len(pairs),
                    "error": abs(est - truth),
                    "stop": why,
                }
                for a in ALPHAS:
                    half = float(quantiles[a].half_width(s_e))
                    row[f"half_{a}"] = half
                    row[f"covered_{a}"] = abs(est - truth) <= half
                rows.append(row)
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 arenas × 50 hidden models per σ; 3 replays per model")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n_arenas, n_hidden, reps = (2, 50, 3) if args.quick else (8, 50, 20)
    cfg = AdaptiveConfig()
    print(
        f"adaptive settings: placement {cfg.placement_anchors} anchors × {cfg.placement_prompts} prompts, rounds of "
        f"{cfg.round_size} calls, stop at sampling share < {cfg.share}, or rank interval unchanged > "
        f"{cfg.stable_rounds} rounds while the calls doubled"
    )
    for sigma in (20.0, 40.0):
        t0 = time.perf_counter()
        frame = compare(n_arenas=n_arenas, n_hidden=n_hidden, sigma=sigma, cfg=cfg, seed=args.seed)
        report(
            f"simulated arenas, σ = {sigma:.0f} Elo ({n_arenas} arenas × {n_hidden} hidden models, "
            f"{time.perf_counter() - t0:.0f} s)",
            frame,
        )
    t0 = time.perf_counter()
    n_a, n_h = (2, 25) if args.quick else (6, 25)
    frame = compare(n_arenas=n_a, n_hidden=n_h, multipliers=(0.1, 1.0, 4.0, 10.0), cfg=cfg, seed=args.seed + 1)
    print(
        f"\n## budgets of 1/10, 1, 4 and 10× a calibration model's calls, σ = 20 ({n_a} arenas × {n_h} hidden "
        f"models, {time.perf_counter() - t0:.0f} s): coverage α = 0.1 / 0.2, mean calls, mean width"
    )
    table = frame.groupby(["multiplier", "design"]).agg(
        coverage_01=("covered_0.1", "mean"),
        coverage_02=("covered_0.2", "mean"),
        calls=("calls", "mean"),
        width=("half_0.1", lambda h: 2 * h.mean()),
    )
    print(table.round(3).to_string())
    home = Path(os.environ.get("ARENA_DATA_HOME", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
    path = home / "softelo_sample_annotations.csv"
    if not path.exists():
        print(f"\n(no replay: {path} is absent)")
        return 0
    t0 = time.perf_counter()
    frame = replay(path, cfg, reps, args.seed)
    report(
        f"replay of real judgments: {path.name}, 14 models × {reps} shuffles ({time.perf_counter() - t0:.0f} s)", frame
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
