"""The peers' files exactly as they publish them (issue 37): Arena-Hard's 2024 and v2.0 layouts, AlpacaEval's
``results/`` tree, and a second file joining a dataset (another model's annotations, MT-Bench's two splits).

Real files are read from ``../shared/datasets``; files a test changes are copied to ``tmp_path`` first.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.app.data import import_path
from core.ingest import IngestError, load
from core.ingest.detect import detect
from core.store import Store
from tests.conftest import ROOT, shared_path
from tests.test_mtbench_human import GPT4, HUMAN
from tests.test_mtbench_human import _write as write_split

AE_CONFIG = "weighted_alpaca_eval_gpt4_turbo"
AE_BASELINE = "gpt4_1106_preview"
AE_MODELS = {"claude-2", "gpt-3.5-turbo-1106", "vicuna-13b-v1.5", "alpaca-7b", "phi-2"}
LINE_BREAKS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


def _cli(*args: str):
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True)


def _counts(db) -> dict:
    with Store.open(db, read_only=True) as s:
        return {d["name"]: d for d in s.info()["datasets"]}


# ------------------------------------------------------------------ Arena-Hard
@pytest.mark.shared
def test_arena_hard_v01_as_published_in_2024_imports_with_every_answer():
    root = shared_path("arena_hard_v0.1_2024")
    assert detect(root) == "arena-hard"
    t = load(root, "arena-hard")  # was: "no answer text at choices[0].turns"
    assert len(t.prompts) == 500 and len(t.completions) == 1500 and len(t.battles) == 1500
    first = json.loads((root / "model_answer" / "gpt-4-0314.jsonl").read_text(encoding="utf-8").split("\n")[0])
    want = first["choices"][0]["turns"][0]["content"]
    pk = t.prompts.set_index("external_id").loc[first["question_id"], "prompt_key"]
    comp = t.completions[(t.completions["prompt_key"] == pk) & (t.completions["model"] == "gpt-4-0314")]
    assert comp["text"].tolist() == [want]
    assert t.completions["text"].str.len().min() > 0


@pytest.mark.integration
@pytest.mark.shared
def test_arena_hard_v2_questions_and_one_models_answers_import_without_battles(tmp_path):
    root = shared_path("arena_hard_v2.0")
    db = tmp_path / "s.duckdb"
    run = _cli("import", "--db", str(db), str(root), "--dataset", "ah2")
    assert run.returncode == 0, run.stderr
    info = _counts(db)["ah2"]
    assert (info["n_prompts"], info["n_completions"], info["n_battles"]) == (750, 750, 0)
    # a second model's answers, added later: the battles appear, the first model's answers are not stored twice
    copy = tmp_path / "ah2"
    shutil.copytree(root, copy)
    lines = (copy / "model_answer" / "o3-mini-2025-01-31.jsonl").read_text(encoding="utf-8").split("\n")
    other = []
    for line in lines:
        if line.strip():
            rec = json.loads(line)
            rec["model"] = "second-model"
            rec["messages"][-1]["content"] = {"answer": "a short answer to " + rec["uid"]}
            other.append(json.dumps(rec, ensure_ascii=False))
    (copy / "model_answer" / "second-model.jsonl").write_text("\n".join(other) + "\n", encoding="utf-8")
    run = _cli("import", "--db", str(db), str(copy), "--dataset", "ah2")
    assert run.returncode == 0 and "added" in run.stdout, run.stderr
    info = _counts(db)["ah2"]
    assert (info["n_prompts"], info["n_completions"], info["n_battles"]) == (750, 1500, 750)
    with Store.open(db, read_only=True) as s:
        linked = s._cur().execute("SELECT count(*) FROM battles WHERE completion_a IS NULL OR completion_b IS NULL")
        assert linked.fetchone()[0] == 0  # every added battle links both stored answers


# ------------------------------------------------------------------ AlpacaEval
@pytest.mark.shared
def test_the_alpaca_eval_results_tree_is_one_dataset_against_the_baseline(tmp_path):
    results = shared_path("alpaca_eval_2") / "results"
    assert detect(results) == "alpaca-eval"
    with pytest.raises(IngestError, match="several annotator configurations.*--annotator"):
        load(results, "alpaca-eval")
    t = load(results, "alpaca-eval", annotator=AE_CONFIG)
    assert set(t.models["model"]) == AE_MODELS | {AE_BASELINE}
    assert set(t.battles["model_a"]) == {AE_BASELINE} and set(t.battles["model_b"]) == AE_MODELS
    assert len(t.battles) == 4 * 805 + 803 and len(t.judgments) == len(t.battles)
    assert t.meta["skipped_self_comparisons"] == 805  # the baseline's own file
    assert t.meta["baseline"] == AE_BASELINE and len(t.prompts) == 805
    # the published preferences come back: p_a = 2 − preference, so the model's mean is the win rate
    recs = json.loads((results / "claude-2" / AE_CONFIG / "annotations.json").read_text(encoding="utf-8"))
    j = t.judgments.merge(t.battles, on="battle_key")
    claude = j[j["model_b"] == "claude-2"]
    assert (1 - claude["p_a"]).mean() == pytest.approx(sum(r["preference"] - 1 for r in recs) / len(recs), abs=1e-12)


@pytest.mark.shared
def test_alpaca_eval_1_draws_coded_0_are_ties():
    path = shared_path("alpaca_eval_2") / "results" / "alpaca-7b" / "alpaca_eval_gpt4"
    recs = json.loads((path / "annotations.json").read_text(encoding="utf-8"))
    t = load(path, "alpaca-eval")  # was: preference 0 refused
    ties = t.judgments[t.judgments["verdict"] == "tie"]
    assert len(ties) == sum(r["preference"] == 0 for r in recs) == 16
    assert (ties["p_a"] == 0.5).all()
    assert set(t.battles["model_a"]) == {"text_davinci_003"} and set(t.battles["model_b"]) == {"alpaca-7b"}


@pytest.mark.shared
def test_two_folders_reusing_a_generator_name_stay_two_models(tmp_path):
    src = shared_path("alpaca_eval_2") / "results"
    tree = tmp_path / "results"
    for model in ("claude-2", AE_BASELINE):
        shutil.copytree(src / model / AE_CONFIG, tree / model / AE_CONFIG)
    # a second run of claude-2 under another folder name, its generator name unchanged (as AlpacaEval's tree has)
    recs = json.loads((src / "claude-2" / AE_CONFIG / "annotations.json").read_text(encoding="utf-8"))
    for r in recs:
        r["output_2"] = "rerun: " + r["output_2"]
    (tree / "claude-2-rerun" / AE_CONFIG).mkdir(parents=True)
    (tree / "claude-2-rerun" / AE_CONFIG / "annotations.json").write_text(json.dumps(recs), encoding="utf-8")
    t = load(tree, "alpaca-eval")
    assert set(t.battles["model_b"]) == {"claude-2", "claude-2-rerun"}
    assert t.meta["models_named_by_folder"] == {"claude-2-rerun": "claude-2"}


@pytest.mark.integration
@pytest.mark.shared
def test_another_models_file_joins_the_dataset_and_a_conflict_changes_nothing(tmp_path):
    src = shared_path("alpaca_eval_2") / "results"
    tree = tmp_path / "results"
    for model in ("claude-2", "alpaca-7b", AE_BASELINE):
        shutil.copytree(src / model / AE_CONFIG, tree / model / AE_CONFIG)
    db = tmp_path / "s.duckdb"
    assert _cli("import", "--db", str(db), str(tree), "--dataset", "ae").returncode == 0
    before = _counts(db)["ae"]
    run = _cli("import", "--db", str(db), str(src / "phi-2" / AE_CONFIG / "annotations.json"), "--dataset", "ae")
    assert run.returncode == 0, run.stderr
    after = _counts(db)["ae"]
    assert after["n_battles"] == before["n_battles"] + 803 and after["n_models"] == before["n_models"] + 1
    assert after["n_prompts"] == before["n_prompts"] == 805  # the same instructions, not copies
    # a file that says otherwise about a judgment already stored is refused, naming the row, and changes nothing
    recs = json.loads((src / "claude-2" / AE_CONFIG / "annotations.json").read_text(encoding="utf-8"))
    recs[6]["preference"] = 3 - recs[6]["preference"] if recs[6]["preference"] != 1.5 else 1.0
    bad = tmp_path / "claude-2-edited" / "annotations.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(recs), encoding="utf-8")
    run = _cli("import", "--db", str(db), str(bad), "--dataset", "ae")
    assert run.returncode == 2 and "row 7" in run.stderr and "in the dataset" in run.stderr, run.stderr
    assert f"imported from 'claude-2/{AE_CONFIG}/annotations.json:7'" in run.stderr  # both rows named
    assert _counts(db)["ae"] == after
    # the same annotations inside a larger file are skipped, the new ones added
    run = _cli("import", "--db", str(db), str(src), "--annotator", AE_CONFIG, "--dataset", "ae", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["n_battles"] == 2 * 805  # gpt-3.5-turbo-1106 and vicuna-13b-v1.5
    assert _counts(db)["ae"]["n_battles"] == 4 * 805 + 803


def test_a_file_of_another_layout_cannot_join_a_dataset(tmp_path):
    db = tmp_path / "s.duckdb"
    human = write_split(tmp_path / "human.jsonl", HUMAN)
    with Store.open(db) as s:
        import_path(s, human, "mtbench-human", dataset="mt")
        before = s.info()["datasets"]
        f = tmp_path / "run" / "annotations.json"
        f.parent.mkdir()
        rec = {"instruction": "x", "output_1": "a", "generator_1": "m1", "output_2": "b", "generator_2": "m2"}
        f.write_text(json.dumps([{**rec, "annotator": "j", "preference": 1.2}]))
        with pytest.raises(IngestError, match="holds mtbench-human data and this file is alpaca-eval"):
            import_path(s, f, "alpaca-eval", dataset="mt")
        assert s.info()["datasets"] == before


# ------------------------------------------------------------------ MT-Bench's two splits
@pytest.mark.integration
def test_both_mt_bench_splits_in_one_directory_are_one_dataset_in_one_command(tmp_path):
    split_dir = tmp_path / "mt_bench_human_judgments"
    write_split(split_dir / "human.jsonl", HUMAN)
    write_split(split_dir / "gpt4_pair.jsonl", GPT4)
    assert detect(split_dir) == "mtbench-human"
    db = tmp_path / "s.duckdb"
    run = _cli("import", "--db", str(db), str(split_dir))
    assert run.returncode == 0, run.stderr
    one = load(write_split(tmp_path / "both.jsonl", HUMAN + GPT4), "mtbench-human")
    with Store.open(db, read_only=True) as s:
        stored = s.dataset_tables("mt_bench_human_judgments")
    # the same battles, votes and judgments as the two splits concatenated by hand
    assert len(stored.battles) == len(one.battles) and len(stored.votes) == len(one.votes)
    assert len(stored.judgments) == len(one.judgments)

    def outcomes(t) -> set:
        """(first model by name, second, turn, verdict in those terms): the battles' orientation may differ, since
        the directory's files are read by name (gpt4_pair.jsonl first)."""
        j = t.judgments.merge(t.battles, on="battle_key")
        out = set()
        for a, b, turn, v in zip(j["model_a"], j["model_b"], j["turn"], j["verdict"]):
            out.add((a, b, int(turn), v) if a < b else (b, a, int(turn), {"a": "b", "b": "a"}.get(v, v)))
        return out

    assert outcomes(stored) == outcomes(one)  # the swapped rows are flipped into the battle's terms


def test_a_second_split_file_adds_to_the_dataset_of_the_first(tmp_path):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, write_split(tmp_path / "human.jsonl", HUMAN), "mtbench-human", dataset="mt")
        res = import_path(s, write_split(tmp_path / "gpt4_pair.jsonl", GPT4), "mtbench-human", dataset="mt")
        stored = s.dataset_tables("mt")
    assert res.status == "added" and res.n_judgments == len(GPT4)
    assert res.n_battles == 0  # every gpt4_pair battle is one of the human split's, two of them named swapped
    assert len(stored.judgments) == len(GPT4)


# ------------------------------------------------------------------ any valid JSON Lines
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(
        st.text(
            alphabet=st.one_of(st.sampled_from(LINE_BREAKS), st.characters(codec="utf-8", exclude_categories=["Cs"])),
            min_size=1,
            max_size=40,
        ).filter(lambda s: s.strip()),
        min_size=1,
        max_size=6,
    ),
    crlf=st.booleans(),
)
def test_any_jsonl_of_valid_json_lines_imports(tmp_path_factory, texts, crlf):
    root = tmp_path_factory.mktemp("ah")
    (root / "model_answer").mkdir()
    end = "\r\n" if crlf else "\n"
    questions = [{"uid": f"q{k}", "category": "c", "subcategory": "s", "prompt": t} for k, t in enumerate(texts)]
    (root / "question.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + end for q in questions), encoding="utf-8"
    )
    for model in ("m1", "m2"):
        answers = [
            {"uid": q["uid"], "ans_id": f"{model}{k}", "model": model, "messages": [{"role": "user", "content": ""}]}
            for k, q in enumerate(questions)
        ]
        for a, t in zip(answers, texts):
            a["messages"].append({"role": "assistant", "content": {"answer": t + model}})
        (root / "model_answer" / f"{model}.jsonl").write_text(
            "".join(json.dumps(a, ensure_ascii=False) + end for a in answers), encoding="utf-8"
        )
    t = load(root, "arena-hard")
    assert t.prompts["text"].tolist() == texts
    assert sorted(t.completions["text"]) == sorted(x + m for x in texts for m in ("m1", "m2"))
    assert len(t.battles) == len(texts)


# ------------------------------------------------------------------ AlpacaEval's numbers
@pytest.fixture(scope="module")
def alpaca_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("ae") / "ae.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("alpaca_eval_2") / "results", "alpaca-eval", dataset="ae", annotator=AE_CONFIG)
    return path


@pytest.mark.integration
@pytest.mark.shared
def test_winrate_reproduces_the_published_alpaca_eval_leaderboard(alpaca_db):
    import pandas as pd
    from scipy.stats import spearmanr

    run = _cli("winrate", "--db", str(alpaca_db), "--dataset", "ae", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["baseline"] == AE_BASELINE and out["judge"] == AE_CONFIG  # both found: the only ones there are
    rows = pd.DataFrame(out["rows"]).set_index("model")
    assert list(rows.columns) == [
        "win_rate",
        "standard_error",
        "discrete_win_rate",
        "lc_win_rate",
        "lc_standard_error",
        "lc_standard_error_glm",
        "avg_length",
        "n",
        "lc_caveat",
    ]
    board = pd.read_csv(shared_path("alpaca_eval_2") / "leaderboard.csv", index_col=0).loc[rows.index]
    for ours, theirs in (("win_rate", "win_rate"), ("standard_error", "standard_error")):
        assert (rows[ours] - board[theirs]).abs().max() <= 0.01, ours  # percentage points
    assert (rows["discrete_win_rate"] - board["discrete_win_rate"]).abs().max() <= 0.01
    assert rows.loc["phi-2", "n"] == 803 and rows.loc["claude-2", "n"] == 805
    # the LC agreement the docs state: measured here, on the five shared models and the baseline
    rho = spearmanr(rows["lc_win_rate"], board["length_controlled_winrate"]).statistic
    gap = (rows["lc_win_rate"] - board["length_controlled_winrate"]).abs()
    assert rho >= 0.97 and gap.mean() <= 1.0 and gap.max() <= 2.0, (rho, gap.to_dict())


@pytest.mark.integration
@pytest.mark.shared
def test_the_leaderboard_page_shows_the_win_rates_against_the_baseline(alpaca_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from core.app.winrate import win_rate_view

    monkeypatch.setenv("ARENA_DB", str(alpaca_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    from core.app.safe_text import escape_markdown

    assert any(f"Against the baseline, {escape_markdown(AE_BASELINE)}" in h.value for h in at.subheader)
    table = next(d.value for d in at.dataframe if "LC win rate (%)" in d.value.columns)
    with Store.open(alpaca_db, read_only=True) as s:
        view = win_rate_view(s, "ae", judge=AE_CONFIG)
    shown = dict(zip(table["model"], table["win rate (%)"]))
    for model, rate, se in zip(view.rows["model"], view.rows["win_rate"], view.rows["standard_error"]):
        assert shown[model] == f"{rate:.1f} ± {se:.1f}"
    # the caption states the method this view used: AlpacaEval's fixed difficulties on its own instructions
    assert view.result.difficulty_source == "fixed"
    assert any(view.method in c.value for c in at.caption)
    shown_lc = dict(zip(table["model"], table["LC win rate (%)"]))
    for model, lc, se in zip(view.rows["model"], view.rows["lc_win_rate"], view.rows["lc_standard_error"]):
        assert shown_lc[model] == f"{lc:.1f} ± {se:.1f}"


@pytest.mark.integration
@pytest.mark.shared
@pytest.mark.parametrize(
    "page",
    [
        "app_pages/overview.py",
        "app_pages/calibration.py",
        "app_pages/residuals.py",
        "app_pages/selective.py",
        "app_pages/judges.py",
        "app_pages/bias.py",
        "app_pages/analyses.py",
    ],
)
def test_every_page_renders_on_the_alpaca_eval_tree(alpaca_db, monkeypatch, page):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", str(alpaca_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]


# ------------------------------------------------------------------ LMArena: battles matched by their id
def _arena_rows(ids: range, flip: int | None = None):
    import pandas as pd

    models = ["alpha", "beta", "gamma"]
    rows = []
    for k in ids:
        winner = ("model_a", "model_b", "tie")[k % 3]
        if k == flip:
            winner = "model_b" if winner == "model_a" else "model_a"
        rows.append(
            {
                "question_id": f"q{k}",
                "model_a": models[k % 3],
                "model_b": models[(k + 1) % 3],
                "winner": winner,
                "judge": f"user{k % 4}",
                "tstamp": 1.7e9 + k,
            }
        )
    return pd.DataFrame(rows)


def test_a_second_lmarena_file_adds_its_new_battles_even_on_the_sql_path(tmp_path):
    from core.app.data import prepare_import

    first, second, bad = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    _arena_rows(range(100)).to_parquet(first, index=False)
    _arena_rows(range(50, 150)).to_parquet(second, index=False)
    _arena_rows(range(140, 160), flip=145).to_parquet(bad, index=False)
    assert prepare_import(second, "lmarena", dataset="arena").bulk is not None  # would take the one-scan path
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, first, "lmarena", dataset="arena")
        res = import_path(s, second, "lmarena", dataset="arena")
        assert (res.status, res.n_battles, res.n_votes) == ("added", 50, 50)  # q50–q99 are already there
        before = s.info()["datasets"]
        with pytest.raises(IngestError, match="already holds the vote") as err:
            import_path(s, bad, "lmarena", dataset="arena")
        assert err.value.row == 6 and s.info()["datasets"] == before  # q145 is the file's 6th row
    assert _counts(db)["arena"]["n_battles"] == 150


def test_a_battle_named_the_other_way_round_has_every_outcome_flipped_into_the_stored_terms():
    import pandas as pd

    from core.domain import DatasetTables
    from core.ingest.merge import addition

    def tables(model_a: str, model_b: str, judgment: dict) -> DatasetTables:
        return DatasetTables(
            name="d",
            source="arena-hard",
            models=pd.DataFrame({"model": ["m1", "m2"]}),
            battles=pd.DataFrame(
                {"battle_key": [0], "prompt_key": [0], "model_a": [model_a], "model_b": [model_b], "turn": [None]}
            ),
            prompts=pd.DataFrame({"prompt_key": [0], "external_id": ["q"], "text": ["t"]}),
            judgments=pd.DataFrame([{"battle_key": 0, "judge": "j", "prompt_version": "imported", **judgment}]),
        )

    stored = tables("m1", "m2", {"order": "ab", "verdict": "a", "p_a": 0.8, "grade": 2})
    new = tables(
        "m2", "m1", {"order": "ab", "verdict": "a", "p_a": 0.7, "grade": 1, "a_factuality": 9.0, "b_factuality": 3.0}
    )
    add = addition(stored, new, "f.jsonl")
    assert add.matched_battles == 1 and add.flipped_battles == 1 and add.tables.battles.empty
    j = add.tables.judgments.iloc[0]
    # m2 shown first and preferred: in the stored battle (m1 = model_a) that is order ba, verdict b, p_a 0.3
    assert (j["battle_key"], j["order"], j["verdict"], j["grade"]) == (0, "ba", "b", -1)
    assert j["p_a"] == pytest.approx(0.3) and (j["a_factuality"], j["b_factuality"]) == (3.0, 9.0)
    # the same judgment in the same order again, saying otherwise: refused
    again = tables("m2", "m1", {"order": "ba", "verdict": "b", "p_a": 0.5, "grade": 0})
    with pytest.raises(IngestError, match="judgment of battle 0 .* in the dataset"):
        addition(stored, again, "g.jsonl")
