"""Page results are declared once (core.app.results): the precompute's jobs and every page cache take their key
from the declaration, and a key moves exactly when its scope's data does (issue 35, item 1; "One caching
path")."""

from __future__ import annotations

import ast
import re
import shutil

import pytest

from core.app import precompute, results
from core.app.persist import Stamps
from core.store import Store
from tests.conftest import ROOT

JUDGE, OTHER = "judge-strong", "judge-verbose"


@pytest.fixture(scope="module")
def demo_db(demo_raw_store):
    return demo_raw_store


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
        assert declared.kept, f"{job.label}: the precompute persists it, so it must be declared kept"
        judge = job.judge if not isinstance(job.args, tuple) else declared.judge_of(job.args)
        assert job.stamp == declared.stamp_for(stamps, job.dataset, judge), job.label


def test_every_declared_result_is_precomputed_or_says_why_not(demo_db):
    """A kept result is precomputed or says why it is left to the first page that asks; a server-only one
    says why it is not kept, and is never precomputed (that would persist it)."""
    with Store.open(demo_db, read_only=True) as s:
        jobs = precompute.jobs(s)
    computed = {results.name_of(j.fn) for j in jobs if not j.saves_itself}
    computed |= {results.name_of(fn) for fn, _ in precompute.tau_grid_calls("demo", JUDGE)}
    for name, r in results.RESULTS.items():
        if r.kept:
            assert not r.from_results, f"{name}: a result derived from kept ones is not kept itself"
            assert (name in computed) != bool(r.on_demand), (name, r.on_demand)
        else:
            assert name not in computed and not r.on_demand, name
            assert r.server_only.strip(), name


# The scopes a result of each scope may read (each covers the one before it).
_WITHIN = {"votes": {"votes"}, "judge": {"votes", "judge"}, "everything": {"votes", "judge", "everything"}}

# A derived result's arguments on the demo (each slider at a value the page can show).
_DERIVED_ARGS: dict[str, tuple] = {
    "agreement": ("demo", JUDGE),
    "tau_profile": ("demo", JUDGE, 2.0),
    "reliability": ("demo", JUDGE, 2.0, 0.75),
    "label_reliability": ("demo", JUDGE, 0.75),
    "residual_view": ("demo", JUDGE, 0.1),
    "scope_at_alpha": ("demo", JUDGE, "rubric", 0.1),
    "leaderboard_view": ("demo", JUDGE, 2.0, False, 0.1, None, None, ("online-elo", "am-elo")),
}


def test_a_derived_result_reads_only_inside_its_scope(demo_db):
    """A result derived from others is keyed on its own scope, so each result it reads must lie inside that
    scope (and, for one judge's, be that judge's): else new data under an input leaves it stale."""
    derived = {r.fn.__name__: r for r in results.RESULTS.values() if r.from_results}
    assert set(derived) == set(_DERIVED_ARGS)
    with Store.open(demo_db, read_only=True) as s:
        for name, r in derived.items():
            args = _DERIVED_ARGS[name]
            inputs: list[tuple[results.Result, tuple]] = []

            def read(fn, *a, _inputs=inputs):
                _inputs.append((results.of(fn), a))
                return results.compute(s, fn, *a)

            r.fn(read, *args, **({"held": None} if name == "leaderboard_view" else {}))
            assert inputs, name
            for used, a in inputs:
                assert used.scope in _WITHIN[r.scope], (name, used.name, used.scope)
                if used.scope == "judge":
                    assert used.judge_of(a) in (None, r.judge_of(args)), (name, used.name, a)


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


# The generic loaders: the only page caches, each keyed on a ``stamp`` that ``result_stamp`` gives from the
# declaration (load_result → _load_result, compute → _compute, load_heldout_lagged → _current_heldout).
GENERIC_LOADERS = {("_loaders.py", "_load_result"), ("_loaders.py", "_compute"), ("_loaders.py", "_current_heldout")}
# Page caches outside the registry, each with why.
NOT_DECLARED = {
    ("vote.py", "load_queue"): "a queue is re-planned each minute (TTL), not at every vote: no data stamp in its key",
    ("vote.py", "load_stats"): "keyed on the session's own vote count with the queue's TTL, not at every vote",
}


def _caches(tree: ast.AST) -> list[ast.FunctionDef]:
    """The functions decorated with ``st.cache_data`` (called with options or not)."""

    def is_cache_data(d: ast.expr) -> bool:
        d = d.func if isinstance(d, ast.Call) else d
        return isinstance(d, ast.Attribute) and d.attr == "cache_data"

    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(map(is_cache_data, n.decorator_list))]


def page_caches_outside_the_registry(folder) -> list[str]:
    """Every ``st.cache_data`` function of the pages that is neither a generic loader keyed on a ``stamp`` nor
    an allow-listed exception: a cache whose key a page picks."""
    offenders = []
    for path in sorted(folder.glob("*.py")):
        for fn in _caches(ast.parse(path.read_text())):
            where = (path.name, fn.name)
            params = [a.arg for a in fn.args.args]
            if (where in GENERIC_LOADERS and "stamp" in params) or where in NOT_DECLARED:
                continue
            offenders.append(f"{path.name}:{fn.lineno} {fn.name}")
    return offenders


def test_pages_cache_only_through_the_registry():
    """No page caches a store read under a key of its choosing: every ``st.cache_data`` of ``app_pages`` is one
    of the generic loaders (their key from the declaration) or an exception that says why."""
    assert not page_caches_outside_the_registry(ROOT / "app_pages")
    found = {(p.name, f.name) for p in (ROOT / "app_pages").glob("*.py") for f in _caches(ast.parse(p.read_text()))}
    assert GENERIC_LOADERS | set(NOT_DECLARED) == found  # no stale entry in either list


def test_the_check_catches_a_page_cache_with_a_key_of_its_own(tmp_path):
    (tmp_path / "page.py").write_text(
        "import streamlit as st\n\n"
        "@st.cache_data(show_spinner=False)\n"
        "def load_models(dataset, token):\n    return None\n"
    )
    assert page_caches_outside_the_registry(tmp_path) == ["page.py:4 load_models"]


def test_persisted_reads_happen_only_in_the_generic_loaders():
    """``read_persisted`` / ``read_lagged`` take a stamp: only the generic loaders (which get it from
    ``result_stamp``) call them."""
    calls = [
        f"{path.name}:{n.lineno}"
        for path in sorted((ROOT / "app_pages").glob("*.py"))
        if path.name not in ("_store.py", "_loaders.py")
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("read_persisted", "read_lagged")
    ]
    assert not calls


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
