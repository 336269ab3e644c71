"""Votes cast in the app: one per annotator and battle, the shown order kept, the queues' rules, agreement."""

from __future__ import annotations

import pandas as pd
import pytest

from core.app import Unavailable, voting
from core.simulate import DemoConfig, simulate_arena
from core.store import Store, StoreError


@pytest.fixture()
def demo(tmp_path):
    db = tmp_path / "v.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return db


def _votes(db, annotator: str) -> pd.DataFrame:
    with Store.open(db, read_only=True) as s:
        return s.annotator_votes("demo", annotator)


def test_the_shown_order_is_per_annotator_and_stable():
    orders = {voting.shown_order("alice", b) for b in range(200)}
    assert orders == {"ab", "ba"}
    assert [voting.shown_order("alice", b) for b in range(50)] == [voting.shown_order("alice", b) for b in range(50)]
    differs = sum(voting.shown_order("alice", b) != voting.shown_order("bob", b) for b in range(400))
    assert 120 < differs < 280  # independent draws: about half differ


@pytest.mark.parametrize(
    ("choice", "shown", "winner"),
    [
        ("left", "ab", "a"),
        ("right", "ab", "b"),
        ("left", "ba", "b"),
        ("right", "ba", "a"),
        ("tie", "ba", "tie"),
        ("both_bad", "ab", "both_bad"),
    ],
)
def test_a_choice_is_stored_in_battle_terms(choice, shown, winner):
    assert voting.winner_of(choice, shown) == winner


def test_a_vote_button_counts_only_for_the_battle_on_screen_and_only_once():
    # the press the 10-annotator browser test caught: battle 12's buttons, still drawn while battle 40 arrived
    refused = voting.stale_press(12, on_screen=40, voted={12})
    assert refused is not None and "battle 12's buttons" in refused and "Vote on battle 40 again" in refused
    assert voting.stale_press(12, on_screen=40, voted=set()) is not None  # not voted yet, still not on screen
    assert voting.stale_press(40, on_screen=40, voted={12}) is None  # the battle on screen, first press
    assert voting.stale_press(40, on_screen=None, voted=set()) is None  # nothing recorded yet: the first page
    again = voting.stale_press(40, on_screen=40, voted={12, 40})  # a second press before the page moved on
    assert again is not None and "Change your vote on the previous battle" in again


def test_one_vote_per_annotator_and_battle_a_changed_mind_replaces_it(demo):
    with Store.open(demo, read_only=True) as s:
        before = len(s.votes_frame("demo"))
    assert voting.cast(demo, "demo", 7, "alice", "left", "ba") is False
    assert voting.cast(demo, "demo", 7, "alice", "right", "ba") is True
    assert voting.cast(demo, "demo", 7, "bob", "tie", "ab") is False
    mine = _votes(demo, "alice")
    assert len(mine) == 1 and mine.loc[0, "winner"] == "a" and mine.loc[0, "shown_order"] == "ba"
    assert mine.loc[0, "source"] == "vote-page" and pd.notna(mine.loc[0, "voted_at"])
    with Store.open(demo, read_only=True) as s:
        assert len(s.votes_frame("demo")) == before + 2
        annotators = s.annotators_frame("demo")
    assert {"alice", "bob"} <= set(annotators["annotator"])


def test_a_bad_vote_is_refused_and_changes_nothing(demo):
    with Store.open(demo, read_only=True) as s:
        before = len(s.votes_frame("demo"))
    with Store.open(demo) as s:
        with pytest.raises(StoreError, match="winner"):
            s.cast_vote("demo", 7, "alice", "left", "ab")
        with pytest.raises(StoreError, match="shown order"):
            s.cast_vote("demo", 7, "alice", "a", "left-first")
        with pytest.raises(StoreError, match="not in dataset"):
            s.cast_vote("demo", 10**9, "alice", "a", "ab")
        with pytest.raises(StoreError, match="annotator"):
            s.cast_vote("demo", 7, "  ", "a", "ab")
    with Store.open(demo, read_only=True) as s:
        assert len(s.votes_frame("demo")) == before


def test_a_vote_changes_the_data_version_even_when_it_replaces_one(demo):
    with Store.open(demo, read_only=True) as s:
        v0 = s.version_stamps()[0]
    voting.cast(demo, "demo", 3, "alice", "left", "ab")
    with Store.open(demo, read_only=True) as s:
        v1 = s.version_stamps()[0]
    voting.cast(demo, "demo", 3, "alice", "right", "ab")  # same count of votes
    with Store.open(demo, read_only=True) as s:
        v2 = s.version_stamps()[0]
    assert len({v0, v1, v2}) == 3


def test_the_calibration_queue_feeds_the_models_with_fewest_votes_against_the_best_rated():
    cand = pd.DataFrame(
        {
            "battle_id": [1, 2, 3, 4, 5, 6],
            "model_a": ["new", "new", "new", "rare", "rare", "x"],
            "model_b": ["top", "low", "mid", "top", "mid", "top"],
        }
    )
    votes = {"new": 0, "rare": 1, "top": 100, "mid": 50, "low": 10, "x": 80}
    order = voting.calibration_order(cand, votes, 10)
    assert order[0] == 1  # 'new' (0 votes) against 'top' (100)
    # then 'new' and 'rare' both have 1 vote; the tie goes by name ('new'), whose best opponent left is 'mid'
    assert order[1] == 3
    assert sorted(order) == [1, 2, 3, 4, 5, 6] and len(set(order)) == 6  # every battle once
    assert voting.calibration_order(cand, votes, 2) == order[:2]


def test_the_calibration_queue_spreads_votes_over_needy_models():
    rows = [(k, f"m{k % 5}", "anchor") for k in range(100)]
    cand = pd.DataFrame(rows, columns=["battle_id", "model_a", "model_b"])
    order = voting.calibration_order(cand, {"anchor": 500}, 20)
    picked = cand.set_index("battle_id").loc[order, "model_a"].value_counts()
    assert len(order) == 20 and set(picked) == {4}  # 4 each for the five models, not 20 for one


def test_queues_leave_out_what_the_annotator_voted_on(demo):
    with Store.open(demo, read_only=True) as s:
        first = voting.queue(s, "demo", "random", "alice")
        other = voting.queue(s, "demo", "random", "bob")
        cal = voting.queue(s, "demo", "calibration", "alice")
        assert isinstance(first, voting.Queue) and isinstance(other, voting.Queue)
        assert isinstance(cal, voting.Queue) and len(cal) == 500
        assert isinstance(voting.queue(s, "demo", "scope", "alice", judge=None), Unavailable)
    assert first.battle_ids != other.battle_ids  # seeded per annotator
    for b in first.battle_ids[:3]:
        voting.cast(demo, "demo", b, "alice", "tie", "ab")
    with Store.open(demo, read_only=True) as s:
        again = voting.queue(s, "demo", "random", "alice")
    assert isinstance(again, voting.Queue)
    assert again.battle_ids[:5] == first.battle_ids[3:8]
    with pytest.raises(ValueError, match="unknown queue"), Store.open(demo, read_only=True) as s:
        voting.queue(s, "demo", "loudest", "alice")


def test_agreement_with_the_other_humans_and_the_judge(demo):
    judge = "judge-strong"
    with Store.open(demo, read_only=True) as s:
        frame = s.battle_frame("demo", judge)
    decisive = frame[frame["human_y"].isin([0.0, 1.0])].head(6)
    # agree with the stored human vote on the first four, disagree on the last two
    for k, (bid, y) in enumerate(zip(decisive["battle_id"], decisive["human_y"])):
        agree = k < 4
        winner_is_a = (y == 1.0) == agree
        shown = voting.shown_order("carol", int(bid))
        choice = "left" if winner_is_a == (shown == "ab") else "right"
        voting.cast(demo, "demo", int(bid), "carol", choice, shown)
    with Store.open(demo, read_only=True) as s:
        stats = voting.annotator_stats(s, "demo", "carol", judge)
    assert stats.n_votes == 6 and stats.n_compared_humans == 6
    assert stats.agree_humans == pytest.approx(4 / 6)
    carol_says_a = [(y == 1.0) == (k < 4) for k, y in enumerate(decisive["human_y"])]
    judged = [(a, j == 1.0) for a, j in zip(carol_says_a, decisive["judge_hard"]) if j in (0.0, 1.0)]
    assert judged and stats.n_compared_judge == len(judged)
    assert stats.agree_judge == pytest.approx(sum(a == j for a, j in judged) / len(judged))
    assert "agreement with the other humans on 6 battles" in stats.text()


def test_vote_tokens_from_the_environment_and_secrets():
    tokens = voting.vote_tokens({"ARENA_VOTE_TOKENS": "alice:tok-alice-1, bob:tok-bob-22"}, {"carol": "tok-carol-333"})
    assert tokens == {"tok-alice-1": "alice", "tok-bob-22": "bob", "tok-carol-333": "carol"}
    assert voting.vote_tokens({}) == {}
    with pytest.raises(ValueError, match="name:token"):
        voting.vote_tokens({"ARENA_VOTE_TOKENS": "just-a-token"})
    assert voting.annotator_for_token(tokens, "tok-bob-22") == "bob"
    assert voting.annotator_for_token(tokens, "tok-bob-2") is None  # a prefix is not the token
    assert voting.annotator_for_token(tokens, "") is None
    assert voting.annotator_for_token({}, "tok-bob-22") is None


@pytest.mark.integration
def test_votes_round_trip_through_lmarena_layout_and_the_bundle(demo, tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    voting.cast(demo, "demo", 11, "alice", "left", "ba")  # battle terms: b
    voting.cast(demo, "demo", 12, "alice", "both_bad", "ab")
    out = tmp_path / "votes.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "export",
            "--db",
            str(demo),
            "--dataset",
            "demo",
            "--table",
            "votes",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    with Store.open(demo, read_only=True) as s:
        stored = s.votes_frame("demo")
        texts = s.battle_texts("demo", 11)
    assert len(rows) == len(stored)
    mine = {r["battle_id"]: r for r in rows if r["judge"] == "alice"}
    assert mine[11]["winner"] == "model_b" and mine[11]["shown_order"] == "ba" and mine[11]["source"] == "vote-page"
    assert mine[12]["winner"] == "tie (bothbad)"
    assert mine[11]["conversation_a"] == [
        {"role": "user", "content": texts["prompt"]},
        {"role": "assistant", "content": texts["text_a"]},
    ]
    fresh = tmp_path / "fresh.duckdb"
    back = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "import",
            "--db",
            str(fresh),
            "--format",
            "lmarena",
            "--dataset",
            "again",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert back.returncode == 0, back.stderr
    with Store.open(fresh, read_only=True) as s:
        again = s.votes_frame("again")
    key = ["model_a", "model_b", "annotator", "winner"]
    left = stored[key].sort_values(key).reset_index(drop=True)
    right = again[key].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right)

    from core.app.bundle import export_bundle

    with Store.open(demo, read_only=True) as s:
        export_bundle(s, "demo", tmp_path / "b.zip")
    other = tmp_path / "other.duckdb"
    with Store.open(other) as s:
        from core.app.data import import_path

        import_path(s, tmp_path / "b.zip", "bundle")
        kept = s.annotator_votes("demo", "alice").set_index("battle_id")
    assert kept.loc[11, "shown_order"] == "ba" and kept.loc[11, "winner"] == "b" and pd.notna(kept.loc[11, "voted_at"])


def test_votes_cast_at_once_from_many_sessions_of_one_server_are_all_stored(demo):
    """Sessions of one server process write at the same moment (each vote a brief open for writing): every vote
    is stored once.  (The browser test meets DuckDB's in-process conflicts this way; threads alone rarely do.)"""
    from concurrent.futures import ThreadPoolExecutor

    def annotator(k: int) -> int:
        for b in range(1, 11):
            voting.cast(demo, "demo", 100 * k + b, f"thread-{k}", "left", "ab")
        return k

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(annotator, range(8))) == list(range(8))
    with Store.open(demo, read_only=True) as s:
        votes = s.votes_frame("demo")
    mine = votes[votes["annotator"].str.startswith("thread-")]
    assert len(mine) == 80 and not mine.duplicated(["battle_id", "annotator"]).any()


def test_vote_totals_count_votes_and_distinct_annotators(demo):
    with Store.open(demo, read_only=True) as s:
        before = s.vote_totals("demo")
        listed = next(d for d in s.info()["datasets"] if d["name"] == "demo")
    assert before == (listed["n_human_votes"], listed["n_annotators"])
    voting.cast(demo, "demo", 11, "zed-new-annotator", "tie", "ab")
    voting.cast(demo, "demo", 12, "zed-new-annotator", "left", "ab")
    voting.cast(demo, "demo", 12, "zed-new-annotator", "right", "ab")  # a changed mind: still one vote
    with Store.open(demo, read_only=True) as s:
        assert s.vote_totals("demo") == (before[0] + 2, before[1] + 1)


# ------------------------------------------------------------- the Vote page's view
TEAM = {"tok-dana-4242": "dana", "tok-eli-9999": "eli"}


def test_a_link_names_the_annotator_by_token_for_a_closed_team_else_by_name():
    assert voting.annotator_from_link(TEAM, "tok-eli-9999", None) == "eli"
    assert voting.annotator_from_link(TEAM, None, "mallory") is None  # a name alone is not enough for a team
    assert voting.annotator_from_link(TEAM, "tok-nobody", "dana") is None
    assert voting.annotator_from_link({}, "tok-eli-9999", "  bob  ") == "bob"
    assert voting.annotator_from_link({}, None, "x" * 500) == "x" * voting.NAME_MAX_CHARS
    assert voting.annotator_from_link({}, None, "   ") is None and voting.annotator_from_link({}, None, None) is None


def test_the_sign_in_form_takes_a_team_token_or_a_name_and_says_what_is_wrong():
    assert voting.sign_in(TEAM, " tok-dana-4242 ") == voting.SignIn("dana", param=("vote_token", "tok-dana-4242"))
    refused = voting.sign_in(TEAM, "dana")  # the name, not the token
    assert refused.annotator is None and refused.error == "That token is not on this team's list."
    assert refused.param is None
    assert voting.sign_in({}, "  carol ") == voting.SignIn("carol", param=("annotator", "carol"))
    assert voting.sign_in({}, "  ") == voting.SignIn(None, "Enter a name.")
    assert voting.sign_in_label(TEAM) == "your voting token"
    assert voting.sign_in_label({}) == "your name (stored with your votes)"


def test_the_queue_radio_opens_on_the_linked_queue_when_it_is_offered():
    found: dict[str, voting.Queue | Unavailable] = {
        "scope": Unavailable("no judge"),
        "calibration": voting.Queue("calibration", [1], "r"),
        "random": voting.Queue("random", [], "r"),
    }
    reasons = voting.queue_reasons(found)
    assert reasons == {"scope": "no judge", "calibration": None, "random": None}
    offer = voting.QueueOffer.of(reasons)
    assert offer.index("random") == 1 and offer.index("scope") == 0 and offer.index(None) == 0
    assert voting.offer_key("demo", "J", 0.1) != voting.offer_key("demo", "J", 0.2)
    assert voting.offer_key("demo", "J", 0.1) != voting.offer_key("demo", None, 0.1)


def test_the_vote_screen_counts_what_is_left_and_keeps_the_battle_on_screen():
    stats = voting.AnnotatorStats(3, float("nan"), 0, float("nan"), 0)
    q = voting.Queue("random", [5, 6, 7, 8], "uniform over the battles")
    screen = voting.vote_screen("a_b", stats, q, None, done={5}, skipped={6})
    assert screen.battle == ("random", 7)
    assert screen.caption == (
        "Voting as **a\\_b**: 3 votes; no battle to compare with the other humans yet; no battle to compare with "
        "the judge yet. This queue has 2 battles left for you."
    )
    assert screen.rule_caption == "Why these battles: uniform over the battles."
    assert voting.vote_screen("a", stats, q, ("random", 8), {5}, {6}).battle == ("random", 8)  # stays on screen
    assert voting.vote_screen("a", stats, q, ("random", 8), {5, 8}, {6}).battle == ("random", 7)  # voted: next
    done = voting.vote_screen("a", stats, q, ("random", 8), {5, 8}, {6, 7})
    assert done.battle is None and "has 0 battles left" in done.caption


def test_the_stored_vote_is_told_once_and_a_failed_one_says_so_redacted(monkeypatch):
    last = (12, "ab", "m1", "m2", "right", False)
    assert voting.untold_toast(None, None) is None
    assert voting.untold_toast(last, last) is None  # told already
    told = voting.untold_toast(last, (11, "ab", "m1", "m2", "left", False))
    assert told == "Stored: battle 12, you chose right (m2). Left was **m1**, right **m2**."
    key = "sk-test-" + "v0te" * 10
    monkeypatch.setenv("OPENAI_API_KEY", key)
    said = voting.not_stored(RuntimeError(f"cannot open /data/{key}.duckdb"))
    assert key not in said and said.startswith("Your vote was not stored (") and said.endswith("Please vote again.")


def test_a_battle_is_written_as_text_or_markdown_without_its_keys(monkeypatch):
    key = "sk-test-" + "k3y" * 12
    monkeypatch.setenv("OPENAI_API_KEY", key)
    one = voting.BattleView(1, "ab", [("is $x$ *big*?", f"use {key}: $x$", None)], "m1", "m2")
    (turn,) = voting.shown_turns(one, as_markdown=False)
    assert turn.heading is None and turn.last
    assert turn.prompt == "is \\$x\\$ \\*big\\*?"  # the prompt always as text
    assert key not in turn.left and "\\$x\\$" in turn.left
    assert turn.right == "*(no answer)*"
    (as_md,) = voting.shown_turns(one, as_markdown=True)
    assert key not in as_md.left and as_md.prompt == turn.prompt
    two = voting.BattleView(2, "ba", [("", "a1", "b1"), ("next", "a2", "b2")], "m1", "m2")
    turns = voting.shown_turns(two, as_markdown=False)
    assert [t.heading for t in turns] == ["**Turn 1**", "**Turn 2**"] and [t.last for t in turns] == [False, True]
    assert turns[0].prompt == "*(no prompt text)*" and (turns[1].left, turns[1].right) == ("a2", "b2")
