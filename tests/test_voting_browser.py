"""Ten annotators vote at once in real Chromium sessions while another session browses the Leaderboard.

Each annotator opens the Vote page from the link a team lead hands out (``?annotator=…&queue=…``), one of
the three queues each, and casts 6 votes with the keyboard shortcuts and the buttons.  What must hold:
all 60 votes are stored, none lost or duplicated, each with the left/right order that annotator saw
and the choice mapped to battle terms through it; the Leaderboard, open in another session on the same
server, counts the new votes without a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path

import pytest

from core.app import voting
from tests.test_browser import CHROMIUM, _start_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """This module's own copy of the precomputed demo: its tests store votes and runs in it."""
    from tests import stores

    return stores.fresh_copy("demo", tmp_path_factory.mktemp("voting-demo"))


ANNOTATORS = 10
# 6 each keeps ten sessions voting at once for over a minute on two cores (12 each took 5 min of `make test`,
# 30 each 10 min); what must hold (none lost, none twice, each in the order its annotator saw) holds per vote
VOTES_EACH = 6
BUTTONS = {"left": "Left is better", "right": "Right is better", "tie": "Tie", "both_bad": "Both bad"}
KEYS = {"left": "1", "right": "2", "tie": "3", "both_bad": "4"}
# eleven browsers and the server share the machine (and, in `make test`, another worker's browser test):
# a page load or a key press may wait its turn for minutes
NAVIGATION_MS = 240_000
_IDLE_JS = "() => !document.querySelector(\"[data-testid='stStatusWidget']\")"
_SETTLED = "document.querySelector(\"[data-testid='stApp'][data-test-script-state='notRunning']\")"
# What the page says once the run a press started has finished: the vote stored, or the press refused as
# meant for this battle but landed on the previous battle's buttons, still on screen while this one arrived.
_ANSWERED_JS = f"""(b) => {{
    if (!{_SETTLED}) return '';
    const t = document.body.innerText;
    // stored: the page offers to change the vote on this battle (the toast that also says so fades away)
    if (t.includes('previous battle (' + b + ')') || t.includes('battle ' + b + ', you chose')) return 'stored';
    return t.includes('Vote on battle ' + b + ' again') ? 'refused' : '';
}}"""


async def _battle_on_screen(pg, not_this: int | None, impatient: bool, timeout_s: float = 180) -> int:
    """The battle the page shows (a different one than ``not_this``): once its heading is there and no run
    is shown as running, or for an ``impatient`` annotator as soon as the heading is there.  A press made
    before the rest of the page has arrived lands on the previous battle's buttons, which must not store it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        heading = pg.locator("h4", has_text=re.compile(r"^Battle \d+"))
        if await heading.count() and (impatient or await pg.evaluate(_IDLE_JS)):
            shown = int(re.search(r"\d+", await heading.first.inner_text()).group())
            if shown != not_this:
                return shown
        await asyncio.sleep(0.1)
    raise AssertionError(f"no new battle within {timeout_s} s")


async def _seen(pg) -> str:
    """What the annotator saw: the page's lines about votes and battles, and the buttons on it."""
    lines = (await pg.inner_text("[data-testid='stMain']")).splitlines()
    wanted = r"Stored|Changed|stored|Battle|previous battle|Voting as|queue|rror"
    text = " | ".join(ln for ln in lines if re.search(wanted, ln))
    buttons = await pg.get_by_role("button").all_inner_texts()
    failures = await pg.locator("[data-testid='stException']").all_inner_texts()
    return f"page: {text}; buttons: {buttons}; exceptions: {[f[:2000] for f in failures]}"


async def _annotator(
    browser,
    url: str,
    k: int,
    log: list[tuple[str, int, str]],
    seconds: list[float] | None = None,
    retries: list[tuple[str, int, str]] | None = None,
) -> None:
    name, queue = f"annotator-{k:02d}", voting.QUEUES[k % len(voting.QUEUES)]
    ctx = await browser.new_context(viewport={"width": 1300, "height": 1000})
    ctx.set_default_navigation_timeout(NAVIGATION_MS)
    ctx.set_default_timeout(NAVIGATION_MS)  # a press on a busy renderer (30 s by default was too short in CI)
    pg = await ctx.new_page()
    await pg.goto(f"{url}/vote?dataset=demo&judge=judge-strong&annotator={name}&queue={queue}")
    battle = None
    for i in range(VOTES_EACH):
        battle = await _battle_on_screen(pg, battle, impatient=k % 2 == 1)
        t0 = time.monotonic()
        choice = list(BUTTONS)[(i + k) % 4]
        confirmed = False
        for _attempt in range(6):  # a press that lands while the page re-renders can be lost: a person presses again
            if i % 2:  # half the votes by keyboard shortcut, half by click
                await pg.locator("body").press(KEYS[choice])
            else:
                # the button's name carries its shortcut ("Left is better 1")
                try:
                    await pg.get_by_role("button", name=re.compile(f"^{BUTTONS[choice]}")).click(timeout=120_000)
                except Exception as exc:
                    raise AssertionError(f"{name}, vote {i} on battle {battle}: no button; {await _seen(pg)}") from exc
            # the run this press starts (so that an earlier run's refusal is not read as this one's)
            with contextlib.suppress(Exception):
                await pg.wait_for_function(f"() => !{_SETTLED}", timeout=10_000, polling="raf")
            # the run the press started may take long on a busy machine: wait for the page to settle (a state),
            # then for its answer; pressing again before it settles would vote on the next battle
            with contextlib.suppress(Exception):
                await pg.wait_for_function(f"() => {_SETTLED}", timeout=NAVIGATION_MS, polling=250)
            try:
                answer = await (await pg.wait_for_function(_ANSWERED_JS, arg=battle, timeout=45_000)).json_value()
            except Exception:
                answer = "unanswered"
            if answer == "stored":
                confirmed = True
                break
            if retries is not None:
                retries.append((name, battle, answer))
        if not confirmed:
            raise AssertionError(f"{name}, vote {i} on battle {battle} ({choice}): no confirmation; {await _seen(pg)}")
        log.append((name, battle, choice))
        if seconds is not None:
            seconds.append(time.monotonic() - t0)
    await ctx.close()


async def _leaderboard_votes(pg, url: str, visits: list[float] | None = None) -> int:
    t0 = time.monotonic()
    await pg.goto(f"{url}/leaderboard?dataset=demo&judge=judge-strong")
    try:
        await pg.wait_for_function(
            "() => /Human Elo from [\\d,]+ human votes/.test(document.body.innerText)", timeout=240_000
        )
    except Exception as exc:  # say what the visitor saw instead
        seen = " | ".join((await pg.inner_text("[data-testid='stMain']")).splitlines()[:12])
        raise AssertionError(f"the Leaderboard showed no vote count within 240 s; page: {seen}") from exc
    if visits is not None:
        visits.append(time.monotonic() - t0)
    text = await pg.inner_text("body")
    return int(re.search(r"Human Elo from ([\d,]+) human votes", text).group(1).replace(",", ""))


async def _run(url: str) -> tuple[list[tuple[str, int, str]], int, int, list[float]]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
        )
        viewing = await browser.new_context(viewport={"width": 1300, "height": 1000})
        viewing.set_default_navigation_timeout(NAVIGATION_MS)
        viewing.set_default_timeout(NAVIGATION_MS)
        viewer = await viewing.new_page()
        before = await _leaderboard_votes(viewer, url)
        log: list[tuple[str, int, str]] = []
        seconds: list[float] = []
        retries: list[tuple[str, int, str]] = []
        voters = [asyncio.create_task(_annotator(browser, url, k, log, seconds, retries)) for k in range(ANNOTATORS)]
        browsing = True

        visits: list[float] = []

        async def browse() -> None:  # the Leaderboard kept busy while the votes come in
            while browsing:
                await _leaderboard_votes(viewer, url, visits)
                await asyncio.sleep(5)  # a person reading the table between visits

        watcher = asyncio.create_task(browse())
        try:
            await asyncio.gather(*voters)
        except BaseException:  # no task left to run into the browser closing under it
            for task in (*voters, watcher):
                task.cancel()
            await asyncio.gather(*voters, watcher, return_exceptions=True)
            raise
        browsing = False
        await watcher
        after = before
        deadline = time.monotonic() + 60  # the server re-reads the data version every 2 s
        while time.monotonic() < deadline and after < before + len(log):
            after = await _leaderboard_votes(viewer, url)
        await browser.close()
    print(f"{len(retries)} presses were refused or unanswered and repeated: {retries[:10]}")
    print(f"Leaderboard visits while voting: {len(visits)}, seconds {sorted(round(v, 1) for v in visits)}")
    return log, before, after, seconds


def test_ten_annotators_vote_while_the_leaderboard_counts_their_votes(demo_db):
    from core.store import Store

    proc, url = _start_app(demo_db)
    try:
        log, before, after, seconds = asyncio.run(_run(url))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    seconds.sort()
    print(f"vote to stored confirmation: median {seconds[len(seconds) // 2]:.2f} s, max {seconds[-1]:.2f} s")
    assert len(log) == ANNOTATORS * VOTES_EACH
    with Store.open(demo_db, read_only=True) as s:
        votes = s.votes_frame("demo")
        cast = {name: s.annotator_votes("demo", name).set_index("battle_id") for name in {a for a, _, _ in log}}
    stored = sum(len(v) for v in cast.values())
    assert stored == len(log) == len({(a, b) for a, b, _ in log})  # none lost, none duplicated
    for name, battle, choice in log:
        row = cast[name].loc[battle]
        shown = voting.shown_order(name, battle)
        assert row["shown_order"] == shown and row["source"] == "vote-page"
        assert row["winner"] == voting.winner_of(choice, shown)
    assert not votes.duplicated(["battle_id", "annotator"]).any()
    assert after == before + len(log)  # the Leaderboard counted them, same server, no restart
