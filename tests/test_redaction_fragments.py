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
    for core in redact._base64_cores(secret):
        out |= _pieces(core)
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
