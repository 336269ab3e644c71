"""A key or the admin token never reaches the store, the journal, a log line, an export or a page.

The key is recognisable (``sk-RECOGNISABLE-…``) and the fake endpoint echoes it back in an error body and
in an unparseable 200 body, as a careless proxy does.  Every file the run leaves behind is then searched
byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import redact
from core.judging.config import ConfigError, from_mapping, load_toml
from core.store import Store
from tests.conftest import ROOT
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_browser import CHROMIUM, _start_app, _wait_idle
from tests.test_browser import PAGES as BROWSER_PAGES
from tests.test_judging import _store

KEY = "sk-RECOGNISABLE-0123456789abcdef"
TOKEN = "admin-RECOGNISABLE-token-42"


def _all_bytes(folder) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _leaks(folder, *secrets: str) -> list[str]:
    return [name for name, data in _all_bytes(folder).items() for s in secrets if s.encode() in data]


@pytest.mark.parametrize(
    "url",
    [
        f"https://user:{KEY}@api.example.com/v1",
        f"https://{KEY}@api.example.com/v1",
        f"https://api.example.com/v1?api_key={KEY}",
        f"https://api.example.com/v1?token={KEY}&x=1",
        f"https://api.example.com/v1?Authorization={KEY}",
    ],
)
def test_a_base_url_with_credentials_is_a_configuration_error_that_never_echoes_them(url):
    with pytest.raises(ConfigError, match="base_url") as err:
        from_mapping({"name": "j", "base_url": url, "model": "m"})
    assert KEY not in str(err.value)


def test_configuration_errors_name_the_key_never_the_value():
    for key, value in [
        ("api_key_env", KEY),  # a key pasted into the variable-name field
        ("model", 12345),
        ("template", KEY),
        ("temperature", KEY),
        ("prompt_version", ""),
    ]:
        with pytest.raises(ConfigError) as err:
            from_mapping({"name": "j", "base_url": "http://h/v1", "model": "m", key: value})
        assert KEY not in str(err.value) and repr(value) not in str(err.value)


def test_unknown_keys_and_tables_in_the_toml_are_errors(tmp_path):
    p = tmp_path / "j.toml"
    p.write_text('name = "j"\nbase_url = "http://h/v1"\nmodel = "m"\n[extra]\nseed = 1\n')
    with pytest.raises(ConfigError, match=r"unknown table \[extra\]"):
        load_toml(p)
    p.write_text('name = "j"\nbase_url = "http://h/v1"\nmodel = "m"\nextra = { seed = 1 }\n')
    with pytest.raises(ConfigError, match=r"unknown table \[extra\]"):
        load_toml(p)
    p.write_text(f'name = "j"\nbase_url = "http://h/v1"\nmodel = "m"\nsecret_key = "{KEY}"\n')
    with pytest.raises(ConfigError, match="environment variable") as err:
        load_toml(p)
    assert KEY not in str(err.value)


def test_the_admin_form_reads_keys_only_from_allowed_variables(monkeypatch):
    base = {"name": "j", "base_url": "http://h/v1", "model": "m"}
    monkeypatch.delenv(redact.KEY_ENV_ALLOW_ENV, raising=False)
    for name in ("OPENAI_API_KEY", "HOME", "AWS_SECRET_ACCESS_KEY", "PATH", "ARENA_DB"):  # no default glob
        with pytest.raises(ConfigError, match="none is configured"):
            from_mapping({**base, "api_key_env": name}, form=True)
    assert from_mapping({**base, "api_key_env": "OPENAI_API_KEY"}, form=True, key_envs=["OPENAI_API_KEY"])
    from_mapping({**base, "api_key_env": "HOME"})  # a CLI user's own TOML may name any variable…
    for form in (True, False):  # …but never the admin token's, anywhere
        with pytest.raises(ConfigError, match="admin token"):
            from_mapping({**base, "api_key_env": redact.ADMIN_TOKEN_ENV}, form=form)
    monkeypatch.setenv(redact.KEY_ENV_ALLOW_ENV, "JUDGE_TOKEN, OPENAI_API_KEY")
    assert from_mapping({**base, "api_key_env": "JUDGE_TOKEN"}, form=True).api_key_env == "JUDGE_TOKEN"
    with pytest.raises(ConfigError, match="JUDGE_TOKEN, OPENAI_API_KEY"):
        from_mapping({**base, "api_key_env": "OTHER_API_KEY"}, form=True)
    monkeypatch.setenv(redact.KEY_ENV_ALLOW_ENV, f"ARENA_*,{redact.ADMIN_TOKEN_ENV}")  # globs and the token: ignored
    for name in ("ARENA_DB", redact.ADMIN_TOKEN_ENV):
        with pytest.raises(ConfigError):
            from_mapping({**base, "api_key_env": name}, form=True)


def test_redaction_removes_configured_and_registered_values(monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", KEY)
    monkeypatch.setenv(redact.ADMIN_TOKEN_ENV, TOKEN)
    text = f"error for {KEY} (url-encoded {KEY.replace('-', '%2D')}) token={TOKEN}"
    out = redact.redact(text)
    assert KEY not in out and TOKEN not in out and out.count(redact.REDACTED) >= 2
    redact.register("custom-secret-value-9")
    assert "custom-secret-value-9" not in redact.redact("a custom-secret-value-9 b")
    assert redact.redact("short abc") == "short abc"  # values under MIN_SECRET_CHARS are never registered


def _echoed_run(tmp_path, variable: str) -> tuple:
    """(store, finished run, environment): judge 'echo' on dataset 'ah' against an endpoint that echoes the
    key held in ``variable`` in a 400 body and in an unparseable 200 body."""
    db = _store(tmp_path, n_prompts=6)
    env = {**os.environ, variable: KEY, redact.ADMIN_TOKEN_ENV: TOKEN}
    with FakeServer(FakeJudge(fault_every={"echo_key_400": 7, "echo_key_200": 5})) as srv:
        cfg = tmp_path / "j.toml"
        cfg.write_text(
            f'name = "echo"\nbase_url = "{srv.url}"\nmodel = "fake-judge"\napi_key_env = "{variable}"\n'
            "max_retries = 0\nconcurrency = 4\n"
        )
        run = subprocess.run(
            [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    return db, run, env


@pytest.mark.integration
@pytest.mark.parametrize("variable", ["JUDGE_API_KEY", "MY_PRIVATE_TOKEN"])
def test_an_echoed_key_is_in_no_file_log_or_export(tmp_path, variable):
    """The endpoint echoes the key in a 400 body and an unparseable 200 body; nothing the run leaves keeps it."""
    db, run, env = _echoed_run(tmp_path, variable)
    with Store.open(db, read_only=True) as s:
        fails = s.parse_failures("ah")
    assert fails["parse_error"].str.contains(redact.REDACTED, regex=False).any()  # the echo was there, redacted
    assert (fails["raw_output"].fillna("").str.contains(redact.REDACTED, regex=False)).any()
    out = tmp_path / "export" / "judgments.csv"
    exp = subprocess.run(
        [sys.executable, "-m", "core", "export", "--db", str(db), "--dataset", "ah", "--table", "judgments"]
        + ["--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert exp.returncode == 0, exp.stderr
    logs = run.stdout + run.stderr + exp.stdout + exp.stderr
    assert KEY not in logs and TOKEN not in logs
    assert _leaks(tmp_path, KEY, TOKEN) == []  # the store file, its WAL, run journals, exports


@pytest.mark.integration
def test_a_cli_error_that_quotes_a_secret_is_redacted(tmp_path):
    env = {**os.environ, "JUDGE_API_KEY": KEY}
    cfg = tmp_path / "j.toml"
    cfg.write_text('name = "j"\nbase_url = "http://h/v1"\nmodel = "m"\napi_key_env = "JUDGE_API_KEY"\n')
    run = subprocess.run(
        [sys.executable, "-m", "core", "judge", "--db", str(tmp_path / "missing" / "x.duckdb"), "--config", str(cfg)]
        + ["--dataset", f"{KEY}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and KEY not in run.stdout + run.stderr and redact.REDACTED in run.stderr


@pytest.mark.integration
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)")
def test_no_page_html_or_websocket_frame_carries_the_key_or_the_token(tmp_path):
    """Every page, the Admin page's run list and failures table, and an Admin connection test against an
    endpoint that echoes the key: the key is in no HTML and no frame the server sends, the token in none
    the server sends (the browser sends the token once, when the admin types it)."""
    from playwright.sync_api import sync_playwright

    db, _, _ = _echoed_run(tmp_path, "JUDGE_API_KEY")
    received: list[bytes] = []
    html: dict[str, str] = {}
    proc, url = _start_app(
        db, {"JUDGE_API_KEY": KEY, redact.ADMIN_TOKEN_ENV: TOKEN, redact.KEY_ENV_ALLOW_ENV: "JUDGE_API_KEY"}
    )
    try:
        with FakeServer(FakeJudge(fault_every={"echo_key_400": 1})) as echo, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1400})

            def on_ws(ws) -> None:
                ws.on("framereceived", lambda f: received.append(f if isinstance(f, bytes) else f.encode()))

            page.on("websocket", on_ws)
            for name in [*BROWSER_PAGES, "admin"]:
                page.goto(f"{url}/{'' if name == 'overview' else name}?dataset=ah&judge=echo")
                _wait_idle(page)
                html[name] = page.content()
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_label("Admin token").press("Enter")
            page.wait_for_selector("text=Failures", timeout=60_000)
            _wait_idle(page)
            html["admin (signed in)"] = page.content()
            assert "call failed" in html["admin (signed in)"] or "unparseable" in html["admin (signed in)"]
            page.get_by_label("base URL", exact=True).fill(echo.url)
            page.get_by_label("model", exact=True).fill("fake-judge")
            page.get_by_label("environment variable holding the API key", exact=True).click()  # the server's allow-list
            page.get_by_role("option", name="JUDGE_API_KEY").click()
            page.get_by_role("button", name="Go").click()
            page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60_000)
            _wait_idle(page)
            html["admin (connection test)"] = page.content()
            assert redact.REDACTED in html["admin (connection test)"]  # the echoed key was there, redacted
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert len(received) > 20 and sum(map(len, received)) > 100_000  # the frames were captured
    assert [n for n in html if KEY in html[n]] == []
    # the token is only in the admin's own password box (its value attribute), never in the page's text
    token_places = [n for n in html if TOKEN in html[n].replace(f'value="{TOKEN}"', "")]
    assert token_places == []
    assert not any(KEY.encode() in f or TOKEN.encode() in f for f in received)
