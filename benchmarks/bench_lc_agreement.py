"""LC win rate against AlpacaEval's published column, on every real model in ../shared/datasets.

    python benchmarks/bench_lc_agreement.py

Imports ``alpaca_eval_2/results`` and ``alpaca_eval_more/results`` (annotator
``weighted_alpaca_eval_gpt4_turbo``) into a store in memory, computes the LC win
rate of every model both ways — one length slope for all models (the default) and
one per model (the paper's per-model GLM, the former default) — and prints each
model's Δ to the published ``length_controlled_winrate`` with Spearman's ρ, the
mean and the largest |Δ| per form.  The per-model form is the in-run baseline:
the ratio line compares the two.  The win rate itself is printed too (it must
match to 1e-9; LC only approximately, since AlpacaEval's difficulty is fitted over
its whole leaderboard).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.app.data import import_path  # noqa: E402
from core.stats.winrate import win_rates  # noqa: E402
from core.store import Store  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
BASELINE = "gpt4_1106_preview"
TREES = {
    "alpaca_eval_2": (SHARED / "alpaca_eval_2" / "results", SHARED / "alpaca_eval_2" / "leaderboard.csv"),
    "alpaca_eval_more": (
        SHARED / "alpaca_eval_more" / "results",
        SHARED / "alpaca_eval_more" / "leaderboard_alpaca_eval_2.csv",
    ),
}


def _per_instruction(store: Store, dataset: str) -> pd.DataFrame:
    frame = store.baseline_comparisons(dataset, BASELINE, ANNOTATOR)
    frame = frame[frame["p"].notna()]
    return frame.groupby(["instruction", "model"], as_index=False).agg(
        p=("p", "mean"), length=("length", "mean"), baseline_length=("baseline_length", "mean")
    )


def main() -> int:
    rows = []
    seconds = {"shared": 0.0, "model": 0.0}
    with Store.open(":memory:") as store:
        for name, (tree, board_file) in TREES.items():
            if not tree.exists():
                print(f"missing {tree}: nothing to measure", file=sys.stderr)
                return 2
            import_path(store, tree, "alpaca-eval", dataset=name, annotator=ANNOTATOR)
            per = _per_instruction(store, name)
            board = pd.read_csv(board_file, index_col=0)
            fits = {}
            for slope in ("shared", "model"):
                t0 = time.perf_counter()
                fits[slope] = win_rates(per, BASELINE, length_slope=slope).rows.set_index("model")
                seconds[slope] += time.perf_counter() - t0
            for model in fits["shared"].index:
                if model == BASELINE:
                    continue
                rows.append(
                    {
                        "tree": name,
                        "model": model,
                        "win_rate_delta": fits["shared"].loc[model, "win_rate"] - board.loc[model, "win_rate"],
                        "published": board.loc[model, "length_controlled_winrate"],
                        "shared": fits["shared"].loc[model, "lc_win_rate"],
                        "model_slope": fits["model"].loc[model, "lc_win_rate"],
                        "caveat": bool(fits["shared"].loc[model, "lc_caveat"]),
                    }
                )
    t = pd.DataFrame(rows)
    print(f"{'tree':18s} {'model':36s} {'published':>9s} {'shared':>8s} {'Δ':>6s} {'per-model':>9s} {'Δ':>6s} caveat")
    for r in t.itertuples():
        print(
            f"{r.tree:18s} {r.model[:36]:36s} {r.published:9.1f} {r.shared:8.1f} {r.shared - r.published:+6.1f} "
            f"{r.model_slope:9.1f} {r.model_slope - r.published:+6.1f} {'*' if r.caveat else ''}"
        )
    summary = {}
    for col in ("shared", "model_slope"):
        delta = (t[col] - t["published"]).abs()
        summary[col] = (float(spearmanr(t[col], t["published"]).statistic), float(delta.mean()), float(delta.max()))
        print(
            f"{col:12s}: {len(t)} models, Spearman {summary[col][0]:.3f}, mean |Δ| {summary[col][1]:.2f}, "
            f"max |Δ| {summary[col][2]:.1f} points"
        )
    print(f"win rate: max |Δ| to the published column {t['win_rate_delta'].abs().max():.1e} points")
    print(
        f"ratio (per-model / shared): mean |Δ| {summary['model_slope'][1] / summary['shared'][1]:.2f}x, "
        f"max |Δ| {summary['model_slope'][2] / summary['shared'][2]:.2f}x; "
        f"fit time shared {seconds['shared']:.2f} s (includes the per-model caveat pass), per-model "
        f"{seconds['model']:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
