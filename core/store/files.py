"""Battle files read by DuckDB without a store: LMArena-style files aggregated to (pair, outcome) cells."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from core.domain import ARENA_WINNERS, OUTCOME_Y
from core.store.errors import StoreError

_FILE_READERS = {
    ".parquet": "read_parquet",
    ".csv": "read_csv_auto",
    ".jsonl": "read_json_auto",
    ".json": "read_json_auto",
    ".ndjson": "read_json_auto",
}
# The winner string of a battle file → its target y (ARENA_WINNERS then OUTCOME_Y).
_WINNER_Y = {name: OUTCOME_Y[code] for name, code in ARENA_WINNERS.items()}
_HARD_Y = (
    "(CASE lower(trim(CAST(winner AS VARCHAR))) "
    + " ".join(f"WHEN '{name}' THEN {y!r}" for name, y in _WINNER_Y.items())
    + " END)"
)


def aggregate_battle_file(path: str | Path) -> tuple[pd.DataFrame, int]:
    """An LMArena-style battle file aggregated to (pair, outcome) cells in SQL.

    Returns (cells with model_a, model_b, y, n; number of battles).  Raises
    ``StoreError`` naming the file, row and field for missing columns, empty
    names, self-battles or unknown winner values.  Pairs are oriented with
    model_a < model_b (y flipped accordingly): the likelihood is unchanged.
    """
    p = Path(path)
    reader = _FILE_READERS.get(p.suffix.lower())
    if reader is None:
        raise StoreError(f"{p}: unknown file type {p.suffix!r}; expected .parquet, .csv or .jsonl")
    if not p.exists():
        raise StoreError(f"{p}: file does not exist")
    con = duckdb.connect()
    literal = "'" + str(p).replace("'", "''") + "'"
    try:
        try:
            con.execute(f"CREATE TEMP VIEW f AS SELECT * FROM {reader}({literal})")
            cols = [r[0] for r in con.execute("DESCRIBE f").fetchall()]
        except duckdb.Error as exc:
            raise StoreError(f"{p}: unreadable file ({str(exc).splitlines()[0][:160]})") from None
        for col in ("model_a", "model_b", "winner"):
            if col not in cols:
                raise StoreError(f"{p}, field '{col}': missing required column (found {cols})")
        # One pass groups the raw columns (cheap: no per-row expressions); the
        # few groups are validated and oriented in pandas.  Only when a group is
        # invalid is the file scanned again to name the first bad row.
        try:
            raw = con.execute("SELECT model_a, model_b, winner, count(*)::DOUBLE AS n FROM f GROUP BY ALL").df()
        except duckdb.Error as exc:
            raise StoreError(f"{p}: unreadable file ({str(exc).splitlines()[0][:160]})") from None
        a = raw["model_a"].astype("string").str.strip()
        b = raw["model_b"].astype("string").str.strip()
        y = raw["winner"].astype("string").str.strip().str.lower().map(_WINNER_Y)
        invalid = (a.isna() | b.isna() | (a == "") | (b == "") | (a == b) | y.isna()).to_numpy(dtype=bool)
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
        a, b, y = a.to_numpy(dtype=object), b.to_numpy(dtype=object), y.to_numpy(dtype=float)
        flip = a > b
        cells = pd.DataFrame(
            {
                "model_a": np.where(flip, b, a),
                "model_b": np.where(flip, a, b),
                "y": np.where(flip, 1.0 - y, y),
                "n": raw["n"].to_numpy(float),
            }
        )
        cells = cells.groupby(["model_a", "model_b", "y"], as_index=False, sort=True)["n"].sum()
        n = int(cells["n"].sum())
        if n == 0:
            raise StoreError(f"{p}: the file has no battles")
    finally:
        con.close()
    return cells, int(n)
