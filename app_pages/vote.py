"""Vote: blind side-by-side battles from a queue; each vote is stored at once, in battle terms.

queue radio → core.app.voting.queue (SCOPE escalations, calibration value, random audit) → Store.votable_battles;
a battle → core.app.voting.battle_view → Store.battle_texts; a button → core.app.voting.cast → Store.cast_vote.
The annotator's name (or token, for a closed team) sits in the URL, so the link they were given remembers them;
with sign-in configured (``[auth]``), the annotator is the signed-in person's email and needs the annotator role.
Prompts, answers and model names come from imported files: shown as text (``core.app.safe_text``), answers as
Markdown only at the annotator's request and never with images or HTML.  What the page says and which battle
it shows come from ``core.app.voting`` (``vote_screen``, ``sign_in``, ``shown_turns``); app_pages/_vote_parts.py
draws the sign-in, the battle and its buttons.
"""

from functools import partial

import streamlit as st

from app_pages._selection import selection
from app_pages._store import read_store, store_available
from app_pages._vote_parts import change_previous, render, tell_earlier_press, vote_buttons, who_votes
from app_pages._widgets import notice, page_guard
from core.app import Unavailable, voting

QUEUE_TTL_S = 60.0

st.title("Vote")
st.caption(
    "Which answer is better? The models stay hidden until your vote is stored. Your votes calibrate the judge: "
    "Soft-Elo's τ, the conformal intervals and SCOPE's threshold all learn from them."
)


# A queue is not re-planned at every vote (each vote changes the data stamp): it is kept for a minute, and
# the session leaves out what it voted on or skipped meanwhile.  A stale entry costs at most a battle shown
# again, whose second vote replaces the first.  So these two are the pages' one exception to the declared
# results (core.app.results): their key leaves the data stamp out on purpose, and their TTL bounds the
# staleness instead (tests/test_results_registry.py allow-lists exactly them, for this reason).
@st.cache_data(show_spinner=False, max_entries=256, ttl=QUEUE_TTL_S)
def load_queue(dataset: str, kind: str, annotator: str, judge: str | None, alpha: float) -> voting.Queue | Unavailable:
    return read_store(voting.queue, dataset, kind, annotator, judge, alpha)


# keyed on this session's vote count: a vote cast here shows at once, anyone else's within the TTL
@st.cache_data(show_spinner=False, max_entries=256, ttl=QUEUE_TTL_S)
def load_stats(dataset: str, annotator: str, judge: str | None, votes_here: int) -> voting.AnnotatorStats:
    return read_store(voting.annotator_stats, dataset, annotator, judge)


def chosen_queue(dataset: str, annotator: str, judge: str | None, alpha: float) -> voting.Queue:
    """The queue the annotator picked among those this dataset can fill, and its battles."""
    # Offer only the queues this dataset can fill, and say in one line why the others are left out: opening on
    # a queue that cannot work (SCOPE without a judge's probabilities) would greet an annotator with a refusal.
    probe = voting.offer_key(dataset, judge, alpha)
    if probe not in st.session_state:
        found = {kind: load_queue(dataset, kind, annotator, judge, alpha) for kind in voting.QUEUES}
        st.session_state[probe] = voting.queue_reasons(found)
    offer = voting.QueueOffer.of(st.session_state[probe])
    kinds = offer.kinds
    if not kinds:
        notice(offer.none_text())
        st.stop()
    kind = st.radio(
        "queue",
        kinds,
        index=offer.index(st.query_params.get("queue")),
        format_func=voting.QUEUE_TITLES.get,
        horizontal=True,
        key="vote_queue",
    )
    left_out = offer.left_out_caption()
    if left_out:
        st.caption(left_out)
    st.query_params["queue"] = kind
    q = load_queue(dataset, kind, annotator, judge, alpha)
    if isinstance(q, Unavailable):  # it worked earlier in this session; the data changed since
        notice(q.reason)
        st.stop()
    return q


with page_guard("The Vote page"):
    if not store_available():
        st.stop()
    sel = selection()
    if sel.dataset is None:
        notice("no dataset yet: import one with battles and answers to vote on.")
        st.stop()
    annotator = who_votes()
    dataset = sel.dataset
    q = chosen_queue(dataset, annotator, sel.judge, sel.scope_alpha)
    done = st.session_state.setdefault("voted", set())
    skipped = st.session_state.setdefault("skipped", set())
    stats = load_stats(dataset, annotator, sel.judge, len(done))
    screen = voting.vote_screen(annotator, stats, q, st.session_state.get("current_battle"), done, skipped)
    st.caption(screen.caption)
    tell_earlier_press()
    last = st.session_state.get("last_vote")
    if screen.battle is None:
        notice(voting.NO_BATTLE_LEFT)
        st.stop()
    # The battle on screen stays until it is voted on or skipped (a queue re-planned meanwhile does not swap it).
    st.session_state["current_battle"] = current = screen.battle
    shown_battle = read_store(voting.battle_view, dataset, current[1], annotator)
    if isinstance(shown_battle, Unavailable):
        skipped.add(current[1])
        notice(shown_battle.reason)
        st.stop()
    view = shown_battle
    head, toggle = st.columns([3, 2], vertical_alignment="center")
    head.markdown(f"#### Battle {view.battle_id}")
    as_markdown = toggle.toggle(
        "Render answers as Markdown",
        key="answers_as_markdown",
        help="Formatting only: images are never loaded and HTML shows as text. Prompts always show as text.",
    )
    render(view, as_markdown, partial(vote_buttons, dataset, annotator, view))
    st.caption(screen.rule_caption)
    if last is not None:  # below the battle on screen, and naming no model of the earlier one
        change_previous(dataset, annotator, last)
