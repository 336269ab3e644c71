"""Persisted derived results: payloads keyed by what was computed from which data, by which code."""

from __future__ import annotations

import pandas as pd

from core.store.base import StoreBase


class ResultsStore(StoreBase):
    """The ``results`` table: one row per key, replaced when recomputed."""

    def get_result(self, key: str, stamp: str, code_version: str) -> bytes | None:
        """The payload stored under ``key`` if it was computed from data ``stamp`` by ``code_version``."""
        found = self.get_result_any_stamp(key, code_version)
        return found[1] if found is not None and found[0] == stamp else None

    def get_result_any_stamp(self, key: str, code_version: str) -> tuple[str, bytes] | None:
        """(stamp, payload) of what ``code_version`` stored under ``key``, whatever data it was computed from."""
        # By key alone: the primary-key index answers that in milliseconds, where the three-column filter
        # scanned every payload (100 ms with 500 results); a key has one row, its stamp and code checked here.
        row = self._cur().execute("SELECT stamp, code_version, payload FROM results WHERE key = ?", [key]).fetchone()
        if row is None or row[1] != code_version:
            return None
        return str(row[0]), bytes(row[2])

    def put_result(
        self, key: str, kind: str, dataset: str | None, stamp: str, code_version: str, payload: bytes, seconds: float
    ) -> None:
        with self.transaction() as cur:
            cur.execute(
                """INSERT OR REPLACE INTO results (key, kind, dataset, stamp, code_version, payload, seconds)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [key, kind, dataset, stamp, code_version, payload, seconds],
            )

    def results_frame(self) -> pd.DataFrame:
        """What is persisted: key, kind, dataset, stamp, code version, size, seconds, when."""
        return (
            self._cur()
            .execute(
                """SELECT key, kind, dataset, stamp, code_version, octet_length(payload) AS bytes, seconds, created_at
                   FROM results ORDER BY created_at"""
            )
            .df()
        )

    def forget_results(self, dataset: str | None = None) -> int:
        """Delete persisted results (of one dataset, or all); returns how many."""
        with self.transaction() as cur:
            where, params = ("WHERE dataset = ?", [dataset]) if dataset is not None else ("", [])
            n = cur.execute(f"SELECT count(*) FROM results {where}", params).fetchone()
            cur.execute(f"DELETE FROM results {where}", params)
        return int(n[0]) if n else 0
