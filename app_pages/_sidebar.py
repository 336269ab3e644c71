"""The shared sidebar (dataset and judge, pages that cannot run, presentation mode) and making the selection
valid for the store before a page draws.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app_pages._loaders import dataset_facts, dataset_options, default_judge, judge_options, unavailable_pages
from app_pages._registry import page_title
from app_pages._selection import _bound, selection, update
from app_pages._store import busy_notice, db_path, store_available, store_state
from core.app import StoreLockedError
from core.app import precompute as app_precompute
from core.app.safe_text import escape_markdown as esc


def resolve_selection() -> None:
    """Make the dataset and judge valid for the store: the first dataset, the default judge
    (:func:`core.app.leaderboard.default_judge`) when the URL names none or an unknown one."""
    st.session_state["_script_run"] = st.session_state.get("_script_run", 0) + 1  # for once-per-view notices
    sel = selection()
    if store_state().stamp is None:
        return  # nothing readable yet: the sidebar says why
    try:
        datasets = dataset_options()
        if sel.dataset not in datasets:
            shown = datasets[0] if datasets else None
            if sel.dataset is not None:  # a link (or a dataset removed meanwhile) named it: never switch silently
                _unknown_in_link("dataset", sel.dataset, shown)
            sel.dataset, sel.judge, sel.tau = shown, None, None
        judges = judge_options(sel.dataset) if sel.dataset else []
        if sel.judge not in judges:
            choice = default_judge(sel.dataset) if judges and sel.dataset else None
            if sel.judge is not None:
                _unknown_in_link(f"judge of dataset {sel.dataset!r}", sel.judge, choice[0] if choice else None)
            sel.judge, sel.tau = (choice[0] if choice else None), None
    except StoreLockedError as exc:  # held past the wait: keep the selection, say so once
        busy_notice(str(exc))


def _unknown_in_link(what: str, named: str, shown: str | None) -> None:
    """Say, above the page, that the selection named something the store does not have and what is shown."""
    instead = f"showing **{esc(shown)}** instead" if shown else "nothing to show instead"
    st.warning(f"The link names the {esc(what)} **{esc(named)}**, which this store does not have: {instead}.")


def _on_dataset() -> None:
    # a slice names another dataset's prompt attributes
    update(dataset=st.session_state["dataset"], judge=None, tau=None, scope_source=None, slice=())


def _on_judge() -> None:
    # A τ only means something for the judge whose score gaps it scales.
    update(judge=st.session_state["judge"], tau=None, scope_source=None)


def sidebar() -> None:
    """Dataset and judge selectors (with the judge's description), pages that cannot run, presentation mode."""
    try:
        _sidebar()
    except StoreLockedError as exc:
        busy_notice(str(exc))


def _sidebar() -> None:
    sel = selection()
    with st.sidebar:
        st.caption(f"Store: `{Path(db_path()).name}`")
        state = store_state()
        if state.busy:
            busy_notice(state.busy)
        progress = app_precompute.read_progress(db_path())
        if progress is not None and app_precompute.running(db_path()):
            doing = f" ({esc(progress.current)})" if progress.current else ""
            st.caption(
                f"Computing results in the background: {progress.done} of {progress.total}{doing}; pages not yet "
                "computed compute on first view."
            )
        elif (why := app_precompute.stopped(db_path())) is not None:
            st.caption(f"The background computation stopped: {esc(why)}; pages compute on demand.")
        if not store_available():
            return
        datasets = dataset_options()
        if not datasets:
            st.info("The store is empty. Build the demo with `python -m core simulate` or import a file.")
            return
        st.session_state["dataset"] = sel.dataset
        st.selectbox("Dataset", datasets, key="dataset", on_change=_on_dataset)
        judges = judge_options(sel.dataset) if sel.dataset else []
        if judges and sel.dataset is not None:
            st.session_state["judge"] = sel.judge
            st.selectbox("Judge", judges, key="judge", on_change=_on_judge)
            facts = dataset_facts(sel.dataset, sel.judge)
            # a judge's template and description come with imported judgments: shown as text
            about = [f"template {esc(facts.judge_template)}"] if facts.judge_template else []
            if facts.judge_description:
                about.append(esc(facts.judge_description))
            choice = default_judge(sel.dataset)
            if choice is not None and choice[0] == sel.judge:
                about.append(f"default: {choice[1]}")
            if about:
                st.caption("; ".join(about))
        else:
            st.caption("No judge has judged this dataset yet.")
        blocked = unavailable_pages()
        if blocked:
            st.caption(
                "Not available on this dataset: "
                + "; ".join(f"**{page_title(k)}**: {why}" for k, why in blocked.items())
                + ". Each of these pages says what would make it work."
            )
        key, write_home = _bound("present", bool)
        st.session_state[key] = sel.present
        st.toggle(
            "Presentation mode",
            key=key,
            on_change=write_home,
            help="Hides the sidebar and enlarges text, for showing results to others.",
        )


PRESENTATION_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header[data-testid="stHeader"], [data-testid="stToolbar"],
[data-testid="stSlider"], [data-testid="stSelectSlider"], [data-testid="stSelectbox"],
[data-testid="stMultiSelect"], [data-testid="stTextInput"], [data-testid="stNumberInput"],
[data-testid="stButton"], [data-testid="stDownloadButton"], [data-testid="stRadio"],
[data-testid="stCheckbox"], [data-testid="stToggle"], [data-testid="stButtonGroup"],
[data-testid="stFileUploader"], [data-testid="stExpander"], [data-testid="stForm"] {display: none !important;}
.stMainBlockContainer, [data-testid="stMainBlockContainer"] {max-width: 100%; padding: 1.5rem 3rem;}
.stMarkdown p, .stMarkdown li, [data-testid="stCaptionContainer"], [data-testid="stMetricValue"],
[data-testid="stAlertContainer"] p {font-size: 1.4rem !important;}
h1 {font-size: 2.6rem !important;} h2, h3 {font-size: 2.1rem !important;}
[data-testid="stTable"] table {font-size: 1.35rem !important;}
[data-testid="stMetricValue"], [data-testid="stMetricValue"] div {font-size: 2.6rem !important;}
[data-testid="stMetricLabel"] p {font-size: 1.3rem !important;}
.modebar-container {display: none !important;}
.st-key-exit_presentation [data-testid="stButton"] {display: block !important;}
</style>"""


def apply_presentation_mode() -> None:
    """Presentation mode (``?present=1``): no sidebar and no controls, large type, and a link back out.

    Made for a 1920×1080 projector: pages draw their headline and one chart
    per screen (``show_chart`` enlarges every chart's text to ≥ 18 px, keeps every
    row's label and drops the toolbar), tables in static HTML at ≥ 20 px and key
    figures at ≥ 28 px.  The way out is a button in this tab (a Markdown link
    would open a new tab and leave this one presenting).
    """
    if not selection().present:
        return
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
    with st.container(key="exit_presentation"):
        st.button("Exit presentation mode", key="exit_presentation_button", on_click=update, kwargs={"present": False})
