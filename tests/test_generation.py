"""Answer generation: a new model's answers to a dataset's prompts, resumable and one per prompt.

Against the project's fake endpoint (real HTTP): multi-turn prompts answered turn by turn, reasoning kept
apart, a failure stored with its reason and retried by the next run, a repeated command a no-op, and the
answers usable as the model's completions (a judge can compare them).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from core.app.data import import_path
from core.app.generation import load_model_toml, model_config, split_reasoning
from core.judging.config import ConfigError
from core.store import Store
from tests.conftest import ROOT, admin_page, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_lmarena_releases import _frame_140k

MODEL_TOML = """name = "newcomer"
base_url = "{url}"
model = "fake-model"
system_prompt = "You answer questions helpfully."
max_tokens = 256
concurrency = 4
max_retries = 1
price_prompt_per_mtok = 1.0
price_completion_per_mtok = 2.0
"""


def _store(tmp_path):
    """Two battles from LMArena's 140k layout: one single-turn prompt, one with two turns."""
    path = tmp_path / "arena.parquet"
    frame = _frame_140k()
    extra = frame.iloc[[0]].assign(id="c3", model_b="m3")  # a third prompt (a battle of its own)
    pd.concat([frame, extra], ignore_index=True).to_parquet(path)
    db = tmp_path / "g.duckdb"
    with Store.open(db) as s:
        import_path(s, path, "lmarena", dataset="arena")
    return db


def _generate(db, cfg, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "core", "generate", "--db", str(db), "--config", str(cfg), "--dataset", "arena"]
    return subprocess.run([*cmd, *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _config(tmp_path, url, **over) -> object:
    lines = [ln for ln in MODEL_TOML.format(url=url).splitlines() if ln.split(" = ")[0] not in over]
    text = "\n".join(lines) + "\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in over.items())
    path = tmp_path / "model.toml"
    path.write_text(text)
    return path


@pytest.mark.integration
def test_answers_turn_by_turn_with_reasoning_apart_and_never_twice(tmp_path):
    db = _store(tmp_path)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        cfg = _config(tmp_path, srv.url)
        first = _generate(db, cfg, "--limit", "2")
        assert first.returncode == 0, first.stderr
        with Store.open(db, read_only=True) as s:
            assert len(s.generations_frame("arena", "newcomer")) == 2
        again = _generate(db, cfg, "--limit", "2")
        assert again.returncode == 0 and "nothing to do: the 2 prompts covered" in again.stderr
        served = srv.judge.served
        rest = _generate(db, cfg)
        assert rest.returncode == 0, rest.stderr
        assert srv.judge.served == served + 1  # only the third prompt was asked
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("arena", "newcomer")
        comps = s.completions_frame("arena", with_text=True)
        prompts = s.prompts_for_generation("arena").set_index("prompt_id")
    assert len(gens) == 3 and (gens["status"] == "ok").all() and not gens["prompt_id"].duplicated().any()
    two = gens[gens["turns"].notna()].iloc[0]
    asked = json.loads(prompts.loc[two["prompt_id"], "turns"])
    answers = json.loads(two["turns"])
    # the second call carried both user turns and the model's first answer: the fake names the turn it saw
    assert answers == [f"Answer 1 to: {asked[0]}", f"Answer 2 to: {asked[1]}"]
    assert two["text"] == "\n\n".join(answers) and "<think>" not in two["text"]
    assert two["reasoning"] == "reasoning for turn 1\n\nreasoning for turn 2"
    assert (gens["prompt_tokens"] > 0).all() and (gens["latency_ms"] > 0).all()
    mine = comps[comps["model"] == "newcomer"]
    assert len(mine) == 3 and set(mine["text"]) == set(gens["text"]) and (mine["length"] > 0).all()


@pytest.mark.integration
def test_a_failure_is_stored_with_its_reason_and_retried(tmp_path):
    db = _store(tmp_path)
    with FakeServer(FakeJudge(latency_ms=5, faults={1: "400"})) as srv:
        cfg = _config(tmp_path, srv.url, concurrency=1)
        out = _generate(db, cfg)
        assert out.returncode == 75, out.stderr  # resumable: one failed
        with Store.open(db, read_only=True) as s:
            gens = s.generations_frame("arena", "newcomer")
        failed = gens[gens["status"] == "failed"]
        assert len(failed) == 1 and "HTTP 400" in failed["error"].iloc[0] and failed["text"].isna().all()
        assert (gens["status"] == "ok").sum() == 2
        out = _generate(db, cfg)
        assert out.returncode == 0, out.stderr
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("arena", "newcomer")
    assert len(gens) == 3 and (gens["status"] == "ok").all()


@pytest.mark.integration
def test_new_settings_are_new_answers_and_the_old_completion_stays(tmp_path):
    db = _store(tmp_path)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        assert _generate(db, _config(tmp_path, srv.url)).returncode == 0
        assert _generate(db, _config(tmp_path, srv.url, temperature=0.7)).returncode == 0
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("arena", "newcomer")
        comps = s.completions_frame("arena")
    assert len(gens) == 6 and gens["settings_key"].nunique() == 2
    assert (comps["model"] == "newcomer").sum() == 3  # one completion per prompt: the first settings' answer


def test_model_configuration_rules(tmp_path):
    base = {"name": "n", "base_url": "http://h/v1", "model": "m"}
    assert model_config(base).settings_key == model_config(dict(base)).settings_key
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        model_config({**base, "colour": "red"})
    with pytest.raises(ConfigError, match="api_key_env"):
        model_config({**base, "api_key": "sk-abc"})
    with pytest.raises(ConfigError, match="credentials") as exc:
        model_config({**base, "base_url": "http://user:sk-secret@h/v1"})
    assert "sk-secret" not in str(exc.value)
    with pytest.raises(ConfigError, match="admin token"):
        model_config({**base, "api_key_env": "ARENA_ADMIN_TOKEN"})
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "n"\nbase_url = "http://h/v1"\nmodel = "m"\n[extra]\nx = 1\n')
    with pytest.raises(ConfigError, match="unknown table"):
        load_model_toml(bad)


def test_reasoning_is_split_from_the_answer():
    class Message:
        model_extra = {"reasoning_content": "first I think"}

    assert split_reasoning("<think>plan</think>\nThe answer.", object()) == ("The answer.", "plan")
    assert split_reasoning("The answer.", Message()) == ("The answer.", "first I think")
    assert split_reasoning(None, object()) == ("", None)


@pytest.mark.integration
@pytest.mark.slow
def test_killed_generations_resume_to_exactly_the_planned_set(tmp_path):
    """8 SIGKILLs at random moments, then the same command once more: every covered prompt answered once."""
    import random
    import signal
    import socket
    import time

    from tests.test_judging import _store as _judging_store

    # Slow answers (1 s each, 4 in flight) and more of them than 8 short runs can give: every run is still
    # answering when it is killed, however fast the machine starts one (on a fast one, 60 answers at
    # 13/s were all given by the fourth run, and the later runs ended before their kill).
    db = _judging_store(tmp_path, n_prompts=200)
    with Store.open(db, read_only=True) as s:
        n_prompts = len(s.prompts_for_generation("ah"))
    limit = 120  # 8 runs of at most 3 s at 4 answers/s give fewer
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "served.log"
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_openai_server.py"), str(port), "1000", "{}", "0", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        server.stdout.readline()  # type: ignore[union-attr]
        cfg = _config(tmp_path, f"http://127.0.0.1:{port}/v1", concurrency=4)
        cmd = [sys.executable, "-m", "core", "generate", "--db", str(db), "--config", str(cfg), "--dataset", "ah"]
        cmd += ["--limit", str(limit)]
        rng = random.Random(1)
        kills = 0
        for _ in range(60):
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(1.5, 3.0))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            if kills >= 8:
                break
        final = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert kills == 8 and n_prompts >= limit
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("ah", "newcomer")
        first = s.prompts_for_generation("ah")["prompt_id"].iloc[:limit]
    assert len(gens) == limit and not gens["prompt_id"].duplicated().any()
    assert set(gens["prompt_id"]) == set(first) and (gens["status"] == "ok").all()
    sent = len(log.read_text().splitlines())
    # answers are journaled as they arrive: a kill loses only the calls in flight (concurrency 4)
    assert sent - limit <= 8 * 4, (sent, limit)


@pytest.mark.integration
def test_the_admin_page_starts_a_generation_worker(tmp_path, monkeypatch):

    db = _store(tmp_path)
    at = admin_page(db, monkeypatch)
    with FakeServer(FakeJudge(latency_ms=5)) as srv:
        at.text_input(key="gen_name").set_value("from-page")
        at.text_input(key="gen_url").set_value(srv.url)
        at.text_area(key="gen_system").set_value("You answer questions.")
        next(b for b in at.button if b.label == "Start generating").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("generating from-page's answers" in m.value for m in at.success)

        def generated() -> pd.DataFrame:
            with Store.open(db, read_only=True, wait_s=5) as s:
                return s.generations_frame("arena", "from-page")

        wait_until(lambda: len(generated()) == 3, timeout=90, poll=0.5, what="the worker's three answers")
        gens = generated()
    assert len(gens) == 3 and (gens["status"] == "ok").all()
