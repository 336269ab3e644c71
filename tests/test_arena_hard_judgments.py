"""Arena-Hard-Auto judgments (model_judgment/<judge>/<model>.jsonl): games against the baseline, in battle terms.

Small directories written here from the documented v0.1 and v2 layouts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import duckdb
import numpy as np
import pytest

from core.app.data import import_path
from core.app.leaderboard import ratings
from core.ingest import IngestError, load
from core.ingest.arena_hard import DEFAULT_BASELINE
from core.ingest.detect import detect
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT

JUDGE = "gpt-4-1106-preview"
QUESTIONS = ("q1", "q2", "q3", "q4")
# (game 1 score, game 2 score) per question: game 1 shows the baseline as A, game 2 shows the model as A.
STRONG = [("B>>A", "A>>B"), ("B>A", "A>B"), ("A>B", "B>A"), ("B>>A", "A>B")]  # wins 3 of 4 questions
WEAK = [("A>>B", "B>>A"), ("A>B", "B>A"), ("B>A", "A>B"), ("A>B", None)]  # loses 3 of 4, one unparsed game


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _answers(root, models=(DEFAULT_BASELINE, "strong", "weak"), questions=QUESTIONS):
    _jsonl(
        root / "question.jsonl",
        [{"question_id": q, "cluster": "c", "turns": [{"content": f"{q}?"}]} for q in questions],
    )
    for m in models:
        _jsonl(
            root / "model_answer" / f"{m}.jsonl",
            [{"question_id": q, "model_id": m, "choices": [{"index": 0, "turns": [f"{m} on {q}"]}]} for q in questions],
        )


def _v01(root, model, scores, judge=JUDGE):
    _jsonl(
        root / "model_judgment" / judge / f"{model}.jsonl",
        [
            {
                "question_id": q,
                "model": model,
                "judge": judge,
                "games": [
                    {"user_prompt": "…", "judgment": f"game {k + 1} on {q}: [[{s}]]" if s else "no verdict", "score": s}
                    for k, s in enumerate(pair)
                ],
            }
            for q, pair in zip(QUESTIONS, scores)
        ],
    )


def _v01_dir(root):
    _answers(root)
    _v01(root, "strong", STRONG)
    _v01(root, "weak", WEAK)
    return root


def test_v01_games_become_battles_against_the_baseline_with_verdicts_and_grades_in_battle_terms(tmp_path):
    t = load(_v01_dir(tmp_path / "ah"), "arena-hard")
    assert len(t.battles) == 8 and set(t.battles["model_a"]) == {DEFAULT_BASELINE}
    assert sorted(t.battles["model_b"].unique()) == ["strong", "weak"]
    assert len(t.judgments) == 16 and set(t.judgments["judge"]) == {JUDGE}
    j = t.judgments.merge(t.battles[["battle_key", "model_b", "external_id"]], on="battle_key")
    # q1: game 1 "B>>A" (the model, battle b, much better) and game 2 "A>>B" (the model shown first) agree
    q1 = j[(j["model_b"] == "strong") & (j["external_id"] == "q1")].set_index("order")
    assert sorted(q1.index) == ["ab", "ba"]
    assert list(q1.loc[["ab", "ba"], "verdict"]) == ["b", "b"] and list(q1.loc[["ab", "ba"], "grade"]) == [-2, -2]
    # q2: B>A then A>B → b better; q3: A>B then B>A → a (the baseline) better
    q2 = j[(j["model_b"] == "strong") & (j["external_id"] == "q2")].set_index("order")
    assert list(q2.loc[["ab", "ba"], "grade"]) == [-1, -1] and set(q2["verdict"]) == {"b"}
    q3 = j[(j["model_b"] == "strong") & (j["external_id"] == "q3")].set_index("order")
    assert list(q3.loc[["ab", "ba"], "grade"]) == [1, 1] and set(q3["verdict"]) == {"a"}
    # weak q1: A>>B (baseline much better) then B>>A (baseline, shown second, much better)
    w1 = j[(j["model_b"] == "weak") & (j["external_id"] == "q1")].set_index("order")
    assert list(w1.loc[["ab", "ba"], "grade"]) == [2, 2] and set(w1["verdict"]) == {"a"}
    # every judged battle links its prompt and both answers
    assert set(zip(t.completions["prompt_key"], t.completions["model"])) >= set(
        zip(t.battles["prompt_key"], t.battles["model_a"])
    ) | set(zip(t.battles["prompt_key"], t.battles["model_b"]))


def test_a_null_score_is_kept_as_an_unparsed_judgment_with_its_text(tmp_path):
    t = load(_v01_dir(tmp_path / "ah"), "arena-hard")
    bad = t.judgments[t.judgments["parse_error"].notna()]
    assert len(bad) == 1 and bad["order"].iloc[0] == "ba"
    assert bad["verdict"].isna().all() and bad["grade"].isna().all()
    assert bad["raw_output"].iloc[0] == "no verdict" and "no score" in bad["parse_error"].iloc[0]
    assert t.judgments["parse_error"].isna().sum() == 15 and t.judgments["verdict"].notna().sum() == 15


def test_the_v2_layout_names_its_baseline_and_judge_and_reads_answer_objects(tmp_path):
    root = tmp_path / "ah2"
    _answers(root, models=("o3-mini-2025-01-31", "m"), questions=("u1", "u2"))
    games = [
        [{"score": "A=B", "judgment": {"answer": "same [[A=B]]"}, "prompt": "p"}, {"score": "B=A", "judgment": "t"}],
        [{"score": "A<B?", "judgment": "odd"}, {"score": "A>>B", "judgment": {"answer": "m far better"}}],
    ]
    _jsonl(
        root / "model_judgment" / "gpt-4.1-folder" / "m.jsonl",
        [
            {
                "uid": u,
                "category": "hard_prompt",
                "judge": "gpt-4.1",
                "model": "m",
                "baseline": "o3-mini-2025-01-31",
                "games": g,
            }
            for u, g in zip(("u1", "u2"), games)
        ],
    )
    t = load(root, "arena-hard")
    assert len(t.battles) == 2 and set(t.battles["model_a"]) == {"o3-mini-2025-01-31"}
    assert set(t.judgments["judge"]) == {"gpt-4.1"} and list(t.judges["judge"]) == ["gpt-4.1"]
    rows = t.judgments.sort_values(["battle_key", "order"]).reset_index(drop=True)
    assert list(rows["verdict"].fillna("-")) == ["tie", "tie", "-", "b"]
    assert list(rows["grade"].astype("Float64").fillna(99)) == [0, 0, 99, -2]
    assert rows["raw_output"].tolist() == ["same [[A=B]]", "t", "odd", "m far better"]
    assert "unrecognised score 'A<B?'" in rows["parse_error"].iloc[2]


def test_without_judgment_files_the_answers_only_behaviour_is_unchanged(tmp_path):
    root = tmp_path / "ah"
    _answers(root)
    (root / "model_judgment").mkdir()  # an empty folder is no judgments
    t = load(root, "arena-hard")
    assert len(t.battles) == 4 * 3 and t.judgments is None  # every pair of the three models on each question


@pytest.mark.integration
def test_the_cli_imports_with_auto_a_reimport_is_a_no_op_and_hard_elo_ranks_the_winner_first(tmp_path):
    root = _v01_dir(tmp_path / "ah")
    assert detect(root) == "arena-hard"
    db = tmp_path / "s.duckdb"
    run = subprocess.run(
        [sys.executable, "-m", "core", "import", "--db", str(db), str(root), "--format", "auto", "--dataset", "ah"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    with Store.open(db) as s:
        again = import_path(s, root, "arena-hard", dataset="ah")
        info = next(d for d in s.info()["datasets"] if d["name"] == "ah")
        hard = ratings(s, "ah", "hard", judge=JUDGE)
        judgments = s.judgments_frame("ah", JUDGE)
    assert again.status == "already-imported" and info["n_battles"] == 8
    assert len(judgments) == 16 and int(judgments["parse_error"].notna().sum()) == 1
    order = list(hard.frame["model"])
    assert order.index("strong") < order.index(DEFAULT_BASELINE) < order.index("weak"), hard.frame
    with duckdb.connect(str(db), read_only=True) as con:
        grades = dict(con.execute("SELECT grade, count(*) FROM judgments GROUP BY grade").fetchall())
    assert grades == {-2: 3, -1: 5, 1: 5, 2: 2, None: 1}  # the grades stored, in battle terms


def _bad_case(root, case):
    """Break a valid v0.1 directory in one place; return (file name, row, field)."""
    jfile = root / "model_judgment" / JUDGE / "strong.jsonl"
    recs = [json.loads(x) for x in jfile.read_text().splitlines()]
    if case == "unknown-question":
        recs[1]["question_id"] = "q99"
        expect = (2, "question_id")
    elif case == "model-without-answer":
        recs[2]["model"] = "ghost"
        expect = (3, "model")
    elif case == "baseline-without-answer":
        recs[0]["baseline"] = "gpt-4-turbo"
        expect = (1, "baseline")
    elif case == "bad-score-type":
        recs[3]["games"][1]["score"] = 2
        expect = (4, "games[2].score")
    elif case == "games-not-a-list":
        recs[1]["games"] = "A>B"
        expect = (2, "games")
    elif case == "duplicate":
        recs[3]["question_id"] = "q1"
        expect = (4, "question_id")
    else:
        raise AssertionError(case)
    jfile.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return jfile.name, *expect


@pytest.mark.parametrize(
    "case",
    [
        "unknown-question",
        "bad-score-type",
        "games-not-a-list",
        "duplicate",
    ],
)
def test_a_bad_judgment_names_file_row_and_field_and_changes_no_store(tmp_path, case):
    good = _v01_dir(tmp_path / "good")
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, good, "arena-hard", dataset="ah")
        before = s.info()["datasets"]
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    name, row, field = _bad_case(bad, case)
    with Store.open(db) as s:
        with pytest.raises(IngestError) as err:
            import_path(s, bad, "arena-hard", dataset="ah2")
        after = s.info()["datasets"]
    assert (err.value.row, err.value.field) == (row, field) and name in err.value.path
    assert f"row {row}, field '{field}'" in str(err.value)
    assert after == before


@pytest.mark.integration
def test_a_rejected_cli_import_creates_no_store(tmp_path):
    root = _v01_dir(tmp_path / "ah")
    _bad_case(root, "bad-score-type")
    db = tmp_path / "s.duckdb"
    run = subprocess.run(
        [sys.executable, "-m", "core", "import", "--db", str(db), str(root)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 2 and "strong.jsonl, row 4, field 'games[2].score'" in run.stderr, run.stderr
    assert not db.exists()


@pytest.mark.parametrize("case", ["model-without-answer", "baseline-without-answer"])
def test_a_judgment_whose_answers_are_missing_keeps_its_games_with_a_note(tmp_path, case):
    """Arena-Hard's show_result reads the judgments alone: a model (or a named baseline) with no answer file
    keeps its games in the score; the notes count the battles that lack a text."""
    root = _v01_dir(tmp_path / "ah")
    full = load(root, "arena-hard")
    _bad_case(root, case)
    t = load(root, "arena-hard")
    assert len(t.judgments) == len(full.judgments)
    assert any("lack an answer in model_answer/" in n and n.startswith("1 of ") for n in t.meta["notes"])
    ghost = {"model-without-answer": "ghost", "baseline-without-answer": "gpt-4-turbo"}[case]
    assert ghost in set(t.models["model"]) and ghost in set(t.battles["model_a"]) | set(t.battles["model_b"])


def test_the_baseline_judged_against_itself_makes_no_battle(tmp_path):
    root = _v01_dir(tmp_path / "ah")
    _v01(root, DEFAULT_BASELINE, [("A=B", "A=B")] * 4)
    t = load(root, "arena-hard")
    assert len(t.battles) == 8 and len(t.judgments) == 16 and t.meta["skipped_self_judgments"] == 4


# ------------------------------------------------------------------ read what show_result reads (issue #55)
def _against_other_baseline(root, baseline="claude-3.7-sonnet"):
    """A v0.1 directory judged against another baseline, as a fork commits it: its records name no baseline,
    gpt-4-0314 answered nothing, and the baseline's own file judges it against itself."""
    _answers(root, models=(baseline, "strong", "weak"))
    _v01(root, "strong", STRONG)
    _v01(root, "weak", WEAK)
    _v01(root, baseline, [("A=B", "A=B")] * 4)
    return root


def test_records_naming_no_baseline_take_it_from_the_bench_s_judge_config(tmp_path):
    root = _against_other_baseline(tmp_path / "repo" / "data" / "ko-bench")
    with pytest.raises(IngestError) as err:  # nothing says which model the games were against
        load(root, "arena-hard")
    assert err.value.field == "baseline" and "--baseline NAME" in str(err.value)
    config = tmp_path / "repo" / "config" / "judge_config.yaml"
    config.parent.mkdir()
    config.write_text("bench_name: other-bench\nbaseline_model: gpt-4o\n")
    with pytest.raises(IngestError):  # a configuration of another bench says nothing about this one
        load(root, "arena-hard")
    config.write_text(
        "name: judgment config\nbench_name: ko-bench\n\nbaseline: True\nbaseline_model: claude-3.7-sonnet\n"
    )
    t = load(root, "arena-hard")
    assert set(t.battles["model_a"]) == {"claude-3.7-sonnet"} and t.meta["baseline"] == "claude-3.7-sonnet"
    assert t.meta["skipped_self_judgments"] == 4 and len(t.battles) == 8
    assert any("config/judge_config.yaml" in n for n in t.meta["notes"])


def test_baseline_names_it_on_the_command_line_and_is_refused_for_other_formats(tmp_path):
    root = _against_other_baseline(tmp_path / "ah")
    db = tmp_path / "s.duckdb"
    run = run_cli("import", "--db", db, root, "--baseline", "claude-3.7-sonnet")
    assert run.returncode == 0, run.stderr
    with Store.open(db, read_only=True) as s:
        battles = s.battle_frame("ah")
    assert set(battles["model_a"]) == {"claude-3.7-sonnet"} and len(battles) == 8
    other = tmp_path / "a.csv"
    other.write_text("model_a,model_b,winner\nx,y,model_a\n")
    bad = run_cli("import", "--db", tmp_path / "t.duckdb", other, "--baseline", "x")
    assert bad.returncode == 2 and "--baseline applies to arena-hard" in bad.stderr


def test_the_one_answering_model_no_record_judges_is_the_baseline(tmp_path):
    root = tmp_path / "ah"
    _answers(root, models=("claude-3.7-sonnet", "strong", "weak"))
    _v01(root, "strong", STRONG)
    _v01(root, "weak", WEAK)
    t = load(root, "arena-hard")
    assert set(t.battles["model_a"]) == {"claude-3.7-sonnet"}
    assert any("the one answering model no record judges" in n for n in t.meta["notes"])


def test_empty_and_overlong_answers_are_kept_with_a_note(tmp_path):
    from core.ingest.common import MAX_TEXT_CHARS

    root = _v01_dir(tmp_path / "ah")
    answers = root / "model_answer" / "strong.jsonl"
    recs = [json.loads(x) for x in answers.read_text().splitlines()]
    recs[0]["choices"][0]["turns"] = ["   "]
    recs[1]["choices"][0]["turns"] = [{"content": "", "token_len": 0}]
    recs[2]["choices"][0]["turns"] = ["x" * (MAX_TEXT_CHARS + 42)]
    _jsonl(answers, recs)
    t = load(root, "arena-hard")
    assert len(t.judgments) == 16  # every game counts
    mine = t.completions[t.completions["model"] == "strong"].sort_values("prompt_key")["text"].tolist()
    assert mine[0].strip() == "" and mine[1] == "" and len(mine[2]) == MAX_TEXT_CHARS
    notes = " | ".join(t.meta["notes"])
    assert "2 empty answer(s)" in notes and "strong.jsonl row 1" in notes
    assert f"({MAX_TEXT_CHARS + 42:,} characters)" in notes and "strong.jsonl row 3" in notes


def test_a_directory_of_judgments_alone_scores_as_with_its_answers(tmp_path):
    """Arena-Hard's show_result reads model_judgment/ alone: so does the import, and the score is the same."""
    full_root = _v01_dir(tmp_path / "full")
    bare = tmp_path / "bare"
    shutil.copytree(full_root / "model_judgment", bare / "model_judgment")
    assert detect(bare) == "arena-hard"
    full, t = load(full_root, "arena-hard"), load(bare, "arena-hard")
    assert len(t.battles) == len(full.battles) and t.completions is None
    assert t.prompts["text"].isna().all() and set(t.prompts["external_id"]) == set(QUESTIONS)

    def games(x):
        j = x.judgments.merge(x.battles[["battle_key", "external_id", "model_b"]], on="battle_key")
        cols = ["external_id", "model_b", "order", "grade"]
        return j[cols].astype(str).sort_values(cols).reset_index(drop=True)

    assert games(full).equals(games(t))
    assert any("no question.jsonl" in n for n in t.meta["notes"])
    db_full, db_bare = tmp_path / "f.duckdb", tmp_path / "b.duckdb"
    for db, root in ((db_full, full_root), (db_bare, bare)):
        assert run_cli("import", "--db", db, root, "--dataset", "ah").returncode == 0
    scores = [
        run_cli("winrate", "--db", db, "--dataset", "ah", "--arena-hard", "--json").stdout for db in (db_full, db_bare)
    ]
    rows = [{r["model"]: round(r["score"], 9) for r in json.loads(x)["rows"]} for x in scores]
    assert rows[0] == rows[1] and len(rows[0]) >= 2


def _with_tokens(root, tokens, layout="conv_metadata"):
    """Rewrite the answers of :func:`_v01_dir` with a token count per answer (``tokens[model][question]``)."""
    for m in (DEFAULT_BASELINE, "strong", "weak"):
        records = []
        for q in QUESTIONS:
            text = f"{m} on {q}" + " word" * tokens[m][q]
            rec = {"question_id": q, "model_id": m, "choices": [{"index": 0, "turns": [text]}]}
            if layout == "conv_metadata":
                rec["conv_metadata"] = {"token_len": tokens[m][q], "header_count": {"h1": 0}}
            else:  # v0.1 as published from April 2024
                rec["choices"][0]["turns"] = [{"content": text, "token_len": tokens[m][q]}]
            records.append(rec)
        _jsonl(root / "model_answer" / f"{m}.jsonl", records)
    return root


@pytest.mark.parametrize("layout", ["conv_metadata", "turns"])
def test_style_control_counts_length_in_the_files_tokens_as_arena_hard_does(tmp_path, layout):
    """token_len (conv_metadata's, or the turns' of the 2024 layout) is kept per answer, and style control uses
    it as the length feature when every answer has one; the score is the same fit with tokens for length."""
    from core.app.arena_hard import arena_hard_view, games_against
    from core.stats.arena_hard import arena_hard_score
    from core.store import Store

    rng = np.random.default_rng(3)
    tokens = {m: {q: int(rng.integers(5, 400)) for q in QUESTIONS} for m in (DEFAULT_BASELINE, "strong", "weak")}
    root = _with_tokens(_v01_dir(tmp_path / "ah"), tokens, layout)
    t = load(root, "arena-hard")
    kept = {
        (m, p): n for m, p, n in zip(t.completions["model"], t.completions["prompt_key"], t.completions["n_tokens"])
    }
    ids = dict(zip(t.prompts["prompt_key"], t.prompts["external_id"]))
    assert {(m, ids[p]): int(n) for (m, p), n in kept.items()} == {
        (m, q): tokens[m][q] for m in tokens for q in QUESTIONS
    }
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, root, "arena-hard", dataset="ah")
        view = arena_hard_view(s, "ah", style_control=True, n_rounds=20)
        games = games_against(s.graded_games("ah", JUDGE), DEFAULT_BASELINE)
    assert view.length_unit == "tokens" and "Length is in tokens" in view.method
    expected = arena_hard_score(
        games.assign(length=games["tokens"], baseline_length=games["baseline_tokens"]),
        DEFAULT_BASELINE,
        style_control=True,
        n_rounds=20,
    )
    assert view.rows["score"].tolist() == pytest.approx(expected.rows["score"].tolist(), abs=1e-12)
    in_chars = arena_hard_score(games, DEFAULT_BASELINE, style_control=True, n_rounds=20)
    assert view.rows["score"].tolist() != pytest.approx(in_chars.rows["score"].tolist(), abs=1e-6)


def test_style_control_falls_back_to_characters_and_a_bad_token_count_is_refused(tmp_path):
    from core.app.arena_hard import arena_hard_view
    from core.store import Store

    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        import_path(s, _v01_dir(tmp_path / "plain"), "arena-hard", dataset="plain")  # no token_len anywhere
        view = arena_hard_view(s, "plain", style_control=True, n_rounds=5)
    assert view.length_unit == "characters" and "not every answer file gives its token_len" in view.method
    root = _with_tokens(
        _v01_dir(tmp_path / "bad"), {m: dict.fromkeys(QUESTIONS, 7) for m in ("gpt-4-0314", "strong", "weak")}
    )
    path = root / "model_answer" / "weak.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[1]["conv_metadata"]["token_len"] = "many"
    _jsonl(path, rows)
    with pytest.raises(IngestError) as err:
        load(root, "arena-hard")
    assert err.value.row == 2 and err.value.field == "conv_metadata.token_len" and "weak.jsonl" in str(err.value)


def test_a_record_with_one_game_counts_it_once_and_says_so(tmp_path):
    root = tmp_path / "ah"
    _answers(root)
    _v01(root, "strong", [("B>A",), *STRONG[1:]])
    t = load(root, "arena-hard")
    assert len(t.judgments) == 7  # 1 + three records of two games
    note = next(n for n in t.meta["notes"] if "one game" in n)
    assert "strong.jsonl row 1" in note and "counted once" in note
