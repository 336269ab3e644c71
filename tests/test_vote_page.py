"""The Vote page through AppTest: sign in, vote, skip, change a vote, switch queues, a closed team's tokens."""

from __future__ import annotations

import re
from functools import partial

import pytest
from streamlit.testing.v1 import AppTest

from core.app import voting
from core.app.safe_text import escape_markdown
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT

# multi-process or Streamlit AppTest throughout: the integration tier (pytest.ini)
pytestmark = pytest.mark.integration

APP = str(ROOT / "app.py")
PAGE = "app_pages/vote.py"


@pytest.fixture()
def demo(tmp_path):
    db = tmp_path / "v.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return str(db)


def _page(db: str, monkeypatch, params: dict | None = None) -> AppTest:
    monkeypatch.setenv("ARENA_DB", db)
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, at.exception
    return at


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _battle(at: AppTest) -> int:
    for md in at.markdown:
        m = re.match(r"#### Battle (\d+)", md.value)
        if m:
            return int(m.group(1))
    raise AssertionError("no battle shown")


def _votes(db: str, annotator: str):
    with Store.open(db, read_only=True) as s:
        return s.annotator_votes("demo", annotator).set_index("battle_id")


def test_sign_in_vote_skip_and_change(demo, monkeypatch):
    monkeypatch.delenv("ARENA_VOTE_TOKENS", raising=False)
    at = _page(demo, monkeypatch)
    assert any("your name" in t.label for t in at.text_input)
    at.text_input[0].input("alice")
    _button(at, "Start voting").click().run()
    assert at.query_params["annotator"] == ["alice"] or at.query_params["annotator"] == "alice"

    first = _battle(at)
    page_text = " ".join(m.value for m in at.markdown)
    with Store.open(demo, read_only=True) as s:
        row = s.battle_texts("demo", first)
    assert row["model_a"] not in page_text and row["model_b"] not in page_text  # blind until the vote

    _button(at, "Left is better").click().run()
    assert not at.exception, at.exception
    stored = _votes(demo, "alice")
    shown = voting.shown_order("alice", first)
    assert list(stored.index) == [first]
    assert stored.loc[first, "shown_order"] == shown
    assert stored.loc[first, "winner"] == ("a" if shown == "ab" else "b")
    told = " ".join(t.value for t in at.toast)
    # revealed after, in a toast that goes away (as text: a model's name is escaped for Markdown)
    assert (
        f"battle {first}" in told
        and escape_markdown(row["model_a"]) in told
        and escape_markdown(row["model_b"]) in told
    )

    second = _battle(at)
    assert second != first
    _button(at, "Skip").click().run()
    third = _battle(at)
    assert third not in (first, second)
    assert list(_votes(demo, "alice").index) == [first]  # a skip is not a vote

    # change the last vote: replaced, never duplicated
    _button(at, "right").click().run()
    stored = _votes(demo, "alice")
    assert list(stored.index) == [first]
    assert stored.loc[first, "winner"] == ("b" if shown == "ab" else "a")
    assert "Changed" in " ".join(t.value for t in at.toast)


def test_queue_switch_and_remembered_annotator(demo, monkeypatch):
    monkeypatch.delenv("ARENA_VOTE_TOKENS", raising=False)
    at = _page(demo, monkeypatch, {"annotator": "bob", "queue": "random", "dataset": "demo", "judge": "judge-strong"})
    assert at.radio[0].value == "random"
    with Store.open(demo, read_only=True) as s:
        expected = voting.queue(s, "demo", "random", "bob")
    assert _battle(at) == expected.battle_ids[0]
    at.radio[0].set_value("calibration").run()
    with Store.open(demo, read_only=True) as s:
        expected = voting.queue(s, "demo", "calibration", "bob")
    assert _battle(at) == expected.battle_ids[0]
    assert "fewest human votes" in " ".join(c.value for c in at.caption)
    at.radio[0].set_value("scope").run()
    assert not at.exception
    with Store.open(demo, read_only=True) as s:
        expected = voting.queue(s, "demo", "scope", "bob", "judge-strong", 0.1)
    assert isinstance(expected, voting.Queue) and len(expected) > 0
    assert _battle(at) == expected.battle_ids[0]  # the judge's most uncertain abstention first


def test_a_closed_team_votes_with_tokens(demo, monkeypatch):
    monkeypatch.setenv("ARENA_VOTE_TOKENS", "dana:tok-dana-4242,eli:tok-eli-9999")
    at = _page(demo, monkeypatch, {"annotator": "mallory"})  # a name alone is not enough
    assert any("token" in t.label for t in at.text_input)
    assert not any(re.match(r"#### Battle", m.value) for m in at.markdown)
    at.text_input[0].input("wrong-token")
    _button(at, "Start voting").click().run()
    assert "not on this team's list" in " ".join(e.value for e in at.error)
    at.text_input[0].input("tok-dana-4242")
    _button(at, "Start voting").click().run()
    battle = _battle(at)
    _button(at, "Tie").click().run()
    assert _votes(demo, "dana").loc[battle, "winner"] == "tie"
    assert _votes(demo, "mallory").empty
    assert "tok-dana-4242" not in " ".join(m.value for m in at.markdown)


def test_the_leaderboard_keeps_its_intervals_while_new_votes_are_taken_in_behind(demo, monkeypatch):
    """A voting round moves the data with every vote: the Leaderboard shows the intervals calibrated before
    the newest votes at once, says so, and shows the recalibrated ones once the background has them."""
    from app_pages import _store
    from core.app import persist

    with Store.open(demo, read_only=True) as s:
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
        battles = s.battle_frame("demo")["battle_id"].head(40).tolist()
    at = _page(demo, monkeypatch, {"dataset": "demo", "judge": judge})
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, at.exception

    def captions() -> str:
        return " ".join(c.value for c in at.caption)

    def votes_counted() -> int:
        return int(re.search(r"Human Elo from ([\d,]+) human votes", captions()).group(1).replace(",", ""))

    before = votes_counted()
    statement = " ".join(s.value for s in at.success)
    assert "calibrated without" not in captions() and "cover" in statement  # intervals drawn, current
    for b in battles[:3]:
        voting.cast(demo, "demo", b, "quinn", "left", "ab")
    monkeypatch.setattr(_store, "STAMP_REFRESH_S", 0.0)  # the next run re-reads the data stamp, not in 2 s
    # the background computation held back until the page has been seen (on the small demo it takes a second)
    requested: list[tuple] = []
    monkeypatch.setattr(persist.REFRESH, "request", lambda *args: requested.append(args))
    release = partial(persist.BackgroundRefresh.request, persist.REFRESH)
    at.run()
    assert not at.exception, at.exception
    assert votes_counted() == before + 3  # the human Elo takes the votes in at once
    assert "calibrated without the 3 newest human votes" in captions()
    assert " ".join(s.value for s in at.success) == statement  # the earlier intervals, still drawn
    assert requested, "the current table was asked for in the background"
    monkeypatch.setattr(persist.REFRESH, "request", release)
    for args in requested:
        release(*args)
    assert persist.REFRESH.wait_idle(180)
    at.run()
    assert not at.exception, at.exception
    assert "calibrated without" not in captions() and votes_counted() == before + 3


def test_the_page_opens_on_a_queue_that_works_and_says_why_others_are_left_out(tmp_path, monkeypatch):
    """Issue 45: on a dataset without a judge the Vote page opened on the SCOPE queue, which needs one, and
    greeted the annotator with a refusal."""
    import dataclasses

    monkeypatch.delenv("ARENA_VOTE_TOKENS", raising=False)
    db = tmp_path / "votes_only.duckdb"
    tables = simulate_arena(0, DemoConfig.small())
    with Store.open(db) as s:  # answers and human votes, no judge
        s.write_dataset(dataclasses.replace(tables, name="pr", judges=None, judgments=None))
    at = _page(str(db), monkeypatch, {"annotator": "bob", "dataset": "pr"})
    assert "scope" not in at.radio[0].options and at.radio[0].value == "calibration"
    assert "needs a judge" in " ".join(c.value for c in at.caption)
    with Store.open(db, read_only=True) as s:
        expected = voting.queue(s, "pr", "calibration", "bob")
    assert _battle(at) == expected.battle_ids[0]
