"""MT-Bench human judgments: repeated and swapped rows are one battle, human rows votes, gpt4_pair rows judgments.

The fixtures are small split files written here from the documented fields of
``lmsys/mt_bench_human_judgments`` (question_id, model_a, model_b, winner,
judge, conversation_a, conversation_b, turn).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from core.app.data import import_path
from core.ingest import IngestError, load
from core.ingest.detect import detect
from core.store import Store
from tests.cli import run_cli
from tests.conftest import ROOT

QUESTIONS = {81: ("Write a blog post about Hawaii.", "Rewrite it in one line."), 82: ("Draft an email.", "Shorter.")}


def _conv(qid: int, model: str) -> list[dict]:
    u1, u2 = QUESTIONS[qid]
    return [
        {"content": u1, "role": "user"},
        {"content": f"{model} on {qid} (1)", "role": "assistant"},
        {"content": u2, "role": "user"},
        {"content": f"{model} on {qid} (2)", "role": "assistant"},
    ]


def _row(qid, ma, mb, winner, judge, turn=1, **over):
    rec = {
        "question_id": qid,
        "model_a": ma,
        "model_b": mb,
        "winner": winner,
        "judge": judge,
        "conversation_a": _conv(qid, ma),
        "conversation_b": _conv(qid, mb),
        "turn": turn,
    }
    rec.update(over)
    return rec


HUMAN = [
    _row(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "author_2"),
    _row(81, "alpaca-13b", "gpt-3.5-turbo", "tie", "author_4"),
    _row(81, "gpt-3.5-turbo", "alpaca-13b", "model_a", "expert_1"),  # the same battle named the other way round
    _row(81, "alpaca-13b", "gpt-3.5-turbo", "model_a", "author_2", turn=2),  # turn 2: another battle
    _row(81, "claude-v1", "vicuna-13b-v1.2", "model_a", "author_0"),
    _row(82, "claude-v1", "alpaca-13b", "model_b", "expert_3", turn=2),
    _row(82, "alpaca-13b", "claude-v1", "model_a", "author_4", turn=2),
]
GPT4 = [
    _row(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "gpt4_pair"),
    _row(81, "claude-v1", "vicuna-13b-v1.2", "tie (inconsistent)", "gpt4_pair"),
    _row(82, "alpaca-13b", "claude-v1", "model_a", "gpt4_pair", turn=2),  # swapped against nothing: own battle
    _row(81, "gpt-3.5-turbo", "alpaca-13b", "model_a", "gpt4_pair", turn=2),
]


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        for col in ("conversation_a", "conversation_b"):
            if col in frame:
                frame[col] = [json.dumps(c) for c in frame[col]]
        frame.to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli(db, path, *extra):
    return run_cli("import", "--db", str(db), str(path), "--format", "auto", *extra, cwd=ROOT)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_repeated_and_swapped_rows_are_one_battle_with_several_votes(tmp_path, suffix):
    t = load(_write(tmp_path / f"human{suffix}", HUMAN), "mtbench-human")
    b = t.battles.set_index("battle_key")
    assert len(b) == 4 and len(t.votes) == 7 and t.judgments is None
    assert set(t.annotators["annotator"]) == {"author_0", "author_2", "author_4", "expert_1", "expert_3"}
    first = t.votes[t.votes["battle_key"] == 0]
    assert (b.loc[0, "model_a"], b.loc[0, "model_b"], b.loc[0, "turn"]) == ("alpaca-13b", "gpt-3.5-turbo", 1)
    # expert_1 named gpt-3.5-turbo model_a and chose it: in battle terms that is 'b'
    assert list(first.sort_values("annotator")["winner"]) == ["b", "tie", "b"]
    assert list(first.sort_values("annotator")["annotator"]) == ["author_2", "author_4", "expert_1"]
    last = t.votes[t.votes["battle_key"] == 3]
    assert (b.loc[3, "model_a"], b.loc[3, "model_b"]) == ("claude-v1", "alpaca-13b")
    assert list(last["winner"]) == ["b", "b"]  # the swapped row's model_a (alpaca-13b) is the battle's b


def test_turn_two_keeps_both_turns_and_turn_one_only_the_first(tmp_path):
    t = load(_write(tmp_path / "human.jsonl", HUMAN), "mtbench-human")
    b = t.battles.set_index("battle_key")
    p = t.prompts.set_index("prompt_key")
    one, two = b.loc[0, "prompt_key"], b.loc[1, "prompt_key"]
    assert b.loc[1, "turn"] == 2 and one != two
    assert p.loc[one, "text"] == QUESTIONS[81][0] and pd.isna(p.loc[one, "turns"])
    assert p.loc[two, "text"] == QUESTIONS[81][0] and json.loads(p.loc[two, "turns"]) == list(QUESTIONS[81])
    c = t.completions.set_index(["prompt_key", "model"])
    assert c.loc[(one, "alpaca-13b"), "text"] == "alpaca-13b on 81 (1)" and pd.isna(c.loc[(one, "alpaca-13b"), "turns"])
    both = ["gpt-3.5-turbo on 81 (1)", "gpt-3.5-turbo on 81 (2)"]
    assert json.loads(c.loc[(two, "gpt-3.5-turbo"), "turns"]) == both
    assert c.loc[(two, "gpt-3.5-turbo"), "text"] == "\n\n".join(both)
    # the swapped row's conversations go to the right models
    swapped = b.loc[3, "prompt_key"]
    assert c.loc[(swapped, "claude-v1"), "text"].startswith("claude-v1 on 82")
    assert len(t.prompts) == 3 and not t.completions.duplicated(["prompt_key", "model"]).any()


def test_gpt4_pair_rows_are_gpt4_judgments_in_battle_terms(tmp_path):
    t = load(_write(tmp_path / "gpt4_pair.parquet", HUMAN + GPT4), "mtbench-human")
    assert len(t.battles) == 4 and len(t.votes) == 7 and len(t.judgments) == 4
    j = t.judgments.set_index("battle_key")
    assert set(j["judge"]) == {"gpt-4"} and set(j["order"]) == {"avg"} and set(j["prompt_version"]) == {"gpt4_pair"}
    assert j.loc[0, "verdict"] == "b"
    assert j.loc[2, "verdict"] == "tie" and "inconsistent" in j.loc[2, "raw_output"]
    assert j.loc[3, "verdict"] == "b"  # alpaca-13b (the row's model_a) is the battle's model_b
    assert j.loc[1, "verdict"] == "b"  # gpt-3.5-turbo won turn 2, the battle's model_b
    assert "gpt4_pair" not in set(t.votes["annotator"])


@pytest.mark.integration
def test_auto_detects_it_and_the_cli_imports_it_once(tmp_path):
    path = _write(tmp_path / "human.parquet", HUMAN + GPT4)
    assert detect(path) == "mtbench-human"
    db = tmp_path / "s.duckdb"
    run = _cli(db, path)
    assert run.returncode == 0, run.stderr
    assert "4 battles, 7 votes" in run.stdout
    with Store.open(db, read_only=True) as s:
        info = next(d for d in s.info()["datasets"] if d["name"] == "human")
        frame = s.battle_frame("human", judge="gpt-4")
        votes = s.votes_frame("human")
        turns = s._cur().execute("SELECT count(*) FROM completions WHERE turns IS NOT NULL").fetchone()[0]
    assert info["n_battles"] == 4 and info["n_human_votes"] == 7 and len(votes) == 7 and turns == 4
    assert frame.set_index("battle_key").loc[2, "judge_hard"] == 0.5
    again = _cli(db, path)
    assert again.returncode == 0, again.stderr
    with Store.open(db) as s:
        assert import_path(s, path, "mtbench-human").status == "already-imported"
        assert len(s.datasets()) == 1 and len(s.votes_frame("human")) == 7


def test_an_lmarena_dump_with_the_same_fields_is_still_lmarena(tmp_path):
    rows = [{**r, "tstamp": 1687000000.0, "anony": True, "language": "English"} for r in HUMAN]
    assert detect(_write(tmp_path / "arena.jsonl", rows)) == "lmarena"


@pytest.mark.integration
@pytest.mark.parametrize(
    "bad, field",
    [
        ({"winner": None}, "winner"),  # missing value
        ({"winner": "model_c"}, "winner"),
        ({"winner": "tie (inconsistent)"}, "winner"),  # not a human's answer
        ({"turn": "two"}, "turn"),
        ({"turn": 1.5}, "turn"),
        ({"model_b": "gpt-3.5-turbo"}, "model_b"),  # gpt-3.5-turbo battles itself
        ({"judge": ""}, "judge"),
        ({"conversation_b": [{"content": "hi", "role": "user"}]}, "conversation_b"),  # no answer
    ],
)
def test_a_bad_row_names_file_row_and_field_and_writes_nothing(tmp_path, bad, field):
    path = _write(tmp_path / "human.jsonl", [HUMAN[0], HUMAN[1], {**HUMAN[2], **bad}])
    with pytest.raises(IngestError) as err:
        load(path, "mtbench-human")
    assert err.value.row == 3 and err.value.field == field and "human.jsonl" in str(err.value)
    db = tmp_path / "s.duckdb"
    run = _cli(db, path)
    assert run.returncode == 2 and f"row 3, field '{field}'" in run.stderr and not db.exists()


def test_a_missing_column_and_a_malformed_line_are_refused(tmp_path):
    path = _write(tmp_path / "human.jsonl", [{k: v for k, v in r.items() if k != "turn"} for r in HUMAN])
    with pytest.raises(IngestError) as err:
        load(path, "mtbench-human")
    assert err.value.field == "turn"
    path = _write(tmp_path / "broken.jsonl", HUMAN)
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:50]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(IngestError) as err:
        load(path, "mtbench-human")
    assert err.value.row == 4 and "invalid JSON" in str(err.value) and "broken.jsonl" in str(err.value)


def test_a_second_gpt4_verdict_on_a_battle_is_refused(tmp_path):
    path = _write(
        tmp_path / "gpt4.jsonl",
        [GPT4[0], GPT4[1], {**GPT4[0], "model_a": GPT4[0]["model_b"], "model_b": GPT4[0]["model_a"]}],
    )
    with pytest.raises(IngestError) as err:
        load(path, "mtbench-human")
    assert (err.value.row, err.value.field) == (3, "judge")


def test_fastchat_list_judges_are_model_judgments_with_their_prompt(tmp_path):
    rows = [HUMAN[0], {**GPT4[0], "judge": ["gpt-4", "pair-v2"]}, {**GPT4[3], "judge": ["gpt-4", "pair-v2-multi-turn"]}]
    t = load(_write(tmp_path / "fastchat.jsonl", rows), "mtbench-human")
    assert len(t.battles) == 2 and len(t.votes) == 1 and len(t.judgments) == 2
    assert set(t.judgments["judge"]) == {"gpt-4"}
    assert list(t.judgments["prompt_version"]) == ["pair-v2", "pair-v2-multi-turn"]
    assert list(t.judgments["verdict"]) == ["b", "a"]  # turn 2's battle is oriented by this gpt-3.5-turbo-first row


@pytest.mark.integration
def test_the_human_leaderboard_counts_battles_and_votes_apart(tmp_path):
    db = tmp_path / "s.duckdb"
    assert _cli(db, _write(tmp_path / "human.jsonl", HUMAN), "--dataset", "mt").returncode == 0
    done = run_cli("leaderboard", "--db", str(db), "--dataset", "mt", "--method", "human", "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # 7 votes on 4 battles (the first battle has three votes); was n_battles = 7
    assert (out["n_battles"], out["n_votes"]) == (4, 7)
    per = {r["model"]: (r["n_battles"], r["n_votes"]) for r in out["models"]}
    # alpaca-13b is in 3 battles with 6 votes; gpt-3.5-turbo in 2 battles with 4 votes
    assert per["alpaca-13b"] == (3, 6)
    assert per["gpt-3.5-turbo"] == (2, 4)
    assert per["claude-v1"] == (2, 3) and per["vicuna-13b-v1.2"] == (1, 1)
    text = run_cli("leaderboard", "--db", str(db), "--dataset", "mt", "--method", "human", cwd=ROOT)
    assert "(4 battles, 7 votes)" in text.stdout


@pytest.mark.integration
def test_judge_human_agreement_under_the_mt_bench_papers_two_setups(tmp_path):
    db = tmp_path / "s.duckdb"
    assert _cli(db, _write(tmp_path / "both.jsonl", HUMAN + GPT4), "--dataset", "mt").returncode == 0
    done = run_cli("agreement", "--db", str(db), "--dataset", "mt", "--judge", "gpt-4", "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # By hand, battle by battle (battle terms; GPT-4's label / the human votes):
    #   81 t1 alpaca–gpt-3.5: b / b, tie, b      81 t2: b (gpt-3.5 chosen as model_a of a swapped row) / a
    #   81 t1 claude–vicuna: tie / a             82 t2 claude–alpaca: b / b, b
    # with ties: 7 vote pairs, 4 match; without ties: 5 pairs (the human tie and GPT-4's tie out), 4 match;
    # unanimous battles with a decisive GPT-4 label: 81 t2 (a vs b) and 82 t2 (b, b): 1 of 2.
    assert (out["with_ties"]["n"], out["with_ties"]["agreement"]) == (7, pytest.approx(4 / 7))
    assert (out["without_ties"]["n"], out["without_ties"]["agreement"]) == (5, pytest.approx(0.8))
    assert (out["unanimous_battles"]["n"], out["unanimous_battles"]["agreement"]) == (2, pytest.approx(0.5))
    assert all(out[k]["definition"] for k in ("with_ties", "without_ties", "unanimous_battles"))


def _fastchat_procedure(rows):
    """The MT-Bench paper's agreement, computed here from its description: per turn, per (question, model pair)
    with the pair sorted by name, GPT-4's one vote against each expert's (authors left out); a vote containing
    'tie' is a tie; S1 counts all pairs, S2 drops pairs where either side tied."""

    def side(vote, swapped):
        if "tie" in vote:
            return "tie"
        flip = {"model_a": "model_b", "model_b": "model_a"}
        return flip[vote] if swapped else vote

    keyed = {}
    for r in rows:
        swapped = r["model_a"] > r["model_b"]
        key = (r["turn"], r["question_id"], *sorted((r["model_a"], r["model_b"])))
        who = "gpt4" if r["judge"] == "gpt4_pair" else ("expert" if r["judge"].startswith("expert") else "author")
        keyed.setdefault(key, {}).setdefault(who, []).append(side(r["winner"], swapped))
    out = {}
    for turn in (1, 2):
        s1 = s2 = n1 = n2 = 0
        for key, votes in keyed.items():
            if key[0] != turn or "gpt4" not in votes or "expert" not in votes:
                continue
            g = votes["gpt4"][0]
            for h in votes["expert"]:
                n1 += 1
                s1 += g == h
                if g != "tie" and h != "tie":
                    n2 += 1
                    s2 += g == h
        out[f"turn_{turn}_with_ties"] = (n1, s1 / n1 if n1 else None)
        out[f"turn_{turn}_without_ties"] = (n2, s2 / n2 if n2 else None)
    return out


@pytest.mark.integration
def test_agreement_setup_mt_bench_is_the_papers_procedure(tmp_path):
    """Experts only, per turn, an inconsistent GPT-4 tie as a tie: on random files in the published layout the
    command equals the procedure computed independently, and differs from the pooled default."""
    import random

    rng = random.Random(7)
    models = ["alpaca-13b", "claude-v1", "gpt-3.5-turbo", "vicuna-13b-v1.2"]
    rows = []
    for qid in (81, 82):
        for turn in (1, 2):
            for i in range(len(models)):
                for j in range(i + 1, len(models)):
                    a, b = (models[i], models[j]) if rng.random() < 0.5 else (models[j], models[i])
                    rows.append(_row(qid, a, b, rng.choice(JUDGE_CHOICES), "gpt4_pair", turn=turn))
                    for judge in rng.sample(["expert_1", "expert_2", "expert_5", "author_0", "author_3"], 3):
                        x, y = (a, b) if rng.random() < 0.7 else (b, a)  # a human row may name the pair swapped
                        rows.append(_row(qid, x, y, rng.choice(HUMAN_CHOICES), judge, turn=turn))
    db = tmp_path / "s.duckdb"
    assert _cli(db, _write(tmp_path / "both.jsonl", rows), "--dataset", "mt").returncode == 0

    def agreement(*extra):
        done = subprocess.run(
            [sys.executable, "-m", "core", "agreement", "--db", str(db), "--dataset", "mt", "--judge", "gpt-4"]
            + [*extra, "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    got = agreement("--setup", "mt-bench")
    want = _fastchat_procedure(rows)
    assert got["setup"] == "mt-bench"
    for key, (n, share) in want.items():
        assert got[key]["n"] == n, key
        assert got[key]["agreement"] == pytest.approx(share), key
    pooled = agreement()
    assert pooled["with_ties"]["n"] > got["turn_1_with_ties"]["n"] + got["turn_2_with_ties"]["n"]  # authors too


JUDGE_CHOICES = ["model_a", "model_b", "tie", "tie (inconsistent)"]
HUMAN_CHOICES = ["model_a", "model_b", "tie", "tie (bothbad)"]


@pytest.mark.integration
def test_info_counts_questions_not_per_turn_prompts(tmp_path):
    """Issue 45: `info` counted MT-Bench's per-turn prompts (160 for 80 two-turn questions) as prompts."""
    db = tmp_path / "s.duckdb"
    src = _write(tmp_path / "human.jsonl", HUMAN + GPT4)
    assert _cli(db, src).returncode == 0
    rows = HUMAN + GPT4
    questions = {r["question_id"] for r in rows}
    per_turn = {(r["question_id"], r["turn"]) for r in rows}  # one stored prompt per question and turn judged
    out = run_cli("info", "--db", str(db), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert len(per_turn) > len(questions)
    assert f"{len(questions)} questions ({len(per_turn)} prompts: one per turn)" in out.stdout
