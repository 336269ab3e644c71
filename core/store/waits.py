"""How long each kind of caller waits for a store another process holds: one named wait per kind of access.

DuckDB admits one writing process at a time, and a reader only while no other process writes, so every caller
opens the store for one operation and closes it (``core.store.base``), and ``Store.open(wait_s=…)`` retries
while another process holds it.  How long to retry is a question of who is waiting — a visitor looking at a
page, an annotator's vote, a command at a terminal, a worker in the background — so it is answered here, once
per kind, and every open in the code names its kind (``tests/test_store_waits.py`` checks that no open
carries a number of its own).  The module imports nothing: pages, use cases, workers and commands all read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wait:
    """A kind of store access and how long it waits for its turn (seconds) before it gives up."""

    name: str
    seconds: float
    why: str


# interactive: a person is waiting, so a short wait, then the page or the vote says the store is busy
PROBE = Wait("probe", 0.5, "the page's check of the data version on every run: never worth a visible pause")
PAGE = Wait("page", 5.0, "a page's read (each hold is one query): past it the page says which process holds it")
VOTE = Wait("vote", 10.0, "an annotator's vote: past it the vote stays in the session and is sent again")
PERSIST = Wait("persist", 1.0, "keeping a result a page computed: best effort, its visitor already has it")
# at a terminal or in the background: a judge run's merge or an import may hold the store for a while
COMMAND = Wait("command", 30.0, "`python -m core …`: a person at a terminal, who is told what holds the store")
RUN = Wait("run", 30.0, "a judge run's start and end (its judgments go through its journal meanwhile)")
WORKER = Wait("worker", 30.0, "a background computation (precompute, evaluation) reading one query at a time")
BATCH = Wait("batch", 10.0, "batch-mode bookkeeping between polls of the provider: the next poll retries")
PAID_WORK = Wait("paid work", 60.0, "a step of generating answers or evaluating a model, paid calls behind it")
PRECOMPUTE_CHECK = Wait("precompute check", 5.0, "whether a background precompute is needed, at server start")
PRECOMPUTE_SAVE = Wait("precompute save", 120.0, "a precompute job's result: the job exists to persist it")

ALL: tuple[Wait, ...] = (
    PROBE,
    PAGE,
    VOTE,
    PERSIST,
    COMMAND,
    RUN,
    WORKER,
    BATCH,
    PAID_WORK,
    PRECOMPUTE_CHECK,
    PRECOMPUTE_SAVE,
)
