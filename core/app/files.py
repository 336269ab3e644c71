"""The same statistics straight from a file, without a store (the CLI's FILE arguments).

A file is validated as strictly as an import: errors name the file, row and
field (``IngestError`` or ``ValueError``) and nothing is written anywhere.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from core.stats import bt
from core.store import aggregate_battle_cells
from core.store.filescan import FileScan

# pandas, scipy (via the calibration and selective statistics) and the
# importers cost ~0.8 s to import; `python -m core bt FILE` needs none of
# them, so the functions that do import them themselves.
if TYPE_CHECKING:
    import pandas as pd

    from core.app.selective import Instances

P_FILE_COLUMNS = ("p_fwd", "p_rev", "human")
SOFTELO_COLUMNS = ("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b")
CONTEST_COLUMNS = ("judge", "first", "second", "question_id", "winner")


def softelo_frame(path: str | Path) -> pd.DataFrame:
    """A SoftElo CSV as a battle frame (``core.domain.BATTLE_FRAME``)."""
    from core.ingest import softelo

    return softelo.battle_frame(path)


# ----------------------------------------------------------- battle files
def bt_report(
    path: str | Path | FileScan,
    ci: str | None = "sandwich",
    n_boot: int = 1000,
    seed: int = 0,
    lam: float = 0.0,
    se_models: list[str] | tuple[str, ...] = (),
    se_top: int | None = None,
) -> dict:
    """Bradley–Terry ratings with 95% intervals of an LMArena-style battle file (model_a, model_b, winner).

    The file is aggregated to (pair, outcome) cells by DuckDB; a bad file
    raises ``StoreError`` naming file, row and field.  ``seconds`` times the
    steps.  Above ``bt.SE_ALL_MAX_MODELS`` models each sandwich SE costs a
    linear solve, so only the ``se_top`` best models (default
    ``bt.SE_TOP_MODELS``) and the named ``se_models`` get one; the others
    have null SE and interval, and an issue says so.
    """
    if ci == "bootstrap" and n_boot < 2:
        raise ValueError("--bootstrap needs at least 2 replicates")
    if lam < 0:
        raise ValueError("--lam must be >= 0")
    t0 = time.perf_counter()
    cells = aggregate_battle_cells(path)
    t1 = time.perf_counter()
    n, y = cells.n, cells.y
    comps = bt.Comparisons(cells.models, cells.i, cells.j, n, n * y, ss=n * y * y, count=n)
    n_pairs = int(len(set(zip(comps.i.tolist(), comps.j.tolist()))))
    t2 = time.perf_counter()
    fit = bt.fit_bt(comps, lam=lam)
    t3 = time.perf_counter()
    intervals = None
    if ci == "sandwich":
        intervals = bt.sandwich_intervals(comps, fit, models=se_models, top=se_top)
    elif ci == "bootstrap":
        intervals = bt.bootstrap(comps, fit, n_boot=n_boot, seed=seed)
    t4 = time.perf_counter()
    table = bt.LeaderboardFit(fit, intervals).table()
    issues = [i.as_dict() for i in fit.issues]
    if intervals is not None and intervals.note:
        issues.append({"kind": "intervals", "models": [], "message": intervals.note})
    return {
        "n_battles": cells.n_battles,
        "n_pairs": n_pairs,
        "n_models": comps.n_models,
        "converged": bool(fit.converged),
        "iterations": int(fit.iterations),
        "seconds": {"load": t1 - t0, "aggregate": t2 - t1, "fit": t3 - t2, "ci": t4 - t3},
        "models": [
            {
                "model": table["model"][r],
                "elo": float(table["elo"][r]),
                "lower": float(table["lower"][r]),
                "upper": float(table["upper"][r]),
                "se": float(table["se"][r]),
                "n_battles": int(round(table["n_battles"][r])),
                "interval_note": table["interval_note"][r] or None,
                **({"boot_missing": int(table["boot_missing"][r])} if "boot_missing" in table else {}),
            }
            for r in range(len(table["model"]))
        ],
        "issues": issues,
    }


# ----------------------------------------------------------------- SCOPE
def scope_instances(path: Path, source: str | None) -> Instances:
    """(forward P, reverse P, human prefers a) from a CSV of p_fwd, p_rev, human or a SoftElo file."""
    import pandas as pd

    if not path.exists():
        raise ValueError(f"{path}: file does not exist")
    try:
        header = [c.strip() for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from None
    if set(P_FILE_COLUMNS) <= set(header):
        return _p_file(path, source)
    if set(SOFTELO_COLUMNS) <= set(header):
        return _softelo_instances(path, source)
    raise ValueError(
        f"{path}: expected columns {', '.join(P_FILE_COLUMNS)} or the SoftElo columns "
        f"{', '.join(SOFTELO_COLUMNS)}; found {', '.join(header) or 'none'}"
    )


def _p_file(path: Path, source: str | None) -> Instances:
    import pandas as pd

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.columns = [c.strip() for c in df.columns]
    if df.empty:
        raise ValueError(f"{path}: the file has no rows")
    for col in ("p_fwd", "p_rev"):
        v = pd.to_numeric(df[col].str.strip(), errors="coerce").to_numpy(float)
        bad = np.flatnonzero(~np.isfinite(v) | (v < 0) | (v > 1))
        if len(bad):
            raise ValueError(
                f"{path}, row {bad[0] + 1}, field '{col}': expected a probability in [0, 1], "
                f"got {df[col].iloc[bad[0]]!r}"
            )
    h = df["human"].str.strip().str.lower()
    bad = np.flatnonzero(~h.isin(["a", "b"]).to_numpy())
    if len(bad):
        raise ValueError(
            f"{path}, row {bad[0] + 1}, field 'human': expected 'a' or 'b', got {df['human'].iloc[bad[0]]!r}"
        )
    p_fwd = df["p_fwd"].astype(float).to_numpy()
    p_rev = p_fwd if source == "single" else df["p_rev"].astype(float).to_numpy()
    return p_fwd, p_rev, (h == "a").to_numpy()


def _softelo_instances(path: Path, source: str | None) -> Instances:
    from core.domain import soft_target
    from core.ingest import softelo
    from core.stats.calibration import fit_tau

    if source in ("logprob", "verbal"):
        raise ValueError(
            f"{path}: a SoftElo file has rubric scores only (no {source} probabilities); use --source rubric or single"
        )
    f = softelo.battle_frame(path)
    fit = fit_tau(f["gap"].to_numpy(float), f["human_y"].to_numpy(float), interval=False)
    if fit.tau is None:
        raise ValueError(f"{path}: τ cannot be fitted ({fit.reason})")
    # The judge's verdict is the hard label in this format (METHODS §2); a judge tie made
    # no A/B call to accept or abstain on, like a human tie.
    keep = f["human_y"].isin([0.0, 1.0]) & f["judge_hard"].isin([0.0, 1.0]) & np.isfinite(f["gap"])
    p = soft_target(f.loc[keep, "gap"].to_numpy(float), fit.tau)
    return p, p, (f.loc[keep, "human_y"] == 1.0).to_numpy()


# --------------------------------------------------------------- contests
def read_csv_columns(path: str | Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A CSV that must have ``columns``; ValueError naming the file and the first missing field."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise ValueError(f"{p}: file does not exist")
    try:
        df = pd.read_csv(p)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: unreadable CSV ({exc})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{p}, field '{missing[0]}': missing required column (found {list(df.columns)})")
    return df


def contests(path: str | Path) -> pd.DataFrame:
    """A judge_contests.csv (judge, first, second, question_id, winner)."""
    df = read_csv_columns(path, CONTEST_COLUMNS)
    df["winner"] = df["winner"].astype(str)
    return df


def elo_series(path: str | Path, key: str, value: str) -> pd.Series:
    """A CSV of ``key``, ``value`` columns as a float Series indexed by ``key``."""
    return read_csv_columns(path, (key, value)).set_index(key)[value].astype(float)
