"""The papers' analyses: accuracy alignment, aggregation methods, budget curves, languages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.app.files import softelo_frame
from core.simulate import DemoConfig, simulate_arena
from core.stats.aggregation import compare_aggregations, win_rate
from core.stats.alignment import accuracy_alignment
from core.stats.budget import balanced_subsample, budget_curves
from core.stats.languages import language_breakdown
from core.store import Store
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def demo():
    s = Store.open(":memory:")
    s.write_dataset(
        simulate_arena(
            0, DemoConfig(n_models=16, n_prompts=200, n_battles=8000, n_annotators=40, n_flippers=2, n_random=2)
        )
    )
    return s


def test_alignment_reports_intervals_and_subsets(demo):
    res = accuracy_alignment(
        demo.battle_frame("demo", "judge-strong"), demo.completions_frame("demo"), {"judge": "judge_hard"}, n_boot=40
    )
    t = res.table().set_index("subset")
    assert set(t.index) == {"all", "discriminative", "non_discriminative"}
    for subset in t.index:
        row = t.loc[subset]
        assert row["kd_lo"] <= row["kendall_distance"] <= row["kd_hi"]
        assert row["kendall_distance"] == pytest.approx((1 - row["kendall"]) / 2)
    assert t.loc["discriminative", "n_battles"] + t.loc["non_discriminative", "n_battles"] == t.loc["all", "n_battles"]
    assert "discriminative" in res.finding
    assert res.direct is not None and res.direct.kendall > 0  # the simulated direct judge is informative


def test_aggregation_methods_against_the_truth(demo):
    bf = demo.battle_frame("demo", "judge-strong")
    truth = demo.models_frame("demo").set_index("model")["true_elo"]
    res = compare_aggregations(bf["model_a"], bf["model_b"], bf["judge_hard"], truth, "truth", n_shuffles=10)
    t = res.table.set_index("method")
    assert set(t.index) == {"win_rate", "bradley_terry", "online_elo", "trueskill"}
    assert (t["kendall"] > 0.5).all()
    # win rate computed directly
    a, b, y = np.array(["x", "y", "x"]), np.array(["y", "z", "z"]), np.array([1.0, 0.5, 0.0])
    np.testing.assert_allclose(win_rate(a, b, y, ["x", "y", "z"]), [0.5, 0.25, 0.75])


def test_balanced_subsample_spreads_the_budget():
    rng = np.random.default_rng(0)
    n = 5000
    names = np.array([f"m{k}" for k in range(10)])
    a = rng.choice(10, n, p=np.r_[[0.5], np.full(9, 0.5 / 9)])
    b = (a + rng.integers(1, 10, n)) % 10
    f = pd.DataFrame({"model_a": names[a], "model_b": names[b]})
    sub = balanced_subsample(f, 50, rng)
    counts = pd.concat([sub["model_a"], sub["model_b"]]).value_counts()
    assert counts.min() >= 50 and counts.max() < 200


def test_budget_curves_and_languages_on_the_softelo_sample():
    f = softelo_frame(shared_path("softelo_sample_annotations.csv"))
    curves = budget_curves(f, [25, 100], repeats=2)
    s = curves.summary.set_index(["budget", "method"])
    assert s.loc[(100, "soft"), "mae_mean"] < s.loc[(100, "hard"), "mae_mean"]
    assert len(curves.tau_summary) == 2
    langs = language_breakdown(f)
    assert len(langs.table) == f["language"].nunique()
    assert langs.table["n_battles"].sum() == len(f)
    assert any("too few" in w for w in langs.warnings)
    en = langs.table.set_index("language").loc["en"]
    assert en["n_decisive"] >= 50 and en["soft_mae"] < en["hard_mae"]
