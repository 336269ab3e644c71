"""Vote: blind side-by-side battles from a queue; each vote is stored at once, in battle terms.

queue radio → core.app.voting.queue (SCOPE escalations, calibration value, random audit) → Store.votable_battles;
a battle → core.app.voting.battle_view → Store.battle_texts; a button → core.app.voting.cast → Store.cast_vote.
The annotator's name (or token, for a closed team) sits in the URL, so the link they were given remembers them;
with sign-in configured (``[auth]``), the annotator is the signed-in person's email and needs the annotator role.
Prompts, answers and model names come from imported files: shown as text (``core.app.safe_text``), answers as
Markdown only at the annotator's request and never with images or HTML.
"""

import os
from collections.abc import Callable
from functools import partial
from typing import Literal

import streamlit as st

from app_pages._access import access, forbidden
from app_pages._selection import selection
from app_pages._store import db_path, read_store, store_available
from app_pages._widgets import notice, page_guard
from core.app import Unavailable, voting
from core.app.access import ANNOTATOR
from core.app.safe_text import escape_markdown as esc
from core.app.safe_text import neutralise_markdown
from core.redact import redact, secrets

QUEUE_TTL_S = 60.0

st.title("Vote")
st.caption(
    "Which answer is better? The models stay hidden until your vote is stored. Your votes calibrate the judge: "
    "Soft-Elo's τ, the conformal intervals and SCOPE's threshold all learn from them."
)


def _tokens() -> dict[str, str]:
    try:
        from_secrets = dict(st.secrets.get("vote_tokens", {}))
    except Exception:  # no secrets file
        from_secrets = {}
    return voting.vote_tokens(dict(os.environ), from_secrets)


def _annotator(tokens: dict[str, str]) -> str | None:
    """The annotator of this session: from the session, else the URL (``annotator=`` or ``vote_token=``)."""
    if "annotator" in st.session_state:
        return st.session_state["annotator"]
    if tokens:
        found = voting.annotator_for_token(tokens, st.query_params.get("vote_token"))
        if found is not None:
            st.session_state["annotator"] = found
        return found
    name = (st.query_params.get("annotator") or "").strip()
    if name:
        st.session_state["annotator"] = name[:200]
        return name[:200]
    return None


def _sign_in(tokens: dict[str, str]) -> None:
    with st.form("sign_in"):
        if tokens:
            given = st.text_input("your voting token", type="password")
        else:
            given = st.text_input("your name (stored with your votes)", max_chars=200)
        if st.form_submit_button("Start voting"):
            given = (given or "").strip()
            if tokens:
                found = voting.annotator_for_token(tokens, given)
                if found is None:
                    st.error("That token is not on this team's list.")
                    return
                st.query_params["vote_token"] = given
                name = found
            elif not given:
                st.error("Enter a name.")
                return
            else:
                name = given
                st.query_params["annotator"] = name
            st.session_state["annotator"] = name
            st.rerun()


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


PROMPT_BOX_PX = 110
ANSWER_BOX_PX = 300


def _answer(text: str | None, as_markdown: bool) -> None:
    if text is None:
        st.markdown("*(no answer)*")
    else:
        st.markdown(neutralise_markdown(text) if as_markdown else esc(text))


def _render(view: voting.BattleView, as_markdown: bool, beside: Callable[[], None]) -> None:
    """The battle's turns: prompts always as text; answers as text, or as Markdown without images or HTML."""
    # A generated answer may repeat a key: redacted here, before any escaping changes how the key is written
    # (the store redacts what it writes; rows stored before that, or imported, pass here too).
    values = secrets()
    turns = [(redact(asked, values), redact(left, values), redact(right, values)) for asked, left, right in view.turns]
    for k, (asked, left, right) in enumerate(turns):
        if len(turns) > 1:
            st.markdown(f"**Turn {k + 1}**")
        # fixed heights, scrolling inside: the vote buttons below stay in the first screen whatever the lengths
        with st.container(border=True, height=PROMPT_BOX_PX if len(turns) == 1 else "content"):
            st.markdown(esc(asked) if asked else "*(no prompt text)*")
        last_turn = k == len(turns) - 1
        c1, c2, *c3 = st.columns([5, 5, 2] if last_turn else [5, 5])
        box: int | Literal["content"] = ANSWER_BOX_PX if len(turns) == 1 else "content"
        with c1.container(border=True, height=box):
            st.caption("Left")
            _answer(left, as_markdown)
        with c2.container(border=True, height=box):
            st.caption("Right")
            _answer(right, as_markdown)
        if last_turn:
            with c3[0]:  # the choice, beside the answers: in the first screen whatever their lengths
                beside()


def _cast(dataset: str, annotator: str, view: voting.BattleView, choice: str, change: bool = False) -> None:
    """A button's callback, bound to the battle its page showed: the vote goes to the battle the annotator saw,
    whatever the queue holds by the time the rerun starts (other annotators' votes reorder it).  A vote
    button's press for any battle but the one on screen is dropped (``voting.stale_press``); a change-vote
    button (``change``) replaces the last vote."""
    if not change:
        current = st.session_state.get("current_battle")
        refused = voting.stale_press(
            view.battle_id, None if current is None else current[1], st.session_state.get("voted", set())
        )
        if refused is not None:
            st.session_state["vote_refused"] = refused
            return
    try:
        replaced = voting.cast(db_path(), dataset, view.battle_id, annotator, choice, view.shown)
    except Exception as exc:  # the vote was not stored: say so, keep the battle on screen
        st.session_state["vote_error"] = redact(f"Your vote was not stored ({exc}). Please vote again.")
        return
    st.session_state.setdefault("voted", set()).add(view.battle_id)
    st.session_state["last_vote"] = (view.battle_id, view.shown, view.model_left, view.model_right, choice, replaced)


def _skip(battle_id: int) -> None:
    """The skip button's callback; like a vote, a skip only counts for the battle on screen."""
    current = st.session_state.get("current_battle")
    refused = voting.stale_skip(battle_id, None if current is None else current[1])
    if refused is not None:
        st.session_state["vote_refused"] = refused
        return
    st.session_state.setdefault("skipped", set()).add(battle_id)


def who_votes() -> str:
    """The annotator: the signed-in person (with the annotator role) under sign-in, else from the session, the
    URL or the sign-in form (the page stops until there is one)."""
    gate = access()
    annotator: str | None
    if gate.sign_in:  # an identity provider: the signed-in person votes under their email, if their role allows
        if not gate.can(ANNOTATOR) or gate.identity is None:
            forbidden("Voting", ANNOTATOR)
        assert gate.identity is not None
        annotator = gate.identity.name
    else:
        try:
            tokens = _tokens()
        except ValueError as exc:
            st.error(str(exc))
            st.stop()
        annotator = _annotator(tokens)
        if annotator is None:
            if tokens:
                st.write("Voting on this server is for a closed team: enter the token you were given.")
            _sign_in(tokens)
            st.stop()
    assert annotator is not None
    return annotator


def chosen_queue(dataset: str, annotator: str, judge: str | None, alpha: float) -> tuple[str, voting.Queue]:
    """The queue the annotator picked among those this dataset can fill, and its battles."""
    # Offer only the queues this dataset can fill, and say in one line why the others are left out: opening on
    # a queue that cannot work (SCOPE without a judge's probabilities) would greet an annotator with a refusal.
    # Which queues can work is learnt once per session and selection (every vote reruns the page; only the
    # chosen queue is read again).
    probe = f"vote_queue_reasons:{dataset}:{judge}:{alpha}"
    if probe not in st.session_state:
        found = {kind: load_queue(dataset, kind, annotator, judge, alpha) for kind in voting.QUEUES}
        st.session_state[probe] = {k: got.reason if isinstance(got, Unavailable) else None for k, got in found.items()}
    offer = voting.QueueOffer.of(st.session_state[probe])
    kinds = offer.kinds
    if not kinds:
        notice(offer.none_text())
        st.stop()
    asked_kind = st.query_params.get("queue")
    kind = st.radio(
        "queue",
        kinds,
        index=kinds.index(asked_kind) if asked_kind in kinds else 0,
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
    return kind, q


def tell_earlier_press() -> None:
    """What became of the last press: a vote not stored, a press refused, or (once) the vote stored."""
    if "vote_error" in st.session_state:
        st.error(st.session_state.pop("vote_error"))
    if "vote_refused" in st.session_state:
        st.warning(st.session_state.pop("vote_refused"))
    last = st.session_state.get("last_vote")
    if last is not None and st.session_state.get("vote_told") != last:
        # Told once, in a toast that goes away: nothing of the previous battle (its models least of all) stays
        # on screen above the next one.
        battle_id, shown, left, right, choice, replaced = last
        st.toast(voting.stored_toast(battle_id, left, right, choice, replaced), icon=":material/how_to_vote:")
        st.session_state["vote_told"] = last


def vote_buttons(dataset: str, annotator: str, view: voting.BattleView) -> None:
    """The four choices and skip, beside the answers, each bound to the battle on screen."""
    # Keys carry the battle, so a press of the previous battle's button (still on screen while this page
    # arrives) names that battle and _cast drops it, instead of storing it as either battle's vote.
    for (choice, label), shortcut in zip(voting.VOTE_LABELS.items(), "1234"):
        st.button(
            label,
            key=f"vote_{choice}_{view.battle_id}",
            shortcut=shortcut,
            type="primary" if choice in ("left", "right") else "secondary",
            width="stretch",
            on_click=_cast,
            args=(dataset, annotator, view, choice),
        )
    st.button(
        "Skip",
        key=f"skip_{view.battle_id}",
        shortcut="s",
        width="stretch",
        on_click=_skip,
        args=(view.battle_id,),
    )
    st.caption(voting.VOTE_KEYS_CAPTION)


def change_previous(dataset: str, annotator: str, last: tuple) -> None:
    """Buttons that replace the vote on the previous battle (below the battle on screen, naming no model)."""
    battle_id, shown, left, right, _, _ = last
    with st.expander(f"Change your vote on the previous battle ({battle_id})"):
        cols = st.columns(4)
        earlier = voting.BattleView(battle_id, shown, [], left, right)
        for col, option in zip(cols, voting.CHOICES):
            col.button(
                option.replace("_", " "),
                key=f"change_{option}_{battle_id}",
                on_click=_cast,
                args=(dataset, annotator, earlier, option, True),
            )


with page_guard("The Vote page"):
    if not store_available():
        st.stop()
    sel = selection()
    if sel.dataset is None:
        notice("no dataset yet: import one with battles and answers to vote on.")
        st.stop()
    annotator = who_votes()
    dataset = sel.dataset
    kind, q = chosen_queue(dataset, annotator, sel.judge, sel.scope_alpha)
    done = st.session_state.setdefault("voted", set())
    skipped = st.session_state.setdefault("skipped", set())
    remaining = [b for b in q.battle_ids if b not in done and b not in skipped]
    stats = load_stats(dataset, annotator, sel.judge, len(done))
    st.caption(
        f"Voting as **{esc(annotator)}**: {stats.text()}. This queue has {len(remaining):,} battles left for you."
    )
    tell_earlier_press()
    last = st.session_state.get("last_vote")
    if not remaining:
        notice("this queue has no battle left for you: choose another queue, or thank you!")
        st.stop()
    # The battle on screen stays until it is voted on or skipped (a queue re-planned meanwhile does not swap it).
    current = voting.on_screen(st.session_state.get("current_battle"), kind, remaining, done, skipped)
    st.session_state["current_battle"] = current
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
    _render(view, as_markdown, partial(vote_buttons, dataset, annotator, view))
    st.caption(f"Why these battles: {q.rule}.")
    if last is not None:  # below the battle on screen, and naming no model of the earlier one
        change_previous(dataset, annotator, last)
