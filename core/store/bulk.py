"""Bulk imports in SQL: a battle or judgment file validated and written by DuckDB, no Python row loops.

An LMArena Parquet file of millions of rows is validated in one scan (each
rule a ``min(row) FILTER (WHERE …)``: the first rule broken, at its first
row, is the error a row-by-row validator would raise first) and written by
``INSERT … SELECT`` from the file in one transaction.  The rules themselves
(which values are valid, what the messages say) belong to the importer
(``core.ingest``); this module runs them as SQL.

Python's ``str.strip`` removes every character for which ``str.isspace`` is
true, not only ASCII blanks; :data:`PY_WHITESPACE` is that set, so a name
stripped here equals the one the row-by-row importer stores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from core.store.base import StoreBase, json_default, next_id, registered
from core.store.errors import StoreError

PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WS_LITERAL = "'" + PY_WHITESPACE + "'"

INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
)
NUMBER_TYPES = INTEGER_TYPES | {"FLOAT", "DOUBLE"}


def py_strip(expr: str) -> str:
    """SQL for Python's ``expr.strip()``."""
    # Most values have no whitespace at either end: test the end characters before trimming.
    ends = f"contains({_WS_LITERAL}, left({expr}, 1)) OR contains({_WS_LITERAL}, right({expr}, 1))"
    return f"(CASE WHEN {ends} THEN trim({expr}, {_WS_LITERAL}) ELSE {expr} END)"


def py_blank(expr: str) -> str:
    """SQL: ``expr`` is NULL or only whitespace (Python's ``not expr.strip()``)."""
    return f"({expr} IS NULL OR (contains({_WS_LITERAL}, left({expr}, 1)) AND trim({expr}, {_WS_LITERAL}) = ''))"


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Rule:
    """One validation rule: rows where ``violated`` (SQL over the file's columns) is true break it."""

    field: str
    violated: str
    kind: str  # the importer's name for the rule: it says what is wrong
    # The few-valued columns (SQL identifiers) the rule reads, when that is all it reads: it is checked once
    # per distinct combination of them (with its first row) instead of once per row.  Empty: a per-row rule.
    reads: tuple[str, ...] = ()


class BulkRowError(StoreError):
    """A row of a bulk file that the store refuses (unknown battle, judgment already stored)."""

    def __init__(self, message: str, row: int, field: str):
        super().__init__(message)
        self.row, self.field = row, field


@dataclass
class ParquetFile:
    """A Parquet file open in a private DuckDB connection as the view ``f`` with a 1-based ``row_nr``."""

    path: Path
    con: duckdb.DuckDBPyConnection = field(init=False)
    types: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.con = duckdb.connect()
        try:
            self.con.execute(
                f"CREATE TEMP VIEW f AS SELECT *, file_row_number + 1 AS row_nr "
                f"FROM read_parquet({sql_text(str(self.path))}, file_row_number = true)"
            )
            self.types = {str(r[0]): str(r[1]) for r in self.con.execute("DESCRIBE f").fetchall()}
        except duckdb.Error as exc:
            self.con.close()
            raise StoreError(f"{self.path}: unreadable Parquet file ({str(exc).splitlines()[0][:160]})") from None
        self.types.pop("row_nr", None)
        self.types.pop("file_row_number", None)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def n_rows(self) -> int:
        row = self.con.execute("SELECT count(*) FROM f").fetchone()
        return int(row[0]) if row else 0

    def first_violation(self, rules: Sequence[Rule]) -> tuple[Rule, int, object] | None:
        """The first rule (in order) that some row breaks, its first row and that row's value of the field.

        One scan evaluates the per-row rules; the rules that read only a few
        columns run over the distinct combinations of those columns, each
        with its first row, which gives the same answer.  All such
        combinations come from one more scan (a grouping set per distinct
        ``reads``): grouping by each rule's own columns keeps the groups few
        (a model name column has hundreds of values, the triple of both names
        and the winner hundreds of thousands).
        """
        firsts: dict[int, int | None] = {}
        plain = [k for k, r in enumerate(rules) if not r.reads]
        if plain:
            mins = ", ".join(f"min(row_nr) FILTER (WHERE {rules[k].violated})" for k in plain)
            row = self.con.execute(f"SELECT {mins} FROM f").fetchone()
            assert row is not None
            firsts.update(zip(plain, row))
        grouped = [k for k, r in enumerate(rules) if r.reads]
        if grouped:
            sets = list(dict.fromkeys(rules[k].reads for k in grouped))
            cols = list(dict.fromkeys(c for reads in sets for c in reads))

            def grouping_id(reads: tuple[str, ...]) -> int:
                # GROUPING(cols…) sets the bit of each column the set leaves out, the first column highest
                return sum(1 << (len(cols) - 1 - i) for i, c in enumerate(cols) if c not in reads)

            mins = ", ".join(
                f"min(row_nr) FILTER (WHERE gid = {grouping_id(rules[k].reads)} AND ({rules[k].violated}))"
                for k in grouped
            )
            listed = ", ".join(cols)
            grouping_sets = ", ".join("(" + ", ".join(reads) + ")" for reads in sets)
            row = self.con.execute(
                f"SELECT {mins} FROM (SELECT {listed}, GROUPING({listed}) AS gid, min(row_nr) AS row_nr "
                f"FROM f GROUP BY GROUPING SETS ({grouping_sets}))"
            ).fetchone()
            assert row is not None
            firsts.update(zip(grouped, row))
        for k, rule in enumerate(rules):
            first = firsts[k]
            if first is not None:
                value_row = self.con.execute(f'SELECT "{rule.field}" FROM f WHERE row_nr = ?', [int(first)]).fetchone()
                return rule, int(first), None if value_row is None else value_row[0]
        return None

    def first_repeated(self, keys: Sequence[str]) -> int | None:
        """The first row whose ``keys`` (SQL expressions) repeat an earlier row's, or None."""
        k = ", ".join(keys)
        row = self.con.execute(f"SELECT count(*) FROM (SELECT {k} FROM f GROUP BY ALL HAVING count(*) > 1)").fetchone()
        if not row or not row[0]:
            return None  # the usual case: one aggregate, no window
        first = self.con.execute(
            f"SELECT min(row_nr) FROM (SELECT row_nr, row_number() OVER (PARTITION BY {k} ORDER BY row_nr) AS k "
            "FROM f) WHERE k > 1"
        ).fetchone()
        return None if first is None or first[0] is None else int(first[0])

    def distinct_values(self, expr: str) -> list:
        return [r[0] for r in self.con.execute(f"SELECT DISTINCT {expr} FROM f").fetchall()]

    def model_names(self) -> list[str]:
        """The distinct model names (stripped) of a battle file's model_a and model_b."""
        sql = f"SELECT DISTINCT {py_strip('v')} FROM (SELECT model_a AS v FROM f UNION SELECT model_b FROM f)"
        return [str(r[0]) for r in self.con.execute(sql).fetchall()]


# --------------------------------------------------------- LMArena battles
_ARENA_TEXT_COLUMNS = ("model_a", "model_b", "winner", "judge", "language")


@dataclass(frozen=True)
class ArenaLimits:
    """The importer's limits the battle rules check."""

    winners: tuple[str, ...]  # accepted winner values (lower case, stripped)
    max_name: int
    max_text: int
    max_turn: int
    tstamp_range: tuple[float, float]


def plain_arena_types(types: dict[str, str]) -> bool:
    """Whether a battle file's columns have the types the SQL rules cover (else: the row-by-row reader)."""
    if "conversation_a" in types and "conversation_b" in types:
        return False
    ok = all(types.get(c, "VARCHAR") == "VARCHAR" for c in _ARENA_TEXT_COLUMNS)
    ok &= types.get("question_id", "VARCHAR") in INTEGER_TYPES | {"VARCHAR"}
    ok &= types.get("turn", "INTEGER") in INTEGER_TYPES
    return ok and types.get("tstamp", "DOUBLE") in NUMBER_TYPES


def arena_battle_rules(types: dict[str, str], limits: ArenaLimits) -> list[Rule]:
    """The row-by-row reader's checks in its order.

    Names, self-battles, winners, ids, language, turn, time stamp, annotator.
    """
    rules = [
        Rule(col, f"{py_blank(col)} OR length({col}) > {limits.max_name}", "name", reads=(col,))
        for col in ("model_a", "model_b")
    ]
    self_battle = f"{py_strip('model_a')} = {py_strip('model_b')}"
    rules.append(Rule("model_b", self_battle, "self_battle", reads=("model_a", "model_b")))
    known = ", ".join(sql_text(w) for w in limits.winners)
    rules.append(
        Rule("winner", f"winner IS NULL OR lower({py_strip('winner')}) NOT IN ({known})", "winner", reads=("winner",))
    )
    for col in ("question_id", "language"):
        if types.get(col) == "VARCHAR":
            rules.append(Rule(col, f"length({col}) > {limits.max_text}", "text_length"))
    if "turn" in types:
        rules.append(Rule("turn", f"turn < 1 OR turn > {limits.max_turn}", "turn"))
    if "tstamp" in types:
        lo, hi = limits.tstamp_range
        x = "CAST(tstamp AS DOUBLE)"
        rules.append(Rule("tstamp", f"NOT isnan({x}) AND (isinf({x}) OR {x} < {lo!r} OR {x} > {hi!r})", "tstamp"))
    if "judge" in types:
        rules.append(Rule("judge", f"length(judge) > {limits.max_text}", "text_length"))
    return rules


def arena_battle_columns(types: dict[str, str], winners: dict[str, str]) -> dict[str, str]:
    """The store's battle and vote columns as SQL over the file (the row-by-row reader's conversions).

    ``winners``: the file's winner value (lower case) → the stored outcome code.
    """

    def text(col: str) -> str:
        if col not in types:
            return "NULL"
        if types[col] != "VARCHAR":
            return f"CAST({col} AS VARCHAR)"
        return f"CASE WHEN {py_blank(col)} THEN NULL ELSE {col} END"

    cases = " ".join(f"WHEN {sql_text(k)} THEN {sql_text(v)}" for k, v in winners.items())
    tstamp = "CAST(tstamp AS DOUBLE)"
    return {
        "model_a": py_strip("model_a"),
        "model_b": py_strip("model_b"),
        # exact values first: the usual file needs no per-row lower() or strip
        "winner": f"CASE winner {cases} ELSE CASE lower({py_strip('winner')}) {cases} END END",
        "external_id": text("question_id"),
        "language": text("language"),
        "turn": "CAST(turn AS INTEGER)" if "turn" in types else "NULL",
        "tstamp": f"CASE WHEN isnan({tstamp}) THEN NULL ELSE {tstamp} END" if "tstamp" in types else "NULL",
        "annotator": text("judge"),
    }


@dataclass(frozen=True)
class BulkBattles:
    """A validated LMArena battle file and the SQL that turns its columns into the store's."""

    path: Path
    name: str
    meta: dict
    models: pd.DataFrame  # model, family
    columns: dict[str, str]  # battles/votes column → SQL over the file's columns (``f``)
    n_rows: int


@dataclass(frozen=True)
class BulkJudgments:
    """A validated judgment file for an existing dataset; ``columns`` as in :class:`BulkBattles`."""

    path: Path
    dataset: str
    key: str  # SQL over ``f``: the battle's external id the row refers to
    judges: pd.DataFrame  # judge, family, prompt_version, template
    columns: dict[str, str]
    n_rows: int


class BulkWrites(StoreBase):
    """Whole files written by ``INSERT … SELECT`` in one transaction."""

    def write_bulk_battles(self, plan: BulkBattles, *, content_hash: str, fmt: str) -> int:
        """Write a validated battle file as a new dataset (battles, one vote per battle, models); returns its id."""
        src = f"read_parquet({sql_text(str(plan.path))}, file_row_number = true)"
        c = plan.columns
        with self.transaction() as cur:
            if cur.execute("SELECT 1 FROM datasets WHERE name = ?", [plan.name]).fetchone():
                raise StoreError(f"dataset {plan.name!r} already exists in {self.path}")
            ds_id = next_id(cur, "datasets", "dataset_id")
            cur.execute(
                "INSERT INTO datasets (dataset_id, name, source, meta_json) VALUES (?, ?, ?, ?)",
                [ds_id, plan.name, "lmarena", json.dumps(plan.meta, default=json_default)],
            )
            cur.execute(
                "INSERT INTO imports (content_hash, dataset_id, format, path) VALUES (?, ?, ?, ?)",
                [content_hash, ds_id, fmt, str(plan.path)],
            )
            with registered(cur, "_models", plan.models[["model", "family"]]):
                cur.execute(
                    f"INSERT INTO models (dataset_id, model, family) SELECT {ds_id}, model, family FROM _models"
                )
            base = next_id(cur, "battles", "battle_id")
            cur.execute(
                f"""INSERT INTO battles (battle_id, dataset_id, battle_key, external_id, model_a, model_b,
                                         language, turn, tstamp)
                    SELECT {base} + file_row_number, {ds_id}, file_row_number, {c["external_id"]}, {c["model_a"]},
                           {c["model_b"]}, {c["language"]}, {c["turn"]}, {c["tstamp"]}
                    FROM {src}"""
            )
            cur.execute(
                f"""INSERT INTO votes (battle_id, annotator, winner)
                    SELECT {base} + file_row_number, {c["annotator"]}, {c["winner"]} FROM {src}"""
            )
        return ds_id

    def write_bulk_judgments(self, plan: BulkJudgments, *, content_hash: str, fmt: str) -> int:
        """Add a validated judgment file's judgments to an existing dataset; returns how many were written.

        Every row must name a battle of the dataset and no (battle, judge,
        order) may be stored already: both are checked inside the
        transaction, so a concurrent writer cannot slip a duplicate in.
        """
        from core.store.judging import upsert_judge_row

        reader = f"read_parquet({sql_text(str(plan.path))}, file_row_number = true)"
        src = f"(SELECT *, file_row_number + 1 AS row_nr FROM {reader})"
        c = plan.columns
        scores = [col for col in c if col not in ("order", "verdict", "judge")]
        with self.transaction() as cur:
            ds = cur.execute("SELECT dataset_id FROM datasets WHERE name = ?", [plan.dataset]).fetchone()
            if ds is None:
                raise StoreError(f"no dataset named {plan.dataset!r} in {self.path}")
            ds_id = int(ds[0])
            for row in plan.judges.to_dict("records"):
                upsert_judge_row(cur, row)
            cur.execute(
                f"""CREATE TEMP TABLE _bulk_j AS
                    SELECT f.row_nr, b.battle_id, jd.judge_id, {c["order"]} AS "order", {c["verdict"]} AS verdict
                           {"".join(f", {c[col]} AS {col}" for col in scores)}
                    FROM {src} f
                    LEFT JOIN (SELECT battle_id, external_id FROM battles WHERE dataset_id = {ds_id}) b
                           ON b.external_id = {plan.key}
                    LEFT JOIN judges jd ON jd.name = {c["judge"]}"""
            )
            # On an error the transaction's rollback removes _bulk_j with everything else.
            matched = cur.execute("SELECT count(*) FROM _bulk_j").fetchone()
            if matched and matched[0] > plan.n_rows:
                many = cur.execute(
                    "SELECT row_nr, count(*) FROM _bulk_j GROUP BY row_nr HAVING count(*) > 1 ORDER BY row_nr LIMIT 1"
                ).fetchone()
                assert many is not None
                raise BulkRowError(
                    f"this question_id names {many[1]} battles of dataset {plan.dataset!r}; a judgment file needs "
                    "ids that name one battle each",
                    many[0],
                    "question_id",
                )
            orphan = cur.execute("SELECT min(row_nr) FROM _bulk_j WHERE battle_id IS NULL").fetchone()
            if orphan and orphan[0] is not None:
                raise BulkRowError(
                    f"no battle of dataset {plan.dataset!r} has this question_id", orphan[0], "question_id"
                )
            dup = cur.execute(
                """SELECT min(n.row_nr) FROM _bulk_j n JOIN judgments j
                     ON j.battle_id = n.battle_id AND j.judge_id = n.judge_id AND j."order" = n."order"
                    AND j.prompt_version = 'imported' AND j.variant = 'original'"""
            ).fetchone()
            if dup and dup[0] is not None:
                raise BulkRowError(
                    "this judge's judgment of this battle in this order is already stored", dup[0], "judge"
                )
            base = next_id(cur, "judgments", "judgment_id")
            listed = "".join(f", {col}" for col in scores)
            cur.execute(
                f"""INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version, variant,
                                           verdict{listed})
                    SELECT {base} + row_nr - 1, battle_id, judge_id, "order",
                           'imported', 'original', verdict{listed}
                    FROM _bulk_j"""
            )
            cur.execute(
                "INSERT INTO imports (content_hash, dataset_id, format, path) VALUES (?, ?, ?, ?)",
                [content_hash, ds_id, fmt, str(plan.path)],
            )
            cur.execute("DROP TABLE _bulk_j")
        return plan.n_rows


# ---------------------------------------------------------- judgment files
_ORDER = '"order"'  # a keyword in SQL


def plain_judgment_types(types: dict[str, str], score_columns: Sequence[str]) -> bool:
    """Whether a judgment file's columns have the types the SQL rules cover."""
    ok = all(types.get(c, "VARCHAR") == "VARCHAR" for c in ("judge", "order", "winner"))
    ok &= types.get("question_id", "VARCHAR") in INTEGER_TYPES | {"VARCHAR"}
    return ok and all(types[c] in NUMBER_TYPES for c in score_columns if c in types)


def judgment_rules(
    types: dict[str, str],
    score_columns: Sequence[str],
    winners: Sequence[str],
    max_name: int,
    score_range: tuple[float, float],
) -> list[Rule]:
    """A judgment file's checks in order: question id, judge, order, winner, scores (finite, in ``score_range``)."""
    qid = py_blank("question_id") if types["question_id"] == "VARCHAR" else "question_id IS NULL"
    known = ", ".join(sql_text(w) for w in winners)
    rules = [
        Rule("question_id", qid, "question_id"),
        Rule("judge", f"{py_blank('judge')} OR length(judge) > {max_name}", "judge", reads=("judge",)),
        Rule("order", f"{_ORDER} IS NULL OR lower({py_strip(_ORDER)}) NOT IN ('ab', 'ba')", "order", reads=(_ORDER,)),
        Rule("winner", f"winner IS NULL OR lower({py_strip('winner')}) NOT IN ({known})", "winner", reads=("winner",)),
    ]
    for col in score_columns:
        if col in types:
            x = f"CAST({col} AS DOUBLE)"
            lo, hi = score_range
            rules.append(Rule(col, f"isnan({x}) OR isinf({x}) OR {x} < {lo!r} OR {x} > {hi!r}", "score"))
    return rules


def judgment_keys(types: dict[str, str]) -> tuple[str, str, str]:
    """SQL for what identifies a judgment within a file: (question id, judge, order)."""
    key = "question_id" if types["question_id"] == "VARCHAR" else "CAST(question_id AS VARCHAR)"
    return key, py_strip("judge"), f"lower({py_strip(_ORDER)})"


def judgment_columns(types: dict[str, str], score_columns: Sequence[str], winners: dict[str, str]) -> dict[str, str]:
    """The store's judgment columns as SQL over the file; ``winners``: file value (lower case) → verdict."""
    cases = " ".join(f"WHEN {sql_text(k)} THEN {sql_text(v)}" for k, v in winners.items())
    out = {
        "judge": py_strip("judge"),
        "order": f"lower({py_strip(_ORDER)})",
        "verdict": f"CASE winner {cases} ELSE CASE lower({py_strip('winner')}) {cases} END END",
    }
    for col in score_columns:
        out[col] = f"CAST({col} AS DOUBLE)" if col in types else "NULL"
    return out
