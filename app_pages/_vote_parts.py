"""The Vote page's drawing: who votes, the battle with its buttons, and what became of the last press.

What these show and decide comes from ``core.app.voting`` (the sign-in's answer, the turns as written, the
toast); here are only the widgets, the session's state and the buttons' callbacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

import streamlit as st

from app_pages._access import access, forbidden
from app_pages._store import db_path
from core.app import voting
from core.app.access import ANNOTATOR

PROMPT_BOX_PX = 110
ANSWER_BOX_PX = 300


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
    found = voting.annotator_from_link(tokens, st.query_params.get("vote_token"), st.query_params.get("annotator"))
    if found is not None:
        st.session_state["annotator"] = found
    return found


def _sign_in(tokens: dict[str, str]) -> None:
    with st.form("sign_in"):
        if tokens:
            given = st.text_input(voting.sign_in_label(tokens), type="password")
        else:
            given = st.text_input(voting.sign_in_label(tokens), max_chars=voting.NAME_MAX_CHARS)
        if st.form_submit_button("Start voting"):
            answer = voting.sign_in(tokens, given)
            if answer.annotator is None:
                st.error(answer.error)
                return
            if answer.param is not None:
                name, value = answer.param
                st.query_params[name] = value
            st.session_state["annotator"] = answer.annotator
            st.rerun()


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
                st.write(voting.CLOSED_TEAM)
            _sign_in(tokens)
            st.stop()
    assert annotator is not None
    return annotator


def render(view: voting.BattleView, as_markdown: bool, beside: Callable[[], None]) -> None:
    """The battle's turns, with ``beside`` (the choice) next to the last turn's answers."""
    turns = voting.shown_turns(view, as_markdown)
    one = len(turns) == 1
    for turn in turns:
        if turn.heading is not None:
            st.markdown(turn.heading)
        # fixed heights, scrolling inside: the vote buttons below stay in the first screen whatever the lengths
        with st.container(border=True, height=PROMPT_BOX_PX if one else "content"):
            st.markdown(turn.prompt)
        c1, c2, *c3 = st.columns([5, 5, 2] if turn.last else [5, 5])
        box: int | Literal["content"] = ANSWER_BOX_PX if one else "content"
        with c1.container(border=True, height=box):
            st.caption("Left")
            st.markdown(turn.left)
        with c2.container(border=True, height=box):
            st.caption("Right")
            st.markdown(turn.right)
        if turn.last:
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
        st.session_state["vote_error"] = voting.not_stored(exc)
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


def tell_earlier_press() -> None:
    """What became of the last press: a vote not stored, a press refused, or (once) the vote stored."""
    if "vote_error" in st.session_state:
        st.error(st.session_state.pop("vote_error"))
    if "vote_refused" in st.session_state:
        st.warning(st.session_state.pop("vote_refused"))
    last = st.session_state.get("last_vote")
    # Told once, in a toast that goes away: nothing of the previous battle (its models least of all) stays on
    # screen above the next one.
    toast = voting.untold_toast(last, st.session_state.get("vote_told"))
    if toast is not None:
        st.toast(toast, icon=":material/how_to_vote:")
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
