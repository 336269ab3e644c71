"""Pieces and encodings of a secret are redacted too (issue #43), and nothing else is.

Random secrets (ASCII letters, digits, ``-_``; 20 to 80 characters) are registered and embedded in random text
as a prefix, a suffix or a middle window of at least ``MIN_FRAGMENT`` characters, as base64 or base64url at byte
offsets 0, 1 and 2 of a longer payload (with and without padding), and with any subset of their characters
written as HTML numeric entities (decimal or hex) or percent-encoded.  ``redact`` must leave no piece of
``MIN_FRAGMENT`` characters of the secret (or of the encoding's stable core); a text without the secret (ordinary
words, pieces one character too short, unrelated base64) must come back unchanged.
"""

from __future__ import annotations

import base64
import os
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core import redact

ALPHABET = string.ascii_letters + string.digits + "-_"
SECRETS = st.text(ALPHABET, min_size=20, max_size=80).filter(lambda s: len(set(s)) >= 8)  # a key has entropy
WORDS = st.lists(
    st.sampled_from(["the", "judge", "said", "error", "invalid", "key", "provided", "for", "model", "401", ":", "."])
)
FILLER = WORDS.map(" ".join)
SETTINGS = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch):
    monkeypatch.setattr(redact, "_registered", set())
    for name in [n for n in os.environ if n.endswith("_API_KEY") or n == redact.ADMIN_TOKEN_ENV]:
        monkeypatch.delenv(name)


def _pieces(secret: str) -> set[str]:
    """Every piece of the secret of ``MIN_FRAGMENT`` characters (a longer piece holds one)."""
    m = redact.MIN_FRAGMENT
    return {secret[i : i + m] for i in range(len(secret) - m + 1)}


def _b64_pieces(secret: str) -> set[str]:
    out: set[str] = set()
    for k in (0, 1, 2):  # what the encodings agree on whatever surrounds the secret: its stable core
        a = base64.b64encode(b"\0" * k + secret.encode() + b"\0\0\0").decode()
        b = base64.b64encode(b"\xff" * k + secret.encode() + b"\xff\xff\xff").decode()
        same = "".join(x if x == y else " " for x, y in zip(a, b, strict=True))
        core = max(same.split(), key=len)
        out |= _pieces(core) | _pieces(core.replace("+", "-").replace("/", "_"))
    return out


def _leaks(text: str, secret: str) -> set[str]:
    return {p for p in _pieces(secret) | _b64_pieces(secret) if p in text}


def _entity(ch: str, style: int) -> str:
    return [f"&#{ord(ch)};", f"&#x{ord(ch):x};", f"&#X{ord(ch):02X};", f"&#00{ord(ch)};", f"%{ord(ch):02x}"][style]


@SETTINGS
@given(secret=SECRETS, before=FILLER, after=FILLER, data=st.data())
def test_a_prefix_suffix_or_middle_window_is_redacted(secret, before, after, data):
    redact.register(secret)
    n = len(secret)
    m = redact.MIN_FRAGMENT
    kind = data.draw(st.sampled_from(["prefix", "suffix", "middle", "whole"]))
    length = data.draw(st.integers(m, n))
    start = {"prefix": 0, "suffix": n - length, "whole": 0}.get(kind) or data.draw(st.integers(0, n - length))
    piece = secret if kind == "whole" else secret[start : start + length]
    glue = data.draw(st.sampled_from([" ", ": ", "'", '"', "=", "(", "\n"]))
    out = redact.redact(f"{before}{glue}{piece}{glue[::-1]}{after}")
    assert redact.REDACTED in out and not _leaks(out, secret), out


@SETTINGS
@given(secret=SECRETS, offset=st.sampled_from([0, 1, 2]), url=st.booleans(), pad=st.booleans(), data=st.data())
def test_base64_of_the_secret_at_every_offset_is_redacted(secret, offset, url, pad, data):
    redact.register(secret)
    head = data.draw(st.binary(min_size=offset, max_size=offset))
    tail = data.draw(st.binary(min_size=0, max_size=8))
    payload = head + secret.encode() + tail
    enc = (base64.urlsafe_b64encode if url else base64.b64encode)(payload).decode()
    enc = enc if pad else enc.rstrip("=")
    out = redact.redact(f"upstream said: {enc} (request logged)")
    assert redact.REDACTED in out and not _leaks(out, secret), out


@SETTINGS
@given(secret=SECRETS, data=st.data())
def test_any_subset_of_characters_written_as_entities_is_redacted(secret, data):
    redact.register(secret)
    chosen = data.draw(st.lists(st.booleans(), min_size=len(secret), max_size=len(secret)))
    styles = data.draw(st.lists(st.integers(0, 4), min_size=len(secret), max_size=len(secret)))
    written = "".join(_entity(c, s) if pick else c for c, pick, s in zip(secret, chosen, styles, strict=True))
    start = data.draw(st.integers(0, len(secret) - redact.MIN_FRAGMENT))
    cut = "".join(  # a piece of the written form, from a character boundary
        _entity(c, s) if pick else c
        for c, pick, s in list(zip(secret, chosen, styles, strict=True))[start : start + redact.MIN_FRAGMENT + 3]
    )
    for text in (written, cut):
        out = redact.redact(f"<p>key {text} rejected</p>")
        assert redact.REDACTED in out, out
        assert not _leaks(out, secret), out
        assert out.startswith("<p>key ") and out.endswith(" rejected</p>")


@SETTINGS
@given(secret=SECRETS, words=FILLER, data=st.data())
def test_a_text_without_the_secret_is_unchanged(secret, words, data):
    redact.register(secret)
    m = redact.MIN_FRAGMENT
    start = data.draw(st.integers(0, len(secret) - (m - 1)))
    short = secret[start : start + m - 1]  # one character too short to be a piece
    other = base64.b64encode(data.draw(st.binary(min_size=9, max_size=60))).decode()
    entities = "".join(f"&#{ord(c)};" for c in short)
    text = f"{words} [{short}] {other} {entities} %2D&amp;\\u0041 sk-proj-****{secret[-4:]}"
    assume(not _leaks(text, secret))
    assert redact.redact(text) == text


def test_the_matcher_is_built_once_per_secret_set():
    redact.register("sk-" + "Ab3dEf9hIjK1mNoPqRsT")
    values = redact.secrets()
    before = redact._matcher.cache_info()
    for _ in range(3):
        redact.redact("a text", values)
    after = redact._matcher.cache_info()
    assert after.misses <= before.misses + 1 and after.hits >= before.hits + 2


# ---------------------------------------------------------------- end to end: an endpoint echoing the forms


def _echo_forms(key: str) -> str:
    """What the endpoint echoes: half the key, its base64 (alone, and inside a longer base64url payload at
    offset 1), and the key with '-' as decimal entities and a few characters as hex entities."""
    ent = "".join(f"&#x{ord(c):x};" if i % 5 == 0 else c for i, c in enumerate(key.replace("-", "\0")))
    ent = ent.replace("\0", "&#45;")
    return (
        f"prefix {key[:20]}... b64 {base64.b64encode(key.encode()).decode()} "
        f"token {base64.urlsafe_b64encode(b'{' + key.encode() + b'}').decode().rstrip('=')} "
        f"html {ent} suffix ...{key[-14:]}"
    )


def _forms_leaked(data: bytes | str, key: str) -> set[str]:
    """Pieces of the key or of its base64 cores in ``data``, also after decoding HTML entities."""
    import html

    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return _leaks(text, key) | _leaks(html.unescape(text), key)


@pytest.mark.integration
def test_an_endpoint_echoing_pieces_and_encodings_of_the_key_leaves_none(tmp_path):
    """Generation answers and judge error bodies / unparseable outputs echo every form; the store (rows and
    file), run journals, CLI output, CSV and Parquet exports and the bundle's members (rows of its Parquet
    files too) hold none of them."""
    from core.app.newmodel import plan_battles
    from core.store import Store
    from tests.fake_openai_server import FakeJudge, FakeServer
    from tests.test_redaction_boundaries import VAR, _arena_store, _cli, _file_texts, _judge_toml, _store_dump

    class FormsJudge(FakeJudge):
        def reply(self, body: dict, fault: str | None, auth: str = "") -> tuple[int, bytes, dict]:
            import json

            key = auth.removeprefix("Bearer ").strip()
            if fault == "forms_400":
                return 400, json.dumps({"error": {"message": f"invalid key: {_echo_forms(key)}"}}).encode(), {}
            if fault == "forms_200":
                return 200, f"upstream said: {_echo_forms(key)}".encode(), {}
            status, payload, headers = super().reply(body, fault, auth)
            msgs = body.get("messages") or []
            if status == 200 and msgs and "You answer questions" in str(msgs[0].get("content")):
                data = json.loads(payload)
                data["choices"][0]["message"]["content"] += f" (echo: {_echo_forms(key)})"
                payload = json.dumps(data).encode()
            return status, payload, headers

    key = "sk-proj-" + "Qx7-Lm2_Vb9-Tz4Kp1-Rd8Ws5-Hn3Jc6-Yf0Ga" + "-e2e"
    db = _arena_store(tmp_path)
    env = {**os.environ, VAR: key}
    seen: dict[str, str | bytes] = {}
    with FakeServer(FormsJudge(faults={2: "forms_400"})) as gen:
        model = tmp_path / "model.toml"
        model.write_text(
            f'name = "newcomer"\nbase_url = "{gen.url}"\nmodel = "fake-model"\napi_key_env = "{VAR}"\n'
            'system_prompt = "You answer questions helpfully."\nmax_retries = 0\nconcurrency = 1\n'
        )
        run = _cli(env, "generate", "--db", str(db), "--config", str(model), "--dataset", "arena")
        seen["generate output"] = run.stdout + run.stderr
    with Store.open(db) as s:
        plan = plan_battles(s, "arena", "newcomer", n_anchors=2)
        s.add_battles("arena", plan.battles)
    with FakeServer(FormsJudge(fault_every={"forms_400": 3, "forms_200": 4})) as srv:
        cfg = tmp_path / "judge.toml"
        cfg.write_text(_judge_toml("echoj", srv.url))
        run = _cli(env, "judge", "--db", str(db), "--config", str(cfg), "--dataset", "arena")
        assert run.returncode in (0, 75), run.stderr
        seen["judge output"] = run.stdout + run.stderr
    out = tmp_path / "out"
    for args in (
        ["--table", "judgments", "--out", str(out / "judgments.csv")],
        ["--table", "judgments", "--out", str(out / "judgments.parquet")],
        ["--bundle", str(out / "bundle.zip")],
    ):
        run = _cli(env, "export", "--db", str(db), "--dataset", "arena", *args)
        assert run.returncode == 0, run.stderr
        seen[f"export {args[-1]}"] = run.stdout + run.stderr
    rows = _store_dump(db)
    seen["store rows"] = rows
    seen.update(_file_texts(tmp_path))
    leaks = {name: sorted(found) for name, data in seen.items() if (found := _forms_leaked(data, key))}
    assert leaks == {}, sorted(leaks)
    # the echoes were there (redacted), in the judgments' errors, the CSV export and the generations
    assert rows.count(redact.REDACTED) >= 4 and "invalid key" in rows and "upstream said" in rows
    assert redact.REDACTED in (out / "judgments.csv").read_text()
    assert any(name.endswith(".parquet (rows)") and redact.REDACTED.encode() in v for name, v in seen.items())
