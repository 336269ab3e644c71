"""The judge run's OpenAI client: ``openai.AsyncOpenAI`` with a cheaper request builder for repeated calls.

A judge run sends thousands of POSTs that differ only in their JSON body and
idempotency key.  The SDK rebuilds every request from scratch (merging header
mappings, normalising each header, parsing and joining URLs), which is about
0.25 ms of CPU per call and a third of the client's work per judgment at
concurrency 32 (benchmarks/README_judging.md).  ``JudgeClient`` lets the SDK
build the first request of each kind, keeps its method, URL, headers and
extensions, and for later calls of the same kind only swaps in the new body and
idempotency key.  Everything else (transport, timeouts, status errors, the
``x-stainless-*`` headers) stays the SDK's own.  Any request outside that narrow
shape (a GET, query parameters, files, extra headers, a per-call timeout, a
non-default security option) goes through the SDK's builder unchanged;
``tests/test_judging.py`` checks that both builders produce the same request.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import openai

from core import redact
from core.judging.config import JudgeConfig

_OPTION_FIELDS = openai._models.FinalRequestOptions.model_fields
_DEFAULT_SECURITY = _OPTION_FIELDS["security"].default if "security" in _OPTION_FIELDS else None


def _is_repeatable_post(options: Any) -> bool:
    """A JSON POST whose request differs from its predecessors only in body and idempotency key."""
    return (
        options.method == "post"
        and isinstance(options.content, bytes)
        and options.json_data is None
        and not options.params
        and isinstance(options.headers, openai.NotGiven)
        and isinstance(options.timeout, openai.NotGiven)
        and options.files is None
        and options.extra_json is None
        and options.follow_redirects is None
        and getattr(options, "security", None) == _DEFAULT_SECURITY
    )


class JudgeClient(openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` that reuses the SDK-built request of a repeated JSON POST.

    Pass the body as JSON bytes (``client.post(path, content=json_bytes, ...)``):
    the SDK sends them as they are, and only such calls take the fast path.
    The cached requests assume the client's settings (key, base URL, default
    headers) stay as constructed: a judge run makes one client and drops it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_templates: dict[tuple[str, int], tuple[httpx2.URL, list, dict]] = {}

    @property
    def user_agent(self) -> str:  # the SDK names the client class; servers should see the SDK's name
        return super().user_agent.replace(type(self).__name__, "AsyncOpenAI", 1)

    def _build_request(self, options: Any, *, retries_taken: int = 0) -> httpx2.Request:
        if not _is_repeatable_post(options):
            return super()._build_request(options, retries_taken=retries_taken)
        key = (options.url, retries_taken)
        template = self._request_templates.get(key)
        if template is None:
            request = super()._build_request(options, retries_taken=retries_taken)
            per_call = {b"content-length", (self._idempotency_header or "").lower().encode()}
            headers = [(k, v) for k, v in request.headers.raw if k.lower() not in per_call]
            self._request_templates[key] = (request.url, headers, request.extensions)
            return request
        url, headers, extensions = template
        if self._idempotency_header and options.idempotency_key:  # the OpenAI client sends none
            headers = [*headers, (self._idempotency_header.encode(), options.idempotency_key.encode())]
        return httpx2.Request("POST", url, headers=headers, content=options.content, extensions=dict(extensions))


def _test_one(cfg: JudgeConfig, url: str) -> dict:
    """One cheap call to one replica: model name, latency and whether logprobs come back (never the key)."""
    client = openai.OpenAI(base_url=url, api_key=cfg.api_key(), max_retries=0, timeout=cfg.timeout_s)
    t0 = time.perf_counter()
    try:
        resp = client.chat.completions.create(
            model=cfg.model,
            messages=[{"role": "user", "content": "Reply A or B."}],
            max_tokens=1,
            temperature=0,
            logprobs=True,
            top_logprobs=2,
        )
    except openai.APIConnectionError as exc:
        return {"ok": False, "error": redact.redact(f"cannot reach {url}: {exc}")}
    except openai.APIStatusError as exc:  # the body may echo the key: redacted before it is cut
        return {"ok": False, "error": f"HTTP {exc.status_code}: {redact.clip(exc, 200)}"}
    finally:
        client.close()
    choice = resp.choices[0] if resp.choices else None
    has_lp = bool(choice is not None and choice.logprobs is not None and choice.logprobs.content)
    return {
        "ok": True,
        "latency_ms": (time.perf_counter() - t0) * 1000,
        "logprobs": has_lp,
        "model": redact.redact(resp.model),
        "reply": redact.redact(choice.message.content) if choice else None,
    }


def connection_test(cfg: JudgeConfig) -> dict:
    """One cheap call to every replica: model name, latency and whether logprobs come back (never the key).

    The top-level keys describe the first replica that answered (``ok`` only when every replica did;
    ``error`` names the failing ones); ``replicas`` holds one such result per base URL, ``url`` added.
    """
    urls = cfg.urls
    if len(urls) == 1:
        results = [_test_one(cfg, urls[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(urls))) as pool:
            results = list(pool.map(lambda u: _test_one(cfg, u), urls))
    replicas = [{"url": url, **res} for url, res in zip(urls, results, strict=True)]
    if len(urls) == 1:
        return {**results[0], "replicas": replicas}
    answered = [r for r in results if r["ok"]]
    out = {k: v for k, v in (answered[0] if answered else {}).items() if k != "error"}
    out["ok"] = len(answered) == len(results)
    if not out["ok"]:
        bad = [r for r in replicas if not r["ok"]]
        out["error"] = f"{len(bad)} of {len(urls)} replicas failed: " + "; ".join(
            f"{r['url']}: {r['error']}" for r in bad
        )
    out["replicas"] = replicas
    return out
