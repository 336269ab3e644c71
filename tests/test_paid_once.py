"""Paid once: SIGKILLs at random points of `generate`, `judge` and `evaluate`, then the same command to the end.

Counted at the endpoint (the fake server's log of every completion it sent): what was stored is exactly what
the command plans, nothing twice, and what was paid exceeds it by at most the calls in flight at each kill
(kills × concurrency).  Each kill waits for a state (the endpoint has served k more calls, k drawn from a seeded
generator), never for a fixed time.
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from core.app.data import import_path
from core.store import Store
from core.store.journal import pending_generation_journals, pending_journals
from tests.conftest import ROOT, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # ~20-40 s each: five processes a test

KILLS = 4
LATENCY_MS = "150"  # long enough that every run has calls in flight when it is killed


def _served(log: Path) -> int:
    try:
        with open(log, "rb") as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


@pytest.fixture
def endpoint(tmp_path) -> Iterator[tuple[str, Path]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "served.log"
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_openai_server.py"), str(port), LATENCY_MS, "{}", "0", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        server.kill()
        server.wait(timeout=10)


def _kill_then_finish(cmd: list[str], log: Path, seed: int, most: int, floors: tuple[int, ...] = ()) -> int:
    """KILLS runs of ``cmd``, each SIGKILLed once the endpoint has served 1..``most`` more calls since its start
    (and at least ``floors[k]`` calls in all, for kill k: a floor puts a kill in a later phase of the work);
    then ``cmd`` to the end.  Returns the kills (each asserted to hit a working process)."""
    rng = random.Random(seed)
    for k in range(KILLS):
        target = max(_served(log), floors[k] if k < len(floors) else 0) + rng.randint(1, most)
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(
            lambda t=target, p=proc: _served(log) >= t or p.poll() is not None, timeout=120, what="k calls served"
        )
        assert proc.poll() is None, "the run ended before its kill: give it more work"
        proc.kill()
        proc.wait()
    final = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    return KILLS


def _judge_store(tmp_path: Path, n_prompts: int) -> Path:
    from tests.test_judging import _store

    return _store(tmp_path, n_prompts=n_prompts)


def test_killed_generate_pays_at_most_the_calls_in_flight(tmp_path, endpoint, record_property):
    from tests.test_generation import _config

    url, log = endpoint
    db = _judge_store(tmp_path, n_prompts=80)
    limit, concurrency = 60, 4
    cfg = _config(tmp_path, url, concurrency=concurrency)
    cmd = [sys.executable, "-m", "core", "generate", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
    cmd += ["--limit", str(limit)]
    kills = _kill_then_finish(cmd, log, seed=3, most=12)
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("ah", "newcomer")
        first = s.prompts_for_generation("ah")["prompt_id"].iloc[:limit]
    assert set(gens["prompt_id"]) == set(first) and (gens["status"] == "ok").all()
    assert not gens.duplicated(["prompt_id"]).any()
    assert pending_generation_journals(db) == []  # merged, by the runs or by the final run's reconciliation
    wait_until(lambda: _served(log) >= limit, what="the endpoint's log")
    paid = _served(log)
    record_property("paid_planned_kills", (paid, limit, kills))
    assert limit <= paid <= limit + kills * concurrency, (paid, limit)


def test_killed_judge_pays_at_most_the_calls_in_flight(tmp_path, endpoint, record_property):
    from tests.test_judging import _config

    url, log = endpoint
    db = _judge_store(tmp_path, n_prompts=40)  # 120 battles × 2 orders
    limit, concurrency = 160, 8  # tests.test_judging.CONFIG's concurrency
    cfg = _config(tmp_path, url, name="killme", timeout=15)
    cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
    cmd += ["--limit", str(limit)]
    kills = _kill_then_finish(cmd, log, seed=5, most=25)
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("ah", "killme", variant=None)
        runs = s.runs_frame("ah")
    assert len(j) == limit and not j.duplicated(["battle_id", "order"]).any()
    assert runs["status"].iloc[0] == "done" and pending_journals(db) == {}
    paid = _served(log)
    record_property("paid_planned_kills", (paid, limit, kills))
    sent = pd.read_csv(log, sep="\t", names=["t", "digest"])
    assert sent["digest"].nunique() == limit  # every planned unit, and nothing beyond the set
    assert limit <= paid <= limit + kills * concurrency, (paid, limit)


def _voted_store(tmp_path: Path, n_prompts: int) -> Path:
    """An LMArena-style dataset with human votes among four models, one battle per prompt."""
    rng = random.Random(11)
    models = ["m1", "m2", "m3", "m4"]
    rows = []
    for k in range(n_prompts):
        a, b = rng.sample(models, 2)
        q = f"Question {k}: say something about topic {k}."
        rows.append(
            {
                "id": f"c{k}",
                "model_a": a,
                "model_b": b,
                "winner": rng.choice(["model_a", "model_b", "tie"]),
                "conversation_a": [{"role": "user", "content": q}, {"role": "assistant", "content": f"{a} on {k}"}],
                "conversation_b": [{"role": "user", "content": q}, {"role": "assistant", "content": f"{b} on {k}"}],
                "language": "en",
            }
        )
    path = tmp_path / "voted.parquet"
    pd.DataFrame(rows).to_parquet(path)
    db = tmp_path / "e.duckdb"
    with Store.open(db) as s:
        import_path(s, path, "lmarena", dataset="arena")
    return db


def test_killed_evaluate_pays_at_most_the_calls_in_flight(tmp_path, endpoint, record_property):
    """`evaluate` runs both kinds of paid work (answers, then judgments) under one process: kills land in either."""
    from tests.test_generation import _config as _model_config
    from tests.test_judging import _config as _judge_config

    url, log = endpoint
    n_prompts, budget = 60, 80
    db = _voted_store(tmp_path, n_prompts)
    model_cfg = _model_config(tmp_path, url, concurrency=4)
    judge_cfg = _judge_config(tmp_path, url, name="eval-judge", timeout=15)
    cmd = [sys.executable, "-m", "core", "evaluate", "--db", str(db), "--dataset", "arena", "--model", "newcomer"]
    cmd += ["--config", str(model_cfg), "--judge", str(judge_cfg), "--budget", str(budget), "--anchors", "2"]
    # Two kills while it answers, two while it judges: the endpoint serves at most 60 answers plus 4 re-paid
    # per kill before the judging starts, so a kill past 60 + 2 × 4 served calls lands in the judging.
    kills = _kill_then_finish(cmd, log, seed=7, most=20, floors=(0, 0, n_prompts + 2 * 4, 0))
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("arena", "newcomer")
        j = s.judgments_frame("arena", "eval-judge", variant=None)
        battles = s.battles_for_judging("arena")
    mine = battles[(battles["model_a"] == "newcomer") | (battles["model_b"] == "newcomer")]
    assert len(gens) == n_prompts and not gens.duplicated(["prompt_id"]).any() and (gens["status"] == "ok").all()
    assert len(j) == min(budget, 2 * len(mine)) and not j.duplicated(["battle_id", "order"]).any()
    assert set(j["battle_id"]) <= set(mine["battle_id"])
    planned = len(gens) + len(j)
    paid = _served(log)
    record_property("paid_planned_kills", (paid, planned, kills))
    assert planned <= paid <= planned + kills * 8, (paid, planned)  # 8: the larger concurrency (the judge's)
