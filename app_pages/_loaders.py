"""Cached loaders: cached on their arguments and on the store's data version, so new data invalidates them
and sliders never enter the keys of the expensive steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from app_pages._registry import page_needs
from app_pages._selection import selection
from app_pages._store import _Behind, read_lagged, read_persisted, reading, result_token, store_state
from core.app import StoreLockedError
from core.app import availability as app_availability
from core.app import data as app_data
from core.app import leaderboard as app_leaderboard
from core.app import persist as app_persist
from core.app import results as app_results

T = TypeVar("T")


@st.cache_data(show_spinner=False)
def dataset_options(token: str) -> list[str]:
    with reading() as store:
        return app_data.dataset_names(store)


@st.cache_data(show_spinner=False)
def judge_options(dataset: str, token: str) -> list[str]:
    with reading() as store:
        return app_data.judge_names(store, dataset)


def load_result(fn: Callable[..., T], *args: Any, progress: str | None = None, **kwargs: Any) -> T:
    """The page result ``fn(store, *args, **kwargs)``: persisted in the store and cached in this server under the
    key its declaration gives (``core.app.results``): the one way a page reads a kept result.

    ``progress``: a progress bar's text while it is computed (the use case reports its steps).
    """
    token = result_token(fn, args)
    return _load_result(app_results.name_of(fn), args, tuple(sorted(kwargs.items())), progress, token)


@st.cache_data(show_spinner=False, max_entries=512)
def _load_result(name: str, args: tuple, kwargs: tuple, progress: str | None, token: str) -> Any:
    """:func:`load_result`'s cache (``token`` is its key: the declared scope's data version)."""
    fn = app_results.by_name(name).fn
    if progress is None:
        return read_persisted(fn, *args, token=result_token(fn, args), **dict(kwargs))
    bar, report = progress_callback(progress)
    try:
        return read_persisted(fn, *args, token=result_token(fn, args), progress=report, **dict(kwargs))
    finally:
        bar.empty()


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
    if store_state().token is None or sel.dataset is None:
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


# ================================================================== loaders
# Cached on (dataset, judge, token): token changes with the data, so a new
# judge run or import is picked up; sliders never enter these keys.
@st.cache_data(show_spinner=False)
def load_frame(dataset: str, judge: str | None, token: str) -> pd.DataFrame:
    with reading() as store:
        return app_data.battle_frame(store, dataset, judge)


def load_sample(dataset: str, judge: str) -> app_data.SampledFrame:
    """The judge's battles one by one (a stated seeded sample on large arenas): Calibration, Selective judging."""
    return load_result(app_data.sample_frame, dataset, judge)


def load_tau(dataset: str, judge: str) -> Any:
    return load_result(app_data.tau_fit_of, dataset, judge)


HELDOUT_PROGRESS = "Leave-one-model-out fits (kept once computed): held-out model"


def load_heldout(dataset: str, judge: str, all_methods: bool = False) -> Any:
    return load_result(app_leaderboard.heldout_of, dataset, judge, all_methods, progress=HELDOUT_PROGRESS)


@st.cache_data(show_spinner=False, max_entries=32)
def _current_heldout(args: tuple, token: str) -> app_persist.Lagged:
    bar, progress = progress_callback(HELDOUT_PROGRESS)
    try:
        fn = app_leaderboard.heldout_of
        lagged = read_lagged(fn, *args, token=result_token(fn, args), progress=progress)
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
        return _current_heldout(args, result_token(app_leaderboard.heldout_of, args))
    except _Behind as behind:
        return behind.lagged


def load_slices(dataset: str) -> pd.DataFrame:
    """The dataset's slices (key, value, battles, votes, enough) for the slice picker."""
    return load_result(app_leaderboard.slice_values, dataset)
