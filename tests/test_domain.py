"""The label rules of core.domain: the SQL the store runs equals the Python rule on the same rows."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from core import domain
from core.store import sql

RNG = np.random.default_rng(7)


def _sql(expr: str, frame: pd.DataFrame, params: dict | None = None) -> np.ndarray:
    con = duckdb.connect()
    con.register("t", frame)
    out = con.execute(f"SELECT {expr} AS v FROM t", params or {}).df()["v"].to_numpy(dtype=float)
    con.close()
    return out


def test_outcome_targets_in_sql_and_python_agree():
    codes = pd.DataFrame({"c": ["a", "b", "tie", "both_bad", "x", None]})
    expected = [1.0, 0.0, 0.5, 0.5, np.nan, np.nan]
    np.testing.assert_array_equal(domain.outcome_y(codes["c"]), expected)
    np.testing.assert_array_equal(_sql(sql.outcome_y_expr("c"), codes), expected)


def _with_nulls(x: np.ndarray, share: float = 0.3) -> np.ndarray:
    return np.where(RNG.random(len(x)) < share, np.nan, x)


def test_hard_label_rule_in_sql_and_python_agree_on_random_rows():
    n = 4000
    rows = pd.DataFrame(
        {
            "verdict_avg": np.where(RNG.random(n) < 0.8, None, RNG.choice(["a", "b", "tie"], n)).astype(object),
            # integer-valued gaps so that exact zeros (ties) and sign disagreements happen often
            "gap_avg": _with_nulls(RNG.integers(-2, 3, n).astype(float), 0.7),
            "gap_ab": _with_nulls(RNG.integers(-2, 3, n).astype(float)),
            "gap_ba": _with_nulls(RNG.integers(-2, 3, n).astype(float)),
            "verdict_mean": _with_nulls(RNG.choice([0.0, 0.25, 0.5, 0.75, 1.0], n)),
        }
    )
    rows["gap_mean"] = rows[["gap_ab", "gap_ba"]].mean(axis=1)  # what the store's CTE computes
    python = domain.hard_label(
        rows["verdict_avg"], rows["gap_avg"], rows["gap_ab"], rows["gap_ba"], rows["gap_mean"], rows["verdict_mean"]
    )
    np.testing.assert_array_equal(_sql(sql.hard_label_expr(), rows), python)
    # every rule fired at least once (the comparison is not vacuous)
    assert {0.0, 0.5, 1.0} <= set(python[np.isfinite(python)]) and np.isnan(python).any()
    disagree = (
        (np.sign(rows["gap_ab"]) * np.sign(rows["gap_ba"]) < 0) & rows["gap_avg"].isna() & rows["verdict_avg"].isna()
    )
    assert disagree.any() and (python[disagree.to_numpy()] == 0.5).all()


@pytest.mark.parametrize("tau", [0.01, 0.47, 3.0, 50.0])
def test_soft_target_in_sql_and_python_agree_and_are_clipped(tau):
    gaps = pd.DataFrame({"g": [-1e6, -40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 40.0, 1e6, np.nan]})
    python = domain.soft_target(gaps["g"].to_numpy(), tau)
    np.testing.assert_allclose(_sql(sql.soft_target_expr("g", "$tau"), gaps, {"tau": tau}), python, rtol=1e-12)
    assert np.isnan(python[-1])
    finite = python[:-1]
    assert finite.min() >= domain.SOFT_CLIP and finite.max() <= 1 - domain.SOFT_CLIP
    assert finite[0] == domain.SOFT_CLIP and finite[-1] == 1 - domain.SOFT_CLIP  # clipped, not 0 or 1
    assert finite[4] == 0.5


def test_rubric_gap_in_sql_and_python_agree():
    n = 500
    a = np.where(RNG.random((n, len(domain.CRITERIA))) < 0.3, np.nan, RNG.integers(0, 11, (n, len(domain.CRITERIA))))
    b = np.where(RNG.random((n, len(domain.CRITERIA))) < 0.3, np.nan, RNG.integers(0, 11, (n, len(domain.CRITERIA))))
    frame = pd.DataFrame(
        {
            **{f"a_{c}": a[:, k] for k, c in enumerate(domain.CRITERIA)},
            **{f"b_{c}": b[:, k] for k, c in enumerate(domain.CRITERIA)},
        }
    )
    python = domain.rubric_gap(a, b)
    np.testing.assert_allclose(_sql(sql.rubric_gap_expr(), frame), python, rtol=1e-12)
    both = np.isfinite(a) & np.isfinite(b)
    assert np.isnan(python[~both.any(axis=1)]).all()
    k = int(np.flatnonzero(both.sum(axis=1) == 2)[0])
    assert python[k] == pytest.approx(np.mean((a[k] - b[k])[both[k]]))  # the mean over shared criteria


def test_preference_mapping_and_smoothing_follow_methods():
    p = np.array([0.0, 0.2, 0.449, 0.45, 0.5, 0.55, 0.551, 0.9, 1.0])
    np.testing.assert_array_equal(domain.preference_to_target(p), [1, 1, 1, 0.5, 0.5, 0.5, 0, 0, 0])
    np.testing.assert_array_equal(
        domain.smoothed_target(np.array([1.0, 0.0, 0.5, np.nan]), 0.75)[:3], [0.75, 0.25, 0.5]
    )
    assert np.isnan(domain.smoothed_target(np.array([np.nan]), 0.75)[0])


def test_elo_scale_and_wilson_by_hand():
    theta = np.array([np.log(10) / 400 * 100, 0.0, -np.log(10) / 400 * 100])  # +100, 0, −100 Elo apart
    np.testing.assert_allclose(domain.theta_to_elo(theta), [1600.0, 1500.0, 1400.0])
    np.testing.assert_allclose(domain.theta_to_elo(theta + 5.0), [1600.0, 1500.0, 1400.0])  # only differences
    assert domain.theta_to_elo(0.5, centre=False) == pytest.approx(1500 + 0.5 * 400 / np.log(10))
    lo, hi = domain.wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)  # the classic 0/10 Wilson upper bound
    lo, hi = domain.wilson(np.array([5.0, 0.0]), np.array([10.0, 0.0]))
    assert np.isnan(lo[1]) and np.isnan(hi[1]) and lo[0] == pytest.approx(1 - hi[0])


def test_battle_frame_validation_names_the_column():
    frame = domain.battle_frame(
        {"battle_id": [1, 2], "model_a": ["x", "y"], "model_b": ["y", "x"], "human_y": [1.0, 0.5]}
    )
    assert list(frame.columns) == list(domain.BATTLE_COLUMNS)
    assert frame["gap"].isna().all() and frame["n_votes"].isna().all()
    with pytest.raises(ValueError, match="'human_y' should hold float"):
        domain.validate(frame.assign(human_y=["a", "b"]))
    with pytest.raises(ValueError, match="lacks the column"):
        domain.validate(frame.drop(columns=["gap"]))
    with pytest.raises(ValueError, match="not battle-frame columns"):
        domain.battle_frame({"winner": ["a"]})
