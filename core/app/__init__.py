"""Use cases: the only code that takes a :class:`~core.store.Store`.

Each module composes store queries and the statistics of ``core.stats`` into
the results one view (a dashboard page, a CLI command) shows.  Pages and
commands call only this package (and ``core.charts`` to draw):

==============  ==================================================================
``data``        open a store, the catalogue, battle frames, import, export, demo
``leaderboard`` ratings per method, the held-out table, the joined leaderboard view
``calibration`` τ profile, reliability curves, gap agreement
``residuals``   held-out residuals, conformal quantiles and split evaluation
``bias``        the judge bias report
``selective``   SCOPE curves and the threshold / selective leaderboard at α
``judges``      judge consistency, am-ELO abilities, online-Elo shuffles
``analyses``    accuracy alignment, aggregation, budget curves, languages
``judging``     judge configuration, planning, runs (CLI and the Admin page)
``files``       the same statistics straight from a file, without a store
``export``      tables as CSV, Markdown and LaTeX
==============  ==================================================================

Conventions: invalid input raises (``ValueError`` and its subclasses, with
the reason); a result the data cannot support is returned as
:class:`Unavailable` with its reason, so every caller shows it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from core.store import StoreError, StoreLockedError
from core.store import waits as waits  # the named waits of every store open (pages and commands read them here)

if TYPE_CHECKING:
    from core.ingest import IngestError
    from core.store import Store


def __getattr__(name: str) -> Any:
    # The importers and the store pull in pandas; `python -m core bt FILE` needs
    # neither, so these two names load on first use (PEP 562).
    if name == "IngestError":
        from core.ingest import IngestError

        return IngestError
    if name == "Store":
        from core.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


T = TypeVar("T")


@dataclass(frozen=True)
class Unavailable:
    """A result the data cannot support, and why (shown to the user as is)."""

    reason: str


def available(result: T | Unavailable) -> T:
    """The result itself; raises ``LookupError`` with the reason when it is :class:`Unavailable`."""
    if isinstance(result, Unavailable):
        raise LookupError(result.reason)
    return result


__all__ = ["IngestError", "Store", "StoreError", "StoreLockedError", "Unavailable", "available"]
