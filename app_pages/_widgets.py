"""What every page draws the same way: notices, the page guard and context, charts, tables, downloads, the τ
slider.
"""

from __future__ import annotations

import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from app_pages._loaders import dataset_facts, load_slices, unavailable_pages
from app_pages._registry import page_needs, page_title
from app_pages._selection import selection, sync_url, update
from app_pages._store import busy_notice, store_available
from core.app import StoreLockedError, Unavailable
from core.app import availability as app_availability
from core.app import export as app_export
from core.app import leaderboard as app_leaderboard
from core.app.safe_text import escape_markdown as esc
from core.charts import for_presentation, title_of, with_context
from core.domain import MIN_SLICE_BATTLES, Slice, parse_slice
from core.redact import redact

T = TypeVar("T")


def show_table(df: Any, **dataframe_kwargs: Any) -> None:
    """A table: the interactive grid, or in presentation mode a static one (the grid draws on a canvas at its
    own small type, which a projector cannot enlarge)."""
    if selection().present:
        # the grid's column labels (column_config) become the static table's headers
        config = dataframe_kwargs.get("column_config") or {}
        names = {c: v.get("label") for c, v in config.items() if isinstance(v, dict) and v.get("label")}
        shown = df.rename(columns=names) if names else df
        st.table(shown.set_index(shown.columns[0]) if dataframe_kwargs.get("hide_index") else shown)
    else:
        st.dataframe(df, **dataframe_kwargs)


# =================================================================== notices
def require(result: T | Unavailable) -> T:
    """The result; when it is unavailable, say why (one way on every page) and stop the page."""
    if isinstance(result, Unavailable):
        notice(result.reason)
        st.stop()
    return result


def notice(text: str, fix: str | None = None) -> None:
    """A result the data cannot support: the reason, shown the same way on every page; ``fix`` says what would
    make it work (which data, from which Admin action, page or command)."""
    body = text[:1].upper() + text[1:]
    if fix:
        body += f"\n\n**What would make it work:** {fix[:1].upper() + fix[1:].rstrip('.')}."
    st.info(body, icon=":material/info:")


@dataclass(frozen=True)
class Context:
    """What a page needs once its selection is valid."""

    dataset: str
    judge: str | None


def require_selection(needs_judge: str | None = None) -> Context:
    """The store and selection; stops the page with a notice when there is no dataset (or no judge).

    ``needs_judge``: why the page needs a judge (shown when the dataset has none).
    """
    sel = selection()
    if not store_available():
        st.stop()
    if sel.dataset is None:
        notice(
            "no dataset yet: build the demo (`make run` or `python -m core simulate`) or import a file "
            "with `python -m core import`."
        )
        st.stop()
    assert sel.dataset is not None
    if needs_judge and sel.judge is None:
        notice(
            f"dataset **{esc(sel.dataset)}** has no judgments: {needs_judge} Run a judge from the Admin page or "
            "import judgments."
        )
        st.stop()
    return Context(sel.dataset, sel.judge)


@contextmanager
def page_guard(name: str, page: str | None = None) -> Iterator[None]:
    """No page ever shows a traceback: errors become a message with details folded away.

    A store held by another process past the loaders' wait is not an error:
    it gets the one busy notice.  ``page`` (its key): when the sidebar marks
    the page as unable to show results on this dataset, the page says the same
    reason, what would make it work, and nothing else.
    """
    why = unavailable_pages().get(page) if page else None
    if page and why:
        sel = selection()
        try:
            facts = dataset_facts(str(sel.dataset), sel.judge)
            fix = app_availability.remedies(facts, page_needs()).get(page)
        except StoreLockedError:
            fix = None
        notice(f"{page_title(page)} cannot show results on **{esc(str(sel.dataset))}**: {why}.", fix=fix)
        st.stop()
    try:
        yield
    except StoreLockedError as exc:
        busy_notice(str(exc))
    except Exception as exc:
        st.error(esc(redact(f"{name} could not be shown: {str(exc).rstrip('.')}. Reloading the page tries again.")))
        with st.expander("Details"):
            st.code(redact(traceback.format_exc()))


# ============================================================ charts, tables
def caption(text: str) -> None:
    st.caption(f"**How to read this:** {text}")


def _builder_name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"  # chart builders are module-level functions of core.charts


@st.cache_resource(show_spinner=False, max_entries=512, hash_funcs={types.FunctionType: _builder_name})
def _shared_figure(
    builder: Callable[..., Any], args: tuple, kwargs: dict[str, Any], context: str, present: bool
) -> Any:
    """``builder(*args, **kwargs)`` with its context line (and projector type), built once per distinct
    input for every session of this server.

    Building a plotly figure validates every property in Python and cost a
    fifth of the server's time with many sessions open
    (``benchmarks/bench_load.py``); a chart is a pure function of its
    arguments, so the key is the arguments themselves, hashed by value by
    Streamlit (DataFrames by content).  The figure is shared, never mutated:
    ``st.plotly_chart`` serialises a copy.
    """
    fig = with_context(builder(*args, **kwargs), context)
    return for_presentation(fig) if present else fig


def show_chart(
    chart: partial[Any],
    key: str | None = None,
    how_to_read: str | None = None,
    detail: str = "",
    judge: str | None = None,
) -> None:
    """Draw ``chart`` (``partial(charts.some_builder, *args)``) in the Streamlit theme with a PNG download.

    The figure comes from a server-wide cache keyed by the builder's
    arguments (:func:`_shared_figure`).  The modebar's camera button saves
    the chart as PNG in the browser (no kaleido); the file is named after the
    chart's title, and a second title line names the dataset and judge (plus
    ``detail``, e.g. τ and α) so that the PNG says what it shows; ``judge`` names the chart's judge where it
    is not the sidebar's (a saved evaluation's).
    """
    sel = selection()
    named = judge or sel.judge
    context = " · ".join(x for x in (sel.dataset, f"judge {named}" if named else "", detail) if x)
    fig = _shared_figure(chart.func, chart.args, dict(chart.keywords), context, bool(sel.present))
    name = "".join(ch if ch.isalnum() else "_" for ch in title_of(fig).lower()).strip("_")[:60] or "chart"
    st.plotly_chart(
        fig,
        theme="streamlit",
        width="stretch",
        key=key,
        config={
            "displaylogo": False,
            "displayModeBar": not sel.present,  # a projector shows results, not tools
            "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
        },
    )
    if how_to_read:
        caption(how_to_read)


def export_buttons(
    table: Callable[[], pd.DataFrame], stem: str, title: str, key: str, context: dict[str, str] | None = None
) -> None:
    """CSV, Markdown and LaTeX downloads of ``table()`` (formatters in core.app.export).

    Markdown and LaTeX carry ``context`` in the file; the CSV is a plain table, with its context in a second
    download, ``<stem>.json`` (the sidecar a spreadsheet user keeps beside it).  The files are made when a
    button is clicked, not on every run of the page.
    """
    row = st.container(horizontal=True)
    row.download_button(
        "CSV",
        lambda: app_export.to_csv(table()),
        f"{stem}.csv",
        "text/csv",
        key=f"{key}_csv",
        icon=":material/download:",
    )
    if context:
        row.download_button(
            "CSV provenance (JSON)",
            lambda: app_export.provenance_json(context, table(), file=f"{stem}.csv"),
            f"{stem}.json",
            "application/json",
            key=f"{key}_json",
            icon=":material/download:",
            help=f"What {stem}.csv holds and where it comes from: dataset, judge, τ, α, code version, date.",
        )
    row.download_button(
        "Markdown",
        lambda: app_export.to_markdown(table(), context=context),
        f"{stem}.md",
        "text/markdown",
        key=f"{key}_md",
        icon=":material/download:",
    )
    row.download_button(
        "LaTeX",
        lambda: app_export.to_latex(table(), caption=title, context=context),
        f"{stem}.tex",
        "application/x-tex",
        key=f"{key}_tex",
        icon=":material/download:",
    )


def snap_selected_tau(fit: Any) -> None:
    """One link, one τ: a τ from a link (any number) becomes the grid value the slider shows, in the
    selection and at once in the URL, in every mode (presentation mode draws no slider but reads the same τ).
    The fitted τ's grid value is stored as "the fitted τ" (None), as the slider's own callback does."""
    chosen = selection().tau
    if chosen is None:
        return
    fitted = float(fit.tau) if fit.ok else None
    grid = app_leaderboard.tau_grid(fitted)
    snapped = app_leaderboard.snap_tau(chosen, grid)
    at_fit = app_leaderboard.snap_tau(fitted, grid) if fitted is not None else None
    home = None if at_fit is not None and snapped == at_fit else snapped
    if home != chosen:
        update(tau=home)
        sync_url()


def tau_control(fit: Any, label: str, help: str | None = None) -> tuple[float, bool]:
    """The τ slider shared by Leaderboard and Calibration: a log-spaced grid that contains the fitted τ.

    Returns (τ, fitted): the fitted τ until the user moves the slider
    (``Selection.tau`` is None), else the chosen grid value.  Without a
    fitted τ the slider starts at 1.
    """
    snap_selected_tau(fit)
    fitted = float(fit.tau) if fit.ok else None
    grid = app_leaderboard.tau_grid(fitted)
    at_fit = app_leaderboard.snap_tau(fitted, grid) if fitted is not None else None
    chosen = selection().tau
    shown = app_leaderboard.snap_tau(chosen if chosen is not None else (fitted or 1.0), grid)
    key = "tau"

    def write_home() -> None:
        value = float(st.session_state[key])
        update(tau=None if at_fit is not None and value == at_fit else value)

    st.session_state[key] = shown
    value = float(
        st.select_slider(
            label,
            options=grid,
            key=key,
            on_change=write_home,
            help=help,
            format_func=lambda v: f"{v:.3g} (fitted)" if v == at_fit else f"{v:.3g}",
        )
    )
    if fitted is not None and value == at_fit:
        return fitted, True
    return value, False


def back_to_fitted_tau_button(fit: Any) -> None:
    st.button(
        "Back to fitted τ",
        disabled=not fit.ok or selection().tau is None,
        icon=":material/restart_alt:",
        help="Reset the slider to the maximum-likelihood τ",
        on_click=update,
        kwargs={"tau": None},
        key="back_to_fitted_tau",
    )


LEADERBOARD_SLICE_HELP = (
    "Every method on only the battles whose prompt has all the chosen values (an AND): human Elo, Hard- and "
    "Soft-Elo, τ fitted and the conformal intervals calibrated on the slice alone. A slice with fewer than "
    f"{MIN_SLICE_BATTLES} battles says so instead of showing a number."
)


def slice_picker(dataset: str, key: str, what: str = LEADERBOARD_SLICE_HELP) -> Slice:
    """The slice picker (terms AND-ed; each option shows its battles), writing ``Selection.slice`` home: one
    slice for every page that draws a leaderboard, so it follows the visitor from page to page."""
    values = load_slices(dataset)
    if values.empty:
        return ()
    counts = {f"{r.key}={r.value}": (int(r.n_battles), bool(r.enough)) for r in values.itertuples()}
    chosen = [f"{k}={v}" for k, v in selection().slice]
    unknown = [c for c in chosen if c not in counts]
    if unknown:  # a shared link from another dataset, or data that changed since
        update(slice=tuple((k, v) for k, v in selection().slice if f"{k}={v}" in counts))
        notice(f"no battle of **{esc(dataset)}** has {esc(', '.join(unknown))}: left out of the slice.")
    st.session_state[key] = [c for c in chosen if c in counts]

    def write_home() -> None:
        try:
            update(slice=parse_slice(st.session_state[key] or []))
        except ValueError as exc:
            st.session_state["_slice_error"] = str(exc)

    def label(term: str) -> str:
        n, enough = counts[term]
        k, _, v = term.partition("=")
        return f"{k} = {v} ({n:,} battles{'' if enough else ', too few'})"

    picked = st.multiselect(
        "Slice",
        list(counts),
        key=key,
        on_change=write_home,
        format_func=label,
        placeholder="all battles (choose a category, language, turn or tag to slice)",
        help=what,
    )
    error = st.session_state.pop("_slice_error", None)
    if error:
        notice(esc(error))
    try:
        return parse_slice(picked)
    except ValueError:
        return ()
