"""A publishable bundle: one dataset's data, its leaderboards and how they were made, in one zip.

Layout (``BUNDLE_FORMAT`` version ``BUNDLE_VERSION``)::

    manifest.json                 what is inside: dataset, judges, parameters, code version, the
                                  SHA-256 and row count of every other file, and ``lead``: the peer's
                                  own metric first (the sentence the Leaderboard page and the report
                                  open with, and the files that hold it), where the dataset has one
    tables/<table>.parquet        the dataset as it is stored (models, prompts, completions, battles,
                                  votes, annotators, judges, judgments, grades), keys as stored
    leaderboards/<name>.csv       the leaderboard as printed (rank, Elo and intervals, rounded as the
                                  app shows them); <name> is the judge, or ``human`` without one
    leaderboards/<name>.json      the same view at full precision, its headline and coverage sentence
    leaderboards/arena_hard_score.csv   when a judge graded its verdicts (an Arena-Hard import): the
                                  Arena-Hard score per judge and model, plain and style-controlled, with
                                  their 95% bootstrap bounds (METHODS §10)
    leaderboards/win_rates-<name>.csv  on a star design (every battle against one baseline: AlpacaEval,
                                  Arena-Hard): the win rates against the baseline as the Leaderboard page
                                  prints them, LC and win rate with their standard errors
    leaderboards/mtbench-<judge>.csv   the MT-Bench score table of a dataset with single-answer grades
    judges/<judge>.json           the judge's configuration (as stored: never a key)

``python -m core import --format bundle`` reads it back (:mod:`core.ingest.bundle`), checks every
hash, and the leaderboards recomputed from the imported tables with the manifest's parameters print
the same digits.  Every text passes through the redaction step first.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core import redact
from core.app.mtbench import MTBenchView, display_table, grade_judges, mtbench_view
from core.store import Store
from core.version import code_version

BUNDLE_FORMAT = "arena-leaderboard-bundle"
BUNDLE_VERSION = 1
DEFAULT_ALPHA = 0.1


@dataclass(frozen=True)
class BundleWritten:
    path: Path
    dataset: str
    judges: list[str]
    leaderboards: list[str]
    n_files: int


def safe_name(name: str) -> str:
    """A judge or dataset name as a file name inside the zip (letters, digits, - _ . kept)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80] or "_"


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def _json_ready(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_ready(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    return obj


def leaderboard_files(
    store: Store,
    dataset: str,
    judge: str | None,
    alpha: float,
    tau: float | None = None,
    others: Sequence[str] = (),
) -> tuple[pd.DataFrame, dict]:
    """The printed table and the full-precision record of one leaderboard view (also what the import checks);
    ``others``: registered rating methods beyond human, Hard- and Soft-Elo, as extra columns."""
    from core.app import leaderboard as lb

    view, _ = lb.view_for(store, dataset, judge, tau, alpha, others=others)
    table = lb.export_table(view)
    record = {
        "judge": judge,
        "primary": view.primary,
        "alpha": view.alpha,
        "tau": view.tau,
        "tau_fitted": view.tau_fitted,
        "interval_method": view.interval_method,
        # the interval is judge Elo ± q̂·√(SE² + σ̂²) ("floor") or ± q̂·SE ("se"), METHODS §4
        "conformal": None
        if view.quantile is None
        else {
            "score": view.quantile.score,
            "qhat": view.quantile.qhat if view.quantile.finite else None,
            "sigma": view.quantile.sigma,
            "n_calibration": view.quantile.n,
        },
        "headline": view.headline(),
        "tau_note": view.tau_note(),
        "coverage_statement": view.coverage_statement(),
        "coverage_level": view.coverage_level() if view.has_intervals else None,
        "set_apart": view.set_apart_statement(),
        "note": view.note,
        "rows": _json_ready(view.table.to_dict(orient="records")),
    }
    return table, record


def arena_hard_files(store: Store, dataset: str, judges: list[str]) -> pd.DataFrame | None:
    """The Arena-Hard score of every judge that graded its verdicts, one frame (None when no judge did)."""
    from core.app import Unavailable
    from core.app.arena_hard import baseline_scores, export_frame

    frames = []
    for name in judges:
        scores = baseline_scores(store, dataset, name)
        if not isinstance(scores, Unavailable):
            frames.append(export_frame(scores))
    return pd.concat(frames, ignore_index=True) if frames else None


def peer_files(store: Store, dataset: str, judges: list[str]) -> tuple[dict[str, pd.DataFrame], str | None]:
    """The win rates against the baseline per judge (or the human votes), as the page prints them, and the
    sentence the Leaderboard page and the report lead with (None: not a star design, or human votes to rate
    against, where the Elo leaderboard leads)."""
    from core.app import Unavailable
    from core.app.arena_hard import baseline_scores
    from core.app.leaderboard.page_plan import usable_baseline
    from core.app.winrate import baseline_view, peer_headline
    from core.app.winrate import table as rate_table

    tables: dict[str, pd.DataFrame] = {}
    headline: str | None = None
    names: list[str | None] = [*judges] if judges else [None]
    for name in names:
        rates = usable_baseline(baseline_view(store, dataset, name))
        if rates is None:
            continue
        tables[f"leaderboards/win_rates-{safe_name(name) if name else 'human'}.csv"] = rate_table(rates)
        if headline is None and name is not None:
            scores = baseline_scores(store, dataset, name)
            headline = peer_headline(rates, None if isinstance(scores, Unavailable) else scores.plain)
    return tables, headline


@dataclass(frozen=True)
class Printed:
    """Every leaderboard a bundle prints: ``tables`` (member → the CSV's frame), ``records`` (member →
    the full-precision JSON), the board names for the manifest, each judge's τ and ``lead``, the peer's
    headline and its files (None when the Elo leaderboard leads)."""

    tables: dict[str, pd.DataFrame]
    records: dict[str, dict]
    boards: list[str]
    taus: dict[str, float | None]
    lead: dict[str, Any] | None = None


def printed_leaderboards(
    store: Store,
    dataset: str,
    judges: list[str],
    alpha: float,
    has_battles: bool = True,
    methods: Sequence[str] = (),
) -> Printed:
    """The leaderboards of one dataset as a bundle prints them: a view per judge (or the human votes), the
    Arena-Hard score where a judge graded its verdicts, the MT-Bench score where there are grades.  The export
    writes these and the import recomputes them from the bundle's own tables (:func:`check_leaderboards`)."""
    tables: dict[str, pd.DataFrame] = {}
    records: dict[str, dict] = {}
    boards: list[str] = []
    taus: dict[str, float | None] = {}
    # a dataset of single-answer grades only has no battles to rate: its leaderboard is the MT-Bench score
    views: list[str | None] = ([*judges] if judges else [None]) if has_battles else []
    for board in views:
        table, record = leaderboard_files(store, dataset, board, alpha, others=methods)
        stem = f"leaderboards/{safe_name(board) if board else 'human'}"
        tables[f"{stem}.csv"], records[f"{stem}.json"] = table, record
        boards.append(board or "human")
        if board:
            taus[board] = record["tau"]
    led: list[str] = []
    scores = arena_hard_files(store, dataset, judges)
    if scores is not None:
        tables["leaderboards/arena_hard_score.csv"] = scores
        led.append("leaderboards/arena_hard_score.csv")
    rates, headline = peer_files(store, dataset, judges) if has_battles else ({}, None)
    tables.update(rates)
    led += list(rates)
    for grader in grade_judges(store, dataset):
        view = mtbench_view(store, dataset, grader)
        if isinstance(view, MTBenchView):
            tables[f"leaderboards/mtbench-{safe_name(grader)}.csv"] = display_table(view)
            boards.append(f"mtbench-{grader}")
            led.append(f"leaderboards/mtbench-{safe_name(grader)}.csv")
    from core.app.leaderboard.page_plan import lead as page_lead

    # the peer's metric leads where the Leaderboard page leads with it (core.app.leaderboard.page_plan.lead): a
    # star design judged without human votes to rate against, or a dataset of MT-Bench grades alone
    order = page_lead(bool(rates), store.dataset_counts(dataset)["votes"] > 0, on_slice=False)
    leads = order.peer_first or (order.grades_may_lead and not has_battles)
    return Printed(tables, records, boards, taus, {"headline": headline, "files": led} if led and leads else None)


def export_bundle(
    store: Store,
    dataset: str,
    out: str | Path,
    judge: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    methods: Sequence[str] = (),
) -> BundleWritten:
    """Write the bundle of ``dataset`` (only ``judge``'s judgments when given) to the zip ``out``.

    The file appears whole or not at all: it is written beside ``out`` and renamed into place.
    """
    out = Path(out)
    if out.suffix.lower() != ".zip":
        raise ValueError(f"{out}: a bundle is a .zip file")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    judges_all = [str(j) for j in store.judges_frame(dataset)["judge"]]
    if judge is not None and judge not in judges_all:
        raise ValueError(f"judge {judge!r} has no judgments in dataset {dataset!r} (judges: {judges_all})")
    tables = store.dataset_tables(dataset, judges=None if judge is None else [judge])
    judges = [judge] if judge is not None else judges_all
    files: dict[str, bytes] = {}
    rows: dict[str, int] = {}
    for name, df in tables.tables().items():
        clean = redact.redact_frame(df)
        files[f"tables/{name}.parquet"] = _parquet(clean)
        rows[f"tables/{name}.parquet"] = len(clean)
    from core.app.leaderboard import check_others

    methods = check_others(methods)
    printed = printed_leaderboards(store, dataset, judges, alpha, has_battles=len(tables.battles) > 0, methods=methods)
    for member, table in printed.tables.items():
        files[member] = redact.redact_frame(table).to_csv(index=False).encode()
        rows[member] = len(table)
    for member, record in printed.records.items():
        files[member] = redact.redact(json.dumps(record, ensure_ascii=False, indent=1)).encode()
    boards, taus = printed.boards, printed.taus
    for name in judges:
        config = store.judge_config_json(name)
        if config:
            files[f"judges/{safe_name(name)}.json"] = redact.redact(config).encode()
    manifest = {
        "format": BUNDLE_FORMAT,
        "bundle_version": BUNDLE_VERSION,
        "code_version": code_version(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "dataset": {"name": tables.name, "source": tables.source, "meta": _json_ready(tables.meta)},
        "judges": judges,
        "leaderboards": boards,
        "lead": printed.lead,
        "parameters": {
            "alpha": alpha,
            "methods": list(methods),  # registered rating methods printed beside human, Hard- and Soft-Elo
            "tau": taus,
            "tau_rule": "fitted on the human votes by maximum likelihood, refitted in every leave-one-out fold",
            "human_ci": "95% sandwich, cluster-robust by battle",
            "judge_ci": "±1.96 standard errors: each model's sandwich SE of its placement against the others "
            "(analytic, no resampling: the same numbers on every run)",
        },
        "files": {
            path: {"sha256": hashlib.sha256(data).hexdigest(), **({"rows": rows[path]} if path in rows else {})}
            for path, data in sorted(files.items())
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", redact.redact(json.dumps(_json_ready(manifest), ensure_ascii=False, indent=1)))
        for path, data in sorted(files.items()):
            zf.writestr(path, data)
    partial.replace(out)
    return BundleWritten(out, dataset, judges, boards, len(files) + 1)


class LeaderboardMismatch(ValueError):
    """A bundle's printed leaderboard says other numbers than its own tables give."""

    def __init__(self, member: str, row: int, column: str, printed: Any, recomputed: Any) -> None:
        self.member, self.row, self.column = member, row, column
        super().__init__(
            f"{member}, row {row}, field {column!r}: the bundle prints {printed!r} but its own tables give "
            f"{recomputed!r} (the leaderboard was edited, or made from other data)"
        )


def check_leaderboards(path: str | Path, tables: Any) -> None:
    """Recompute every leaderboard a bundle prints from the bundle's own tables and compare, digit for digit.

    ``tables``: the bundle's dataset as read (:class:`core.domain.DatasetTables`).  The tables are
    written to a store in memory and :func:`printed_leaderboards` recomputes every
    ``leaderboards/*.csv`` with the manifest's α and judges; raises :class:`LeaderboardMismatch` at
    the first printed cell that differs (or a member one side has and the other has not), naming
    the member, row and column.
    """
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        printed = {
            member: pd.read_csv(io.BytesIO(zf.read(member)), dtype=str, keep_default_na=False)
            for member in manifest.get("files", {})
            if member.startswith("leaderboards/") and member.endswith(".csv")
        }
    alpha = float(manifest.get("parameters", {}).get("alpha", DEFAULT_ALPHA))
    judges = [str(j) for j in manifest.get("judges", [])]
    from core.app.leaderboard import check_others

    try:
        methods = check_others([str(m) for m in manifest.get("parameters", {}).get("methods", [])])
    except ValueError as exc:
        raise LeaderboardMismatch("manifest.json", 0, "parameters.methods", "printed", str(exc)) from None
    with Store.open(":memory:") as store:
        store.write_dataset(tables)
        again = printed_leaderboards(
            store, tables.name, judges, alpha, has_battles=len(tables.battles) > 0, methods=methods
        )
    for member in sorted(set(printed) | set(again.tables)):
        if member not in again.tables:
            raise LeaderboardMismatch(member, 0, "file", "printed", "no such leaderboard from these tables")
        if member not in printed:
            raise LeaderboardMismatch(member, 0, "file", "missing", "a leaderboard these tables give")
        table = printed[member]
        redone = pd.read_csv(
            io.BytesIO(redact.redact_frame(again.tables[member]).to_csv(index=False).encode()),
            dtype=str,
            keep_default_na=False,
        )
        if list(redone.columns) != list(table.columns):
            raise LeaderboardMismatch(member, 0, "columns", list(table.columns), list(redone.columns))
        if len(redone) != len(table):
            raise LeaderboardMismatch(member, 0, "rows", len(table), len(redone))
        for i in range(len(table)):
            for col in table.columns:
                if table.at[i, col] != redone.at[i, col]:
                    raise LeaderboardMismatch(member, i + 1, col, table.at[i, col], redone.at[i, col])
