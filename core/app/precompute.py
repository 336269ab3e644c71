"""Compute every page's expensive results once, after an import or a judge run, and keep them in the store.

The jobs are the pages' own calls (same function, same arguments, same data
stamp), so a page that finds its result persisted computes nothing: the
browser test of the persisted pages and ``tests/test_precompute.py`` check
that the two lists agree.  ``python -m core precompute`` runs them with a
progress line; the dashboard starts it in the background when the data
changed and shows its progress.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from core.app import (
    Unavailable,
    analyses,
    availability,
    bias,
    judges,
    leaderboard,
    overview,
    persist,
    results,
    selective,
)
from core.app import data as app_data
from core.app.persist import Stamps
from core.methods import SCOPE_SOURCES
from core.store import Store, StoreError, waits
from core.store.ondemand import OnDemandStore

# The pages' defaults, shared so that what is precomputed is what they ask for.
AMELO_MIN_RECORDS = 50
SHUFFLES = 50
AGG_SHUFFLES = 30
SCOPE_SPLITS = 300

# A judge with at most this many judged battles gets the Leaderboard's τ slider precomputed at every grid point
# (about 0.5 s a point on the 30,000-battle demo); above it a point is computed on first use, then persisted.
TAU_GRID_MAX_BATTLES = 200_000

# A page gives up persisting after a second (its visitor has the result); a precompute job exists to persist,
# so it waits out the other worker's reads and a judge run's merges.
SAVE_WAIT_S = waits.PRECOMPUTE_SAVE.seconds

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class Job:
    """One page result: ``fn(store, *args, **kwargs)`` at data ``stamp``.

    ``args`` may be a function of the open store giving the arguments (or
    None: nothing to compute), for a call whose arguments are another
    result (Soft-Elo at the fitted τ; consistency against the judges' Elo).
    """

    label: str
    fn: Callable[..., Any]
    args: tuple | Callable[[Store], tuple | None]
    stamp: str
    dataset: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    lane: str = ""  # jobs of one lane run in order, in one worker (they read each other's results or one frame)
    # ``fn(store, *args, db=…)`` persists its own results (several at once) and returns how many it computed
    saves_itself: bool = False
    phase: int = 0  # a phase runs after every lane of the phases before it (it may read their results)
    judge: str | None = None  # the judge of a judge's job (its stamp's scope, when ``args`` is computed later)


def jobs(store: Store, dataset: str | None = None) -> list[Job]:
    """What the pages will ask for, most visited first (Overview, Leaderboard), per dataset and judge."""
    stamps = Stamps.of(store)
    out: list[Job] = []
    names = [dataset] if dataset else app_data.dataset_names(store)
    for ds in names:
        judge_names = app_data.judge_names(store, ds)
        everything = stamps.everything()  # what the arguments computed from other results are read at
        own = [  # quick ones, each its own lane
            Job(f"{ds}: what the sidebar says", availability.dataset_facts, (ds, None), "", ds),
            *(
                Job(f"{ds}/{j}: what the sidebar says", availability.dataset_facts, (ds, j), "", ds)
                for j in judge_names
            ),
            Job(f"{ds}: overview", overview.overview, (ds,), "", ds),
            Job(f"{ds}: human Elo", leaderboard.human_ratings, (ds,), "", ds),
            Job(f"{ds}: head-to-head fit (human)", leaderboard.pair_model, (ds, "human", None, None), "", ds),
            Job(f"{ds}: human Elo by turn", leaderboard.ratings_by_turn, (ds, "human", None), "", ds),
            Job(f"{ds}: the slices battles carry", leaderboard.slice_values, (ds,), "", ds),
        ]
        out += [replace(job, lane=job.label) for job in own]
        if judge_names:  # read by every judge's bias report: first, so that they are there when it runs
            lane = f"{ds}: bias inputs"
            out += [
                Job(f"{ds}: judges' Elo on hard labels", bias.judges_hard_elo, (ds,), "", ds, lane=lane),
                Job(f"{ds}: self-preference", bias.judges_self_preference, (ds,), "", ds, lane=lane),
            ]
        # One judge's jobs in one lane: they read the same battle frame, which the worker keeps for them.
        for j in judge_names:
            js = stamps.judge(ds, j)
            judge_jobs = [
                Job(f"{ds}/{j}: τ fit", app_data.tau_fit_of, (ds, j), "", ds),
                Job(f"{ds}/{j}: coverage", leaderboard.judge_coverage, (ds, j), "", ds),
                Job(f"{ds}/{j}: Hard-Elo", leaderboard.judge_elo_of, (ds, j, "hard", None), "", ds),
                Job(f"{ds}/{j}: Soft-Elo at the fitted τ", leaderboard.judge_elo_of, _soft_args(ds, j, js), "", ds),
                Job(f"{ds}/{j}: head-to-head fit (hard)", leaderboard.pair_model, (ds, "hard", j, None), "", ds),
                Job(f"{ds}/{j}: Hard-Elo by turn", leaderboard.ratings_by_turn, (ds, "hard", j), "", ds),
                Job(
                    f"{ds}/{j}: head-to-head fit (soft)",
                    leaderboard.pair_model,
                    _soft_args(ds, j, js, pair_model=True),
                    "",
                    ds,
                ),
                Job(f"{ds}/{j}: leave-one-model-out", leaderboard.heldout_of, (ds, j, False), "", ds),
                Job(f"{ds}/{j}: leave-one-model-out, all methods", leaderboard.heldout_of, (ds, j, True), "", ds),
                Job(f"{ds}/{j}: bias", bias.bias_report, (ds, j), "", ds),
                Job(f"{ds}/{j}: agreement with the human votes", judges.human_agreement, (ds, j), "", ds),
                Job(f"{ds}/{j}: accuracy alignment", analyses.alignment, (ds, j), "", ds),
                Job(f"{ds}/{j}: aggregation", analyses.aggregation, (ds, j), "", ds, {"n_shuffles": AGG_SHUFFLES}),
                Job(f"{ds}/{j}: languages", analyses.languages, (ds, j), "", ds),
                Job(f"{ds}/{j}: battle sample", app_data.sample_frame, (ds, j), "", ds),
                *(
                    Job(
                        f"{ds}/{j}: SCOPE curves ({src})",
                        selective.scope_curves_of,
                        _scope_args(ds, j, src, js),
                        "",
                        ds,
                    )
                    for src in SCOPE_SOURCES
                ),
                *(
                    Job(
                        f"{ds}/{j}: SCOPE at α = {selective.DEFAULT_ALPHA:g} ({src})",
                        selective.scope_at_alpha_of,
                        _scope_args(ds, j, src, js, at_alpha=True),
                        "",
                        ds,
                    )
                    for src in SCOPE_SOURCES
                ),
            ]
            out += [replace(job, lane=f"{ds}/{j}", judge=j) for job in judge_jobs]
        elo_lane = f"{ds}: judges' arena Elo"
        out += [
            Job(elo_lane, judges.judge_arena_elo, (ds,), "", ds, lane=elo_lane),
            Job(
                f"{ds}: judge consistency",
                judges.consistency_study,
                _consistency_args(ds, everything),
                "",
                ds,
                lane=elo_lane,
            ),
            Job(f"{ds}: vote counts", judges.vote_counts, (ds,), "", ds, lane=f"{ds}: am-ELO"),
            Job(f"{ds}: am-ELO", judges.annotator_abilities, (ds, AMELO_MIN_RECORDS), "", ds, lane=f"{ds}: am-ELO"),
            Job(f"{ds}: online-Elo shuffles", judges.shuffle_study, (ds, SHUFFLES), "", ds, lane=f"{ds}: shuffles"),
        ]
        if judge_names:  # after the judges' leave-one-model-out tables, which it reads
            out.append(Job(f"{ds}: default judge", leaderboard.default_judge, (ds,), "", ds, phase=1))
        for j in judge_names:
            if store.n_judged_battles(ds, j) <= TAU_GRID_MAX_BATTLES:
                out += _tau_grid_jobs(ds, j, stamps.judge(ds, j))
    return [_stamped(job, stamps) for job in out]


def _stamped(job: Job, stamps: Stamps) -> Job:
    """A job with its data stamp from the declared scope of its result (``core.app.results``): the key a page
    reading the same result looks up.  A job that persists several results itself keeps its own."""
    if job.saves_itself:
        return job
    declared = results.of(job.fn)
    args = job.args if isinstance(job.args, tuple) else None
    at = declared.stamp(stamps, args) if args is not None else declared.stamp_for(stamps, job.dataset, job.judge)
    return replace(job, stamp=at)


_result = persist.load_or_compute  # a result persisted by an earlier job (else computed, not persisted)


def _tau_grid_jobs(dataset: str, judge: str, stamp: str) -> list[Job]:
    """What the Leaderboard computes when τ leaves the fitted value, at every point of its slider's grid.

    At a τ the user chose, the intervals need the leave-one-model-out table
    with τ held at that value in every fold (METHODS §10), so a step of the
    slider is a fit; with the grid's points persisted, every step reads.  One
    job per judge: the points share the judge's battle frame and are written
    together.
    """
    label = f"{dataset}/{judge}: the τ slider's {len(leaderboard.tau_grid(None))} points"
    return [
        Job(
            label,
            _tau_grid,
            _if_scored(dataset, judge, stamp, (dataset, judge, stamp)),
            stamp,
            dataset,
            lane=label,
            phase=2,
            saves_itself=True,
            judge=judge,
        )
    ]


def tau_grid_calls(dataset: str, judge: str) -> list[tuple[Callable[..., Any], tuple]]:
    """The page's calls at each grid τ (the keys the Leaderboard looks up): Soft-Elo, the leave-one-model-out
    table with τ fixed, the head-to-head fit."""
    calls: list[tuple[Callable[..., Any], tuple]] = []
    for tau in leaderboard.tau_grid(None):
        t = round(tau, 4)
        calls += [
            (leaderboard.judge_elo_of, (dataset, judge, "soft", t)),
            (leaderboard.heldout_of, (dataset, judge, False, t)),
            (leaderboard.pair_model, (dataset, "soft", judge, t)),
        ]
    return calls


def _tau_grid(store: Store, dataset: str, judge: str, stamp: str, *, db: str | Path) -> int:
    """Compute the grid's results not persisted yet and persist them in one write; how many were computed."""
    kept = store.results_frame()
    have = set(zip(kept["key"], kept["stamp"], kept["code_version"]))
    items = []
    for fn, args in tau_grid_calls(dataset, judge):
        at = persist.lookup(fn, args, {}, stamp)
        if at is None or (at.key, at.stamp, at.code) in have:
            continue
        start = time.perf_counter()
        items.append((at, fn(store, *args), dataset, time.perf_counter() - start))
    if items and not persist.save_many(db, items, SAVE_WAIT_S):
        raise StoreError(f"{len(items)} τ-grid results computed but not persisted (the store stayed held)")
    return len(items)


def _if_scored(dataset: str, judge: str, stamp: str, args: tuple) -> Callable[[Store], tuple | None]:
    """``args`` when the judge gave rubric scores and humans voted (Soft-Elo's τ and its intervals need both)."""

    def given(store: Store) -> tuple | None:
        cover = _result(store, leaderboard.judge_coverage, (dataset, judge), stamp)
        return args if cover.has_gap and cover.has_votes else None

    return given


def _soft_args(dataset: str, judge: str, stamp: str, pair_model: bool = False) -> Callable[[Store], tuple | None]:
    """The Leaderboard's Soft-Elo call at the fitted τ (rounded as the page rounds it): Soft-Elo, or with
    ``pair_model`` the head-to-head fit."""

    def args(store: Store) -> tuple | None:
        fit = _result(store, app_data.tau_fit_of, (dataset, judge), stamp)
        if fit.tau is None or not _result(store, leaderboard.judge_coverage, (dataset, judge), stamp).has_gap:
            return None
        tau = round(float(fit.tau), 4)
        return (dataset, "soft", judge, tau) if pair_model else (dataset, judge, "soft", tau)

    return args


def _scope_args(
    dataset: str, judge: str, source: str, stamp: str, at_alpha: bool = False
) -> Callable[[Store], tuple | None]:
    """The Selective judging page's curves for ``source`` (or, ``at_alpha``, its statement at the slider's first
    position) when the judge's battles offer it."""

    def args(store: Store) -> tuple | None:
        sample = _result(store, app_data.sample_frame, (dataset, judge), stamp)
        if source not in selective.scope_sources(sample.frame):
            return None
        if at_alpha:
            return (dataset, judge, source, selective.DEFAULT_ALPHA)
        return (dataset, judge, source, tuple(selective.DEFAULT_ALPHAS), SCOPE_SPLITS)

    return args


def _consistency_args(dataset: str, stamp: str) -> Callable[[Store], tuple]:
    """The Judges page's consistency call: against the judges' own Elo when the store knows it."""

    def args(store: Store) -> tuple:
        known = _result(store, judges.judge_arena_elo, (dataset,), stamp)
        return (dataset, None if isinstance(known, Unavailable) else known[0])

    return args


@dataclass
class Progress:
    """Where a precompute run is: written to ``<store>.precompute.json`` for the dashboard to show."""

    done: int = 0
    total: int = 0
    started_jobs: int = 0
    current: str = ""
    computed: int = 0
    already: int = 0
    failed: list[str] = field(default_factory=list)
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    error: str | None = None  # why the run stopped before its end (a signal, an unexpected error)
    stamp: str | None = None  # the data it computed for (persist.Stamps.everything() at its start)


def progress_path(db: str | Path) -> Path:
    return Path(str(db) + ".precompute.json")


def log_path(db: str | Path) -> Path:
    """The background precompute's output (its errors included), beside the store, readable by its owner only."""
    return Path(str(db) + ".precompute.log")


def read_progress(db: str | Path) -> Progress | None:
    """The last (or running) precompute's progress; None when there is none."""
    try:
        return Progress(**json.loads(progress_path(db).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def running(db: str | Path) -> bool:
    """Whether a precompute of this store is under way (its process is alive and has not finished).

    A process that exited (a zombie its parent has not reaped yet, or a pid now used by another process) is not
    running: its progress file would otherwise say "computing 79 of 93" for ever."""
    from core.store.journal import process_alive

    p = read_progress(db)
    if p is None or p.finished is not None:
        return False
    return process_alive(p.pid, None) is not False


def done_for(db: str | Path, stamp: str) -> bool:
    """Whether a precompute of every dataset finished for exactly this data (nothing new to compute since)."""
    p = read_progress(db)
    return p is not None and p.finished is not None and p.error is None and p.stamp == stamp


def needed(db: str | Path) -> bool:
    """Whether a background precompute should start now: none is running, and none finished for the store's
    current data (a server that starts on a store computed before starts none)."""
    if running(db):
        return False
    try:
        store = cast(Store, OnDemandStore(db, wait_s=waits.PRECOMPUTE_CHECK.seconds))
        stamp = persist.Stamps.of(store).everything()
    except StoreError:
        return False
    return not done_for(db, stamp)


def stopped(db: str | Path) -> str | None:
    """Why the last precompute of this store stopped before its end; None when it finished or is running."""
    p = read_progress(db)
    if p is None:
        return None
    if p.error is not None:
        return p.error
    if p.finished is None and not running(db):
        return f"its process ended before it finished (see {log_path(db).name} beside the store)"
    return None


_children: list[Any] = []  # background precomputes this process started, reaped by their own threads


def start_in_background(db: str | Path, nice: int = 10) -> None:
    """``python -m core precompute --db DB`` as a detached process at lower CPU priority, its output (errors
    included) kept in :func:`log_path`; reaped when it ends, so it never lingers as a zombie."""
    import subprocess
    import sys
    import threading

    from core.datahome import REPO_ROOT

    log = log_path(db)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.chmod(log, 0o600)  # an existing file keeps its old mode through O_CREAT
    with os.fdopen(fd, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "core", "precompute", "--db", str(db), "--nice", str(nice)],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children.append(proc)
    threading.Thread(target=_reap, args=(proc,), name=f"precompute-reaper-{proc.pid}", daemon=True).start()


def _reap(proc: Any) -> None:
    proc.wait()
    with contextlib.suppress(ValueError):
        _children.remove(proc)


def _write_progress(db: str | Path, p: Progress) -> None:
    tmp = progress_path(db).with_suffix(".tmp")
    tmp.write_text(json.dumps(p.__dict__))
    os.replace(tmp, progress_path(db))


def default_workers() -> int:
    """Worker processes for a precompute: the machine's cores, at most two (each holds one battle frame)."""
    return max(1, min(2, os.cpu_count() or 1))


def run(
    db: str | Path,
    dataset: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    workers: int = 1,
) -> Progress:
    """Compute and persist every job not persisted yet at the current data stamps.

    Phase by phase; ``workers`` > 1 runs a phase's lanes (one judge's jobs,
    each dataset-level result, one judge's τ grid) in that many processes.
    """
    # The store is held only while each query runs: a minute of fitting never blocks an import or a judge run.
    store = cast(Store, OnDemandStore(db, wait_s=waits.WORKER.seconds, keep_frame=True))
    p = Progress()
    _write_progress(db, p)
    try:
        p.stamp = persist.Stamps.of(store).everything() if dataset is None else None
        todo = jobs(store, dataset)
        p.total = len(todo)
        _write_progress(db, p)
        for phase in sorted({job.phase for job in todo}):
            batch = [job for job in todo if job.phase == phase]
            lanes = list(dict.fromkeys(job.lane for job in batch))
            if workers > 1 and len(lanes) > 1:
                _run_lanes(db, dataset, lanes, phase, min(workers, len(lanes)), p, on_progress)
                continue
            for job in batch:
                _started(db, p, job.label, on_progress)
                outcome, failure = _run_job(db, store, job)
                _finished(p, outcome, failure)
    except BaseException as exc:  # said where the dashboard looks, whatever stopped it (a signal included)
        stop_workers()
        p.error = stop_reason(exc)
        p.current, p.finished = "", time.time()
        _write_progress(db, p)
        raise
    p.current, p.finished = "", time.time()
    _write_progress(db, p)
    if on_progress:
        on_progress(p)
    return p


class Stopped(BaseException):
    """A signal asked the precompute to stop (see ``core.commands.precompute``)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stop_reason(exc: BaseException) -> str:
    import signal

    from core import redact

    if isinstance(exc, Stopped):
        return f"stopped by {signal.Signals(exc.signum).name}"
    if isinstance(exc, KeyboardInterrupt):
        return "stopped by SIGINT"
    return redact.clip(f"{type(exc).__name__}: {exc}", 300)


def stop_workers() -> None:
    """End this process's worker processes (the lanes' pool and its manager) now, rather than after their lane:
    a stopped precompute leaves nothing running behind it."""
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(timeout=5)
        if child.is_alive():
            child.kill()


def _run_job(db: str | Path, store: Store, job: Job) -> tuple[str, str | None]:
    """("computed" | "already", failure or None) for one job: computed and persisted unless it is there."""
    try:
        args = job.args(store) if callable(job.args) else job.args
        if job.saves_itself:
            computed = 0 if args is None else job.fn(store, *args, db=db, **job.kwargs)
            return ("computed" if computed else "already"), None
        at = None if args is None else persist.lookup(job.fn, args, job.kwargs, job.stamp)
        if args is None or (at is not None and persist.load(store, at)[0]):
            return "already", None
        start = time.perf_counter()
        value = job.fn(store, *args, **job.kwargs)
        if at is not None and not persist.save(db, at, value, job.dataset, time.perf_counter() - start, SAVE_WAIT_S):
            return "failed", f"{job.label}: computed but not persisted (the store stayed held for {SAVE_WAIT_S:.0f} s)"
        return "computed", None
    except StoreError as exc:
        return "failed", f"{job.label}: {exc}"


def _started(db: str | Path, p: Progress, label: str, on_progress: Callable[[Progress], None] | None) -> None:
    p.started_jobs += 1
    p.current = label
    _write_progress(db, p)
    if on_progress:
        on_progress(p)


def _finished(p: Progress, outcome: str, failure: str | None) -> None:
    if failure is not None:
        p.failed.append(failure)
    elif outcome == "computed":
        p.computed += 1
    else:
        p.already += 1
    p.done += 1


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Processes started inside get one BLAS thread each, unless the environment says otherwise.

    With a thread per core in each worker, their Newton solves spin against each
    other and a lane runs three times slower than alone (measured on 2 cores).
    """
    unset = [name for name in BLAS_THREADS if name not in os.environ]
    os.environ.update(dict.fromkeys(unset, "1"))
    try:
        yield
    finally:
        for name in unset:
            os.environ.pop(name, None)


def _run_lanes(
    db: str | Path,
    dataset: str | None,
    lanes: list[str],
    phase: int,
    workers: int,
    p: Progress,
    on_progress: Callable[[Progress], None] | None,
) -> None:
    """One phase in ``workers`` processes, a lane per task, in the order of ``lanes``; progress from their events."""
    import multiprocessing
    import queue
    from concurrent.futures import ProcessPoolExecutor

    # spawn: a fork would copy this process's DuckDB threads and locks into the workers
    context = multiprocessing.get_context("spawn")
    with _one_blas_thread(), context.Manager() as manager, ProcessPoolExecutor(workers, mp_context=context) as pool:
        try:
            events = manager.Queue()
            futures = [pool.submit(_run_lane, str(db), dataset, lane, phase, events) for lane in lanes]
            while True:
                try:
                    event = events.get(timeout=0.5)
                except queue.Empty:
                    if all(f.done() for f in futures):
                        break
                    continue
                if event[0] == "start":
                    _started(db, p, event[1], on_progress)
                else:
                    _finished(p, event[1], event[2])
                    _write_progress(db, p)
            for f in futures:
                f.result()  # a worker's unexpected error is this run's
        except BaseException:
            # before the pool's exit, which would wait for every lane to finish its jobs
            stop_workers()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _run_lane(db: str, dataset: str | None, lane: str, phase: int, events: Any) -> None:
    """A worker: the jobs of one lane (from its own reading of the job list), in order, reported as events."""
    store = cast(Store, OnDemandStore(db, wait_s=waits.WORKER.seconds, keep_frame=True))
    for job in jobs(store, dataset):
        if job.lane == lane and job.phase == phase:
            events.put(("start", job.label))
            outcome, failure = _run_job(db, store, job)
            events.put(("done", outcome, failure))
