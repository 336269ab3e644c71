"""Votes cast in the app: one per annotator and battle, stored at once, replaced when the annotator changes it."""

from __future__ import annotations

import pandas as pd

from core.store import sql
from core.store.errors import StoreError
from core.store.queries import Queries

WINNERS = ("a", "b", "tie", "both_bad")
SHOWN_ORDERS = ("ab", "ba")
VOTE_PAGE = "vote-page"


class VoteStore(Queries):
    def cast_vote(self, dataset: str, battle_id: int, annotator: str, winner: str, shown_order: str) -> bool:
        """Store one annotator's vote on a battle (in battle terms) in one transaction; True when it replaced
        their earlier vote on that battle.  The annotator is registered in the dataset ('vote-page')."""
        if winner not in WINNERS:
            raise StoreError(f"a vote's winner must be one of {', '.join(WINNERS)}, not {str(winner)[:20]!r}")
        if shown_order not in SHOWN_ORDERS:
            raise StoreError(f"a vote's shown order must be 'ab' or 'ba', not {str(shown_order)[:20]!r}")
        if not annotator or not annotator.strip() or len(annotator) > 200:
            raise StoreError("a vote needs an annotator name (at most 200 characters)")
        ds = self.dataset(dataset).dataset_id
        with self.transaction() as cur:
            found = cur.execute(
                "SELECT count(*) FROM battles WHERE battle_id = ? AND dataset_id = ?", [int(battle_id), ds]
            ).fetchone()
            if not found or not found[0]:
                raise StoreError(f"battle {int(battle_id)} is not in dataset {dataset!r}")
            gone = cur.execute(
                "DELETE FROM votes WHERE battle_id = ? AND annotator = ? RETURNING battle_id",
                [int(battle_id), annotator],
            ).fetchall()
            cur.execute(
                """INSERT INTO votes (battle_id, annotator, winner, shown_order, voted_at, source)
                   VALUES (?, ?, ?, ?, current_timestamp, ?)""",
                [int(battle_id), annotator, winner, shown_order, VOTE_PAGE],
            )
            cur.execute(
                """INSERT INTO annotators (dataset_id, annotator, kind) VALUES (?, ?, ?)
                   ON CONFLICT DO NOTHING""",
                [ds, annotator, VOTE_PAGE],
            )
        return bool(gone)

    def annotator_votes(self, dataset: str, annotator: str) -> pd.DataFrame:
        """One annotator's votes on the dataset: battle_id, winner, shown_order, voted_at, source."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT v.battle_id, v.winner, v.shown_order, v.voted_at, v.source
                   FROM votes v JOIN battles b USING (battle_id)
                   WHERE b.dataset_id = ? AND v.annotator = ? ORDER BY v.voted_at NULLS FIRST, v.battle_id""",
                [ds, annotator],
            )
            .df()
        )

    def votes_on(self, dataset: str, battle_ids: list[int]) -> pd.DataFrame:
        """Every vote on these battles: battle_id, annotator, winner, shown_order, voted_at."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT v.battle_id, v.annotator, v.winner, v.shown_order, v.voted_at
                   FROM votes v JOIN battles b USING (battle_id)
                   WHERE b.dataset_id = ? AND v.battle_id IN (SELECT unnest(?::BIGINT[]))
                   ORDER BY v.battle_id, v.annotator""",
                [ds, [int(b) for b in battle_ids]],
            )
            .df()
        )

    def vote_totals(self, dataset: str) -> tuple[int, int]:
        """(human votes, distinct annotators with an id) of one dataset."""
        ds = self.dataset(dataset).dataset_id
        row = self._one(
            """SELECT count(*), count(DISTINCT v.annotator) FROM votes v JOIN battles b USING (battle_id)
               WHERE b.dataset_id = ?""",
            [ds],
        )
        return int(row[0]), int(row[1])

    def battle_texts(self, dataset: str, battle_id: int) -> dict | None:
        """The prompt and both answers of one battle, with their turns when there are several (the Vote page)."""
        ds = self.dataset(dataset).dataset_id
        cur = self._cur().execute(
            """SELECT b.battle_id, b.model_a, b.model_b, p.text AS prompt, ca.text AS text_a, cb.text AS text_b,
                      p.turns AS prompt_turns, ca.turns AS turns_a, cb.turns AS turns_b
               FROM battles b LEFT JOIN prompts p USING (prompt_id)
               LEFT JOIN completions ca ON ca.completion_id = b.completion_a
               LEFT JOIN completions cb ON cb.completion_id = b.completion_b
               WHERE b.dataset_id = ? AND b.battle_id = ?""",
            [ds, int(battle_id)],
        )
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row))

    def votable_battles(self, dataset: str) -> pd.DataFrame:
        """Battles with both answers' texts (what the Vote page can show): battle_id, model_a, model_b, n_votes."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """WITH nv AS (SELECT v.battle_id, count(*) AS n FROM votes v JOIN battles b USING (battle_id)
                               WHERE b.dataset_id = ? GROUP BY v.battle_id)
                   SELECT b.battle_id, b.model_a, b.model_b, coalesce(nv.n, 0) AS n_votes
                   FROM battles b JOIN completions ca ON ca.completion_id = b.completion_a
                   JOIN completions cb ON cb.completion_id = b.completion_b
                   LEFT JOIN nv USING (battle_id)
                   WHERE b.dataset_id = ? AND ca.text IS NOT NULL AND cb.text IS NOT NULL
                   ORDER BY b.battle_id""",
                [ds, ds],
            )
            .df()
        )

    def judge_labels(self, dataset: str, judge: str, battle_ids: list[int]) -> pd.DataFrame:
        """The judge's hard label (the Leaderboard's rule over its orders) of these battles: battle_id, judge_hard."""
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        query = (
            self._battle_sql(True)
            + f"""SELECT base.battle_id, {sql.hard_label_expr()} AS judge_hard FROM base
                  WHERE base.battle_id IN (SELECT unnest($ids::BIGINT[])) ORDER BY base.battle_id"""
        )
        params = {"ds": ds, "judge": judge_id, "version": version, "ids": [int(b) for b in battle_ids]}
        return self._cur().execute(query, params).df()

    def votes_for_export(self, dataset: str) -> pd.DataFrame:
        """Every vote with its battle's texts (LMArena's layout is one row per vote, the conversations in it)."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT v.battle_id, b.external_id, b.model_a, b.model_b, v.winner, v.annotator, v.shown_order,
                          epoch(v.voted_at) AS voted_at, v.source, b.language, b.turn, b.tstamp,
                          p.text AS prompt, p.turns AS prompt_turns, ca.text AS text_a, ca.turns AS turns_a,
                          cb.text AS text_b, cb.turns AS turns_b
                   FROM votes v JOIN battles b USING (battle_id) LEFT JOIN prompts p USING (prompt_id)
                   LEFT JOIN completions ca ON ca.completion_id = b.completion_a
                   LEFT JOIN completions cb ON cb.completion_id = b.completion_b
                   WHERE b.dataset_id = ? ORDER BY v.battle_id, v.annotator""",
                [ds],
            )
            .df()
        )
