"""Adding a file to a dataset that already holds some of its battles: what is new, what is the same, what conflicts.

A second file often belongs to a dataset already imported: another model's
AlpacaEval annotations against the same baseline, MT-Bench's ``gpt4_pair``
split beside its ``human`` one, a second model's Arena-Hard answers.  This
module compares the new file's tables with the stored ones and returns only
what must be added, without touching a store (``core.store`` writes it).

Matching follows each layout's own battle identity, its ``adds_by`` in the format registry
(``core/ingest/formats.py``):

* battles of layouts with ``adds_by="pair"`` are one per (prompt, model pair,
  turn), so a new battle is the stored one with the same prompt (same
  external id and text), the same two models in either order and the same
  turn; a battle named the other way round has its outcomes flipped into the
  stored battle's terms (winner, verdict, p_a, grade, rubric scores, order);
* battles of layouts with ``adds_by="id"`` carry their own id (LMArena's
  ``question_id``, PandaLM's ``idx``): a new battle is the stored one with
  the same external id, and must name the same two models.

Votes and judgments of matched battles are added.  One already stored with
the same outcome (the same file's rows imported again inside a larger one) is
counted and skipped; one that says otherwise is an error naming the new row
and the stored battle.  A completion already stored must have the same text.

Keys: in the returned tables a non-negative ``prompt_key`` / ``battle_key``
is a stored id and a negative one a row to add (−1, −2, …).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.domain import SCORE_COLUMNS, DatasetTables
from core.ingest.common import IngestError, is_missing, quote

FLIP_WINNER = {"a": "b", "b": "a"}
FLIP_ORDER = {"ab": "ba", "ba": "ab"}


@dataclass(frozen=True)
class Addition:
    """The rows a file adds to a stored dataset (keys as the module says) and what was matched or skipped."""

    tables: DatasetTables
    matched_battles: int
    flipped_battles: int
    skipped_votes: int
    skipped_judgments: int
    skipped_completions: int
    skipped_grades: int = 0

    @property
    def empty(self) -> bool:
        t = self.tables
        frames = (t.battles, t.completions, t.votes, t.judgments, t.prompts, t.grades)
        return all(df is None or df.empty for df in frames)


def can_add(stored_source: str, new_source: str) -> str | None:
    """Why a file of ``new_source`` cannot join a dataset of ``stored_source``; None when it can."""
    if new_source != stored_source:
        return f"it holds {stored_source} data and this file is {new_source}"
    if _adds_by(new_source) is None:
        return f"{new_source} files are whole datasets; they do not add to one"
    return None


def addition(stored: DatasetTables, new: DatasetTables, path: str | Path) -> Addition:
    """What ``new`` adds to ``stored`` (both validated; ``stored`` keyed by non-negative ids)."""
    path = Path(path)
    why = can_add(stored.source, new.source)
    if why is not None:
        raise IngestError(
            path, f"cannot add to dataset {quote(stored.name)}: {why}; choose another name with --dataset"
        )
    prompt_of, new_prompts = _prompts(stored, new)
    attributes = None
    if new.prompt_attributes is not None and len(new.prompt_attributes):
        # a new prompt brings its attributes; a prompt already stored keeps the ones it has
        keyed = new.prompt_attributes.assign(prompt_key=new.prompt_attributes["prompt_key"].map(prompt_of))
        attributes = keyed[keyed["prompt_key"] < 0].reset_index(drop=True)
    completions, skipped_completions = _completions(path, stored, new, prompt_of)
    battle_of, flipped, new_battles = _battles(path, stored, new, prompt_of)
    votes, skipped_votes = _votes(path, stored, new, battle_of, flipped)
    judgments, skipped_judgments = _judgments(path, stored, new, battle_of, flipped)
    grades, skipped_grades = _grades(path, stored, new, prompt_of)
    known_models = set(stored.models["model"])
    models = new.models[~new.models["model"].isin(known_models)].reset_index(drop=True)
    annotators = None
    if new.annotators is not None and len(new.annotators):
        known = set() if stored.annotators is None else set(stored.annotators["annotator"])
        annotators = new.annotators[~new.annotators["annotator"].isin(known)].reset_index(drop=True)
    delta = DatasetTables(
        name=stored.name,
        source=stored.source,
        models=models,
        battles=new_battles,
        prompts=new_prompts,
        prompt_attributes=attributes,
        completions=completions,
        votes=votes,
        annotators=annotators,
        judges=new.judges,
        judgments=judgments,
        grades=grades,
        meta=new.meta,
    )
    matched = sum(1 for k in battle_of.values() if k >= 0)
    return Addition(
        delta,
        matched,
        int(sum(flipped.values())),
        skipped_votes,
        skipped_judgments,
        skipped_completions,
        skipped_grades,
    )


def combine(parts: list[tuple[Path, DatasetTables]]) -> DatasetTables:
    """Several files of one layout as one dataset (the first file's name), as if imported one after another;
    a conflict names the file it is in."""
    out = parts[0][1]
    for path, other in parts[1:]:
        out = apply(out, addition(out, other, path))
    return out


def apply(stored: DatasetTables, add: Addition) -> DatasetTables:
    """``stored`` with an addition's rows in it, new keys numbered after the stored ones (no store involved)."""
    t = add.tables
    prompt_base = 0 if stored.prompts is None or stored.prompts.empty else int(stored.prompts["prompt_key"].max()) + 1
    battle_base = 0 if stored.battles.empty else int(stored.battles["battle_key"].max()) + 1

    def prompt_keys(keys: pd.Series) -> pd.Series:
        return keys.where(keys.isna() | (keys >= 0), prompt_base - 1 - keys).astype("Int64")

    def battle_keys(keys: pd.Series) -> pd.Series:
        return keys.where(keys >= 0, battle_base - 1 - keys).astype(np.int64)

    def cat(a: pd.DataFrame | None, b: pd.DataFrame | None) -> pd.DataFrame | None:
        frames = [f for f in (a, b) if f is not None and len(f)]
        if not frames:
            return a if a is not None else b
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)

    prompts = None if t.prompts is None else t.prompts.assign(prompt_key=prompt_keys(t.prompts["prompt_key"]))
    attributes = (
        None
        if t.prompt_attributes is None
        else t.prompt_attributes.assign(prompt_key=prompt_keys(t.prompt_attributes["prompt_key"]))
    )
    completions = (
        None if t.completions is None else t.completions.assign(prompt_key=prompt_keys(t.completions["prompt_key"]))
    )
    battles = t.battles.assign(battle_key=battle_keys(t.battles["battle_key"]))
    if "prompt_key" in battles:
        battles["prompt_key"] = prompt_keys(battles["prompt_key"])
    votes = None if t.votes is None else t.votes.assign(battle_key=battle_keys(t.votes["battle_key"]))
    judgments = None if t.judgments is None else t.judgments.assign(battle_key=battle_keys(t.judgments["battle_key"]))
    grades = None if t.grades is None else t.grades.assign(prompt_key=prompt_keys(t.grades["prompt_key"]))
    judges = cat(stored.judges, t.judges)
    if judges is not None:
        judges = judges.drop_duplicates("judge").reset_index(drop=True)
    meta = dict(stored.meta)
    meta.setdefault("added", []).append(t.meta)
    models, all_battles = cat(stored.models, t.models), cat(stored.battles, battles)
    assert models is not None and all_battles is not None  # both tables always exist
    return DatasetTables(
        name=stored.name,
        source=stored.source,
        models=models.sort_values("model").reset_index(drop=True),
        battles=all_battles,
        prompts=cat(stored.prompts, prompts),
        prompt_attributes=cat(stored.prompt_attributes, attributes),
        completions=cat(stored.completions, completions),
        votes=cat(stored.votes, votes),
        annotators=cat(stored.annotators, t.annotators),
        judges=judges,
        judgments=cat(stored.judgments, judgments),
        grades=cat(stored.grades, grades),
        meta=meta,
    )


def _prompt_identity(row: dict) -> tuple:
    ext = row.get("external_id")
    turns = row.get("turns")
    return (None if is_missing(ext) else str(ext), row.get("text"), None if is_missing(turns) else turns)


def _prompts(stored: DatasetTables, new: DatasetTables) -> tuple[dict[int, int], pd.DataFrame | None]:
    """New prompt key → stored id (≥ 0) or new key (< 0), and the prompts to add."""
    if new.prompts is None or new.prompts.empty:
        return {}, None
    known: dict[tuple, int] = {}
    if stored.prompts is not None:
        for row in stored.prompts.to_dict("records"):
            known.setdefault(_prompt_identity(row), int(row["prompt_key"]))
    prompt_of: dict[int, int] = {}
    added: list[dict] = []
    for row in new.prompts.to_dict("records"):
        identity = _prompt_identity(row)
        if identity in known:
            prompt_of[int(row["prompt_key"])] = known[identity]
        else:
            key = -1 - len(added)
            prompt_of[int(row["prompt_key"])] = key
            known[identity] = key
            added.append({**row, "prompt_key": key})
    return prompt_of, pd.DataFrame(added, columns=new.prompts.columns)


def _completions(
    path: Path, stored: DatasetTables, new: DatasetTables, prompt_of: dict[int, int]
) -> tuple[pd.DataFrame | None, int]:
    if new.completions is None or new.completions.empty:
        return None, 0
    known: dict[tuple[int, str], str] = {}
    if stored.completions is not None:
        known = dict(
            zip(
                zip(stored.completions["prompt_key"].astype(int).tolist(), stored.completions["model"].tolist()),
                stored.completions["text"].tolist(),
            )
        )
    keep, skipped = [], 0
    comps = new.completions.assign(prompt_key=new.completions["prompt_key"].map(prompt_of))
    for i, (pk, model, text) in enumerate(zip(comps["prompt_key"], comps["model"], comps["text"])):
        if (int(pk), model) in known:
            if known[(int(pk), model)] != text:
                raise IngestError(
                    path,
                    f"{quote(model)}'s answer to prompt {int(pk)} differs from the answer the dataset already holds: "
                    f"{quote(text)}",
                    row=i + 1,
                    field="completion",
                )
            skipped += 1
        else:
            keep.append(i)
    return comps.iloc[keep].reset_index(drop=True), skipped


def _adds_by(source: str) -> str | None:
    """How files of format ``source`` add to a dataset: the format registry's ``adds_by``."""
    from core.ingest.formats import formats

    found = formats().get(source)
    return None if found is None else found.adds_by


def _battle_identity(adds_by: str | None, row: dict, prompt: int | None) -> tuple:
    if adds_by == "id":
        return ("id", None if is_missing(row.get("external_id")) else str(row["external_id"]))
    turn: Any = row.get("turn")
    pair = tuple(sorted((row["model_a"], row["model_b"])))
    return ("pair", prompt, pair, None if is_missing(turn) else int(turn))


def _battles(
    path: Path, stored: DatasetTables, new: DatasetTables, prompt_of: dict[int, int]
) -> tuple[dict[int, int], dict[int, bool], pd.DataFrame]:
    """New battle key → stored id or new key; which matched battles are named the other way round; battles to add."""
    by = _adds_by(stored.source)  # the same for the new file: can_add checked that both are of one format
    known: dict[tuple, tuple[int, str, str]] = {}
    for row in stored.battles.to_dict("records"):
        pk = None if is_missing(row.get("prompt_key")) else int(row["prompt_key"])
        known.setdefault(_battle_identity(by, row, pk), (int(row["battle_key"]), row["model_a"], row["model_b"]))
    battle_of: dict[int, int] = {}
    flipped: dict[int, bool] = {}
    added: list[dict] = []
    for i, row in enumerate(new.battles.to_dict("records"), start=1):
        pk = None if is_missing(row.get("prompt_key")) else prompt_of.get(int(row["prompt_key"]))
        identity = _battle_identity(by, row, pk)
        if identity[0] == "id" and identity[1] is None:
            raise IngestError(path, "a battle without an id cannot be matched to the dataset's", row=i, field="id")
        match = known.get(identity)
        if match is not None and match[0] >= 0:
            bid, ma, mb = match
            if {ma, mb} != {row["model_a"], row["model_b"]}:
                raise IngestError(
                    path,
                    f"battle {quote(identity[1])} is {quote(ma)} vs {quote(mb)} in the dataset and "
                    f"{quote(row['model_a'])} vs {quote(row['model_b'])} here",
                    row=i,
                    field="model_a",
                )
            battle_of[int(row["battle_key"])] = bid
            flipped[int(row["battle_key"])] = row["model_a"] != ma
            continue
        key = -1 - len(added)
        battle_of[int(row["battle_key"])] = key
        flipped[int(row["battle_key"])] = False
        known[identity] = (key, row["model_a"], row["model_b"])
        added.append({**row, "battle_key": key, "prompt_key": pk})
    columns = list(dict.fromkeys([*new.battles.columns, "prompt_key"]))
    battles = pd.DataFrame(added, columns=columns)
    if "prompt_key" in battles and battles["prompt_key"].isna().all() and "prompt_key" not in new.battles:
        battles = battles.drop(columns=["prompt_key"])
    return battle_of, flipped, battles


def _where(frame: pd.DataFrame, i: int) -> tuple[int | None, str]:
    """The file row of a frame's i-th row: the reader's own note when it kept one (``source_row``: a number, or
    text naming file and row in a multi-file import), else the position."""
    if "source_row" in frame.columns:
        note = frame["source_row"].iloc[i]
        if isinstance(note, (int, np.integer)):
            return int(note), ""
        if isinstance(note, str):
            return None, f" ({note})"
    return i + 1, ""


def _stored_battle(stored: DatasetTables, battle_id: int) -> str:
    """A stored battle as an error names it: its id and, when it has one, the external id it was imported with
    (LMArena's question_id; AlpacaEval's ``file:row`` of the record that made it)."""
    if "external_id" not in stored.battles:
        return f"battle {battle_id}"
    ext = stored.battles.loc[stored.battles["battle_key"] == battle_id, "external_id"]
    if len(ext) and not is_missing(ext.iloc[0]):
        return f"battle {battle_id} (imported from {quote(str(ext.iloc[0]))})"
    return f"battle {battle_id}"


def _votes(
    path: Path, stored: DatasetTables, new: DatasetTables, battle_of: dict[int, int], flipped: dict[int, bool]
) -> tuple[pd.DataFrame | None, int]:
    if new.votes is None or new.votes.empty:
        return None, 0
    votes = new.votes.copy()
    flip = votes["battle_key"].map(flipped).astype(bool)
    votes["battle_key"] = votes["battle_key"].map(battle_of).astype(np.int64)
    votes.loc[flip, "winner"] = votes.loc[flip, "winner"].map(lambda w: FLIP_WINNER.get(w, w))
    if "shown_order" in votes:
        votes.loc[flip, "shown_order"] = votes.loc[flip, "shown_order"].map(lambda o: FLIP_ORDER.get(o, o))
    known: dict[tuple[int, str | None], str] = {}
    if stored.votes is not None:
        for b, a, w in zip(stored.votes["battle_key"], stored.votes["annotator"], stored.votes["winner"]):
            known.setdefault((int(b), None if is_missing(a) else str(a)), w)
    keep, skipped = [], 0
    for i, (b, a, w) in enumerate(zip(votes["battle_key"], votes["annotator"], votes["winner"])):
        key = (int(b), None if is_missing(a) else str(a))
        if b >= 0 and key in known:
            if known[key] != w:
                row, note = _where(new.votes, i)
                raise IngestError(
                    path,
                    f"{'annotator ' + quote(key[1]) if key[1] else 'an anonymous vote'} says {quote(w)} on "
                    f"{_stored_battle(stored, int(b))}{note}, where the dataset already holds the vote "
                    f"{quote(known[key])}",
                    row=row,
                    field="winner",
                )
            skipped += 1
        else:
            keep.append(i)
    return votes.iloc[keep].reset_index(drop=True), skipped


def _flip_judgments(j: pd.DataFrame, flip: pd.Series) -> pd.DataFrame:
    j = j.copy()
    if not flip.any():
        return j
    j.loc[flip, "verdict"] = j.loc[flip, "verdict"].map(lambda v: FLIP_WINNER.get(v, v))
    j.loc[flip, "order"] = j.loc[flip, "order"].map(lambda o: FLIP_ORDER.get(o, o))
    if "p_a" in j:
        j.loc[flip, "p_a"] = 1.0 - j.loc[flip, "p_a"]
    if "grade" in j:
        j.loc[flip, "grade"] = -j.loc[flip, "grade"]
    for a in (c for c in SCORE_COLUMNS if c.startswith("a_")):
        b = "b_" + a[2:]
        if a in j and b in j:
            # a copy: to_numpy() can be a view of the block being written, which would swap a with itself
            j.loc[flip, [a, b]] = j.loc[flip, [b, a]].to_numpy().copy()
    return j


def _judgments(
    path: Path, stored: DatasetTables, new: DatasetTables, battle_of: dict[int, int], flipped: dict[int, bool]
) -> tuple[pd.DataFrame | None, int]:
    if new.judgments is None or new.judgments.empty:
        return None, 0
    flip = new.judgments["battle_key"].map(flipped).astype(bool)
    j = _flip_judgments(new.judgments, flip)
    j["battle_key"] = j["battle_key"].map(battle_of).astype(np.int64)

    def key(frame: pd.DataFrame, i: int) -> tuple:
        pv = frame["prompt_version"].iloc[i] if "prompt_version" in frame else None
        variant = frame["variant"].iloc[i] if "variant" in frame else None
        return (
            int(frame["battle_key"].iloc[i]),
            frame["judge"].iloc[i],
            frame["order"].iloc[i],
            "imported" if is_missing(pv) else pv,
            "original" if is_missing(variant) else variant,
        )

    def outcome(frame: pd.DataFrame, i: int) -> tuple:
        v = frame["verdict"].iloc[i] if "verdict" in frame else None
        p: Any = frame["p_a"].iloc[i] if "p_a" in frame else None
        return (None if is_missing(v) else v, None if is_missing(p) else round(float(p), 9))

    known: dict[tuple, tuple] = {}
    if stored.judgments is not None:
        for i in range(len(stored.judgments)):
            known.setdefault(key(stored.judgments, i), outcome(stored.judgments, i))
    keep, skipped = [], 0
    for i in range(len(j)):
        k = key(j, i)
        if k[0] >= 0 and k in known:
            if known[k] != outcome(j, i):
                row, note = _where(new.judgments, i)
                raise IngestError(
                    path,
                    f"judge {quote(k[1])}'s judgment of {_stored_battle(stored, k[0])} in order {k[2]} is "
                    f"{quote(outcome(j, i))} "
                    f"here{note} and {quote(known[k])} in the dataset",
                    row=row,
                    field="verdict",
                )
            skipped += 1
        else:
            keep.append(i)
            known[k] = outcome(j, i)
    return j.iloc[keep].reset_index(drop=True), skipped


def _grades(
    path: Path, stored: DatasetTables, new: DatasetTables, prompt_of: dict[int, int]
) -> tuple[pd.DataFrame | None, int]:
    """The single-answer grades to add: one already stored (same prompt, model, judge and run) with the same
    score is counted and skipped; with another score it is an error."""
    if new.grades is None or new.grades.empty:
        return None, 0
    g = new.grades.assign(prompt_key=new.grades["prompt_key"].map(prompt_of))

    def key(frame: pd.DataFrame, i: int) -> tuple:
        run: Any = frame["run"].iloc[i] if "run" in frame else None
        return (
            int(frame["prompt_key"].iloc[i]),
            frame["model"].iloc[i],
            frame["judge"].iloc[i],
            1 if is_missing(run) else int(run),
        )

    def score(frame: pd.DataFrame, i: int) -> float | None:
        v: Any = frame["score"].iloc[i] if "score" in frame else None
        return None if is_missing(v) else round(float(v), 9)

    known: dict[tuple, float | None] = {}
    if stored.grades is not None:
        for i in range(len(stored.grades)):
            known.setdefault(key(stored.grades, i), score(stored.grades, i))
    keep, skipped = [], 0
    for i in range(len(g)):
        k = key(g, i)
        if k[0] >= 0 and k in known:
            if known[k] != score(g, i):
                raise IngestError(
                    path,
                    f"judge {quote(k[2])} grades {quote(k[1])}'s answer to prompt {k[0]} {quote(score(g, i))} here "
                    f"and {quote(known[k])} in the dataset",
                    row=i + 1,
                    field="score",
                )
            skipped += 1
        else:
            keep.append(i)
            known[k] = score(g, i)
    return g.iloc[keep].reset_index(drop=True), skipped
