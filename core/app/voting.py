"""Human votes cast in the app: blind battles, the queues that choose them, and what a vote changes.

A battle is shown blind: the two answers as "left" and "right", in an order drawn per annotator and
battle (stable across visits, so a reload shows the same layout), the model names hidden until the
vote is stored.  The vote is stored in battle terms with the order the annotator saw.

The queues (an annotator, or the admin, chooses one):

* ``scope``: the battles SCOPE would not accept at the current α (the judge's BPE entropy above the
  threshold calibrated on the human-labelled battles; every judged battle when no threshold is
  feasible), most uncertain first: the judge's abstentions, escalated to humans.
* ``calibration``: the battles of the models with the fewest human votes, against well-rated opponents
  in turn.  A model's split-conformal interval is its judge Elo ± q̂·√(SE² + σ̂²), and q̂ is a quantile of the
  calibration models' |judge Elo − human Elo| / √(SE² + σ̂²) (σ̂ the judge–human disagreement, METHODS §4):
  a model with few human votes has a noisy human Elo (a large score that inflates q̂ and σ̂ for everyone)
  or none at all (it is not in the calibration pool, which then may be too small for α).  The queue
  therefore gives each vote to the model with the fewest human votes so far (counting the votes the
  queue has already placed), on a battle against the opponent it has used least for that model, the
  one with the most votes first (the firmest references, in turn, so that no single reference's error
  is inherited).
* ``random``: uniform over the battles (seeded per annotator), for unbiased agreement and risk
  estimates.

The Vote page's view closes the module: who signs in (:func:`sign_in`, :func:`annotator_from_link`), the
screen around a battle (:func:`vote_screen`) and its turns as written (:func:`shown_turns`).
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.safe_text import escape_markdown as esc
from core.app.safe_text import neutralise_markdown
from core.redact import redact, secrets
from core.store import Store, waits

QUEUES = ("scope", "calibration", "random")
VOTE_TOKENS_ENV = "ARENA_VOTE_TOKENS"
QUEUE_TITLES = {
    "scope": "SCOPE escalations (the judge abstains)",
    "calibration": "Calibration value (models with the fewest human votes)",
    "random": "Random audit",
}
CHOICES = ("left", "right", "tie", "both_bad")


def shown_order(annotator: str, battle_id: int) -> str:
    """'ab' (the battle's a on the left) or 'ba': drawn per annotator and battle, the same on every visit."""
    digest = hashlib.sha256(f"{annotator}\x00{int(battle_id)}".encode()).digest()
    return "ab" if digest[0] % 2 == 0 else "ba"


def winner_of(choice: str, shown: str) -> str:
    """The vote in battle terms: 'left'/'right' are the sides as shown."""
    if choice not in CHOICES:
        raise ValueError(f"a choice is one of {', '.join(CHOICES)}, not {choice!r}")
    if choice in ("tie", "both_bad"):
        return choice
    left_is_a = shown == "ab"
    return "a" if (choice == "left") == left_is_a else "b"


def cast(db_path: str | Path, dataset: str, battle_id: int, annotator: str, choice: str, shown: str) -> bool:
    """Store a vote at once (a brief write; waits up to :data:`VOTE_WAIT_S` for another writer); True when it
    replaced the annotator's earlier vote on the battle.  Raises ``StoreError`` when it could not be stored."""
    winner = winner_of(choice, shown)
    with Store.open(str(db_path), read_only=False, wait_s=waits.VOTE.seconds) as store:
        return bool(store.cast_vote(dataset, int(battle_id), annotator, winner, shown))


def stale_press(pressed: int, on_screen: int | None, voted: Collection[int]) -> str | None:
    """Why a press of a vote button for battle ``pressed`` must not be stored, or None when it may.

    A browser keeps the previous battle's buttons on screen (stale) while the next battle's page is still
    arriving; a key or click that lands then fires the previous battle's button, and the server, whose
    run was interrupted by that press, still knows the button.  Such a press was meant for the battle now
    on screen, so storing it would give the previous battle the next battle's choice.  A vote button is
    only valid for the battle on screen and only until its vote is stored (a change goes through the
    change-vote buttons).
    """
    if on_screen is not None and int(pressed) != int(on_screen):
        return (
            f"Nothing was stored: the press reached battle {int(pressed)}'s buttons while battle "
            f"{int(on_screen)} was coming on screen. Vote on battle {int(on_screen)} again."
        )
    if int(pressed) in voted:
        return (
            f"Battle {int(pressed)} already has your vote; use “Change your vote on the previous battle” to change it."
        )
    return None


def stale_skip(pressed: int, on_screen: int | None) -> str | None:
    """Why a press of the skip button for battle ``pressed`` must not count, or None when it may (as
    :func:`stale_press`: a skip only counts for the battle on screen)."""
    if on_screen is not None and int(on_screen) != int(pressed):
        return (
            f"Nothing was skipped: the press reached battle {int(pressed)}'s buttons while battle {int(on_screen)} "
            "was coming on screen. Press skip again."
        )
    return None


@dataclass(frozen=True)
class QueueOffer:
    """The queues the Vote page offers, and why the others are left out (``reasons``: queue → why not, None
    when it can be filled)."""

    kinds: list[str]
    left_out: dict[str, str]

    @classmethod
    def of(cls, reasons: dict[str, str | None]) -> QueueOffer:
        return cls(
            [k for k, why in reasons.items() if why is None],
            {k: why for k, why in reasons.items() if why is not None},
        )

    def index(self, asked: str | None) -> int:
        """The radio's start: the queue the link asks for when it is offered, else the first."""
        return self.kinds.index(asked) if asked in self.kinds else 0

    def none_text(self) -> str:
        """Why no queue is offered (markdown, the reasons escaped)."""
        return "; ".join(f"{QUEUE_TITLES.get(k, k)}: {esc(why)}" for k, why in self.left_out.items())

    def left_out_caption(self) -> str | None:
        """The one line on the queues not offered (markdown), None when every queue is."""
        if not self.left_out:
            return None
        return "Not offered here: " + "; ".join(
            f"{QUEUE_TITLES.get(k, k)} ({esc(why)})" for k, why in self.left_out.items()
        )


VOTE_LABELS = {"left": "Left is better", "right": "Right is better", "tie": "Tie", "both_bad": "Both bad"}
VOTE_KEYS_CAPTION = "Keys: 1 left, 2 right, 3 tie, 4 both bad, s skip."


def stored_toast(battle_id: int, left: str, right: str, choice: str, replaced: bool) -> str:
    """What the toast after a vote says (markdown): the battle, the choice and, now, the models' names
    (from imported files: shown literally, a "$" pair would otherwise become a formula)."""
    said = {"left": f"left ({esc(left)})", "right": f"right ({esc(right)})", "tie": "a tie", "both_bad": "both bad"}
    return (
        f"{'Changed' if replaced else 'Stored'}: battle {battle_id}, you chose {said[choice]}. Left was "
        f"**{esc(left)}**, right **{esc(right)}**."
    )


def untold_toast(last: tuple | None, told: tuple | None) -> str | None:
    """The toast on the last stored vote (``last``: battle, shown, left, right, choice, replaced), told once:
    None when there is no vote or it was told (``told``: the vote last told)."""
    if last is None or told == last:
        return None
    battle_id, _, left, right, choice, replaced = last
    return stored_toast(battle_id, left, right, choice, replaced)


def not_stored(exc: Exception) -> str:
    """What the page says when a vote could not be stored (redacted: a store error may quote a path or a key)."""
    return redact(f"Your vote was not stored ({exc}). Please vote again.")


def on_screen(
    current: tuple[str, int] | None, kind: str, remaining: list[int], done: Collection[int], skipped: Collection[int]
) -> tuple[str, int]:
    """The (queue, battle) to show: the one on screen stays until it is voted on or skipped (a queue re-planned
    meanwhile does not swap it); else the queue's first remaining battle (``remaining`` is not empty)."""
    if current is None or current[0] != kind or current[1] in done or current[1] in skipped:
        return kind, remaining[0]
    return current


@dataclass(frozen=True)
class Queue:
    """The battles a queue offers an annotator, in order (those they voted on left out)."""

    kind: str
    battle_ids: list[int]
    rule: str

    def __len__(self) -> int:
        return len(self.battle_ids)


def _seeded_order(ids: Iterable[int], salt: str) -> list[int]:
    return sorted(ids, key=lambda b: hashlib.sha256(f"{salt}\x00{b}".encode()).digest())


def calibration_order(candidates: pd.DataFrame, votes_per_model: dict[str, int], n: int) -> list[int]:
    """Up to ``n`` battles (ids of ``candidates``: battle_id, model_a, model_b), chosen greedily: each pick goes
    to the model with the fewest human votes so far (the queue's earlier picks counted), against the opponent
    this queue has used least for it, the better-voted first; a battle is picked once.

    Rotating the opponents matters: measured against one reference only, a model's human Elo inherits that
    reference's error (``tests/test_calibration_queue.py``)."""
    if candidates.empty or n <= 0:
        return []
    counts = dict(votes_per_model)
    by_model: dict[str, dict[str, list[int]]] = {}
    for bid, a, b in zip(candidates["battle_id"].astype(int), candidates["model_a"], candidates["model_b"]):
        by_model.setdefault(a, {}).setdefault(b, []).append(int(bid))
        by_model.setdefault(b, {}).setdefault(a, []).append(int(bid))
    for opponents in by_model.values():
        for ids in opponents.values():
            ids.sort(reverse=True)  # popped from the end: lowest id first
    used: dict[tuple[str, str], int] = {}
    reference_votes = float(np.median([counts.get(m, 0) for m in by_model]))
    needy = [(counts.get(m, 0), m) for m in by_model]
    heapq.heapify(needy)
    taken: set[int] = set()
    out: list[int] = []
    while needy and len(out) < n:
        count, model = heapq.heappop(needy)
        if count != counts.get(model, 0):  # stale entry: the model gained votes since it was pushed
            heapq.heappush(needy, (counts.get(model, 0), model))
            continue
        opponents = by_model[model]
        for ids in opponents.values():
            while ids and ids[-1] in taken:
                ids.pop()
        open_ = [o for o, ids in opponents.items() if ids]
        if not open_:
            continue  # nothing left for this model
        # references whose own human Elo is firm: at least the median model's votes (else the best there are)
        firm = [o for o in open_ if counts.get(o, 0) >= reference_votes] or open_
        other = min(firm, key=lambda o: (used.get((model, o), 0), -counts.get(o, 0), o))
        bid = opponents[other].pop()
        taken.add(bid)
        out.append(bid)
        used[(model, other)] = used.get((model, other), 0) + 1
        used[(other, model)] = used.get((other, model), 0) + 1
        counts[model] = counts.get(model, 0) + 1
        counts[other] = counts.get(other, 0) + 1
        heapq.heappush(needy, (counts[model], model))
    return out


def queue(
    store: Store,
    dataset: str,
    kind: str,
    annotator: str,
    judge: str | None = None,
    alpha: float = 0.1,
    seed: int = 0,
    limit: int = 500,
) -> Queue | Unavailable:
    """The next battles of a queue for ``annotator`` (at most ``limit``; see the module docstring for the rules)."""
    if kind not in QUEUES:
        raise ValueError(f"unknown queue {kind!r}: expected one of {', '.join(QUEUES)}")
    votable = store.votable_battles(dataset)
    if votable.empty:
        return Unavailable(f"dataset {dataset!r} has no battle with both answers' texts to vote on")
    mine = set(store.annotator_votes(dataset, annotator)["battle_id"].astype(int))
    open_ = votable[~votable["battle_id"].astype(int).isin(mine)]
    if kind == "random":
        ids = _seeded_order(open_["battle_id"].astype(int), f"{annotator}:{seed}")[:limit]
        return Queue(kind, ids, f"uniform over the {len(open_):,} battles you have not voted on (seeded per annotator)")
    if kind == "scope":
        if judge is None:
            return Unavailable("the SCOPE queue needs a judge: choose one in the sidebar")
        from core.app.escalation import escalations

        esc = escalations(store, dataset, judge, alpha)
        if isinstance(esc, Unavailable):
            return esc
        frame = esc.frame[esc.frame["battle_id"].astype(int).isin(set(open_["battle_id"].astype(int)))]
        ids = frame["battle_id"].astype(int).tolist()[:limit]
        return Queue(kind, ids, esc.text())
    per_model = model_vote_counts(votable)
    ids = calibration_order(open_, per_model, limit)
    return Queue(
        kind,
        ids,
        "each vote goes to the model with the fewest human votes (counting this queue's earlier picks), on a "
        "battle against its well-rated opponents in turn: a model's noisy or missing human Elo widens every "
        "model's conformal interval",
    )


def model_vote_counts(votable: pd.DataFrame) -> dict[str, int]:
    """Human votes per model (a battle's votes count for both its models)."""
    n = votable["n_votes"].to_numpy(int)
    counts = (
        pd.concat([pd.Series(n, index=votable["model_a"]), pd.Series(n, index=votable["model_b"])])
        .groupby(level=0)
        .sum()
    )
    return {str(k): int(v) for k, v in counts.items()}


@dataclass(frozen=True)
class AnnotatorStats:
    """An annotator's votes and how often they agree with the other humans and with the judge."""

    n_votes: int
    agree_humans: float  # NaN when no voted battle has another human's decisive vote
    n_compared_humans: int
    agree_judge: float  # NaN without a judge or without judged battles among the votes
    n_compared_judge: int

    def text(self) -> str:
        def part(rate: float, n: int, whom: str) -> str:
            if not n:
                return f"no battle to compare with {whom} yet"
            return f"{rate:.0%} agreement with {whom} on {n} battles"

        return (
            f"{self.n_votes} votes; {part(self.agree_humans, self.n_compared_humans, 'the other humans')}; "
            f"{part(self.agree_judge, self.n_compared_judge, 'the judge')}"
        )


def annotator_stats(store: Store, dataset: str, annotator: str, judge: str | None = None) -> AnnotatorStats:
    """Agreement on decisive votes only (a or b): with the majority of the other humans' decisive votes on the
    same battle (battles where they split evenly are left out), and with the judge's hard label."""
    mine = store.annotator_votes(dataset, annotator)
    decisive = mine[mine["winner"].isin(["a", "b"])]
    ids = decisive["battle_id"].astype(int).tolist()
    mine_w = decisive.set_index("battle_id")["winner"]
    agree_h, n_h = float("nan"), 0
    if ids:
        others = store.votes_on(dataset, ids)
        others = others[(others["annotator"] != annotator) & others["winner"].isin(["a", "b"])]
        if len(others):
            margin = others.assign(s=np.where(others["winner"] == "a", 1, -1)).groupby("battle_id")["s"].sum()
            majority = margin[margin != 0].map(lambda s: "a" if s > 0 else "b")
            both = majority.index.intersection(mine_w.index)
            n_h = len(both)
            agree_h = float((mine_w.loc[both] == majority.loc[both]).mean()) if n_h else float("nan")
    agree_j, n_j = float("nan"), 0
    if judge is not None and ids:
        labels = store.judge_labels(dataset, judge, ids)
        labels = labels[labels["judge_hard"].isin([0.0, 1.0])].set_index("battle_id")["judge_hard"]
        both = labels.index.intersection(mine_w.index)
        n_j = len(both)
        if n_j:
            agree_j = float(((mine_w.loc[both] == "a") == (labels.loc[both] == 1.0)).mean())
    return AnnotatorStats(len(mine), agree_h, n_h, agree_j, n_j)


@dataclass(frozen=True)
class BattleView:
    """A battle as one annotator sees it: the conversation turn by turn, the answers as left and right."""

    battle_id: int
    shown: str  # 'ab': the battle's a is on the left
    turns: list[tuple[str, str | None, str | None]]  # (user turn, left answer, right answer)
    model_left: str
    model_right: str


def battle_view(store: Store, dataset: str, battle_id: int, annotator: str) -> BattleView | Unavailable:
    """The battle with its sides in the annotator's order (model names kept for after the vote)."""
    import json

    row = store.battle_texts(dataset, int(battle_id))
    if row is None:
        return Unavailable(f"battle {int(battle_id)} is not in dataset {dataset!r}")
    if row["text_a"] is None or row["text_b"] is None:
        return Unavailable(f"battle {int(battle_id)} lacks an answer's text: nothing to vote on")

    def listed(stored: str | None, single: str | None) -> list:
        return json.loads(stored) if isinstance(stored, str) else [single]

    asked = listed(row["prompt_turns"], row["prompt"] or "")
    a, b = listed(row["turns_a"], row["text_a"]), listed(row["turns_b"], row["text_b"])
    shown = shown_order(annotator, int(battle_id))
    left, right = (a, b) if shown == "ab" else (b, a)
    n = max(len(asked), len(left), len(right))

    def at(xs: list, i: int) -> str | None:
        return xs[i] if i < len(xs) else None

    turns = [(at(asked, i) or "", at(left, i), at(right, i)) for i in range(n)]
    model_left, model_right = (row["model_a"], row["model_b"]) if shown == "ab" else (row["model_b"], row["model_a"])
    return BattleView(int(battle_id), shown, turns, str(model_left), str(model_right))


def annotator_for_token(tokens: dict[str, str], given: str | None) -> str | None:
    """The annotator whose token is ``given`` (compared in constant time), None when no token matches."""
    if not given:
        return None
    found = None
    for token, name in tokens.items():
        if hmac.compare_digest(given.encode(), token.encode()):
            found = name
    return found


def vote_tokens(environ: dict[str, str], secrets: dict | None = None) -> dict[str, str]:
    """Annotator tokens for a closed team, token → annotator name: ``ARENA_VOTE_TOKENS="alice:tok1,bob:tok2"``
    or a ``[vote_tokens]`` table in Streamlit secrets (``alice = "tok1"``).  Empty: anyone may vote by name."""
    from core import redact

    out: dict[str, str] = {}
    raw = environ.get(VOTE_TOKENS_ENV, "")
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, sep, token = part.partition(":")
        if not sep or not name.strip() or not token.strip():
            raise ValueError(f"{VOTE_TOKENS_ENV}: each entry is name:token (entry {len(out) + 1} is not)")
        out[token.strip()] = name.strip()
    for name, token in (secrets or {}).items():
        if not isinstance(token, str) or not token:
            raise ValueError(f"secrets [vote_tokens]: the token of {str(name)[:40]!r} must be a non-empty string")
        out[token] = str(name)
    for token in out:
        redact.register(token)
    return out


NO_BATTLE_LEFT = "this queue has no battle left for you: choose another queue, or thank you!"


@dataclass(frozen=True)
class VoteScreen:
    """What the Vote page shows above and below a battle, and which battle (None: the queue has none left)."""

    caption: str  # markdown: who votes, their agreement, the battles left
    battle: tuple[str, int] | None  # (queue, battle id)
    rule: str  # why the queue holds these battles

    @property
    def rule_caption(self) -> str:
        return f"Why these battles: {self.rule}."


def vote_screen(
    annotator: str,
    stats: AnnotatorStats,
    q: Queue,
    current: tuple[str, int] | None,
    done: Collection[int],
    skipped: Collection[int],
) -> VoteScreen:
    """The screen of queue ``q`` for ``annotator``: the battles voted on or skipped in this session are left out
    (the queue may be up to its TTL older than them), and the battle on screen stays (:func:`on_screen`)."""
    remaining = [b for b in q.battle_ids if b not in done and b not in skipped]
    caption = f"Voting as **{esc(annotator)}**: {stats.text()}. This queue has {len(remaining):,} battles left for you."
    battle = on_screen(current, q.kind, remaining, done, skipped) if remaining else None
    return VoteScreen(caption, battle, q.rule)


NAME_MAX_CHARS = 200  # an annotator's name, as the sign-in form and a link give it
CLOSED_TEAM = "Voting on this server is for a closed team: enter the token you were given."


def annotator_from_link(tokens: dict[str, str], vote_token: str | None, name: str | None) -> str | None:
    """The annotator a link names: for a closed team (``tokens``) the owner of its ``vote_token`` (a name alone
    is not enough), else its ``annotator`` name, stripped and cut to :data:`NAME_MAX_CHARS`; None: neither."""
    if tokens:
        return annotator_for_token(tokens, vote_token)
    return (name or "").strip()[:NAME_MAX_CHARS] or None


def sign_in_label(tokens: dict[str, str]) -> str:
    return "your voting token" if tokens else "your name (stored with your votes)"


@dataclass(frozen=True)
class SignIn:
    """The sign-in form's answer: the annotator and the link parameter that remembers them, or why not."""

    annotator: str | None  # None: refused (``error`` says why)
    error: str | None = None
    param: tuple[str, str] | None = None  # (query parameter, value) to put in the URL


def sign_in(tokens: dict[str, str], given: str | None) -> SignIn:
    """What the sign-in form's ``given`` text makes of this session: a closed team's token names its annotator
    (and goes in the link as ``vote_token``), else the text is the name (in the link as ``annotator``)."""
    given = (given or "").strip()
    if tokens:
        found = annotator_for_token(tokens, given)
        if found is None:
            return SignIn(None, "That token is not on this team's list.")
        return SignIn(found, param=("vote_token", given))
    if not given:
        return SignIn(None, "Enter a name.")
    return SignIn(given, param=("annotator", given))


def offer_key(dataset: str, judge: str | None, alpha: float) -> str:
    """The session key of the queues' reasons: learnt once per session and selection, since every vote reruns
    the page and only the chosen queue is read again."""
    return f"vote_queue_reasons:{dataset}:{judge}:{alpha}"


def queue_reasons(found: dict[str, Queue | Unavailable]) -> dict[str, str | None]:
    """Each queue's reason it cannot be filled, None for a queue that can (:meth:`QueueOffer.of` reads it)."""
    return {kind: got.reason if isinstance(got, Unavailable) else None for kind, got in found.items()}


@dataclass(frozen=True)
class ShownTurn:
    """One turn of a battle as the page writes it (markdown): the prompt always as text, the answers as text
    or as Markdown without images or HTML, every part redacted."""

    heading: str | None  # "**Turn k**" when the battle has several turns
    prompt: str
    left: str
    right: str
    last: bool  # the vote buttons stand beside the last turn's answers


def shown_turns(view: BattleView, as_markdown: bool) -> list[ShownTurn]:
    """The battle's turns, ready to write.  A generated answer may repeat a key: it is redacted before any
    escaping changes how the key is written (the store redacts what it writes; rows stored before that, or
    imported, pass here too)."""
    values = secrets()

    def answer(text: str | None) -> str:
        if text is None:
            return "*(no answer)*"
        text = redact(text, values)
        return neutralise_markdown(text) if as_markdown else esc(text)

    n = len(view.turns)
    return [
        ShownTurn(
            f"**Turn {k + 1}**" if n > 1 else None,
            esc(redact(asked, values)) if asked else "*(no prompt text)*",
            answer(left),
            answer(right),
            k == n - 1,
        )
        for k, (asked, left, right) in enumerate(view.turns)
    ]
