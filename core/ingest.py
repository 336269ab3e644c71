"""Importers: files in, validated :class:`DatasetTables` out, one transaction.

Every importer reads and validates the whole input before anything is
written; the first problem raises :class:`IngestError` naming the file, the
row (1-based data row; CSV line = row + 1) and the field.  Writing is one
store transaction, so a failure leaves the store unchanged.  Re-importing
content already imported (same SHA-256) changes nothing and says so.

Formats
-------
``softelo``    SoftElo annotation CSV (model_a, model_b, human_pref, judge_pref,
               scores_a, scores_b[, meta_lang, battle_id/row_id]).
``lmarena``    LMArena battles (Parquet, CSV or JSONL) with model_a, model_b, winner.
``contests``   judge contests CSV: judge, first, second, question_id, winner.
``arena-hard`` an Arena-Hard directory: question.jsonl + model_answer/*.jsonl.
"""

from __future__ import annotations

import ast
import hashlib
import io
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.tables import CRITERIA, DatasetTables
from core.textstats import style_counts

FORMATS = ("softelo", "lmarena", "contests", "arena-hard")
LMARENA_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad", "both_bad": "both_bad"}
SCORE_RANGE = (0.0, 10.0)


class IngestError(ValueError):
    """Invalid input; the message names file, row and field."""

    def __init__(self, path: str | Path, message: str, row: int | None = None, field: str | None = None):
        self.path, self.row, self.field = str(path), row, field
        where = [f"{self.path}"]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}. Nothing was imported.")


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    status: str  # 'imported' or 'already-imported'
    n_battles: int
    n_votes: int
    n_judgments: int
    n_completions: int


# ----------------------------------------------------------------- helpers
def content_hash(path: str | Path) -> str:
    """SHA-256 of a file, or of a directory's files (relative paths + bytes)."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            h.update(str(f.relative_to(p)).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _read_text(path: Path) -> str:
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if path.is_dir():
        raise IngestError(path, "expected a file, got a directory")
    data = path.read_bytes()
    if not data.strip():
        raise IngestError(path, "the file is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(path, f"not valid UTF-8 (byte {exc.start}, line {line})", field=None) from None


def _read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    text = _read_text(path)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[])
    except pd.errors.ParserError as exc:
        raise IngestError(path, f"malformed CSV ({exc})") from None
    except pd.errors.EmptyDataError:
        raise IngestError(path, "the file has no header") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise IngestError(path, f"missing required column(s) {missing}; found {list(df.columns)}", field=missing[0])
    if df.empty:
        raise IngestError(path, "the file has a header but no rows")
    return df


def _require_names(path: Path, df: pd.DataFrame, cols: tuple[str, ...]) -> None:
    for col in cols:
        values = df[col].astype(str).str.strip()
        bad = np.flatnonzero((values == "") | df[col].isna().to_numpy())
        if len(bad):
            raise IngestError(path, "empty model name", row=int(bad[0]) + 1, field=col)
        df[col] = values


def _float_column(path: Path, df: pd.DataFrame, col: str, lo: float, hi: float) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < lo) | (values > hi))
    if len(bad):
        r = int(bad[0])
        raise IngestError(path, f"expected a number in [{lo}, {hi}], got {df[col].iloc[r]!r}", row=r + 1, field=col)
    return values


def _parse_scores(path: Path, raw: str, row: int, field: str) -> dict[str, float]:
    text = str(raw).strip()
    if not text:
        raise IngestError(path, "empty score dictionary", row=row, field=field)
    obj: Any
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        try:
            obj = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise IngestError(path, f"unparseable score dictionary {text[:60]!r}", row=row, field=field) from None
    if not isinstance(obj, dict) or not obj:
        raise IngestError(path, f"expected a dictionary of criterion scores, got {text[:60]!r}", row=row, field=field)
    out = {}
    for k, v in obj.items():
        key = str(k).strip().lower()
        if key not in CRITERIA:
            raise IngestError(path, f"unknown criterion {k!r} (expected {', '.join(CRITERIA)})", row=row, field=field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise IngestError(path, f"criterion {key!r} has non-numeric score {v!r}", row=row, field=field)
        if not SCORE_RANGE[0] <= v <= SCORE_RANGE[1]:
            raise IngestError(path, f"criterion {key!r} score {v} outside {SCORE_RANGE}", row=row, field=field)
        out[key] = float(v)
    return out


def preference_to_target(p: np.ndarray) -> np.ndarray:
    """SoftElo preference (0 = a wins, 1 = b wins, 0.5 = tie) -> P(a wins) (METHODS §2)."""
    p = np.asarray(p, dtype=float)
    return np.where(np.abs(p - 0.5) <= 0.05, 0.5, np.where(p < 0.5, 1.0, 0.0))


def _winner_from_target(y: np.ndarray) -> np.ndarray:
    return np.where(y == 1.0, "a", np.where(y == 0.0, "b", "tie"))


def _models_frame(names) -> pd.DataFrame:
    names = sorted(set(names))
    return pd.DataFrame({"model": names, "family": [_guess_family(n) for n in names]})


def _guess_family(name: str) -> str:
    """Provider family from a model name (used for self-preference); 'other' if unknown."""
    n = name.lower()
    for key, fam in (("gpt", "openai"), ("chatgpt", "openai"), ("o1", "openai"), ("claude", "anthropic"),
                     ("gemini", "google"), ("gemma", "google"), ("palm", "google"), ("llama", "meta"),
                     ("mistral", "mistral"), ("mixtral", "mistral"), ("qwen", "qwen"), ("phi", "microsoft"),
                     ("yi-", "01-ai"), ("deepseek", "deepseek"), ("command", "cohere"), ("vicuna", "lmsys"),
                     ("rwkv", "rwkv"), ("glm", "zhipu"), ("athene", "nexusflow"), ("reka", "reka"),
                     ("grok", "xai"), ("nemotron", "nvidia"), ("jamba", "ai21"), ("wizard", "microsoft"),
                     ("alpaca", "stanford"), ("koala", "berkeley"), ("dolly", "databricks"), ("dbrx", "databricks"),
                     ("starling", "nexusflow"), ("openchat", "openchat"), ("zephyr", "huggingface"),
                     ("tulu", "allenai"), ("olmo", "allenai"), ("falcon", "tii"), ("mpt", "mosaic"),
                     ("stablelm", "stability"), ("chatglm", "zhipu"), ("guanaco", "uw"), ("oasst", "laion"),
                     ("fastchat", "lmsys"), ("solar", "upstage")):
        if key in n:
            return fam
    return "other"


# ------------------------------------------------------------------ softelo
def read_softelo(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    df = _read_csv(path, ("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b"))
    _require_names(path, df, ("model_a", "model_b"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    human = preference_to_target(_float_column(path, df, "human_pref", 0.0, 1.0))
    judge_y = preference_to_target(_float_column(path, df, "judge_pref", 0.0, 1.0))
    scores = {}
    for side in ("a", "b"):
        field = f"scores_{side}"
        parsed = [_parse_scores(path, raw, i + 1, field) for i, raw in enumerate(df[field].tolist())]
        for c in CRITERIA:
            scores[f"{side}_{c}"] = np.array([d.get(c, np.nan) for d in parsed], dtype=float)
    id_col = "battle_id" if "battle_id" in df.columns else ("row_id" if "row_id" in df.columns else None)
    ext = df[id_col].astype(str).to_numpy() if id_col else np.array([str(i) for i in range(len(df))])
    dup = pd.Series(ext).duplicated()
    if id_col and dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise IngestError(path, f"duplicate battle id {ext[r]!r}", row=r + 1, field=id_col)
    n = len(df)
    keys = np.arange(n, dtype=np.int64)
    lang = df["meta_lang"].replace("", None).to_numpy(dtype=object) if "meta_lang" in df.columns else [None] * n
    battles = pd.DataFrame({"battle_key": keys, "model_a": df["model_a"], "model_b": df["model_b"],
                            "external_id": ext, "language": lang})
    votes = pd.DataFrame({"battle_key": keys, "winner": _winner_from_target(human), "annotator": None})
    judge_name = judge or "softelo-judge"
    judgments = pd.DataFrame({"battle_key": keys, "judge": judge_name, "order": "avg",
                              "prompt_version": "imported", "verdict": _winner_from_target(judge_y), **scores})
    judges = pd.DataFrame({"judge": [judge_name], "template": ["rubric"], "prompt_version": ["imported"],
                           "profile": ["imported from a SoftElo annotation file (order unknown / averaged)"]})
    return DatasetTables(
        name=dataset or path.stem, source="softelo", models=_models_frame(pd.concat([df.model_a, df.model_b])),
        battles=battles, votes=votes, judges=judges, judgments=judgments,
        meta={"format": "softelo", "file": path.name, "rows": n},
    )


def read_softelo_frame(path: str | Path) -> pd.DataFrame:
    """A SoftElo CSV as a battle frame (the shape of ``Store.battle_frame``).

    Columns: battle_id, model_a, model_b, human_y, judge_hard, gap, language.
    Validation is the importer's, so bad files fail the same way.
    """
    t = read_softelo(path)
    j = t.judgments
    diffs = np.stack([j[f"a_{c}"].to_numpy() - j[f"b_{c}"].to_numpy() for c in CRITERIA], axis=1)
    with np.errstate(invalid="ignore"):
        gap = np.nanmean(np.where(np.isnan(diffs), np.nan, diffs), axis=1)
    y = {"a": 1.0, "b": 0.0, "tie": 0.5}
    return pd.DataFrame({
        "battle_id": t.battles["external_id"].to_numpy(),
        "model_a": t.battles["model_a"].to_numpy(),
        "model_b": t.battles["model_b"].to_numpy(),
        "human_y": t.votes["winner"].map(y).to_numpy(dtype=float),
        "judge_hard": j["verdict"].map(y).to_numpy(dtype=float),
        "gap": gap,
        "language": t.battles["language"].to_numpy(),
    })


# ------------------------------------------------------------------ lmarena
def _read_table_file(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        if path.stat().st_size == 0:
            raise IngestError(path, "the file is empty")
        try:
            return pq.read_table(path).to_pandas()
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise IngestError(path, f"unreadable Parquet file ({type(exc).__name__}: {str(exc)[:120]})") from None
    if suffix in (".jsonl", ".ndjson", ".json"):
        return pd.DataFrame(_read_jsonl(path))
    if suffix in (".csv", ".tsv"):
        text = _read_text(path)
        try:
            return pd.read_csv(io.StringIO(text), sep="\t" if suffix == ".tsv" else ",", dtype=str,
                               keep_default_na=False)
        except pd.errors.ParserError as exc:
            raise IngestError(path, f"malformed CSV ({exc})") from None
    raise IngestError(path, f"unknown file type {suffix!r}: expected .parquet, .csv or .jsonl")


def _last_assistant_text(conv: Any) -> str | None:
    if conv is None or (isinstance(conv, float) and math.isnan(conv)):
        return None
    if isinstance(conv, str):
        if not conv.strip():
            return None
        conv = json.loads(conv)
    msgs = list(conv)
    for m in reversed(msgs):
        m = dict(m)
        if m.get("role") == "assistant":
            content = m.get("content")
            if isinstance(content, dict):
                content = content.get("answer", json.dumps(content))
            return None if content is None else str(content)
    return None


def _first_user_text(conv: Any) -> str | None:
    if conv is None or (isinstance(conv, float) and math.isnan(conv)):
        return None
    if isinstance(conv, str):
        conv = json.loads(conv) if conv.strip() else []
    for m in list(conv):
        m = dict(m)
        if m.get("role") == "user":
            return str(m.get("content"))
    return None


def read_lmarena(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    path = Path(path)
    df = _read_table_file(path)
    df.columns = [str(c).strip() for c in df.columns]
    for col in ("model_a", "model_b", "winner"):
        if col not in df.columns:
            raise IngestError(path, f"missing required column {col!r}; found {list(df.columns)}", field=col)
    if df.empty:
        raise IngestError(path, "the file has no rows")
    _require_names(path, df, ("model_a", "model_b"))
    same = np.flatnonzero(df["model_a"].to_numpy() == df["model_b"].to_numpy())
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="model_b")
    winners = df["winner"].astype(str).str.strip().str.lower()
    mapped = winners.map(LMARENA_WINNERS)
    bad = np.flatnonzero(mapped.isna().to_numpy())
    if len(bad):
        r = int(bad[0])
        raise IngestError(path, f"unknown winner {df['winner'].iloc[r]!r} (expected one of {sorted(LMARENA_WINNERS)})",
                          row=r + 1, field="winner")
    n = len(df)
    keys = np.arange(n, dtype=np.int64)

    def optional(col, cast=None):
        if col not in df.columns:
            return [None] * n
        s = df[col].replace("", None)
        return s.map(cast, na_action="ignore").to_numpy(dtype=object) if cast else s.to_numpy(dtype=object)

    def _num(col, kind):
        if col not in df.columns:
            return None
        vals = pd.to_numeric(df[col].replace("", None), errors="coerce")
        bad = np.flatnonzero(vals.isna().to_numpy() & df[col].replace("", None).notna().to_numpy())
        if len(bad):
            r = int(bad[0])
            raise IngestError(path, f"expected a {kind}, got {df[col].iloc[r]!r}", row=r + 1, field=col)
        return vals.to_numpy()

    turn, tstamp = _num("turn", "whole number"), _num("tstamp", "number")
    ext = optional("question_id", str)
    battles = pd.DataFrame({
        "battle_key": keys, "model_a": df["model_a"].to_numpy(), "model_b": df["model_b"].to_numpy(),
        "external_id": ext, "language": optional("language", str),
        "turn": turn if turn is not None else [None] * n, "tstamp": tstamp if tstamp is not None else [None] * n,
    })
    annot = optional("judge", str)
    votes = pd.DataFrame({"battle_key": keys, "winner": mapped.to_numpy(), "annotator": annot})
    prompts = completions = None
    if "conversation_a" in df.columns and "conversation_b" in df.columns:
        texts_a, texts_b, ptext = [], [], []
        for i, (ca, cb) in enumerate(zip(df["conversation_a"].tolist(), df["conversation_b"].tolist())):
            try:
                texts_a.append(_last_assistant_text(ca))
                texts_b.append(_last_assistant_text(cb))
                ptext.append(_first_user_text(ca))
            except (json.JSONDecodeError, TypeError, ValueError):
                raise IngestError(path, "conversation is not a list of {role, content} messages",
                                  row=i + 1, field="conversation_a") from None
        # Each battle gets its own prompt: the same question id can carry
        # different conversations (multi-turn), so completions are per battle.
        prompts = pd.DataFrame({"prompt_key": keys, "external_id": ext, "text": ptext,
                                "language": battles["language"]})
        comp = pd.DataFrame({
            "prompt_key": np.concatenate([keys, keys]),
            "model": np.concatenate([battles.model_a.to_numpy(), battles.model_b.to_numpy()]),
            "text": texts_a + texts_b,
        })
        completions = _with_style(comp)
        battles["prompt_key"] = keys
    return DatasetTables(
        name=dataset or path.stem, source="lmarena",
        models=_models_frame(pd.concat([df.model_a, df.model_b])), battles=battles, votes=votes,
        prompts=prompts, completions=completions, meta={"format": "lmarena", "file": path.name, "rows": n},
    )


def _with_style(comp: pd.DataFrame) -> pd.DataFrame:
    counts = [style_counts(t) for t in comp["text"].tolist()]
    comp = comp.copy()
    comp["length"] = [c.length if c else None for c in counts]
    comp["n_headers"] = [c.n_headers if c else None for c in counts]
    comp["n_bold"] = [c.n_bold if c else None for c in counts]
    comp["n_list_items"] = [c.n_list_items if c else None for c in counts]
    return comp


# ----------------------------------------------------------------- contests
def read_contests(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """Judge contests: one battle per (question, unordered pair), judgments keep the order shown."""
    path = Path(path)
    df = _read_csv(path, ("judge", "first", "second", "question_id", "winner"))
    _require_names(path, df, ("judge", "first", "second"))
    qid = df["question_id"].astype(str).str.strip()
    empty = np.flatnonzero((qid == "").to_numpy())
    if len(empty):
        raise IngestError(path, "empty question id", row=int(empty[0]) + 1, field="question_id")
    first, second = df["first"].to_numpy(), df["second"].to_numpy()
    same = np.flatnonzero(first == second)
    if len(same):
        raise IngestError(path, "a model cannot battle itself", row=int(same[0]) + 1, field="second")
    winner = df["winner"].astype(str).str.strip().to_numpy()
    is_tie = np.char.lower(winner.astype(str)) == "tie"
    ok = is_tie | (winner == first) | (winner == second)
    bad = np.flatnonzero(~ok)
    if len(bad):
        r = int(bad[0])
        raise IngestError(path, f"winner {winner[r]!r} is neither contestant ({first[r]!r}, {second[r]!r}) nor 'Tie'",
                          row=r + 1, field="winner")
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    key_frame = pd.DataFrame({"q": qid.to_numpy(), "lo": lo, "hi": hi})
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(key_frame))
    # model_a of a battle = the model shown first in its first occurrence.
    first_row = pd.Series(np.arange(len(df))).groupby(codes).min().to_numpy()
    model_a, model_b = first[first_row], second[first_row]
    battles = pd.DataFrame({"battle_key": np.arange(len(first_row), dtype=np.int64), "model_a": model_a,
                            "model_b": model_b, "external_id": qid.to_numpy()[first_row]})
    order = np.where(first == model_a[codes], "ab", "ba")
    verdict = np.where(is_tie, "tie", np.where(winner == model_a[codes], "a", "b"))
    judgments = pd.DataFrame({"battle_key": codes.astype(np.int64), "judge": df["judge"].to_numpy(), "order": order,
                              "prompt_version": "imported", "verdict": verdict})
    dup = judgments.duplicated(["battle_key", "judge", "order"])
    if dup.any():
        r = int(np.flatnonzero(dup.to_numpy())[0])
        raise IngestError(path, "the same judge judged the same contest in the same order twice", row=r + 1,
                          field="judge")
    judges = pd.DataFrame({"judge": sorted(set(df["judge"])), "prompt_version": "imported",
                           "template": "two-stage"})
    judges["family"] = [_guess_family(j) for j in judges["judge"]]
    return DatasetTables(
        name=dataset or path.stem, source="contests",
        models=_models_frame(np.concatenate([first, second])), battles=battles, judges=judges,
        judgments=judgments, meta={"format": "contests", "file": path.name, "rows": len(df)},
    )


# --------------------------------------------------------------- arena-hard
def _read_jsonl(path: Path) -> list[dict]:
    text = _read_text(path)
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(path, f"invalid JSON ({exc.msg})", row=i) from None
        if not isinstance(obj, dict):
            raise IngestError(path, "each line must be a JSON object", row=i)
        out.append(obj)
    if not out:
        raise IngestError(path, "the file has no records")
    return out


def read_arena_hard(path: str | Path, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    """Prompts, real completions, and one unjudged battle per prompt and model pair."""
    root = Path(path)
    qfile, adir = root / "question.jsonl", root / "model_answer"
    if not root.is_dir():
        raise IngestError(root, "expected an Arena-Hard directory (question.jsonl, model_answer/)")
    if not qfile.exists():
        raise IngestError(qfile, "missing question.jsonl")
    if not adir.is_dir() or not any(adir.glob("*.jsonl")):
        raise IngestError(adir, "missing model_answer/*.jsonl")
    questions = _read_jsonl(qfile)
    prompts, uid_key = [], {}
    for i, q in enumerate(questions, start=1):
        uid = q.get("uid", q.get("question_id"))
        if uid is None or str(uid) == "":
            raise IngestError(qfile, "missing uid", row=i, field="uid")
        text = q.get("prompt")
        if text is None and isinstance(q.get("turns"), list) and q["turns"]:
            text = q["turns"][0].get("content")
        if not isinstance(text, str) or not text:
            raise IngestError(qfile, "missing prompt text", row=i, field="prompt")
        if str(uid) in uid_key:
            raise IngestError(qfile, f"duplicate uid {uid!r}", row=i, field="uid")
        uid_key[str(uid)] = len(prompts)
        prompts.append({"prompt_key": len(prompts), "external_id": str(uid), "text": text,
                        "category": q.get("cluster") or q.get("category"), "language": "en"})
    comps = []
    for f in sorted(adir.glob("*.jsonl")):
        for i, rec in enumerate(_read_jsonl(f), start=1):
            uid = str(rec.get("uid", rec.get("question_id", "")))
            if uid not in uid_key:
                raise IngestError(f, f"answer to unknown question uid {uid!r}", row=i, field="uid")
            model = rec.get("model") or f.stem
            try:
                msgs = rec["messages"]
                answer = msgs[-1]["content"]
                if isinstance(answer, dict):
                    answer = answer["answer"]
            except (KeyError, IndexError, TypeError):
                raise IngestError(f, "no answer text at messages[1].content.answer", row=i, field="messages") from None
            if not isinstance(answer, str):
                raise IngestError(f, "answer text is not a string", row=i, field="messages")
            comps.append({"prompt_key": uid_key[uid], "model": str(model), "text": answer})
    completions = pd.DataFrame(comps)
    dup = completions.duplicated(["prompt_key", "model"])
    if dup.any():
        r = completions[dup].iloc[0]
        raise IngestError(adir, f"model {r.model!r} answered question {prompts[r.prompt_key]['external_id']!r} twice",
                          field="uid")
    completions = _with_style(completions)
    battles = []
    for pk, grp in completions.groupby("prompt_key", sort=True):
        for ma, mb in itertools.combinations(sorted(grp["model"]), 2):
            battles.append({"prompt_key": pk, "model_a": ma, "model_b": mb,
                            "external_id": prompts[pk]["external_id"], "language": "en"})
    battles_df = pd.DataFrame(battles)
    battles_df.insert(0, "battle_key", np.arange(len(battles_df), dtype=np.int64))
    return DatasetTables(
        name=dataset or root.name, source="arena-hard", models=_models_frame(completions["model"]),
        battles=battles_df, prompts=pd.DataFrame(prompts), completions=completions,
        meta={"format": "arena-hard", "dir": root.name},
    )


READERS = {"softelo": read_softelo, "lmarena": read_lmarena, "contests": read_contests,
           "arena-hard": read_arena_hard}


def load(path: str | Path, fmt: str, dataset: str | None = None, judge: str | None = None) -> DatasetTables:
    if fmt not in READERS:
        raise IngestError(path, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return READERS[fmt](path, dataset=dataset, judge=judge)


def import_path(store, path: str | Path, fmt: str, dataset: str | None = None,
                judge: str | None = None) -> ImportResult:
    """Validate ``path`` fully, then write it in one transaction.

    Content already imported (same hash) is not written again: the result's
    status is ``'already-imported'`` and names the existing dataset.
    """
    from core.store import StoreError

    path = Path(path)
    if not path.exists():
        raise IngestError(path, "file does not exist")
    digest = content_hash(path)
    previous = store.import_record(digest)
    if previous is not None:
        return ImportResult(previous, "already-imported", 0, 0, 0, 0)
    tables = load(path, fmt, dataset=dataset, judge=judge)
    existing = set(store.datasets()["name"])
    if tables.name in existing:
        raise IngestError(path, f"a dataset named {tables.name!r} already exists with other content; "
                                "choose another name with --dataset")
    try:
        store.write_dataset(tables, content_hash=digest, fmt=fmt, source_path=str(path))
    except StoreError as exc:
        raise IngestError(path, str(exc)) from None
    count = lambda df: 0 if df is None else len(df)  # noqa: E731
    return ImportResult(tables.name, "imported", len(tables.battles), count(tables.votes),
                        count(tables.judgments), count(tables.completions))
