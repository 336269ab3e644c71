"""LC win rate and its SE against AlpacaEval's published columns, on every real model in ../shared/datasets.

    python benchmarks/bench_lc_agreement.py

Imports ``alpaca_eval_2/results`` and ``alpaca_eval_more/results`` (annotator
``weighted_alpaca_eval_gpt4_turbo``) into a store in memory and computes every
model's LC three ways: the product's (``win_rate_view``: each model alone against
AlpacaEval's fixed instruction difficulties, the estimate shipped in
``core/stats/reference/alpaca_eval_lc.json``), and two in-run baselines that fit
the difficulties over the tree's own models (one length slope for all, the former
default; one slope per model).  It prints each model's Δ to the published
``length_controlled_winrate``, Spearman's ρ and the mean and largest |Δ| per form,
the LC SE against the published ``lc_standard_error`` where AlpacaEval publishes
one, and how far each model's LC moves between its own tree and a fit of that
model alone (0 by design for the product's form).
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
from core.app.winrate import reference_difficulty, win_rate_view  # noqa: E402
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
FORMS = ("fixed", "shared", "model")


def _per_instruction(store: Store, dataset: str) -> pd.DataFrame:
    frame = store.baseline_comparisons(dataset, BASELINE, ANNOTATOR)
    frame = frame[frame["p"].notna()]
    return frame.groupby(["instruction", "model"], as_index=False).agg(
        p=("p", "mean"),
        length=("length", "mean"),
        baseline_length=("baseline_length", "mean"),
        instruction_text=("instruction_text", "first"),
    )


def main() -> int:
    rows = []
    seconds = dict.fromkeys(FORMS, 0.0)
    with Store.open(":memory:") as store:
        for name, (tree, board_file) in TREES.items():
            if not tree.exists():
                print(f"missing {tree}: nothing to measure", file=sys.stderr)
                return 2
            import_path(store, tree, "alpaca-eval", dataset=name, annotator=ANNOTATOR)
            per = _per_instruction(store, name)
            board = pd.read_csv(board_file, index_col=0)
            t0 = time.perf_counter()
            product = win_rate_view(store, name, judge=ANNOTATOR).rows.set_index("model")
            seconds["fixed"] += time.perf_counter() - t0
            fits = {"fixed": product}
            for slope in ("shared", "model"):
                t0 = time.perf_counter()
                fits[slope] = win_rates(per, BASELINE, length_slope=slope).rows.set_index("model")
                seconds[slope] += time.perf_counter() - t0
            gamma, prior, _, _ = reference_difficulty(per, BASELINE, ANNOTATOR)
            for model in product.index:
                if model == BASELINE:
                    continue
                own = per[per["model"] == model]
                alone = {
                    "fixed": win_rates(own, BASELINE, fixed_difficulty=gamma, slope_prior=prior),
                    "shared": win_rates(own, BASELINE, length_slope="shared"),
                }
                rows.append(
                    {
                        "tree": name,
                        "model": model,
                        "win_rate_delta": product.loc[model, "win_rate"] - board.loc[model, "win_rate"],
                        "published": board.loc[model, "length_controlled_winrate"],
                        "published_se": board.loc[model, "lc_standard_error"],
                        "se": product.loc[model, "lc_standard_error"],
                        "se_glm": product.loc[model, "lc_standard_error_glm"],
                        **{f"lc_{form}": fits[form].loc[model, "lc_win_rate"] for form in FORMS},
                        **{
                            f"moves_{form}": abs(
                                fit.rows.set_index("model").loc[model, "lc_win_rate"]
                                - fits[form].loc[model, "lc_win_rate"]
                            )
                            for form, fit in alone.items()
                        },
                    }
                )
    t = pd.DataFrame(rows)
    print(
        f"{'tree':17s} {'model':34s} {'published':>9s} {'ours':>6s} {'Δ':>5s}  "
        f"{'shared':>6s} {'Δ':>5s}  {'SE':>4s} {'pub SE':>6s}"
    )
    for r in t.itertuples():
        pub_se = "" if r.published_se != r.published_se else f"{r.published_se:6.2f}"
        print(
            f"{r.tree:17s} {r.model[:34]:34s} {r.published:9.1f} {r.lc_fixed:6.1f} {r.lc_fixed - r.published:+5.1f}  "
            f"{r.lc_shared:6.1f} {r.lc_shared - r.published:+5.1f}  {r.se:4.2f} {pub_se:>6s}"
        )
    summary = {}
    for form in FORMS:
        delta = (t[f"lc_{form}"] - t["published"]).abs()
        rho = float(spearmanr(t[f"lc_{form}"], t["published"]).statistic)
        summary[form] = (rho, float(delta.mean()), float(delta.max()))
        print(
            f"{form:7s}: {len(t)} models, Spearman {summary[form][0]:.3f}, mean |Δ| {summary[form][1]:.2f}, "
            f"max |Δ| {summary[form][2]:.2f} points; fit time {seconds[form]:.2f} s"
        )
    for form in ("fixed", "shared"):
        print(f"LC moved between the tree and the model alone ({form}): max {t[f'moves_{form}'].max():.2e} points")
    with_se = t.dropna(subset=["published_se"])
    for r in with_se.itertuples():
        print(
            f"LC SE {r.model}: {r.se:.2f} (AlpacaEval's definition; GLM {r.se_glm:.2f}) "
            f"vs published {r.published_se:.2f}"
        )
    print(f"win rate: max |Δ| to the published column {t['win_rate_delta'].abs().max():.1e} points")
    print(
        f"ratio (shared-slope baseline / product): mean |Δ| {summary['shared'][1] / summary['fixed'][1]:.2f}x, "
        f"max |Δ| {summary['shared'][2] / summary['fixed'][2]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
