"""Judging bookkeeping: the judge registry, judgments written as calls finish, and runs."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from core import redact
from core.domain import SCORE_COLUMNS
from core.store.base import StoreBase, next_id, none_if_na, one_row, registered
from core.store.errors import StoreError

_JUDGMENT_BATCH_SCHEMA = pa.schema(
    [
        ("battle_id", pa.int64()),
        ("judge_id", pa.int32()),
        ("order", pa.string()),
        ("prompt_version", pa.string()),
        ("variant", pa.string()),
        ("verdict", pa.string()),
        *[(c, pa.float64()) for c in SCORE_COLUMNS],
        ("p_a", pa.float64()),
        ("confidence", pa.float64()),
        ("raw_output", pa.string()),
        ("parse_error", pa.string()),
        ("latency_ms", pa.float64()),
        ("prompt_tokens", pa.int32()),
        ("completion_tokens", pa.int32()),
        ("run_id", pa.int32()),
        ("call_failed", pa.bool_()),
        ("raw_truncated", pa.bool_()),
    ]
)
_JUDGMENT_COLUMNS = tuple(_JUDGMENT_BATCH_SCHEMA.names)
_JUDGMENT_QUOTED = ", ".join(f'"{c}"' for c in _JUDGMENT_COLUMNS)
# A stored parse failure is replaced by a later success of the same key; anything else is kept.
_RECORD_JUDGMENTS_SQL = (
    f"INSERT INTO judgments (judgment_id, {_JUDGMENT_QUOTED}) "
    f"SELECT (SELECT coalesce(max(judgment_id), 0) FROM judgments) + row_number() OVER (), {_JUDGMENT_QUOTED} "
    "FROM _batch "
    'ON CONFLICT (battle_id, judge_id, "order", prompt_version, variant) DO UPDATE SET '
    + ", ".join(f'"{c}" = excluded."{c}"' for c in _JUDGMENT_COLUMNS[5:])
    + " WHERE judgments.parse_error IS NOT NULL AND excluded.parse_error IS NULL RETURNING judgment_id"
)


_BATCH_FIELDS = {"batch_id", "status", "input_file_id", "output_file_id", "error_file_id", "message", "run_id"}


def batch_update_sql(batch_key: str, fields: dict[str, Any]) -> tuple[str, list]:
    """UPDATE of a batch's provider ids, state and message (names checked against a fixed list)."""
    bad = set(fields) - _BATCH_FIELDS
    if bad:
        raise StoreError(f"unknown batch fields: {sorted(bad)}")
    sets = ["updated_at = current_timestamp", *(f"{k} = ?" for k in fields)]
    values = [redact.redact(v) if k == "message" else v for k, v in fields.items()]
    return f"UPDATE judge_batches SET {', '.join(sets)} WHERE batch_key = ?", [*values, batch_key]


def _run_update(run_id: int, fields: dict[str, Any]) -> tuple[str, list]:
    """UPDATE of a judge run's counters and status (names checked against a fixed list)."""
    allowed = {
        "status",
        "planned",
        "done",
        "failed",
        "parse_errors",
        "prompt_tokens",
        "completion_tokens",
        "message",
        "finished",
        "deferred",
        "heartbeat",
    }
    bad = set(fields) - allowed
    if bad:
        raise StoreError(f"unknown run fields: {sorted(bad)}")
    sets, values = ["updated_at = current_timestamp"], []
    for k, v in fields.items():
        if k in ("finished", "heartbeat"):
            if v:
                sets.append(f"{k if k == 'heartbeat' else 'finished'}_at = current_timestamp")
            continue
        sets.append(f"{k} = ?")
        values.append(redact.redact(v) if k == "message" else v)
    return f"UPDATE judge_runs SET {', '.join(sets)} WHERE run_id = ?", [*values, run_id]


def upsert_judge_row(cur: duckdb.DuckDBPyConnection, row: dict) -> int:
    """Create a judge, or fill in what an existing one of that name does not know yet; returns its id."""
    name = row["judge"]
    existing = cur.execute("SELECT judge_id FROM judges WHERE name = ?", [name]).fetchone()
    cols = ["family", "model", "base_url", "template", "prompt_version", "profile", "params_json"]
    values = [none_if_na(row.get(c)) for c in cols]
    if existing:
        # Keep what is known: imported data never erases a configured judge.
        sets = ", ".join(f"{c} = coalesce(?, {c})" for c in cols)
        cur.execute(f"UPDATE judges SET {sets} WHERE judge_id = ?", [*values, existing[0]])
        return existing[0]
    jid = next_id(cur, "judges", "judge_id")
    cur.execute(
        f"INSERT INTO judges (judge_id, name, {', '.join(cols)}) VALUES (?, ?, {', '.join('?' * len(cols))})",
        [jid, name, *values],
    )
    return jid


class JudgingStore(StoreBase):
    """Judge configurations, judgments, runs and their failures."""

    def save_judge_config(self, name: str, config: dict, **fields: Any) -> int:
        """Create or update a judge from a configuration (never holding a key)."""
        if any("key" in k.lower() and k != "api_key_env" for k in config):
            raise StoreError("judge configuration must not contain API keys; use api_key_env")
        with self.transaction() as cur:
            jid = upsert_judge_row(cur, {"judge": name, **fields})
            cur.execute("UPDATE judges SET config_json = ? WHERE judge_id = ?", [json.dumps(config), jid])
        return jid

    def set_judge_family(self, judge: str, family: str, only_if_unset: bool = False) -> None:
        """Set the family of an existing judge (self-preference compares it with the models' families);
        ``only_if_unset``: keep a family it already has."""
        keep = " AND family IS NULL" if only_if_unset else ""
        with self.transaction() as cur:
            cur.execute(f"UPDATE judges SET family = ? WHERE name = ?{keep}", [family, judge])

    def judge_id(self, judge: str) -> int | None:
        """The id of a registered judge; None when no judge has that name (nothing is created)."""
        row = self._cur().execute("SELECT judge_id FROM judges WHERE name = ?", [judge]).fetchone()
        return None if row is None else int(row[0])

    def judgment_count(self, judge: str) -> int:
        """How many judgments the judge of that name has, over every dataset (0 when there is no such judge)."""
        return int(
            one_row(
                self._cur(),
                "SELECT count(*) FROM judgments g JOIN judges j USING (judge_id) WHERE j.name = ?",
                [judge],
            )[0]
        )

    def judge_config_json(self, judge: str) -> str | None:
        row = self._cur().execute("SELECT config_json FROM judges WHERE name = ?", [judge]).fetchone()
        return None if row is None else row[0]

    # -------------------------------------------------------------- judging
    def battles_for_judging(self, dataset: str, battle_ids: list[int] | None = None) -> pd.DataFrame:
        """Battles with the texts a judge prompt needs (prompt, both completions, and their turns if several);
        all of the dataset's, or only ``battle_ids``."""
        ds = self.dataset(dataset).dataset_id
        only = "" if battle_ids is None else "AND b.battle_id IN (SELECT unnest(?::BIGINT[]))"
        params: list = [ds] if battle_ids is None else [ds, [int(b) for b in battle_ids]]
        return (
            self._cur()
            .execute(
                f"""SELECT b.battle_id, b.model_a, b.model_b, p.text AS prompt, ca.text AS text_a,
                      cb.text AS text_b, b.language, p.turns AS prompt_turns, ca.turns AS turns_a,
                      cb.turns AS turns_b
               FROM battles b LEFT JOIN prompts p USING (prompt_id)
               LEFT JOIN completions ca ON ca.completion_id = b.completion_a
               LEFT JOIN completions cb ON cb.completion_id = b.completion_b
               WHERE b.dataset_id = ? {only} ORDER BY b.battle_id""",
                params,
            )
            .df()
        )

    def token_history(self, judge_id: int, prompt_version: str, dataset: str, n: int = 200) -> pd.DataFrame:
        """Up to ``n`` answered calls of this judge and prompt version on the dataset: battle_id, order,
        prompt_tokens, completion_tokens (for cost estimates of the calls still to make)."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT g.battle_id, g."order", g.prompt_tokens, g.completion_tokens
                   FROM judgments g JOIN battles b USING (battle_id)
                   WHERE b.dataset_id = ? AND g.judge_id = ? AND g.prompt_version = ? AND g.variant = 'original'
                     AND g.prompt_tokens > 0 AND NOT coalesce(g.call_failed, false)
                   ORDER BY g.judgment_id DESC LIMIT ?""",
                [ds, judge_id, prompt_version, int(n)],
            )
            .df()
        )

    def existing_judgment_keys(
        self, judge_id: int, prompt_version: str, dataset: str, variant: str = "original", include_failed: bool = True
    ) -> pd.DataFrame:
        """(battle_id, order) already stored for this judge and prompt version."""
        ds = self.dataset(dataset).dataset_id
        failed = "" if include_failed else "AND g.parse_error IS NULL"
        return (
            self._cur()
            .execute(
                f"""SELECT g.battle_id, g."order", g.parse_error FROM judgments g JOIN battles b USING (battle_id)
               WHERE b.dataset_id = ? AND g.judge_id = ? AND g.prompt_version = ? AND g.variant = ? {failed}""",
                [ds, judge_id, prompt_version, variant],
            )
            .df()
        )

    def record_judgment(self, row: dict) -> bool:
        """Store one finished call at once; returns False when it already existed.

        The idempotency key is (battle, judge, order, prompt version, variant):
        a resumed run that repeats a call cannot duplicate it.  A stored
        parse failure is replaced by a later successful retry of the same key.
        The judgment is committed (durable) when this returns.
        """
        return self.record_judgments([row]) == 1

    def record_judgments(
        self, rows: list[dict], run_progress: tuple[int, dict] | None = None, also: tuple[tuple[str, list], ...] = ()
    ) -> int:
        """Several finished calls in one transaction (group commit); same rules as ``record_judgment``.

        ``run_progress`` = (run_id, counters) updates that run in the same
        commit (a commit is the expensive part).  Returns how many rows were
        inserted or replaced a stored failure.  Within ``rows`` the last row of
        a key wins.  ``also``: further (SQL, parameters) statements of this module committed with them.
        """
        if self.read_only:
            raise StoreError(f"store {self.path} is open read-only")
        if not rows and run_progress is None and not also:
            return 0
        latest = {}
        for r in rows:
            latest[(r["battle_id"], r["judge_id"], r["order"], r["prompt_version"], r.get("variant", "original"))] = r
        batch = None
        if latest:
            # A typed Arrow batch: building it is ~10× cheaper than a DataFrame
            # of dicts, and the types are explicit whatever the first rows hold.
            columns = {c: [none_if_na(r.get(c)) for r in latest.values()] for c in _JUDGMENT_COLUMNS}
            columns["variant"] = [v if v is not None else "original" for v in columns["variant"]]
            for c in ("call_failed", "raw_truncated"):
                columns[c] = [bool(v) for v in columns[c]]
            secrets = redact.secrets()
            for c in ("raw_output", "parse_error"):  # an endpoint may echo the key in what it returns
                columns[c] = [redact.redact(v, secrets) for v in columns[c]]
            batch = pa.Table.from_pydict(columns, schema=_JUDGMENT_BATCH_SCHEMA)
        update = _run_update(*run_progress) if run_progress is not None else None
        got = []
        with self.transaction() as cur:
            if batch is not None:
                with registered(cur, "_batch", batch):
                    got = cur.execute(_RECORD_JUDGMENTS_SQL).fetchall()
            if update is not None:
                cur.execute(*update)
            for statement in also:
                cur.execute(*statement)
        return len(got)

    # ------------------------------------------------------------ batches
    def open_batches(self, judge_id: int, prompt_version: str, dataset: str) -> list[dict]:
        """This judge's batches on the dataset not collected yet ('submitting': maybe never created)."""
        ds = self.dataset(dataset).dataset_id
        cur = self._cur().execute(
            """SELECT batch_key, batch_id, run_id, units_json, n_requests, status, input_file_id
               FROM judge_batches WHERE judge_id = ? AND prompt_version = ? AND dataset_id = ?
                 AND status IN ('submitting', 'submitted') ORDER BY created_at, batch_key""",
            [judge_id, prompt_version, ds],
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def begin_batch(
        self, batch_key: str, run_id: int, judge_id: int, prompt_version: str, dataset: str, units: list
    ) -> None:
        """A batch about to be submitted: its units, under our key, before anything reaches the provider."""
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            cur.execute(
                """INSERT INTO judge_batches (batch_key, run_id, judge_id, dataset_id, prompt_version, units_json,
                                              n_requests, status)
                   VALUES (?, ?, ?, ?, ?, ?, ?, 'submitting')""",
                [batch_key, run_id, judge_id, ds, prompt_version, json.dumps(units), len(units)],
            )

    def batch_update(self, batch_key: str, **fields: Any) -> None:
        with self.transaction() as cur:
            cur.execute(*batch_update_sql(batch_key, fields))

    def drop_batch(self, batch_key: str) -> None:
        """A 'submitting' batch the provider never created: its units go back to planning."""
        with self.transaction() as cur:
            cur.execute("DELETE FROM judge_batches WHERE batch_key = ? AND status = 'submitting'", [batch_key])

    def batches_frame(self, run_id: int | None = None) -> pd.DataFrame:
        where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
        return (
            self._cur()
            .execute(
                f"""SELECT batch_key, batch_id, run_id, n_requests, status, input_file_id, output_file_id,
                           error_file_id, message, created_at, updated_at
                    FROM judge_batches {where} ORDER BY created_at, batch_key""",
                params,
            )
            .df()
        )

    def create_run(
        self,
        judge_id: int,
        dataset: str,
        planned: int,
        config: dict,
        owner_pid: int | None = None,
        owner_host: str | None = None,
        definition: dict | None = None,
        owner_start: int | None = None,
    ) -> int:
        """A new run row, status 'running', owned by the given process (its heartbeat starts now): the run's
        lease, held by that process (pid, host and the process's start time) while it runs or is paused.

        ``definition``: what the run covers (``core.app.judging.RunPlan.definition``), kept so that the
        same run can be completed later.
        """
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            run_id = next_id(cur, "judge_runs", "run_id")
            cur.execute(
                """INSERT INTO judge_runs (run_id, judge_id, dataset_id, status, planned, config_json,
                                           owner_pid, owner_host, heartbeat_at, definition_json, owner_start)
                   VALUES (?, ?, ?, 'running', ?, ?, ?, ?, current_timestamp, ?, ?)""",
                [
                    run_id,
                    judge_id,
                    ds,
                    planned,
                    redact.redact(json.dumps(config)),
                    owner_pid,
                    owner_host,
                    None if definition is None else json.dumps(definition),
                    owner_start,
                ],
            )
        return run_id

    def run_record(self, run_id: int) -> tuple[str, str, str | None] | None:
        """(dataset, configuration JSON, definition JSON) of a run; None when there is no such run."""
        row = (
            self._cur()
            .execute(
                """SELECT d.name, r.config_json, r.definition_json
                   FROM judge_runs r JOIN datasets d USING (dataset_id) WHERE r.run_id = ?""",
                [int(run_id)],
            )
            .fetchone()
        )
        return None if row is None else (str(row[0]), str(row[1]), row[2])

    def job_tokens(self, judge_id: int, dataset: str, definition: dict) -> tuple[int, int]:
        """(prompt, completion) tokens spent by the earlier runs of one job: this judge's runs on the
        dataset whose stored definition equals ``definition``."""
        ds = self.dataset(dataset).dataset_id
        rows = (
            self._cur()
            .execute(
                """SELECT definition_json, coalesce(prompt_tokens, 0), coalesce(completion_tokens, 0)
                   FROM judge_runs WHERE judge_id = ? AND dataset_id = ? AND definition_json IS NOT NULL""",
                [judge_id, ds],
            )
            .fetchall()
        )
        same = [(p, c) for d, p, c in rows if json.loads(d) == definition]
        return sum(int(p) for p, _ in same), sum(int(c) for _, c in same)

    def leased_runs(self, also: list[int] | None = None) -> pd.DataFrame:
        """Runs whose lease may be held: status 'running' or 'paused' and not finished (a paused run's process
        may be waiting out an outage; one that ended paused has let go), plus the runs ``also`` names (those with
        a journal), with owner and heartbeat."""
        ids = sorted({int(i) for i in also or []})
        extra = f"OR run_id IN ({', '.join('?' for _ in ids)})" if ids else ""
        return (
            self._cur()
            .execute(
                f"""SELECT run_id, status, finished_at, owner_pid, owner_host, owner_start, heartbeat_at, updated_at,
                          epoch(current_timestamp::TIMESTAMP) - epoch(coalesce(heartbeat_at, updated_at))
                            AS seconds_since_heartbeat
                   FROM judge_runs WHERE (status IN ('running', 'paused') AND finished_at IS NULL) {extra}
                   ORDER BY run_id""",
                ids,
            )
            .df()
        )

    def run_counts(self, run_id: int) -> dict[str, int]:
        """A run's counters recounted from the judgments it stored (after a kill the row's may lag)."""
        done, failed, parse_errors = one_row(
            self._cur(),
            """SELECT count(*) FILTER (WHERE NOT coalesce(call_failed, false)),
                      count(*) FILTER (WHERE coalesce(call_failed, false)),
                      count(*) FILTER (WHERE parse_error IS NOT NULL AND NOT coalesce(call_failed, false))
               FROM judgments WHERE run_id = ?""",
            [run_id],
        )
        return {"done": int(done), "failed": int(failed), "parse_errors": int(parse_errors)}

    def run_status(self, run_id: int) -> str | None:
        row = self._cur().execute("SELECT status FROM judge_runs WHERE run_id = ?", [run_id]).fetchone()
        return None if row is None else str(row[0])

    def update_run(self, run_id: int, **fields: Any) -> None:
        sql, values = _run_update(run_id, fields)
        with self.transaction() as cur:
            cur.execute(sql, values)

    def runs_frame(self, dataset: str | None = None) -> pd.DataFrame:
        where, params = "", []
        if dataset is not None:
            where, params = "WHERE r.dataset_id = ?", [self.dataset(dataset).dataset_id]
        return (
            self._cur()
            .execute(
                f"""SELECT r.run_id, j.name AS judge, d.name AS dataset, r.status, r.planned, r.done, r.failed,
                       r.parse_errors, coalesce(r.deferred, 0) AS deferred, r.prompt_tokens, r.completion_tokens,
                       -- NULL (unknown) unless the run's configuration priced both kinds of token
                       (r.prompt_tokens * TRY_CAST(r.config_json ->> 'price_prompt_per_mtok' AS DOUBLE)
                        + r.completion_tokens * TRY_CAST(r.config_json ->> 'price_completion_per_mtok' AS DOUBLE))
                        / 1e6 AS cost_usd,
                       r.started_at, r.updated_at, r.heartbeat_at,
                       r.finished_at, r.message, r.owner_pid, r.owner_host, r.owner_start, r.definition_json,
                       epoch(current_timestamp::TIMESTAMP) - epoch(coalesce(r.heartbeat_at, r.updated_at))
                         AS seconds_since_heartbeat
                FROM judge_runs r JOIN judges j USING (judge_id) JOIN datasets d USING (dataset_id)
                {where} ORDER BY r.run_id DESC""",
                params,
            )
            .df()
        )

    def parse_failures(self, dataset: str, judge: str | None = None, limit: int = 200) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        params: list[Any] = [ds]
        jf = ""
        if judge is not None:
            jf = "AND j.name = ?"
            params.append(judge)
        params.append(limit)
        return (
            self._cur()
            .execute(
                f"""SELECT g.judgment_id, g.battle_id, j.name AS judge, g."order", g.prompt_version,
                       CASE WHEN g.call_failed THEN 'call failed' ELSE 'unparseable' END AS kind,
                       g.parse_error, g.raw_output, g.raw_truncated, g.created_at
                FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
                WHERE b.dataset_id = ? AND g.parse_error IS NOT NULL {jf}
                ORDER BY g.created_at DESC LIMIT ?""",
                params,
            )
            .df()
        )

    def failed_call_keys(self, judge_id: int, prompt_version: str, dataset: str) -> pd.DataFrame:
        """(battle_id, order, variant) of this judge's stored call failures (no response; retried on request)."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT g.battle_id, g."order", g.variant FROM judgments g JOIN battles b USING (battle_id)
                   WHERE b.dataset_id = ? AND g.judge_id = ? AND g.prompt_version = ? AND g.call_failed""",
                [ds, judge_id, prompt_version],
            )
            .df()
        )
