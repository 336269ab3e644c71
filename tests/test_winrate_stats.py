"""AlpacaEval-style raw and length-controlled win rates (core.stats.winrate).

Known answers on AlpacaEval 2's published annotations and leaderboard, a planted
length effect in simulation, and properties / validation.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import spearmanr

from core.stats.winrate import COLUMNS, win_rates

ALPACA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "alpaca_eval_2"
BASELINE = "gpt4_1106_preview"
MODELS = ["claude-2", "gpt-3.5-turbo-1106", "vicuna-13b-v1.5", "alpaca-7b", "phi-2"]


# ------------------------------------------------------------------------------------ real data


def _alpaca_frame() -> pd.DataFrame:
    if not ALPACA.exists():
        pytest.skip(f"real dataset not found: {ALPACA}")
    records = []
    for model in MODELS:
        path = ALPACA / "results" / model / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
        for r in json.loads(path.read_text()):
            assert r["generator_1"] == BASELINE and r["generator_2"] == model
            pref = r["preference"]
            records.append(
                {
                    "instruction": r["instruction"],
                    "model": model,
                    "p": math.nan if pref is None else float(pref) - 1.0,
                    "length": float(len(r["output_2"])),
                    "baseline_length": float(len(r["output_1"])),
                }
            )
    return pd.DataFrame(records)


@pytest.mark.shared
def test_alpaca_eval_2_published_numbers():
    frame = _alpaca_frame()
    board = pd.read_csv(ALPACA / "leaderboard.csv", index_col=0)
    res = win_rates(frame, BASELINE)
    rows = res.rows.set_index("model")
    assert set(rows.index) == {*MODELS, BASELINE}
    assert res.baseline == BASELINE and res.n_difficulty_instructions == 805

    for col in ("win_rate", "standard_error", "discrete_win_rate"):
        gap = (rows[col] - board.loc[rows.index, col]).abs()
        assert gap.max() <= 0.01, f"{col}: {gap.to_dict()}"
    assert rows.loc["phi-2", "n"] == board.loc["phi-2", "n_total"] == 803
    assert rows.loc[BASELINE, "n"] == 805

    published = board.loc[rows.index, "length_controlled_winrate"]
    ours = rows["lc_win_rate"]
    rho = float(spearmanr(ours, published).statistic)
    mad = float((ours - published).abs().mean())
    print(f"\nLC vs published: Spearman {rho:.3f}, mean |Δ| {mad:.2f} points")
    for model in rows.index:
        delta = ours[model] - published[model]
        print(f"  {model:20s} ours {ours[model]:6.2f}  published {published[model]:6.2f}  Δ {delta:+.2f}")
    assert rho >= 0.97
    assert mad <= 2.0
    # Length control lifts every model that writes shorter answers than the baseline.
    for model in MODELS:
        assert rows.loc[model, "lc_win_rate"] > rows.loc[model, "win_rate"]
        assert rows.loc[model, "lc_standard_error"] > 0


# ------------------------------------------------------------------------------------ simulation

THETA = -0.5  # every simulated model has the same true skill


def _simulate(seed: int, phi: float, n: int = 1000) -> tuple[pd.DataFrame, float]:
    """Hard judgements from ``σ(θ + φ·tanh(Δlen/sd) + γ_x)``; returns the frame and the true LC."""
    rng = np.random.default_rng(seed)
    gamma = rng.normal(0.0, 1.0, n)
    base = rng.uniform(500, 2500, n)
    frames = []
    for name, shift in {"long": 600.0, "short": -600.0, "mid_a": 0.0, "mid_b": 200.0}.items():
        length = np.maximum(base + shift + rng.normal(0.0, 800.0, n), 1.0)
        delta = length - base
        eta = THETA + phi * np.tanh(delta / delta.std(ddof=1)) + gamma
        p = (rng.random(n) < expit(eta)).astype(float)
        frames.append(pd.DataFrame({"instruction": np.arange(n), "model": name, "p": p, "length": length}))
    frame = pd.concat(frames, ignore_index=True)
    frame["baseline_length"] = base[frame["instruction"].to_numpy()]
    return frame, 100.0 * float(expit(THETA + gamma).mean())


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_length_effect_is_removed(seed):
    frame, truth = _simulate(seed, phi=1.5)
    rows = win_rates(frame, "base").rows.set_index("model")
    long, short = rows.loc["long"], rows.loc["short"]
    tolerance = 3.0 * math.hypot(long["lc_standard_error_glm"], short["lc_standard_error_glm"])
    assert long["win_rate"] - short["win_rate"] > 15.0  # the judge's length bias, in raw rates
    assert long["win_rate"] - short["win_rate"] > 2 * tolerance
    assert abs(long["lc_win_rate"] - short["lc_win_rate"]) <= tolerance
    for model in ("long", "short", "mid_a", "mid_b"):
        assert abs(rows.loc[model, "lc_win_rate"] - truth) <= 3.0 * rows.loc[model, "lc_standard_error_glm"]


def test_with_fixed_difficulties_a_models_lc_ignores_the_other_models():
    """AlpacaEval's design: each model alone against given difficulties.  Its LC, both SEs and coefficients
    are the same whether or not other models share the frame (the joint fit's are not), and the planted
    length effect is still removed."""
    frame, truth = _simulate(0, phi=1.5)
    gamma = pd.Series(np.random.default_rng(0).normal(0.0, 1.0, 1000))  # _simulate's first draw: the true γ
    columns = ["lc_win_rate", "lc_standard_error", "lc_standard_error_glm"]
    together = win_rates(frame, "base", fixed_difficulty=gamma).rows.set_index("model")
    alone = win_rates(frame[frame["model"] == "long"], "base", fixed_difficulty=gamma).rows.set_index("model")
    assert np.allclose(alone.loc["long", columns].astype(float), together.loc["long", columns].astype(float), atol=1e-9)
    pair = frame[frame["model"].isin(["long", "short"])]
    joint_pair = win_rates(pair, "base").rows.set_index("model").loc["long", "lc_win_rate"]
    joint_all = win_rates(frame, "base").rows.set_index("model").loc["long", "lc_win_rate"]
    assert abs(joint_pair - joint_all) > 0.01  # the property is not automatic: the joint fit's LC moves
    for model in ("long", "short", "mid_a", "mid_b"):
        assert abs(together.loc[model, "lc_win_rate"] - truth) <= 3.0 * together.loc[model, "lc_standard_error_glm"]
    long, short = together.loc["long"], together.loc["short"]
    assert abs(long["lc_win_rate"] - short["lc_win_rate"]) <= 3.0 * math.hypot(
        long["lc_standard_error_glm"], short["lc_standard_error_glm"]
    )


def test_fixed_difficulty_se_is_alpaca_evals_and_the_slope_prior_holds_the_slope():
    """``lc_standard_error`` is AlpacaEval's: 100·sd(σ(θ + ψ·γ_x), ddof=1)/√n over the model's instructions,
    from the fitted coefficients; a tight prior on the slope keeps it at the prior's mean."""
    frame, _ = _simulate(1, phi=1.5)
    gamma = pd.Series(np.random.default_rng(1).normal(0.0, 1.0, 1000))
    res = win_rates(frame, "base", fixed_difficulty=gamma, slope_prior=(0.7, 1e8))
    rows, coef = res.rows.set_index("model"), res.coefficients.set_index("model")
    assert res.difficulty_source == "fixed"
    for model in ("long", "short"):
        g = gamma.to_numpy()[frame.loc[frame["model"] == model, "instruction"].to_numpy()]
        h = expit(coef.loc[model, "theta"] + coef.loc[model, "psi"] * g)
        assert rows.loc[model, "lc_standard_error"] == pytest.approx(100 * h.std(ddof=1) / math.sqrt(len(h)), rel=1e-9)
        assert rows.loc[model, "lc_win_rate"] == pytest.approx(100 * h.mean(), rel=1e-9)
        assert coef.loc[model, "phi"] == pytest.approx(0.7, abs=1e-4)
        assert rows.loc[model, "lc_standard_error_glm"] > rows.loc[model, "lc_standard_error"]
    with pytest.raises(ValueError, match="no value for instruction"):
        win_rates(frame, "base", fixed_difficulty=gamma.iloc[:10])


@pytest.mark.parametrize("seed", [0, 1])
def test_without_length_effect_lc_is_the_raw_rate(seed):
    frame, _ = _simulate(seed, phi=0.0)
    rows = win_rates(frame, "base").rows.set_index("model")
    for model in ("long", "short", "mid_a", "mid_b"):
        raw, lc = rows.loc[model, "win_rate"], rows.loc[model, "lc_win_rate"]
        assert abs(lc - raw) <= 1.5 * rows.loc[model, "standard_error"], (model, raw, lc)


def test_six_models_by_805_instructions_all_get_a_length_controlled_rate():
    rng = np.random.default_rng(7)
    n = 805
    base = rng.uniform(200, 3000, n)
    gamma = rng.normal(0, 1, n)
    frames = []
    for k in range(6):
        length = rng.uniform(100, 3000, n)
        p = expit(k / 3 - 1 + gamma + np.tanh((length - base) / 1000) + rng.normal(0, 0.5, n))
        frames.append(pd.DataFrame({"instruction": np.arange(n), "model": f"m{k}", "p": p, "length": length}))
    frame = pd.concat(frames, ignore_index=True)
    frame["baseline_length"] = base[frame["instruction"].to_numpy()]
    res = win_rates(frame, "base")  # its speed is a benchmark's business (benchmarks/winrate.py), not a test's
    assert len(res.rows) == 7 and res.rows["lc_win_rate"].notna().all()
    assert (res.rows["lc_standard_error"].dropna() >= 0).all()


# ----------------------------------------------------------------------------- properties / parity


def _frame(p_by_model: dict[str, list[float]], lengths: dict[str, list[float]] | None = None) -> pd.DataFrame:
    rows = []
    for model, ps in p_by_model.items():
        for i, p in enumerate(ps):
            length = lengths[model][i] if lengths else 100.0 + 37.0 * ((i * 7) % 11)
            rows.append(
                {"instruction": f"q{i}", "model": model, "p": p, "length": length, "baseline_length": 150.0 + i}
            )
    return pd.DataFrame(rows)


def test_all_ties_give_fifty_everywhere():
    res = win_rates(_frame({"a": [0.5] * 30, "b": [0.5] * 30}), "base")
    assert list(res.rows.columns) == list(COLUMNS)
    for col in ("win_rate", "discrete_win_rate", "lc_win_rate"):
        assert np.allclose(res.rows[col], 50.0, atol=1e-9), col
    for col in ("standard_error", "lc_standard_error"):
        assert np.allclose(res.rows[col], 0.0, atol=1e-9), col
    assert any("every p equals 0.5" in note for note in res.notes)


def test_standard_error_and_discrete_rate_match_hand_computation():
    p = [0.0, 1.0, 0.5, 0.25, 0.9, 0.6, 0.1]
    rows = win_rates(_frame({"a": p}), "base").rows.set_index("model")
    n = len(p)
    mean = sum(p) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in p) / (n - 1))
    assert rows.loc["a", "win_rate"] == pytest.approx(100 * mean)
    assert rows.loc["a", "standard_error"] == pytest.approx(100 * sd / math.sqrt(n))
    assert rows.loc["a", "discrete_win_rate"] == pytest.approx(100 * (0 + 1 + 0.5 + 0 + 1 + 1 + 0) / n)
    assert rows.loc["a", "n"] == n
    assert rows.loc["a", "avg_length"] == pytest.approx(np.mean([100.0 + 37.0 * ((i * 7) % 11) for i in range(n)]))


def test_baseline_row_and_sorting():
    frame = _frame({"strong": [0.9, 0.8, 0.7, 0.95], "weak": [0.1, 0.2, 0.3, 0.05], "solo": [0.4]})
    res = win_rates(frame, "base")
    assert list(res.rows["model"]) == ["strong", "base", "weak", "solo"]  # NaN LC last
    base = res.rows.set_index("model").loc["base"]
    assert base.tolist() == [50.0, 0.0, 50.0, 50.0, 0.0, 0.0, pytest.approx(150 + 1.5), 4, ""]
    solo = res.rows.set_index("model").loc["solo"]
    assert solo["win_rate"] == pytest.approx(40.0) and solo["n"] == 1
    assert math.isnan(solo["standard_error"]) and math.isnan(solo["lc_win_rate"])
    assert math.isnan(solo["lc_standard_error"])
    assert any(note.startswith("solo: only 1 comparison") for note in res.notes)


def test_nan_p_dropped_and_counted_baseline_self_rows_ignored():
    frame = _frame({"a": [0.2, math.nan, 0.7, 0.4], "base": [0.5, 0.5, 0.5, 0.5]})
    frame.loc[frame["model"] == "a", "length"] = [10.0, math.nan, 30.0, 40.0]  # NaN length only where p is NaN
    res = win_rates(frame, "base")
    rows = res.rows.set_index("model")
    assert res.n_dropped == 1 and rows.loc["a", "n"] == 3
    assert rows.loc["a", "win_rate"] == pytest.approx(100 * (0.2 + 0.7 + 0.4) / 3)
    assert rows.loc["base", "n"] == 3  # distinct instructions with a judgement
    assert any("missing p were dropped" in note for note in res.notes)
    assert any("against itself were ignored" in note for note in res.notes)


def test_zero_length_variation_is_noted_and_lc_still_defined():
    p = [0.2, 0.4, 0.6, 0.3, 0.7, 0.5]
    frame = _frame({"a": p}, lengths={"a": [150.0 + i for i in range(6)]})  # Δlen = 0 everywhere
    res = win_rates(frame, "base")
    row = res.rows.set_index("model").loc["a"]
    assert any("sd = 0" in note for note in res.notes)
    assert math.isfinite(row["lc_win_rate"]) and res.coefficients.set_index("model").loc["a", "phi"] == 0.0


def test_perfect_record_is_noted_and_finite():
    res = win_rates(_frame({"a": [0.0] * 10, "b": [0.3, 0.6, 0.2, 0.8, 0.5, 0.1, 0.9, 0.4, 0.7, 0.35]}), "base")
    row = res.rows.set_index("model").loc["a"]
    assert row["win_rate"] == 0.0 and 0.0 <= row["lc_win_rate"] < 50.0
    assert any(note.startswith("a: every comparison is a loss") for note in res.notes)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f.drop(columns=["baseline_length"]), "missing column"),
        (lambda f: f.assign(p=f["p"].where(f.index != 2, 1.5)), r"p must be in \[0, 1\]"),
        (lambda f: f.assign(p=f["p"].where(f.index != 2, -0.1)), r"p must be in \[0, 1\]"),
        (lambda f: f.assign(p="x"), "must be numeric"),
        (lambda f: f.assign(length=f["length"].where(f.index != 0, -1.0)), "finite length"),
        (lambda f: f.assign(model=f["model"].where(f.index != 0, None)), "non-empty strings"),
        (lambda f: f.iloc[0:0], "empty"),
        (lambda f: f.assign(p=math.nan), "every p is missing"),
    ],
)
def test_validation_errors(mutate, message):
    frame = _frame({"a": [0.1, 0.5, 0.9], "b": [0.2, 0.3, 0.4]})
    with pytest.raises(ValueError, match=message):
        win_rates(mutate(frame), "base")


def test_duplicate_instruction_names_model_and_instruction():
    frame = _frame({"a": [0.1, 0.5, 0.9], "b": [0.2, 0.3, 0.4]})
    frame = pd.concat([frame, frame.iloc[[4]]], ignore_index=True)
    with pytest.raises(ValueError, match=r"model 'b' is compared more than once on instruction 'q1'"):
        win_rates(frame, "base")


def test_bad_baseline_and_non_frame():
    frame = _frame({"a": [0.1, 0.5, 0.9]})
    with pytest.raises(ValueError, match="baseline"):
        win_rates(frame, "")
    with pytest.raises(ValueError, match="DataFrame"):
        win_rates(frame.to_dict(), "base")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="other than the baseline"):
        win_rates(_frame({"base": [0.5, 0.5]}), "base")
