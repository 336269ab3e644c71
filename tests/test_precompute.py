"""`python -m core precompute` computes what the pages ask for: afterwards no page computes anything.

The pages are rendered by Streamlit's AppTest in this process, with
``core.app.persist``'s compute path replaced by one that fails the test: a
page whose call (function, arguments, data stamp) differs from the
precompute's job list would compute, and so would fail here.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.app import persist
from core.app.precompute import Stamps, jobs, read_progress
from core.store import Store
from tests import stores
from tests.cli import run_cli
from tests.test_app import APP, PAGES

# multi-process or Streamlit AppTest throughout: the integration tier (pytest.ini)
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def precomputed(tmp_path_factory):
    """The small demo precomputed by the default worker pool (two workers on a 2-core machine), built once per
    code version by tests/stores.py; this module's own copy."""
    return str(stores.fresh_copy("demo", tmp_path_factory.mktemp("pre")))


def test_the_command_reports_progress_and_a_second_run_finds_everything(precomputed):
    db = precomputed
    with Store.open(db, read_only=True) as s:
        todo = jobs(s)
        kept = s.results_frame()
    progress = read_progress(db)  # the run that computed them
    assert progress is not None and progress.done == progress.total == len(todo) and progress.finished
    assert progress.computed > 0 and progress.computed + progress.already == len(todo) and not progress.failed
    # every result stored at the stamp its scope has now
    with Store.open(db, read_only=True) as s:
        stamps = Stamps.of(s)
        names = list(s.judges_frame("demo")["judge"])
    assert len(names) >= 2
    assert set(kept["stamp"]) <= {stamps.everything(), stamps.votes()} | {stamps.judge("demo", j) for j in names}
    again = run_cli("precompute", "--db", db)
    assert again.returncode == 0, again.stderr
    assert f"[{len(todo)}/{len(todo)}]" in again.stderr  # one progress line per job
    assert f"{len(todo)} results: 0 computed, {len(todo)} already persisted" in again.stdout
    assert " 0 failed" in again.stdout


@pytest.fixture
def saves(precomputed, monkeypatch) -> list[str]:
    """The kinds of result the app persists (computes) while a test drives it on the precomputed store."""
    computed: list[str] = []
    real_save = persist.save

    def recording_save(path, at, value, dataset, seconds, wait_s=None):
        computed.append(at.kind)
        return real_save(path, at, value, dataset, seconds, wait_s)

    monkeypatch.setattr(persist, "save", recording_save)
    monkeypatch.setenv("ARENA_DB", precomputed)
    return computed


@pytest.mark.parametrize("page", PAGES)
def test_after_precompute_a_page_computes_nothing(saves, page):
    computed = saves
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert computed == [], f"{page} computed {computed} although everything was precomputed"


def test_a_large_judges_battles_are_read_as_a_stated_seeded_sample(precomputed):
    from core.app.data import sample_frame

    db = precomputed
    with Store.open(db, read_only=True) as s:
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
        judged = s.n_judged_battles("demo", judge)
        full = s.battle_frame("demo", judge)
        small = sample_frame(s, "demo", judge, n=1_000)
        again = sample_frame(s, "demo", judge, n=1_000)
        other_seed = sample_frame(s, "demo", judge, n=1_000, seed=7)
        whole = sample_frame(s, "demo", judge, n=judged)
    assert len(small.frame) == 1_000 and small.sampled and small.n_population == judged
    assert small.frame["battle_id"].tolist() == again.frame["battle_id"].tolist()  # the same battles every time
    assert set(small.frame["battle_id"]) != set(other_seed.frame["battle_id"])
    assert set(small.frame["battle_id"]) <= set(full.loc[full["n_judgments"] > 0, "battle_id"])
    # uniform: the sample's share of each model's battles is close to the population's
    share = small.frame["model_a"].value_counts(normalize=True)
    population = full["model_a"].value_counts(normalize=True)
    assert (share - population.reindex(share.index)).abs().max() < 0.03
    assert "1,000 of the judge's" in str(small.statement()) and f"{judged:,}" in str(small.statement())
    assert not whole.sampled and whole.statement() is None and len(whole.frame) == len(full)


def test_replays_above_the_limit_run_on_a_stated_seeded_sample_of_votes_and_battles(precomputed, monkeypatch):
    from core.app import Unavailable, analyses, judges

    db = precomputed
    monkeypatch.setattr(judges, "REPLAY_SAMPLE", 2_000)
    monkeypatch.setattr(analyses, "REPLAY_SAMPLE", 2_000)
    with Store.open(db, read_only=True) as s:
        votes = s.votes_frame("demo")
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
        judged = s.n_judged_battles("demo", judge)
        study = judges.shuffle_study(s, "demo", 20)
        sample = s.votes_frame("demo", sample=2_000)
        again = s.votes_frame("demo", sample=2_000)
        other_seed = s.votes_frame("demo", sample=2_000, seed=3)
        agg = analyses.aggregation(s, "demo", judge, n_shuffles=5)
    assert not isinstance(study, Unavailable) and not isinstance(agg, Unavailable)
    assert study.n_battles == 2_000 and study.n_population == len(votes) > 2_000
    said = str(study.statement())
    assert "2,000" in said and f"{len(votes):,}" in said
    # the same votes each time, every one a real vote, spread over the models as the population is
    assert len(sample) == 2_000 and sample.equals(again) and not sample.equals(other_seed)
    assert set(zip(sample["battle_id"], sample["annotator"])) <= set(zip(votes["battle_id"], votes["annotator"]))
    share = sample["model_a"].value_counts(normalize=True)
    assert (share - votes["model_a"].value_counts(normalize=True).reindex(share.index)).abs().max() < 0.03
    assert agg.n_population == judged and agg.n_battles <= 2_000
    # below the limit nothing is sampled and nothing is said
    monkeypatch.setattr(judges, "REPLAY_SAMPLE", 10**9)
    with Store.open(db, read_only=True) as s:
        whole = judges.shuffle_study(s, "demo", 20)
    assert not isinstance(whole, Unavailable)
    assert whole.n_population is None and whole.statement() is None and whole.n_battles == len(votes)


def test_one_worker_persists_the_same_results_as_the_worker_pool(precomputed, tmp_path):
    """``--workers 1`` computes in this process what the pool computes in its workers: the same kinds of result.
    The single worker runs on the small demo (same models, sources and slices, fewer battles) to stay cheap."""
    from core.simulate import DemoConfig, simulate_arena

    db = precomputed  # computed by the default pool (two workers on a 2-core machine)
    single = tmp_path / "single.duckdb"
    with Store.open(single) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    run = run_cli("precompute", "--db", single, "--workers", "1")
    assert run.returncode == 0, run.stderr
    with Store.open(db, read_only=True) as a, Store.open(single, read_only=True) as b:
        pool, one = a.results_frame(), b.results_frame()
    assert sorted(set(pool["kind"])) == sorted(set(one["kind"])) and len(pool) > 30
    bad = run_cli("precompute", "--db", single, "--workers", "0")
    assert bad.returncode == 2 and "--workers must be at least 1" in bad.stderr


def test_after_precompute_a_step_of_the_tau_slider_reads_instead_of_fitting(saves):
    computed = saves
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    grid = [float(str(o).split()[0]) for o in at.select_slider(key="tau").options if "fitted" not in str(o)]
    for tau in (grid[5], grid[len(grid) // 2], grid[-3]):
        at.select_slider(key="tau").set_value(tau).run()
        assert not at.exception, [e.value for e in at.exception]
        # green at a τ the votes support, a warning elsewhere (issue 32): either way it names the chosen τ
        assert any(f"{tau:g}" in m.value for m in (*at.success, *at.warning)), "the statement names the chosen τ"
    assert computed == [], f"a τ step computed {computed} although the grid was precomputed"


def test_selective_judging_reads_its_first_alpha_kept_and_derives_the_others(saves, precomputed):
    """The threshold statement at the slider's first position comes from the kept result, and says what a fresh
    calibration on the judge's battles says at that α; another α is derived in the server (nothing persisted)
    and names its own α."""
    from core.app import selective
    from core.app.data import sample_frame

    computed = saves
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("app_pages/selective.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="scope_alpha").value == selective.DEFAULT_ALPHA
    shown = [m.value for m in (*at.success, *at.warning) if m.value.startswith(("SCOPE calibrated", "At α"))]
    with Store.open(precomputed, read_only=True) as s:
        judge = str(s.judges_frame("demo")["judge"].iloc[0])  # the page's default judge on the demo arena
        frame = sample_frame(s, "demo", judge).frame
    source = selective.scope_sources(frame)[0]
    fresh = selective.scope_at_alpha(frame, source, selective.DEFAULT_ALPHA)
    assert not isinstance(fresh, selective.Unavailable)
    assert shown == [selective.threshold_statement(fresh)[1]]
    assert computed == [], f"the first visit computed {computed}"
    at.slider(key="scope_alpha").set_value(0.2).run()
    assert not at.exception, [e.value for e in at.exception]
    other = selective.scope_at_alpha(frame, source, 0.2)
    assert not isinstance(other, selective.Unavailable)
    shown = [m.value for m in (*at.success, *at.warning) if m.value.startswith(("SCOPE calibrated", "At α"))]
    assert shown == [selective.threshold_statement(other)[1]] and shown != [selective.threshold_statement(fresh)[1]]
    assert computed == [], f"a step of α persisted {computed}: a slider's value is derived in the server"
