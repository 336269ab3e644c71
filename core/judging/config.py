"""Judge configuration: validated at the boundary, never holding a key."""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

TEMPLATES = ("rubric", "ab-logprob", "two-stage", "echo")


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
    extra: dict = field(default_factory=dict)

    @property
    def version(self) -> str:
        from core.judging.prompts import TEMPLATE_VERSIONS

        return self.prompt_version or f"{self.template}-{TEMPLATE_VERSIONS[self.template]}"

    @property
    def uses_logprobs(self) -> bool:
        return self.template == "ab-logprob"

    def api_key(self) -> str:
        """The key from the environment (never stored); a placeholder when none is configured."""
        if not self.api_key_env:
            return "sk-no-key"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(f"judge {self.name!r}: environment variable {self.api_key_env} is not set")
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for these tokens at the configured prices; None when a price is not configured."""
        if self.price_prompt_per_mtok is None or self.price_completion_per_mtok is None:
            return None
        return (prompt_tokens * self.price_prompt_per_mtok + completion_tokens * self.price_completion_per_mtok) / 1e6

    def to_store(self) -> dict:
        d = asdict(self)
        d.pop("extra", None)
        return d


_TYPES = {f.name: f.type for f in fields(JudgeConfig)}


def from_mapping(data: dict, source: str = "configuration") -> JudgeConfig:
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_TYPES))})")
    for key in ("name", "base_url", "model"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ConfigError(f"{source}: key {key!r} is required and must be a non-empty string")
    if any("key" in k.lower() and k != "api_key_env" for k in data):
        raise ConfigError(f"{source}: put the API key in an environment variable and name it with api_key_env")
    checks = {
        "template": lambda v: v in TEMPLATES,
        "both_orders": lambda v: isinstance(v, bool),
        "temperature": lambda v: isinstance(v, (int, float)) and 0 <= v <= 2,
        "max_tokens": lambda v: isinstance(v, int) and v > 0,
        "top_logprobs": lambda v: isinstance(v, int) and 1 <= v <= 20,
        "concurrency": lambda v: isinstance(v, int) and 1 <= v <= 512,
        "timeout_s": lambda v: isinstance(v, (int, float)) and v > 0,
        "max_retries": lambda v: isinstance(v, int) and v >= 0,
        "max_calls": lambda v: v is None or (isinstance(v, int) and v > 0),
        "max_tokens_total": lambda v: v is None or (isinstance(v, int) and v > 0),
        "api_key_env": lambda v: v is None or (isinstance(v, str) and v.isidentifier()),
        "price_prompt_per_mtok": lambda v: v is None or (isinstance(v, (int, float)) and v >= 0),
        "price_completion_per_mtok": lambda v: v is None or (isinstance(v, (int, float)) and v >= 0),
        "prompt_version": lambda v: v is None or (isinstance(v, str) and v.strip() != ""),
    }
    for key, ok in checks.items():
        if key in data and not ok(data[key]):
            raise ConfigError(f"{source}: key {key!r} has an invalid value {data[key]!r}")
    if not data["base_url"].startswith(("http://", "https://")):
        raise ConfigError(f"{source}: key 'base_url' must start with http:// or https://")
    return JudgeConfig(**data)


def load_toml(path: str | Path) -> JudgeConfig:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: file does not exist")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})") from None
    return from_mapping(data, str(p))
