"""Vote: blind side-by-side battles from a queue; each vote is stored at once, in battle terms.

queue radio → core.app.voting.queue (SCOPE escalations, calibration value, random audit) → Store.votable_battles;
a battle → core.app.voting.battle_view → Store.battle_texts; a button → core.app.voting.cast → Store.cast_vote.
The annotator's name (or token, for a closed team) sits in the URL, so the link they were given remembers them.
"""

import hmac
import os

import streamlit as st

from app_pages._shared import db_path, notice, page_guard, read_store, selection, store_available, version
from core.app import Unavailable, voting
from core.redact import redact

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
        given = st.query_params.get("vote_token")
        for token, name in tokens.items():
            if given and hmac.compare_digest(given.encode(), token.encode()):
                st.session_state["annotator"] = name
                return name
        return None
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
                name = next((n for t, n in tokens.items() if hmac.compare_digest(given.encode(), t.encode())), None)
                if name is None:
                    st.error("That token is not on this team's list.")
                    return
                st.query_params["vote_token"] = given
            elif not given:
                st.error("Enter a name.")
                return
            else:
                name = given
                st.query_params["annotator"] = name
            st.session_state["annotator"] = name
            st.rerun()


@st.cache_data(show_spinner=False, max_entries=64)
def load_queue(
    dataset: str, kind: str, annotator: str, judge: str | None, alpha: float, token: str
) -> voting.Queue | Unavailable:
    return read_store(voting.queue, dataset, kind, annotator, judge, alpha)


def _render(view: voting.BattleView) -> None:
    for k, (asked, left, right) in enumerate(view.turns):
        if len(view.turns) > 1:
            st.markdown(f"**Turn {k + 1}**")
        with st.container(border=True):
            st.markdown(asked or "*(no prompt text)*")
        c1, c2 = st.columns(2)
        with c1.container(border=True):
            st.caption("Left")
            st.markdown(left if left is not None else "*(no answer)*")
        with c2.container(border=True):
            st.caption("Right")
            st.markdown(right if right is not None else "*(no answer)*")


def _cast(dataset: str, annotator: str, view: voting.BattleView, choice: str) -> None:
    try:
        replaced = voting.cast(db_path(), dataset, view.battle_id, annotator, choice, view.shown)
    except Exception as exc:  # the vote was not stored: say so, keep the battle on screen
        st.session_state["vote_error"] = redact(f"Your vote was not stored ({exc}). Please vote again.")
        return
    st.session_state.setdefault("voted", set()).add(view.battle_id)
    st.session_state["last_vote"] = (view.battle_id, view.shown, view.model_left, view.model_right, choice, replaced)


with page_guard("The Vote page"):
    if not store_available():
        st.stop()
    sel = selection()
    if sel.dataset is None:
        notice("no dataset yet: import one with battles and answers to vote on.")
        st.stop()
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
    dataset = sel.dataset
    kinds = list(voting.QUEUES)
    asked_kind = st.query_params.get("queue")
    kind = st.radio(
        "queue",
        kinds,
        index=kinds.index(asked_kind) if asked_kind in kinds else 0,
        format_func=voting.QUEUE_TITLES.get,
        horizontal=True,
        key="vote_queue",
    )
    st.query_params["queue"] = kind
    token = version()
    q = load_queue(dataset, kind, annotator, sel.judge, sel.scope_alpha, token)
    if isinstance(q, Unavailable):
        notice(q.reason)
        st.stop()
    done = st.session_state.setdefault("voted", set())
    skipped = st.session_state.setdefault("skipped", set())
    remaining = [b for b in q.battle_ids if b not in done and b not in skipped]
    stats = read_store(voting.annotator_stats, dataset, annotator, sel.judge)
    st.caption(
        f"Voting as **{annotator}**: {stats.text()}. This queue has {len(remaining):,} battles left for you. "
        f"Rule: {q.rule}."
    )
    if "vote_error" in st.session_state:
        st.error(st.session_state.pop("vote_error"))
    last = st.session_state.get("last_vote")
    if last is not None:
        battle_id, shown, left, right, choice, replaced = last
        said = {"left": f"left ({left})", "right": f"right ({right})", "tie": "a tie", "both_bad": "both bad"}[choice]
        st.success(
            f"{'Changed' if replaced else 'Stored'}: battle {battle_id}, you chose {said}. Left was **{left}**, "
            f"right **{right}**."
        )
        with st.expander("Change this vote"):
            cols = st.columns(4)
            for col, option in zip(cols, voting.CHOICES):
                if col.button(option.replace("_", " "), key=f"change_{option}"):
                    _cast(dataset, annotator, voting.BattleView(battle_id, shown, [], left, right), option)
                    st.rerun()
    if not remaining:
        notice("this queue has no battle left for you: choose another queue, or thank you!")
        st.stop()
    shown_battle = read_store(voting.battle_view, dataset, remaining[0], annotator)
    if isinstance(shown_battle, Unavailable):
        skipped.add(remaining[0])
        notice(shown_battle.reason)
        st.stop()
    view = shown_battle
    st.markdown(f"#### Battle {view.battle_id}")
    _render(view)
    b1, b2, b3, b4, b5 = st.columns(5)
    pressed = None
    if b1.button("Left is better", shortcut="1", type="primary", width="stretch"):
        pressed = "left"
    if b2.button("Right is better", shortcut="2", type="primary", width="stretch"):
        pressed = "right"
    if b3.button("Tie", shortcut="3", width="stretch"):
        pressed = "tie"
    if b4.button("Both bad", shortcut="4", width="stretch"):
        pressed = "both_bad"
    if b5.button("Skip", shortcut="s", width="stretch"):
        skipped.add(view.battle_id)
        st.rerun()
    st.caption("Keys: 1 left, 2 right, 3 tie, 4 both bad, s skip.")
    if pressed is not None:
        _cast(dataset, annotator, view, pressed)
        st.rerun()
