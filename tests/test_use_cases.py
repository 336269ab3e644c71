"""The use-case layer (core.app) on hand-built inputs with hand-computed expectations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.app import Unavailable
from core.app.calibration import pool_tied_bins
from core.app.leaderboard import display_table, leaderboard_view, smallest_alpha
from core.app.residuals import residual_view
from core.stats.bt import ratings_from_pairs
from core.stats.calibration import Reliability
from core.stats.conformal import calibrate, min_pool, scores
from core.stats.heldout import HeldoutResult

HARD = pd.DataFrame(
    {"model": ["a", "b", "c"], "elo": [1550.0, 1500.0, 1450.0], "se": [10.0, 12.0, 14.0], "n_battles": [30, 40, 50]}
)
SOFT = pd.DataFrame(
    {"model": ["a", "b", "c"], "elo": [1510.0, 1530.0, 1460.0], "se": [8.0, 9.0, 10.0], "n_battles": [30, 40, 50]}
)
HUMAN = pd.DataFrame(
    {
        "model": ["a", "b", "c"],
        "elo": [1505.0, 1525.0, 1470.0],
        "lower": [1490.0, 1510.0, 1450.0],
        "upper": [1520.0, 1540.0, 1490.0],
        "n_battles": [60, 70, 80],
    }
)


def _held(scores: list[float]) -> HeldoutResult:
    """A leave-one-out table whose soft scores |r|/SE are exactly ``scores`` (SE 10 each)."""
    n = len(scores)
    table = pd.DataFrame(
        {
            "model": [f"m{k}" for k in range(n)],
            "human_elo": 1500.0 + 10.0 * np.arange(n),
            "soft_resid": [10.0 * s * (-1) ** k for k, s in enumerate(scores)],
            "soft_se": 10.0,
            "hard_resid": 5.0,
            "hard_se": 10.0,
            "soft_elo": 1490.0 + 12.0 * np.arange(n),
            "hard_elo": 1505.0 + 9.0 * np.arange(n),
            "tau": 0.5,
        }
    )
    return HeldoutResult(table, ("hard", "soft"), 0.5, None)


def test_leaderboard_join_ranks_intervals_and_sort():
    # The "se" score (|r|/SE, interval ± q̂·SE) by hand: 9 calibration scores 1..9; α = 0.2: k = ⌈10 · 0.8⌉ = 8,
    # so q̂ = the 8th smallest = 8.  The default "floor" score is checked below and in tests/test_conformal_floor.py.
    held = _held([float(s) for s in range(1, 10)])
    view = leaderboard_view(HUMAN, HARD, SOFT, held, alpha=0.2, tau=0.5, score="se")
    t = view.table.set_index("model")
    assert view.quantile is not None and view.quantile.qhat == 8.0 and view.quantile.k == 8
    assert view.has_intervals and view.note is None
    np.testing.assert_allclose(t.loc[["a", "b", "c"], "interval_lower"], [1510 - 64, 1530 - 72, 1460 - 80])
    np.testing.assert_allclose(t.loc[["a", "b", "c"], "interval_upper"], [1510 + 64, 1530 + 72, 1460 + 80])
    assert view.primary == "human" and list(view.table["model"]) == ["b", "a", "c"]  # sorted by human Elo
    # ranks with ties, by hand: a model's rank is 1 + the models whose interval lies entirely above it.
    # human: b [1510, 1540], a [1490, 1520], c [1450, 1490]: only b's lower (1510) exceeds c's upper (1490)
    assert list(view.table["rank"]) == [1, 1, 2] and t.loc["c", "human_rank"] == 2
    # Hard-Elo ± 1.96 SE: a [1530.4, 1569.6], b [1476.5, 1523.5], c [1422.6, 1477.4]: b and c tie below a
    assert (t.loc["a", "hard_rank"], t.loc["b", "hard_rank"], t.loc["c", "hard_rank"]) == (1, 2, 2)
    # Soft-Elo: b [1512.4, 1547.6], a [1494.3, 1525.7], c [1440.4, 1479.6]: a and b tie, c below both
    assert (t.loc["b", "soft_rank"], t.loc["a", "soft_rank"], t.loc["c", "soft_rank"]) == (1, 1, 3)
    assert t.loc["c", "n_judged"] == 50 and t.loc["c", "n_votes"] == 80
    assert view.headline() == "#1 b — human Elo 1525 (95% CI 1510–1540); statistically tied with 1 model"
    assert view.tied_at_top == ["b", "a"]
    statement = view.coverage_statement()
    assert statement is not None and "α = 0.20" in statement and "q̂ = 8.00 SEs" in statement
    assert "median width 144 Elo" in statement  # median of 128, 144, 160
    assert "τ refitted on every fold" in statement and "Soft-Elo ± q̂·SE" in statement
    # the default: Soft-Elo ± q̂·√(SE² + σ̂²), q̂ over |r_i|/√(SE_i² + σ̂²₍ᵢ₎), σ̂ from all 9 models
    floor = leaderboard_view(HUMAN, HARD, SOFT, held, alpha=0.2, tau=0.5)
    q = calibrate(held.table["soft_resid"], held.table["soft_se"], 0.2)
    assert floor.quantile == q and q.score == "floor" and q.sigma > 0
    ft = floor.table.set_index("model")
    half = q.qhat * np.sqrt(np.array([8.0, 9.0, 10.0]) ** 2 + q.sigma**2)  # the Soft-Elo SEs of a, b, c
    np.testing.assert_allclose(ft.loc[["a", "b", "c"], "interval_upper"], np.array([1510, 1530, 1460]) + half)
    said = floor.coverage_statement() or ""
    assert f"q̂ = {q.qhat:.2f} (in units of √(SE² + σ̂²))" in said and f"σ̂ = {q.sigma:.1f} Elo" in said
    assert f"±q̂·σ̂ = ±{q.qhat * q.sigma:.0f} Elo" in said and "probability ≥ 80%" in said
    fixed = leaderboard_view(HUMAN, HARD, SOFT, _held([float(s) for s in range(1, 10)]), 0.2, 0.8, tau_fitted=False)
    assert "τ fixed at 0.8 in every fold" in (fixed.coverage_statement() or "")


def test_leaderboard_join_without_human_votes_says_why_there_are_no_intervals():
    view = leaderboard_view(None, HARD, SOFT, Unavailable("no human votes"), alpha=0.1, tau=0.5)
    assert not view.has_intervals and view.coverage_statement() is None
    assert view.note is not None and "No human votes" in view.note
    assert "interval_lower" not in view.table and "human_elo" not in view.table
    # no human Elo and no conformal interval: ranked by the judge's Soft-Elo and its bootstrap interval
    assert view.primary == "soft" and list(view.table["model"]) == ["b", "a", "c"]
    assert view.headline() is not None and view.headline().startswith("#1 b — Soft-Elo 1530 (95% CI 1512–1548)")


def test_leaderboard_join_with_too_few_calibration_models_names_the_smallest_alpha():
    # 4 calibration models at α = 0.1: k = ⌈5 · 0.9⌉ = 5 > 4, q̂ = ∞; α = 0.2 needs ⌈1/0.2⌉ − 1 = 4 models.
    view = leaderboard_view(HUMAN, HARD, SOFT, _held([1.0, 2.0, 3.0, 4.0]), alpha=0.1, tau=0.5)
    assert view.quantile is not None and math.isinf(view.quantile.qhat)
    assert not view.has_intervals and view.coverage_statement() is None
    assert view.note is not None and "Raise α to at least 0.20" in view.note
    assert np.isinf(view.table["interval_upper"]).all()


@pytest.mark.parametrize("n, expected", [(1, 0.5), (2, 0.34), (4, 0.2), (9, 0.1), (19, 0.05), (99, 0.01)])
def test_smallest_feasible_alpha(n, expected):
    # By hand: q̂ is finite when ⌈1/α⌉ − 1 ≤ n, i.e. α ≥ 1/(n + 1), rounded up to the 0.01 grid.
    got = smallest_alpha(n)
    assert got == pytest.approx(expected)
    assert min_pool(got) <= n
    if got > 0.01:
        assert min_pool(round(got - 0.01, 2)) > n
    assert math.isnan(smallest_alpha(0))


def test_residual_view_marks_splits_undefined_when_half_the_models_are_too_few():
    held = _held([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # 6 models: half/half splits calibrate on 3
    # α = 0.2 needs 4 calibration models: every split is unbounded → coverage undefined, not 1.
    view = residual_view(held, alpha=0.2, n_splits=10)
    assert not view.splits_defined
    soft = view.summary.set_index("method").loc["soft"]
    assert np.isnan(soft["coverage"]) and soft["unbounded_splits"] == 10
    assert any("coverage is undefined" in n and "0.25" in n for n in view.notes)  # 3 models need α ≥ 0.25
    # with all 6 models the pool is large enough (k = ⌈7 · 0.8⌉ = 6): q̂ is the largest score
    assert soft["qhat"] == max(scores(held.table["soft_resid"], held.table["soft_se"]))
    # α = 0.3: 3 calibration models suffice (⌈1/0.3⌉ − 1 = 3): splits are defined
    defined = residual_view(held, alpha=0.3, n_splits=10)
    assert defined.splits_defined and not np.isnan(defined.summary.set_index("method").loc["soft", "coverage"])


def test_pooled_reliability_bins_merge_one_confidence_and_recompute_ece():
    # Hard labels: every bin claims confidence 1.0; 4 equal-mass bins of 25 with 20, 15, 10, 5 agreements.
    bins = pd.DataFrame(
        {
            "bin": range(4),
            "n": [25] * 4,
            "confidence": [1.0] * 4,
            "accuracy": [0.8, 0.6, 0.4, 0.2],
            "lower": np.nan,
            "upper": np.nan,
        }
    )
    pooled = pool_tied_bins(Reliability("hard", bins, ece=0.5, n=100, accuracy=0.5))
    assert len(pooled.bins) == 1
    row = pooled.bins.iloc[0]
    assert row["n"] == 100 and row["accuracy"] == pytest.approx(0.5) and row["confidence"] == 1.0
    assert pooled.ece == pytest.approx(0.5)  # |0.5 − 1.0|
    # Wilson 95% interval of 50/100, by hand: centre (0.5 + z²/200)/(1 + z²/100) = 0.5, half ≈ 0.0962
    assert row["lower"] == pytest.approx(0.5 - 0.09617, abs=1e-4) and row["upper"] == pytest.approx(0.59617, abs=1e-4)
    # distinct confidences are left alone
    distinct = bins.assign(confidence=[0.6, 0.7, 0.8, 0.9])
    same = Reliability("soft", distinct, ece=0.1, n=100, accuracy=0.5)
    assert pool_tied_bins(same) is same


def test_a_degenerate_human_interval_says_why_in_the_table():
    """A model that never lost has no Elo nor interval: the table says why ('undefined: won all its 1 battle'),
    not '—' or a number."""
    rng = np.random.default_rng(5)
    a = rng.choice(["x", "y", "z"], 600)
    b = np.where(a == "x", "y", np.where(a == "y", "z", "x"))
    y = (rng.random(600) < 0.6).astype(float)
    y[rng.random(600) < 0.1] = 0.5
    a, b, y = np.r_[a, ["new", "tied"]], np.r_[b, ["x", "y"]], np.r_[y, [1.0, 0.5]]
    pairs = pd.DataFrame({"model_a": a, "model_b": b, "n": 1.0, "s": y, "ss": y * y})
    human = ratings_from_pairs(pairs, ci="sandwich")
    view = leaderboard_view(human.frame, None, None, None, alpha=0.2, tau=None)
    table = display_table(view).set_index("Model")
    assert table.loc["new", "95% CI"] == "undefined: won all its 1 battle" and pd.isna(table.loc["new", "Human Elo"])
    assert table.loc["tied", "95% CI"].endswith("(ties only)") and "–" in table.loc["tied", "95% CI"]
    for m in ("x", "y", "z"):
        lo, hi = (float(v) for v in table.loc[m, "95% CI"].split("–"))
        assert lo < table.loc[m, "Human Elo"] < hi
    assert any("perfect record" in i or "never lost" in i for i in human.issues)


def test_the_annotator_download_lists_each_kept_annotator_once_with_its_interval():
    from core.app.judges import annotator_abilities, annotator_table
    from core.simulate import DemoConfig, simulate_arena
    from core.store import Store

    with Store.open(":memory:") as store:
        store.write_dataset(simulate_arena(0, DemoConfig.small()))
        ann = annotator_abilities(store, "demo", 20)
    kept = ann[~ann["excluded"]]
    table = annotator_table(kept).set_index("annotator")
    assert sorted(table.index) == sorted(kept["annotator"]) and table.index.is_unique
    row = kept.set_index("annotator").loc[table.index]
    assert (table["votes"] == row["n_records"]).all() and (table["status"] == row["status"]).all()
    np.testing.assert_allclose(table["ability_upper95"] - table["ability"], 1.959963984540054 * row["ability_se_rel"])
    np.testing.assert_allclose(table["ability"] - table["ability_lower95"], 1.959963984540054 * row["ability_se_rel"])
    assert table["ability"].is_monotonic_increasing
    assert set(table["simulated_kind"]) <= {"honest", "flipper", "random"}  # the simulator's truth rides along
