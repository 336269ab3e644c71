"""The one redaction step: secret values never reach a stored, logged, exported or shown text.

Secrets are the admin token (``ARENA_ADMIN_TOKEN`` or Streamlit's ``admin_token``),
the value of every environment variable named like a key (``*_API_KEY``) or on
the dashboard's key allow-list (``ARENA_KEY_ENV_ALLOW``), and any value
registered at run time (the key variable a configuration names, whatever its
name).  ``redact`` replaces each value, and its URL-encoded, JSON-, repr- and
HTML-escaped forms, with ``[redacted]``; an endpoint that echoes the key in an
error body, a traceback that prints a URL, a parse error that quotes the
output, a generated answer that repeats it: all pass through it at the
boundary where they leave the process (the store's writes, the CLI's messages,
logs, exports, bundles, reports, pages).

Redact first, cut after: :func:`clip` is the only way a text that may hold a
secret is shortened, so a cut never leaves a key's prefix behind.

Which variables the dashboard may read a key from is a separate, explicit list
(:func:`key_env_allow_list`): the names in ``ARENA_KEY_ENV_ALLOW`` plus those the
page passes in from the server's Streamlit secrets (``[judge_keys]``).  There is
no default: with neither configured, the dashboard reads no key at all.
"""

from __future__ import annotations

import fnmatch
import functools
import html
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

ADMIN_TOKEN_ENV = "ARENA_ADMIN_TOKEN"
KEY_ENV_ALLOW_ENV = "ARENA_KEY_ENV_ALLOW"  # comma-separated variable names the dashboard may read a key from
KEY_ENV_REDACT = ("*_API_KEY",)  # values of variables named like this are always redacted (not: allowed)
MIN_SECRET_CHARS = 6  # shorter values would redact ordinary words; no real key or token is this short
REDACTED = "[redacted]"

_registered: set[str] = set()
_lock = threading.Lock()


def key_env_names(value: Any) -> tuple[str, ...]:
    """Variable names from a configuration value: a comma-separated text, a list of names, or a table of
    label → name (Streamlit's ``[judge_keys]``).  Anything that is not a plain variable name (a glob, an
    empty entry) and the admin token's variable are left out."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, Mapping) or hasattr(value, "values") and hasattr(value, "items"):
        items = list(value.values())
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        return ()
    out: list[str] = []
    for item in items:
        name = item.strip() if isinstance(item, str) else ""
        if name and name.isidentifier() and name.isascii() and name != ADMIN_TOKEN_ENV and name not in out:
            out.append(name)
    return tuple(out)


def key_env_allow_list(configured: Iterable[str] = ()) -> tuple[str, ...]:
    """The variables the dashboard may read a key from: ``ARENA_KEY_ENV_ALLOW`` plus ``configured`` (the names
    the page read from the server's Streamlit secrets).  Empty when neither is configured: no default glob."""
    names = [*key_env_names(os.environ.get(KEY_ENV_ALLOW_ENV)), *key_env_names(list(configured))]
    return tuple(dict.fromkeys(names))


def key_env_patterns() -> tuple[str, ...]:
    """The dashboard's allowed key variables (explicit names; kept under its historical name)."""
    return key_env_allow_list()


def key_env_allowed(name: str, configured: Iterable[str] = ()) -> bool:
    """Whether the dashboard may read a key from variable ``name`` (never the admin token's)."""
    return name != ADMIN_TOKEN_ENV and name in key_env_allow_list(configured)


def register(value: str | None) -> None:
    """Treat ``value`` as a secret from now on in this process (e.g. a key read from any variable)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _registered.add(value)


@functools.lru_cache(maxsize=256)
def _forms(value: str) -> frozenset[str]:
    """The ways a value is written out by the places it passes: as is, URL-encoded, inside a JSON or Python
    string literal, HTML-escaped."""
    forms = {
        value,
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value, safe=""),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        repr(value + "'")[1:-2],  # the form Python uses when the text around it holds a quote
        html.escape(value, quote=True),
        html.escape(value, quote=False),
    }
    return frozenset(f for f in forms if len(f) >= MIN_SECRET_CHARS)


def secrets() -> list[str]:
    """Every value to remove (and its written-out forms), longest first (so a key containing another is removed
    whole)."""
    values = set(_registered)
    allowed = set(key_env_names(os.environ.get(KEY_ENV_ALLOW_ENV)))
    for name, value in os.environ.items():
        if name == ADMIN_TOKEN_ENV or name in allowed or any(fnmatch.fnmatchcase(name, p) for p in KEY_ENV_REDACT):
            values.add(value)
    out: set[str] = set()
    for v in values:
        if v and len(v) >= MIN_SECRET_CHARS:
            out |= _forms(v)
    return sorted(out, key=len, reverse=True)


def redact(text: Any, values: list[str] | None = None) -> Any:
    """``text`` with every secret value replaced; anything that is not a string is returned as is.

    ``values``: :func:`secrets` computed once by a caller that redacts many texts (a batch of judgments).
    """
    if not isinstance(text, str) or not text:
        return text
    values = secrets() if values is None else values
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    if "%" in text:  # percent-encoded any which way (even unreserved characters, "%2D" for "-"), in either case
        for value in values:
            if "%" not in value:
                text = _percent_pattern(value).sub(REDACTED, text)
    return text


@functools.lru_cache(maxsize=256)
def _percent_pattern(value: str) -> re.Pattern[str]:
    """``value`` with each character either as itself or as its UTF-8 bytes percent-encoded."""
    parts = []
    for ch in value:
        upper = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
        lower = "".join(f"%{b:02x}" for b in ch.encode("utf-8"))
        options = dict.fromkeys([re.escape(ch), re.escape(upper), re.escape(lower)])
        parts.append(f"(?:{'|'.join(options)})")
    return re.compile("".join(parts))


def clip(text: Any, limit: int, values: list[str] | None = None) -> str:
    """``str(text)`` redacted, then cut to ``limit`` characters: the only way to shorten a text that may hold a
    secret (cutting first could leave most of a key, which redaction no longer recognises)."""
    return str(redact(str(text), values))[:limit]


def redact_value(value: Any, values: list[str] | None = None) -> Any:
    """:func:`redact` through lists, tuples, dicts and arrays of texts (a cell holding a conversation)."""
    values = secrets() if values is None else values
    if isinstance(value, str):
        return redact(value, values)
    if isinstance(value, Mapping):
        return {redact(k, values): redact_value(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v, values) for v in value)
    if type(value).__name__ == "ndarray" and getattr(value, "dtype", None) is not None and value.dtype == object:
        import numpy as np

        return np.array([redact_value(v, values) for v in value.tolist()], dtype=object)
    return value


def redact_frame(df: Any) -> Any:
    """A copy of a DataFrame with every text redacted: cells of every text dtype pandas has (``object``, pandas
    3's ``str``/``StringDtype``, Arrow strings, categories), texts nested in list or dict cells, column names."""
    import pandas as pd

    values = secrets()
    if not values:
        return df
    out = df.copy()
    out.columns = [redact(c, values) if isinstance(c, str) else c for c in out.columns]
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        categorical = isinstance(col.dtype, pd.CategoricalDtype)
        if not (categorical or pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype)):
            continue
        cells = col.tolist()
        clean = [redact_value(t, values) for t in cells]
        if not any(c is not t for c, t in zip(clean, cells, strict=True)):
            continue  # no text in this column held a secret
        dtype = object if categorical else col.dtype
        out.isetitem(i, pd.Series(clean, index=out.index, dtype=dtype, name=out.columns[i]))
    return out
