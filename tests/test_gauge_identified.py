"""The gauge identifies only what the data identifies (issue #45, METHODS §10 "Degenerate records").

A ties-only record has win and loss mass but its sandwich variance is a stated bound p(1 − p), not an
estimate; if it entered the centring constraint, Var/n² of that bound would reach every other model.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.domain import elo_units, sigmoid
from core.stats.bt import comparisons_from_battles, fit_bt, sandwich_intervals

REGULAR = [f"m{k}" for k in range(10)]


def _issue_design(seed: int, ties: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """1,500 votes among 10 models (Bradley–Terry truth), a model that won 5/5, one that lost 3/3 and
    (``ties``) one with 2 tie votes only."""
    rng = np.random.default_rng(seed)
    m = len(REGULAR)
    elo = np.linspace(-200, 200, m)
    i = rng.integers(0, m, 1500)
    j = (i + rng.integers(1, m, 1500)) % m
    y = (rng.random(1500) < 1 / (1 + 10 ** (-(elo[i] - elo[j]) / 400))).astype(float)
    a = [REGULAR[k] for k in i]
    b = [REGULAR[k] for k in j]
    extra = [("winner", 1.0)] * 5 + [("loser", 0.0)] * 3 + ([("tier", 0.5)] * 2 if ties else [])
    for name, outcome in extra:
        a.append(name)
        b.append(REGULAR[int(rng.integers(m))])
        y = np.append(y, outcome)
    return np.array(a, dtype=object), np.array(b, dtype=object), y, [*REGULAR, "winner", "loser", "tier"]


def _independent_sandwich_se(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str], theta: np.ndarray, lam: float, gauge: list[int]
) -> np.ndarray:
    """Per-battle sandwich H⁺GH⁺ from scratch, ties-only battles' meat raised to p(1 − p), in the gauge
    θ − mean θ over ``gauge``; Elo units."""
    m = len(models)
    idx = {x: k for k, x in enumerate(models)}
    ia = np.array([idx[x] for x in a])
    ib = np.array([idx[x] for x in b])
    x = np.zeros((len(y), m))
    x[np.arange(len(y)), ia] += 1.0
    x[np.arange(len(y)), ib] -= 1.0
    p = sigmoid(theta[ia] - theta[ib])
    bread = x.T @ (x * (p * (1 - p))[:, None]) + lam * np.eye(m)
    tie_only = np.isin(a, ["tier"]) | np.isin(b, ["tier"])
    r2 = np.where(tie_only, np.maximum((y - p) ** 2, p * (1 - p)), (y - p) ** 2)
    meat = x.T @ (x * r2[:, None])
    hp = np.linalg.pinv(bread, hermitian=True)
    w = np.zeros(m)
    w[gauge] = 1.0 / len(gauge)
    a_gauge = np.eye(m) - np.outer(np.ones(m), w)
    cov = a_gauge @ hp @ meat @ hp @ a_gauge.T
    return elo_units(np.sqrt(np.diag(cov)))


def _se(a: np.ndarray, b: np.ndarray, y: np.ndarray, models: list[str]):
    c = comparisons_from_battles(a, b, y, models=models)
    fit = fit_bt(c)
    return fit, sandwich_intervals(c, fit).se_elo


def test_two_tie_votes_do_not_widen_every_interval() -> None:
    """Issue #45: before the fix every regular SE was 28–34 Elo with the two tie votes, ≈ 19–23 without."""
    for seed in range(3):
        a, b, y, models = _issue_design(seed, ties=True)
        fit, se = _se(a, b, y, models)
        _, se_without = _se(*_issue_design(seed, ties=False))
        assert not fit.anchors[models.index("tier")]  # ties only: never in the centring constraint
        assert fit.anchors[:10].all() and not fit.anchors[10:].any()
        np.testing.assert_allclose(se[:10], se_without[:10], rtol=0.01)
        independent = _independent_sandwich_se(a, b, y, models, fit.theta, fit.lam, list(range(10)))
        np.testing.assert_allclose(se[:10], independent[:10], rtol=1e-6)
        assert np.all(se[:10] < 25.0)
        # the ties-only model keeps its own conservative interval
        assert se[models.index("tier")] > 100.0
        gauge = next(i for i in fit.issues if i.kind == "gauge")
        assert "tier" in gauge.models and "not ties only" in gauge.message


@st.composite
def _designs(draw, one_opponent: bool = False):
    m = draw(st.integers(3, 7))
    n = draw(st.integers(200 * m, 400 * m))  # 400–800 battles per model
    seed = draw(st.integers(0, 2**31 - 1))
    n_ties = draw(st.integers(2, 3))
    tie_value = draw(st.sampled_from([0.5, 0.3, 0.7]))
    rng = np.random.default_rng(seed)
    elo = rng.normal(0.0, 150.0, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    p = 1 / (1 + 10 ** (-(elo[i] - elo[j]) / 400))
    u = rng.random(n)
    y = np.where(u < 0.1, 0.5, (u < 0.1 + 0.9 * p).astype(float))  # some ordinary ties too
    names = [f"m{k}" for k in range(m)]
    a = [names[k] for k in i]
    b = [names[k] for k in j]
    if one_opponent:
        tie_opponents = [names[int(rng.integers(m))]] * n_ties
    else:
        tie_opponents = [names[int(k)] for k in rng.integers(0, m, n_ties)]
    return names, np.array(a, dtype=object), np.array(b, dtype=object), y, tie_opponents, tie_value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_designs())
def test_a_ties_only_model_changes_no_other_models_se(design) -> None:
    """Adding a model whose record is one repeated target in (0, 1) moves no other SE by more than 1%.

    Not exactly 0: a ties-only model that played two opponents links them, a real (weak) path of
    information, O(its battles / theirs); the model-based SE √diag(H⁺) moves alike (21.12 → 21.00 Elo
    in the worst of 300 seeded 3-model designs).  Measured: at most 0.9% over 300 seeds at 400–800
    battles per model, 1.01% the worst hypothesis found, 1.8% at 120–240 battles per model.  Through the
    gauge (before the fix) it moved every SE by ≈ 50% (issue #45).  Against one opponent: exactly 0
    (next test)."""
    _check_ties_only_model(design, rtol=0.015)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_designs(one_opponent=True))
def test_a_ties_only_model_against_one_opponent_changes_nothing(design) -> None:
    """Against a single opponent its θ is that opponent's plus logit(target), exactly: no information on
    the others, and outside the gauge no variance either: every other SE is unchanged to round-off."""
    _check_ties_only_model(design, rtol=1e-6)


def _check_ties_only_model(design, rtol: float) -> None:
    names, a, b, y, opponents, value = design
    _, se = _se(a, b, y, names)
    models = [*names, "tier"]
    a2 = np.concatenate([a, np.array(["tier"] * len(opponents), dtype=object)])
    b2 = np.concatenate([b, np.array(opponents, dtype=object)])
    fit, se2 = _se(a2, b2, np.concatenate([y, np.full(len(opponents), value)]), models)
    assert not fit.anchors[-1]
    ok = np.isfinite(se)
    np.testing.assert_allclose(se2[: len(names)][ok], se[ok], rtol=rtol)
