"""The one redaction step: secret values never reach a stored, logged, exported or shown text.

Secrets are the admin token (``ARENA_ADMIN_TOKEN`` or Streamlit's ``admin_token``),
every environment variable a judge may read its key from (names matching the
allow-list, default ``*_API_KEY``), and any value registered at run time (the
key variable a configuration names, whatever its name).  ``redact`` replaces
each value, and its URL-encoded form, with ``[redacted]``; an endpoint that
echoes the key in an error body, a traceback that prints a URL, a parse error
that quotes the output: all pass through it at the boundary where they leave
the process (the store's writes, the CLI's messages, exports, pages).
"""

from __future__ import annotations

import fnmatch
import os
import threading
import urllib.parse
from typing import Any

ADMIN_TOKEN_ENV = "ARENA_ADMIN_TOKEN"
KEY_ENV_ALLOW_ENV = "ARENA_KEY_ENV_ALLOW"  # comma-separated glob patterns for api_key_env on the Admin form
DEFAULT_KEY_ENV_ALLOW = ("*_API_KEY",)
MIN_SECRET_CHARS = 6  # shorter values would redact ordinary words; no real key or token is this short
REDACTED = "[redacted]"

_registered: set[str] = set()
_lock = threading.Lock()


def key_env_patterns() -> tuple[str, ...]:
    """Glob patterns an ``api_key_env`` chosen on the Admin form must match."""
    raw = os.environ.get(KEY_ENV_ALLOW_ENV, "")
    patterns = tuple(p.strip() for p in raw.split(",") if p.strip())
    return patterns or DEFAULT_KEY_ENV_ALLOW


def key_env_allowed(name: str) -> bool:
    """Whether the Admin form may read a key from variable ``name`` (never the admin token's)."""
    if name == ADMIN_TOKEN_ENV:
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in key_env_patterns())


def register(value: str | None) -> None:
    """Treat ``value`` as a secret from now on in this process (e.g. a key read from any variable)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _registered.add(value)


def secrets() -> list[str]:
    """Every value to remove, longest first (so a key containing another is removed whole)."""
    values = set(_registered)
    for name, value in os.environ.items():
        if name == ADMIN_TOKEN_ENV or any(fnmatch.fnmatchcase(name, p) for p in key_env_patterns()):
            values.add(value)
    out: set[str] = set()
    for v in values:
        if v and len(v) >= MIN_SECRET_CHARS:
            out.add(v)
            quoted = urllib.parse.quote(v, safe="")
            if quoted != v:
                out.add(quoted)
    return sorted(out, key=len, reverse=True)


def redact(text: Any, values: list[str] | None = None) -> Any:
    """``text`` with every secret value replaced; anything that is not a string is returned as is.

    ``values``: :func:`secrets` computed once by a caller that redacts many texts (a batch of judgments).
    """
    if not isinstance(text, str) or not text:
        return text
    for value in secrets() if values is None else values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_frame(df: Any) -> Any:
    """A copy of a DataFrame with every text cell redacted (exports pass through this)."""
    values = secrets()
    if not values:
        return df
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype).startswith("string"):
            texts = out[col].tolist()
            if any(isinstance(t, str) and any(v in t for v in values) for t in texts):
                out[col] = [redact(t, values) for t in texts]
    return out
