"""A battle file's outcome counts, scanned by DuckDB in a background thread.

``python -m core bt FILE`` spends about as long importing numpy and the fitting code as DuckDB spends
scanning a million-battle file.  DuckDB releases the interpreter lock while it executes a query, so the
command starts the scan first (this module imports neither numpy nor pandas) and imports the rest while it
runs; :func:`core.store.files.aggregate_battle_cells` then reads the few grouped rows.

The scan needs only DuckDB's engine, the extension module ``_duckdb``: the ``duckdb`` package around it
adds ~45 ms of Python imports (its relational API, version lookup through ``importlib.metadata``) before the
scan could start.  The connection and exception classes are the same objects either way.
"""

from __future__ import annotations

import threading
from pathlib import Path

try:
    import _duckdb as duckdb
except ImportError:  # a DuckDB build without the separate extension module
    import duckdb  # type: ignore[no-redef]

from core.store.errors import StoreError

FILE_READERS = {
    ".parquet": "read_parquet",
    ".csv": "read_csv_auto",
    ".jsonl": "read_json_auto",
    ".json": "read_json_auto",
    ".ndjson": "read_json_auto",
}
REQUIRED = ("model_a", "model_b", "winner")


def _unreadable(path: Path, exc: BaseException) -> StoreError:
    return StoreError(f"{path}: unreadable file ({str(exc).splitlines()[0][:160]})")


class FileScan:
    """The file as view ``f``, its raw (model_a, model_b, winner) groups with counts as table ``g`` and the
    same groups as codes as table ``gc`` (see ``_scan``), in one in-memory DuckDB connection.  The scan
    starts on construction; :meth:`connection` waits for it and raises ``StoreError`` naming the file
    (unknown type, missing, unreadable, a required column missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._error: BaseException | None = None
        # Connected here, not in the thread: opening a database holds the interpreter lock, and in the thread
        # it fought the imports for it (twice as long); the scan itself releases the lock.
        if self.path.suffix.lower() in FILE_READERS and self.path.exists():
            self._con = duckdb.connect()
        self._thread = threading.Thread(target=self._scan, name="battle-file-scan", daemon=True)
        self._thread.start()

    def _scan(self) -> None:
        p = self.path
        try:
            reader = FILE_READERS.get(p.suffix.lower())
            if reader is None:
                raise StoreError(f"{p}: unknown file type {p.suffix!r}; expected .parquet, .csv or .jsonl")
            if self._con is None:
                raise StoreError(f"{p}: file does not exist")
            con = self._con
            literal = "'" + str(p).replace("'", "''") + "'"
            # One pass groups the raw columns (no per-row expressions); each column's distinct raw values get
            # a code (``ka``, ``kb``, ``kw``: value v, code k), and ``gc`` holds the groups as codes (-1: NULL)
            # with their counts, so that the caller validates each distinct value once, in Python, and
            # reads the groups as integer arrays.
            codes = " ".join(
                f"CREATE TEMP TABLE {table} AS SELECT v, (row_number() OVER () - 1)::BIGINT AS k "
                f"FROM (SELECT DISTINCT {col} AS v FROM g WHERE {col} IS NOT NULL);"
                for table, col in (("ka", "model_a"), ("kb", "model_b"), ("kw", "winner"))
            )
            try:
                con.execute(
                    f"""CREATE TEMP VIEW f AS SELECT * FROM {reader}({literal});
                        CREATE TEMP TABLE g AS
                            SELECT model_a, model_b, winner, count(*)::DOUBLE AS n FROM f GROUP BY ALL;
                        {codes}
                        CREATE TEMP TABLE gc AS
                            SELECT coalesce(a.k, -1) AS ca, coalesce(b.k, -1) AS cb, coalesce(w.k, -1) AS cw, g.n
                            FROM g LEFT JOIN ka a ON g.model_a = a.v LEFT JOIN kb b ON g.model_b = b.v
                            LEFT JOIN kw w ON g.winner = w.v"""
                )
            except duckdb.Error as exc:
                # A required column missing is named; anything else is an unreadable file.
                try:
                    cols = [r[0] for r in con.execute("DESCRIBE f").fetchall()]
                except duckdb.Error:
                    raise _unreadable(p, exc) from None
                for col in REQUIRED:
                    if col not in cols:
                        raise StoreError(f"{p}, field '{col}': missing required column (found {cols})") from None
                raise _unreadable(p, exc) from None
        except BaseException as exc:  # re-raised in the caller's thread by connection()
            self._error = exc

    def connection(self) -> duckdb.DuckDBPyConnection:
        """The connection holding the tables once the scan is done; the caller closes it."""
        self._thread.join()
        if self._error is not None:
            self.close()
            raise self._error
        assert self._con is not None
        return self._con

    def close(self) -> None:
        self._thread.join()
        if self._con is not None:
            self._con.close()
            self._con = None
