"""Generated answers: a model's completions of a dataset's prompts, one row per (prompt, model, settings)."""

from __future__ import annotations

import json

import pandas as pd

from core import redact
from core.store.base import StoreBase, next_id


class GenerationStore(StoreBase):
    """Prompts to answer, answers already generated, and the write of one batch of results."""

    def prompts_for_generation(self, dataset: str) -> pd.DataFrame:
        """Every prompt of the dataset: prompt_id, text (the first user turn), turns (JSON list or None)."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT prompt_id, external_id, text, turns FROM prompts
                   WHERE dataset_id = ? AND text IS NOT NULL ORDER BY prompt_id""",
                [ds],
            )
            .df()
        )

    def generation_status(self, dataset: str, model: str, settings_key: str) -> pd.DataFrame:
        """prompt_id, status of the generations of this model and settings on the dataset."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT prompt_id, status FROM generations
                   WHERE dataset_id = ? AND model = ? AND settings_key = ?""",
                [ds, model, settings_key],
            )
            .df()
        )

    def generations_frame(self, dataset: str, model: str | None = None) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        where = "WHERE g.dataset_id = ?"
        params: list[object] = [ds]
        if model is not None:
            where += " AND g.model = ?"
            params.append(model)
        return (
            self._cur()
            .execute(
                f"""SELECT g.generation_id, g.prompt_id, p.external_id, g.model, g.settings_key, g.status, g.text,
                       g.reasoning, g.turns, g.prompt_tokens, g.completion_tokens, g.latency_ms, g.error
                FROM generations g JOIN prompts p USING (prompt_id) {where} ORDER BY g.prompt_id""",
                params,
            )
            .df()
        )

    def record_generations(self, dataset: str, model: str, settings_key: str, settings: dict, rows: list[dict]) -> int:
        """Store finished generations in one transaction; an answer also becomes the model's completion of the
        prompt (unless the prompt already has one from this model).  A failure is stored with its reason and is
        replaced by a later success; a success is never replaced.  Returns the rows written."""
        if not rows:
            return 0
        ds = self.dataset(dataset).dataset_id
        written = 0
        # Everything an endpoint returned is redacted before it is stored: an answer may repeat the key.
        secrets = redact.secrets()
        rows = [
            {k: redact.redact(v, secrets) if k in ("text", "reasoning", "turns", "error") else v for k, v in r.items()}
            for r in rows
        ]
        with self.transaction() as cur:
            cur.execute("INSERT INTO models (dataset_id, model) VALUES (?, ?) ON CONFLICT DO NOTHING", [ds, model])
            for row in rows:
                pid = int(row["prompt_id"])
                old = cur.execute(
                    """SELECT generation_id, status FROM generations
                       WHERE prompt_id = ? AND model = ? AND settings_key = ?""",
                    [pid, model, settings_key],
                ).fetchone()
                if old is not None and old[1] == "ok":
                    continue  # idempotent: a repeated success changes nothing
                if old is not None:
                    cur.execute("DELETE FROM generations WHERE generation_id = ?", [old[0]])
                gid = next_id(cur, "generations", "generation_id")
                cur.execute(
                    """INSERT INTO generations (generation_id, dataset_id, prompt_id, model, settings_key, status, text,
                           reasoning, turns, prompt_tokens, completion_tokens, latency_ms, error, settings_json)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    [
                        gid,
                        ds,
                        pid,
                        model,
                        settings_key,
                        row["status"],
                        row.get("text"),
                        row.get("reasoning"),
                        row.get("turns"),
                        row.get("prompt_tokens"),
                        row.get("completion_tokens"),
                        row.get("latency_ms"),
                        row.get("error") or None,
                        redact.redact(json.dumps(settings), secrets),
                    ],
                )
                written += 1
                if row["status"] != "ok":
                    continue
                has = cur.execute(
                    "SELECT 1 FROM completions WHERE prompt_id = ? AND model = ?", [pid, model]
                ).fetchone()
                if has is None:
                    cid = next_id(cur, "completions", "completion_id")
                    style = row.get("style") or {}
                    cur.execute(
                        """INSERT INTO completions (completion_id, dataset_id, prompt_id, model, text, length,
                               n_headers, n_bold, n_list_items, turns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                        [
                            cid,
                            ds,
                            pid,
                            model,
                            row.get("text"),
                            style.get("length"),
                            style.get("n_headers"),
                            style.get("n_bold"),
                            style.get("n_list_items"),
                            row.get("turns"),
                        ],
                    )
        return written

    def answered_prompts(self, dataset: str) -> pd.DataFrame:
        """(prompt_id, model) of every completion with text in the dataset."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                "SELECT prompt_id, model FROM completions WHERE dataset_id = ? AND text IS NOT NULL ORDER BY prompt_id",
                [ds],
            )
            .df()
        )

    def model_battles(self, dataset: str, model: str) -> pd.DataFrame:
        """battle_id, prompt_id, model_a, model_b, planned (added by a plan, not imported) of every battle ``model``
        plays in the dataset, oldest first."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT battle_id, prompt_id, model_a, model_b, coalesce(external_id = 'planned', false) AS planned
                   FROM battles
                   WHERE dataset_id = ? AND (model_a = ? OR model_b = ?) ORDER BY battle_id""",
                [ds, model, model],
            )
            .df()
        )

    def add_battles(self, dataset: str, pairs: pd.DataFrame) -> int:
        """Add battles (prompt_id, model_a, model_b) between completions the dataset holds; a battle of the same
        prompt and pair (either way round) already there is skipped.  Returns the battles added."""
        ds = self.dataset(dataset).dataset_id
        added = 0
        with self.transaction() as cur:
            key = cur.execute("SELECT coalesce(max(battle_key), -1) FROM battles WHERE dataset_id = ?", [ds]).fetchone()
            next_key = int(key[0]) + 1 if key else 0
            for r in pairs.itertuples():
                pid, a, b = int(r.prompt_id), str(r.model_a), str(r.model_b)
                exists = cur.execute(
                    """SELECT 1 FROM battles WHERE dataset_id = ? AND prompt_id = ?
                       AND ((model_a = ? AND model_b = ?) OR (model_a = ? AND model_b = ?))""",
                    [ds, pid, a, b, b, a],
                ).fetchone()
                if exists:
                    continue
                comp = dict(
                    cur.execute(
                        "SELECT model, completion_id FROM completions WHERE prompt_id = ? AND model IN (?, ?)",
                        [pid, a, b],
                    ).fetchall()
                )
                if a not in comp or b not in comp:
                    continue
                bid = next_id(cur, "battles", "battle_id")
                cur.execute(
                    """INSERT INTO battles (battle_id, dataset_id, battle_key, external_id, prompt_id, model_a, model_b,
                           completion_a, completion_b, language, turn)
                       SELECT ?, ?, ?, 'planned', p.prompt_id, ?, ?, ?, ?, p.language,
                              CASE WHEN p.turns IS NULL THEN 1 ELSE json_array_length(p.turns) END
                       FROM prompts p WHERE p.prompt_id = ?""",
                    [bid, ds, next_key, a, b, comp[a], comp[b], pid],
                )
                next_key += 1
                added += 1
        return added
