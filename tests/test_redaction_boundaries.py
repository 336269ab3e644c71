"""A key never leaves where it belongs: redaction at every boundary, after nothing is cut.

The fake endpoint (``tests/fake_openai_server.py``, extended here) echoes the bearer key in error bodies whose
key sits across the old 200-character cut, in an unparseable 200 body whose key sits across the raw-output cap,
and in generated answers.  Everything the runs leave behind (store file and WAL, a logical dump of the store,
run journals and worker logs, CLI stdout/stderr, CSV/Parquet exports, bundle members, the report, the Admin and
Vote pages' text) is searched for every 8-character piece of the key.
"""

from __future__ import annotations

import io
import json
import os
import random
import stat
import string
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import redact
from core.judging.config import ConfigError, from_mapping
from core.judging.runner import MAX_RAW_CHARS
from core.store import Store
from tests.conftest import ROOT
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_generation import _store as _arena_store

VAR = "JUDGE_API_KEY"
PAD_400 = 140  # the key starts at character ~180 of the SDK's error text: across a cut at 200
SEGMENT = 8


class EchoJudge(FakeJudge):
    """The fake endpoint, echoing the caller's key where careless endpoints do, placed across every cut."""

    def reply(self, body: dict, fault: str | None, auth: str = "") -> tuple[int, bytes, dict]:
        key = auth.removeprefix("Bearer ").strip()
        if fault == "pad_400":
            return 400, json.dumps({"error": {"message": "x" * PAD_400 + key + " is not valid"}}).encode(), {}
        if fault == "pad_500":  # transient: the run defers the unit and its summary quotes the reason
            return 500, json.dumps({"error": {"message": "z" * PAD_400 + key + " overloaded"}}).encode(), {}
        if fault == "pad_200":  # unparseable, the key across the raw-output cap
            return 200, ("y" * (MAX_RAW_CHARS - 10) + key + " tail").encode(), {}
        status, payload, headers = super().reply(body, fault, auth)
        msgs = body.get("messages") or []
        if status == 200 and msgs and "You answer questions" in str(msgs[0].get("content")):
            data = json.loads(payload)
            message = data["choices"][0]["message"]
            message["content"] = f"{message['content']} (my key is {key}; encoded {key.replace('-', '%2D')})"
            payload = json.dumps(data).encode()
        return status, payload, headers


def _windows(key: str) -> set[bytes]:
    """Every piece of the key of ``SEGMENT`` characters (any longer piece contains one of them)."""
    return {key[i : i + SEGMENT].encode() for i in range(len(key) - SEGMENT + 1)}


def _found(data: bytes | str, key: str) -> bool:
    raw = data.encode() if isinstance(data, str) else data
    return any(w in raw for w in _windows(key))


def _store_dump(db: Path) -> str:
    """Every row of every table of the store, as text (the file itself may hold strings compressed)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return "\n".join(con.execute(f'SELECT * FROM "{t}"').df().to_csv() for t in tables)
    finally:
        con.close()


def _file_texts(folder: Path) -> dict[str, bytes]:
    """Every file's bytes; a zip's members and a Parquet file's rows as well (both are compressed)."""
    out: dict[str, bytes] = {}
    for p in folder.rglob("*"):
        if not p.is_file():
            continue
        data = p.read_bytes()
        out[str(p)] = data
        if p.suffix == ".zip":
            with zipfile.ZipFile(p) as zf:
                for name in zf.namelist():
                    member = zf.read(name)
                    out[f"{p}!{name}"] = member
                    if name.endswith(".parquet"):
                        out[f"{p}!{name} (rows)"] = pd.read_parquet(io.BytesIO(member)).to_csv().encode()
        elif p.suffix == ".parquet":
            out[f"{p} (rows)"] = pd.read_parquet(p).to_csv().encode()
    return out


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def _page_text(at) -> str:
    parts: list[str] = []
    for kind in ("markdown", "caption", "code", "error", "success", "info", "warning", "text", "exception"):
        parts += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    parts += [e.value.to_csv() for e in at.dataframe]
    return "\n".join(parts)


def _judge_toml(name: str, url: str) -> str:
    return (
        f'name = "{name}"\nbase_url = "{url}"\nmodel = "fake-judge"\napi_key_env = "{VAR}"\n'
        "max_retries = 0\nconcurrency = 4\n"
    )


def _key(alphabet: str, seed: int, n: int) -> str:
    rng = random.Random(seed)  # a key has high entropy: none of its pieces occurs in ordinary text
    return "sk-" + "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
KEYS = st.builds(
    _key,
    st.sampled_from([ALNUM, ALNUM + "-_", ALNUM + "+/=", ALNUM + "-_.~+/="]),
    st.integers(0, 2**32),
    st.integers(24, 64),
)


def _every_boundary(tmp: Path, key: str) -> dict[str, str | bytes]:
    """Run everything that writes, prints, exports or shows text with the key in ``VAR``; what each left."""
    from streamlit.testing.v1 import AppTest

    from core.app.newmodel import plan_battles
    from core.app.workers import spawn
    from core.judging.client import connection_test

    db = _arena_store(tmp)
    env = {**os.environ, VAR: key, redact.KEY_ENV_ALLOW_ENV: VAR, redact.ADMIN_TOKEN_ENV: "admin-token-for-tests"}
    env["ARENA_DB"] = str(db)  # the pages read this store
    seen: dict[str, str | bytes] = {}
    model_toml = tmp / "model.toml"
    with FakeServer(EchoJudge(faults={2: "pad_400"})) as gen:
        model_toml.write_text(
            f'name = "newcomer"\nbase_url = "{gen.url}"\nmodel = "fake-model"\napi_key_env = "{VAR}"\n'
            'system_prompt = "You answer questions helpfully."\nmax_retries = 0\nconcurrency = 1\n'
        )
        run = _cli(env, "generate", "--db", str(db), "--config", str(model_toml), "--dataset", "arena")
        seen["generate stdout+stderr"] = run.stdout + run.stderr
    with Store.open(db) as s:
        plan = plan_battles(s, "arena", "newcomer", n_anchors=2)
        assert not isinstance(plan, type(None)) and hasattr(plan, "battles"), plan
        s.add_battles("arena", plan.battles)
    judge_faults = {"pad_400": 3, "pad_200": 4, "pad_500": 5}
    with FakeServer(EchoJudge(fault_every=judge_faults)) as srv:
        cfg = tmp / "judge.toml"
        cfg.write_text(_judge_toml("echoj", srv.url))
        run = _cli(env, "judge", "--db", str(db), "--config", str(cfg), "--dataset", "arena")
        assert run.returncode in (0, 75), run.stderr
        seen["judge stdout+stderr"] = run.stdout + run.stderr
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # the worker, the connection test and the pages read the environment
        try:
            worker = spawn("judge", db, "arena", "worker-judge", _judge_toml("worker-judge", srv.url), [])
            assert worker.wait(240) is not None
            seen["worker log lines"] = "\n".join(worker.log_lines(50))
            assert stat.S_IMODE(worker.log_path.stat().st_mode) == 0o600
            echo_all = FakeServer(EchoJudge(fault_every={"pad_400": 1}))
            with echo_all:
                test = connection_test(from_mapping(tomlish(_judge_toml("t", echo_all.url)), "test"))
                assert not test["ok"] and redact.REDACTED in test["error"]
                seen["connection test"] = json.dumps(test)
                at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
                at.run()
                at.switch_page("app_pages/admin.py")
                at.run()
                at.text_input(key="admin_token_input").set_value("admin-token-for-tests").run()
                next(t for t in at.text_input if t.label == "base URL").set_value(echo_all.url)
                next(t for t in at.text_input if t.label == "model").set_value("fake-judge")
                at.selectbox(key="judge_key_env").set_value(VAR)
                next(b for b in at.button if b.label == "Go").click().run()
                assert not at.exception, at.exception
                seen["admin page"] = _page_text(at)
                assert "redacted" in seen["admin page"]  # the echoed key was on the page, redacted (and escaped)
            vote_texts = []
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
            at.query_params["annotator"] = "tester"
            at.query_params["queue"] = "random"
            at.run()
            at.switch_page("app_pages/vote.py")
            at.run()
            for _ in range(12):  # through the queue until the new model's (redacted) answers are on screen
                assert not at.exception, at.exception
                vote_texts.append(_page_text(at))
                if "redacted" in vote_texts[-1]:
                    break
                skip = [b for b in at.button if b.label == "Skip"]
                if not skip:
                    break
                skip[0].click().run()
            seen["vote page"] = "\n".join(vote_texts)
            assert "redacted" in seen["vote page"]
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    out = tmp / "out"
    for args in (
        ["--table", "judgments", "--out", str(out / "judgments.csv")],
        ["--table", "judgments", "--out", str(out / "judgments.parquet")],
        ["--table", "battles", "--out", str(out / "battles.parquet")],
        ["--bundle", str(out / "bundle.zip")],
    ):
        run = _cli(env, "export", "--db", str(db), "--dataset", "arena", *args)
        assert run.returncode == 0, run.stderr
        seen[f"export {args[-1]}"] = run.stdout + run.stderr
    run = _cli(env, "report", "--db", str(db), "--dataset", "arena", "--out", str(out / "report.html"))
    assert run.returncode == 0, run.stderr
    seen["report stdout+stderr"] = run.stdout + run.stderr
    seen["store rows"] = _store_dump(db)
    seen.update(_file_texts(tmp))
    assert (out / "bundle.zip").exists() and (out / "report.html").exists()
    return seen


def tomlish(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


@pytest.mark.integration
@settings(
    max_examples=2,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(key=KEYS)
def test_no_piece_of_the_key_reaches_any_boundary(key):
    with tempfile.TemporaryDirectory() as d:
        seen = _every_boundary(Path(d), key)
    assert seen["store rows"] and any(redact.REDACTED in str(v) for v in seen.values())
    leaks = sorted(name for name, data in seen.items() if _found(data, key))
    assert leaks == []


# ---------------------------------------------------------------- each defect on its own (fast)

KEY = _key(ALNUM + "-_", 7, 40)


def test_redaction_comes_before_every_cut(monkeypatch):
    monkeypatch.setenv(VAR, KEY)
    text = "x" * 190 + KEY
    assert not _found(redact.clip(text, 200), KEY) and redact.clip(text, 195).endswith("[reda")
    from core.judging.client import connection_test

    with FakeServer(EchoJudge(fault_every={"pad_400": 1})) as srv:
        res = connection_test(from_mapping(tomlish(_judge_toml("t", srv.url)), "test"))
    assert not res["ok"] and not _found(res["error"], KEY) and redact.REDACTED in res["error"]


@pytest.mark.parametrize(
    "dtype", ["str", "string", "string[pyarrow]", "object", "category", "large_string[pyarrow]", "list"]
)
def test_frames_of_every_text_dtype_are_redacted(monkeypatch, dtype):
    import pyarrow as pa

    monkeypatch.setenv(VAR, KEY)
    cells = [f"said {KEY}", None, "plain"]
    if dtype == "large_string[pyarrow]":
        col = pd.Series(cells, dtype=pd.ArrowDtype(pa.large_string()))
    elif dtype == "list":
        col = pd.Series([[c] for c in cells], dtype=object)
    else:
        col = pd.Series(cells, dtype=dtype)
    out = redact.redact_frame(pd.DataFrame({"t": col, "n": [1, 2, 3]}))
    assert not _found(out.to_csv(), KEY) and redact.REDACTED in out.to_csv()
    assert out["n"].tolist() == [1, 2, 3]


BASE = {"name": "j", "model": "m", "api_key_env": VAR}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", f"https://api.example.com/v1/{KEY}"),
        ("base_url", f"https://api.example.com/v1?q={KEY}"),
        ("base_url", f"https://api.example.com/v1/{KEY.replace('-', '%2D')}"),
        ("model", f"gpt-{KEY}"),
        ("name", KEY),
    ],
)
def test_the_key_anywhere_but_its_field_is_a_configuration_error(monkeypatch, tmp_path, field, value):
    monkeypatch.setenv(VAR, KEY)
    data = {**BASE, "base_url": "https://api.example.com/v1", field: value}
    with pytest.raises(ConfigError, match=field) as err:
        from_mapping(data)
    assert not _found(str(err.value), KEY)
    cfg = tmp_path / "j.toml"
    cfg.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in data.items()))
    run = _cli(
        {**os.environ, VAR: KEY}, "judge", "--db", str(tmp_path / "x.duckdb"), "--config", str(cfg), "--dataset", "d"
    )
    assert run.returncode == 2 and field in run.stderr and not _found(run.stdout + run.stderr, KEY)


@pytest.mark.integration
@pytest.mark.parametrize("bad", [KEY + "\n", KEY[:20] + "\r\n" + KEY[20:], KEY + "é", "clé-" + KEY, KEY + "\x00"])
def test_a_key_with_control_or_non_ascii_characters_is_a_configuration_error(tmp_path, bad):
    cfg = tmp_path / "j.toml"
    cfg.write_text(_judge_toml("j", "http://127.0.0.1:9/v1"))
    if "\x00" in bad:  # an environment cannot hold NUL: the check itself
        from core.judging.config import check_key_value

        with pytest.raises(ConfigError, match="control characters") as err:
            check_key_value(bad, "test", VAR, {})
        assert not _found(str(err.value), KEY)
        return
    run = _cli(
        {**os.environ, VAR: bad}, "judge", "--db", str(tmp_path / "x.duckdb"), "--config", str(cfg), "--dataset", "d"
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and VAR in run.stderr and not _found(run.stdout + run.stderr, KEY)


@pytest.mark.integration
def test_worker_files_are_readable_by_their_owner_only(tmp_path):
    from core.app.workers import spawn

    db = tmp_path / "w.duckdb"
    old = os.umask(0o022)
    try:
        w = spawn("judge", db, "d", "w", _judge_toml("w", "http://127.0.0.1:9/v1"), [])
        w.wait(120)
    finally:
        os.umask(old)
    assert stat.S_IMODE(w.log_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(w.config_path.stat().st_mode) == 0o600


def test_the_dashboard_offers_only_the_servers_key_variables(monkeypatch):
    from core.redact import key_env_allow_list, key_env_allowed, key_env_names

    monkeypatch.delenv(redact.KEY_ENV_ALLOW_ENV, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert key_env_allow_list() == () and not key_env_allowed("OPENAI_API_KEY")  # no default glob
    assert redact.redact(f"x {KEY}") == f"x {redact.REDACTED}"  # yet every *_API_KEY value stays redacted
    table = {"openai": "OPENAI_API_KEY", "bad": "HOME*", "token": redact.ADMIN_TOKEN_ENV}
    assert key_env_names(table) == ("OPENAI_API_KEY",)
    assert key_env_names(["A_KEY", "B_KEY"]) == ("A_KEY", "B_KEY")
    assert key_env_allowed("A_KEY", key_env_names(["A_KEY"])) and not key_env_allowed("B_KEY", ["A_KEY"])
    monkeypatch.setenv(redact.KEY_ENV_ALLOW_ENV, "MY_TOKEN, *_API_KEY")
    assert key_env_allow_list() == ("MY_TOKEN",)
    monkeypatch.setenv("MY_TOKEN", "value-of-my-token-123")
    assert redact.redact("value-of-my-token-123") == redact.REDACTED  # an allowed variable's value is a secret


@pytest.mark.integration
def test_a_stored_answer_with_the_key_is_redacted_in_the_store_and_on_the_vote_page(tmp_path, monkeypatch):
    """A generated answer that repeats the key: stored redacted; a row written before (or imported) is redacted
    on the Vote page."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(VAR, KEY)
    db = _arena_store(tmp_path)
    with Store.open(db) as s:
        pid = int(s.prompts_for_generation("arena")["prompt_id"].iloc[0])
        s.record_generations("arena", "newcomer", "k", {}, [{"prompt_id": pid, "status": "ok", "text": f"A {KEY}"}])
        assert not _found(s.generations_frame("arena", "newcomer").to_csv(), KEY)
        with s.transaction() as cur:  # rows stored before the fix, or imported
            cur.execute("UPDATE completions SET text = ?, turns = NULL", [f"old answer {KEY}"])
    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["annotator"] = "tester"
    at.query_params["queue"] = "random"
    at.run()
    at.switch_page("app_pages/vote.py")
    at.run()
    assert not at.exception, at.exception
    text = _page_text(at)
    assert "old answer" in text and not _found(text, KEY)


@pytest.mark.integration
def test_a_tracebacks_and_warnings_of_a_command_are_redacted(tmp_path):
    """What a worker's log gets besides the CLI's own messages: an uncaught error in a thread, a warning."""
    script = (
        "import sys, threading, warnings\n"
        "from core.cli import _redacting_hooks\n"
        "_redacting_hooks()\n"
        f"key = {KEY!r}\n"
        "t = threading.Thread(target=lambda: (_ for _ in ()).throw(RuntimeError('endpoint said ' + key)))\n"
        "t.start(); t.join()\n"
        "warnings.warn('echoed ' + key)\n"
        "raise ValueError('at the end ' + key)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, VAR: KEY},
    )
    assert "RuntimeError" in run.stderr and "UserWarning" in run.stderr and "ValueError" in run.stderr
    assert not _found(run.stderr + run.stdout, KEY), run.stderr
