"""A new model's place: battles against human-rated anchors, and its predicted human Elo with an interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.app import Unavailable
from core.app.leaderboard import human_ratings, view_for
from core.app.newmodel import plan_battles, standing
from core.app.safe_text import escape_markdown
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_generation import _config as _model_config
from tests.test_generation import _generate
from tests.test_generation import _store as _arena_store


@pytest.mark.slow
def test_planned_battles_put_the_new_model_against_anchors_across_the_range(tmp_path):
    db = _arena_store(tmp_path)  # m1, m2, m3 with human votes; three prompts
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        assert _generate(db, _model_config(tmp_path, srv.url)).returncode == 0
    with Store.open(db) as s:
        human = human_ratings(s, "arena").frame.sort_values("elo", ascending=False)  # type: ignore[union-attr]
        plan = plan_battles(s, "arena", "newcomer", n_anchors=2)
        assert not isinstance(plan, Unavailable)
        # the top and the bottom of the human ranking
        assert plan.anchors == [human["model"].iloc[0], human["model"].iloc[-1]]
        answered = s.answered_prompts("arena")
        for r in plan.battles.itertuples():
            other = r.model_b if r.model_a == "newcomer" else r.model_a
            assert "newcomer" in (r.model_a, r.model_b) and other in plan.anchors
            assert ((answered["prompt_id"] == r.prompt_id) & (answered["model"] == other)).any()
        sides = (plan.battles["model_a"] == "newcomer").mean()
        assert 0.3 <= sides <= 0.7  # the new model is not always shown first
        before = len(s.battles_for_judging("arena"))
        assert s.add_battles("arena", plan.battles) == len(plan.battles) > 0
        assert s.add_battles("arena", plan.battles) == 0  # already there
        battles = s.battles_for_judging("arena")
    assert len(battles) == before + len(plan.battles)
    new = battles[(battles["model_a"] == "newcomer") | (battles["model_b"] == "newcomer")]
    assert new["text_a"].notna().all() and new["text_b"].notna().all()  # a judge run can compare them


def test_plan_battles_refuses_a_model_without_answers(tmp_path):
    db = _arena_store(tmp_path)
    with Store.open(db) as s:
        res = plan_battles(s, "arena", "ghost")
    assert isinstance(res, Unavailable) and "generate them first" in res.reason


@pytest.fixture(scope="module")
def demo_without_one_models_votes(tmp_path_factory):
    tables = simulate_arena(0, DemoConfig.small())
    human = tables.battles.merge(tables.votes, on="battle_key")
    counts = pd.concat([human["model_a"], human["model_b"]]).value_counts()
    new = counts.index[len(counts) // 2]  # a mid-table model
    involved = tables.battles.loc[(tables.battles["model_a"] == new) | (tables.battles["model_b"] == new), "battle_key"]
    tables.votes = tables.votes[~tables.votes["battle_key"].isin(involved)]
    db = tmp_path_factory.mktemp("newmodel") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(tables)
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
    return db, new, judge


def test_standing_reads_the_leaderboards_interval_for_a_model_without_votes(demo_without_one_models_votes):
    db, new, judge = demo_without_one_models_votes
    with Store.open(db, read_only=True) as s:
        res = standing(s, "demo", judge, new, alpha=0.1)
        view, _ = view_for(s, "demo", judge, None, 0.1)
    assert not isinstance(res, Unavailable), res
    row = view.table.set_index("model").loc[new]
    assert np.isnan(row["human_elo"])  # no human votes: its human Elo is what is predicted
    assert (res.lower, res.upper) == (row["interval_lower"], row["interval_upper"])
    assert res.predicted == row[f"{res.method}_elo"] and res.lower < res.predicted < res.upper
    rated = view.table[view.table["human_elo"].notna()]
    assert res.n_rated == len(rated)
    assert res.above == int((rated["human_elo"] > res.upper).sum())
    assert res.below == int((rated["human_elo"] < res.lower).sum())
    assert f"ranks between #{res.above + 1}" in res.text()


@pytest.mark.integration
def test_standing_cli(demo_without_one_models_votes):
    db, new, judge = demo_without_one_models_votes
    cmd = ["standing", "--db", str(db), "--dataset", "demo", "--judge", judge]
    out = run_cli(*cmd, "--model", new, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{new}: predicted human Elo") and "90% conformal interval" in out.stdout
    bad = run_cli(*cmd, "--model", "nobody", cwd=ROOT)
    assert bad.returncode == 2 and "no battles judged" in bad.stderr


@pytest.mark.integration
def test_evaluate_runs_the_whole_loop_and_is_honest_about_what_it_can_say(tmp_path):
    from tests.test_judging import _config as _judge_config

    db = _arena_store(tmp_path)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        model_cfg = _model_config(tmp_path, srv.url)
        judge_cfg = _judge_config(tmp_path, srv.url, name="eval-judge")
        cmd = ["evaluate", "--db", str(db), "--dataset", "arena", "--model", "newcomer"]
        cmd += ["--config", str(model_cfg), "--judge", str(judge_cfg), "--budget", "8", "--anchors", "2"]
        out = run_cli(*cmd, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        again = run_cli(*cmd, cwd=ROOT)
        assert again.returncode == 0, again.stderr
    assert "answers: 3 generated" in out.stderr and "battles against 2 anchors" in out.stdout
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("arena", "eval-judge", variant=None)
    assert 0 < len(j) <= 8 and ((j["model_a"] == "newcomer") | (j["model_b"] == "newcomer")).all()
    assert not j.duplicated(["battle_id", "order"]).any()  # the second evaluation paid for nothing twice
    # three human-rated models cannot calibrate a 90% interval: said, not papered over
    assert "no standing:" in out.stdout or "predicted human Elo" in out.stdout
    assert "answers: 0 generated" in again.stderr


@pytest.mark.integration
def test_the_leaderboard_says_where_models_without_votes_stand(demo_without_one_models_votes, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db, new, judge = demo_without_one_models_votes
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["dataset"] = "demo"
    at.query_params["judge"] = judge
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(h.value == "Models without human votes: where they stand" for h in at.subheader)
    prefix = f"- {escape_markdown(f'{new}: predicted human Elo')}"  # imported names are shown as text
    lines = [m.value for m in at.markdown if m.value.startswith(prefix)]
    assert len(lines) == 1 and "conformal interval" in lines[0]


@pytest.mark.slow
def test_predicted_intervals_cover_held_out_models_human_elo_at_the_stated_rate(tmp_path):
    """Five demo models lose their human votes and are placed as new, over four simulator seeds: their 90%
    conformal intervals cover the human Elo the full data gives them (re-centred on the anchors) at about 90%."""
    from core.app.newmodel import standings

    covered, total = 0, 0
    for seed in range(4):
        config = DemoConfig(n_models=20, n_prompts=120, n_battles=6_000, n_annotators=40, n_flippers=2, n_random=2)
        tables = simulate_arena(seed, config)  # 15 anchors: enough to calibrate a 90% interval (9 needed)
        db_full, db_cut = tmp_path / f"full{seed}.duckdb", tmp_path / f"cut{seed}.duckdb"
        with Store.open(db_full) as s:
            s.write_dataset(tables)
            full = human_ratings(s, "demo").frame.set_index("model")["elo"]  # type: ignore[union-attr]
            judge = str(s.judges_frame("demo")["judge"].iloc[0])
        ranked = full.sort_values().index.tolist()
        held = [ranked[i] for i in np.linspace(2, len(ranked) - 3, 5).astype(int)]  # spread, not the extremes
        involved = tables.battles.loc[
            tables.battles["model_a"].isin(held) | tables.battles["model_b"].isin(held), "battle_key"
        ]
        tables.votes = tables.votes[~tables.votes["battle_key"].isin(involved)]
        with Store.open(db_cut) as s:
            s.write_dataset(tables)
            view, _ = view_for(s, "demo", judge, None, 0.1)
        placed = {st.model: st for st in standings(view)}
        assert set(held) <= set(placed)
        anchors = view.table.set_index("model")["human_elo"].dropna()
        shift = float(anchors.mean() - full.loc[anchors.index].mean())  # the cut fit's centring
        for m in held:
            truth = full[m] + shift
            covered += placed[m].lower <= truth <= placed[m].upper
            total += 1
    print(f"covered {covered} of {total}")
    assert total == 20
    assert covered >= 15, f"{covered}/20 covered"  # 90% nominal: P(≤ 14 of 20) ≈ 1% by chance


@pytest.mark.integration
def test_the_leaderboard_and_the_evaluate_use_case_give_one_answer(demo_without_one_models_votes, monkeypatch):
    """The same inputs (dataset, judge, fitted τ, α) give the same prediction, interval and ranks, to the digit,
    on the Leaderboard page and through ``newmodel.standing`` (which the Evaluate page and ``evaluate`` read)."""
    from streamlit.testing.v1 import AppTest

    db, new, judge = demo_without_one_models_votes
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params.update({"dataset": "demo", "judge": judge, "alpha": "0.2"})
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    prefix = f"- {escape_markdown(f'{new}: predicted human Elo')}"  # imported names are shown as text
    line = next(m.value for m in at.markdown if m.value.startswith(prefix))
    with Store.open(db, read_only=True) as s:
        res = standing(s, "demo", judge, new, alpha=0.2)
    assert not isinstance(res, Unavailable)
    assert line == f"- {escape_markdown(res.text())}"
