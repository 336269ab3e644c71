"""What every page shares: the store, the sidebar selection, cached loaders.

The selection that defines a view (dataset, judge) lives in ``st.query_params``
so that a pasted URL reproduces it.  Loaders are cached on their arguments and
on the store's version token, so new data invalidates them.
"""

from __future__ import annotations

import os
import traceback
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import streamlit as st

from core import export
from core.charts import title_of
from core.datahome import DEFAULT_DB
from core.store import Store, StoreError


def db_path() -> str:
    return os.environ.get("ARENA_DB", str(DEFAULT_DB))


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> Store:
    return Store.open(path, read_only=False)


def get_store() -> Store | None:
    """The process-wide store (one writer per DuckDB file), or None with a message."""
    path = db_path()
    try:
        return _open_store(path)
    except StoreError as exc:
        st.error(f"The battle store could not be opened. {exc}")
        return None


def version() -> str:
    """Cache key for derived results: the store file and its data version.

    Passed to cached loaders as a normal (hashed) argument so new data, or
    another store in the same process, never reuses a stale result.
    """
    store = get_store()
    return f"{db_path()}|{store.version_token()}" if store is not None else f"{db_path()}|none"


@st.cache_data(show_spinner=False)
def datasets(token: str) -> list[str]:
    store = get_store()
    return [] if store is None else store.datasets()["name"].tolist()


@st.cache_data(show_spinner=False)
def judges(dataset: str, token: str) -> list[str]:
    store = get_store()
    return [] if store is None else store.judges_frame(dataset)["judge"].tolist()


def _query_choice(key: str, options: list[str]) -> str | None:
    value = st.query_params.get(key)
    if value in options:
        return value
    return options[0] if options else None


def sidebar() -> None:
    """Dataset and judge selectors, kept in the URL."""
    v = version()
    ds_options = datasets(v)
    with st.sidebar:
        st.caption(f"Store: `{Path(db_path()).name}`")
        if not ds_options:
            st.info("The store is empty. Build the demo with `python -m core simulate` or import a file.")
            return
        ds = st.selectbox("Dataset", ds_options, index=ds_options.index(_query_choice("dataset", ds_options)),
                          key="dataset_select")
        st.query_params["dataset"] = ds
        jd_options = judges(ds, v)
        if jd_options:
            jd = st.selectbox("Judge", jd_options, index=jd_options.index(_query_choice("judge", jd_options)),
                              key="judge_select")
            st.query_params["judge"] = jd
        else:
            st.caption("No judge has judged this dataset yet.")
            st.query_params.pop("judge", None)
        present = st.toggle("Presentation mode", value=st.query_params.get("present") == "1",
                            help="Hides the sidebar and enlarges text, for showing results to others.")
        if present:
            st.query_params["present"] = "1"
        else:
            st.query_params.pop("present", None)


def selected_dataset() -> str | None:
    return st.query_params.get("dataset") or next(iter(datasets(version())), None)


def selected_judge() -> str | None:
    ds = selected_dataset()
    if ds is None:
        return None
    options = judges(ds, version())
    j = st.query_params.get("judge")
    return j if j in options else (options[0] if options else None)


def apply_presentation_mode() -> None:
    """Presentation mode (``?present=1``): no sidebar, larger text, and a way back out."""
    if st.query_params.get("present") != "1":
        return
    st.markdown(
        """<style>
        section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
        [data-testid="stExpandSidebarButton"] {display: none !important;}
        .stMainBlockContainer, [data-testid="stMainBlockContainer"] {max-width: 100%; padding-left: 3rem;
            padding-right: 3rem;}
        .stMarkdown p, .stMarkdown li, [data-testid="stCaptionContainer"], [data-testid="stMetricValue"],
        [data-testid="stAlertContainer"] p {font-size: 1.25rem !important;}
        h1 {font-size: 3rem !important;}
        h2, h3 {font-size: 2rem !important;}
        </style>""",
        unsafe_allow_html=True,
    )
    if st.button("Exit presentation mode", icon=":material/close_fullscreen:", key="exit_present"):
        st.query_params.pop("present", None)
        st.rerun()


@contextmanager
def page_guard(name: str):
    """No page ever shows a traceback: errors become a message with details folded away."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the page boundary
        st.error(f"{name} could not be shown: {exc}")
        with st.expander("Details"):
            st.code(traceback.format_exc())


def caption(text: str) -> None:
    st.caption(f"**How to read this:** {text}")


def show_chart(fig, key: str | None = None, how_to_read: str | None = None) -> None:
    """Draw a figure in the Streamlit theme (light or dark) with a PNG download in its toolbar.

    The modebar's camera button saves the chart as PNG in the browser (no
    kaleido); the file is named after the chart's title.
    """
    name = "".join(ch if ch.isalnum() else "_" for ch in title_of(fig).lower()).strip("_")[:60] or "chart"
    st.plotly_chart(fig, theme="streamlit", width="stretch", key=key,
                    config={"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name,
                                                                            "scale": 2}})
    if how_to_read:
        caption(how_to_read)


def export_buttons(table: pd.DataFrame, stem: str, title: str, key: str) -> None:
    """CSV, Markdown and LaTeX downloads of a table (formatters in core.export)."""
    row = st.container(horizontal=True)
    c = [row, row, row]
    c[0].download_button("CSV", export.to_csv(table), f"{stem}.csv", "text/csv", key=f"{key}_csv",
                         icon=":material/download:")
    c[1].download_button("Markdown", export.to_markdown(table), f"{stem}.md", "text/markdown", key=f"{key}_md",
                         icon=":material/download:")
    c[2].download_button("LaTeX", export.to_latex(table, caption=title), f"{stem}.tex", "application/x-tex",
                         key=f"{key}_tex", icon=":material/download:")


# ---------------------------------------------------------------- loaders
# Cached on (dataset, judge, token): token changes with the data, so a new
# judge run or import is picked up; sliders never enter these keys.
@st.cache_data(show_spinner=False)
def load_frame(dataset: str, judge: str | None, token: str):
    from core import service

    return service.battle_frame(get_store(), dataset, judge)


@st.cache_data(show_spinner=False)
def load_tau(dataset: str, judge: str, token: str):
    from core import service

    return service.tau_fit(load_frame(dataset, judge, token))


@st.cache_data(show_spinner=False)
def load_heldout(dataset: str, judge: str, token: str, all_methods: bool = False):
    from core import service

    frame = load_frame(dataset, judge, token)
    if frame["human_y"].notna().sum() == 0:
        return None
    bar = st.progress(0.0, text="Leave-one-model-out fits (cached after the first run)…")
    res = service.heldout(frame, all_methods=all_methods,
                          progress=lambda d, t: bar.progress(d / t, text=f"Held-out model {d} of {t}"))
    bar.empty()
    return res


def init_tau(dataset: str, judge: str, fitted: float, lo: float, hi: float) -> None:
    """Put the τ slider's starting value in the session (shared by Leaderboard and Calibration).

    First load: the URL's ``tau`` (a pasted link reproduces the view), else the
    fitted τ.  Another dataset or judge: that judge's own fitted τ, since a τ
    only means something for the judge whose score gaps it scales.
    """
    view = f"{dataset}|{judge}"
    previous = st.session_state.get("_tau_view")
    if previous is not None and previous != view:
        st.session_state["tau"] = min(max(fitted, lo), hi)
    elif "tau" not in st.session_state:
        st.session_state["tau"] = param("tau", fitted, lo, hi)
    st.session_state["_tau_view"] = view


def param(key: str, default: float, lo: float, hi: float) -> float:
    """A numeric query parameter, clipped to its slider's range (bad values fall back)."""
    try:
        v = float(st.query_params.get(key, default))
    except ValueError:
        v = default
    return min(max(v, lo), hi)
