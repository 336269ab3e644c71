"""Judging pipeline: config validation, parsing, a real HTTP fake endpoint with faults, kill/resume."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from core.app.data import import_path
from core.app.judging import plan_run
from core.app.judging import run as run_judge
from core.judging import parsing
from core.judging.config import ConfigError, from_mapping, load_toml
from core.store import Store
from core.store.journal import pending_journals
from tests.conftest import ROOT, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer

CONFIG = """name = "{name}"
base_url = "{url}"
model = "fake-judge"
template = "{template}"
both_orders = true
concurrency = 8
timeout_s = {timeout}
max_retries = 5
max_calls = 100000
"""


def _arena_dir(tmp_path, n_prompts=20, models=("m1", "m2", "m3")):
    root = tmp_path / "ah"
    (root / "model_answer").mkdir(parents=True)
    with open(root / "question.jsonl", "w") as f:
        for k in range(n_prompts):
            f.write(json.dumps({"uid": f"q{k}", "prompt": f"Question number {k}: explain topic {k}."}) + "\n")
    for m in models:
        with open(root / "model_answer" / f"{m}.jsonl", "w") as f:
            for k in range(n_prompts):
                f.write(
                    json.dumps(
                        {
                            "uid": f"q{k}",
                            "model": m,
                            "messages": [
                                {"role": "user", "content": "..."},
                                {
                                    "role": "assistant",
                                    "content": {"answer": f"{m} answers question {k} in its own way."},
                                },
                            ],
                        }
                    )
                    + "\n"
                )
    return root


def _store(tmp_path, **kw):
    db = tmp_path / "j.duckdb"
    with Store.open(db) as s:
        import_path(s, _arena_dir(tmp_path, **kw), "arena-hard", dataset="ah")
    return db


def _config(tmp_path, url, template="rubric", name="fake", timeout=2):
    p = tmp_path / f"{name}.toml"
    p.write_text(CONFIG.format(name=name, url=url, template=template, timeout=timeout))
    return p


def test_config_validation(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\nbase_url = "http://h/v1"\nmodel = "m"\ncolour = "red"\n')
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        load_toml(p)
    with pytest.raises(ConfigError, match="template"):
        from_mapping({"name": "x", "base_url": "http://h", "model": "m", "template": "vibes"})
    with pytest.raises(ConfigError, match="api_key_env"):
        from_mapping({"name": "x", "base_url": "http://h", "model": "m", "api_key": "sk-secret"})
    cfg = from_mapping({"name": "x", "base_url": "http://h", "model": "m", "api_key_env": "NOT_SET_ANYWHERE_123"})
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE_123"):
        cfg.api_key()
    assert "sk-" not in json.dumps(cfg.to_store())


def test_parsing_is_tolerant_but_never_invents_a_verdict():
    good = {"A": dict.fromkeys(parsing.CRITERIA, 8), "B": dict.fromkeys(parsing.CRITERIA, 6)}
    for text in (
        json.dumps(good),
        "Here you go:\n```json\n" + json.dumps(good) + "\n```\nA wins.",
        json.dumps(good) + "\nExplanation: A is better because {reasons}.",
    ):
        p = parsing.parse_rubric(text, "ab")
        assert p.parse_error is None and p.verdict == "a" and p.scores["a_clarity"] == 8
    swapped = parsing.parse_rubric(json.dumps(good), "ba")  # A shown first was the battle's b
    assert swapped.verdict == "b" and swapped.scores["b_clarity"] == 8
    for bad, why in (
        ("", "empty"),
        ("A is better", "no JSON"),
        ('{"A": {"clarity": 8}}', "missing"),
        (json.dumps({"A": {**good["A"], "fluency": 11}, "B": good["B"]}), "outside"),
    ):
        p = parsing.parse_rubric(bad, "ab")
        assert p.verdict is None and why in p.parse_error
    lp = [{"token": "A", "logprob": -0.2}, {"token": "B", "logprob": -1.8}, {"token": "The", "logprob": -3}]
    p = parsing.parse_ab("A", "ba", lp)
    pa = 1 / (1 + pytest.importorskip("math").exp(-1.6))
    assert p.p_a == pytest.approx(1 - pa) and p.verdict == "b"
    assert parsing.parse_ab("A", "ab", None).p_a is None  # missing logprobs recorded as missing
    assert parsing.parse_ab("Neither", "ab", None).parse_error
    assert parsing.parse_two_stage("thinking... [[C]]", "ab").verdict == "tie"
    assert parsing.parse_two_stage("no decision", "ab").parse_error
    assert parsing.parse_echo("NO_ECHO").extra == {"echo": False}


def test_a_run_with_faults_stores_every_unit_once(tmp_path):
    db = _store(tmp_path, n_prompts=10)
    judge = FakeJudge(faults={3: "429", 5: "500", 8: "malformed", 11: "prose", 14: "truncated", 17: "timeout"})
    with FakeServer(judge) as srv:
        cfg = load_toml(_config(tmp_path, srv.url, timeout=1))
        with Store.open(db) as s:
            units = plan_run(s, "ah", cfg).units
            assert len(units) == 60  # 10 prompts × 3 pairs × 2 orders
            run_id, stats = run_judge(s, "ah", cfg, units)
            j = s.judgments_frame("ah", "fake", variant=None, include_raw=True)
            assert len(j) == 60 and not j.duplicated(["battle_id", "order"]).any()
            assert stats.retries >= 3  # 429, 500 and the timeout were retried
            errs = j[j["parse_error"].notna()]
            assert len(errs) == 2 and all(errs["raw_output"].notna())  # prose and truncated, kept with raw text
            assert errs["parse_error"].str.contains("truncated").any()
            assert j["verdict"].notna().sum() == 58
            runs = s.runs_frame("ah")
            assert runs.iloc[0]["status"] == "done" and runs.iloc[0]["done"] == 60
            assert not plan_run(s, "ah", cfg).units  # resuming plans nothing
            # judgments flow into a leaderboard
            f = s.battle_frame("ah", "fake")
            assert f["judge_hard"].notna().sum() >= 28


def test_run_list_counts_tokens_and_prices_them_only_when_configured(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with FakeServer() as srv:
        priced = from_mapping(
            {
                "name": "priced",
                "base_url": srv.url,
                "model": "m",
                "concurrency": 4,
                "price_prompt_per_mtok": 3.0,
                "price_completion_per_mtok": 15.0,
            }
        )
        unpriced = from_mapping({"name": "unpriced", "base_url": srv.url, "model": "m", "concurrency": 4})
        with Store.open(db) as s:
            for cfg in (priced, unpriced):
                run_judge(s, "ah", cfg, plan_run(s, "ah", cfg).units)
            runs = s.runs_frame("ah").set_index("judge")
            for name in ("priced", "unpriced"):
                j = s.judgments_frame("ah", name, variant=None, include_raw=True)
                assert runs.loc[name, "prompt_tokens"] == j["prompt_tokens"].sum() > 0
                assert runs.loc[name, "completion_tokens"] == j["completion_tokens"].sum() > 0
    pt, ct = runs.loc["priced", "prompt_tokens"], runs.loc["priced", "completion_tokens"]
    assert runs.loc["priced", "cost_usd"] == pytest.approx((3.0 * pt + 15.0 * ct) / 1e6)
    assert pd.isna(runs.loc["unpriced", "cost_usd"])  # unknown, not zero
    assert priced.cost(pt, ct) == pytest.approx(runs.loc["priced", "cost_usd"])
    with pytest.raises(ConfigError, match="price_prompt_per_mtok"):
        from_mapping({"name": "x", "base_url": "http://h/v1", "model": "m", "price_prompt_per_mtok": -1})


def test_writer_commits_a_slow_trickle_within_its_window_and_a_full_batch_at_once(tmp_path):
    from core.app.judging import register_judge
    from core.judging.runner import RunStats, _Writer

    db = _store(tmp_path, n_prompts=20)
    cfg = from_mapping({"name": "w", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    with Store.open(db) as s:
        judge_id = register_judge(s, cfg)
        units = plan_run(s, "ah", cfg).units
        run_id = s.create_run(judge_id, "ah", len(units), cfg.to_store())
        rows = [
            {
                "battle_id": u.battle_id,
                "judge_id": judge_id,
                "order": u.order,
                "prompt_version": cfg.version,
                "run_id": run_id,
                "verdict": "a",
                "raw_output": "[[A]]",
            }
            for u in units
        ]

        def stored() -> int:
            return len(s.judgments_frame("ah", "w", variant=None))

        # The window is long, so "a full batch at once" is told apart from "at the window" by the commit count
        # and by state, not by a stopwatch: a fixed sleep then an assertion failed on a loaded machine.
        writer = _Writer(s, run_id, RunStats(planned=len(rows)), None, batch_rows=10, window_s=1.0)
        writer.start()
        t0 = time.monotonic()
        for r in rows[:3]:  # fewer than a batch: committed when the window closes, not before
            writer.queue.put(r)
        wait_until(lambda: stored() == 3, timeout=60, what="the trickle committed by the window")
        assert time.monotonic() - t0 >= 0.9 * writer.window_s  # a lower bound: true on any machine
        assert writer.commits == 1
        writer.window_s = 3600.0  # from here on only a full batch (or closing) can commit
        for r in rows[3:13]:  # a full batch: committed without waiting for the window
            writer.queue.put(r)
        wait_until(lambda: stored() == 13, timeout=60, what="the full batch committed without its window")
        assert writer.commits == 2
        for r in rows[13:15]:
            writer.queue.put(r)
        writer.close()  # closing flushes at once
        writer.join(60)
        assert not writer.is_alive() and writer.error is None and stored() == 15
        assert writer.commits == 3


@pytest.mark.parametrize(
    "body, reason",
    [
        (b'{"id": "x", "choices": [ {"message": ', "Expecting"),  # cut-off JSON
        (b'{"object": "error"}', "no 'choices' list"),
        (b'{"choices": ["text"]}', "not an object"),
        (b'{"choices": [{"message": {"content": 7}}]}', "not a string"),
        (b"[1, 2]", "no 'choices' list"),
    ],
)
def test_malformed_completion_bodies_are_rejected_with_a_reason(body, reason):
    from core.judging.runner import _read_completion

    with pytest.raises(ValueError, match=reason):
        _read_completion(body)


def test_completion_body_fields_and_first_token_logprobs():
    from core.judging.runner import _read_completion

    body = {
        "choices": [
            {
                "message": {"content": "A"},
                "finish_reason": "length",
                "logprobs": {
                    "content": [
                        {
                            "token": "A",
                            "logprob": -0.1,
                            "top_logprobs": [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.4}],
                        }
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1},
    }
    got = _read_completion(json.dumps(body).encode())
    assert got == {
        "raw_output": "A",
        "top": [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.4}],
        "prompt_tokens": 12,
        "completion_tokens": 1,
        "finish": "length",
    }
    empty = _read_completion(b'{"choices": []}')  # no choice: no text, parsed later as unparseable
    assert empty["raw_output"] is None and empty["top"] is None and empty["prompt_tokens"] == 0


def _request_summary(request) -> tuple:
    return (
        request.method,
        str(request.url),
        sorted((k.lower(), v) for k, v in request.headers.raw),
        request.content,
        request.extensions,
    )


@pytest.mark.parametrize("idempotency_header", [None, "Idempotency-Key"])
def test_judge_client_builds_the_same_requests_as_the_sdk(idempotency_header):
    """The cached request path (JudgeClient) against the SDK's own builder, call after call."""
    import openai
    from openai._models import FinalRequestOptions

    from core.judging.client import JudgeClient

    kwargs = dict(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=0, timeout=12.5)
    ours, sdk = JudgeClient(**kwargs), openai.AsyncOpenAI(**kwargs)
    ours._idempotency_header = sdk._idempotency_header = idempotency_header
    calls = [
        dict(
            method="post",
            url="/chat/completions",
            content=json.dumps({"n": k, "t": "é"}).encode(),
            idempotency_key=f"key-{k}",
        )
        for k in range(4)
    ]
    calls += [
        dict(method="post", url="/chat/completions", json_data={"as": "dict"}, idempotency_key="d"),
        dict(method="post", url="/chat/completions", content=b"{}", idempotency_key="t", timeout=3.0),
        dict(method="post", url="/chat/completions", content=b"{}", params={"q": "1"}),
        dict(method="post", url="/chat/completions", content=b"{}", headers={"X-Extra": "1"}),
        dict(method="get", url="/models"),
    ]
    for retries in (0, 1, 0):
        for call in calls:
            got = _request_summary(ours._build_request(FinalRequestOptions.construct(**call), retries_taken=retries))
            want = _request_summary(sdk._build_request(FinalRequestOptions.construct(**call), retries_taken=retries))
            assert got == want, call
    assert set(ours._request_templates) == {("/chat/completions", 0), ("/chat/completions", 1)}
    if idempotency_header:
        sent = ours._build_request(FinalRequestOptions.construct(**calls[2]))
        assert sent.headers["idempotency-key"] == "key-2"


@pytest.mark.integration
def test_logprob_template_and_unreachable_endpoint(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with FakeServer() as srv:
        cfg = load_toml(_config(tmp_path, srv.url, template="ab-logprob", name="lp"))
        with Store.open(db) as s:
            run_judge(s, "ah", cfg, plan_run(s, "ah", cfg).units)
            f = s.battle_frame("ah", "lp")
            assert f["p_ab"].notna().all() and f["p_ba"].notna().all()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    cfgp = _config(tmp_path, f"http://127.0.0.1:{dead}/v1", name="dead")
    r = subprocess.run(
        [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfgp), "--dataset", "ah"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 3 and "reach" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n')
    r = subprocess.run(
        [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(bad), "--dataset", "ah"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "base_url" in r.stderr


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Each kill costs a process start (~3 s on a busy machine); 8 kills at random moments of the work show what
# 20 showed (a kill between a response's arrival and its journal line, and one in the middle of a batch).
KILLS = 8
UNITS = 160  # of 360: the runs between kills give about a dozen each, the last run the rest


@pytest.mark.integration
@pytest.mark.slow
def test_killed_runs_resume_without_losing_or_duplicating(tmp_path, record_property):
    """SIGKILL the judge process 8 times at random moments, resume each time, then finish.

    Counted from the fake endpoint's log of sent completions: no judgment is lost or duplicated, no run
    row stays 'running', and a completion that had to be asked again was sent at most 1 s before the kill
    that lost it (a response is journaled the moment it arrives: only calls in flight are asked again).
    """
    db = _store(tmp_path, n_prompts=60)  # 180 battles × 2 orders = 360 units
    port = _free_port()
    log = tmp_path / "served.log"
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fake_openai_server.py"),
            str(port),
            "1000",  # 8 calls in flight → 8 judgments/s: each run between kills finishes a dozen or so
            json.dumps({"500": 13, "429": 17}),
            "0",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()
        cfg = _config(
            tmp_path, f"http://127.0.0.1:{port}/v1", name="killme", timeout=15
        )  # no timeouts: repeats are kills
        cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
        cmd += ["--limit", str(UNITS)]  # a run is a job: every restart completes these units, never more
        rng = random.Random(0)
        kill_times: list[float] = []
        for _ in range(80):
            seen = max(pending_journals(db), default=0)
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # past the start-up into the judging: the run's journal appears once its row exists (a state, not
            # a guess at how long start-up takes on a busy machine), then a random moment of its work
            deadline = time.monotonic() + 60
            while max(pending_journals(db), default=0) <= seen and proc.poll() is None:
                assert time.monotonic() < deadline, "the run never started"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.3, 2.0))
            if proc.poll() is None:
                kill_times.append(time.time())
                proc.send_signal(signal.SIGKILL)
            proc.wait()
            if len(kill_times) >= KILLS:
                break
        final = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr
        assert len(kill_times) >= KILLS
        with Store.open(db, read_only=True) as s:
            j = s.judgments_frame("ah", "killme", variant=None)
            runs = s.runs_frame("ah")
        assert len(j) == UNITS
        assert not j.duplicated(["battle_id", "order"]).any()
        assert runs["status"].iloc[0] == "done"
        assert (runs["status"].iloc[1:] == "interrupted").all() and len(runs) >= KILLS + 1  # none left 'running'
        sent = pd.read_csv(log, sep="\t", names=["t", "digest"])
        assert sent["digest"].nunique() == UNITS
        repeats = sent[sent["digest"].duplicated(keep=False)].groupby("digest")["t"].min()
        lost_age = []
        for t_first in repeats:
            # The server logs a completion once its bytes are out: one asked just before a kill is sent up to
            # a latency (1 s) after it, to a process that is gone.  That is a call in flight, not a response
            # the run received and failed to keep.
            if any(t_first - 1.2 <= k < t_first for k in kill_times):
                continue
            later = [k for k in kill_times if k >= t_first]
            assert later, "a completion was asked twice without a kill in between"
            lost_age.append(later[0] - t_first)
        record_property("kills", len(kill_times))
        record_property("responses_asked_again", len(lost_age))
        record_property("oldest_lost_response_s", round(max(lost_age, default=0.0), 3))
        assert max(lost_age, default=0.0) <= 1.0, sorted(lost_age)[-5:]
        info = json.loads(
            subprocess.run(
                [sys.executable, "-m", "core", "info", "--db", str(db), "--json"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        judges = {jd["name"]: jd for d in info["datasets"] if d["name"] == "ah" for jd in d["judges"]}
        assert judges["killme"]["n_judgments"] == UNITS
    finally:
        server.kill()


@pytest.mark.integration
def test_admin_page_is_locked_without_a_token_and_runs_with_one(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = _store(tmp_path, n_prompts=3)
    monkeypatch.setenv("ARENA_DB", str(db))
    monkeypatch.delenv("ARENA_ADMIN_TOKEN", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/admin.py")
    at.run()
    assert not at.exception and "disabled" in at.info[0].value
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", "s3cret")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/admin.py")
    at.run()
    at.text_input(key="admin_token_input").set_value("wrong").run()
    assert at.error and "Wrong token" in at.error[0].value
    at.text_input(key="admin_token_input").set_value("s3cret").run()
    assert not at.exception and any("Judge configuration" in h.value for h in at.subheader)
    assert "s3cret" not in str([m.value for m in at.markdown])

    # a run started from the form executes in a worker process and lands in the run list, priced
    with FakeServer() as srv:
        field = {w.label: w for w in [*at.text_input, *at.number_input, *at.radio]}
        field["name"].set_value("page-judge")
        field["base URL"].set_value(srv.url)
        field["model"].set_value("fake-judge")
        field["USD per million prompt tokens (optional, for the cost column)"].set_value(2.0)
        field["USD per million completion tokens (optional)"].set_value(8.0)
        field["action"].set_value("start run")
        next(b for b in at.button if b.label == "Go").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("Started a worker process" in m.value for m in at.success)

        def page_run() -> pd.DataFrame:
            with Store.open(db, read_only=True, wait_s=5) as s:
                runs = s.runs_frame("ah")
            return runs[runs["judge"] == "page-judge"]

        wait_until(
            lambda: not (r := page_run()).empty and r["status"].iloc[0] == "done",
            timeout=90,
            poll=0.5,
            what="the page's run finishing",
        )
        row = page_run()
        at.run()
    assert not row.empty and row["status"].iloc[0] == "done"
    assert int(row["owner_pid"].iloc[0]) != os.getpid()  # not the server's process
    shown = next(d.value for d in at.dataframe if "judge" in d.value.columns and "cost_usd" in d.value.columns)
    r = shown[shown["judge"] == "page-judge"].iloc[0]
    assert r["status"] == "done" and r["done"] == 18
    assert r["cost_usd"] == pytest.approx((2.0 * r["prompt_tokens"] + 8.0 * r["completion_tokens"]) / 1e6)


@pytest.mark.integration
def test_worker_process_runs_and_cancels_keeping_what_finished(tmp_path):
    from core.app.judging import connection_test, start_worker

    db = _store(tmp_path, n_prompts=10)
    with FakeServer(FakeJudge(latency_ms=20)) as srv:
        cfg = load_toml(_config(tmp_path, srv.url, name="bg"))
        res = connection_test(cfg)
        assert res["ok"] and res["model"] == "fake-judge"
        w = start_worker(db, "ah", cfg)
        assert w.wait(120) == 0, w.log_lines()
        with Store.open(db, read_only=True) as s:
            runs = s.runs_frame("ah")
            assert len(s.judgments_frame("ah", "bg", variant=None)) == 60
        assert runs.loc[runs["judge"] == "bg", "status"].tolist() == ["done"]
    with FakeServer(FakeJudge(latency_ms=300)) as slow:
        cfg2 = load_toml(_config(tmp_path, slow.url, name="bg2"))
        w2 = start_worker(db, "ah", cfg2)
        # cancel once the run has finished calls (a fixed sleep raced the worker's start on a loaded machine)
        wait_until(
            lambda: any(re.search(r"\] [1-9]\d*/", ln) for ln in w2.log_lines()),
            timeout=60,
            poll=0.1,
            what="the worker's first finished calls",
        )
        w2.cancel()
        assert w2.wait(60) == 128 + signal.SIGTERM, w2.log_lines()
    with Store.open(db, read_only=True) as s:
        run = s.runs_frame("ah").query("judge == 'bg2'").iloc[0]
        stored = len(s.judgments_frame("ah", "bg2", variant=None))
    assert run["status"] == "cancelled" and 0 < stored < 60
    assert run["done"] + run["failed"] == stored  # the row's counters are what the store holds


def test_echo_intervention_through_the_pipeline(tmp_path):
    from core.app.judging import echo_intervention_results, plan_echo_intervention

    db = _store(tmp_path, n_prompts=5)
    with FakeServer() as srv:
        cfg = load_toml(_config(tmp_path, srv.url, template="ab-logprob", name="echoer"))
        with Store.open(db) as s:
            units = plan_echo_intervention(s, "ah", cfg, sample_size=4)
            assert len(units) == 4 * 3 * 2
            assert all(
                "Question:" in (u.text_a if u.variant == "echo_a" else u.text_b)
                for u in units
                if u.variant != "original"
            )
            run_judge(s, "ah", cfg, units)
            assert not plan_echo_intervention(s, "ah", cfg, sample_size=4)  # resumable like any run
            summary = echo_intervention_results(s, "ah", "echoer").set_index("variant")
            assert set(summary.index) == {"original", "echo_a", "echo_b"}
            assert (summary["n_battles"] == 4).all()
            # the intervention never leaks into the leaderboard's judgments
            assert s.battle_frame("ah", "echoer")["n_judgments"].max() == 2
