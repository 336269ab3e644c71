"""Page results are declared once (core.app.results): the precompute's jobs and every persisted read of the pages
take their key from the declaration, and a key moves exactly when its scope's data does (issue 35, item 1)."""

from __future__ import annotations

import ast
import re
import shutil

import pytest

from core.app import precompute, results
from core.app.persist import Stamps
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT

JUDGE, OTHER = "judge-strong", "judge-verbose"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("results") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return db


def _args(r: results.Result, judge: str | None) -> tuple:
    """Arguments of the result on the demo for ``judge`` (only the dataset and the judge enter the stamp)."""
    if r.scope != "judge":
        return ("demo", judge)[: r.judge_at + 1] if judge else ("demo",)
    args: list = ["demo", None, None][: r.judge_at + 1]
    args[r.judge_at] = judge
    return tuple(args)


def test_every_precompute_job_is_a_declared_result_stamped_by_its_scope(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        jobs = precompute.jobs(s)
        stamps = Stamps.of(s)
    assert jobs
    for job in jobs:
        if job.saves_itself:  # the τ grid: each of its results is declared, at this job's stamp
            assert job.judge is not None
            for fn, args in precompute.tau_grid_calls(job.dataset, job.judge):
                assert results.stamp(fn, stamps, args) == job.stamp, fn
            continue
        declared = results.of(job.fn)
        judge = job.judge if not isinstance(job.args, tuple) else declared.judge_of(job.args)
        assert job.stamp == declared.stamp_for(stamps, job.dataset, judge), job.label


def test_every_declared_result_is_precomputed_or_says_why_not(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        jobs = precompute.jobs(s)
    computed = {results.name_of(j.fn) for j in jobs if not j.saves_itself}
    computed |= {results.name_of(fn) for fn, _ in precompute.tau_grid_calls("demo", JUDGE)}
    for name, r in results.RESULTS.items():
        assert (name in computed) != bool(r.on_demand), (name, r.on_demand)


def test_an_undeclared_function_is_refused():
    def not_a_page_result(store, dataset):
        return None

    with pytest.raises(results.UndeclaredResult, match="not a declared page result"):
        results.of(not_a_page_result)


def test_a_key_moves_exactly_when_its_scope_changes(demo_db, tmp_path):
    """A new vote moves every key; a new judgment of one judge moves the store-wide keys and that judge's,
    never the votes' keys nor another judge's."""
    db = tmp_path / "copy.duckdb"
    shutil.copy(demo_db, db)

    def keys() -> dict[tuple[str, str | None], str]:
        with Store.open(db, read_only=True) as s:
            stamps = Stamps.of(s)
        return {
            (name, judge): results.stamp(r.fn, stamps, _args(r, judge))
            for name, r in results.RESULTS.items()
            for judge in (JUDGE, OTHER)
        }

    before = keys()
    with Store.open(db) as s, s.transaction() as cur:
        battle, judge_id = cur.execute(
            """SELECT g.battle_id, g.judge_id FROM judgments g JOIN judges j USING (judge_id)
               WHERE j.name = ? LIMIT 1""",
            [JUDGE],
        ).fetchone()
        cur.execute(
            """INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version, variant, verdict)
               SELECT max(judgment_id) + 1, ?, ?, 'ab', 'v-test', 'original', 'a' FROM judgments""",
            [battle, judge_id],
        )
    after_judgment = keys()
    for (name, judge), key in before.items():
        scope = results.RESULTS[name].scope
        moved = after_judgment[(name, judge)] != key
        expected = scope == "everything" or (scope == "judge" and judge == JUDGE)
        assert moved == expected, (name, judge, scope)
    with Store.open(db) as s, s.transaction() as cur:
        cur.execute("INSERT INTO votes (battle_id, winner, annotator) VALUES (?, 'a', 'someone-new')", [battle])
    after_vote = keys()
    assert all(after_vote[k] != after_judgment[k] for k in after_vote)  # every result reads the votes' stamp


def _persisted_reads(tree: ast.AST) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("read_persisted", "read_lagged")
    ]


def test_pages_read_persisted_results_only_through_the_registry():
    """No page picks a persisted result's key by hand: a persisted read is ``load_result(fn, …)`` (the key from
    the declaration) or, where a page needs a progress bar or a lagged result, passes ``token=result_token(fn,
    args)``; and every function read so is declared."""
    offenders = []
    for path in sorted((ROOT / "app_pages").glob("*.py")):
        tree = ast.parse(path.read_text())
        for call in _persisted_reads(tree):
            if path.name == "_store.py":
                continue  # where read_persisted itself lives
            token = next((k.value for k in call.keywords if k.arg == "token"), None)
            ok = (
                isinstance(token, ast.Call)
                and isinstance(token.func, ast.Name)
                and token.func.id == "result_token"
                and ast.dump(token.args[0]) == ast.dump(call.args[0])
            )
            if not ok:
                offenders.append(f"{path.name}:{call.lineno}")
    assert not offenders, offenders


@pytest.mark.slow
def test_a_result_outside_a_changed_scope_is_unchanged(demo_db, tmp_path):
    """The declarations are right, not only applied: a result declared to read no judgment is the same after
    every verdict is flipped, and one declared to read one judge is the same after another judge's verdicts are
    flipped (so its key need not move, and does not)."""
    from core import codec

    db = tmp_path / "copy.duckdb"
    shutil.copy(demo_db, db)

    def values() -> dict[str, bytes]:
        out = {}
        with Store.open(db, read_only=True) as s:
            for job in precompute.jobs(s, "demo"):
                declared = None if job.saves_itself else results.of(job.fn)
                if declared is None or declared.scope == "everything":
                    continue
                judge = job.judge if not isinstance(job.args, tuple) else declared.judge_of(job.args)
                if declared.scope == "judge" and judge not in (JUDGE, None):
                    continue
                args = job.args(s) if callable(job.args) else job.args
                if args is not None:  # compared without the time each took
                    encoded = codec.encode(job.fn(s, *args, **job.kwargs))
                    out[job.label] = re.sub(rb'"seconds":[-+0-9.e]+', b"", encoded)
        return out

    def flip(where: str, params: list) -> None:
        with Store.open(db) as s, s.transaction() as cur:
            cur.execute(
                f"""UPDATE judgments SET verdict = CASE verdict WHEN 'a' THEN 'b' WHEN 'b' THEN 'a' ELSE verdict END,
                       a_adherence = b_adherence, b_adherence = a_adherence
                    WHERE judge_id IN (SELECT judge_id FROM judges WHERE {where})""",
                params,
            )

    before = values()
    assert len(before) >= 15
    flip("name <> ?", [JUDGE])  # every other judge
    after_others = values()
    assert after_others == before, [k for k in before if after_others.get(k) != before[k]]
    flip("name = ?", [JUDGE])  # the judge itself: its results move, the votes' results do not
    after_all = values()
    votes_only = {
        job_label
        for job_label in before
        if all(results.of(j.fn).scope == "votes" for j in _jobs_labelled(db, job_label))
    }
    assert votes_only and all(after_all[k] == before[k] for k in votes_only)
    assert any(after_all[k] != before[k] for k in before if k not in votes_only)


def _jobs_labelled(db, label: str) -> list:
    with Store.open(db, read_only=True) as s:
        return [j for j in precompute.jobs(s, "demo") if j.label == label]
