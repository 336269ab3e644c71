"""A background judge worker owned by the server process (one writer for the DuckDB file).

The admin page keeps one :class:`JudgeWorker` per process (``st.cache_resource``);
runs continue when the browser tab closes, and every session reads the same
progress.  Nothing here imports Streamlit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from core.judging.config import JudgeConfig
from core.judging.runner import RunStats, Unit, run_units


@dataclass
class ActiveRun:
    judge: str
    dataset: str
    stats: RunStats
    thread: threading.Thread
    cancel: threading.Event
    error: str | None = None
    run_id: int | None = None
    config: JudgeConfig | None = None  # names the key's variable, never holds a key


class JudgeWorker:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: ActiveRun | None = None

    def busy(self) -> bool:
        return self.current is not None and self.current.thread.is_alive()

    def start(self, store, dataset: str, cfg: JudgeConfig, units: list[Unit]) -> ActiveRun:
        with self._lock:
            if self.busy():
                raise RuntimeError(f"a run of {self.current.judge} is in progress; cancel it or wait")
            cancel = threading.Event()
            stats = RunStats(planned=len(units))
            active = ActiveRun(cfg.name, dataset, stats, threading.Thread(daemon=True), cancel, config=cfg)

            def progress(s: RunStats) -> None:
                active.stats = s

            def target() -> None:
                try:
                    active.run_id, active.stats = run_units(store, dataset, cfg, units, progress=progress,
                                                            cancel=cancel)
                except Exception as exc:  # noqa: BLE001 - reported to every session
                    active.error = f"{type(exc).__name__}: {exc}"
                    active.stats.status = "failed"

            active.thread = threading.Thread(target=target, name=f"judge-{cfg.name}", daemon=True)
            self.current = active
            active.thread.start()
            return active

    def cancel(self) -> None:
        if self.current is not None:
            self.current.cancel.set()

    def wait(self, timeout: float | None = None) -> None:
        if self.current is not None:
            self.current.thread.join(timeout)


def connection_test(cfg: JudgeConfig) -> dict:
    """One cheap call: model name, latency and whether logprobs come back (never the key)."""
    import openai

    client = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key(), max_retries=0, timeout=cfg.timeout_s)
    t0 = time.perf_counter()
    try:
        resp = client.chat.completions.create(model=cfg.model, messages=[{"role": "user", "content": "Reply A or B."}],
                                              max_tokens=1, temperature=0, logprobs=True, top_logprobs=2)
    except openai.APIConnectionError as exc:
        return {"ok": False, "error": f"cannot reach {cfg.base_url}: {exc}"}
    except openai.APIStatusError as exc:
        return {"ok": False, "error": f"HTTP {exc.status_code}: {str(exc)[:200]}"}
    finally:
        client.close()
    choice = resp.choices[0] if resp.choices else None
    has_lp = bool(choice is not None and getattr(choice, "logprobs", None) and choice.logprobs.content)
    return {"ok": True, "model": resp.model, "latency_ms": (time.perf_counter() - t0) * 1000, "logprobs": has_lp,
            "reply": choice.message.content if choice else None}
