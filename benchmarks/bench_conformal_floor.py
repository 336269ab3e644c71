"""The conformal interval's floor (issue #46, METHODS §4): coverage when a new model is judged on k times the
calibration models' battles, for the old score |r|/SE and the floor score |r|/√(SE² + σ̂²).

    python benchmarks/bench_conformal_floor.py [--reps 4000] [--quick]

1. Simulation (``core.stats.conformal_sim``): r_i = b_i + e_i, b_i ~ N(0, σ²), e_i ~ N(0, SE_i²), SE_i ~ U(10, 30),
   20 calibration models, σ = 20; new models at SE/√k for k ∈ {0.1, 1, 4, 10}; coverage ± MC-SE and mean width at
   α = 0.1 and 0.2 for every form (se, floor (drawn), floor-moments, jackknife+, full).
2. Robustness grid: n ∈ {10, 20, 48} × σ ∈ {0, 5, 10, 20, 40}: the floor score's worst coverage shortfall in
   MC-SEs over k and α, and the old score's coverage at 10×.
3. The demo arena (``simulate_arena(0)``, judge-strong, leave-one-model-out table): each model in turn is the new
   model, calibrated on the others, with its SE shrunk as k times the battles would (its residual held); and
   200 random half/half splits at k = 1 (coverage and width: the floor's price where nothing shifts).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.stats.conformal import calibrate, evaluate_splits
from core.stats.conformal_sim import simulate_coverage


def _simulation(reps: int) -> None:
    d = simulate_coverage(n_cal=20, sigma=20.0, reps=reps, seed=2026)
    print(f"\n1. Simulation: 20 calibration models, SE ~ U(10, 30), σ = 20, {reps} pools × 10 new models per k")
    for alpha, g in d.groupby("alpha"):
        print(f"   α = {alpha:g} (nominal {1 - alpha:.2f}); coverage ± MC-SE / mean width (Elo)")
        print("   " + "form".ljust(14) + "".join(f"k = {k:g}".rjust(22) for k in sorted(g["multiplier"].unique())))
        for form, h in g.groupby("form", sort=False):
            cells = "".join(f"{r.coverage:.3f} ± {r.mc_se:.3f} / {r.mean_width:5.0f}".rjust(22) for r in h.itertuples())
            print("   " + form.ljust(14) + cells)
        se = g[g["form"] == "se"].set_index("multiplier")["mean_width"]
        fl = g[g["form"] == "floor"].set_index("multiplier")["mean_width"]
        print("   width ratio floor / se:" + "".join(f"{fl[k] / se[k]:.2f}".rjust(8) for k in se.index))
        fails = g.loc[g["form"] == "floor", "c_fails"].iloc[0]
        print(f"   pools with q̂ < 1 (no containment of the full-conformal interval): {fails:.4f}")


def _grid(reps: int) -> None:
    print(f"\n2. Robustness grid ({reps} pools each): floor's worst (coverage − (1 − α)) / MC-SE; se's coverage at 10×")
    for n in (10, 20, 48):
        cells = []
        for sigma in (0.0, 5.0, 10.0, 20.0, 40.0):
            d = simulate_coverage(n_cal=n, sigma=sigma, reps=reps, seed=7, forms=("se", "floor"))
            fl = d[d["form"] == "floor"]
            gap = ((fl["coverage"] - (1 - fl["alpha"])) / fl["mc_se"]).min()
            old = d[(d["form"] == "se") & (d["multiplier"] == 10.0) & (d["alpha"] == 0.1)]["coverage"].iloc[0]
            cells.append(f"σ={sigma:<4g} {gap:+5.1f} {old:.2f}")
        print(f"   n = {n:<3}" + "  |  ".join(cells))


def _demo(quick: bool) -> None:
    from core.app.leaderboard import heldout
    from core.simulate import simulate_arena
    from core.stats.heldout import HeldoutResult
    from core.store import Store

    t0 = time.perf_counter()
    store = Store.open(":memory:")
    store.write_dataset(simulate_arena(0))
    held = heldout(store.battle_frame("demo", "judge-strong"))
    assert isinstance(held, HeldoutResult)
    t = held.table
    print(f"\n3. Demo arena, judge-strong, {len(t)} held-out models ({time.perf_counter() - t0:.1f} s to build)")
    for alpha in (0.1, 0.2):
        for m in ("soft", "hard"):
            r, se = t[f"{m}_resid"].to_numpy(float), t[f"{m}_se"].to_numpy(float)
            for score in ("se", "floor"):
                q = calibrate(r, se, alpha, score)
                cover, width = [], []
                for k in (1, 4, 10, 16):
                    hit, w = [], []
                    for i in range(len(r)):
                        keep = np.arange(len(r)) != i
                        qi = calibrate(r[keep], se[keep], alpha, score)
                        half = float(qi.half_width(se[i] / np.sqrt(k)))
                        hit.append(abs(r[i]) <= half)
                        w.append(2 * half)
                    cover.append(np.mean(hit))
                    width.append(np.median(w))
                ev = evaluate_splits(r, se, alpha, n_splits=50 if quick else 200, seed=1, score=score)
                print(
                    f"   α = {alpha:g} {m:<4} {score:<5} q̂ = {q.qhat:5.2f} σ̂ = {q.sigma:5.1f} | leave-one-out coverage "
                    f"k = 1/4/10/16: {' / '.join(f'{c:.2f}' for c in cover)} (median width "
                    f"{' / '.join(f'{w:.0f}' for w in width)}) | splits: coverage {ev.coverage_mean:.3f}, "
                    f"width {ev.width_mean:.1f}"
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000, help="simulated calibration pools (default 4000)")
    ap.add_argument("--quick", action="store_true", help="fewer pools and splits (a smoke run)")
    args = ap.parse_args()
    reps = 500 if args.quick else args.reps
    pd.set_option("display.width", 200)
    t0 = time.perf_counter()
    _simulation(reps)
    _grid(max(reps // 2, 300))
    _demo(args.quick)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
