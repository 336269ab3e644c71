"""The adaptive design: its choices, its stopping rule, its coverage, and evaluate --adaptive end to end."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys

import numpy as np
import pytest

from core.domain import ELO_PER_LOGIT
from core.stats.adaptive import (
    STOP_BUDGET,
    STOP_FLOOR,
    STOP_STABLE,
    AdaptiveConfig,
    Round,
    expected_information,
    fit_rating,
    next_round,
    placement,
    prompt_order,
    rank_interval,
    stop_reason,
)
from core.stats.adaptive_sim import compare
from tests.conftest import ROOT, wait_until


def _anchors(n: int = 9) -> dict[str, float]:
    return {f"a{k}": 1100.0 + 100.0 * k for k in range(n)}  # 1100 … 1900


def test_the_placement_spans_the_human_range_with_the_first_prompts_of_each_anchor():
    human = _anchors()
    ordered = prompt_order({m: range(20) for m in human}, seed=3)
    cfg = AdaptiveConfig(placement_anchors=5, placement_prompts=2)
    chosen = placement(human, ordered, cfg)
    assert sorted({m for m, _ in chosen}) == ["a0", "a2", "a4", "a6", "a8"]  # top and bottom included
    assert all(p in ordered[m][:2] for m, p in chosen) and len(chosen) == 10
    # the order is the seed's, not the round's: the same seed gives the same prompts
    assert prompt_order({m: range(20) for m in human}, seed=3) == ordered
    assert prompt_order({m: range(20) for m in human}, seed=4) != ordered


def test_a_round_goes_to_the_anchors_nearest_the_estimate_on_unused_prompts():
    human = _anchors()
    ordered = prompt_order({m: range(30) for m in human}, seed=0)
    cfg = AdaptiveConfig(round_size=24, spread=3)
    used = {("a4", p) for p in ordered["a4"][:5]}
    chosen = next_round(1500.0, 10.0, human, ordered, used, cfg)
    assert len(chosen) == 12  # 24 calls, both orders
    assert {m for m, _ in chosen} == {"a3", "a4", "a5"}  # 1400, 1500, 1600: the three most informative
    assert not set(chosen) & used and len(set(chosen)) == len(chosen)
    by = {m: sum(1 for x, _ in chosen if x == m) for m in ("a3", "a4", "a5")}
    assert by["a4"] >= by["a3"] and by["a4"] >= by["a5"]  # the nearest anchor gets the largest share
    # p(1 − p) peaks where the ratings are equal, and a vague estimate spreads the information
    sharp = expected_information(1500.0, 1.0, np.array([1500.0, 1900.0]))
    assert sharp[0] == pytest.approx(0.25, abs=1e-3) and sharp[1] < 0.1
    vague = expected_information(1500.0, 400.0, np.array([1500.0, 1900.0]))
    assert vague[1] / vague[0] > sharp[1] / sharp[0]
    # an anchor out of prompts passes its share on; nothing left, nothing chosen
    one = {"a4": ordered["a4"][:2]}
    assert len(next_round(1500.0, 10.0, {"a4": 1500.0}, one, set(), cfg)) == 2
    assert next_round(1500.0, 10.0, {"a4": 1500.0}, one, {("a4", p) for p in one["a4"]}, cfg) == []


def test_the_one_parameter_fit_has_the_closed_form_answer():
    # 3 wins and 1 loss against one opponent: p = 3/4, so θ − 1500 = ln 3 logits
    est, se = fit_rating(np.full(4, 1500.0), np.array([1, 1, 1, 0.0]))
    assert est == pytest.approx(1500.0 + ELO_PER_LOGIT * math.log(3), abs=1e-6)
    assert se == pytest.approx(ELO_PER_LOGIT / math.sqrt(4 * 0.75 * 0.25), rel=1e-6)
    est, se = fit_rating(np.full(6, 1500.0), np.ones(6))  # a perfect record: finite, above the opponent
    assert 1500.0 < est < math.inf and math.isfinite(se)


def test_the_stopping_rule_names_the_rule_that_stopped():
    cfg = AdaptiveConfig(share=0.1, stable_rounds=2, round_size=8)

    def r(calls, se, ranks=(3, 6)):
        return Round(calls, 1500.0, se, 30.0, 60.0, ranks)

    assert stop_reason([r(20, 50.0)], cfg) is None
    assert stop_reason([r(20, 50.0), r(28, 9.0)], cfg) == STOP_FLOOR  # 81 / (81 + 900) < 0.1
    assert stop_reason([r(20, 50.0)], cfg, budget=21) == STOP_BUDGET
    # unchanged ranks for more than 2 rounds since the calls were half today's: stop
    same = [r(20, 50.0), r(28, 40.0), r(36, 35.0), r(44, 33.0)]
    assert stop_reason(same, cfg) == STOP_STABLE
    moved = [*same[:-1], r(44, 33.0, (3, 5))]
    assert stop_reason(moved, cfg) is None
    # three unchanged rounds that did not double the calls are not enough
    assert stop_reason([r(100, 50.0), r(108, 40.0), r(116, 35.0), r(124, 33.0)], cfg) is None
    assert rank_interval(1450.0, 1550.0, np.array([1600.0, 1500.0, 1400.0])) == (2, 3)
    with pytest.raises(ValueError):
        AdaptiveConfig(share=1.5)


# The full simulation (6 arenas × 20 hidden models × 4 budgets × 2 designs, ~25 s) runs in the slow tier;
# `make check` runs the same checks on a third of it (2 arenas), whose binomial slack is wider.
SIMULATIONS = [pytest.param(6, marks=pytest.mark.slow, id="6-arenas"), pytest.param(2, id="2-arenas")]


@pytest.fixture(scope="module", params=SIMULATIONS)
def simulated(request):
    """Hidden models over the whole range (and beyond it) on smaller demo-shaped arenas, both designs, new models
    judged on 1/10, 1, 4 and 10× a calibration model's calls."""
    return compare(
        n_arenas=request.param,
        n_hidden=20,
        multipliers=(0.1, 1.0, 4.0, 10.0),
        seed=11,
        arena_kw={"n_prompts": 300, "cal_calls": 1200.0},
    )


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_placements_are_inside_their_interval_at_the_nominal_rate(simulated, alpha):
    for (m, design), part in simulated.groupby(["multiplier", "design"]):
        n = len(part)
        covered = part[f"covered_{alpha}"].mean()
        # binomial slack: three standard errors of a proportion 1 − α over n models (arenas × 20 models)
        slack = 3 * math.sqrt(alpha * (1 - alpha) / n)
        assert covered >= 1 - alpha - slack, f"{design} at {m}×: {covered:.3f} of {n} covered (α = {alpha})"
    assert (simulated["outside"]).any() and (~simulated["outside"]).any()  # beyond every anchor, and inside


def test_the_adaptive_design_never_spends_more_calls_than_the_fixed_one(simulated):
    adaptive = simulated[simulated["design"] == "adaptive"]
    fixed = simulated[simulated["design"] == "fixed"]
    assert (adaptive["calls"].to_numpy() <= adaptive["fixed_calls"].to_numpy()).all()
    assert (fixed["calls"].to_numpy() == fixed["fixed_calls"].to_numpy()).all()
    many = simulated["multiplier"] == 10.0
    # with room to stop early it does, by a wide margin (the benchmark measures how wide)
    assert adaptive.loc[many, "calls"].sum() * 2 < fixed.loc[many, "calls"].sum()


# ------------------------------------------------------------------ end to end, with the fake endpoint
@pytest.mark.integration
def test_evaluate_adaptive_resumes_after_a_kill_and_saves_what_the_leaderboard_shows(tmp_path):
    from core.app.judging import load_toml, run_shared
    from core.app.newmodel import standing
    from core.store import Store
    from core.store.journal import pending_journals
    from tests.fake_openai_server import FakeJudge, FakeServer
    from tests.test_evaluations import demo_with_an_unrated_model
    from tests.test_judging import _config as _judge_config

    db = tmp_path / "demo.duckdb"
    new = demo_with_an_unrated_model(db)
    with Store.open(db, read_only=True) as s:
        bf = s.battle_frame("demo")
    voted = bf.loc[bf["human_y"].notna() & (bf["human_y"] != 0.5), "battle_id"].astype(int).head(150)
    with FakeServer(FakeJudge(latency_ms=150, noise=0.3)) as srv:
        cfg_path = _judge_config(tmp_path, srv.url, name="eval-judge", timeout=30)
        # the judge's labels on human-voted battles calibrate τ and the rated models' residuals
        assert run_shared(db, "demo", load_toml(cfg_path), battle_ids=set(voted)).status == "done"
        seen = max(pending_journals(db), default=0)
        cmd = [sys.executable, "-m", "core", "evaluate", "--db", str(db), "--dataset", "demo", "--model", new]
        cmd += ["--judge", str(cfg_path), "--alpha", "0.2", "--adaptive", "--round-size", "16"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # killed once the placement's judge run has started (its journal exists): mid-round
            wait_until(
                lambda: max(pending_journals(db), default=0) > seen or proc.poll() is not None,
                timeout=240,
                what="the placement's judge run",
            )
            killed = proc.poll() is None
            if killed:
                proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait()
        assert killed, "the evaluation finished before it could be killed"
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "Design: adaptive" in out.stdout and "the fixed design would spend" in out.stdout
    assert "stopped because" in out.stdout
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("demo", "eval-judge", variant=None)
        [eid] = s.evaluations("demo")["evaluation_id"].tolist()
        row = s.evaluation(int(eid))
        now = standing(s, "demo", "eval-judge", new, alpha=0.2)
    mine = j[(j["model_a"] == new) | (j["model_b"] == new)]
    assert not j.duplicated(["battle_id", "order"]).any()  # the rerun paid for nothing twice
    assert row is not None and row["status"] == "placed", row
    details = json.loads(row["result_json"])
    assert details["design"] == "adaptive" and details["adaptive"]["calls"] == len(mine) > 0
    assert details["adaptive"]["calls"] <= details["adaptive"]["fixed_calls"]
    assert details["adaptive"]["stop_reason"] and details["adaptive"]["rounds"]
    # the saved evaluation is the Leaderboard's standing of that model, to the digit
    assert not isinstance(now, str) and (row["predicted"], row["lower"], row["upper"]) == (
        now.predicted,  # type: ignore[union-attr]
        now.lower,  # type: ignore[union-attr]
        now.upper,  # type: ignore[union-attr]
    )


@pytest.mark.integration
def test_evaluate_refuses_bad_adaptive_options(tmp_path):
    base = [sys.executable, "-m", "core", "evaluate", "--db", str(tmp_path / "x.duckdb"), "--dataset", "d"]
    base += ["--model", "m", "--judge", str(tmp_path / "j.toml")]
    for extra, message in (
        (["--round-size", "32"], "--round-size applies to the adaptive design only"),
        (["--adaptive", "--round-size", "1"], "--round-size must be at least 2"),
    ):
        out = subprocess.run([*base, *extra], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and message in out.stderr, out.stderr


@pytest.mark.integration
def test_rounds_continue_from_what_is_stored_and_stay_within_the_budget(tmp_path, monkeypatch):
    """Several rounds in the app (the floor rule switched off, since the fake judge's disagreement floor would stop
    it after the placement): the budget is met exactly, and a rerun with a larger one goes on from the stored
    judgments instead of starting again, paying for nothing twice."""
    from functools import partial

    import core.app.evaluate as app_evaluate
    from core.app.judging import load_toml, run_shared
    from core.store import Store
    from tests.fake_openai_server import FakeJudge, FakeServer
    from tests.test_evaluations import demo_with_an_unrated_model
    from tests.test_judging import _config as _judge_config

    monkeypatch.setattr(app_evaluate, "AdaptiveConfig", partial(AdaptiveConfig, share=1e-9))
    db = tmp_path / "demo.duckdb"
    new = demo_with_an_unrated_model(db)
    with Store.open(db, read_only=True) as s:
        bf = s.battle_frame("demo")
    voted = bf.loc[bf["human_y"].notna() & (bf["human_y"] != 0.5), "battle_id"].astype(int).head(150)
    with FakeServer(FakeJudge(latency_ms=1, noise=0.3)) as srv:
        judge = load_toml(_judge_config(tmp_path, srv.url, name="eval-judge"))
        assert run_shared(db, "demo", judge, battle_ids=set(voted)).status == "done"
        first = app_evaluate.evaluate(db, "demo", new, judge, budget=60, alpha=0.2, adaptive=True, round_size=16)
        served = srv.judge.served
        second = app_evaluate.evaluate(db, "demo", new, judge, budget=100, alpha=0.2, adaptive=True, round_size=16)
        served_again = srv.judge.served - served
    assert first.adaptive is not None and second.adaptive is not None
    # placement (5 anchors × 2 prompts × 2 orders = 20 calls), then rounds of 16 up to the budget
    assert [r.calls for r in first.adaptive.rounds] == [20, 36, 52, 60]
    assert first.adaptive.calls == 60 and first.adaptive.stop_reason == STOP_BUDGET
    assert second.adaptive.rounds[0].calls == 60 and second.adaptive.calls == 100
    assert served_again == 40  # only the new calls were paid for
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("demo", "eval-judge", variant=None)
    mine = j[(j["model_a"] == new) | (j["model_b"] == new)]
    assert len(mine) == 100 and not mine.duplicated(["battle_id", "order"]).any()
    assert set(first.plan.battles["battle_id"]) <= set(second.plan.battles["battle_id"])
