"""Writing datasets: one transaction per dataset, referential integrity checked first."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from core import redact
from core.domain import HUMAN_WINNERS, ORDERS, TABLE_SPEC, VERDICTS, DatasetTables
from core.store.base import StoreBase, bulk_insert, json_default, next_id
from core.store.errors import StoreError
from core.store.judging import upsert_judge_row


class DatasetWrites(StoreBase):
    """Whole-dataset writes (imports, the demo) and battles added to a dataset."""

    def import_record(self, content_hash: str) -> str | None:
        """Name of the dataset already imported from content with this hash."""
        row = (
            self._cur()
            .execute(
                "SELECT d.name FROM imports i JOIN datasets d USING (dataset_id) WHERE content_hash = ?",
                [content_hash],
            )
            .fetchone()
        )
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
            ds_id = next_id(cur, "datasets", "dataset_id")
            cur.execute(
                "INSERT INTO datasets (dataset_id, name, source, meta_json) VALUES (?, ?, ?, ?)",
                [ds_id, tables.name, tables.source, json.dumps(tables.meta, default=json_default)],
            )
            if content_hash:
                cur.execute(
                    "INSERT INTO imports (content_hash, dataset_id, format, path) VALUES (?, ?, ?, ?)",
                    [content_hash, ds_id, fmt or tables.source, source_path],
                )
            try:
                self._insert_tables(cur, ds_id, tables)
            except duckdb.Error as exc:  # a value a reader let through and the schema refuses: rolled back
                first = redact.clip(str(exc).splitlines()[0], 300)
                raise StoreError(f"the store refused a value of {tables.name!r} ({first})") from None
        return ds_id

    def dataset_tables(self, name: str, judges: list[str] | None = None) -> DatasetTables:
        """A stored dataset as the :class:`DatasetTables` that would write it again (the inverse of
        :meth:`write_dataset`): keys are the stored ids, rows in id order, so a rewrite keeps every
        order-dependent result (online Elo replays, seeded bootstraps) the same.

        ``judges``: only these judges' judgments (default: every judge's).  Calls that got no response
        (transport failures) are not judgments and are left out.
        """
        info = self.dataset(name)
        ds = info.dataset_id
        cur = self._cur()

        def frame(sql: str, *params: object) -> pd.DataFrame:
            return cur.execute(sql, [ds, *params]).df()

        scores = ", ".join(f"g.{c}" for c in TABLE_SPEC["judgments"]["optional"] if c.startswith(("a_", "b_")))
        judge_filter = ""
        params: list[object] = []
        if judges is not None:
            judge_filter = f"AND j.name IN ({', '.join('?' for _ in judges)})"
            params = list(judges)
        judgments = frame(
            f"""SELECT g.battle_id AS battle_key, j.name AS judge, g."order", g.prompt_version, g.verdict, {scores},
                       g.p_a, g.confidence, g.raw_output, g.parse_error, g.latency_ms, g.prompt_tokens,
                       g.completion_tokens, g.variant, g.grade
                FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
                WHERE b.dataset_id = ? AND NOT coalesce(g.call_failed, false) {judge_filter}
                ORDER BY g.judgment_id""",
            *params,
        )
        names = sorted(set(judgments["judge"]))
        judge_rows = cur.execute(
            f"""SELECT name AS judge, family, model, base_url, template, prompt_version, profile, params_json
                FROM judges WHERE name IN ({", ".join("?" for _ in names) or "NULL"}) ORDER BY name""",
            names,
        ).df()
        row = cur.execute("SELECT meta_json FROM datasets WHERE dataset_id = ?", [ds]).fetchone()
        meta = json.loads(row[0] or "{}") if row else {}
        return DatasetTables(
            name=info.name,
            source=info.source,
            models=frame("SELECT model, family, true_elo, notes FROM models WHERE dataset_id = ? ORDER BY model"),
            battles=frame(
                """SELECT battle_id AS battle_key, model_a, model_b, prompt_id AS prompt_key, external_id, language,
                          turn, tstamp
                   FROM battles WHERE dataset_id = ? ORDER BY battle_id"""
            ),
            prompts=frame(
                """SELECT prompt_id AS prompt_key, external_id, text, language, category, reference, verifiable, turns
                   FROM prompts WHERE dataset_id = ? ORDER BY prompt_id"""
            ),
            prompt_attributes=frame(
                """SELECT a.prompt_id AS prompt_key, a.key, a.value
                   FROM prompt_attributes a JOIN prompts p USING (prompt_id)
                   WHERE p.dataset_id = ? ORDER BY a.prompt_id, a.key"""
            ),
            completions=frame(
                """SELECT prompt_id AS prompt_key, model, text, length, n_headers, n_bold, n_list_items, correct, echo,
                          direct_label, turns, n_tokens
                   FROM completions WHERE dataset_id = ? ORDER BY completion_id"""
            ),
            votes=frame(
                """SELECT v.battle_id AS battle_key, v.winner, v.annotator, v.shown_order, v.voted_at, v.source
                   FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = ? ORDER BY v.rowid"""
            ),
            annotators=frame(
                "SELECT annotator, kind, true_ability FROM annotators WHERE dataset_id = ? ORDER BY annotator"
            ),
            judges=judge_rows,
            judgments=judgments,
            grades=frame(
                """SELECT prompt_id AS prompt_key, model, judge, prompt_version, turn, run, score, raw_output,
                          parse_error
                   FROM grades WHERE dataset_id = ? ORDER BY grade_id"""
            ),
            meta=meta,
        )

    def delete_dataset(self, name: str) -> None:
        info = self.dataset(name)
        with self.transaction() as cur:
            self._delete_dataset(cur, info.dataset_id)

    @staticmethod
    def _delete_dataset(cur: duckdb.DuckDBPyConnection, ds_id: int) -> None:
        cur.execute(
            "DELETE FROM judgments WHERE battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = ?)", [ds_id]
        )
        cur.execute(
            "DELETE FROM votes WHERE battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = ?)", [ds_id]
        )
        cur.execute(
            "DELETE FROM prompt_attributes WHERE prompt_id IN (SELECT prompt_id FROM prompts WHERE dataset_id = ?)",
            [ds_id],
        )
        for table in (
            "grades",
            "battles",
            "generations",
            "completions",
            "prompts",
            "models",
            "annotators",
            "judge_runs",
            "judge_batches",
            "evaluations",
            "imports",
        ):
            cur.execute(f"DELETE FROM {table} WHERE dataset_id = ?", [ds_id])
        cur.execute("DELETE FROM results WHERE dataset = (SELECT name FROM datasets WHERE dataset_id = ?)", [ds_id])
        cur.execute("DELETE FROM datasets WHERE dataset_id = ?", [ds_id])

    def add_to_dataset(
        self,
        tables: DatasetTables,
        *,
        snapshot: dict[str, int],
        content_hash: str | None = None,
        fmt: str | None = None,
        source_path: str | None = None,
    ) -> None:
        """Add rows to the stored dataset ``tables.name`` in one transaction.

        Keys as :mod:`core.ingest.merge` returns them: a non-negative ``prompt_key`` / ``battle_key`` is a stored
        id, a negative one a row of ``tables`` to add.  ``snapshot`` is :meth:`dataset_counts` when the addition was
        planned: a dataset that changed since is refused (the plan would be stale), never half-merged.
        """
        with self.transaction() as cur:
            row = cur.execute("SELECT dataset_id, meta_json FROM datasets WHERE name = ?", [tables.name]).fetchone()
            if row is None:
                raise StoreError(f"no dataset {tables.name!r} in {self.path}")
            ds_id = int(row[0])
            if _counts(cur, ds_id) != snapshot:
                raise StoreError(f"dataset {tables.name!r} changed while this file was read; import it again")
            if content_hash:
                cur.execute(
                    "INSERT INTO imports (content_hash, dataset_id, format, path) VALUES (?, ?, ?, ?)",
                    [content_hash, ds_id, fmt or tables.source, source_path],
                )
            meta = json.loads(row[1] or "{}")
            meta.setdefault("added", []).append(tables.meta)
            cur.execute(
                "UPDATE datasets SET meta_json = ? WHERE dataset_id = ?",
                [json.dumps(meta, default=json_default), ds_id],
            )
            try:
                self._insert_tables(cur, ds_id, tables, existing=True)
            except duckdb.Error as exc:
                first = redact.clip(str(exc).splitlines()[0], 300)
                raise StoreError(f"the store refused a value added to {tables.name!r} ({first})") from None

    def dataset_counts(self, name: str) -> dict[str, int]:
        """Row counts of a dataset's tables: the snapshot :meth:`add_to_dataset` compares against."""
        return _counts(self._cur(), self.dataset(name).dataset_id)

    def _insert_tables(
        self, cur: duckdb.DuckDBPyConnection, ds_id: int, t: DatasetTables, existing: bool = False
    ) -> None:
        models = _with_columns(t.models, "models")
        models.insert(0, "dataset_id", ds_id)
        bulk_insert(cur, "models", models)

        prompt_ids = pd.Series(dtype="int64")
        stored_completions: dict[tuple[int, str], int] = {}
        stored_battles = pd.Series(dtype="int64")
        if existing:  # stored rows are named by their ids
            ids = [r[0] for r in cur.execute("SELECT prompt_id FROM prompts WHERE dataset_id = ?", [ds_id]).fetchall()]
            prompt_ids = pd.Series(ids, index=ids, dtype="int64")
            stored_completions = {
                (int(p), m): int(c)
                for p, m, c in cur.execute(
                    "SELECT prompt_id, model, completion_id FROM completions WHERE dataset_id = ?", [ds_id]
                ).fetchall()
            }
            ids = [r[0] for r in cur.execute("SELECT battle_id FROM battles WHERE dataset_id = ?", [ds_id]).fetchall()]
            stored_battles = pd.Series(ids, index=ids, dtype="int64")
        if t.prompts is not None and len(t.prompts):
            prompts = _with_columns(t.prompts, "prompts")
            base = next_id(cur, "prompts", "prompt_id")
            prompts.insert(0, "prompt_id", np.arange(base, base + len(prompts), dtype=np.int64))
            prompts.insert(1, "dataset_id", ds_id)
            bulk_insert(cur, "prompts", prompts)
            added = pd.Series(prompts["prompt_id"].to_numpy(), index=prompts["prompt_key"].to_numpy())
            prompt_ids = pd.concat([prompt_ids, added]) if len(prompt_ids) else added
        if t.prompt_attributes is not None and len(t.prompt_attributes):
            attrs = _with_columns(t.prompt_attributes, "prompt_attributes")
            attrs["prompt_id"] = prompt_ids.reindex(attrs["prompt_key"].to_numpy()).to_numpy()
            if attrs["prompt_id"].isna().any():
                raise StoreError("prompt_attributes reference unknown prompts")
            bulk_insert(cur, "prompt_attributes", attrs[["prompt_id", "key", "value"]])

        completion_ids: dict[tuple[int, str], int] = dict(stored_completions)
        if t.completions is not None and len(t.completions):
            comp = _with_columns(t.completions, "completions")
            base = next_id(cur, "completions", "completion_id")
            comp.insert(0, "completion_id", np.arange(base, base + len(comp), dtype=np.int64))
            comp.insert(1, "dataset_id", ds_id)
            comp["prompt_id"] = prompt_ids.reindex(comp["prompt_key"].to_numpy()).to_numpy()
            completion_ids.update(
                zip(zip(comp["prompt_id"].to_numpy().tolist(), comp["model"].tolist()), comp["completion_id"].tolist())
            )
            comp = comp.drop(columns=["prompt_key"])
            bulk_insert(cur, "completions", comp)

        battles = _with_columns(t.battles, "battles")
        base = next_id(cur, "battles", "battle_id")
        battles.insert(0, "battle_id", np.arange(base, base + len(battles), dtype=np.int64))
        battles.insert(1, "dataset_id", ds_id)
        if "prompt_key" in battles and battles["prompt_key"].notna().any():
            keys = battles["prompt_key"]
            battles["prompt_id"] = prompt_ids.reindex(keys.to_numpy()).to_numpy()
            if completion_ids:
                pid = battles["prompt_id"].tolist()
                battles["completion_a"] = [
                    completion_ids.get((int(k), m)) if pd.notna(k) else None
                    for k, m in zip(pid, battles["model_a"].tolist())
                ]
                battles["completion_b"] = [
                    completion_ids.get((int(k), m)) if pd.notna(k) else None
                    for k, m in zip(pid, battles["model_b"].tolist())
                ]
        battle_ids = pd.Series(battles["battle_id"].to_numpy(), index=battles["battle_key"].to_numpy())
        if len(stored_battles):
            battle_ids = pd.concat([stored_battles, battle_ids])
        battles = battles.drop(columns=["prompt_key"], errors="ignore")
        bulk_insert(cur, "battles", battles)

        if t.annotators is not None and len(t.annotators):
            ann = _with_columns(t.annotators, "annotators")
            ann.insert(0, "dataset_id", ds_id)
            bulk_insert(cur, "annotators", ann)

        if t.votes is not None and len(t.votes):
            votes = _with_columns(t.votes, "votes")
            votes["battle_id"] = battle_ids.reindex(votes["battle_key"].to_numpy()).to_numpy()
            votes = votes.drop(columns=["battle_key"])
            bulk_insert(cur, "votes", votes)

        if t.judges is not None and len(t.judges):
            for row in _with_columns(t.judges, "judges").to_dict("records"):
                upsert_judge_row(cur, row)

        if t.judgments is not None and len(t.judgments):
            j = _with_columns(t.judgments, "judgments")
            judge_ids = dict(cur.execute("SELECT name, judge_id FROM judges").fetchall())
            missing = sorted(set(j["judge"]) - set(judge_ids))
            for name in missing:
                upsert_judge_row(cur, {"judge": name, "prompt_version": "imported"})
            judge_ids = dict(cur.execute("SELECT name, judge_id FROM judges").fetchall())
            base = next_id(cur, "judgments", "judgment_id")
            j.insert(0, "judgment_id", np.arange(base, base + len(j), dtype=np.int64))
            j["battle_id"] = battle_ids.reindex(j["battle_key"].to_numpy()).to_numpy()
            j["judge_id"] = j["judge"].map(judge_ids).astype("int64")
            j["prompt_version"] = j["prompt_version"].astype(object).fillna("imported")
            j["variant"] = j["variant"].astype(object).fillna("original")
            j = j.drop(columns=["battle_key", "judge"])
            bulk_insert(cur, "judgments", j)

        if t.grades is not None and len(t.grades):
            g = _with_columns(t.grades, "grades")
            base = next_id(cur, "grades", "grade_id")
            g.insert(0, "grade_id", np.arange(base, base + len(g), dtype=np.int64))
            g.insert(1, "dataset_id", ds_id)
            g["prompt_id"] = prompt_ids.reindex(g["prompt_key"].to_numpy()).to_numpy()
            if g["prompt_id"].isna().any():
                raise StoreError("grades reference unknown prompts")
            g["prompt_version"] = g["prompt_version"].astype(object).fillna("imported")
            g["run"] = g["run"].astype(object).fillna(1)
            g = g.drop(columns=["prompt_key"])
            bulk_insert(cur, "grades", g)


def _counts(cur: duckdb.DuckDBPyConnection, ds_id: int) -> dict[str, int]:
    row = cur.execute(
        """SELECT (SELECT count(*) FROM prompts WHERE dataset_id = $1),
                  (SELECT count(*) FROM completions WHERE dataset_id = $1),
                  (SELECT count(*) FROM battles WHERE dataset_id = $1),
                  (SELECT count(*) FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $1),
                  (SELECT count(*) FROM judgments g JOIN battles b USING (battle_id) WHERE b.dataset_id = $1),
                  (SELECT count(*) FROM grades WHERE dataset_id = $1)""",
        [ds_id],
    ).fetchone()
    assert row is not None
    return dict(zip(("prompts", "completions", "battles", "votes", "judgments", "grades"), (int(x) for x in row)))


def _with_columns(df: pd.DataFrame, table: str) -> pd.DataFrame:
    spec = TABLE_SPEC[table]
    cols = [*spec["required"], *spec["optional"]]
    out = df.reindex(columns=cols).copy()
    return out


def _check_tables(t: DatasetTables) -> None:
    if not t.name or not isinstance(t.name, str):
        raise StoreError("a dataset needs a non-empty name")
    for name, df in t.tables().items():
        missing = [c for c in TABLE_SPEC[name]["required"] if c not in df.columns]
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
    if t.grades is not None and len(t.grades) and not set(t.grades["model"]) <= models:
        raise StoreError(f"grades reference unknown models: {sorted(set(t.grades['model']) - models)[:5]}")
    for name, column, allowed in (
        ("votes", "winner", HUMAN_WINNERS),
        ("judgments", "verdict", VERDICTS),
        ("judgments", "order", ORDERS),
    ):
        df = getattr(t, name)
        if df is None or column not in df.columns:
            continue
        values = df[column]
        bad = values.notna() & ~values.isin(allowed)
        if bad.any():
            raise StoreError(f"{name}.{column} has {values[bad].iloc[0]!r}; expected one of {', '.join(allowed)}")
