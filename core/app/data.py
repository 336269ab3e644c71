"""The store and its catalogue: open, what it holds, battle frames, import, export, the demo arena."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from core.datahome import DEFAULT_DB
from core.domain import DatasetTables, dataset_name_problem, outcome_of_target
from core.ingest import ImportResult, IngestError, bulk_plan, content_hash, formats, load
from core.ingest.common import quote
from core.ingest.detect import AUTO, detect
from core.redact import redact_frame
from core.store import Store, StoreError
from core.store.bulk import BulkBattles, BulkJudgments, BulkRowError

if TYPE_CHECKING:
    from core.stats.calibration import TauFit

EXPORT_TABLES = ("battles", "judgments")


def import_formats() -> list[str]:
    """The names ``--format`` accepts besides ``auto``: the format registry's, in detection order."""
    return formats.names()


def open_store(
    path: str | Path | None = None, read_only: bool = False, wait_s: float = 0.0, linger_s: float = 0.0
) -> Store:
    """The store at ``path`` (default ``data/arena.duckdb``); raises ``StoreError`` with the reason.

    ``wait_s``: how long to wait while another process holds the file (each
    holder keeps it for one operation, so a few seconds is usually enough);
    ``linger_s``: how long a reader keeps the file open for the next read (``Store.open``).
    """
    path = path if path is not None else DEFAULT_DB
    return Store.open(path, read_only=read_only, wait_s=wait_s, linger_s=linger_s)


def version_stamp(store: Store) -> str:
    """Changes whenever the store's data changes (every table: the widest data stamp)."""
    return store.version_token()


def version_stamps(store: Store) -> tuple[str, dict[tuple[str, str], str]]:
    """(stamp of all but judgments, {(dataset, judge): stamp of its judgments}): narrower cache keys."""
    return store.version_stamps()


def dataset_names(store: Store) -> list[str]:
    return [str(n) for n in store.datasets()["name"]]


def models_frame(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's models with their battle counts (the Leaderboard's table joins them)."""
    return store.models_frame(dataset)


def judge_names(store: Store, dataset: str) -> list[str]:
    """Judges with judgments in ``dataset``, by name."""
    return store.judge_names(dataset)


def info(store: Store) -> dict:
    """Counts per dataset (models, prompts, battles, votes, annotators, completions, judges)."""
    return store.info()


def battle_frame(store: Store, dataset: str, judge: str | None) -> pd.DataFrame:
    """One row per battle (``core.domain.BATTLE_FRAME``) with the judge's labels when a judge is given."""
    return store.battle_frame(dataset, judge)


def tau_fit(frame: pd.DataFrame) -> TauFit:
    """τ fitted on the frame's human-decisive battles with a score gap (METHODS §2)."""
    # Imported here: it brings scipy (~0.45 s), which ``python -m core import`` does not need.
    from core.stats.calibration import fit_tau

    return fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))


def tau_fit_of(store: Store, dataset: str, judge: str) -> TauFit:
    """:func:`tau_fit` of a judge's battle frame, read from the store."""
    return tau_fit(store.battle_frame(dataset, judge))


# Pages that need single battles (reliability bins, SCOPE instances) read at most this many of a judge's
# battles: a seeded uniform sample whose size the page states (METHODS' statistics are over battles, and
# 50,000 decisive ones pin a bin's agreement to about ±1%).
SAMPLE_BATTLES = 50_000

# Replays that run battle by battle in Python (online Elo in shuffled orders, TrueSkill) read at most this
# many battles: a seeded uniform sample the page states.  Online Elo with K = 4 forgets a model's history
# after a few hundred of its battles, so 200,000 battles (800 per model among 250) show the same
# order dependence as the full record, in seconds instead of minutes.
REPLAY_SAMPLE = 200_000


@dataclass(frozen=True)
class SampledFrame:
    """A judge's battle frame, or a seeded sample of it: ``n_population`` battles judged, ``len(frame)`` read."""

    frame: pd.DataFrame
    n_population: int
    seed: int = 0

    @property
    def sampled(self) -> bool:
        return len(self.frame) < self.n_population

    def statement(self) -> str | None:
        """What the page says under its charts when they rest on a sample (None: on every battle)."""
        if not self.sampled:
            return None
        return (
            f"Computed on a seeded uniform sample of {len(self.frame):,} of the judge's "
            f"{self.n_population:,} judged battles (seed {self.seed}); τ is fitted on all of them."
        )


def sample_frame(store: Store, dataset: str, judge: str, n: int = SAMPLE_BATTLES, seed: int = 0) -> SampledFrame:
    """The judge's battles for pages that need them one by one, sampled above ``n``."""
    population = store.n_judged_battles(dataset, judge)
    if population <= n:
        return SampledFrame(store.battle_frame(dataset, judge), population, seed)
    return SampledFrame(store.battle_frame(dataset, judge, sample=n, seed=seed), population, seed)


# ------------------------------------------------------------------ import
@dataclass(frozen=True)
class PreparedImport:
    """A file read and validated, not yet written: what :func:`write_import` stores in one transaction."""

    path: Path
    fmt: str
    digest: str
    tables: DatasetTables | None  # read into frames by the format's reader
    bulk: BulkBattles | BulkJudgments | None = None  # or validated in SQL, written by INSERT … SELECT


def prepare_import(
    path: str | Path,
    fmt: str,
    dataset: str | None = None,
    judge: str | None = None,
    annotator: str | None = None,
    leaderboards: str = "check",
    baseline: str | None = None,
) -> PreparedImport:
    """Read and validate ``path`` completely, touching no store (a bad file raises ``IngestError``).

    ``fmt='auto'`` recognises the layout (``core.ingest.detect``); a directory of files of one layout (MT-Bench's
    ``human`` and ``gpt4_pair`` splits) is read as one dataset."""
    path = Path(path)
    if not path.exists():
        raise IngestError(path, "file does not exist")
    if fmt == AUTO:
        fmt = detect(path)
    digest = content_hash(path)
    if annotator is not None:
        # one results/ tree holds several annotator configurations: each is its own import of the same bytes
        digest = hashlib.sha256(f"{digest}\nannotator={annotator}".encode()).hexdigest()
    if baseline is not None:  # the same judgments read against another named baseline are another import
        digest = hashlib.sha256(f"{digest}\nbaseline={baseline}".encode()).hexdigest()
    if dataset is not None:
        _check_name(path, dataset)
    plan = None if path.is_dir() else bulk_plan(path, fmt, dataset=dataset, judge=judge)
    if plan is not None:
        _check_name(path, plan.name if isinstance(plan, BulkBattles) else plan.dataset)
        return PreparedImport(path, fmt, digest, None, plan)
    tables = load(path, fmt, dataset=dataset, judge=judge, annotator=annotator, baseline=baseline)
    _check_name(path, tables.name)
    if fmt == "bundle":
        tables = _checked_bundle(path, tables, leaderboards)
    return PreparedImport(path, fmt, digest, tables)


def _check_name(path: Path, name: object) -> None:
    """A dataset name from the file, its folder, a bundle's manifest or ``--dataset``, checked as any field."""
    problem = dataset_name_problem(name)
    if problem is not None:
        raise IngestError(path, f"the dataset name {quote(name)} cannot be used: {problem}", field="dataset")


def _checked_bundle(path: Path, tables: DatasetTables, leaderboards: str) -> DatasetTables:
    """A bundle whose printed leaderboards contradict its own tables is refused (``leaderboards='check'``)
    or imported with a note saying where (``'warn'``)."""
    from core.app.bundle import LeaderboardMismatch, check_leaderboards

    if leaderboards not in ("check", "warn"):
        raise ValueError(f"leaderboards must be 'check' or 'warn', got {leaderboards!r}")
    try:
        check_leaderboards(path, tables)
    except LeaderboardMismatch as exc:
        if leaderboards == "check":
            raise IngestError(path, f"{exc}; nothing was imported (--leaderboards warn imports it anyway)") from None
        notes = [*(tables.meta or {}).get("notes", ()), f"the bundle's leaderboards contradict its tables: {exc}"]
        tables = replace(tables, meta={**(tables.meta or {}), "notes": notes})
    return tables


def write_import(store: Store, prepared: PreparedImport) -> ImportResult:
    """Write a prepared import in one transaction; content already imported (same hash) changes nothing.

    A file whose dataset exists already is added to it (``core.ingest.merge``): its new battles, votes,
    judgments and completions join the stored ones; what the dataset already holds is skipped, and a
    conflicting duplicate is an error that changes nothing."""
    previous = store.import_record(prepared.digest)
    if previous is not None:
        return ImportResult(previous, "already-imported", 0, 0, 0, 0)
    if prepared.bulk is not None:
        return _write_bulk(store, prepared, prepared.bulk)
    tables = prepared.tables
    assert tables is not None
    if tables.name in set(dataset_names(store)):
        return _add(store, prepared, tables)
    try:
        store.write_dataset(tables, content_hash=prepared.digest, fmt=prepared.fmt, source_path=str(prepared.path))
    except StoreError as exc:
        raise IngestError(prepared.path, str(exc)) from None
    return ImportResult(
        tables.name,
        "imported",
        len(tables.battles),
        _count(tables.votes),
        _count(tables.judgments),
        _count(tables.completions),
        _count(tables.grades),
        _notes(tables),
    )


def _notes(tables: DatasetTables) -> tuple[str, ...]:
    notes = (tables.meta or {}).get("notes") or ()
    return tuple(str(n) for n in notes)


def _count(df: pd.DataFrame | None) -> int:
    return 0 if df is None else len(df)


def _add(store: Store, prepared: PreparedImport, tables: DatasetTables) -> ImportResult:
    from core.ingest.merge import addition

    snapshot = store.dataset_counts(tables.name)
    add = addition(store.dataset_tables(tables.name), tables, prepared.path)
    try:
        store.add_to_dataset(
            add.tables,
            snapshot=snapshot,
            content_hash=prepared.digest,
            fmt=prepared.fmt,
            source_path=str(prepared.path),
        )
    except StoreError as exc:
        raise IngestError(prepared.path, str(exc)) from None
    t = add.tables
    return ImportResult(
        tables.name,
        "added",
        len(t.battles),
        _count(t.votes),
        _count(t.judgments),
        _count(t.completions),
        _count(t.grades),
        _notes(tables),
    )


def _write_bulk(store: Store, prepared: PreparedImport, plan: BulkBattles | BulkJudgments) -> ImportResult:
    try:
        if isinstance(plan, BulkBattles):
            if plan.name in set(dataset_names(store)):  # adding to it: the reader's frames, matched by battle id
                return _add(store, prepared, load(prepared.path, prepared.fmt, dataset=plan.name))
            store.write_bulk_battles(plan, content_hash=prepared.digest, fmt=prepared.fmt)
            return ImportResult(plan.name, "imported", plan.n_rows, plan.n_rows, 0, 0)
        store.write_bulk_judgments(plan, content_hash=prepared.digest, fmt=prepared.fmt)
        return ImportResult(plan.dataset, "imported", 0, 0, plan.n_rows, 0)
    except BulkRowError as exc:
        raise IngestError(prepared.path, str(exc), row=exc.row, field=exc.field) from None
    except StoreError as exc:
        raise IngestError(prepared.path, str(exc)) from None


def import_path(
    store: Store,
    path: str | Path,
    fmt: str,
    dataset: str | None = None,
    judge: str | None = None,
    annotator: str | None = None,
    leaderboards: str = "check",
    baseline: str | None = None,
) -> ImportResult:
    """Validate ``path`` fully, then write it in one transaction (re-importing the same content is a no-op)."""
    path = Path(path)
    if path.exists():
        previous = store.import_record(content_hash(path))
        if previous is not None:  # known content: no need to read it again
            return ImportResult(previous, "already-imported", 0, 0, 0, 0)
    return write_import(store, prepare_import(path, fmt, dataset, judge, annotator, leaderboards, baseline))


# ------------------------------------------------------------------ export
def export_table(store: Store, dataset: str, table: str, out: str | Path) -> int:
    """Write one table of a dataset ('battles' or 'judgments') to .parquet or .csv; returns the row count."""
    out = Path(out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"{out}: expected a .parquet or .csv file name")
    if table not in EXPORT_TABLES:
        raise ValueError(f"unknown table {table!r}: expected one of {', '.join(EXPORT_TABLES)}")
    df = redact_frame(store.table_frame(dataset, table))
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".parquet":
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    return len(df)


# LMArena's winner names (``chatbot_arena_conversations``) for our outcome codes
LMARENA_WINNERS = {"a": "model_a", "b": "model_b", "tie": "tie", "both_bad": "tie (bothbad)"}


def export_votes(store: Store, dataset: str, out: str | Path) -> int:
    """The human votes in LMArena's layout (one row per vote: question_id, model_a, model_b, winner, judge =
    the annotator, conversation_a/b as ``{role, content}`` lists, turn, language, tstamp = when the vote
    was cast, else the battle's time), plus ``battle_id``, ``shown_order`` and ``source``; .jsonl or .parquet.
    ``python -m core import --format lmarena`` reads it back.  Returns the row count."""
    import json

    out = Path(out)
    if out.suffix.lower() not in (".jsonl", ".parquet"):
        raise ValueError(f"{out}: expected a .jsonl or .parquet file name")
    v = store.votes_for_export(dataset)
    if v.empty:
        raise ValueError(f"dataset {dataset!r} has no human votes to export")

    def listed(stored: object, single: object) -> list:
        return json.loads(stored) if isinstance(stored, str) else [single]

    def conversation(row: Any, side: str) -> list[dict]:
        asked = listed(row.prompt_turns, row.prompt)
        said = listed(getattr(row, f"turns_{side}"), getattr(row, f"text_{side}"))
        msgs: list[dict] = []
        for k in range(max(len(asked), len(said))):
            if k < len(asked) and asked[k] is not None:
                msgs.append({"role": "user", "content": asked[k]})
            if k < len(said) and said[k] is not None:
                msgs.append({"role": "assistant", "content": said[k]})
        return msgs

    rows = list(v.itertuples(index=False))
    df = pd.DataFrame(
        {
            "question_id": [r.external_id if isinstance(r.external_id, str) else str(r.battle_id) for r in rows],
            "model_a": v["model_a"],
            "model_b": v["model_b"],
            "winner": v["winner"].map(LMARENA_WINNERS),
            "judge": v["annotator"],
            "conversation_a": [conversation(r, "a") for r in rows],
            "conversation_b": [conversation(r, "b") for r in rows],
            "turn": v["turn"].astype("Int64"),
            "anony": True,
            "language": v["language"],
            "tstamp": v["voted_at"].where(v["voted_at"].notna(), v["tstamp"]),
            "battle_id": v["battle_id"],
            "shown_order": v["shown_order"],
            "source": v["source"],
        }
    )
    df = redact_frame(df)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    if out.suffix.lower() == ".parquet":
        df.to_parquet(tmp, index=False)
    else:
        df.to_json(tmp, orient="records", lines=True, force_ascii=False)
    tmp.replace(out)
    return len(df)


# arena-rank's outcome names (``arena_rank.utils.data_utils.default_outcome_map``) for our outcome codes
ARENA_RANK_WINNERS = {"a": "model_a", "b": "model_b", "tie": "tie", "both_bad": "both_bad"}


def export_arena_rank(store: Store, dataset: str, out: str | Path, judge: str | None = None) -> int:
    """Battles in arena-rank's layout (model_a, model_b, winner ∈ model_a/model_b/tie/both_bad), one row
    per human vote, or with ``judge`` one row per battle the judge labelled (its hard label); returns rows."""
    out = Path(out)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"{out}: expected a .parquet or .csv file name")
    if judge is None:
        votes = store.votes_frame(dataset)
        if votes.empty:
            raise ValueError(f"dataset {dataset!r} has no human votes; pass --judge to export a judge's labels")
        winner = votes["winner"].map(ARENA_RANK_WINNERS)
        df = pd.DataFrame({"model_a": votes["model_a"], "model_b": votes["model_b"], "winner": winner})
        df["annotator"] = votes["annotator"]
        df["battle_id"] = votes["battle_id"]
    else:
        frame = store.battle_frame(dataset, judge)
        labelled = frame[frame["judge_hard"].notna()]
        if labelled.empty:
            raise ValueError(f"judge {judge!r} has no usable labels in dataset {dataset!r}")
        code = outcome_of_target(labelled["judge_hard"].to_numpy(float))
        df = pd.DataFrame(
            {
                "model_a": labelled["model_a"].to_numpy(),
                "model_b": labelled["model_b"].to_numpy(),
                "winner": pd.Series(code).map(ARENA_RANK_WINNERS).to_numpy(),
                "judge": judge,
                "battle_id": labelled["battle_id"].to_numpy(),
            }
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".parquet":
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    return len(df)


# -------------------------------------------------------------------- demo
@dataclass(frozen=True)
class DemoBuilt:
    dataset: str
    n_models: int
    n_battles: int
    n_judgments: int


def build_demo(
    store: Store, seed: int = 0, dataset: str = "demo", small: bool = False, replace: bool = False
) -> DemoBuilt:
    """Simulate the seeded demo arena (with stored ground truth) into ``store``."""
    from core.simulate import DemoConfig, simulate_arena

    if dataset in set(dataset_names(store)) and not replace:
        raise StoreError(f"dataset {dataset!r} already exists in {store.path}; pass --replace to rebuild it")
    tables = simulate_arena(seed, DemoConfig.small() if small else None)
    tables.name = dataset
    store.write_dataset(tables, replace=replace)
    return DemoBuilt(
        dataset, len(tables.models), len(tables.battles), 0 if tables.judgments is None else len(tables.judgments)
    )
