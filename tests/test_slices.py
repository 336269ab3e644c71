"""Slices: a leaderboard on the battles whose prompt carries KEY=VALUE, with its own counts and "too few" rule.

The attributes come from the files (Arena-Hard's category/cluster/subcategory, LMArena's tags, the demo's
topics); a sliced leaderboard must equal the same fit run by hand on the sliced battles.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from core.app import Unavailable
from core.app.leaderboard import ratings, slice_values, view_for
from core.domain import MIN_SLICE_BATTLES, DatasetTables, parse_slice
from core.ingest import load
from core.simulate import DemoConfig, simulate_arena
from core.stats.bt import ratings_from_pairs
from core.store import Store
from tests.cli import CliResult, run_cli
from tests.conftest import ROOT, shared_path


def _cli(*args: str) -> CliResult:
    return run_cli(*args, cwd=ROOT)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("slices") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(seed=3, config=DemoConfig.small()))
    return db


def test_parse_slice_sorts_terms_and_names_a_malformed_one():
    assert parse_slice(["topic=recursion", "language=de"]) == (("language", "de"), ("topic", "recursion"))
    assert parse_slice(["language=de", "language=de"]) == (("language", "de"),)
    with pytest.raises(ValueError, match="KEY=VALUE.*'languagede'"):
        parse_slice(["languagede"])
    with pytest.raises(ValueError, match="given twice"):
        parse_slice(["language=de", "language=en"])


def test_the_demo_carries_languages_categories_and_topics(demo):
    with Store.open(demo, read_only=True) as s:
        values = slice_values(s, "demo")
        n = s._cur().execute("SELECT language, count(*) FROM battles GROUP BY language").fetchall()
    assert {"language", "category", "topic"} <= set(values["key"])
    langs = values[values["key"] == "language"].set_index("value")["n_battles"].to_dict()
    assert langs == dict(n)


def test_a_sliced_human_leaderboard_is_the_fit_on_the_sliced_votes(demo):
    where = parse_slice(["language=de"])
    with Store.open(demo, read_only=True) as s:
        res = ratings(s, "demo", "human", where=where)
        votes = s.votes_frame("demo")
        battles = s.battle_frame("demo")
    assert not isinstance(res, Unavailable)
    de = set(battles.loc[battles["language"] == "de", "battle_id"])
    mine = votes[votes["battle_id"].isin(de)]
    assert res.n_votes == len(mine) and res.n_votes < len(votes)
    # the same fit, run by hand on the sliced votes' pair table
    pairs = (
        mine.assign(n=1.0, s=mine["y"], ss=mine["y"] ** 2)
        .groupby(["model_a", "model_b"], as_index=False)[["n", "s", "ss"]]
        .sum()
    )
    by_hand = ratings_from_pairs(pairs, ci=None).frame.set_index("model")["elo"]
    got = res.frame.set_index("model")["elo"]
    assert set(got.index) == set(mine["model_a"]) | set(mine["model_b"])
    np.testing.assert_allclose(got.loc[by_hand.index].to_numpy(), by_hand.to_numpy(), atol=1e-6)


def test_two_terms_are_an_and(demo):
    with Store.open(demo, read_only=True) as s:
        bf = s.battle_frame("demo", where=parse_slice(["language=en", "category=coding"]))
        allb = s.battle_frame("demo")
        prompts = s._cur().execute("SELECT prompt_id, category FROM prompts").df()
    joined = allb.merge(prompts, on="prompt_id")
    want = joined[(joined["language"] == "en") & (joined["category"] == "coding")]["battle_id"]
    assert sorted(bf["battle_id"]) == sorted(want) and 0 < len(bf) < len(allb)


def test_every_method_of_the_view_is_on_the_slice(demo):
    where = parse_slice(["category=math"])
    with Store.open(demo, read_only=True) as s:
        judge = s.judges_frame("demo")["judge"].iloc[0]
        view, frame = view_for(s, "demo", judge, None, 0.1, where=where)
        full, _ = view_for(s, "demo", judge, None, 0.1)
    assert frame is not None
    assert {"human_elo", "hard_elo"} <= set(view.table.columns)
    # its own counts: each vote counts for both of its models
    assert view.table["n_votes"].sum() // 2 == frame["n_votes"].sum()
    assert view.table["n_votes"].sum() < full.table["n_votes"].sum()


def test_a_slice_too_small_says_so_instead_of_a_number(demo):
    with Store.open(demo, read_only=True) as s:
        values = slice_values(s, "demo")
        res = ratings(s, "demo", "human", where=parse_slice(["language=xx"]))
        assert isinstance(res, Unavailable) and "too few" in res.reason and "0 battles" in res.reason
        with pytest.raises(ValueError, match="slice key 'languag'.*keys: .*language"):
            ratings(s, "demo", "human", where=parse_slice(["languag=de"]))
        view, _ = view_for(s, "demo", None, None, 0.1, where=parse_slice(["language=xx"]))
    assert view.table.empty and view.note and "too few" in view.note
    assert (values["enough"] == (values["n_battles"] >= MIN_SLICE_BATTLES)).all()


def test_a_slice_below_the_minimum_is_refused_with_its_count(tmp_path):
    """A slice with MIN_SLICE_BATTLES − 1 battles says "too few"; one with MIN_SLICE_BATTLES is fitted."""
    rng = np.random.default_rng(1)
    n_rare = MIN_SLICE_BATTLES - 1
    n = 200
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    names = np.array(["m0", "m1", "m2"])
    tables = DatasetTables(
        name="tiny",
        source="test",
        models=pd.DataFrame({"model": names}),
        prompts=pd.DataFrame({"prompt_key": np.arange(n)}),
        prompt_attributes=pd.DataFrame(
            {"prompt_key": np.arange(n), "key": "kind", "value": ["rare"] * n_rare + ["common"] * (n - n_rare)}
        ),
        battles=pd.DataFrame(
            {"battle_key": np.arange(n), "model_a": names[a], "model_b": names[b], "prompt_key": np.arange(n)}
        ),
        votes=pd.DataFrame({"battle_key": np.arange(n), "winner": rng.choice(["a", "b", "tie"], n)}),
    )
    with Store.open(tmp_path / "t.duckdb") as s:
        s.write_dataset(tables)
        rare = ratings(s, "tiny", "human", where=parse_slice(["kind=rare"]))
        common = ratings(s, "tiny", "human", where=parse_slice(["kind=common"]))
    assert isinstance(rare, Unavailable) and f"has {n_rare} battles with human votes: too few" in rare.reason
    assert not isinstance(common, Unavailable) and common.n_battles == n - n_rare


@pytest.mark.integration
def test_cli_slice_on_the_demo_languages(demo):
    run = _cli(
        "leaderboard", "--db", str(demo), "--dataset", "demo", "--method", "human", "--slice", "language=de", "--json"
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    with Store.open(demo, read_only=True) as s:
        n_de = s._cur().execute("SELECT count(*) FROM votes JOIN battles USING (battle_id) WHERE language = 'de'")
        assert out["n_votes"] == n_de.fetchone()[0]
    assert out["slice"] == {"language": "de"}
    run = _cli("leaderboard", "--db", str(demo), "--dataset", "demo", "--method", "human", "--slice", "language=xx")
    assert run.returncode == 2 and "too few" in run.stderr
    run = _cli("leaderboard", "--db", str(demo), "--dataset", "demo", "--list-slices", "--json")
    assert run.returncode == 0, run.stderr
    listed = {(r["key"], r["value"]): r["n_battles"] for r in json.loads(run.stdout)["slices"]}
    assert listed[("language", "de")] == out["n_battles"]


def _second_and_third_models_with_judgments(root, tmp_path):
    """The real v2.0 directory plus two more models' answers and one judge's games against o3-mini."""
    copy = tmp_path / "ah2"
    shutil.copytree(root, copy)
    questions = [json.loads(x) for x in (copy / "question.jsonl").read_text(encoding="utf-8").split("\n") if x]
    rng = np.random.default_rng(0)
    for model, p_win in (("model-two", 0.7), ("model-three", 0.3)):
        answers, games = [], []
        for q in questions:
            answers.append(
                json.dumps(
                    {
                        "uid": q["uid"],
                        "ans_id": f"{model}-{q['uid']}",
                        "model": model,
                        "messages": [
                            {"role": "user", "content": q["prompt"]},
                            {"role": "assistant", "content": {"answer": f"{model} on {q['uid']}"}},
                        ],
                    }
                )
            )
            wins = rng.random() < p_win
            games.append(
                json.dumps(
                    {
                        "uid": q["uid"],
                        "category": q["category"],
                        "judge": "judge-x",
                        "model": model,
                        "baseline": "o3-mini-2025-01-31",
                        "games": [
                            {"score": "B>A" if wins else "A>B", "judgment": "…", "prompt": "…"},
                            {"score": "A>B" if wins else "B>A", "judgment": "…", "prompt": "…"},
                        ],
                    }
                )
            )
        (copy / "model_answer" / f"{model}.jsonl").write_text("\n".join(answers) + "\n", encoding="utf-8")
        jdir = copy / "model_judgment" / "judge-x"
        jdir.mkdir(parents=True, exist_ok=True)
        (jdir / f"{model}.jsonl").write_text("\n".join(games) + "\n", encoding="utf-8")
    return copy, questions


@pytest.mark.integration
@pytest.mark.shared
def test_arena_hard_v2_categories_and_subcategories_are_slices(tmp_path):
    root, questions = _second_and_third_models_with_judgments(shared_path("arena_hard_v2.0"), tmp_path)
    t = load(root, "arena-hard")
    attrs = t.prompt_attributes
    assert attrs is not None and set(attrs["key"]) == {"subcategory"}
    assert set(t.prompts["category"]) == {"hard_prompt", "creative_writing"}
    db = tmp_path / "s.duckdb"
    # the published directory first, then the same with two more models added to it: the prompts' attributes
    # come with the first import and are not repeated by the addition
    for path in (shared_path("arena_hard_v2.0"), root):
        run = _cli("import", "--db", str(db), str(path), "--dataset", "ah2")
        assert run.returncode == 0, run.stderr
    with Store.open(db, read_only=True) as s:
        n_attrs = s._cur().execute("SELECT count(*) FROM prompt_attributes").fetchone()[0]
    assert n_attrs == sum(bool(q.get("subcategory")) for q in questions)
    hard = sum(q["category"] == "hard_prompt" for q in questions)
    math = sum(q.get("subcategory") == "math" for q in questions)
    for terms, n_prompts in ((["category=hard_prompt"], hard), (["subcategory=math"], math)):
        args = [a for term in terms for a in ("--slice", term)]
        run = _cli(
            "leaderboard",
            "--db",
            str(db),
            "--dataset",
            "ah2",
            "--method",
            "hard",
            "--judge",
            "judge-x",
            *args,
            "--json",
        )
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        assert out["n_battles"] == 2 * n_prompts  # two models, each against the baseline on each prompt
        elo = {r["model"]: r["elo"] for r in out["models"]}
        assert elo["model-two"] > elo["model-three"]  # planted: wins 70% against the baseline, the other 30%
    run = _cli(
        "leaderboard",
        "--db",
        str(db),
        "--dataset",
        "ah2",
        "--method",
        "hard",
        "--judge",
        "judge-x",
        "--slice",
        "category=creative_writing",
        "--slice",
        "subcategory=math",
    )
    assert run.returncode == 2 and "too few" in run.stderr and "0 battles" in run.stderr


CRITERIA_V01 = ("specificity", "domain_knowledge", "complexity", "problem_solving", "creativity", "technical_accuracy")


def test_lmarena_tags_become_prompt_attributes(tmp_path):
    tag = {
        "criteria_v0.1": dict.fromkeys(CRITERIA_V01, True) | {"real_world": False},
        "math_v0.1": {"math": True},
        "creative_writing_v0.1": {"creative_writing": False, "score": "no"},
        "if_v0.1": {"if": False, "score": 2},
    }
    easy = {**tag, "criteria_v0.1": dict.fromkeys(tag["criteria_v0.1"], False), "math_v0.1": {"math": False}}
    rows = pd.DataFrame(
        {
            "model_a": ["x", "y"],
            "model_b": ["y", "x"],
            "winner": ["model_a", "tie"],
            "is_code": [True, False],
            "category_tag": [json.dumps(tag), json.dumps(easy)],
        }
    )
    path = tmp_path / "arena.csv"
    rows.to_csv(path, index=False)
    t = load(path, "lmarena")
    got = {(int(r.prompt_key), r.key): r.value for r in t.prompt_attributes.itertuples()}
    assert got[(0, "hard_prompt")] == "true" and got[(1, "hard_prompt")] == "false"  # 6 of 7 criteria: hard
    assert got[(0, "math")] == "true" and got[(0, "is_code")] == "true" and got[(1, "is_code")] == "false"
    assert got[(0, "instruction_following")] == "false" and got[(0, "creative_writing")] == "false"
    assert t.battles["prompt_key"].tolist() == [0, 1]
    bad = rows.assign(is_code=["maybe", True])
    bad.to_csv(path, index=False)
    from core.ingest import IngestError

    with pytest.raises(IngestError, match="row 1.*is_code|is_code.*row 1"):
        load(path, "lmarena")


def test_a_bundle_keeps_the_attributes(demo, tmp_path):
    from core.app.bundle import export_bundle

    out = tmp_path / "demo.zip"
    with Store.open(demo, read_only=True) as s:
        export_bundle(s, "demo", out)
        want = slice_values(s, "demo")
    t = load(out, "bundle")
    assert t.prompt_attributes is not None and len(t.prompt_attributes) == len(t.prompts)
    with Store.open(tmp_path / "copy.duckdb") as s:
        s.write_dataset(t)
        got = slice_values(s, "demo")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_selective_judging_on_a_slice_is_scope_on_the_slices_battles(demo):
    from core.app import selective

    where = parse_slice(["language=de"])
    with Store.open(demo, read_only=True) as s:
        judge = "judge-strong"
        on = selective.scope_at_alpha_on(s, "demo", judge, "rubric", 0.2, where)
        frame = s.battle_frame("demo", judge)
        by_hand = selective.scope_at_alpha(frame[frame["language"] == "de"].reset_index(drop=True), "rubric", 0.2)
        too_small = selective.scope_at_alpha_on(s, "demo", judge, "rubric", 0.2, parse_slice(["language=xx"]))
    assert not isinstance(on, Unavailable) and not isinstance(by_hand, Unavailable)
    assert on.threshold == by_hand.threshold and on.counts == by_hand.counts
    pd.testing.assert_frame_equal(on.leaderboard, by_hand.leaderboard)
    assert isinstance(too_small, Unavailable) and "too few" in too_small.reason


@pytest.mark.integration
def test_the_slice_follows_the_visitor_to_the_selective_page(demo, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", str(demo))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"dataset": "demo", "judge": "judge-strong", "slice": "language=de"})
    at.run()
    at.switch_page("app_pages/selective.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="scope_slice").value == ["language=de"]
    assert any("On the slice" in c.value and "language = de" in c.value for c in at.caption)
