"""Store round trips, label rules of METHODS §2, pair statistics, migrations, locking."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import duckdb
import numpy as np
import pandas as pd
import pytest

from core.domain import DatasetTables, soft_target
from core.store import SCHEMA_VERSION, Store, StoreError, StoreLockedError
from tests.conftest import ROOT, wait_until


def _tiny_tables(name: str = "t") -> DatasetTables:
    models = pd.DataFrame({"model": ["x", "y", "z"], "family": ["f", "f", "g"], "true_elo": [1600.0, 1500.0, 1400.0]})
    battles = pd.DataFrame(
        {
            "battle_key": [0, 1, 2, 3, 4, 5],
            "model_a": ["x", "y", "z", "x", "y", "x"],
            "model_b": ["y", "z", "x", "z", "x", "y"],
            "language": ["en", "en", "de", None, "en", "fr"],
        }
    )
    votes = pd.DataFrame(
        {
            "battle_key": [0, 1, 2, 3, 3, 4],
            "winner": ["a", "b", "tie", "a", "b", "both_bad"],
            "annotator": ["u1", "u2", "u1", "u2", "u3", "u1"],
        }
    )
    j = pd.DataFrame(
        {
            "battle_key": [0, 0, 1, 1, 2, 3, 4, 4, 5, 5],
            "judge": ["J"] * 10,
            "order": ["ab", "ba", "ab", "ba", "ab", "avg", "ab", "ba", "ab", "ba"],
            "verdict": ["a", "a", "b", "a", None, "b", "a", "tie", "a", "b"],
            # battle 1: forward gap -1, reversed gap +1 -> signs flip -> tie
            "a_adherence": [8, 7, 5, 6, 5, 4, np.nan, np.nan, np.nan, np.nan],
            "b_adherence": [6, 6, 6, 5, 5, 9, np.nan, np.nan, np.nan, np.nan],
            "a_clarity": [9, np.nan, 5, 6, 7, np.nan, np.nan, np.nan, np.nan, np.nan],
            "b_clarity": [5, 3, 6, 5, 6, np.nan, np.nan, np.nan, np.nan, np.nan],
            "p_a": [0.9, 0.7, 0.2, 0.6, np.nan, np.nan, 0.8, 0.5, 0.6, 0.3],
        }
    )
    return DatasetTables(name=name, source="test", models=models, battles=battles, votes=votes, judgments=j)


@pytest.fixture()
def store():
    s = Store.open(":memory:")
    s.write_dataset(_tiny_tables())
    yield s
    s.close()


def test_labels_follow_methods_section_2(store):
    f = store.battle_frame("t", "J").set_index("battle_key")
    # human label: mean over votes, both_bad counts as a tie
    assert f.loc[0, "human_y"] == 1.0
    assert f.loc[3, "human_y"] == 0.5 and f.loc[3, "n_votes"] == 2
    assert f.loc[4, "human_y"] == 0.5
    assert np.isnan(f.loc[5, "human_y"])
    # gap = mean over criteria present for both sides, averaged over orders
    assert f.loc[0, "gap_ab"] == pytest.approx((2 + 4) / 2)
    assert f.loc[0, "gap_ba"] == pytest.approx(1.0)  # clarity missing on side a
    assert f.loc[0, "gap"] == pytest.approx((3.0 + 1.0) / 2)
    assert f.loc[0, "judge_hard"] == 1.0
    # sign flips between orders -> tie, even though the averaged gap is 0 anyway
    assert f.loc[1, "gap_ab"] == -1.0 and f.loc[1, "gap_ba"] == 1.0
    assert f.loc[1, "judge_hard"] == 0.5
    # an imported averaged verdict is the hard label, regardless of the gap
    assert f.loc[3, "gap"] == -5.0 and f.loc[3, "judge_hard"] == 0.0
    # verdict-only battles: mean verdict; a + tie -> a, a + b -> tie
    assert f.loc[4, "judge_hard"] == 1.0
    assert f.loc[5, "judge_hard"] == 0.5
    assert f.loc[4, "p_ab"] == 0.8 and f.loc[4, "p_ba"] == 0.5
    assert f.loc[0, "family_a"] == "f" and f.loc[2, "family_a"] == "g"


def test_soft_target_and_pair_stats_match_an_independent_groupby(store):
    tau = 0.7
    f = store.battle_frame("t", "J", tau=tau)
    expected_soft = np.clip(1 / (1 + np.exp(-tau * f["gap"])), 1e-6, 1 - 1e-6)
    np.testing.assert_allclose(f["soft_y"].dropna(), expected_soft.dropna())
    # human: every vote counts, and each battle's votes are one cluster
    votes = store.votes_frame("t")
    per_battle = votes.groupby(["battle_id", "model_a", "model_b"])["y"].agg(["count", "sum"]).reset_index()
    assert (per_battle["count"] > 1).any()  # the fixture has a battle with several votes
    per_battle = per_battle.assign(
        cluster_ss=per_battle["sum"] ** 2,
        cluster_ns=per_battle["count"] * per_battle["sum"],
        cluster_nn=per_battle["count"] ** 2,
    )
    want_h = per_battle.groupby(["model_a", "model_b"])[
        ["count", "sum", "cluster_ss", "cluster_ns", "cluster_nn"]
    ].sum()
    got_h = store.pair_stats("t", "human").set_index(["model_a", "model_b"]).loc[want_h.index]
    np.testing.assert_allclose(got_h["n"], want_h["count"])
    np.testing.assert_allclose(got_h["s"], want_h["sum"])
    for col in ("cluster_ss", "cluster_ns", "cluster_nn"):
        np.testing.assert_allclose(got_h[col], want_h[col])
    for target, col in (("hard", "judge_hard"), ("soft", "soft_y")):
        got = store.pair_stats("t", target, judge="J", tau=tau)
        want = f.dropna(subset=[col]).groupby(["model_a", "model_b"])[col].agg(["count", "sum"]).reset_index()
        got = got.sort_values(["model_a", "model_b"]).reset_index(drop=True)
        np.testing.assert_array_equal(got[["model_a", "model_b"]].to_numpy(), want[["model_a", "model_b"]].to_numpy())
        np.testing.assert_allclose(got["n"], want["count"])
        np.testing.assert_allclose(got["s"], want["sum"])


def test_pair_stats_refuses_soft_without_tau(store):
    with pytest.raises(StoreError, match="tau"):
        store.pair_stats("t", "soft", judge="J")
    with pytest.raises(StoreError, match="needs a judge"):
        store.pair_stats("t", "hard")


def test_soft_target_is_clipped():
    y = soft_target(np.array([-1e4, 0.0, 1e4, np.nan]), 1.0)
    assert y[0] == 1e-6 and y[1] == 0.5 and y[2] == 1 - 1e-6 and np.isnan(y[3])


def test_round_trip_through_a_file(tmp_path):
    path = tmp_path / "a.duckdb"
    with Store.open(path) as s:
        s.write_dataset(_tiny_tables())
        before = s.info()
    with Store.open(path, read_only=True) as s:
        after = s.info()
        assert s.models_frame("t")["true_elo"].tolist() == [1600.0, 1500.0, 1400.0]
        votes = s.votes_frame("t")
        assert len(votes) == 6 and set(votes["annotator"]) == {"u1", "u2", "u3"}
    assert before["datasets"] == after["datasets"]
    assert after["datasets"][0]["n_human_votes"] == 6 and after["datasets"][0]["n_annotators"] == 3
    assert after["datasets"][0]["judges"][0]["orders"] == ["ab", "avg", "ba"]


def test_failed_write_leaves_the_store_unchanged(store):
    before, token = store.info(), store.version_token()
    bad = _tiny_tables("u")
    # the same (battle, judge, order) twice: the UNIQUE constraint fails mid-transaction, after the
    # dataset, models, battles and votes rows were inserted
    bad.judgments = pd.concat([bad.judgments, bad.judgments.iloc[[0]]], ignore_index=True)
    with pytest.raises(StoreError, match="the store refused a value of 'u'.*Constraint"):
        store.write_dataset(bad)
    assert store.info() == before and store.version_token() == token
    sideways = _tiny_tables("v")
    sideways.judgments.loc[0, "order"] = "sideways"  # caught before the transaction, naming table and column
    with pytest.raises(StoreError, match="judgments.order has 'sideways'"):
        store.write_dataset(sideways)
    assert store.info() == before
    with pytest.raises(StoreError, match="already exists"):
        store.write_dataset(_tiny_tables("t"))
    assert store.info() == before


def test_record_judgment_is_idempotent_and_a_success_replaces_a_failure(store):
    ds = store.battle_frame("t", "J")
    bid = int(ds["battle_id"].iloc[5])
    jid = int(store.judge("J")["judge_id"])
    row = {
        "battle_id": bid,
        "judge_id": jid,
        "order": "ab",
        "prompt_version": "v2",
        "raw_output": "???",
        "parse_error": "no JSON found",
    }
    assert store.record_judgment(row)
    assert not store.record_judgment(row)
    ok = {**row, "parse_error": None, "verdict": "a", "raw_output": "[[A]]"}
    assert store.record_judgment(ok)
    assert not store.record_judgment(ok)
    keys = store.existing_judgment_keys(jid, "v2", "t")
    assert len(keys) == 1 and keys["parse_error"].isna().all()


def test_migrations_and_version_checks(tmp_path):
    path = tmp_path / "m.duckdb"
    with Store.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="newer than this code"):
        Store.open(path)
    with pytest.raises(StoreError, match="does not exist"):
        Store.open(tmp_path / "missing.duckdb", read_only=True)


@pytest.mark.integration
def test_a_store_held_by_another_process_fails_with_a_message(tmp_path):
    path = tmp_path / "locked.duckdb"
    Store.open(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import duckdb, sys, time
            con = duckdb.connect({str(path)!r})
            print('ready', flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="is in use by process"):
            Store.open(path)
    finally:
        holder.kill()
        holder.wait()


def test_a_reader_upgrades_an_older_store_with_one_brief_write(tmp_path):
    from core.store.schema import MIGRATIONS

    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute(MIGRATIONS[0])
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute(
        "INSERT INTO judge_runs (run_id, judge_id, dataset_id, status) VALUES (1, 1, 1, 'running'); "
        'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version, parse_error) '
        "VALUES (1, 1, 1, 'ab', 'v', 'call failed: gave up'), (2, 2, 1, 'ab', 'v', 'no JSON')"
    )
    con.close()
    with Store.open(path, read_only=True) as s:
        assert s.read_only and s.schema_version == SCHEMA_VERSION
        flags = s._cur().execute("SELECT judgment_id, call_failed FROM judgments ORDER BY 1").fetchall()
    assert flags == [(1, True), (2, False)]  # the migration tells a failed call from an unparseable output


def test_version_stamps_scope_a_judges_results_to_its_own_judgments(store):
    """A run writing judge K leaves judge J's stamp (its pages' cache key) alone; any change to J's
    judgments, a failure replaced in place included, changes it; votes and battles change the base."""
    bid = int(store.battle_frame("t", "J")["battle_id"].iloc[5])
    jid = int(store.judge("J")["judge_id"])
    base, stamps = store.version_stamps()
    token = store.version_token()
    j_before = stamps[("t", "J")]

    kid = store.save_judge_config("K", {"model": "k"}, model="k", template="rubric", prompt_version="v1")
    store.record_judgment(
        {"battle_id": bid, "judge_id": kid, "order": "ab", "prompt_version": "v1", "verdict": "a", "raw_output": "A"}
    )
    base2, stamps2 = store.version_stamps()
    assert stamps2[("t", "J")] == j_before and ("t", "K") in stamps2
    assert store.version_token() != token  # the all-tables token still sees every write

    failed = {"battle_id": bid, "judge_id": jid, "order": "ab", "prompt_version": "v9", "raw_output": "?"}
    store.record_judgment({**failed, "parse_error": "no JSON found"})
    after_failure = store.version_stamps()[1][("t", "J")]
    assert after_failure != j_before
    store.record_judgment({**failed, "parse_error": None, "verdict": "a"})  # same id, same count: replaced in place
    assert store.version_stamps()[1][("t", "J")] != after_failure


def _judge_stamps_by_join(store) -> dict:
    """The judges' stamps the slow way: every judgment joined to its battle's dataset."""
    rows = store._cur().execute(
        """SELECT d.name, g.name, count(*), max(j.judgment_id), count(j.parse_error)
           FROM judgments j JOIN battles b USING (battle_id) JOIN datasets d USING (dataset_id)
           JOIN judges g USING (judge_id) GROUP BY d.name, g.name"""
    )
    return {(d, g): f"{n}:{mx}:{nf}" for d, g, n, mx, nf in rows.fetchall()}


def test_judge_stamps_find_each_judgments_dataset_with_blocks_of_ids_and_with_interleaved_ones(store):
    """The stamps read a judgment's dataset from its dataset's block of battle ids while the blocks are
    apart, and from its battle once one dataset's ids span another's (read by blocks, "u"'s judgments
    would then count for both)."""
    store.write_dataset(_tiny_tables("u"))
    assert store.version_stamps()[1] == _judge_stamps_by_join(store)
    assert {d for d, _ in store.version_stamps()[1]} == {"t", "u"}
    # a later battle of "t", with an id past "u"'s block, and a judgment of it: "t"'s ids now span "u"'s
    cur = store._cur()
    bid = cur.execute("SELECT max(battle_id) FROM battles").fetchone()[0] + 100
    cur.execute(
        "INSERT INTO battles (battle_id, dataset_id, battle_key, model_a, model_b) VALUES (?, ?, 1000, 'x', 'y')",
        [bid, store.dataset("t").dataset_id],
    )
    judge = int(store.judge("J")["judge_id"])
    store.record_judgment(
        {"battle_id": bid, "judge_id": judge, "order": "ab", "prompt_version": "v2", "verdict": "a", "raw_output": "A"}
    )
    stamps = store.version_stamps()[1]
    assert stamps == _judge_stamps_by_join(store)
    assert stamps[("t", "J")].startswith("11:")  # its ten judgments and the one past "u"'s block


def _judge_names_by_join(store, dataset: str) -> list[str]:
    return sorted(store.judges_frame(dataset)["judge"])


def test_judge_names_are_the_judges_with_original_judgments_in_blocks_and_interleaved(store):
    """The sidebar's judge list equals the judges the counted frame lists, whether a dataset's battles are one
    block of ids or span another's; a judge with only perturbed presentations is not a judge of the dataset."""
    store.write_dataset(_tiny_tables("u"))
    kid = store.save_judge_config("K", {"model": "k"}, model="k", template="rubric", prompt_version="v1")
    bid = int(store.battle_frame("u", None)["battle_id"].iloc[0])
    store.record_judgment(
        {
            "battle_id": bid,
            "judge_id": kid,
            "order": "ab",
            "prompt_version": "v1",
            "verdict": "a",
            "raw_output": "A",
            "variant": "swap-names",
        }
    )
    for name in ("t", "u"):
        assert store.judge_names(name) == _judge_names_by_join(store, name)
    assert store.judge_names("t") == ["J"] and "K" not in store.judge_names("u")
    cur = store._cur()
    bid = cur.execute("SELECT max(battle_id) FROM battles").fetchone()[0] + 100
    cur.execute(
        "INSERT INTO battles (battle_id, dataset_id, battle_key, model_a, model_b) VALUES (?, ?, 1000, 'x', 'y')",
        [bid, store.dataset("u").dataset_id],
    )
    store.record_judgment(
        {"battle_id": bid, "judge_id": kid, "order": "ab", "prompt_version": "v1", "verdict": "a", "raw_output": "A"}
    )
    for name in ("t", "u"):  # "u"'s ids now span "t"'s: read from the battles
        assert store.judge_names(name) == _judge_names_by_join(store, name)
    assert "K" in store.judge_names("u") and "K" not in store.judge_names("t")


_READER = """
import fcntl, os, sys, time
sys.path.insert(0, {root!r})
from core.store import Store, base
if {ignore_intent!r}:
    base.WRITE_INTENT_TTL_S = -1.0  # the control: every announcement reads as stale
run = {run!r}
me = os.path.join(run, "holding-" + str(os.getpid()))


def others_holding():
    return any(f.startswith("holding-") and f != os.path.basename(me) for f in os.listdir(run))


def stopped():
    return os.path.exists(os.path.join(run, "stop"))


n = 0
while not stopped():
    with Store.open({path!r}, read_only=True, wait_s=5) as s:
        s.version_stamps()
        open(me, "w").close()
        if n == 0:
            print("ready", flush=True)
        time.sleep(0.15)
        # The baton: let go only while another reader holds the store (decided under one lock, so two
        # readers never both let go on seeing each other), waiting at most {baton_s} s for one.  The holds
        # then overlap however the machine schedules these processes, and no gap opens by luck.
        give_up = time.monotonic() + {baton_s}
        while True:
            with open(os.path.join(run, "baton"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if others_holding() or stopped() or time.monotonic() > give_up:
                    os.remove(me)
                    break
            time.sleep(0.01)
    n += 1
    with open(me.replace("holding-", "count-"), "w") as f:
        f.write(str(n))
print(n, flush=True)
"""


def _reads_counted(run) -> list[int]:
    return [int(p.read_text() or 0) for p in run.glob("count-*")]


@pytest.mark.integration
@pytest.mark.parametrize("honour_intent", [True, False])
def test_a_writer_is_not_starved_by_readers_that_keep_the_store_open(tmp_path, honour_intent):
    """Three processes keep the store open for reading, each letting go only while another holds it (as a
    dashboard's sessions can); a writer announces itself and gets in within its wait, while the readers
    still make progress.  With the announcement ignored by the readers (the control) the same writer is
    starved: their holds always overlap, so it never finds a gap.

    Honouring readers give the baton up after 0.5 s without a successor (the ones waiting for the writer are
    not coming back); the control's readers wait up to 60 s for one, so its starvation does not depend on
    how the machine schedules them."""
    from core.store import base

    path = tmp_path / "busy.duckdb"
    run = tmp_path / "run"
    run.mkdir()
    Store.open(path).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = _READER.format(
        root=str(ROOT),
        path=str(path),
        run=str(run),
        ignore_intent=not honour_intent,
        baton_s=0.5 if honour_intent else 60,
    )
    readers = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env) for _ in range(3)
    ]
    try:
        for r in readers:
            assert r.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        try:
            Store.open(path, wait_s=5).close()
            got_in = time.monotonic() - t0
        except StoreLockedError:
            got_in = None
        # the readers go on after the writer; each must get well past its first reads
        wait_until(
            lambda: len(_reads_counted(run)) == 3 and min(_reads_counted(run)) > 10,
            timeout=120,
            what="every reader's eleventh read",
        )
    finally:
        (run / "stop").touch()
        counts = [int(r.communicate(timeout=120)[0].strip() or 0) for r in readers]
    if honour_intent:
        assert got_in is not None and got_in < 5
        assert not base.write_intent_path(str(path)).exists()  # removed once the writer was in
    else:
        assert got_in is None  # the control: without the announcement the writer never finds a gap
    assert min(counts) > 10  # readers kept reading


@pytest.mark.integration
def test_a_lingering_read_keeps_the_file_for_the_next_read_and_then_lets_another_process_write(tmp_path):
    from core.store.base import READ_ANCHORS

    db = tmp_path / "l.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_tiny_tables("t"))
    # The linger is long enough that "still held" holds on a loaded machine (0.6 s did not); its end is waited
    # for as a state, with a generous timeout.
    linger = 3.0
    with Store.open(db, read_only=True, linger_s=linger) as s:
        assert list(s.datasets()["name"]) == ["t"]
    assert READ_ANCHORS.holds(str(db))
    with Store.open(db, read_only=True, linger_s=linger) as s:  # joins the instance the anchor keeps
        assert list(s.datasets()["name"]) == ["t"]
    with Store.open(db, read_only=True) as s:  # a reader without linger neither takes nor ends the anchor
        s.datasets()
    assert READ_ANCHORS.holds(str(db))
    wait_until(lambda: not READ_ANCHORS.holds(str(db)), timeout=60, what="the lingering read letting go")
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from core.store import Store\n"
        f"with Store.open({str(db)!r}, wait_s=0) as s: s.put_result('k', 'kind', None, 'stamp', 'code', b'x', 0.0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # wait_s=0: the file is free
    with Store.open(db, read_only=True, linger_s=0.6) as s:
        assert s.get_result("k", "stamp", "code") == b"x"
    READ_ANCHORS.drop(str(db))


def test_a_writer_of_this_process_takes_the_file_from_a_lingering_read_at_once(tmp_path):
    from core.store.base import READ_ANCHORS

    db = tmp_path / "w.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_tiny_tables("t"))
    with Store.open(db, read_only=True, linger_s=60.0) as s:
        s.datasets()
    assert READ_ANCHORS.holds(str(db))
    relative = os.path.relpath(db)  # the same file spelt another way
    with Store.open(relative, wait_s=0) as w:  # DuckDB refuses a writer beside a read-only instance of this process
        w.write_dataset(_tiny_tables("u"))
    assert not READ_ANCHORS.holds(str(db))
    with Store.open(db, read_only=True, linger_s=60.0) as s:
        assert sorted(s.datasets()["name"]) == ["t", "u"]  # a new instance: the write is seen
    READ_ANCHORS.drop(str(db))


@pytest.mark.integration
@pytest.mark.parametrize("drop_on_intent", [True, False])
def test_a_writer_of_another_process_is_not_kept_out_by_reads_that_linger(tmp_path, monkeypatch, drop_on_intent):
    """This process reads back to back, each read lingering a minute (so the file is never free); another
    process's writer announces itself, the next read lets the file go, and the writer gets in within its
    wait.  The control keeps the anchor through the announcement: the writer never gets in."""
    from core.store import base

    db = tmp_path / "x.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_tiny_tables("t"))
    with Store.open(db, read_only=True, linger_s=60.0) as s:
        s.datasets()
    if not drop_on_intent:
        monkeypatch.setattr(base.READ_ANCHORS, "drop", lambda path: None)
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from core.store import Store\n"
        f"with Store.open({str(db)!r}, wait_s=4) as s: s.put_result('k', 'kind', None, 'stamp', 'code', b'x', 0.0)"
    )
    writer = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    reads = 0
    while writer.poll() is None:
        with Store.open(db, read_only=True, wait_s=5, linger_s=60.0) as s:
            s.datasets()
        reads += 1
        time.sleep(0.05)
    err = writer.communicate(timeout=60)[1]
    monkeypatch.undo()
    base.READ_ANCHORS.drop(str(db))
    assert reads > 3
    if drop_on_intent:
        assert writer.returncode == 0, err
        with Store.open(db, read_only=True) as s:
            assert s.get_result("k", "stamp", "code") == b"x"
    else:
        assert writer.returncode != 0 and "is in use by" in err  # the control: kept out for its whole wait


@pytest.mark.parametrize("first_read_only", [True, False])
def test_a_read_and_a_write_in_one_process_wait_for_each_other(tmp_path, first_read_only):
    """The dashboard persists results (a brief write) while its sessions read: in one process DuckDB
    refuses the second mode outright, so the store waits for the first holder as it waits for a lock."""
    import threading

    db = tmp_path / "s.duckdb"
    Store.open(db).close()
    first = Store.open(db, read_only=first_read_only)
    threading.Timer(0.4, first.close).start()
    start = time.monotonic()
    # a generous wait: the second open succeeding at all is the point; its time has only a lower bound
    with Store.open(db, read_only=not first_read_only, wait_s=60.0) as second:
        assert second.schema_version > 0
    assert time.monotonic() - start > 0.3  # it waited for the first holder (true on any machine)
    held = Store.open(db, read_only=first_read_only)
    try:
        with pytest.raises(StoreLockedError):
            Store.open(db, read_only=not first_read_only, wait_s=0.3)
    finally:
        held.close()


def test_a_value_the_schema_refuses_is_a_store_error_and_changes_nothing(tmp_path):
    """The last line of defence behind the readers: DuckDB's own refusal becomes a named StoreError, rolled back."""
    import pandas as pd

    from core.domain import DatasetTables

    tables = DatasetTables(
        name="big",
        source="test",
        models=pd.DataFrame({"model": ["a", "b"]}),
        battles=pd.DataFrame({"battle_key": [0], "model_a": ["a"], "model_b": ["b"], "prompt_key": [0]}),
        prompts=pd.DataFrame({"prompt_key": [0], "text": ["q"]}),
        completions=pd.DataFrame({"prompt_key": [0, 0], "model": ["a", "b"], "text": ["x", "y"], "length": [1, 2**31]}),
    )
    with Store.open(tmp_path / "s.duckdb") as s:
        before = s.info()
        with pytest.raises(StoreError, match="the store refused a value of 'big'"):
            s.write_dataset(tables)
        assert s.info() == before


def test_sessions_of_one_process_writing_the_same_row_take_turns_instead_of_failing(tmp_path):
    """Ten dashboard sessions persisting one result at once (each through its own Store.open, as pages do):
    DuckDB fails one of two transactions of a process that write the same row, so writes take turns."""
    import threading

    db = tmp_path / "turns.duckdb"
    Store.open(db).close()
    failures: list[BaseException] = []

    def persist_many(k: int) -> None:
        try:
            for i in range(30):
                with Store.open(db, read_only=False) as s:
                    s.put_result("same-key", "kind", None, f"stamp-{k}-{i}", "code", b"x" * 1000, 0.0)
        except BaseException as exc:  # collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=persist_many, args=(k,)) for k in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    with Store.open(db, read_only=True) as s:
        assert len(s.results_frame()) == 1


def test_a_v10_store_gains_the_unknown_order_and_keeps_every_judgment(tmp_path):
    from core.store.schema import MIGRATIONS

    path = tmp_path / "v10.duckdb"
    con = duckdb.connect(str(path))
    for sql in MIGRATIONS[:10]:
        con.execute(sql)
    con.execute("INSERT INTO meta VALUES ('schema_version', '10')")
    con.execute(
        'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version, verdict, grade) '
        "VALUES (1, 1, 1, 'ab', 'v', 'a', 3), (2, 1, 1, 'ba', 'v', 'b', NULL)"
    )
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version) '
            "VALUES (3, 2, 1, 'unknown', 'v')"
        )
    con.close()
    with Store.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        cur = s._cur()
        rows = cur.execute('SELECT judgment_id, "order", verdict, grade FROM judgments ORDER BY 1').fetchall()
        assert rows == [(1, "ab", "a", 3), (2, "ba", "b", None)]
        cur.execute(
            'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version) '
            "VALUES (3, 2, 1, 'unknown', 'v')"
        )
        with pytest.raises(duckdb.ConstraintException):  # the other constraints hold as before
            cur.execute(
                'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version) '
                "VALUES (4, 2, 1, 'sideways', 'v')"
            )
        with pytest.raises(duckdb.ConstraintException):
            cur.execute(
                'INSERT INTO judgments (judgment_id, battle_id, judge_id, "order", prompt_version) '
                "VALUES (5, 2, 1, 'unknown', 'v')"
            )  # unique per battle, judge, order, version
        indexes = cur.execute("SELECT index_name FROM duckdb_indexes() WHERE table_name = 'judgments'").fetchall()
        assert indexes == [("judgments_battle",)]
