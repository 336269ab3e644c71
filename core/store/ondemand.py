"""A store handle that holds the file only while a query runs.

DuckDB lets a writer in only when no other process has the file open, so a
reader that keeps it open through a minute of fitting blocks every import
and judge run for that minute.  :class:`OnDemandStore` has the methods of
:class:`~core.store.Store`; each call opens the file read-only, runs, and
closes it, so the computations between queries hold nothing.  It can keep
the last battle frame it read (``keep_frame``): several computations on one
judge then read it once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.store import waits
from core.store.handle import Store


class OnDemandStore:
    def __init__(self, path: str | Path, wait_s: float = waits.WORKER.seconds, keep_frame: bool = False):
        self.path = str(path)
        self.read_only = True
        self.wait_s = wait_s
        self._kept: dict[tuple, Any] | None = {} if keep_frame else None

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with Store.open(self.path, read_only=True, wait_s=self.wait_s) as store:
            return getattr(store, name)(*args, **kwargs)

    def battle_frame(self, dataset: str, judge: str | None = None, **options: Any) -> Any:
        if self._kept is None or options:
            return self._call("battle_frame", dataset, judge, **options)
        key = (dataset, judge)
        if key not in self._kept:
            self._kept.clear()  # one frame at a time: the memory of one
            self._kept[key] = self._call("battle_frame", dataset, judge)
        return self._kept[key].copy(deep=False)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if not callable(getattr(Store, name, None)):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)
