"""The DuckDB battle store: the only package that speaks SQL.

Everything else receives pandas frames (per battle, per vote, per judgment)
or pair-aggregated sufficient statistics (``n``, ``s`` per ordered pair) from
here.  The modules, by concern:

``schema``    the migrations (the table layout)
``base``      the connection, transactions, the dataset catalogue
``sql``       SQL expressions built from the label rules of ``core.domain``
``queries``   read queries: battle frames, pair statistics, votes, judgments, counts
``datasets``  whole-dataset writes (imports, the demo)
``judging``   the judge registry, judgments as calls finish, runs
``files``     battle files aggregated by DuckDB without a store
"""

from __future__ import annotations

from core.store.base import DatasetInfo
from core.store.datasets import DatasetWrites
from core.store.errors import StoreError, StoreLockedError
from core.store.files import aggregate_battle_file
from core.store.judging import JudgingStore
from core.store.queries import TARGETS, Queries
from core.store.schema import SCHEMA_VERSION


class Store(Queries, DatasetWrites, JudgingStore):
    """A handle on one DuckDB battle store: ``Store.open(path)``; use it as a context manager."""


__all__ = [
    "SCHEMA_VERSION",
    "TARGETS",
    "DatasetInfo",
    "Store",
    "StoreError",
    "StoreLockedError",
    "aggregate_battle_file",
]
