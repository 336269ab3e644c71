"""The store handle: every query and write mixin on one connection."""

from __future__ import annotations

from core.store.bulk import BulkWrites
from core.store.datasets import DatasetWrites
from core.store.evaluations import EvaluationStore
from core.store.generation import GenerationStore
from core.store.judging import JudgingStore
from core.store.queries import Queries
from core.store.results import ResultsStore
from core.store.votes import VoteStore


class Store(
    VoteStore, Queries, DatasetWrites, BulkWrites, JudgingStore, ResultsStore, GenerationStore, EvaluationStore
):
    """A handle on one DuckDB battle store: ``Store.open(path)``; use it as a context manager."""
