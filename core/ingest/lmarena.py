"""LMArena battles (Parquet, CSV or JSONL), in each release's layout.

Columns: model_a, model_b, and the winner, either one ``winner`` column (``chatbot_arena_conversations``,
``arena-human-preference-100k`` and ``-140k``) or the one-hot ``winner_model_a / winner_model_b /
winner_tie`` of ``arena-human-preference-55k``; optionally judge (the annotator), question_id or id,
turn, language, tstamp, and the texts: ``conversation_a/b`` (lists of ``{role, content}``, where content
is a string or a list of ``{type, text, …}`` parts) or 55k's ``prompt / response_a / response_b`` (JSON
lists of strings, one per turn).

Conversations are kept whole: a prompt's text is its first user message and a completion's text is
every assistant message joined; with more than one turn, ``turns`` keeps each turn apart (JSON lists)
so a judge sees the conversation as the voter did.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import ARENA_WINNERS, DatasetTables
from core.ingest.common import (
    INT32_MAX,
    MAX_QUOTE,
    MAX_TEXT_CHARS,
    TSTAMP_RANGE,
    IngestError,
    conversation,
    float_values,
    int_column,
    is_missing,
    load_json,
    message_text,
    models_frame,
    quote,
    read_table_file,
    require_names,
    text_column,
    with_style,
)
from core.store.bulk import (
    ArenaLimits,
    BulkBattles,
    ParquetFile,
    arena_battle_columns,
    arena_battle_rules,
    plain_arena_types,
)
from core.store.errors import StoreError

# arena-human-preference-55k: one 0/1 column per outcome instead of ``winner``
ONE_HOT_WINNERS: dict[str, str] = {"winner_model_a": "a", "winner_model_b": "b", "winner_tie": "tie"}
# arena-human-preference-55k: JSON-encoded lists of strings, one per turn
TURN_LISTS: tuple[str, ...] = ("prompt", "response_a", "response_b")
# arena-human-preference-100k/140k: per-battle tags, kept as prompt attributes (the leaderboard's slices)
TAG_COLUMNS: tuple[str, ...] = ("is_code", "category_tag")
# category_tag's classifiers → the attribute each sets ("true"/"false"); hard_prompt is LMArena's rule: at
# least HARD_PROMPT_CRITERIA of the seven criteria_v0.1 flags set
CATEGORY_TAGS: dict[str, tuple[str, str]] = {
    "math": ("math_v0.1", "math"),
    "creative_writing": ("creative_writing_v0.1", "creative_writing"),
    "instruction_following": ("if_v0.1", "if"),
}
HARD_PROMPT_CRITERIA = 6


def read(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    df = read_table_file(path)
    df.columns = [str(c).strip() for c in df.columns]
    one_hot = "winner" not in df.columns and all(c in df.columns for c in ONE_HOT_WINNERS)
    for col in ("model_a", "model_b", *(() if one_hot else ("winner",))):
        if col not in df.columns:
            raise IngestError(path, f"missing required column {col!r}; found {list(df.columns)}", field=col)
    if df.empty:
        raise IngestError(path, "the file has no rows")
    require_names(path, df, ("model_a", "model_b"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    winners = _one_hot_winners(path, df) if one_hot else _winners(path, df)
    n = len(df)
    keys = np.arange(n, dtype=np.int64)
    ext = text_column(path, df, "question_id" if "question_id" in df.columns or "id" not in df.columns else "id")
    battles = pd.DataFrame(
        {
            "battle_key": keys,
            "model_a": df["model_a"].to_numpy(),
            "model_b": df["model_b"].to_numpy(),
            "external_id": ext,
            "language": text_column(path, df, "language"),
            "turn": pd.array(int_column(path, df, "turn", 1, INT32_MAX), dtype="Int32"),
            "tstamp": pd.array(float_values(path, df, "tstamp", *TSTAMP_RANGE), dtype="Float64"),
        }
    )
    votes = pd.DataFrame({"battle_key": keys, "winner": winners, "annotator": text_column(path, df, "judge")})
    prompts = completions = None
    turns = _turns(path, df)
    if turns is not None:
        asked, said_a, said_b = turns
        # Each battle gets its own prompt: the same question id can carry
        # different conversations (multi-turn), so completions are per battle.
        prompts = pd.DataFrame(
            {
                "prompt_key": keys,
                "external_id": ext,
                "text": [t[0] if t else None for t in asked],
                "language": battles["language"],
                "turns": [_turn_list(t) for t in asked],
            }
        )
        comp = pd.DataFrame(
            {
                "prompt_key": np.concatenate([keys, keys]),
                "model": np.concatenate([battles.model_a.to_numpy(), battles.model_b.to_numpy()]),
                "text": [_joined(t) for t in said_a + said_b],
                "turns": [_turn_list(t) for t in said_a + said_b],
            }
        )
        completions = with_style(comp)
        battles["prompt_key"] = keys
        if battles["turn"].isna().all():  # LMArena's turn is the number of user turns
            battles["turn"] = pd.array([len(t) or None for t in asked], dtype="Int32")
    attributes = _tags(path, df)
    if attributes is not None and prompts is None:  # a prompt per battle, without text, to carry its tags
        prompts = pd.DataFrame({"prompt_key": keys, "external_id": ext, "language": battles["language"]})
        battles["prompt_key"] = keys
    repeated = _repeated_vote(battles, votes)
    if repeated is not None:
        row, first = repeated
        raise IngestError(path, second_vote(votes["annotator"].iloc[row - 1], first), row=row, field="judge")
    return DatasetTables(
        name=dataset or path.stem,
        source="lmarena",
        models=models_frame(pd.concat([df.model_a, df.model_b])),
        battles=battles,
        votes=votes,
        prompts=prompts,
        prompt_attributes=attributes,
        completions=completions,
        meta={"format": "lmarena", "file": path.name, "rows": n},
    )


def _flag(path: Path, value: Any, row: int, field: str) -> str | None:
    if is_missing(value):
        return None
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "0", "1"):
        return "true" if value.strip().lower() in ("true", "1") else "false"
    raise IngestError(path, f"expected true or false, got {quote(value)}", row=row, field=field)


def _tags(path: Path, df: pd.DataFrame) -> pd.DataFrame | None:
    """The battles' tags (``is_code`` and ``category_tag``'s classifiers) as prompt attributes, keyed by row."""
    if not any(c in df.columns for c in TAG_COLUMNS):
        return None
    rows: list[dict] = []
    for i in range(len(df)):
        found: dict[str, str | None] = {}
        if "is_code" in df.columns:
            found["is_code"] = _flag(path, df["is_code"].iloc[i], i + 1, "is_code")
        if "category_tag" in df.columns:
            tag = df["category_tag"].iloc[i]
            if isinstance(tag, str):
                tag = load_json(path, tag, i + 1, "category_tag")
            if not is_missing(tag):
                if not isinstance(tag, dict):
                    why = f"expected an object of tags, got {quote(tag)}"
                    raise IngestError(path, why, row=i + 1, field="category_tag")
                for name, (group, flag) in CATEGORY_TAGS.items():
                    part = tag.get(group)
                    if isinstance(part, dict) and flag in part:
                        found[name] = _flag(path, part[flag], i + 1, f"category_tag.{group}.{flag}")
                criteria = tag.get("criteria_v0.1")
                if isinstance(criteria, dict) and criteria:
                    flags = [_flag(path, v, i + 1, f"category_tag.criteria_v0.1.{k}") for k, v in criteria.items()]
                    found["hard_prompt"] = "true" if flags.count("true") >= HARD_PROMPT_CRITERIA else "false"
        rows.extend({"prompt_key": i, "key": k, "value": v} for k, v in found.items() if v is not None)
    return pd.DataFrame(rows, columns=["prompt_key", "key", "value"]) if rows else None


def second_vote(annotator: str, first: int) -> str:
    """What an importer says of an annotator's second vote on a battle (MT-Bench human's and the bundle's too)."""
    return f"a second vote by annotator {quote(annotator)} on this battle (the first: row {first})"


def _repeated_vote(battles: pd.DataFrame, votes: pd.DataFrame) -> tuple[int, int] | None:
    """(row, row of the first) of the first vote that repeats an annotator's vote on a battle, or None.

    A row is its own battle, but rows with the same question id, the same two models (either way round) and
    the same turn are one battle asked again; only rows with a question id and an annotator are compared.
    """
    ext = battles["external_id"].to_numpy(dtype=object)
    who = votes["annotator"].to_numpy(dtype=object)
    known = np.array([not is_missing(e) and not is_missing(w) for e, w in zip(ext, who)], dtype=bool)
    if not known.any():
        return None
    a, b = battles["model_a"].to_numpy(dtype=object), battles["model_b"].to_numpy(dtype=object)
    turn = [None if is_missing(t) else int(t) for t in battles["turn"].tolist()]
    first: dict[tuple, int] = {}
    for i in np.flatnonzero(known).tolist():
        key = (ext[i], min(a[i], b[i]), max(a[i], b[i]), turn[i], who[i])
        if key in first:
            return i + 1, first[key]
        first[key] = i + 1
    return None


def _winners(path: Path, df: pd.DataFrame) -> list[str]:
    winners = []
    for i, v in enumerate(df["winner"].tolist()):
        code = ARENA_WINNERS.get(str(v).strip().lower()) if isinstance(v, str) else None
        if code is None:
            raise IngestError(path, _winner_problem(None if is_missing(v) else v), row=i + 1, field="winner")
        winners.append(code)
    return winners


def _one_hot_winners(path: Path, df: pd.DataFrame) -> list[str]:
    """55k's ``winner_model_a / winner_model_b / winner_tie``: each 0 or 1, exactly one 1 per row."""
    flags = {}
    for col in ONE_HOT_WINNERS:
        values = df[col].tolist()
        for i, v in enumerate(values):
            if isinstance(v, bool) or (isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1)):
                continue
            if isinstance(v, str) and v.strip() in ("0", "1"):
                continue
            raise IngestError(path, f"expected 0 or 1, got {quote(v)}", row=i + 1, field=col)
        flags[col] = np.array([int(str(v).strip()) if isinstance(v, str) else int(v) for v in values])
    total = sum(flags.values())
    bad = np.flatnonzero(total != 1)
    if len(bad):
        i = int(bad[0])
        got = ", ".join(f"{c}={flags[c][i]}" for c in ONE_HOT_WINNERS)
        raise IngestError(path, f"exactly one winner column must be 1, got {got}", row=i + 1, field="winner_model_a")
    codes = np.array(list(ONE_HOT_WINNERS.values()))
    return codes[np.argmax(np.column_stack(list(flags.values())), axis=1)].tolist()


Turns = list[list[str | None]]


def _turns(path: Path, df: pd.DataFrame) -> tuple[Turns, Turns, Turns] | None:
    """Per battle: the user's turns and each side's answers, from whichever text columns the file has."""
    if "conversation_a" in df.columns and "conversation_b" in df.columns:
        asked, said_a, said_b = [], [], []
        for i, (ca, cb) in enumerate(zip(df["conversation_a"].tolist(), df["conversation_b"].tolist())):
            conv_a = conversation(path, ca, i + 1, "conversation_a")
            conv_b = conversation(path, cb, i + 1, "conversation_b")
            asked.append([text for role, text in conv_a if role == "user"])
            said_a.append([text for role, text in conv_a if role == "assistant"])
            said_b.append([text for role, text in conv_b if role == "assistant"])
        return asked, said_a, said_b
    if all(c in df.columns for c in TURN_LISTS):
        lists: tuple[Turns, Turns, Turns] = ([], [], [])
        for col, out in zip(TURN_LISTS, lists):
            for i, v in enumerate(df[col].tolist()):
                out.append(_text_list(path, v, i + 1, col))
        return lists
    return None


def _text_list(path: Path, value: Any, row: int, field: str) -> list[str | None]:
    """55k's per-turn texts: a JSON list of strings (null for a turn with no answer), or one plain string."""
    if is_missing(value):
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith("["):
            return [message_text(path, value, row, field)]
        if len(value) > MAX_TEXT_CHARS * 4:
            raise IngestError(path, f"text list of {len(value):,} characters", row=row, field=field)
        value = load_json(path, value, row, field)
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise IngestError(path, f"expected a list of texts, one per turn, got {quote(value)}", row=row, field=field)
    out: list[str | None] = []
    for item in value:
        if item is not None and not isinstance(item, str):
            raise IngestError(path, f"a turn is not a text: {quote(item)}", row=row, field=field)
        out.append(message_text(path, item, row, field))
    return out


def _joined(turns: list[str | None]) -> str | None:
    texts = [t for t in turns if t is not None]
    return "\n\n".join(texts) if texts else None


def _turn_list(turns: list[str | None]) -> str | None:
    """The JSON list of a conversation's turns, kept only when there is more than one."""
    return json.dumps(turns, ensure_ascii=False) if len(turns) > 1 else None


# ------------------------------------------------------------ the SQL path
def bulk_plan(path: str | Path, dataset: str | None = None, judge: str | None = None) -> BulkBattles | None:
    """The same validation as :func:`read`, run by DuckDB over a Parquet file; None when it needs :func:`read`.

    Taken when the file is Parquet, carries no conversation texts (their
    parsing is per-row Python) and its columns have the plain types (text
    names, integer turns, numeric time stamps); any other file goes through
    :func:`read`, whose rules these mirror: the first rule broken, at its
    first row, is the error either path raises.
    """
    path = Path(path)
    if path.suffix.lower() != ".parquet" or not path.exists() or path.stat().st_size == 0:
        return None
    try:
        pf = ParquetFile(path)
    except StoreError:
        return None  # the row-by-row reader names what is wrong with the file
    with pf:
        if any(name != name.strip() for name in pf.types) or not plain_arena_types(pf.types) or pf.n_rows() == 0:
            return None
        if "winner" not in pf.types and all(c in pf.types for c in ONE_HOT_WINNERS):
            return None  # 55k's one-hot winners: the reader maps them
        if "question_id" not in pf.types and "id" in pf.types:
            return None  # the battle's id is in ``id``: the reader takes it from there
        if any(c in pf.types for c in TAG_COLUMNS):
            return None  # the tags are per-row structures: the reader keeps them as prompt attributes
        for col in ("model_a", "model_b", "winner"):
            if col not in pf.types:
                raise IngestError(path, f"missing required column {col!r}; found {list(pf.types)}", field=col)
        limits = ArenaLimits(tuple(ARENA_WINNERS), MAX_QUOTE, MAX_TEXT_CHARS, INT32_MAX, TSTAMP_RANGE)
        broken = pf.first_violation(arena_battle_rules(pf.types, limits))
        if broken is not None:
            rule, row, value = broken
            raise IngestError(path, _BULK_MESSAGES[rule.kind](value), row=row, field=rule.field)
        columns = arena_battle_columns(pf.types, ARENA_WINNERS)
        repeated = _bulk_repeated_vote(pf, columns)
        if repeated is not None:
            row, first, who = repeated
            raise IngestError(path, second_vote(who, first), row=row, field="judge")
        names = pf.model_names()
        n = pf.n_rows()
    return BulkBattles(
        path=path,
        name=dataset or path.stem,
        meta={"format": "lmarena", "file": path.name, "rows": n},
        models=models_frame(names),
        columns=columns,
        n_rows=n,
    )


def _bulk_repeated_vote(pf: ParquetFile, columns: dict[str, str]) -> tuple[int, int, str] | None:
    """:func:`_repeated_vote` in SQL over the file: (row, row of the first, annotator), or None."""
    if "judge" not in pf.types or "question_id" not in pf.types:
        return None
    ext, who, a, b = columns["external_id"], columns["annotator"], columns["model_a"], columns["model_b"]
    keys = f"{ext}, least({a}, {b}), greatest({a}, {b}), {columns['turn']}, {who}"
    known = f"FROM f WHERE {ext} IS NOT NULL AND {who} IS NOT NULL"
    some = pf.con.execute(f"SELECT count(*) FROM (SELECT 1 {known} GROUP BY {keys} HAVING count(*) > 1)").fetchone()
    if not some or not some[0]:
        return None  # the usual case: one aggregate, no window
    row = pf.con.execute(
        f"""SELECT row_nr, first, annotator FROM (
                SELECT row_nr, min(row_nr) OVER (PARTITION BY {keys}) AS first, {who} AS annotator {known})
            WHERE row_nr > first ORDER BY row_nr LIMIT 1"""
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


def _name_problem(value: object) -> str:
    text = "" if value is None else str(value)
    if not text.strip():
        return "empty model name"
    if len(text) > MAX_TEXT_CHARS:
        return _too_long(value)
    return f"a name of {len(text):,} characters (at most {MAX_QUOTE})"


def _winner_problem(value: object) -> str:
    expected = f"(expected one of {sorted(ARENA_WINNERS)})"
    return f"missing winner {expected}" if value is None else f"unknown winner {quote(value)} {expected}"


def _too_long(value: object) -> str:
    return f"text of {len(str(value)):,} characters exceeds the limit of {MAX_TEXT_CHARS:,}"


# What :func:`read` says for each rule of ``core.store.bulk.arena_battle_rules``.
_BULK_MESSAGES: dict[str, Callable[[Any], str]] = {
    "name": _name_problem,
    "self_battle": lambda v: "a model cannot battle itself",
    "winner": lambda v: _winner_problem(v),
    "text_length": _too_long,
    "turn": lambda v: f"expected a whole number in [1, {INT32_MAX:,}], got {quote(v)}",
    "tstamp": lambda v: f"expected a number in [{TSTAMP_RANGE[0]:g}, {TSTAMP_RANGE[1]:g}], got {quote(v)}",
}
