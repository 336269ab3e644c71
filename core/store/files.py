"""Battle files read by DuckDB without a store: LMArena-style files aggregated to (pair, outcome) cells."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.domain import ARENA_WINNERS, OUTCOME_Y
from core.store.errors import StoreError
from core.store.filescan import FileScan

# pandas is imported only by the DataFrame wrapper: `python -m core bt FILE`
# reads the arrays and must not pay its import.
if TYPE_CHECKING:
    import pandas as pd

# The winner string of a battle file → its target y (ARENA_WINNERS then OUTCOME_Y).
_WINNER_Y = {name: OUTCOME_Y[code] for name, code in ARENA_WINNERS.items()}
_HARD_Y = (
    "(CASE lower(trim(CAST(winner AS VARCHAR))) "
    + " ".join(f"WHEN '{name}' THEN {y!r}" for name, y in _WINNER_Y.items())
    + " END)"
)


@dataclass(frozen=True)
class BattleCells:
    """A battle file aggregated to (pair, outcome) cells, as arrays.

    ``models`` sorted; per cell ``i < j`` index ``models`` (model_a, model_b
    oriented so that model_a < model_b), ``y`` the target of model_a and ``n``
    the number of battles.  Cells are sorted by (model_a, model_b, y).
    """

    models: tuple[str, ...]
    i: np.ndarray
    j: np.ndarray
    y: np.ndarray
    n: np.ndarray
    n_battles: int


def _text(value: Any) -> str | None:
    """A cell as stripped text (None when missing), as pandas' string dtype renders it."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value).strip()


def aggregate_battle_cells(path: str | Path | FileScan) -> BattleCells:
    """An LMArena-style battle file aggregated to (pair, outcome) cells in SQL.

    Raises ``StoreError`` naming the file, row and field for missing columns,
    empty names, self-battles or unknown winner values.  Pairs are oriented
    with model_a < model_b (y flipped accordingly): the likelihood is
    unchanged.  ``path`` may be a :class:`FileScan` already started.
    """
    scan = path if isinstance(path, FileScan) else FileScan(path)
    p = scan.path
    con = scan.connection()
    try:
        # The few groups are validated and oriented here, each distinct raw value once.  Only when a group
        # is invalid is the file scanned again to name the first bad row.
        def distinct(table: str) -> list[Any]:
            return [r[0] for r in con.execute(f"SELECT v FROM {table} ORDER BY k").fetchall()]

        texts_a, texts_b = [_text(v) for v in distinct("ka")], [_text(v) for v in distinct("kb")]
        models = tuple(sorted({t for t in (*texts_a, *texts_b) if t}))
        index = {name: k for k, name in enumerate(models)}
        # Per distinct raw value its model index, -1 for an empty or missing name; code -1 (NULL) takes the
        # appended -1.  Codes follow the sorted names, so ia > ib is model_a > model_b.
        model_of_a = np.array([index[t] if t else -1 for t in texts_a] + [-1], dtype=np.int64)
        model_of_b = np.array([index[t] if t else -1 for t in texts_b] + [-1], dtype=np.int64)
        y_of_w = np.array(
            [_WINNER_Y.get(t.lower(), np.nan) if (t := _text(v)) is not None else np.nan for v in distinct("kw")]
            + [np.nan]
        )
        cells = con.execute("SELECT ca, cb, cw, n FROM gc").fetchnumpy()
        ia, ib = model_of_a[cells["ca"]], model_of_b[cells["cb"]]
        y = y_of_w[cells["cw"]]
        invalid = (ia < 0) | (ib < 0) | (ia == ib) | np.isnan(y)
        if invalid.any():
            bad = con.execute(
                f"""SELECT row_nr, CASE WHEN model_a IS NULL OR trim(CAST(model_a AS VARCHAR)) = '' THEN 'model_a'
                                       WHEN model_b IS NULL OR trim(CAST(model_b AS VARCHAR)) = '' THEN 'model_b'
                                       WHEN trim(CAST(model_a AS VARCHAR)) = trim(CAST(model_b AS VARCHAR))
                                            THEN 'model_b'
                                       ELSE 'winner' END AS field, CAST(winner AS VARCHAR)
                    FROM (SELECT row_number() OVER () AS row_nr, * FROM f)
                    WHERE model_a IS NULL OR model_b IS NULL OR trim(CAST(model_a AS VARCHAR)) = ''
                       OR trim(CAST(model_b AS VARCHAR)) = ''
                       OR trim(CAST(model_a AS VARCHAR)) = trim(CAST(model_b AS VARCHAR)) OR ({_HARD_Y}) IS NULL
                    ORDER BY row_nr LIMIT 1"""
            ).fetchone()
            assert bad is not None  # the grouped pass found an invalid row
            what = {
                "model_a": "empty model name",
                "model_b": "empty model name or a model battling itself",
                "winner": f"unknown winner value {bad[2]!r} (expected model_a, model_b, tie, "
                "tie (bothbad) or both_bad)",
            }[bad[1]]
            raise StoreError(f"{p}, row {bad[0]}, field '{bad[1]}': {what}")
        n_raw = np.asarray(cells["n"], dtype=float)
    finally:
        con.close()
    flip = ia > ib
    i, j, y = np.where(flip, ib, ia), np.where(flip, ia, ib), np.where(flip, 1.0 - y, y)
    # Targets are 0, ½ or 1: 2y is an exact small integer, so the key sorts by (model_a, model_b, y).
    m = max(len(models), 1)
    key = (i * m + j) * 3 + np.rint(2 * y).astype(np.int64)
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    n = np.bincount(inv, weights=n_raw, minlength=len(uniq))
    n_battles = int(n.sum())
    if n_battles == 0:
        raise StoreError(f"{p}: the file has no battles")
    return BattleCells(models, i[first], j[first], y[first], n, n_battles)


def aggregate_battle_file(path: str | Path) -> tuple[pd.DataFrame, int]:
    """:func:`aggregate_battle_cells` as (cells with model_a, model_b, y, n; number of battles)."""
    import pandas as pd

    cells = aggregate_battle_cells(path)
    names = np.array(cells.models, dtype=object)
    frame = pd.DataFrame({"model_a": names[cells.i], "model_b": names[cells.j], "y": cells.y, "n": cells.n})
    return frame, cells.n_battles
