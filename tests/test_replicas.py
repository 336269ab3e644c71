"""Several base URLs for one judge (replicas of one model): configuration, calls spread by load, failover."""

from __future__ import annotations

import pytest

from core.app.judging import plan_run
from core.app.judging import run as run_judge
from core.judging.client import connection_test
from core.judging.config import ConfigError, from_mapping, load_toml, to_toml
from core.store import Store
from tests.conftest import wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _free_port, _store

CONFIG = """name = "{name}"
base_url = "{url}"
replica_urls = [{replicas}]
model = "fake-judge"
template = "rubric"
concurrency = 8
timeout_s = 2
max_retries = 3
breaker_threshold = 3
max_outage_s = 30
"""


def _config(tmp_path, urls, name="rep"):
    p = tmp_path / f"{name}.toml"
    p.write_text(CONFIG.format(name=name, url=urls[0], replicas=", ".join(f'"{u}"' for u in urls[1:])))
    return load_toml(p)


def _run(db, cfg):
    with Store.open(db) as s:
        units = plan_run(s, "ah", cfg).units
        assert len(units) == 60
        _, stats = run_judge(s, "ah", cfg, units)
        j = s.judgments_frame("ah", cfg.name, variant=None, include_raw=True)
        runs = s.runs_frame("ah")
    assert len(j) == 60 and not j.duplicated(["battle_id", "order"]).any()
    return stats, j, runs.loc[runs["judge"] == cfg.name].iloc[0]


def _reset_after_the_connection_test(*judges: FakeJudge) -> None:
    """Zero the judges' served counts once the connection test's answers are counted: a server counts an
    answer after its bytes went out, so the client may hold the answer before the count moves."""
    wait_until(lambda: all(j.served == j.received for j in judges), what="the connection test's answers counted")
    for j in judges:
        j.served = j.received = 0


BASE = {"name": "x", "base_url": "http://h1/v1", "model": "m"}


def test_replica_urls_are_validated_and_round_trip(tmp_path):
    cfg = from_mapping({**BASE, "replica_urls": ["http://h2/v1", "https://h3:8443/v1"]})
    assert cfg.urls == ["http://h1/v1", "http://h2/v1", "https://h3:8443/v1"]
    p = tmp_path / "r.toml"
    p.write_text(to_toml(cfg))
    assert 'replica_urls = ["http://h2/v1", "https://h3:8443/v1"]' in p.read_text()
    assert load_toml(p) == cfg
    assert from_mapping(cfg.to_store()) == cfg  # the stored (JSON) form reads back
    assert "replica_urls" not in to_toml(from_mapping(BASE))  # none: left out
    for bad in (["http://u:sekrit123@h2/v1"], ["http://h2/v1?api_key=sekrit123"], ["http://h2/v1?token=sekrit123"]):
        with pytest.raises(ConfigError, match="replica_urls") as err:
            from_mapping({**BASE, "replica_urls": bad})
        assert "sekrit123" not in str(err.value)
    for dup in (["http://h1/v1"], ["http://h2/v1", "http://h2/v1"], ["http://h2/v1", "http://h2/v1/"]):
        with pytest.raises(ConfigError, match="repeats"):
            from_mapping({**BASE, "replica_urls": dup})
    for not_list in ("http://h2/v1", {"a": "http://h2/v1"}, [1], [""], 3):
        with pytest.raises(ConfigError, match="replica_urls"):
            from_mapping({**BASE, "replica_urls": not_list})
    with pytest.raises(ConfigError, match="more than 64"):
        from_mapping({**BASE, "replica_urls": [f"http://h{i}/v1" for i in range(2, 67)]})
    with pytest.raises(ConfigError, match="replica_urls"):
        from_mapping({**BASE, "replica_urls": ["ftp://h2/v1"]})
    p.write_text('name = "x"\nbase_url = "http://h1/v1"\nmodel = "m"\nreplica_urls = "http://h2/v1"\n')
    with pytest.raises(ConfigError, match="replica_urls"):
        load_toml(p)


def test_calls_spread_over_replicas_by_load(tmp_path):
    db = _store(tmp_path, n_prompts=10)  # 60 units
    a, b = FakeJudge(latency_ms=40), FakeJudge(latency_ms=40)
    with FakeServer(a) as sa, FakeServer(b) as sb:
        cfg = _config(tmp_path, [sa.url, sb.url], name="even")
        res = connection_test(cfg)
        assert res["ok"] and [r["url"] for r in res["replicas"]] == [sa.url, sb.url]
        assert all(r["ok"] and r["model"] == "fake-judge" for r in res["replicas"])
        _reset_after_the_connection_test(a, b)
        stats, j, run = _run(db, cfg)
    assert run["status"] == "done" and run["done"] == 60 and not j["call_failed"].any()
    # each of the 60 units answered; on a loaded machine a call that outlives the client's timeout is sent again
    # after its answer went out, so a replica's answers are bounded by the calls the run sent it, not equal
    assert a.served + b.served >= 60 and a.served <= stats.per_replica[sa.url] and b.served <= stats.per_replica[sb.url]
    assert 0.35 <= a.served / (a.served + b.served) <= 0.65, (a.served, b.served)

    fast, slow = FakeJudge(latency_ms=5), FakeJudge(latency_ms=200)
    with FakeServer(fast) as sf, FakeServer(slow) as ss:
        cfg = _config(tmp_path, [ss.url, sf.url], name="uneven")  # the slow one first
        stats, j, run = _run(db, cfg)
    assert run["status"] == "done" and run["done"] == 60
    assert fast.served + slow.served >= 60 and fast.served <= stats.per_replica[sf.url]
    assert fast.served >= 0.7 * (fast.served + slow.served), (fast.served, slow.served)


@pytest.mark.parametrize("down", ["refused", "503"])
def test_a_replica_down_for_the_whole_run_is_avoided(tmp_path, down):
    db = _store(tmp_path, n_prompts=10)
    good, bad = FakeJudge(latency_ms=20), FakeJudge(latency_ms=20)
    bad.outage = "503"
    with FakeServer(good) as sg, FakeServer(bad) as sb:
        dead = f"http://127.0.0.1:{_free_port()}/v1" if down == "refused" else sb.url
        cfg = _config(tmp_path, [dead, sg.url], name=f"fo{down}")
        res = connection_test(cfg)
        assert not res["ok"] and res["model"] == "fake-judge"
        assert [r["ok"] for r in res["replicas"]] == [False, True] and dead in res["error"]
        _reset_after_the_connection_test(good)
        stats, j, run = _run(db, cfg)
    assert run["status"] == "done" and run["done"] == 60 and run["failed"] == 0 and run["deferred"] == 0
    assert j["parse_error"].isna().all() and not j["call_failed"].any()
    assert bad.served == 0
    # every unit answered by the good replica (each stored once, _run checks); on a loaded machine a call may
    # outlive the client's 2 s timeout and be sent again after its answer went out: an extra answer is always
    # one of the calls the run sent there, never one it did not
    assert 60 <= good.served <= stats.per_replica[sg.url]
    assert stats.per_replica[dead] <= 3 * cfg.breaker_threshold  # tried, then skipped for its cool-down


def test_a_single_base_url_reports_as_before(tmp_path):
    with FakeServer(FakeJudge()) as srv:
        res = connection_test(from_mapping({**BASE, "base_url": srv.url, "model": "fake-judge"}))
    assert res["ok"] and res["model"] == "fake-judge" and "latency_ms" in res and "logprobs" in res
    assert res["replicas"] == [{"url": srv.url, **{k: v for k, v in res.items() if k != "replicas"}}]


def test_pool_picks_the_least_loaded_replica_and_skips_a_failing_one(monkeypatch):
    from core.judging import runner
    from core.judging.runner import Replica, ReplicaPool, RunStats

    now = [1000.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: now[0])
    stats = RunStats()
    pool = ReplicaPool([Replica(u, None) for u in ("http://a/v1", "http://b/v1", "http://c/v1")], 2, stats)
    a, b, c = pool.replicas
    assert [pool.acquire().url for _ in range(3)] == [a.url, b.url, c.url]  # ties: round robin
    pool.release(b)
    assert pool.acquire() is b  # the fewest in flight
    for r in pool.replicas:
        while r.in_flight:
            pool.release(r)
    assert [pool.acquire() for _ in range(6)] == [a, c, b, a, c, b]  # the least recently chosen first
    for r in pool.replicas:
        r.in_flight = 0
    pool.mark_failed(a)
    assert not pool.failing(a) and a.skip_until == 0  # one failure: still used
    pool.mark_failed(a)
    assert pool.failing(a) and a.skip_until == 1005.0 and not pool.all_failing()
    assert a not in [pool.acquire() for _ in range(6)]  # cooling down
    assert pool.acquire(avoid=b) is c  # a retry goes elsewhere
    now[0] = 1006.0
    for r in pool.replicas:
        r.in_flight = 0
    assert pool.acquire() is a and a.trial  # after the cool-down: one trial call
    assert a not in [pool.acquire() for _ in range(4)]
    pool.release(a)
    pool.mark_failed(a)
    assert a.skip_until == 1016.0  # the trial failed: 10 s this time
    pool.answered(a)
    assert a.consecutive == 0 and a.skip_until == 0 and a.cooldown == 5.0
    for r in (a, b, c, a, b, c):
        pool.mark_failed(r)
    assert pool.all_failing()
    assert pool.acquire() in pool.replicas  # all failing: calls still go out (the run's breaker paces them)
    assert sum(stats.per_replica.values()) == 23 and set(stats.per_replica) == {a.url, b.url, c.url}


@pytest.mark.slow
def test_all_replicas_down_mid_run_opens_the_breaker_and_the_run_waits_it_out(tmp_path, monkeypatch):
    import threading

    from core.judging import resilience

    opened = threading.Event()  # set by the run's own breaker (the run is a thread of this process)
    real_failure = resilience.Breaker.failure

    def failure(self, reason: str) -> None:
        real_failure(self, reason)
        if self.is_open:
            opened.set()

    monkeypatch.setattr(resilience.Breaker, "failure", failure)
    db = _store(tmp_path, n_prompts=10)
    a, b = FakeJudge(latency_ms=100), FakeJudge(latency_ms=100)
    out: dict = {}
    with FakeServer(a) as sa, FakeServer(b) as sb:
        cfg = _config(tmp_path, [sa.url, sb.url], name="both")
        t = threading.Thread(target=lambda: out.update(zip(("stats", "j", "run"), _run(db, cfg))))
        t.start()
        wait_until(lambda: a.served + b.served >= 12, timeout=120, what="calls served before the outage")
        a.outage = b.outage = "503"
        # the outage lasts until the run has seen it (its breaker open), however slow the machine
        wait_until(opened.is_set, timeout=120, what="the run's breaker opening")
        a.outage = b.outage = None
        t.join(120)
    run = out["run"]
    assert run["status"] == "done" and run["done"] == 60 and run["failed"] == 0 and run["deferred"] == 0
    assert "waited out 1 endpoint outage" in run["message"]
    assert a.served + b.served == 60 and min(a.served, b.served) > 0


def test_a_replica_killed_mid_run_leaves_the_run_to_the_other(tmp_path):
    """Two replicas behind one config; one is stopped (port closed) while the run is judging."""
    import threading

    db = _store(tmp_path, n_prompts=10)
    a, b = FakeJudge(latency_ms=100), FakeJudge(latency_ms=100)
    out: dict = {}
    with FakeServer(a) as sa, FakeServer(b) as sb:
        cfg = _config(tmp_path, [sa.url, sb.url], name="killed")
        t = threading.Thread(target=lambda: out.update(zip(("stats", "j", "run"), _run(db, cfg))))
        t.start()
        wait_until(lambda: a.served >= 6, timeout=120, what="calls served before the outage")
        sa.stop()  # replica a is gone for the rest of the run
        served_by_a = a.served
        t.join(120)
    run = out["run"]
    assert run["status"] == "done" and run["done"] == 60 and run["failed"] == 0 and run["deferred"] == 0
    assert a.served == served_by_a and b.served >= 60 - served_by_a  # the rest went to b
