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
``filescan``  a battle file's scan started in a thread before numpy is imported (``python -m core bt``)
``handle``    the ``Store`` class: every query and write mixin on one connection
``bulk``      whole files validated and written in SQL (imports at the engine's speed)
``results``   derived results persisted with the data stamp and code version they were computed from
``evaluations`` what each evaluation of a new model concluded
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from core.store.errors import StoreError, StoreLockedError

if TYPE_CHECKING:
    from core.store.base import DatasetInfo
    from core.store.files import BattleCells, aggregate_battle_cells, aggregate_battle_file
    from core.store.handle import Store
    from core.store.schema import SCHEMA_VERSION

# The store modules import pandas and pyarrow (~0.4 s), the file aggregation numpy: each loads on first
# use of a name below (PEP 562), so that `python -m core bt FILE` can start DuckDB's scan of the file
# (``core.store.filescan``) before numpy is imported.
_LAZY = {
    "Store": "core.store.handle",
    "DatasetInfo": "core.store.base",
    "BattleCells": "core.store.files",
    "aggregate_battle_cells": "core.store.files",
    "aggregate_battle_file": "core.store.files",
    "SCHEMA_VERSION": "core.store.schema",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "SCHEMA_VERSION",
    "BattleCells",
    "DatasetInfo",
    "Store",
    "StoreError",
    "StoreLockedError",
    "aggregate_battle_cells",
    "aggregate_battle_file",
]
