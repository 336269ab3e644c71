"""The one redaction step: secret values never reach a stored, logged, exported or shown text.

Secrets are the admin token (``ARENA_ADMIN_TOKEN`` or Streamlit's ``admin_token``),
the value of every environment variable named like a key (``*_API_KEY``) or on
the dashboard's key allow-list (``ARENA_KEY_ENV_ALLOW``), and any value
registered at run time (the key variable a configuration names, whatever its
name).  ``redact`` replaces with ``[redacted]``:

- each value, and its URL-encoded, JSON-, repr- and HTML-escaped forms;
- any piece of ``MIN_FRAGMENT`` (12) or more consecutive characters of a value: a
  prefix, a suffix or a window in the middle ("half the key", a key an error
  message cut short), removed whole however long it is;
- the base64 and base64url encodings of a value, at byte offset 0, 1 or 2 of a
  longer encoded stream, with or without padding: the part of each encoding that
  depends on the value's bytes only (its stable core), any piece of 12 or more
  characters of that core, and the up to 4 base64 characters and the padding
  around it (the edge groups mix in neighbouring bytes);
- all of the above with any subset of the characters written another way: HTML
  numeric entities, decimal or hex, any case, leading zeros, ';' optional
  (``&#45;``, ``&#x2d;``), HTML named escapes, percent-encoded ASCII (``%2D``,
  ``%2d``), JSON/Python escapes (``\\u002d``, ``\\x2d``, ``\\/``);
- a value shorter than 12 characters (6 at least): only whole, in every form.

The rule for pieces, and why 12: a key or token is random over 60-odd
characters, so 12 of its characters carry about 70 bits and never occur in
ordinary text by chance, while they narrow a search for the key enough to
matter; half of any real key (20 and more characters, "sk-" + 48) is 12 or more.
Pieces shorter than 12 are kept: providers show ``sk-proj-****abcd``-style
hints (a public prefix, 4 characters), and redacting every 6- or 8-character
window would redact ordinary words ("token-42", "sk-proj-").  A value made of
words (an admin token such as ``correct-horse-battery``) has its 12-character
windows redacted wherever they appear: it is a secret.  The same rule applies to
the base64 core (12 of its characters carry 9 of the value's bytes).

How it stays fast: the set of secrets is turned once into a matcher (cached by
the set): its written-out forms for literal replacement, and a dictionary of
every 6-character window of each value and base64 core.  A secret holds no white
space, so a piece of it lies within one word of the text: only words of 12 or
more characters are looked at, at every 6th character (a piece of 12 holds one
block at such a position), and a block found in the dictionary is grown along
its secret in both directions.  Escaped characters are decoded within such a
word only, with a map back to the original positions.  An endpoint that echoes the key in an
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

import base64
import bisect
import fnmatch
import functools
import html
import json
import os
import re
import string
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

ADMIN_TOKEN_ENV = "ARENA_ADMIN_TOKEN"
KEY_ENV_ALLOW_ENV = "ARENA_KEY_ENV_ALLOW"  # comma-separated variable names the dashboard may read a key from
KEY_ENV_REDACT = ("*_API_KEY",)  # values of variables named like this are always redacted (not: allowed)
MIN_FRAGMENT = 12  # any piece this long of a secret (or of its base64) is removed; see the module docstring
_BLOCK = MIN_FRAGMENT // 2  # every such piece holds one aligned block this long: what the one search looks for
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


@functools.lru_cache(maxsize=256)
def _base64_cores(value: str) -> frozenset[str]:
    """The part of the base64 and base64url encodings of ``value`` that depends on its bytes only, with the
    value at byte offset 0, 1 and 2 of the encoded stream (what is around it changes the characters at the
    edges, never the ones inside; padding is outside the core)."""
    data = value.encode("utf-8")
    out: set[str] = set()
    for k in (0, 1, 2):
        enc = base64.b64encode(b"\0" * k + data).decode("ascii")
        start, end = -(-8 * k // 6), 8 * (k + len(data)) // 6  # the characters made of the value's bits only
        core = enc[start:end]
        out |= {core, core.translate(_URLSAFE)}
    return frozenset(c for c in out if len(c) >= MIN_SECRET_CHARS)


_URLSAFE = str.maketrans("+/", "-_")
_BASE64_CHARS = frozenset(string.ascii_letters + string.digits + "+/-_")
# A character written some other way: an HTML numeric entity (decimal or hex, any case, leading zeros, the
# ';' optional as browsers accept it), an HTML named escape, a percent-encoded ASCII byte, a JSON/Python escape.
_ESCAPE = re.compile(
    r"&#[xX]([0-9a-fA-F]{1,6});?|&#([0-9]{1,7});?|&(amp|lt|gt|quot|apos);"
    r"|%([0-7][0-9a-fA-F])|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\([/\\\"'])"
)
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


class _Decoded:
    """``text`` with every escaped character (:data:`_ESCAPE`) written as itself, and where each of its
    characters came from in ``text``."""

    def __init__(self, text: str, tokens: list[tuple[int, int, str]]) -> None:
        pieces: list[str] = []
        self.at: list[int] = []  # where each escape's character is in the decoded text
        self.spans = [(a, b) for a, b, _ in tokens]
        pos = length = 0
        for a, b, ch in tokens:
            pieces += [text[pos:a], ch]
            length += a - pos
            self.at.append(length)
            length += 1
            pos = b
        pieces.append(text[pos:])
        self.text = "".join(pieces)

    def original(self, i: int, j: int) -> tuple[int, int]:
        """The span of ``text`` that decoded characters ``i`` to ``j`` (exclusive) came from."""
        return self._start(i), self._start(j - 1, end=True)

    def _start(self, i: int, end: bool = False) -> int:
        k = bisect.bisect_right(self.at, i) - 1
        if k >= 0 and self.at[k] == i:
            return self.spans[k][1] if end else self.spans[k][0]
        pos = self.spans[k][1] + (i - self.at[k] - 1) if k >= 0 else i
        return pos + 1 if end else pos


def _decoded(text: str) -> _Decoded | None:
    """:class:`_Decoded` of ``text``; ``None`` when nothing in it is escaped."""
    if "&" not in text and "%" not in text and "\\" not in text:
        return None
    tokens: list[tuple[int, int, str]] = []
    for m in _ESCAPE.finditer(text):
        hexa, dec, named, pct, uni, byte, char = m.groups()
        if named is not None:
            ch = _NAMED[named]
        elif char is not None:
            ch = char
        else:
            code = int(dec) if dec is not None else int(hexa or pct or uni or byte, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                continue
            ch = chr(code)
        tokens.append((m.start(), m.end(), ch))
    return _Decoded(text, tokens) if tokens else None


class _Matcher:
    """Everything :func:`redact` needs for one set of secrets, built once (cached by the set)."""

    def __init__(self, values: tuple[str, ...]) -> None:
        raw = [v for v in dict.fromkeys(values) if v and len(v) >= MIN_SECRET_CHARS]
        forms: set[str] = set()
        for v in raw:
            forms |= _forms(v)
        self.forms = sorted(forms, key=len, reverse=True)
        self.percent = [_percent_pattern(v) for v in raw if "%" not in v and not v.isascii()]
        # The texts any long enough piece of which is removed: the values and their written-out forms, and
        # the stable core of their base64 encodings (flagged: a match there is widened over the edges).
        texts: dict[str, bool] = dict.fromkeys(raw, False)
        for v in raw:
            texts.update({c: True for c in _base64_cores(v) if c not in texts})
        # Cut the text in the places where a piece of MIN_FRAGMENT characters starts at a multiple of BLOCK:
        # one of these blocks lies inside the piece, and is one of the windows of BLOCK characters of its secret
        # text.  A dictionary of every window finds the candidates; each is then grown along its text.
        self.windows: dict[str, list[tuple[str, int, bool]]] = {}
        self.short: list[str] = []  # texts too short to have pieces: only ever removed whole
        for t, b64 in texts.items():
            if len(t) < MIN_FRAGMENT:
                self.short.append(t)
                continue
            for o in range(len(t) - _BLOCK + 1):
                self.windows.setdefault(t[o : o + _BLOCK], []).append((t, o, b64))
        # Secrets hold no white space (keys, tokens): a piece of one lies inside one word of the text, and only
        # words long enough are looked at.  A secret with white space: the whole text is one word (slower).
        self.split = not any(ch.isspace() for t in texts for ch in t)
        self.min_len = min((len(t) for t in self.short), default=MIN_FRAGMENT)

    def redact_word(self, word: str) -> str:
        """``word`` with every piece of a secret (as is, or with characters escaped) replaced."""
        spans = self.spans(word)
        decoded = _decoded(word)
        if decoded is not None:  # spans of both, merged: a piece partly escaped is removed whole
            spans += [decoded.original(a, b) for a, b in self.spans(decoded.text)]
        return _replace(word, spans)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where in ``text`` a piece of MIN_FRAGMENT characters (or a whole short text) of a secret is."""
        out: list[tuple[int, int]] = []
        n = len(text)
        for j in range(0, n - _BLOCK + 1, _BLOCK):
            block = text[j : j + _BLOCK]
            entries = self.windows.get(block)
            if entries:
                out += self._grown(text, n, j, block, entries)
        for t in self.short:
            p = text.find(t)
            while p != -1:
                out += self._grown(text, n, p, t, [(t, 0, False)])
                p = text.find(t, p + 1)
        return out

    @staticmethod
    def _grown(text: str, n: int, p: int, block: str, entries: list[tuple[str, int, bool]]) -> list[tuple[int, int]]:
        """The spans around ``block`` found at ``p`` that are long enough pieces of their secret texts."""
        out: list[tuple[int, int]] = []
        for t, o, b64 in entries:
            left = 0
            while left < o and left < p and text[p - left - 1] == t[o - left - 1]:
                left += 1
            right = 0
            end = p + len(block)
            while (
                o + len(block) + right < len(t) and end + right < n and text[end + right] == t[o + len(block) + right]
            ):
                right += 1
            if left + len(block) + right < min(len(t), MIN_FRAGMENT):
                continue
            a, b = p - left, end + right
            if b64:  # the edges of the encoding (up to a group on each side, the padding)
                for _ in range(4):
                    if a > 0 and text[a - 1] in _BASE64_CHARS:
                        a -= 1
                for _ in range(4):
                    if b < n and text[b] in _BASE64_CHARS:
                        b += 1
                while b < n and text[b] == "=":
                    b += 1
            out.append((a, b))
        return out


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with every span (overlapping ones merged) replaced by :data:`REDACTED`."""
    if not spans:
        return text
    spans.sort()
    parts: list[str] = []
    pos = 0
    cur_a, cur_b = spans[0]
    for a, b in spans[1:]:
        if a <= cur_b:
            cur_b = max(cur_b, b)
            continue
        parts += [text[pos:cur_a], REDACTED]
        pos, (cur_a, cur_b) = cur_b, (a, b)
    parts += [text[pos:cur_a], REDACTED, text[cur_b:]]
    return "".join(parts)


@functools.lru_cache(maxsize=64)
def _matcher(values: tuple[str, ...]) -> _Matcher:
    return _Matcher(values)


def _env_secret_name(name: str, allowed: set[str]) -> bool:
    return name == ADMIN_TOKEN_ENV or name in allowed or any(fnmatch.fnmatchcase(name, p) for p in KEY_ENV_REDACT)


def secrets() -> list[str]:
    """Every value to remove, longest first.  The written-out forms of each (escaped, encoded, its pieces) are
    derived by :func:`redact` from this list, once per distinct list."""
    values = set(_registered)
    allowed = set(key_env_names(os.environ.get(KEY_ENV_ALLOW_ENV)))
    for name, value in os.environ.items():
        if _env_secret_name(name, allowed):
            values.add(value)
    return sorted((v for v in values if v and len(v) >= MIN_SECRET_CHARS), key=lambda v: (-len(v), v))


def redact(text: Any, values: list[str] | None = None) -> Any:
    """``text`` with every secret value replaced; anything that is not a string is returned as is.

    ``values``: :func:`secrets` computed once by a caller that redacts many texts (a batch of judgments).
    """
    if not isinstance(text, str) or not text:
        return text
    values = secrets() if values is None else values
    if not values:
        return text
    matcher = _matcher(tuple(values))
    for value in matcher.forms:
        if value in text:
            text = text.replace(value, REDACTED)
    if "%" in text and matcher.percent:  # a non-ASCII value percent-encoded (ASCII ones: decoded below)
        for pattern in matcher.percent:
            text = pattern.sub(REDACTED, text)
    if matcher.split:
        split = text.split()  # the one pass over every character (in C); words are rarely 12 characters long
        if max(map(len, split), default=0) < matcher.min_len:
            return text
        words = {w for w in split if len(w) >= matcher.min_len}
    else:
        words = {text}
    for word in sorted(words, key=len, reverse=True):  # a longer word holding a shorter one: itself first
        clean = matcher.redact_word(word)
        if clean != word:
            text = text.replace(word, clean)
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
