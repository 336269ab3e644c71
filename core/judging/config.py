"""Judge configuration: validated at the boundary, never holding a key.

Errors name the file and the key, never the value: a key pasted into the wrong
field must not be echoed back.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import urllib.parse
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from core import redact

TEMPLATES = ("rubric", "ab-logprob", "two-stage", "echo")
MODES = ("online", "batch")


class ConfigError(ValueError):
    """Invalid judge configuration (names the file and key)."""


@dataclass(frozen=True)
class JudgeConfig:
    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    template: str = "rubric"
    prompt_version: str | None = None  # default: the template's own version
    both_orders: bool = True
    temperature: float = 0.0
    max_tokens: int = 512
    top_logprobs: int = 5
    concurrency: int = 16
    timeout_s: float = 60.0
    max_retries: int = 5
    max_calls: int | None = None
    max_tokens_total: int | None = None
    # USD per million tokens, for the run list's cost column; absent = cost unknown
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None
    # A hard budget in USD (needs both prices): no call starts whose reserved cost would pass it
    max_cost_usd: float | None = None
    # Outages: after this many consecutive connection errors, timeouts or 5xx the run pauses and probes
    # the endpoint with back-off; it gives up (status 'paused', resumable) after ``max_outage_s``.
    breaker_threshold: int = 5
    max_outage_s: float = 300.0
    # Further replicas of the same model (``base_url`` is the first): calls go to the least loaded one
    replica_urls: tuple[str, ...] = ()
    # 'batch': the OpenAI Batch API (/v1/files, /v1/batches) instead of one call per unit; a run submits,
    # polls every ``batch_poll_s`` for up to ``batch_wait_s`` and collects, or pauses (resumable) while
    # the provider still works; at most ``batch_max_requests`` requests per batch (OpenAI's limit: 50,000)
    mode: str = "online"
    batch_poll_s: float = 30.0
    batch_wait_s: float = 600.0
    batch_max_requests: int = 50_000

    # The organisation behind the judge's model, for self-preference (Judge bias); default: read from the
    # model's name by the importers' table of known prefixes (``core.ingest.common.known_family``).
    family: str | None = None

    @property
    def version(self) -> str:
        from core.judging.prompts import TEMPLATE_VERSIONS

        return self.prompt_version or f"{self.template}-{TEMPLATE_VERSIONS[self.template]}"

    @property
    def uses_logprobs(self) -> bool:
        return self.template == "ab-logprob"

    @property
    def urls(self) -> list[str]:
        """Every replica's base URL, ``base_url`` first."""
        return [self.base_url, *self.replica_urls]

    def api_key(self) -> str:
        """The key from the environment (never stored); a placeholder when none is configured."""
        if not self.api_key_env:
            return "sk-no-key"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(f"judge {self.name!r}: environment variable {self.api_key_env} is not set")
        redact.register(value)  # whatever the variable's name, its value never leaves the process
        check_key_value(value, f"judge {self.name!r}", self.api_key_env, key_places(self.to_store()))
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for these tokens at the configured prices; None when a price is not configured."""
        if self.price_prompt_per_mtok is None or self.price_completion_per_mtok is None:
            return None
        return (prompt_tokens * self.price_prompt_per_mtok + completion_tokens * self.price_completion_per_mtok) / 1e6

    def to_store(self) -> dict:
        return asdict(self)


_TYPES = {f.name: f.type for f in fields(JudgeConfig)}


MAX_REPLICAS = 64  # further replica URLs a configuration may list

FAMILY_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")
_KEY_LIKE = re.compile(r"key|token|secret|passw|auth|sig|credential|session", re.IGNORECASE)

# (check, what a valid value is): the message says what is expected, never what was given.
# These hold for every endpoint configuration (judges and answer-generating models).
ENDPOINT_CHECKS: dict[str, tuple[Any, str]] = {
    "temperature": (lambda v: _number(v) and 0 <= v <= 2, "a number in [0, 2]"),
    "max_tokens": (lambda v: _whole(v) and 0 < v <= 1_000_000, "a positive whole number"),
    "concurrency": (lambda v: _whole(v) and 1 <= v <= 512, "a whole number in [1, 512]"),
    "timeout_s": (lambda v: _number(v) and 0 < v <= 3600, "seconds in (0, 3600]"),
    "max_retries": (lambda v: _whole(v) and 0 <= v <= 100, "a whole number in [0, 100]"),
    "api_key_env": (
        lambda v: v is None or (isinstance(v, str) and v.isidentifier() and len(v) <= 100),
        "the name of an environment variable (letters, digits, underscores)",
    ),
    "price_prompt_per_mtok": (lambda v: v is None or (_number(v) and v >= 0), "a non-negative number"),
    "price_completion_per_mtok": (lambda v: v is None or (_number(v) and v >= 0), "a non-negative number"),
}
_CHECKS: dict[str, tuple[Any, str]] = {
    **ENDPOINT_CHECKS,
    "template": (lambda v: v in TEMPLATES, f"one of {', '.join(TEMPLATES)}"),
    "both_orders": (lambda v: isinstance(v, bool), "true or false"),
    "top_logprobs": (lambda v: _whole(v) and 1 <= v <= 20, "a whole number in [1, 20]"),
    "max_calls": (lambda v: v is None or (_whole(v) and v > 0), "a positive whole number"),
    "max_tokens_total": (lambda v: v is None or (_whole(v) and v > 0), "a positive whole number"),
    "max_cost_usd": (lambda v: v is None or (_number(v) and v > 0), "a positive number (USD)"),
    "prompt_version": (
        lambda v: v is None or (isinstance(v, str) and v.strip() != "" and len(v) <= 100),
        "a non-empty text of at most 100 characters",
    ),
    "breaker_threshold": (lambda v: _whole(v) and 1 <= v <= 1000, "a whole number in [1, 1000]"),
    "mode": (lambda v: v in MODES, f"one of {', '.join(MODES)}"),
    "family": (
        lambda v: v is None or (isinstance(v, str) and FAMILY_NAME.fullmatch(v) is not None),
        "a lowercase name of at most 40 letters, digits, '-', '_' or '.' (e.g. openai)",
    ),
    "batch_poll_s": (lambda v: _number(v) and 0.01 <= v <= 3600, "seconds in [0.01, 3600]"),
    "batch_wait_s": (lambda v: _number(v) and 0 <= v <= 2 * 86400, "seconds in [0, 172800]"),
    "batch_max_requests": (lambda v: _whole(v) and 1 <= v <= 50_000, "a whole number in [1, 50000]"),
    "max_outage_s": (lambda v: _number(v) and 0 <= v <= 7 * 86400, "seconds in [0, 604800]"),
}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_base_url(url: str, source: str, key: str = "base_url") -> None:
    """An http(s) URL without credentials: no ``user:password@``, no key-like query parameter.

    ``key`` names the field in the messages (``replica_urls[2]``); the value itself is never echoed."""
    try:
        parts = urllib.parse.urlsplit(url)
        has_userinfo = parts.username is not None or parts.password is not None
    except ValueError:
        raise ConfigError(f"{source}: key {key!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{source}: key {key!r} must be an http:// or https:// URL with a host")
    hint = "put the key in an environment variable and name it with api_key_env"
    if has_userinfo or "@" in parts.netloc:
        raise ConfigError(f"{source}: key {key!r} must not contain credentials (user:password@); {hint}")
    names = [name for name, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    risky = [n for n in names if _KEY_LIKE.search(n)]
    if risky:
        raise ConfigError(
            f"{source}: key {key!r} must not carry credentials in its query (parameter {risky[0][:40]!r}); {hint}"
        )
    if parts.fragment:
        raise ConfigError(f"{source}: key {key!r} must not have a #fragment")


def _replica_urls(value: Any, base_url: str, source: str) -> tuple[str, ...]:
    """``replica_urls`` checked: a list of distinct http(s) URLs without credentials, none equal to base_url."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(u, str) and u.strip() for u in value):
        raise ConfigError(f"{source}: key 'replica_urls' must be a list of URLs (strings)")
    if len(value) > MAX_REPLICAS:
        raise ConfigError(f"{source}: key 'replica_urls' lists more than {MAX_REPLICAS} URLs")
    seen = {base_url.rstrip("/")}
    for i, url in enumerate(value):
        where = f"replica_urls[{i}]"
        if len(url) > 2000:
            raise ConfigError(f"{source}: key {where!r} is longer than 2000 characters")
        check_base_url(url, source, where)
        if url.rstrip("/") in seen:
            raise ConfigError(f"{source}: key {where!r} repeats base_url or an earlier replica URL")
        seen.add(url.rstrip("/"))
    return tuple(value)


def key_places(mapping: dict) -> dict[str, str]:
    """Where a key must never be written in an endpoint configuration: field name → its text (URLs also
    URL-decoded, so an encoded key is found too).  The key belongs in the ``Authorization`` header only."""
    out: dict[str, str] = {}
    for field in ("name", "model", "base_url"):
        if isinstance(mapping.get(field), str):
            out[field] = mapping[field]
    for i, url in enumerate(mapping.get("replica_urls") or ()):
        if isinstance(url, str):
            out[f"replica_urls[{i}]"] = url
    for field in ("headers", "default_headers", "extra_headers"):  # should a configuration ever carry headers
        for name, value in (mapping.get(field) or {}).items():
            if str(name).lower() != "authorization":
                out[f"{field}.{name}"] = f"{name}: {value}"
    return out


def check_key_value(value: str, source: str, variable: str, places: dict[str, str]) -> None:
    """The key read from ``variable`` is a valid header value, and appears nowhere in the configuration
    but the key field: not in ``base_url`` (path, query, anywhere), ``model``, the name or a header.
    Errors name the variable and the field, never the value."""
    bad = [ch for ch in value if not (32 <= ord(ch) < 127)]
    if bad:
        what = (
            "control characters (a newline?)"
            if any(ord(ch) < 32 or ord(ch) == 127 for ch in bad)
            else ("non-ASCII characters")
        )
        raise ConfigError(f"{source}: the key in {variable} holds {what}; an API key is printable ASCII")
    if value != value.strip():
        raise ConfigError(f"{source}: the key in {variable} starts or ends with spaces")
    if len(value) < redact.MIN_SECRET_CHARS:
        return  # too short to tell a key from an ordinary word (and never redacted either)
    for field, text in places.items():
        decoded = urllib.parse.unquote_plus(text) if "url" in field else text
        if value in text or value in decoded:
            raise ConfigError(
                f"{source}: key {field!r} contains the API key (the value of {variable}); the key belongs only in "
                "the environment variable api_key_env names, which is sent as the Authorization header"
            )


def check_endpoint_mapping(
    data: dict, source: str, known: set[str], checks: dict[str, tuple[Any, str]], what: str
) -> None:
    """The checks every endpoint configuration passes: no tables, no unknown keys (a key-like one is told
    where the key belongs), the required strings, each known key's value, a credential-free ``base_url``,
    and a key variable that is not the admin token's."""
    tables = sorted(k for k, v in data.items() if isinstance(v, dict))
    if tables:
        raise ConfigError(f"{source}: unknown table [{str(tables[0])[:40]}] ({what} has no tables)")
    unknown = sorted(set(data) - known)
    if any(_KEY_LIKE.search(str(k)) for k in unknown):
        raise ConfigError(f"{source}: put the API key in an environment variable and name it with api_key_env")
    if unknown:
        raise ConfigError(f"{source}: unknown key {str(unknown[0])[:40]!r} (known: {', '.join(sorted(known))})")
    for key in ("name", "base_url", "model"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ConfigError(f"{source}: key {key!r} is required and must be a non-empty string")
        if len(data[key]) > 2000:
            raise ConfigError(f"{source}: key {key!r} is longer than 2000 characters")
    for key, (ok, expected) in checks.items():
        if key in data and not ok(data[key]):
            raise ConfigError(f"{source}: key {key!r} must be {expected}")
    check_base_url(data["base_url"], source)
    if data.get("api_key_env") == redact.ADMIN_TOKEN_ENV:
        raise ConfigError(f"{source}: key 'api_key_env' must not name the admin token's variable")
    value = os.environ.get(data["api_key_env"]) if data.get("api_key_env") else None
    if value:
        redact.register(value)
        check_key_value(value, source, data["api_key_env"], key_places(data))


def read_toml(path: str | Path) -> dict:
    """A TOML file's mapping; an unreadable or invalid file is a ConfigError naming it (never its content)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: file does not exist")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"{p}: cannot read ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML ({redact.clip(exc, 200)})") from None


def mapping_to_toml(mapping: dict) -> str:
    """A flat configuration mapping as TOML that :func:`read_toml` reads back (unset values left out)."""
    lines = []
    for key, value in mapping.items():
        if value is None:
            continue
        if isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, (int, float)):
            lines.append(f"{key} = {value!r}")
        elif isinstance(value, (list, tuple)):  # replica_urls: an array of strings (left out when empty)
            if value:
                lines.append(f"{key} = [{', '.join(json.dumps(str(v), ensure_ascii=False) for v in value)}]")
        else:  # a JSON string is a valid TOML basic string
            lines.append(f"{key} = {json.dumps(str(value), ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def from_mapping(
    data: dict, source: str = "configuration", form: bool = False, key_envs: Iterable[str] = ()
) -> JudgeConfig:
    """A validated configuration; ``form=True`` (the dashboard) also restricts ``api_key_env`` to the server's
    explicit allow-list (``ARENA_KEY_ENV_ALLOW`` plus ``key_envs``, the names the page read from the server's
    Streamlit secrets ``[judge_keys]``), so the page cannot send any other server variable."""
    check_endpoint_mapping(data, source, set(_TYPES), _CHECKS, "a judge configuration")
    if "replica_urls" in data:
        data = {**data, "replica_urls": _replica_urls(data["replica_urls"], data["base_url"], source)}
        if data["replica_urls"] and data.get("mode") == "batch":
            raise ConfigError(f"{source}: key 'replica_urls' is for online runs (a batch lives at one provider)")
    if data.get("max_cost_usd") is not None and (
        data.get("price_prompt_per_mtok") is None or data.get("price_completion_per_mtok") is None
    ):
        raise ConfigError(
            f"{source}: key 'max_cost_usd' needs both prices (price_prompt_per_mtok, price_completion_per_mtok)"
        )
    env = data.get("api_key_env")
    if form and env and not redact.key_env_allowed(env, key_envs):
        allowed = redact.key_env_allow_list(key_envs)
        raise ConfigError(
            f"{source}: key 'api_key_env' must name one of the server's key variables "
            + (f"({', '.join(allowed)})" if allowed else "(none is configured)")
            + f"; the server's operator lists them in {redact.KEY_ENV_ALLOW_ENV} or in the Streamlit secrets' "
            "[judge_keys]"
        )
    return JudgeConfig(**data)


def to_toml(cfg: JudgeConfig) -> str:
    """The configuration as a TOML file that :func:`load_toml` reads back (unset values left out)."""
    return mapping_to_toml(cfg.to_store())


def load_toml(path: str | Path) -> JudgeConfig:
    return from_mapping(read_toml(path), str(Path(path)))
