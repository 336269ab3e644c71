"""MT-Bench human judgments (``lmsys/mt_bench_human_judgments``, Parquet, JSONL or CSV; one file per split).

Fields: ``question_id, model_a, model_b, winner, judge, conversation_a,
conversation_b, turn``.  In the ``human`` split ``judge`` is the annotator
(``author_2``, ``expert_17``, …) and ``winner`` is ``model_a``, ``model_b`` or
``tie``; in the ``gpt4_pair`` split ``judge`` is ``gpt4_pair`` and ``winner``
may also be ``tie (inconsistent)``.  A file may mix both kinds of rows.

A battle is one (question, model pair, turn): the rows that repeat it are
grouped into one battle, also when a later row names the two models the other
way round (its winner is then flipped).  Its orientation is that of the first
row.  Every human row is one vote of its annotator on the battle.

A row whose judge is a model (its name starts with ``gpt4`` or ``gpt-4``) is
a judgment of the judge ``gpt-4`` (the file's judge value is its
``prompt_version``), not a vote; so is a row whose judge is FastChat's
``[judge model, prompt name]`` list (the judge is then that model, the
prompt name its ``prompt_version``).  FastChat ran that judge in both presentation
orders and merged them into one winner, so the judgment's order is ``avg``
(both orders merged) and its verdict is in battle terms.  ``tie
(inconsistent)``, the two orders disagreeing, is stored as verdict ``tie``
(how FastChat itself counts it) with ``raw_output`` saying the two orders
were inconsistent, so the inconsistency is never lost.

At turn 1 a battle's prompt is the first user message and each completion the
first answer; at turn 2 the prompt's ``turns`` holds both user messages and
each completion's ``turns`` both answers (``text`` = the answers joined).
Prompts are kept per (question, turn), completions per (prompt, model).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables
from core.ingest.common import (
    MAX_QUOTE,
    IngestError,
    conversation,
    int_column,
    is_missing,
    models_frame,
    quote,
    read_table_file,
    require_names,
    text_column,
    with_style,
)
from core.ingest.lmarena import second_vote

REQUIRED = ("question_id", "model_a", "model_b", "winner", "judge", "turn")
HUMAN_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad", "both_bad": "both_bad"}
JUDGE_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (inconsistent)": "tie"}
FLIP = {"a": "b", "b": "a", "tie": "tie", "both_bad": "both_bad"}
MODEL_JUDGE = "gpt-4"
MAX_TURN = 100


def is_model_judge(judge: str) -> bool:
    """Whether a ``judge`` value names a model judge (``gpt4_pair``) rather than a human annotator."""
    name = judge.strip().lower()
    return name.startswith(("gpt4", "gpt-4"))


def _judge_list(path: Path, value: object, row: int) -> tuple[str, str] | None:
    """(judge model, prompt name) of FastChat's ``[model, prompt]`` judge value; None for a plain name."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        return None
    parts = [str(x).strip() for x in value if isinstance(x, str) and x.strip()]
    if len(parts) != len(value) or not 1 <= len(parts) <= 2 or any(len(x) > MAX_QUOTE for x in parts):
        raise IngestError(
            path, f"expected a name or [judge model, prompt name], got {quote(value)}", row=row, field="judge"
        )
    return parts[0], parts[-1]


def _turns_json(turns: list[str]) -> str | None:
    return json.dumps(turns, ensure_ascii=False) if len(turns) > 1 else None


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """One split file: human rows become votes, gpt4_pair rows ``gpt-4`` judgments, on one battle per unit."""
    path = Path(path)
    df = read_table_file(path)
    df.columns = [str(c).strip() for c in df.columns]
    for col in REQUIRED:
        if col not in df.columns:
            raise IngestError(path, f"missing required column {col!r}; found {list(df.columns)}", field=col)
    if df.empty:
        raise IngestError(path, "the file has no rows")
    qids = text_column(path, df, "question_id", required=True)
    named = [_judge_list(path, v, i + 1) for i, v in enumerate(df["judge"].tolist())]
    df["judge"] = [v if pair is None else pair[1] for v, pair in zip(df["judge"].tolist(), named)]
    require_names(path, df, ("model_a", "model_b", "judge"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    turns = int_column(path, df, "turn", 1, MAX_TURN)
    has_texts = "conversation_a" in df.columns and "conversation_b" in df.columns

    battles: dict[tuple[str, str, str, int], dict] = {}
    votes: list[dict] = []
    judgments: list[dict] = []
    judged: dict[tuple[int, str, str], int] = {}
    voted: dict[tuple[int, str], int] = {}  # (battle, annotator) → the row of the vote
    prompt_index: dict[tuple[str, int], int] = {}
    prompts: list[dict] = []
    comps: dict[tuple[int, str], dict] = {}
    rows = zip(qids, df["model_a"].tolist(), df["model_b"].tolist(), df["winner"].tolist(), df["judge"].tolist(), turns)
    for i, (qid, ma, mb, w, who, turn) in enumerate(rows):
        row = i + 1
        assert qid is not None  # required
        qid = qid.strip()
        if turn is None:
            raise IngestError(path, "missing turn", row=row, field="turn")
        listed = named[i]
        model_judge = listed is not None or is_model_judge(who)
        judge_name = listed[0] if listed is not None else MODEL_JUDGE
        allowed = JUDGE_WINNERS if model_judge else HUMAN_WINNERS
        code = allowed.get(w.strip().lower()) if isinstance(w, str) else None
        if code is None:
            shown = "missing winner" if is_missing(w) else f"unknown winner {quote(w)}"
            kind = "a model judge's" if model_judge else "a human"
            raise IngestError(path, f"{shown} (expected {kind} winner: {', '.join(allowed)})", row=row, field="winner")
        if (qid, mb, ma, turn) in battles:
            battle, code = battles[(qid, mb, ma, turn)], FLIP[code]
            ma, mb = mb, ma
            swapped = True
        else:
            swapped = False
            if (qid, ma, mb, turn) not in battles:
                battles[(qid, ma, mb, turn)] = {
                    "battle_key": len(battles),
                    "model_a": ma,
                    "model_b": mb,
                    "external_id": qid,
                    "turn": turn,
                    "language": "en",
                }
            battle = battles[(qid, ma, mb, turn)]
        if has_texts:
            _texts(path, df, i, turn, battle, swapped, prompt_index, prompts, comps)
        key = battle["battle_key"]
        if model_judge:
            if (key, judge_name, who) in judged:
                raise IngestError(
                    path,
                    f"a second {who} judgment of this battle (the first: row {judged[(key, judge_name, who)]})",
                    row=row,
                    field="judge",
                )
            judged[(key, judge_name, who)] = row
            inconsistent = w.strip().lower() == "tie (inconsistent)"
            note = " (the two presentation orders disagreed)" if inconsistent else ""
            raw_winner = w.strip() if not swapped else f"{w.strip()} (row's models are the battle's swapped)"
            judgments.append(
                {
                    "battle_key": key,
                    "judge": judge_name,
                    "order": "avg",
                    "prompt_version": who,
                    "verdict": code,
                    "raw_output": f"winner: {raw_winner}{note}",
                    "parse_error": None,
                }
            )
        else:
            if (key, who) in voted:
                raise IngestError(path, second_vote(who, voted[(key, who)]), row=row, field="judge")
            voted[(key, who)] = row
            votes.append({"battle_key": key, "winner": code, "annotator": who})

    battle_rows = list(battles.values())
    battles_df = pd.DataFrame(battle_rows).astype({"battle_key": np.int64})
    battles_df["turn"] = battles_df["turn"].astype("Int32")
    if has_texts:
        battles_df["prompt_key"] = [prompt_index[(b["external_id"], b["turn"])] for b in battle_rows]
        battles_df["prompt_key"] = battles_df["prompt_key"].astype(np.int64)
    annotators = sorted({v["annotator"] for v in votes})
    return DatasetTables(
        name=dataset or path.stem,
        source="mtbench-human",
        models=models_frame(pd.concat([battles_df.model_a, battles_df.model_b])),
        battles=battles_df,
        prompts=pd.DataFrame(prompts) if has_texts else None,
        completions=with_style(pd.DataFrame(list(comps.values()))) if has_texts else None,
        votes=pd.DataFrame(votes) if votes else None,
        annotators=pd.DataFrame({"annotator": annotators}) if annotators else None,
        judges=pd.DataFrame({"judge": sorted({j["judge"] for j in judgments})}) if judgments else None,
        judgments=pd.DataFrame(judgments) if judgments else None,
        meta={
            "format": "mtbench-human",
            "file": path.name,
            "rows": len(df),
            "human_votes": len(votes),
            "model_judgments": len(judgments),
            "model_judge": "rows whose judge starts with gpt4 are gpt-4 judgments with both orders merged "
            "(order avg); 'tie (inconsistent)' is a tie whose raw_output says so",
        },
    )


def _texts(
    path: Path,
    df: pd.DataFrame,
    i: int,
    turn: int,
    battle: dict,
    swapped: bool,
    prompt_index: dict[tuple[str, int], int],
    prompts: list[dict],
    comps: dict[tuple[int, str], dict],
) -> None:
    """The row's prompt (first ``turn`` user messages) and both answers (first ``turn`` assistant messages)."""
    row = i + 1
    said: dict[str, list[str]] = {}
    user: list[str] = []
    for field in ("conversation_a", "conversation_b"):
        conv = conversation(path, df[field].iloc[i], row, field)
        users = [t or "" for role, t in conv if role == "user"]
        replies = [t or "" for role, t in conv if role == "assistant"]
        if len(users) < turn or len(replies) < turn:
            raise IngestError(
                path,
                f"turn {turn} needs {turn} user and assistant message(s); the conversation has "
                f"{len(users)} and {len(replies)}",
                row=row,
                field=field,
            )
        said[field] = replies[:turn]
        user = user or users[:turn]
    qid, model_a, model_b = battle["external_id"], battle["model_a"], battle["model_b"]
    if (qid, turn) not in prompt_index:
        key = prompt_index[(qid, turn)] = len(prompts)
        prompts.append(
            {
                "prompt_key": key,
                "external_id": qid if turn == 1 else f"{qid}/turn-{turn}",
                "text": user[0],
                "turns": _turns_json(user),
                "language": "en",
            }
        )
    key = prompt_index[(qid, turn)]
    sides = (
        (("conversation_b", model_a), ("conversation_a", model_b))
        if swapped
        else (
            ("conversation_a", model_a),
            ("conversation_b", model_b),
        )
    )
    for field, model in sides:
        if (key, model) not in comps:
            comps[(key, model)] = {
                "prompt_key": key,
                "model": model,
                "text": "\n\n".join(said[field]),
                "turns": _turns_json(said[field]),
            }
