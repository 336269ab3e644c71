"""Read queries: the frames and sufficient statistics the use cases need.

Targets and labels are computed in SQL from :mod:`core.store.sql`, whose
expressions are built from the rules in :mod:`core.domain`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.domain import BATTLE_COLUMNS, SCORE_COLUMNS, Slice, soft_target, validate
from core.methods import TARGETS
from core.store import sql
from core.store.base import StoreBase
from core.store.errors import StoreError

# Separates a base data stamp's votes (count, newest, annotators) from the rest (datasets, battles, texts).
VOTES_SEGMENT = "/votes="


class Queries(StoreBase):
    """Everything the statistics and pages read from a store."""

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
        in_dataset = None
        if dataset is not None:
            in_dataset = "b.dataset_id = ?"
            params.append(self.dataset(dataset).dataset_id)
        query = f"""
            SELECT j.name AS judge, j.family, j.model, j.template, j.prompt_version, j.profile,
                   j.params_json, count(*) AS n_judgments,
                   list(DISTINCT g."order" ORDER BY g."order") AS orders,
                   count(g.parse_error) AS n_parse_errors
            FROM judgments g JOIN judges j USING (judge_id) JOIN battles b USING (battle_id)
            {sql.where(in_dataset, "g.variant = 'original'")}
            GROUP BY ALL ORDER BY j.name
        """
        return self._cur().execute(query, params).df()

    def judge_capabilities(self, dataset: str) -> pd.DataFrame:
        """Per judge of ``dataset``: parsed judgments, orders seen, and how many carry rubric scores,
        A/B probabilities and stated confidence (what each view needs)."""
        ds = self.dataset(dataset).dataset_id
        any_score = " OR ".join(f"g.{c} IS NOT NULL" for c in SCORE_COLUMNS)
        return (
            self._cur()
            .execute(
                f"""
            SELECT j.name AS judge, j.template, j.profile, count(*) AS n_judgments,
                   list(DISTINCT g."order" ORDER BY g."order") AS orders,
                   count(*) FILTER (WHERE {any_score}) AS n_rubric,
                   count(g.p_a) AS n_logprob, count(g.confidence) AS n_confidence
            FROM judgments g JOIN judges j USING (judge_id) JOIN battles b USING (battle_id)
            WHERE b.dataset_id = ? AND g.variant = 'original' AND g.parse_error IS NULL
            GROUP BY ALL ORDER BY j.name
            """,
                [ds],
            )
            .df()
        )

    def provenance(self, dataset: str) -> dict:
        """Where a dataset came from and a fingerprint of what the store holds for it.

        ``fingerprint``: a hash over every battle, vote, judgment and grade row (order-free
        sums of DuckDB row hashes), so two stores that print the same fingerprint
        hold the same data; ``imports``: the SHA-256 of each imported file.
        """
        info = self.dataset(dataset)
        ds = info.dataset_id
        sums = self._one(
            f"""SELECT
                 (SELECT coalesce(sum(hash(battle_key, model_a, model_b, external_id, language, turn)), 0)
                    FROM battles WHERE dataset_id = $1),
                 (SELECT coalesce(sum(hash(b.battle_key, v.annotator, v.winner)), 0)
                    FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $1),
                 (SELECT coalesce(sum(hash(b.battle_key, j.name, g."order", g.prompt_version, g.variant, g.verdict,
                                           g.p_a, {", ".join("g." + c for c in SCORE_COLUMNS)})), 0)
                    FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
                    WHERE b.dataset_id = $1)""",
            [ds],
        )
        n_grades, grade_sum = self._one(
            """SELECT count(*), coalesce(sum(hash(p.external_id, g.model, g.judge, g.prompt_version, g.turn, g.run,
                                                  g.score)), 0)
               FROM grades g JOIN prompts p USING (prompt_id) WHERE g.dataset_id = ?""",
            [ds],
        )
        if n_grades:  # a fourth part only where there are grades: every other dataset's fingerprint is unchanged
            sums = (*sums, grade_sum)
        imports = (
            self._cur()
            .execute(
                "SELECT content_hash, format, path, imported_at FROM imports WHERE dataset_id = ? ORDER BY imported_at",
                [ds],
            )
            .fetchall()
        )
        return {
            "dataset": info.name,
            "source": info.source,
            "fingerprint": ":".join(f"{int(x) % (1 << 64):016x}" for x in sums),
            "imports": [{"sha256": h, "format": f, "path": p, "imported_at": str(at)} for h, f, p, at in imports],
            "meta": self.dataset_meta(dataset),
        }

    # ------------------------------------------------------------------ info
    def info(self) -> dict:
        cur = self._cur()
        out: dict[str, Any] = {"schema_version": self.schema_version, "path": self.path, "datasets": []}
        ds = cur.execute("SELECT dataset_id, name, source FROM datasets ORDER BY dataset_id").fetchall()
        for ds_id, name, source in ds:
            row = self._one(
                """
                SELECT
                  (SELECT count(*) FROM models WHERE dataset_id = $1),
                  (SELECT count(*) FROM prompts WHERE dataset_id = $1),
                  (SELECT count(*) FROM battles WHERE dataset_id = $1),
                  (SELECT count(*) FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $1),
                  (SELECT count(DISTINCT annotator) FROM votes v JOIN battles b USING (battle_id)
                     WHERE b.dataset_id = $1 AND annotator IS NOT NULL),
                  (SELECT count(*) FROM completions WHERE dataset_id = $1),
                  (SELECT count(*) FROM judge_runs WHERE dataset_id = $1),
                  (SELECT count(*) FROM grades WHERE dataset_id = $1),
                  -- a multi-turn question is stored as one prompt per turn ("<id>/turn-2", …): count questions
                  (SELECT count(DISTINCT regexp_replace(coalesce(external_id, CAST(prompt_id AS VARCHAR)),
                                                        '/turn-[0-9]+$', ''))
                     FROM prompts WHERE dataset_id = $1)
                """,
                [ds_id],
            )
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
                    "n_grades": row[7],
                    "n_questions": row[8],
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

    def grades_frame(self, dataset: str, judge: str | None = None) -> pd.DataFrame:
        """A dataset's single-answer grades: model, judge, prompt_version, turn, run, score (NaN: unread), the
        prompt's external id, in the order they were imported; ``judge``: only that judge's."""
        ds = self.dataset(dataset).dataset_id
        where, params = ("AND g.judge = ?", [judge]) if judge is not None else ("", [])
        return (
            self._cur()
            .execute(
                f"""SELECT g.model, g.judge, g.prompt_version, coalesce(g.turn, 1) AS turn, g.run, g.score,
                           p.external_id, g.parse_error
                    FROM grades g JOIN prompts p USING (prompt_id)
                    WHERE g.dataset_id = ? {where} ORDER BY g.grade_id""",
                [ds, *params],
            )
            .df()
        )

    def version_token(self) -> str:
        """Changes whenever data changes: a cache key for derived results."""
        base, judges = self.version_stamps()
        return base + "|" + ";".join(f"{d}/{j}={v}" for (d, j), v in sorted(judges.items()))

    def version_stamps(self) -> tuple[str, dict[tuple[str, str], str]]:
        """(the stamp of everything but judgments, {(dataset, judge): the stamp of that judge's judgments there}).

        A result that reads one judge's judgments is keyed on the base stamp
        and that judge's stamp, so a run writing another judge does not
        invalidate it.  A judgment replaced in place (a parse failure
        overwritten by a success keeps its id and the count) changes its
        judge's number of failures, which is part of the stamp.
        """
        *data, n_votes, last_vote, n_annotators = self._one(
            """SELECT (SELECT count(*) FROM datasets), (SELECT max(dataset_id) FROM datasets),
                      (SELECT max(battle_id) FROM battles), (SELECT count(*) FROM battles),
                      (SELECT count(*) FROM completions), (SELECT count(*) FROM models),
                      (SELECT count(*) FROM grades), (SELECT max(grade_id) FROM grades),
                      (SELECT coalesce(sum(hash(name, family, model, template, prompt_version)), 0) FROM judges),
                      (SELECT count(*) FROM votes), (SELECT max(voted_at) FROM votes),
                      (SELECT count(*) FROM annotators)"""
        )
        # The votes in a segment of their own: a result computed before the latest votes can be told apart
        # from one computed on other battles or judgments (``core.app.persist.votes_behind``).
        base = f"{':'.join(str(x) for x in data)}{VOTES_SEGMENT}{n_votes}:{last_vote}:{n_annotators}"
        of_dataset = self._judgment_datasets()
        if of_dataset is None:
            return base, {}
        rows = (
            self._cur()
            .execute(
                f"""SELECT d.name, g.name, s.n, s.mx, s.nf FROM (
                        SELECT r.dataset_id, j.judge_id, count(*) AS n, max(j.judgment_id) AS mx,
                               count(j.parse_error) AS nf
                        FROM judgments j JOIN {of_dataset} GROUP BY ALL) s
                    JOIN datasets d USING (dataset_id) JOIN judges g USING (judge_id)"""
            )
            .fetchall()
        )
        return base, {(d, g): f"{n}:{mx}:{nf}" for d, g, n, mx, nf in rows}

    def _judgment_datasets(self) -> str | None:
        """A join clause giving a judgment ``j`` its battle's dataset as ``r.dataset_id`` (None: no battles).

        Joining millions of judgments to their battles took 0.2 s of every first page at 3M battles.  Each
        dataset's battles are written as one block of ids, so while the datasets' id ranges do not overlap a
        judgment's dataset is the range holding its battle (a join against one row per dataset, 0.02 s);
        otherwise the battles say."""
        ranges = sorted(
            self._cur()
            .execute("SELECT min(battle_id), max(battle_id), dataset_id FROM battles GROUP BY dataset_id")
            .fetchall()
        )
        if not ranges:
            return None
        disjoint = all(hi < lo for (_, hi, _), (lo, _, _) in zip(ranges, ranges[1:]))
        blocks = ", ".join(f"({int(lo)}, {int(hi)}, {int(ds)})" for lo, hi, ds in ranges)
        if disjoint:
            return f"(VALUES {blocks}) r(lo, hi, dataset_id) ON j.battle_id BETWEEN r.lo AND r.hi"
        return "battles r USING (battle_id)"

    def judge_names(self, dataset: str) -> list[str]:
        """Judges with judgments (original presentations) in ``dataset``, by name: the sidebar's list, which a
        first visit after a restart used to take from :meth:`judges_frame`'s counts (0.3 s at 1M battles)."""
        ds = self.dataset(dataset).dataset_id
        of_dataset = self._judgment_datasets()
        if of_dataset is None:
            return []
        rows = (
            self._cur()
            .execute(
                f"""SELECT g.name FROM judges g WHERE g.judge_id IN (
                        SELECT DISTINCT j.judge_id FROM judgments j JOIN {of_dataset}
                        WHERE r.dataset_id = ? AND j.variant = 'original')
                    ORDER BY g.name""",
                [ds],
            )
            .fetchall()
        )
        return [str(name) for (name,) in rows]

    # --------------------------------------------------------------- frames
    def models_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
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
            )
            .df()
        )

    def annotators_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """
            SELECT v.annotator, count(*) AS n_votes, any_value(a.kind) AS kind,
                   any_value(a.true_ability) AS true_ability
            FROM votes v JOIN battles b USING (battle_id)
            LEFT JOIN annotators a ON a.dataset_id = b.dataset_id AND a.annotator = v.annotator
            WHERE b.dataset_id = ? AND v.annotator IS NOT NULL
            GROUP BY v.annotator ORDER BY v.annotator
            """,
                [ds],
            )
            .df()
        )

    def votes_frame(self, dataset: str, sample: int | None = None, seed: int = 0, *, where: Slice = ()) -> pd.DataFrame:
        """One row per human vote: battle_id, model_a, model_b, annotator, winner, y.

        ``sample``: at most that many votes, chosen uniformly by a seeded hash
        of the battle id and annotator (the same votes for the same data).
        ``where``: only the votes on the battles of that slice.
        """
        ds = self.dataset(dataset).dataset_id
        cond, params = self._slice(where)
        query = f"""
            SELECT v.battle_id, b.model_a, b.model_b, v.annotator, v.winner, {sql.outcome_y_expr("v.winner")} AS y,
                   b.language, b.tstamp
            FROM votes v JOIN battles b USING (battle_id)
            WHERE b.dataset_id = $ds {cond}
            """
        params["ds"] = ds
        if sample is not None:
            query = (
                f"SELECT * FROM ({query} ORDER BY hash(battle_id + $seed, annotator) LIMIT $sample) "
                "ORDER BY battle_id, annotator"
            )
            params.update(sample=int(sample), seed=int(seed))
        else:
            query += " ORDER BY v.battle_id, v.annotator"
        return self._cur().execute(query, params).df()

    def _judge_filter(self, judge: str | None, dataset_id: int) -> tuple[int | None, str | None]:
        if judge is None:
            return None, None
        row = self._cur().execute("SELECT judge_id, prompt_version FROM judges WHERE name = ?", [judge]).fetchone()
        if row is None:
            known = ", ".join(self.judges_frame()["judge"]) or "none"
            raise StoreError(f"no judge named {judge!r} in {self.path} (judges: {known})")
        judge_id, version = row
        if version is not None:
            has = self._one(
                """SELECT count(*) FROM judgments g JOIN battles b USING (battle_id)
                   WHERE judge_id = ? AND prompt_version = ? AND b.dataset_id = ?""",
                [judge_id, version, dataset_id],
            )[0]
            if not has:
                version = None  # judgments only exist under other versions: use them all
        return judge_id, version

    @staticmethod
    def _slice(where: Slice, battle: str = "b") -> tuple[str, dict[str, Any]]:
        """A slice as ``AND …`` on the battles row ``battle`` ('' for none) and its parameters."""
        cond, params = sql.slice_condition(where, battle)
        return (f"AND {cond}" if cond else ""), dict(params)

    def _battle_sql(self, with_judge: bool, slice_cond: str = "") -> str:
        """Per-battle CTE: human label, judge gaps, hard label, logprob p's (the battles of a slice only when
        ``slice_cond`` is :meth:`_slice`'s condition on ``b``)."""
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
                       {sql.rubric_gap_expr("g.")} AS gap, {sql.outcome_y_expr("g.verdict")} AS vy
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
                SELECT v.battle_id, avg({sql.outcome_y_expr("v.winner")}) AS human_y, count(*) AS n_votes
                FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $ds
                GROUP BY v.battle_id
            ){judge_cte},
            base AS (
                SELECT b.battle_id, b.battle_key, b.external_id, b.model_a, b.model_b, b.prompt_id,
                       b.language, b.turn, b.tstamp, hv.human_y, coalesce(hv.n_votes, 0) AS n_votes,
                       b.completion_a, b.completion_b {judge_cols}
                FROM battles b LEFT JOIN hv USING (battle_id) {judge_join}
                WHERE b.dataset_id = $ds {slice_cond}
            )"""

    def battle_frame(
        self,
        dataset: str,
        judge: str | None = None,
        tau: float | None = None,
        sample: int | None = None,
        seed: int = 0,
        *,
        where: Slice = (),
    ) -> pd.DataFrame:
        """One row per battle with everything the fits and diagnostics need.

        Columns: ``core.domain.BATTLE_FRAME`` (validated), plus ``soft_y`` when
        ``tau`` is given.  Without a judge the judge columns are missing.
        ``sample``: at most that many of the battles the judge judged (all
        battles without a judge), chosen uniformly by a seeded hash of the
        battle id: the same battles for the same data, whatever the scan order.
        ``where``: only the battles of that slice.
        """
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        cond, params = self._slice(where)
        query = (
            self._battle_sql(judge is not None, cond)
            + f"""
            SELECT base.*,
                   {sql.hard_label_expr()} AS judge_hard,
                   {sql.battle_gap_expr()} AS gap,
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
        """
        )
        params["ds"] = ds
        if sample is None:
            query += " ORDER BY base.battle_id"
        else:
            judged = "WHERE base.n_judgments > 0" if judge is not None else ""
            query = (
                f"SELECT * FROM ({query} {judged} ORDER BY hash(base.battle_id + $seed) LIMIT $sample) "
                "ORDER BY battle_id"
            )
            params.update(sample=int(sample), seed=int(seed))
        if judge is not None:
            params.update(judge=judge_id, version=version)
        df = self._cur().execute(query, params).df()
        df = df[list(BATTLE_COLUMNS)]
        for col in ("correct_a", "correct_b", "echo_a", "echo_b"):
            df[col] = df[col].astype("boolean")
        if tau is not None:
            df["soft_y"] = soft_target(df["gap"].to_numpy(dtype=float), tau)
        validate(df, f"the battle frame of {dataset!r}")
        return df

    def hard_label_cells(self, dataset: str, judge: str) -> pd.DataFrame:
        """The judge's hard labels counted per (model_a, model_b, label): model_a, model_b, y, n.

        The sufficient statistics of a Bradley–Terry fit on hard labels, without
        reading the battles one by one.
        """
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        query = (
            self._battle_sql(True)
            + f"""
            SELECT model_a, model_b, y, count(*) AS n FROM (
                SELECT base.model_a, base.model_b, {sql.hard_label_expr()} AS y FROM base WHERE base.n_judgments > 0
            ) WHERE y IS NOT NULL GROUP BY ALL ORDER BY ALL
            """
        )
        return self._cur().execute(query, {"ds": ds, "judge": judge_id, "version": version}).df()

    def n_judged_battles(self, dataset: str, judge: str) -> int:
        """Battles of ``dataset`` with at least one of the judge's judgments."""
        ds = self.dataset(dataset).dataset_id
        judge_id, _ = self._judge_filter(judge, ds)
        row = self._one(
            """SELECT count(DISTINCT j.battle_id) FROM judgments j JOIN battles b USING (battle_id)
               WHERE b.dataset_id = ? AND j.judge_id = ?""",
            [ds, judge_id],
        )
        return int(row[0])

    def slice_values(self, dataset: str) -> pd.DataFrame:
        """Every slice term the dataset's battles carry: key, value, n_battles, n_votes (most battles first).

        Keys as :data:`core.domain.Slice` reads them: the battle's language and turn, the prompt's category and
        its attributes; a value no battle has is not listed.
        """
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """
            WITH nv AS (
                SELECT v.battle_id, count(*) AS n FROM votes v JOIN battles b USING (battle_id)
                WHERE b.dataset_id = $ds GROUP BY v.battle_id
            ),
            bs AS (
                SELECT b.battle_id, b.language, b.turn, b.prompt_id, coalesce(nv.n, 0) AS n_votes
                FROM battles b LEFT JOIN nv USING (battle_id) WHERE b.dataset_id = $ds
            ),
            terms AS (
                SELECT 'language' AS key, language AS value, n_votes FROM bs WHERE language IS NOT NULL
                UNION ALL SELECT 'turn', CAST(turn AS VARCHAR), n_votes FROM bs WHERE turn IS NOT NULL
                UNION ALL SELECT 'category', p.category, bs.n_votes FROM bs JOIN prompts p USING (prompt_id)
                          WHERE p.category IS NOT NULL
                UNION ALL SELECT a.key, a.value, bs.n_votes FROM bs JOIN prompt_attributes a USING (prompt_id)
            )
            SELECT key, value, count(*) AS n_battles, sum(n_votes)::BIGINT AS n_votes FROM terms
            GROUP BY key, value ORDER BY key, n_battles DESC, value
            """,
                {"ds": ds},
            )
            .df()
        )

    def turn_counts(self, dataset: str) -> pd.DataFrame:
        """Battles per conversation turn (turn, n), turns known only; empty when no battle has one."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                "SELECT turn, count(*) AS n FROM battles WHERE dataset_id = ? AND turn IS NOT NULL "
                "GROUP BY turn ORDER BY turn",
                [ds],
            )
            .df()
        )

    def pair_stats(
        self,
        dataset: str,
        target: str,
        judge: str | None = None,
        tau: float | None = None,
        *,
        battle_ids: Sequence[int] | None = None,
        turns: tuple[int, int | None] | None = None,
        where: Slice = (),
    ) -> pd.DataFrame:
        """Sufficient statistics per ordered pair: model_a, model_b, n, s, ss.

        ``ss`` (Σ y²) keeps the sandwich covariance exact for soft targets.

        ``target``: 'human' (every vote counts, and the cluster sums
        ``core.stats.bt.CLUSTER_COLUMNS`` make the votes on one battle one
        cluster of the sandwich), 'hard' (judge hard label) or 'soft'
        (σ(τ·gap), clipped).  Battles without the target are left out.
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
            "soft": sql.soft_target_expr("gap", "$tau"),
        }[target]
        ids_filter = ""
        if battle_ids is not None:
            ids_filter = "AND battle_id IN (SELECT unnest($ids))"
        if turns is not None:  # (lo, hi): battles whose turn is in [lo, hi], hi None: no upper bound
            upper = "" if turns[1] is None else "AND turn <= $turn_hi"
            ids_filter += (
                f" AND battle_id IN (SELECT battle_id FROM battles WHERE dataset_id = $ds AND turn >= $turn_lo {upper})"
            )
        cond, params = self._slice(where)
        if target == "human":
            query = self._human_pair_sql(ids_filter, cond)
        else:
            query = self._labelled_pair_sql(y_expr, ids_filter, cond)
        params["ds"] = ds
        if target != "human":
            params.update(judge=judge_id, version=version)
        if target == "soft":
            assert tau is not None  # checked above
            params["tau"] = float(tau)
        if battle_ids is not None:
            params["ids"] = [int(x) for x in battle_ids]
        if turns is not None:
            params["turn_lo"] = int(turns[0])
            if turns[1] is not None:
                params["turn_hi"] = int(turns[1])
        return self._cur().execute(query, params).df()

    def _labelled_pair_sql(self, y_expr: str, ids_filter: str, slice_cond: str = "") -> str:
        """Per ordered pair: battles with a judge target, its sum and sum of squares."""
        return (
            self._battle_sql(True, slice_cond)
            + f""",
            labelled AS (
                SELECT battle_id, model_a, model_b, human_y,
                       {sql.hard_label_expr()} AS judge_hard, {sql.battle_gap_expr()} AS gap
                FROM base
            )
            SELECT model_a, model_b, count(*)::DOUBLE AS n, sum(y) AS s, sum(y * y) AS ss FROM (
                SELECT model_a, model_b, {y_expr} AS y FROM labelled
                WHERE {y_expr} IS NOT NULL {ids_filter}
            ) GROUP BY model_a, model_b ORDER BY model_a, model_b
        """
        )

    @staticmethod
    def _human_pair_sql(ids_filter: str, slice_cond: str = "") -> str:
        """Per ordered pair: every vote (n, Σy, Σy²), the battles voted on, their cluster sums (``CLUSTER_COLUMNS``).

        Each vote counts; the votes on one battle are one cluster for the sandwich.
        """
        return f"""
            WITH votes_y AS (
                SELECT v.battle_id, {sql.outcome_y_expr("v.winner")} AS y
                FROM votes v JOIN battles b USING (battle_id) WHERE b.dataset_id = $ds {slice_cond}
            ),
            per_battle AS (
                SELECT battle_id, count(*) AS n_b, sum(y) AS s_b, sum(y * y) AS ss_b
                FROM votes_y WHERE y IS NOT NULL {ids_filter} GROUP BY battle_id
            )
            SELECT b.model_a, b.model_b, sum(n_b)::DOUBLE AS n, count(*)::DOUBLE AS battles, sum(s_b) AS s,
                   sum(ss_b) AS ss,
                   sum(s_b * s_b) AS cluster_ss, sum(n_b * s_b) AS cluster_ns, sum(n_b * n_b)::DOUBLE AS cluster_nn
            FROM per_battle JOIN battles b USING (battle_id)
            GROUP BY b.model_a, b.model_b ORDER BY b.model_a, b.model_b
        """

    def judgments_frame(
        self, dataset: str, judge: str | None = None, *, variant: str | None = "original", include_raw: bool = False
    ) -> pd.DataFrame:
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
        query = f"""
            SELECT g.judgment_id, g.battle_id, b.battle_key, j.name AS judge, g."order", g.prompt_version,
                   g.variant, g.verdict, {", ".join("g." + c for c in SCORE_COLUMNS)},
                   {sql.rubric_gap_expr("g.")} AS gap, g.p_a, g.confidence, g.parse_error, g.latency_ms,
                   g.prompt_tokens, g.completion_tokens, g.run_id, coalesce(g.call_failed, false) AS call_failed,
                   coalesce(g.raw_truncated, false) AS raw_truncated, b.model_a, b.model_b{raw}
            FROM judgments g JOIN battles b USING (battle_id) JOIN judges j USING (judge_id)
            {sql.where(*where)}
            ORDER BY g.battle_id, j.name, g."order"
        """
        return self._cur().execute(query, params).df()

    def contests_frame(self, dataset: str) -> pd.DataFrame:
        """Judge contests in presentation order: judge, first, second, question_id, winner.

        ``winner`` is the winning model's name or 'Tie' (judge_contests.csv
        convention); judgments with a parse error are left out.
        """
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
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
            )
            .df()
        )

    def pair_coverage(self, dataset: str) -> pd.DataFrame:
        """Battle counts per unordered model pair (for the coverage heatmap)."""
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT least(model_a, model_b) AS model_1, greatest(model_a, model_b) AS model_2,
                      count(*) AS n_battles
               FROM battles WHERE dataset_id = ? GROUP BY ALL ORDER BY ALL""",
                [ds],
            )
            .df()
        )

    def common_baselines(self, dataset: str) -> list[str]:
        """Models that take part in every battle of the dataset (AlpacaEval's and Arena-Hard's baseline), by name.

        Such a model is in the dataset's first battle, so only its two models are tried, each by looking for one
        battle it is not in: on an arena that has no baseline the first such battle ends the scan (counting them
        all took 0.5 s of every cold Leaderboard visit on a 1M-battle arena, to find no baseline)."""
        ds = self.dataset(dataset).dataset_id
        cur = self._cur()
        first = cur.execute("SELECT model_a, model_b FROM battles WHERE dataset_id = ? LIMIT 1", [ds]).fetchone()
        if first is None:
            return []
        found = []
        for model in sorted(set(first)):
            missing = cur.execute(
                "SELECT 1 FROM battles WHERE dataset_id = ? AND model_a <> ? AND model_b <> ? LIMIT 1",
                [ds, model, model],
            ).fetchone()
            if missing is None:
                found.append(model)
        return found

    def model_a_everywhere(self, dataset: str) -> list[str]:
        """Models that are ``model_a`` of every battle of the dataset: the importers of AlpacaEval and Arena-Hard
        put the baseline there, which names it when a single judged model is in every battle too."""
        ds = self.dataset(dataset).dataset_id
        rows = (
            self._cur()
            .execute(
                """SELECT model_a FROM battles WHERE dataset_id = ? GROUP BY model_a
                   HAVING count(*) = (SELECT count(*) FROM battles WHERE dataset_id = ?) ORDER BY model_a""",
                [ds, ds],
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def baseline_comparisons(self, dataset: str, baseline: str, judge: str | None = None) -> pd.DataFrame:
        """One row per battle of a model against ``baseline``, in the model's terms.

        Columns ``battle_id, instruction`` (the prompt id; the battle id when the battle has no prompt),
        ``instruction_text`` (the prompt's text; NULL without one),
        ``model``, ``p`` (the probability that the model beats the baseline: the mean over the judge's judgments
        of ``p_a`` when it has one, else of its verdict by ``core.domain.OUTCOME_Y``; with ``judge`` None the
        mean over the human votes by the same rule; NULL when nothing parsed), ``length`` and ``baseline_length``
        (characters of the two answers; NULL without completions) and ``n`` (judgments or votes averaged).
        """
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        if judge is None:
            outcomes = f"SELECT battle_id, {sql.outcome_y_expr('winner')} AS y FROM votes"
        else:
            outcomes = f"""SELECT battle_id, coalesce(p_a, {sql.outcome_y_expr("verdict")}) AS y
                          FROM judgments
                          WHERE judge_id = $judge AND ($version IS NULL OR prompt_version = $version)
                            AND NOT coalesce(call_failed, false)"""
        query = f"""
            WITH o AS ({outcomes}),
            per_battle AS (SELECT battle_id, avg(y) AS y_a, count(*) AS n FROM o GROUP BY battle_id)
            SELECT b.battle_id, coalesce(b.prompt_id, b.battle_id) AS instruction, pr.text AS instruction_text,
                   CASE WHEN b.model_a = $baseline THEN b.model_b ELSE b.model_a END AS model,
                   CASE WHEN b.model_a = $baseline THEN 1 - pb.y_a ELSE pb.y_a END AS p,
                   CASE WHEN b.model_a = $baseline THEN cb.length ELSE ca.length END AS length,
                   CASE WHEN b.model_a = $baseline THEN ca.length ELSE cb.length END AS baseline_length,
                   pb.n
            FROM battles b
            JOIN per_battle pb USING (battle_id)
            LEFT JOIN prompts pr ON pr.prompt_id = b.prompt_id
            LEFT JOIN completions ca ON ca.completion_id = b.completion_a
            LEFT JOIN completions cb ON cb.completion_id = b.completion_b
            WHERE b.dataset_id = $ds AND $baseline IN (b.model_a, b.model_b) AND b.model_a <> b.model_b
            ORDER BY b.battle_id"""
        params: dict[str, Any] = {"ds": ds, "baseline": baseline}
        if judge is not None:
            params.update(judge=judge_id, version=version)
        return self._cur().execute(query, params).df()

    def graded_games(self, dataset: str, judge: str) -> pd.DataFrame:
        """One row per game of ``judge`` (a judgment in one shown order; original variant, not a failed call),
        for Arena-Hard's score.

        Columns ``battle_id, prompt_id, model_a, model_b, order, grade`` (−2…2 in battle terms, 2 = model_a
        much better; NULL when the judgment has no grade, e.g. no verdict was parsed), and the style counts of
        both answers: ``length_a, headers_a, lists_a, bold_a`` and the same with ``_b`` (NULL without text),
        and ``tokens_a, tokens_b``, the answers' token counts where their file gave one.
        """
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        query = """
            SELECT g.battle_id, b.prompt_id, b.model_a, b.model_b, g."order", g.grade,
                   ca.length AS length_a, ca.n_headers AS headers_a, ca.n_list_items AS lists_a, ca.n_bold AS bold_a,
                   cb.length AS length_b, cb.n_headers AS headers_b, cb.n_list_items AS lists_b, cb.n_bold AS bold_b,
                   ca.n_tokens AS tokens_a, cb.n_tokens AS tokens_b
            FROM judgments g JOIN battles b USING (battle_id)
            LEFT JOIN completions ca ON ca.completion_id = b.completion_a
            LEFT JOIN completions cb ON cb.completion_id = b.completion_b
            WHERE b.dataset_id = $ds AND g.judge_id = $judge AND g.variant = 'original'
              AND ($version IS NULL OR g.prompt_version = $version) AND NOT coalesce(g.call_failed, false)
            ORDER BY g.battle_id, g."order"
        """
        frame = self._cur().execute(query, {"ds": ds, "judge": judge_id, "version": version}).df()
        return frame.astype({"grade": "Float64"})

    def has_graded_games(self, dataset: str, judge: str) -> bool:
        """Whether :meth:`graded_games` has a game with a grade, without reading the games (a 1M-battle arena's
        judgments took seconds to read, on every cold Leaderboard visit, to find none graded)."""
        ds = self.dataset(dataset).dataset_id
        judge_id, version = self._judge_filter(judge, ds)
        query = """
            SELECT EXISTS (
                SELECT 1 FROM judgments g JOIN battles b USING (battle_id)
                WHERE b.dataset_id = $ds AND g.judge_id = $judge AND g.variant = 'original'
                  AND ($version IS NULL OR g.prompt_version = $version) AND NOT coalesce(g.call_failed, false)
                  AND g.grade IS NOT NULL)
        """
        row = self._cur().execute(query, {"ds": ds, "judge": judge_id, "version": version}).fetchone()
        return row is not None and bool(row[0])

    def languages_frame(self, dataset: str) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        return (
            self._cur()
            .execute(
                """SELECT coalesce(b.language, 'unknown') AS language, count(*) AS n_battles,
                      count(v.battle_id) AS n_votes
               FROM battles b LEFT JOIN (SELECT DISTINCT battle_id FROM votes) v USING (battle_id)
               WHERE b.dataset_id = ? GROUP BY ALL ORDER BY n_battles DESC""",
                [ds],
            )
            .df()
        )

    def completions_frame(self, dataset: str, with_text: bool = False) -> pd.DataFrame:
        ds = self.dataset(dataset).dataset_id
        text = ", c.text, p.text AS prompt_text" if with_text else ""
        return (
            self._cur()
            .execute(
                f"""SELECT c.completion_id, c.prompt_id, p.external_id AS prompt_external_id, c.model,
                       c.length, c.n_headers, c.n_bold, c.n_list_items, c.correct, c.echo,
                       c.direct_label, p.language, p.verifiable{text}
                FROM completions c LEFT JOIN prompts p USING (prompt_id)
                WHERE c.dataset_id = ? ORDER BY c.completion_id""",
                [ds],
            )
            .df()
        )

    def table_frame(self, dataset: str, table: str) -> pd.DataFrame:
        """Export view of a table: 'battles' or 'judgments' (one row per stored row)."""
        if table == "battles":
            ds = self.dataset(dataset).dataset_id
            return (
                self._cur()
                .execute(
                    f"""SELECT b.battle_id, b.external_id, b.model_a, b.model_b, b.language, b.turn, b.tstamp,
                           p.external_id AS prompt_external_id,
                           (SELECT avg({sql.outcome_y_expr("v.winner")}) FROM votes v
                            WHERE v.battle_id = b.battle_id) AS human_y,
                           (SELECT count(*) FROM votes v WHERE v.battle_id = b.battle_id) AS n_votes
                    FROM battles b LEFT JOIN prompts p USING (prompt_id)
                    WHERE b.dataset_id = ? ORDER BY b.battle_id""",
                    [ds],
                )
                .df()
            )
        if table == "judgments":
            return self.judgments_frame(dataset, None, variant=None, include_raw=True)
        raise StoreError(f"unknown table {table!r}: expected 'battles' or 'judgments'")
