"""The DuckDB battle store: schema, migrations and every query the app needs.

This is the only module that speaks SQL.  Everything else receives pandas
frames (per battle, per judgment) or pair-aggregated sufficient statistics
(``n``, ``s`` per ordered pair) produced here.

Concurrency: DuckDB allows one read-write process per file.  Opening a file
that another process holds raises :class:`StoreLockedError` with a message
naming the file and, where DuckDB reports it, the holding process.  Inside a
process, each query runs on its own cursor so that threads (the Streamlit
server, the background judge worker) can share one :class:`Store`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from core.tables import CRITERIA, SCORE_COLUMNS, SPEC, DatasetTables

SCHEMA_VERSION = 1
TARGETS = ("human", "hard", "soft")
SOFT_CLIP = 1e-6


class StoreError(Exception):
    """A store operation that cannot proceed (bad name, missing dataset...)."""


class StoreLockedError(StoreError):
    """The DuckDB file is held for writing by another process."""


# --------------------------------------------------------------------------
# Schema.  Each entry of MIGRATIONS upgrades version i -> i+1; a new store runs
# them all.  Never edit a released migration: append a new one.
# --------------------------------------------------------------------------

_SCORE_DDL = ",\n    ".join(f"{c} DOUBLE" for c in SCORE_COLUMNS)

MIGRATIONS: list[str] = [
    f"""
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE datasets (
    dataset_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    source VARCHAR NOT NULL,
    created_at TIMESTAMP DEFAULT current_timestamp,
    meta_json VARCHAR
);
CREATE TABLE imports (
    content_hash VARCHAR PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    format VARCHAR NOT NULL,
    path VARCHAR,
    imported_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE models (
    dataset_id INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    family VARCHAR,
    true_elo DOUBLE,
    notes VARCHAR,
    PRIMARY KEY (dataset_id, model)
);
CREATE TABLE prompts (
    prompt_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_key BIGINT NOT NULL,
    external_id VARCHAR,
    text VARCHAR,
    language VARCHAR,
    category VARCHAR,
    reference VARCHAR,
    verifiable BOOLEAN
);
CREATE TABLE completions (
    completion_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    prompt_id BIGINT NOT NULL,
    model VARCHAR NOT NULL,
    text VARCHAR,
    length INTEGER,
    n_headers INTEGER,
    n_bold INTEGER,
    n_list_items INTEGER,
    correct BOOLEAN,
    echo BOOLEAN,
    direct_label VARCHAR
);
CREATE TABLE battles (
    battle_id BIGINT PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    battle_key BIGINT NOT NULL,
    external_id VARCHAR,
    prompt_id BIGINT,
    model_a VARCHAR NOT NULL,
    model_b VARCHAR NOT NULL,
    completion_a BIGINT,
    completion_b BIGINT,
    language VARCHAR,
    turn INTEGER,
    tstamp DOUBLE
);
CREATE TABLE annotators (
    dataset_id INTEGER NOT NULL,
    annotator VARCHAR NOT NULL,
    kind VARCHAR,
    true_ability DOUBLE,
    PRIMARY KEY (dataset_id, annotator)
);
CREATE TABLE votes (
    battle_id BIGINT NOT NULL,
    annotator VARCHAR,
    winner VARCHAR NOT NULL CHECK (winner IN ('a', 'b', 'tie', 'both_bad'))
);
CREATE TABLE judges (
    judge_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    family VARCHAR,
    model VARCHAR,
    base_url VARCHAR,
    template VARCHAR,
    prompt_version VARCHAR,
    profile VARCHAR,
    params_json VARCHAR,
    config_json VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE judgments (
    judgment_id BIGINT PRIMARY KEY,
    battle_id BIGINT NOT NULL,
    judge_id INTEGER NOT NULL,
    "order" VARCHAR NOT NULL CHECK ("order" IN ('ab', 'ba', 'avg')),
    prompt_version VARCHAR NOT NULL,
    variant VARCHAR NOT NULL DEFAULT 'original',
    verdict VARCHAR CHECK (verdict IN ('a', 'b', 'tie')),
    {_SCORE_DDL},
    p_a DOUBLE,
    confidence DOUBLE,
    raw_output VARCHAR,
    parse_error VARCHAR,
    latency_ms DOUBLE,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    run_id INTEGER,
    created_at TIMESTAMP DEFAULT current_timestamp,
    UNIQUE (battle_id, judge_id, "order", prompt_version, variant)
);
CREATE TABLE judge_runs (
    run_id INTEGER PRIMARY KEY,
    judge_id INTEGER NOT NULL,
    dataset_id INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    planned INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    parse_errors INTEGER NOT NULL DEFAULT 0,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    started_at TIMESTAMP DEFAULT current_timestamp,
    updated_at TIMESTAMP DEFAULT current_timestamp,
    finished_at TIMESTAMP,
    config_json VARCHAR,
    message VARCHAR
);
CREATE INDEX battles_dataset ON battles (dataset_id);
CREATE INDEX votes_battle ON votes (battle_id);
CREATE INDEX judgments_battle ON judgments (battle_id);
""",
]

assert len(MIGRATIONS) == SCHEMA_VERSION

_JUDGMENT_COLUMNS = ("battle_id", "judge_id", "order", "prompt_version", "variant", "verdict", *SCORE_COLUMNS,
                     "p_a", "confidence", "raw_output", "parse_error", "latency_ms", "prompt_tokens",
                     "completion_tokens", "run_id")
_JUDGMENT_BATCH_SCHEMA = pa.schema(
    [("battle_id", pa.int64()), ("judge_id", pa.int32()), ("order", pa.string()), ("prompt_version", pa.string()),
     ("variant", pa.string()), ("verdict", pa.string()), *[(c, pa.float64()) for c in SCORE_COLUMNS],
     ("p_a", pa.float64()), ("confidence", pa.float64()), ("raw_output", pa.string()), ("parse_error", pa.string()),
     ("latency_ms", pa.float64()), ("prompt_tokens", pa.int32()), ("completion_tokens", pa.int32()),
     ("run_id", pa.int32())])
_JUDGMENT_QUOTED = ", ".join(f'"{c}"' for c in _JUDGMENT_COLUMNS)
# A stored parse failure is replaced by a later success of the same key; anything else is kept.
_RECORD_JUDGMENTS_SQL = (
    f"INSERT INTO judgments (judgment_id, {_JUDGMENT_QUOTED}) "
    f"SELECT (SELECT coalesce(max(judgment_id), 0) FROM judgments) + row_number() OVER (), {_JUDGMENT_QUOTED} "
    "FROM _batch "
    'ON CONFLICT (battle_id, judge_id, "order", prompt_version, variant) DO UPDATE SET '
    + ", ".join(f'"{c}" = excluded."{c}"' for c in _JUDGMENT_COLUMNS[5:])
    + " WHERE judgments.parse_error IS NOT NULL AND excluded.parse_error IS NULL RETURNING judgment_id")


def _run_update(run_id: int, fields: dict[str, Any]) -> tuple[str, list]:
    """UPDATE of a judge run's counters and status (names checked against a fixed list)."""
    allowed = {"status", "planned", "done", "failed", "parse_errors", "prompt_tokens", "completion_tokens",
               "message", "finished"}
    bad = set(fields) - allowed
    if bad:
        raise StoreError(f"unknown run fields: {sorted(bad)}")
    sets, values = ["updated_at = current_timestamp"], []
    for k, v in fields.items():
        if k == "finished":
            if v:
                sets.append("finished_at = current_timestamp")
            continue
        sets.append(f"{k} = ?")
        values.append(v)
    return f"UPDATE judge_runs SET {', '.join(sets)} WHERE run_id = ?", [*values, run_id]


def _gap_sql(prefix: str = "") -> str:
    """Mean over criteria present for both sides of (a_c - b_c) (METHODS §2)."""
    diffs = [f"({prefix}a_{c} - {prefix}b_{c})" for c in CRITERIA]
    total = " + ".join(f"coalesce({d}, 0)" for d in diffs)
    count = " + ".join(f"CAST({d} IS NOT NULL AS INTEGER)" for d in diffs)
    return f"(({total}) / nullif({count}, 0))"


_VERDICT_Y = "CASE verdict WHEN 'a' THEN 1.0 WHEN 'b' THEN 0.0 WHEN 'tie' THEN 0.5 END"
_WINNER_Y = "CASE winner WHEN 'a' THEN 1.0 WHEN 'b' THEN 0.0 ELSE 0.5 END"


@dataclass(frozen=True)
class DatasetInfo:
    dataset_id: int
    name: str
    source: str


class Store:
    """A handle on one DuckDB battle store."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, read_only: bool):
        self._con = con
        self.path = path
        self.read_only = read_only
        self._write_lock = threading.RLock()

    # ------------------------------------------------------------------ open
    @classmethod
    def open(cls, path: str | Path | None = None, read_only: bool = False) -> "Store":
        """Open (creating and migrating when writable) the store at ``path``.

        ``path=':memory:'`` gives a private in-memory store (tests).
        """
        from core.datahome import DEFAULT_DB

        path = str(path if path is not None else DEFAULT_DB)
        if path != ":memory:":
            p = Path(path)
            if read_only and not p.exists():
                raise StoreError(f"store {path} does not exist (build it with `python -m core simulate --db {path}`)")
            if not read_only:
                p.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(path, read_only=read_only)
        except duckdb.IOException as exc:
            raise StoreLockedError(_lock_message(path, exc)) from None
        except duckdb.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from None
        store = cls(con, path, read_only)
        if not read_only:
            store._migrate()
        else:
            v = store.schema_version
            if v > SCHEMA_VERSION:
                raise StoreError(f"store {path} has schema version {v}, newer than this code ({SCHEMA_VERSION})")
            if v < SCHEMA_VERSION:
                raise StoreError(
                    f"store {path} has schema version {v}; open it writable once to migrate to {SCHEMA_VERSION}"
                )
        return store

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _cur(self) -> duckdb.DuckDBPyConnection:
        # A cursor per call: DuckDB connections are not safe to share between
        # threads, their cursors are.
        return self._con.cursor()

    # ------------------------------------------------------------ migrations
    @property
    def schema_version(self) -> int:
        cur = self._cur()
        has_meta = cur.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
        ).fetchone()[0]
        if not has_meta:
            return 0
        row = cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        current = self.schema_version
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {current}, newer than this code ({SCHEMA_VERSION})"
            )
        for version in range(current, SCHEMA_VERSION):
            with self.transaction() as cur:
                cur.execute(MIGRATIONS[version])
                cur.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(version + 1)]
                )

    @contextmanager
    def transaction(self):
        """All-or-nothing block: commits on success, rolls back on any error."""
        if self.read_only:
            raise StoreError(f"store {self.path} is open read-only")
        with self._write_lock:
            cur = self._cur()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")

    # ------------------------------------------------------------- datasets
    def datasets(self) -> pd.DataFrame:
        return self._cur().execute(
            "SELECT dataset_id, name, source, created_at, meta_json FROM datasets ORDER BY dataset_id"
        ).df()

    def dataset(self, name: str) -> DatasetInfo:
        row = self._cur().execute(
            "SELECT dataset_id, name, source FROM datasets WHERE name = ?", [name]
        ).fetchone()
        if row is None:
            known = ", ".join(self.datasets()["name"]) or "none"
            raise StoreError(f"no dataset named {name!r} in {self.path} (datasets: {known})")
        return DatasetInfo(*row)

    def dataset_meta(self, name: str) -> dict:
        row = self._cur().execute("SELECT meta_json FROM datasets WHERE name = ?", [name]).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def import_record(self, content_hash: str) -> str | None:
        """Name of the dataset already imported from content with this hash."""
        row = self._cur().execute(
            "SELECT d.name FROM imports i JOIN datasets d USING (dataset_id) WHERE content_hash = ?",
            [content_hash],
        ).fetchone()
        return row[0] if row else None

    def write_dataset(
        self,
        tables: DatasetTables,
        *,
        content_hash: str | None = None,
        fmt: str | None = None,
        source_path: str | None = None,
        replace: bool = False,
    ) -> int:
        """Write a whole dataset in one transaction; returns its id.

        The frames must already be validated (importers do that); this method
        still checks referential integrity so that a bug upstream cannot leave
        orphans behind.  ``replace`` drops an existing dataset of that name in
        the same transaction.
        """
        _check_tables(tables)
        with self.transaction() as cur:
            exists = cur.execute("SELECT dataset_id FROM datasets WHERE name = ?", [tables.name]).fetchone()
            if exists and not replace:
                raise StoreError(f"dataset {tables.name!r} already exists in {self.path}")
            if exists:
                self._delete_dataset(cur, exists[0])
            ds_id = _next_id(cur, "datasets", "dataset_id")
            cur.execute(
                "INSERT INTO datasets (dataset_id, name, source, meta_json) VALUES (?, ?, ?, ?)",
                [ds_id, tables.name, tables.source, json.dumps(tables.meta, default=_json_default)],
            )
            if content_hash:
                cur.execute(
                    "INSERT INTO imports (content_hash, dataset_id, format, path) VALUES (?, ?, ?, ?)",
                    [content_hash, ds_id, fmt or tables.source, source_path],
                )
            self._insert_tables(cur, ds_id, tables)
        return ds_id

    def delete_dataset(self, name: str) -> None:
        info = self.dataset(name)
        with self.transaction() as cur:
            self._delete_dataset(cur, info.dataset_id)

    @staticmethod
    def _delete_dataset(cur, ds_id: int) -> None:
        cur.execute(
            "DELETE FROM judgments WHERE battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = ?)", [ds_id]
        )
        cur.execute("DELETE FROM votes WHERE battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = ?)", [ds_id])
        for table in ("battles", "completions", "prompts", "models", "annotators", "judge_runs", "imports"):
            cur.execute(f"DELETE FROM {table} WHERE dataset_id = ?", [ds_id])
        cur.execute("DELETE FROM datasets WHERE dataset_id = ?", [ds_id])

    def _insert_tables(self, cur, ds_id: int, t: DatasetTables) -> None:
        models = _with_columns(t.models, "models")
        models.insert(0, "dataset_id", ds_id)
        _bulk_insert(cur, "models", models)

        prompt_ids = pd.Series(dtype="int64")
        if t.prompts is not None and len(t.prompts):
            prompts = _with_columns(t.prompts, "prompts")
            base = _next_id(cur, "prompts", "prompt_id")
            prompts.insert(0, "prompt_id", np.arange(base, base + len(prompts), dtype=np.int64))
            prompts.insert(1, "dataset_id", ds_id)
            _bulk_insert(cur, "prompts", prompts)
            prompt_ids = pd.Series(prompts["prompt_id"].to_numpy(), index=prompts["prompt_key"].to_numpy())

        completion_ids: dict[tuple[int, str], int] = {}
        if t.completions is not None and len(t.completions):
            comp = _with_columns(t.completions, "completions")
            base = _next_id(cur, "completions", "completion_id")
            comp.insert(0, "completion_id", np.arange(base, base + len(comp), dtype=np.int64))
            comp.insert(1, "dataset_id", ds_id)
            comp["prompt_id"] = prompt_ids.reindex(comp["prompt_key"].to_numpy()).to_numpy()
            completion_ids = dict(
                zip(zip(comp["prompt_key"].to_numpy().tolist(), comp["model"].tolist()), comp["completion_id"].tolist())
            )
            comp = comp.drop(columns=["prompt_key"])
            _bulk_insert(cur, "completions", comp)

        battles = _with_columns(t.battles, "battles")
        base = _next_id(cur, "battles", "battle_id")
        battles.insert(0, "battle_id", np.arange(base, base + len(battles), dtype=np.int64))
        battles.insert(1, "dataset_id", ds_id)
        if "prompt_key" in battles and battles["prompt_key"].notna().any():
            keys = battles["prompt_key"]
            battles["prompt_id"] = prompt_ids.reindex(keys.to_numpy()).to_numpy()
            if completion_ids:
                pk = keys.to_numpy().tolist()
                battles["completion_a"] = [completion_ids.get((k, m)) for k, m in zip(pk, battles["model_a"].tolist())]
                battles["completion_b"] = [completion_ids.get((k, m)) for k, m in zip(pk, battles["model_b"].tolist())]
        battle_ids = pd.Series(battles["battle_id"].to_numpy(), index=battles["battle_key"].to_numpy())
        battles = battles.drop(columns=["prompt_key"], errors="ignore")
        _bulk_insert(cur, "battles", battles)

        if t.annotators is not None and len(t.annotators):
            ann = _with_columns(t.annotators, "annotators")
            ann.insert(0, "dataset_id", ds_id)
            _bulk_insert(cur, "annotators", ann)

        if t.votes is not None and len(t.votes):
            votes = _with_columns(t.votes, "votes")
            votes["battle_id"] = battle_ids.reindex(votes["battle_key"].to_numpy()).to_numpy()
            votes = votes.drop(columns=["battle_key"])
            _bulk_insert(cur, "votes", votes)

        if t.judges is not None and len(t.judges):
            for row in _with_columns(t.judges, "judges").to_dict("records"):
                self._upsert_judge_row(cur, row)

        if t.judgments is not None and len(t.judgments):
            j = _with_columns(t.judgments, "judgments")
            judge_ids = dict(cur.execute("SELECT name, judge_id FROM judges").fetchall())
            missing = sorted(set(j["judge"]) - set(judge_ids))
            for name in missing:
                self._upsert_judge_row(cur, {"judge": name, "prompt_version": "imported"})
            judge_ids = dict(cur.execute("SELECT name, judge_id FROM judges").fetchall())
            base = _next_id(cur, "judgments", "judgment_id")
            j.insert(0, "judgment_id", np.arange(base, base + len(j), dtype=np.int64))
            j["battle_id"] = battle_ids.reindex(j["battle_key"].to_numpy()).to_numpy()
            j["judge_id"] = j["judge"].map(judge_ids).astype("int64")
            j["prompt_version"] = j["prompt_version"].astype(object).fillna("imported")
            j["variant"] = j["variant"].astype(object).fillna("original")
            j = j.drop(columns=["battle_key", "judge"])
            _bulk_insert(cur, "judgments", j)

    # --------------------------------------------------------------- judges
    @staticmethod
    def _upsert_judge_row(cur, row: dict) -> int:
        name = row["judge"]
        existing = cur.execute("SELECT judge_id FROM judges WHERE name = ?", [name]).fetchone()
        cols = ["family", "model", "base_url", "template", "prompt_version", "profile", "params_json"]
        values = [_none_if_na(row.get(c)) for c in cols]
        if existing:
            # Keep what is known: imported data never erases a configured judge.
            sets = ", ".join(f"{c} = coalesce(?, {c})" for c in cols)
            cur.execute(f"UPDATE judges SET {sets} WHERE judge_id = ?", [*values, existing[0]])
            return existing[0]
        jid = _next_id(cur, "judges", "judge_id")
        cur.execute(
            f"INSERT INTO judges (judge_id, name, {', '.join(cols)}) VALUES (?, ?, {', '.join('?' * len(cols))})",
            [jid, name, *values],
        )
        return jid

    def save_judge_config(self, name: str, config: dict, **fields: Any) -> int:
        """Create or update a judge from a configuration (never holding a key)."""
        if any("key" in k.lower() and k != "api_key_env" for k in config):
            raise StoreError("judge configuration must not contain API keys; use api_key_env")
        with self.transaction() as cur:
            jid = self._upsert_judge_row(cur, {"judge": name, **fields})
            cur.execute("UPDATE judges SET config_json = ? WHERE judge_id = ?", [json.dumps(config), jid])
        return jid

    def judge(self, name: str) -> dict:
        df = self._cur().execute("SELECT * FROM judges WHERE name = ?", [name]).df()
        if df.empty:
            raise StoreError(f"no judge named {name!r} in {self.path}")
        row = df.iloc[0].to_dict()
        row["config"] = json.loads(row["config_json"]) if row.get("config_json") else {}
        return row

    def judges_frame(self, dataset: str | None = None) -> pd.DataFrame:
        """Judges (optionally only those with judgments in ``dataset``) and counts."""
        params: list[Any] = []
        where = ""
        if dataset is not None:
            where = "WHERE b.dataset_id = ?"
            params.append(self.dataset(dataset).dataset_id)
        sql = f"""
            SELECT j.name AS judge, j.family, j.model, j.template, j.prompt_version, j.profile,
                   j.params_json, count(*) AS n_judgments,
                   list(DISTINCT g."order" ORDER BY g."order") AS orders,
                   count(g.parse_error) AS n_parse_errors
            FROM judgments g JOIN judges j USING (judge_id) JOIN battles b USING (battle_id)
            {where} AND g.variant = 'original'
            GROUP BY ALL ORDER BY j.name
        """
        if not where:
            sql = sql.replace("AND g.variant", "WHERE g.variant")
        return self._cur().execute(sql, params).df()

    # ------------------------------------------------------------------ info
    def info(self) -> dict:
        cur = self._cur()
        out: dict[str, Any] = {"schema_version": self.schema_version, "path": self.path, "datasets": []}
        ds = cur.execute("SELECT dataset_id, name, source FROM datasets ORDER BY dataset_id").fetchall()
        for ds_id, name, source in ds:
            row = cur.execute(
                """
                SELECT
                  (SELECT count(*) FROM models WHERE dataset_id = $1),
                  (SELECT count(*) FROM prompts WHERE dataset_id = $1),
                  (SELECT count(*) FROM battles WHERE dataset_id = $1),
                  (SELECT count(*) FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $1),
                  (SELECT count(DISTINCT annotator) FROM votes v JOIN battles b USING (battle_id)
                     WHERE b.dataset_id = $1 AND annotator IS NOT NULL),
                  (SELECT count(*) FROM completions WHERE dataset_id = $1),
                  (SELECT count(*) FROM judge_runs WHERE dataset_id = $1)
                """,
                [ds_id],
            ).fetchone()
            judges = self.judges_frame(name)
            out["datasets"].append(
                {
                    "name": name,
                    "source": source,
                    "n_models": row[0],
                    "n_prompts": row[1],
                    "n_battles": row[2],
                    "n_human_votes": row[3],
                    "n_annotators": row[4],
                    "n_completions": row[5],
                    "n_judge_runs": row[6],
                    "judges": [
                        {
                            "name": r.judge,
                            "n_judgments": int(r.n_judgments),
                            "orders": list(r.orders),
                            "n_parse_errors": int(r.n_parse_errors),
                        }
                        for r in judges.itertuples()
                    ],
                }
            )
        return out

    def version_token(self) -> str:
        """Changes whenever data changes: a cache key for derived results."""
        row = self._cur().execute(
            """SELECT (SELECT count(*) FROM datasets), (SELECT max(battle_id) FROM battles),
                      (SELECT count(*) FROM judgments), (SELECT max(judgment_id) FROM judgments),
                      (SELECT count(*) FROM votes), (SELECT max(dataset_id) FROM datasets)"""
        ).fetchone()
        return ":".join(str(x) for x in row)

    # --------------------------------------------------------------- frames
    def models_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """
            WITH counts AS (
                SELECT model, count(*) AS n_battles FROM (
                    SELECT model_a AS model FROM battles WHERE dataset_id = $1
                    UNION ALL SELECT model_b FROM battles WHERE dataset_id = $1)
                GROUP BY model)
            SELECT m.model, m.family, m.true_elo, coalesce(c.n_battles, 0) AS n_battles
            FROM models m LEFT JOIN counts c USING (model)
            WHERE m.dataset_id = $1 ORDER BY m.model
            """,
            [ds],
        ).df()

    def annotators_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """
            SELECT v.annotator, count(*) AS n_votes, any_value(a.kind) AS kind,
                   any_value(a.true_ability) AS true_ability
            FROM votes v JOIN battles b USING (battle_id)
            LEFT JOIN annotators a ON a.dataset_id = b.dataset_id AND a.annotator = v.annotator
            WHERE b.dataset_id = ? AND v.annotator IS NOT NULL
            GROUP BY v.annotator ORDER BY v.annotator
            """,
            [ds],
        ).df()

    def votes_frame(self, dataset: str) -> pd.DataFrame:
        """One row per human vote: battle_id, model_a, model_b, annotator, winner, y."""
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            f"""
            SELECT v.battle_id, b.model_a, b.model_b, v.annotator, v.winner, {_WINNER_Y} AS y,
                   b.language, b.tstamp
            FROM votes v JOIN battles b USING (battle_id)
            WHERE b.dataset_id = ? ORDER BY v.battle_id, v.annotator
            """,
            [ds],
        ).df()

    def _judge_filter(self, judge: str | None, dataset_id: int) -> tuple[int | None, str | None]:
        if judge is None:
            return None, None
        row = self._cur().execute("SELECT judge_id, prompt_version FROM judges WHERE name = ?", [judge]).fetchone()
        if row is None:
            known = ", ".join(self.judges_frame()["judge"]) or "none"
            raise StoreError(f"no judge named {judge!r} in {self.path} (judges: {known})")
        judge_id, version = row
        if version is not None:
            has = self._cur().execute(
                """SELECT count(*) FROM judgments g JOIN battles b USING (battle_id)
                   WHERE judge_id = ? AND prompt_version = ? AND b.dataset_id = ?""",
                [judge_id, version, dataset_id],
            ).fetchone()[0]
            if not has:
                version = None  # judgments only exist under other versions: use them all
        return judge_id, version

    def _battle_sql(self, with_judge: bool) -> str:
        """Per-battle CTE: human label, judge gaps, hard label, logprob p's."""
        judge_cte = ""
        judge_cols = """, NULL::DOUBLE AS gap_ab, NULL::DOUBLE AS gap_ba, NULL::DOUBLE AS gap_avg,
                NULL::DOUBLE AS p_ab, NULL::DOUBLE AS p_ba, NULL::VARCHAR AS verdict_ab,
                NULL::VARCHAR AS verdict_ba, NULL::VARCHAR AS verdict_avg, NULL::DOUBLE AS verdict_mean,
                NULL::DOUBLE AS conf_ab, NULL::DOUBLE AS conf_ba, 0 AS n_judgments,
                NULL::DOUBLE AS gap_mean"""
        judge_join = ""
        if with_judge:
            judge_cte = f""",
            jrows AS (
                SELECT g.battle_id, g."order", g.verdict, g.p_a, g.confidence,
                       {_gap_sql('g.')} AS gap, {_VERDICT_Y.replace('verdict', 'g.verdict')} AS vy
                FROM judgments g JOIN battles b USING (battle_id)
                WHERE b.dataset_id = $ds AND g.judge_id = $judge AND g.variant = 'original'
                  AND g.parse_error IS NULL
                  AND ($version IS NULL OR g.prompt_version = $version)
            ),
            jb AS (
                SELECT battle_id,
                       max(gap) FILTER (WHERE "order" = 'ab') AS gap_ab,
                       max(gap) FILTER (WHERE "order" = 'ba') AS gap_ba,
                       max(gap) FILTER (WHERE "order" = 'avg') AS gap_avg,
                       avg(gap) AS gap_mean,
                       max(p_a) FILTER (WHERE "order" = 'ab') AS p_ab,
                       max(p_a) FILTER (WHERE "order" = 'ba') AS p_ba,
                       max(verdict) FILTER (WHERE "order" = 'ab') AS verdict_ab,
                       max(verdict) FILTER (WHERE "order" = 'ba') AS verdict_ba,
                       max(verdict) FILTER (WHERE "order" = 'avg') AS verdict_avg,
                       avg(vy) AS verdict_mean,
                       max(confidence) FILTER (WHERE "order" = 'ab') AS conf_ab,
                       max(confidence) FILTER (WHERE "order" = 'ba') AS conf_ba,
                       count(*) AS n_judgments
                FROM jrows GROUP BY battle_id
            )"""
            judge_cols = """, jb.gap_ab, jb.gap_ba, jb.gap_avg, jb.p_ab, jb.p_ba, jb.verdict_ab,
                jb.verdict_ba, jb.verdict_avg, jb.verdict_mean, jb.conf_ab, jb.conf_ba,
                coalesce(jb.n_judgments, 0) AS n_judgments, jb.gap_mean"""
            judge_join = "LEFT JOIN jb USING (battle_id)"
        return f"""
            WITH hv AS (
                SELECT v.battle_id, avg({_WINNER_Y}) AS human_y, count(*) AS n_votes
                FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $ds
                GROUP BY v.battle_id
            ){judge_cte},
            base AS (
                SELECT b.battle_id, b.battle_key, b.external_id, b.model_a, b.model_b, b.prompt_id,
                       b.language, b.turn, b.tstamp, hv.human_y, coalesce(hv.n_votes, 0) AS n_votes,
                       b.completion_a, b.completion_b {judge_cols}
                FROM battles b LEFT JOIN hv USING (battle_id) {judge_join}
                WHERE b.dataset_id = $ds
            )"""

    def battle_frame(self, dataset: str, judge: str | None = None, tau: float | None = None) -> pd.DataFrame:
        """One row per battle with everything the fits and diagnostics need.

        Columns: see the module docs of ``core.tables`` and METHODS §2.  The
        hard judge label follows METHODS §2: an imported verdict on an
        averaged judgment wins; else the sign of the order-averaged rubric gap
        with "signs differ between orders -> tie"; else the mean verdict.
        ``soft_y`` is present when ``tau`` is given.
        """
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        sql = self._battle_sql(judge is not None) + f"""
            SELECT base.*,
                   {self._hard_label_sql()} AS judge_hard,
                   {self._gap_expr()} AS gap,
                   ca.length AS len_a, cb.length AS len_b,
                   ca.n_headers AS headers_a, cb.n_headers AS headers_b,
                   ca.n_bold AS bold_a, cb.n_bold AS bold_b,
                   ca.n_list_items AS lists_a, cb.n_list_items AS lists_b,
                   ca.correct AS correct_a, cb.correct AS correct_b,
                   ca.echo AS echo_a, cb.echo AS echo_b,
                   ma.family AS family_a, mb.family AS family_b
            FROM base
            LEFT JOIN completions ca ON ca.completion_id = base.completion_a
            LEFT JOIN completions cb ON cb.completion_id = base.completion_b
            LEFT JOIN models ma ON ma.dataset_id = $ds AND ma.model = base.model_a
            LEFT JOIN models mb ON mb.dataset_id = $ds AND mb.model = base.model_b
            ORDER BY base.battle_id
        """
        params: dict[str, Any] = {"ds": ds}
        if judge is not None:
            params.update(judge=judge_id, version=version)
        df = self._cur().execute(sql, params).df()
        df = df.drop(columns=["gap_mean"], errors="ignore")
        for col in ("correct_a", "correct_b", "echo_a", "echo_b"):
            df[col] = df[col].astype("boolean")
        if tau is not None:
            df["soft_y"] = soft_target(df["gap"].to_numpy(dtype=float), tau)
        return df

    @staticmethod
    def _gap_expr() -> str:
        # Both orders: the mean of the two order gaps (each already a - b).
        return "CASE WHEN gap_avg IS NOT NULL THEN gap_avg ELSE gap_mean END"

    @staticmethod
    def _hard_label_sql() -> str:
        return """CASE
            WHEN verdict_avg IS NOT NULL THEN
                CASE verdict_avg WHEN 'a' THEN 1.0 WHEN 'b' THEN 0.0 ELSE 0.5 END
            WHEN gap_avg IS NOT NULL THEN sign(gap_avg) * 0.5 + 0.5
            WHEN gap_ab IS NOT NULL AND gap_ba IS NOT NULL AND sign(gap_ab) * sign(gap_ba) < 0 THEN 0.5
            WHEN gap_mean IS NOT NULL THEN sign(gap_mean) * 0.5 + 0.5
            WHEN verdict_mean IS NOT NULL THEN sign(verdict_mean - 0.5) * 0.5 + 0.5
        END"""

    def pair_stats(
        self,
        dataset: str,
        target: str,
        judge: str | None = None,
        tau: float | None = None,
        *,
        battle_ids: Sequence[int] | None = None,
    ) -> pd.DataFrame:
        """Sufficient statistics per ordered pair: model_a, model_b, n, s, ss.

        ``ss`` (Σ y²) keeps the sandwich covariance exact for soft targets.

        ``target``: 'human' (votes; a battle with several votes contributes
        their mean), 'hard' (judge hard label) or 'soft' (σ(τ·gap), clipped).
        Battles without the target are left out.
        """
        if target not in TARGETS:
            raise StoreError(f"unknown target {target!r}; expected one of {TARGETS}")
        if target != "human" and judge is None:
            raise StoreError(f"target {target!r} needs a judge")
        if target == "soft" and (tau is None or not np.isfinite(tau) or tau <= 0):
            raise StoreError(f"target 'soft' needs a finite positive tau, got {tau!r}")
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds) if target != "human" else (None, None)
        y_expr = {
            "human": "human_y",
            "hard": "judge_hard",
            # least/greatest skip NULLs in DuckDB: keep a missing gap missing explicitly.
            "soft": f"CASE WHEN gap IS NOT NULL THEN least(greatest(1.0 / (1.0 + exp(-$tau * gap)), "
                    f"{SOFT_CLIP}), {1 - SOFT_CLIP}) END",
        }[target]
        ids_filter = ""
        if battle_ids is not None:
            ids_filter = "AND battle_id IN (SELECT unnest($ids))"
        sql = self._battle_sql(target != "human") + f""",
            labelled AS (
                SELECT battle_id, model_a, model_b, human_y,
                       {self._hard_label_sql()} AS judge_hard, {self._gap_expr()} AS gap
                FROM base
            )
            SELECT model_a, model_b, count(*)::DOUBLE AS n, sum(y) AS s, sum(y * y) AS ss FROM (
                SELECT model_a, model_b, {y_expr} AS y FROM labelled
                WHERE {y_expr} IS NOT NULL {ids_filter}
            ) GROUP BY model_a, model_b ORDER BY model_a, model_b
        """
        params: dict[str, Any] = {"ds": ds}
        if target != "human":
            params.update(judge=judge_id, version=version)
        if target == "soft":
            params["tau"] = float(tau)
        if battle_ids is not None:
            params["ids"] = [int(x) for x in battle_ids]
        return self._cur().execute(sql, params).df()

    def judgments_frame(self, dataset: str, judge: str | None = None, *, variant: str | None = "original",
                        include_raw: bool = False) -> pd.DataFrame:
        """One row per stored judgment, scores in battle terms, plus its gap."""
        ds = self.dataset(dataset).dataset_id
        params: list[Any] = [ds]
        where = ["b.dataset_id = ?"]
        if judge is not None:
            judge_id, _ = self._judge_filter(judge, ds)
            where.append("g.judge_id = ?")
            params.append(judge_id)
        if variant is not None:
            where.append("g.variant = ?")
            params.append(variant)
        raw = ", g.raw_output" if include_raw else ""
        sql = f"""
            SELECT g.judgment_id, g.battle_id, b.battle_key, j.name AS judge, g."order", g.prompt_version,
                   g.variant, g.verdict, {', '.join('g.' + c for c in SCORE_COLUMNS)},
                   {_gap_sql('g.')} AS gap, g.p_a, g.confidence, g.parse_error, g.latency_ms,
                   g.prompt_tokens, g.completion_tokens, g.run_id, b.model_a, b.model_b{raw}
            FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
            WHERE {' AND '.join(where)}
            ORDER BY g.battle_id, j.name, g."order"
        """
        return self._cur().execute(sql, params).df()

    def contests_frame(self, dataset: str) -> pd.DataFrame:
        """Judge contests in presentation order: judge, first, second, question_id, winner.

        ``winner`` is the winning model's name or 'Tie' (judge_contests.csv
        convention); judgments with a parse error are left out.
        """
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """
            SELECT j.name AS judge,
                   CASE WHEN g."order" = 'ba' THEN b.model_b ELSE b.model_a END AS first,
                   CASE WHEN g."order" = 'ba' THEN b.model_a ELSE b.model_b END AS second,
                   coalesce(b.external_id, CAST(b.battle_key AS VARCHAR)) AS question_id,
                   CASE g.verdict WHEN 'a' THEN b.model_a WHEN 'b' THEN b.model_b ELSE 'Tie' END AS winner,
                   g.battle_id
            FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
            WHERE b.dataset_id = ? AND g.variant = 'original' AND g.verdict IS NOT NULL
              AND g.parse_error IS NULL
            ORDER BY j.name, g.battle_id, g."order"
            """,
            [ds],
        ).df()

    def pair_coverage(self, dataset: str) -> pd.DataFrame:
        """Battle counts per unordered model pair (for the coverage heatmap)."""
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """SELECT least(model_a, model_b) AS model_1, greatest(model_a, model_b) AS model_2,
                      count(*) AS n_battles
               FROM battles WHERE dataset_id = ? GROUP BY ALL ORDER BY ALL""",
            [ds],
        ).df()

    def languages_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """SELECT coalesce(b.language, 'unknown') AS language, count(*) AS n_battles,
                      count(v.battle_id) AS n_votes
               FROM battles b LEFT JOIN (SELECT DISTINCT battle_id FROM votes) v USING (battle_id)
               WHERE b.dataset_id = ? GROUP BY ALL ORDER BY n_battles DESC""",
            [ds],
        ).df()

    def completions_frame(self, dataset: str, with_text: bool = False) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        text = ", c.text, p.text AS prompt_text" if with_text else ""
        return self._cur().execute(
            f"""SELECT c.completion_id, c.prompt_id, p.external_id AS prompt_external_id, c.model,
                       c.length, c.n_headers, c.n_bold, c.n_list_items, c.correct, c.echo,
                       c.direct_label, p.language, p.verifiable{text}
                FROM completions c LEFT JOIN prompts p USING (prompt_id)
                WHERE c.dataset_id = ? ORDER BY c.completion_id""",
            [ds],
        ).df()

    def table_frame(self, dataset: str, table: str) -> pd.DataFrame:
        """Export view of a table: 'battles' or 'judgments' (one row per stored row)."""
        if table == "battles":
            ds = self.dataset(dataset).dataset_id
            return self._cur().execute(
                f"""SELECT b.battle_id, b.external_id, b.model_a, b.model_b, b.language, b.turn, b.tstamp,
                           p.external_id AS prompt_external_id,
                           (SELECT avg({_WINNER_Y}) FROM votes v WHERE v.battle_id = b.battle_id) AS human_y,
                           (SELECT count(*) FROM votes v WHERE v.battle_id = b.battle_id) AS n_votes
                    FROM battles b LEFT JOIN prompts p USING (prompt_id)
                    WHERE b.dataset_id = ? ORDER BY b.battle_id""",
                [ds],
            ).df()
        if table == "judgments":
            return self.judgments_frame(dataset, None, variant=None, include_raw=True)
        raise StoreError(f"unknown table {table!r}: expected 'battles' or 'judgments'")

    # -------------------------------------------------------------- judging
    def battles_for_judging(self, dataset: str) -> pd.DataFrame:
        """Battles with the texts a judge prompt needs (prompt, both completions)."""
        ds = self.dataset(dataset).dataset_id
        return self._cur().execute(
            """SELECT b.battle_id, b.model_a, b.model_b, p.text AS prompt, ca.text AS text_a,
                      cb.text AS text_b, b.language
               FROM battles b LEFT JOIN prompts p USING (prompt_id)
               LEFT JOIN completions ca ON ca.completion_id = b.completion_a
               LEFT JOIN completions cb ON cb.completion_id = b.completion_b
               WHERE b.dataset_id = ? ORDER BY b.battle_id""",
            [ds],
        ).df()

    def existing_judgment_keys(self, judge_id: int, prompt_version: str, dataset: str,
                               variant: str = "original", include_failed: bool = True) -> pd.DataFrame:
        """(battle_id, order) already stored for this judge and prompt version."""
        ds = self.dataset(dataset).dataset_id
        failed = "" if include_failed else "AND g.parse_error IS NULL"
        return self._cur().execute(
            f"""SELECT g.battle_id, g."order", g.parse_error FROM judgments g JOIN battles b USING (battle_id)
               WHERE b.dataset_id = ? AND g.judge_id = ? AND g.prompt_version = ? AND g.variant = ? {failed}""",
            [ds, judge_id, prompt_version, variant],
        ).df()

    def record_judgment(self, row: dict) -> bool:
        """Store one finished call at once; returns False when it already existed.

        The idempotency key is (battle, judge, order, prompt version, variant):
        a resumed run that repeats a call cannot duplicate it.  A stored
        parse failure is replaced by a later successful retry of the same key.
        The judgment is committed (durable) when this returns.
        """
        return self.record_judgments([row]) == 1

    def record_judgments(self, rows: list[dict], run_progress: tuple[int, dict] | None = None) -> int:
        """Several finished calls in one transaction (group commit); same rules as ``record_judgment``.

        ``run_progress`` = (run_id, counters) updates that run in the same
        commit (a commit is the expensive part).  Returns how many rows were
        inserted or replaced a stored failure.  Within ``rows`` the last row of
        a key wins.
        """
        if self.read_only:
            raise StoreError(f"store {self.path} is open read-only")
        if not rows and run_progress is None:
            return 0
        latest = {}
        for r in rows:
            latest[(r["battle_id"], r["judge_id"], r["order"], r["prompt_version"], r.get("variant", "original"))] = r
        batch = None
        if latest:
            # A typed Arrow batch: building it is ~10× cheaper than a DataFrame
            # of dicts, and the types are explicit whatever the first rows hold.
            columns = {c: [_none_if_na(r.get(c)) for r in latest.values()] for c in _JUDGMENT_COLUMNS}
            columns["variant"] = [v if v is not None else "original" for v in columns["variant"]]
            batch = pa.Table.from_pydict(columns, schema=_JUDGMENT_BATCH_SCHEMA)
        update = _run_update(*run_progress) if run_progress is not None else None
        got = []
        with self.transaction() as cur:
            if batch is not None:
                cur.register("_batch", batch)
                try:
                    got = cur.execute(_RECORD_JUDGMENTS_SQL).fetchall()
                finally:
                    cur.unregister("_batch")
            if update is not None:
                cur.execute(*update)
        return len(got)

    def create_run(self, judge_id: int, dataset: str, planned: int, config: dict) -> int:
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            run_id = _next_id(cur, "judge_runs", "run_id")
            cur.execute(
                """INSERT INTO judge_runs (run_id, judge_id, dataset_id, status, planned, config_json)
                   VALUES (?, ?, ?, 'running', ?, ?)""",
                [run_id, judge_id, ds, planned, json.dumps(config)],
            )
        return run_id

    def update_run(self, run_id: int, **fields: Any) -> None:
        sql, values = _run_update(run_id, fields)
        with self.transaction() as cur:
            cur.execute(sql, values)

    def runs_frame(self, dataset: str | None = None) -> pd.DataFrame:
        where, params = "", []
        if dataset is not None:
            where, params = "WHERE r.dataset_id = ?", [self.dataset(dataset).dataset_id]
        return self._cur().execute(
            f"""SELECT r.run_id, j.name AS judge, d.name AS dataset, r.status, r.planned, r.done, r.failed,
                       r.parse_errors, r.prompt_tokens, r.completion_tokens,
                       -- NULL (unknown) unless the run's configuration priced both kinds of token
                       (r.prompt_tokens * TRY_CAST(r.config_json ->> 'price_prompt_per_mtok' AS DOUBLE)
                        + r.completion_tokens * TRY_CAST(r.config_json ->> 'price_completion_per_mtok' AS DOUBLE))
                        / 1e6 AS cost_usd,
                       r.started_at, r.updated_at,
                       r.finished_at, r.message
                FROM judge_runs r JOIN judges j USING (judge_id) JOIN datasets d USING (dataset_id)
                {where} ORDER BY r.run_id DESC""",
            params,
        ).df()

    def parse_failures(self, dataset: str, judge: str | None = None, limit: int = 200) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        params: list[Any] = [ds]
        jf = ""
        if judge is not None:
            jf = "AND j.name = ?"
            params.append(judge)
        params.append(limit)
        return self._cur().execute(
            f"""SELECT g.judgment_id, g.battle_id, j.name AS judge, g."order", g.prompt_version,
                       g.parse_error, g.raw_output, g.created_at
                FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
                WHERE b.dataset_id = ? AND g.parse_error IS NOT NULL {jf}
                ORDER BY g.created_at DESC LIMIT ?""",
            params,
        ).df()

    def delete_failed_judgments(self, dataset: str, judge: str) -> int:
        """Forget stored parse failures so that a run plans those calls again."""
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            n = cur.execute(
                """SELECT count(*) FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
                   WHERE b.dataset_id = ? AND j.name = ? AND g.parse_error IS NOT NULL""",
                [ds, judge],
            ).fetchone()[0]
            cur.execute(
                """DELETE FROM judgments WHERE parse_error IS NOT NULL
                   AND judge_id = (SELECT judge_id FROM judges WHERE name = ?)
                   AND battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = ?)""",
                [judge, ds],
            )
        return int(n)

    def add_battles(self, dataset: str, battles: pd.DataFrame) -> int:
        """Add battles (model_a, model_b, prompt_id, completion_a, completion_b) to a dataset."""
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            base = _next_id(cur, "battles", "battle_id")
            key_base = cur.execute(
                "SELECT coalesce(max(battle_key), -1) + 1 FROM battles WHERE dataset_id = ?", [ds]
            ).fetchone()[0]
            df = battles.copy()
            df.insert(0, "battle_id", np.arange(base, base + len(df), dtype=np.int64))
            df.insert(1, "dataset_id", ds)
            df["battle_key"] = np.arange(key_base, key_base + len(df), dtype=np.int64)
            _bulk_insert(cur, "battles", df)
        return len(battles)


# ------------------------------------------------------------------ helpers
def soft_target(gap: np.ndarray, tau: float) -> np.ndarray:
    """σ(τ·gap) clipped to [1e-6, 1-1e-6] (METHODS §2); NaN gaps stay NaN."""
    gap = np.asarray(gap, dtype=float)
    with np.errstate(over="ignore"):
        y = 1.0 / (1.0 + np.exp(-tau * gap))
    return np.clip(y, SOFT_CLIP, 1 - SOFT_CLIP)


def _lock_message(path: str, exc: Exception) -> str:
    text = str(exc)
    pid = re.search(r"PID (\d+)", text)
    holder = f" (process {pid.group(1)})" if pid else ""
    if "lock" in text.lower():
        return (
            f"the store {path} is held for writing by another process{holder}; "
            "stop that process (e.g. the running app or a judge run) or use another --db file"
        )
    return f"cannot open store {path}: {text}"


def _next_id(cur, table: str, column: str) -> int:
    return int(cur.execute(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}").fetchone()[0])


def _with_columns(df: pd.DataFrame, table: str) -> pd.DataFrame:
    spec = SPEC[table]
    cols = [*spec["required"], *spec["optional"]]
    out = df.reindex(columns=cols).copy()
    return out


def _bulk_insert(cur, table: str, df: pd.DataFrame) -> None:
    if df.empty:
        return
    cols = [c for c in df.columns]
    quoted = ", ".join(f'"{c}"' for c in cols)
    cur.complete()  # DuckDB refuses to register while a previous result is pending
    cur.register("_frame", df)
    try:
        cur.execute(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM _frame")
    finally:
        cur.unregister("_frame")


def _check_tables(t: DatasetTables) -> None:
    if not t.name or not isinstance(t.name, str):
        raise StoreError("a dataset needs a non-empty name")
    for name, df in t.tables().items():
        missing = [c for c in SPEC[name]["required"] if c not in df.columns]
        if missing:
            raise StoreError(f"table {name} lacks required columns {missing}")
    models = set(t.models["model"])
    used = set(t.battles["model_a"]) | set(t.battles["model_b"])
    if used - models:
        raise StoreError(f"battles reference unknown models: {sorted(used - models)[:5]}")
    if t.battles["battle_key"].duplicated().any():
        raise StoreError("duplicate battle_key in battles")
    keys = set(t.battles["battle_key"].tolist())
    for name in ("votes", "judgments"):
        df = getattr(t, name)
        if df is not None and len(df) and not set(df["battle_key"].tolist()) <= keys:
            raise StoreError(f"{name} reference unknown battles")


def _none_if_na(v):
    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(v, np.generic):
        return v.item()
    return v


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)



# ------------------------------------------------------------ battle files
_FILE_READERS = {".parquet": "read_parquet", ".csv": "read_csv_auto", ".jsonl": "read_json_auto",
                 ".json": "read_json_auto", ".ndjson": "read_json_auto"}
_HARD_Y = ("CASE lower(trim(CAST(winner AS VARCHAR))) WHEN 'model_a' THEN 1.0 WHEN 'model_b' THEN 0.0 "
           "WHEN 'tie' THEN 0.5 WHEN 'tie (bothbad)' THEN 0.5 WHEN 'both_bad' THEN 0.5 END")


def aggregate_battle_file(path: str | Path) -> tuple[pd.DataFrame, int]:
    """An LMArena-style battle file aggregated to (pair, outcome) cells in SQL.

    Returns (cells with model_a, model_b, y, n; number of battles).  Raises
    ``StoreError`` naming the file, row and field for missing columns, empty
    names, self-battles or unknown winner values.  Pairs are oriented with
    model_a < model_b (y flipped accordingly): the likelihood is unchanged.
    """
    p = Path(path)
    reader = _FILE_READERS.get(p.suffix.lower())
    if reader is None:
        raise StoreError(f"{p}: unknown file type {p.suffix!r}; expected .parquet, .csv or .jsonl")
    if not p.exists():
        raise StoreError(f"{p}: file does not exist")
    con = duckdb.connect()
    literal = "'" + str(p).replace("'", "''") + "'"
    try:
        try:
            con.execute(f"CREATE TEMP VIEW f AS SELECT * FROM {reader}({literal})")
            cols = [r[0] for r in con.execute("DESCRIBE f").fetchall()]
        except duckdb.Error as exc:
            raise StoreError(f"{p}: unreadable file ({str(exc).splitlines()[0][:160]})") from None
        for col in ("model_a", "model_b", "winner"):
            if col not in cols:
                raise StoreError(f"{p}, field '{col}': missing required column (found {cols})")
        # One pass groups the raw columns (cheap: no per-row expressions); the
        # few groups are validated and oriented in pandas.  Only when a group is
        # invalid is the file scanned again to name the first bad row.
        try:
            raw = con.execute("SELECT model_a, model_b, winner, count(*)::DOUBLE AS n FROM f GROUP BY ALL").df()
        except duckdb.Error as exc:
            raise StoreError(f"{p}: unreadable file ({str(exc).splitlines()[0][:160]})") from None
        a = raw["model_a"].astype("string").str.strip()
        b = raw["model_b"].astype("string").str.strip()
        y = raw["winner"].astype("string").str.strip().str.lower().map(
            {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5, "both_bad": 0.5})
        invalid = (a.isna() | b.isna() | (a == "") | (b == "") | (a == b) | y.isna()).to_numpy(dtype=bool)
        if invalid.any():
            bad = con.execute(
                f"""SELECT row_nr, CASE WHEN model_a IS NULL OR trim(CAST(model_a AS VARCHAR)) = '' THEN 'model_a'
                                       WHEN model_b IS NULL OR trim(CAST(model_b AS VARCHAR)) = '' THEN 'model_b'
                                       WHEN trim(CAST(model_a AS VARCHAR)) = trim(CAST(model_b AS VARCHAR))
                                            THEN 'model_b'
                                       ELSE 'winner' END AS field, CAST(winner AS VARCHAR)
                    FROM (SELECT row_number() OVER () AS row_nr, * FROM f)
                    WHERE model_a IS NULL OR model_b IS NULL OR trim(CAST(model_a AS VARCHAR)) = ''
                       OR trim(CAST(model_b AS VARCHAR)) = ''
                       OR trim(CAST(model_a AS VARCHAR)) = trim(CAST(model_b AS VARCHAR)) OR ({_HARD_Y}) IS NULL
                    ORDER BY row_nr LIMIT 1"""
            ).fetchone()
            what = {"model_a": "empty model name", "model_b": "empty model name or a model battling itself",
                    "winner": f"unknown winner value {bad[2]!r} (expected model_a, model_b, tie, "
                              "tie (bothbad) or both_bad)"}[bad[1]]
            raise StoreError(f"{p}, row {bad[0]}, field '{bad[1]}': {what}")
        a, b, y = a.to_numpy(dtype=object), b.to_numpy(dtype=object), y.to_numpy(dtype=float)
        flip = a > b
        cells = pd.DataFrame({"model_a": np.where(flip, b, a), "model_b": np.where(flip, a, b),
                              "y": np.where(flip, 1.0 - y, y), "n": raw["n"].to_numpy(float)})
        cells = cells.groupby(["model_a", "model_b", "y"], as_index=False, sort=True)["n"].sum()
        n = int(cells["n"].sum())
        if n == 0:
            raise StoreError(f"{p}: the file has no battles")
    finally:
        con.close()
    return cells, int(n)
