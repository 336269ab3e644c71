"""Estimate AlpacaEval's instruction difficulties once, on AlpacaEval's own scale, and write the reference file.

AlpacaEval's length-controlled win rate fits each model alone against fixed per-instruction difficulties γ_x
that it downloads at run time; the values are not available offline.  What is available: its published GLM
coefficients per model (``alpaca_eval_2/length_controlled_glm_weights.csv``: the weights of
``tanh(std_delta_len)``, of γ and of the intercept, for 200 models), its published LC win rates, and the real
annotations of 15 of those models.  This script uses them in two steps:

1. **γ per instruction, given the published coefficients.**  For instruction x, every model m with an
   annotation there gives a soft label p_mx and a prediction ``σ(w_m + a_m·t_mx + b_m·γ_x)`` with AlpacaEval's
   own (w, a, b) for m; γ_x is the maximum a posteriori value under a normal prior N(μ, s²) (an instruction
   every model lost has no finite maximum-likelihood value).  Because the coefficients are AlpacaEval's, γ comes
   out on AlpacaEval's scale and sign.
2. **The prior, from the published LC of every model.**  A model's published LC is ``mean_x σ(w_m + b_m·γ_x)``
   (AlpacaEval's ``predict_winrate``), so the 199 non-baseline models whose coefficients and LC are both
   published measure the distribution of γ; (μ, s) minimise the squared gap between those LCs and the ones
   the estimated γ gives.

The length slope's prior (``slope_prior``): AlpacaEval regularises every model's slope by adding its two
length-gamed copies of the baseline (``gpt4_1106_preview_verbose`` and ``_concise``, equal in quality to the
baseline by construction) to each fit; without their annotations the same information enters as a normal
prior on the slope centred at those copies' published mean slope, with a precision chosen by leave-one-model-out
agreement on the 15 annotated models (γ re-estimated without the held-out model each time).

Run: ``python scripts/fit_alpaca_eval_difficulty.py [SHARED_DATASETS]`` (default ``../shared/datasets``).  It
prints the validation figures recorded in docs/benchmarks.md and rewrites
``core/stats/reference/alpaca_eval_lc.json``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.stats.lc_reference import OUTPUT, instruction_digest  # noqa: E402
from core.stats.winrate import fit_length_controlled  # noqa: E402

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
BASELINE = "gpt4_1106_preview"
GAMED = ("gpt4_1106_preview_verbose", "gpt4_1106_preview_concise")
SLOPE_PRECISIONS = (0.0, 10.0, 30.0, 50.0, 100.0, 200.0, 400.0)


def annotations(shared: Path) -> pd.DataFrame:
    """One row per (instruction, model) of every annotated model: p, and AlpacaEval's length feature t."""
    frames: list[pd.DataFrame] = []
    seen: set[str] = set()
    for path in sorted(shared.glob(f"alpaca_eval_*/results/*/{ANNOTATOR}/annotations.json")):
        records = pd.DataFrame(json.loads(path.read_text()))
        model = str(records["generator_2"].iloc[0])
        if model == BASELINE or model in seen:
            continue
        seen.add(model)
        p = records["preference"].astype(float).replace({0.0: 1.5}) - 1.0
        # AlpacaEval's feature: (baseline length − model length) / its sd over the model's annotations
        delta = records["output_1"].str.len().astype(float) - records["output_2"].str.len().astype(float)
        frames.append(
            pd.DataFrame(
                {"instruction": records["instruction"], "model": model, "p": p, "t": np.tanh(delta / delta.std())}
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["p"].notna()].reset_index(drop=True)


def map_difficulty(frame: pd.DataFrame, codes: np.ndarray, n: int, mu: float, s: float) -> np.ndarray:
    """γ_x maximising Σ_m loglik(p_mx | σ(w_m + a_m·t_mx + b_m·γ_x)) + log N(γ_x; μ, s²), by damped Newton."""
    b = frame["w_diff"].to_numpy()
    offset = (frame["w_ng"] + frame["w_len"] * frame["t"]).to_numpy()
    p = frame["p"].to_numpy()
    gamma = np.full(n, float(mu))
    for _ in range(500):
        q = expit(offset + b * gamma[codes])
        grad = np.bincount(codes, b * (q - p), minlength=n) + (gamma - mu) / s**2
        hess = np.bincount(codes, b * b * q * (1 - q), minlength=n) + 1 / s**2
        step = np.clip(grad / hess, -1.0, 1.0)  # Newton on a logistic likelihood overshoots without a cap
        gamma -= step
        if np.max(np.abs(step)) < 1e-12:
            break
    return gamma


def main(shared: Path) -> None:
    weights = pd.read_csv(shared / "alpaca_eval_2" / "length_controlled_glm_weights.csv", index_col=0)
    weights.columns = ["w_len", "w_diff", "w_ng"]
    board = pd.read_csv(shared / "alpaca_eval_2" / "leaderboard.csv", index_col=0)
    more = pd.read_csv(shared / "alpaca_eval_more" / "leaderboard_alpaca_eval_2.csv", index_col=0)
    published = pd.concat([board, more[~more.index.isin(board.index)]])

    frame = annotations(shared).join(weights, on="model")
    instructions = pd.Index(frame["instruction"].unique())
    codes = instructions.get_indexer(frame["instruction"])
    n = len(instructions)

    rated = [m for m in weights.index if m in board.index and m != BASELINE]
    target = board.loc[rated, "length_controlled_winrate"].to_numpy()
    w_ng, w_diff = weights.loc[rated, "w_ng"].to_numpy(), weights.loc[rated, "w_diff"].to_numpy()

    def lc_from_weights(gamma: np.ndarray) -> np.ndarray:
        return 100 * expit(w_ng[:, None] + w_diff[:, None] * gamma[None, :]).mean(axis=1)

    def loss(v: np.ndarray) -> float:
        return float(np.mean((lc_from_weights(map_difficulty(frame, codes, n, v[0], math.exp(v[1]))) - target) ** 2))

    fit = minimize(loss, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-10})
    mu, s = float(fit.x[0]), math.exp(float(fit.x[1]))
    gamma = map_difficulty(frame, codes, n, mu, s)
    gap = lc_from_weights(gamma) - target
    print(f"prior N({mu:.4f}, {s:.4f}²); {len(rated)} published LCs from published coefficients and this γ:")
    print(f"  mean |Δ| {np.mean(np.abs(gap)):.3f}, max {np.max(np.abs(gap)):.3f} points")

    # leave one model out: γ without the model, then the model's own fit against it
    held_out = {}
    for model in frame["model"].unique():
        keep = (frame["model"] != model).to_numpy()
        held_out[model] = map_difficulty(frame[keep], codes[keep], n, mu, s)
    slope_mean = -float(weights.loc[list(GAMED), "w_len"].mean())  # AlpacaEval's t is baseline − model
    rows = []
    for precision in SLOPE_PRECISIONS:
        for model, part in frame.groupby("model"):
            g = held_out[model][instructions.get_indexer(part["instruction"])]
            lc = fit_length_controlled(
                part["p"].to_numpy(),
                -part["t"].to_numpy(),
                g,
                prior_mean=(0.0, slope_mean, 0.0),
                prior_precision=(1.0, precision or 1.0, 1.0),
            )
            pub = published.loc[model]
            rows.append(
                {
                    "precision": precision,
                    "model": model,
                    "gap": lc.lc_win_rate - pub["length_controlled_winrate"],
                    "se_ratio": lc.lc_spread_standard_error / pub["lc_standard_error"],
                }
            )
    table = pd.DataFrame(rows)
    summary = table.groupby("precision")["gap"].agg(lambda g: (g.abs().mean(), g.abs().max()))
    for precision, (mean_gap, max_gap) in summary.items():
        print(f"  slope prior precision {precision:5.0f}: held-out LC mean |Δ| {mean_gap:.2f}, max {max_gap:.2f}")
    best = float(min(summary.items(), key=lambda kv: kv[1][0])[0])
    chosen = table[table["precision"] == best]
    ratios = chosen["se_ratio"].dropna()
    print(f"chosen precision {best:g}; LC SE / published LC SE where published: {ratios.round(3).tolist()}")

    reference = {
        "about": (
            "AlpacaEval 2 instruction difficulties estimated once by scripts/fit_alpaca_eval_difficulty.py from "
            "AlpacaEval's published per-model GLM coefficients, LC win rates and 15 models' annotations "
            f"({ANNOTATOR} against {BASELINE}); keys are the first 16 hex digits of the instruction's SHA-256."
        ),
        "judge": ANNOTATOR,
        "baseline": BASELINE,
        "difficulty_prior": {"mean": round(mu, 6), "sd": round(s, 6)},
        "slope_prior": {"mean": round(slope_mean, 6), "precision": best},
        "validation": {
            "published_lc_from_weights_mean_abs_gap": round(float(np.mean(np.abs(gap))), 4),
            "published_lc_from_weights_max_abs_gap": round(float(np.max(np.abs(gap))), 4),
            "held_out_lc_mean_abs_gap": round(float(chosen["gap"].abs().mean()), 4),
            "held_out_lc_max_abs_gap": round(float(chosen["gap"].abs().max()), 4),
            "models": int(frame["model"].nunique()),
        },
        "difficulty": {instruction_digest(x): round(float(g), 6) for x, g in zip(instructions, gamma)},
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUTPUT} ({n} instructions)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "datasets")
