"""The pages' generic loaders: every page result is read through :func:`load_result` (kept in the store) or
:func:`compute` (cached in the server alone), keyed on its declaration (``core.app.results``): its name, its
arguments and its declared scope's data stamp, so new data invalidates it and no page picks a key by hand.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from app_pages._registry import page_needs
from app_pages._selection import selection
from app_pages._store import _Behind, read_lagged, read_persisted, read_store, result_stamp, store_state
from core.app import StoreLockedError
from core.app import availability as app_availability
from core.app import data as app_data
from core.app import leaderboard as app_leaderboard
from core.app import persist as app_persist
from core.app import results as app_results

T = TypeVar("T")


def load_result(fn: Callable[..., T], *args: Any, progress: str | None = None, **kwargs: Any) -> T:
    """The page result ``fn(store, *args, **kwargs)``: persisted in the store and cached in this server under the
    key its declaration gives (``core.app.results``): the one way a page reads a kept result.

    ``progress``: a progress bar's text while it is computed (the use case reports its steps).
    """
    if not app_results.of(fn).kept:
        raise app_results.UndeclaredResult(f"{app_results.name_of(fn)} is server-only: read it with compute")
    stamp = result_stamp(fn, args)
    return _load_result(app_results.name_of(fn), args, tuple(sorted(kwargs.items())), stamp, progress)


@st.cache_data(show_spinner=False, max_entries=512)
def _load_result(name: str, args: tuple, kwargs: tuple, stamp: str, _progress: str | None) -> Any:
    """:func:`load_result`'s cache (``stamp`` is its key: the declared scope's data stamp; the progress text
    is not, so a read without a bar finds the result a read with one cached)."""
    fn = app_results.by_name(name).fn
    if _progress is None:
        return read_persisted(fn, *args, stamp=stamp, **dict(kwargs))
    bar, report = progress_callback(_progress)
    try:
        return read_persisted(fn, *args, stamp=stamp, progress=report, **dict(kwargs))
    finally:
        bar.empty()


def compute(fn: Callable[..., T], *args: Any, spinner: str | None = None, **unkeyed: Any) -> T:
    """The server-only page result ``fn(store, *args)`` (``fn(read, *args)`` when it is derived from other
    results): cached in this server, never in the store, under the key its declaration gives — its name, its
    arguments and its declared scope's data stamp, as :func:`load_result`'s.

    ``spinner``: a spinner's text while it is computed.  ``unkeyed``: keyword arguments the key leaves out,
    for a value too large to hash that an argument already identifies (the Leaderboard's held-out table, by its
    data stamp).
    """
    declared = app_results.of(fn)
    if declared.kept:
        raise app_results.UndeclaredResult(f"{declared.name} is kept in the store: read it with load_result")
    # a spinner is transient: on a cache hit (under its half-second delay) nothing is drawn
    with st.spinner(spinner) if spinner else contextlib.nullcontext():
        return _compute(declared.name, args, result_stamp(fn, args), unkeyed)


@st.cache_data(show_spinner=False, max_entries=1024)
def _compute(name: str, args: tuple, stamp: str, _unkeyed: dict[str, Any]) -> Any:
    """:func:`compute`'s cache (``stamp`` is its key: the declared scope's data stamp)."""
    declared = app_results.by_name(name)
    if declared.from_results:
        return declared.fn(read, *args, **_unkeyed)
    return read_store(declared.fn, *args, **_unkeyed)


def read(fn: Callable[..., T], *args: Any) -> T:
    """A declared result as the pages keep it: kept ones through :func:`load_result`, the others through
    :func:`compute` (what a derived result reads its inputs with)."""
    return load_result(fn, *args) if app_results.of(fn).kept else compute(fn, *args)


def dataset_options() -> list[str]:
    return compute(app_data.dataset_names)


def judge_options(dataset: str) -> list[str]:
    return compute(app_data.judge_names, dataset)


def default_judge(dataset: str) -> tuple[str, str] | None:
    """The judge whose Elo best predicts human Elo (the Leaderboard's choice when the URL names none)."""
    with st.spinner("Choosing the judge whose Elo best predicts human Elo…"):
        return load_result(app_leaderboard.default_judge, dataset)


def dataset_facts(dataset: str, judge: str | None) -> app_availability.DatasetFacts:
    # counts over every table: a second on an LMArena-size store, so kept like the pages' results
    return load_result(app_availability.dataset_facts, dataset, judge)


def unavailable_pages() -> dict[str, str]:
    """Page key → why it cannot run on the selected dataset (for the navigation and the sidebar)."""
    sel = selection()
    if store_state().stamp is None or sel.dataset is None:
        return {}
    try:
        return app_availability.unavailable_pages(dataset_facts(sel.dataset, sel.judge), page_needs())
    except StoreLockedError:
        return {}


def progress_callback(text: str) -> tuple[Any, Callable[[int, int], None]]:
    """A progress bar and the ``progress(done, total)`` callback the use cases accept."""
    bar = st.progress(0.0, text=text)

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=f"{text} {done}/{total}")

    return bar, progress


def load_sample(dataset: str, judge: str) -> app_data.SampledFrame:
    """The judge's battles one by one (a stated seeded sample on large arenas): Calibration, Selective judging."""
    return load_result(app_data.sample_frame, dataset, judge)


def load_tau(dataset: str, judge: str) -> Any:
    return load_result(app_data.tau_fit_of, dataset, judge)


HELDOUT_PROGRESS = "Leave-one-model-out fits (kept once computed): held-out model"


def load_heldout(dataset: str, judge: str, all_methods: bool = False) -> Any:
    return load_result(app_leaderboard.heldout_of, dataset, judge, all_methods, progress=HELDOUT_PROGRESS)


@st.cache_data(show_spinner=False, max_entries=32)
def _current_heldout(args: tuple, stamp: str) -> app_persist.Lagged:
    """:func:`load_heldout_lagged`'s cache of current tables (``stamp``: the declared scope's data stamp)."""
    bar, progress = progress_callback(HELDOUT_PROGRESS)
    try:
        lagged = read_lagged(app_leaderboard.heldout_of, *args, stamp=stamp, progress=progress)
    finally:
        bar.empty()
    if not lagged.current:
        raise _Behind(lagged)
    return lagged


def load_heldout_lagged(dataset: str, judge: str, tau: float | None) -> app_persist.Lagged:
    """The Leaderboard's leave-one-model-out table (τ refitted per fold when ``tau`` is None, else held at
    ``tau``).  During a voting round it may come from before the newest votes, said so by ``current`` and
    ``votes_behind``, while the current table is computed in the background: a visitor never waits for it."""
    # the arguments the precompute keys its results with (core.app.precompute.jobs)
    args = (dataset, judge, False) if tau is None else (dataset, judge, False, tau)
    try:
        return _current_heldout(args, result_stamp(app_leaderboard.heldout_of, args))
    except _Behind as behind:
        return behind.lagged


def load_slices(dataset: str) -> pd.DataFrame:
    """The dataset's slices (key, value, battles, votes, enough) for the slice picker."""
    return load_result(app_leaderboard.slice_values, dataset)
