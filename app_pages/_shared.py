"""What every page shares: the store handle, the selection, cached loaders, notices, downloads.

The selection (dataset, judge, τ, α, the SCOPE α, the Leaderboard's method
toggles, presentation mode) has one home: :class:`Selection` in
``st.session_state``.  A fresh session reads it from the URL
(``st.query_params``); every widget that edits it writes it back through its
callback, before the script reruns; ``app.py`` mirrors it into the URL on
every run, so a pasted link reproduces the view and moving between pages
keeps every value.  Widgets never own the state: their keys are rewritten
from the home before they are drawn, because Streamlit forgets the value of
a widget that the current page does not draw.

Loaders are cached on their arguments and on the store's data version, so
new data invalidates them and sliders never enter the keys of the expensive
steps.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from app_pages._registry import PAGE_ROLES as PAGE_ROLES  # re-exported: the old homes of these views
from app_pages._registry import PAGE_TITLES as PAGE_TITLES
from app_pages._registry import page_needs, page_title, pages
from core.app import Store, StoreError, StoreLockedError, Unavailable
from core.app import availability as app_availability
from core.app import data as app_data
from core.app import display as app_display
from core.app import export as app_export
from core.app import leaderboard as app_leaderboard
from core.app import persist as app_persist
from core.app import precompute as app_precompute
from core.app.access import Identity, RolesError, allows, identity_of, role_of, role_table
from core.app.safe_text import escape_markdown as esc
from core.charts import for_presentation, title_of, with_context
from core.domain import Slice, parse_slice
from core.methods import RATING_METHODS
from core.redact import redact

T = TypeVar("T")

TAU_RANGE = app_leaderboard.TAU_BOUNDS
ALPHA_RANGE = (0.05, 0.5)
SCOPE_ALPHA_RANGE = (0.05, 0.4)
DASHBOARD_METHODS = tuple(name for name, m in RATING_METHODS.items() if m.dashboard)


# ==================================================================== store
# The store is shared with judge runs and the CLI, and DuckDB lets a process
# write it only while nobody else has it open: pages therefore never keep it
# open.  Each cached loader opens it read-only for its own queries (a few ms)
# and closes it; the data version is re-read at most every TOKEN_REFRESH_S per
# server process, and while another process holds the store the last version
# stands, so cached results keep showing under one notice.
READ_WAIT_S = 5.0  # a loader waits this long for a store another process holds (each hold is one operation)
# A page run's reads come in a burst: the file stays open this long after each, so the next one joins it
# (Store.open's linger_s; it goes at once when a writer asks).
READ_LINGER_S = 0.25
TOKEN_REFRESH_S = 2.0
# While a run writes, the all-judges token (Overview, Judge bias, Judges & annotators: results over every
# judge) advances at most this often; each advance recomputes those pages' fits, and recomputing them
# at every merge of a running judge took the CPU the run needed.  Results keyed on one judge's stamp
# are not held back, nor are new datasets and votes (a change of the base stamp).
ALL_JUDGES_MIN_INTERVAL_S = 15.0
# The background precompute starts once the data has stayed unchanged this long: a judge run that merges
# every second would otherwise restart it (and its all-judges results) again and again.
PRECOMPUTE_SETTLE_S = float(os.environ.get("ARENA_PRECOMPUTE_SETTLE_S", "30"))


def db_path() -> str:
    return os.environ.get("ARENA_DB", str(app_data.DEFAULT_DB))


@dataclass
class StoreState:
    """What the server knows about the store: its data version, and why it could not be read if so."""

    token: str | None = None  # every table: changes with any write
    fetched: float = float("-inf")
    busy: str | None = None  # held by another process (names it)
    error: str | None = None  # cannot be opened at all (missing, newer schema, not a store)
    files: tuple = ()  # (size, mtime) of the store file and its write-ahead log when the token was read
    latest: str | None = None  # the newest all-tables token read; ``token`` catches up with it
    token_since: float = float("-inf")  # when ``token`` last advanced
    token_base: str | None = None  # ``base`` when ``token`` last advanced
    base: str | None = None  # all but judgments (datasets, battles, votes, completions, judges)
    judges: dict[tuple[str, str], str] = field(default_factory=dict)  # (dataset, judge) → its judgments' stamp
    precomputing_for: str | None = None  # the data version a background precompute was started for
    latest_since: float = float("-inf")  # when ``latest`` last changed


def _file_stamp(path: str) -> tuple:
    """Size and modification time of the store file and its WAL: any committed write changes one of them."""
    out: list[tuple[int, int] | None] = []
    for p in (path, path + ".wal"):
        try:
            st_ = os.stat(p)
            out.append((st_.st_size, st_.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


class _StoreStates:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, StoreState] = {}


@st.cache_resource(show_spinner=False)
def _store_states() -> _StoreStates:
    return _StoreStates()


def store_state() -> StoreState:
    """The store's data version, re-read at most every ``TOKEN_REFRESH_S`` (one reader for all sessions)."""
    path = db_path()
    holder = _store_states()
    with holder.lock:
        state = holder.states.setdefault(path, StoreState())
        now = time.monotonic()
        if now - state.fetched >= TOKEN_REFRESH_S:
            stamp = _file_stamp(path)
            if state.token is not None and state.busy is None and stamp == state.files:
                # Unchanged files: the same data version, without opening the store (an open costs ~50 ms
                # of the server's one interpreter lock, every refresh, with many sessions).
                state.fetched = now
            else:
                state.files = stamp
                try:
                    with app_data.open_store(path, read_only=True, wait_s=0.5) as store:
                        state.base, state.judges = app_data.version_stamps(store)
                    stamps = app_precompute.Stamps(state.base, state.judges)
                    if stamps.everything() != state.latest:
                        state.latest_since = now
                    state.latest, state.busy, state.error = stamps.everything(), None, None
                except StoreLockedError as exc:
                    state.busy = str(exc)  # keep the last token: its cached results are still true
                except StoreError as exc:
                    state.token = state.latest = None
                    state.busy, state.error = None, str(exc)
                state.fetched = now
        if (
            state.latest is not None
            and state.latest != state.precomputing_for
            and now - state.latest_since >= PRECOMPUTE_SETTLE_S
        ):
            state.precomputing_for = state.latest
            start_precompute(path, state.latest)
        # Only judgments are held back: a new dataset or new votes show at the next refresh.
        if state.latest != state.token and (
            state.token is None
            or state.base != state.token_base
            or now - state.token_since >= ALL_JUDGES_MIN_INTERVAL_S
        ):
            state.token, state.token_since, state.token_base = state.latest, now, state.base
        return dataclasses.replace(state)


def start_precompute(path: str, stamp: str | None = None) -> None:
    """Compute every page's results for new data in a background process (``python -m core precompute``).

    One at a time per store; at low CPU priority, so visitors' own requests
    come first; ``ARENA_PRECOMPUTE=0`` turns it off (the tests do).
    """
    if os.environ.get("ARENA_PRECOMPUTE", "1") == "0" or app_precompute.running(path):
        return
    if stamp is not None and app_precompute.done_for(path, stamp):
        return  # computed for exactly this data already (by `make demo`, or this server's own earlier run)
    app_precompute.start_in_background(path)


@contextmanager
def reading() -> Iterator[Store]:
    """The store, open read-only for the queries of one cached loader, closed after."""
    with app_data.open_store(db_path(), read_only=True, wait_s=READ_WAIT_S, linger_s=READ_LINGER_S) as store:
        yield store


def read_store(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(store, *args, **kwargs)`` with the store open read-only for just that call."""
    with reading() as store:
        return fn(store, *args, **kwargs)


def read_persisted(fn: Callable[..., T], *args: Any, token: str, **kwargs: Any) -> T:
    """:func:`read_store` kept in the store's results at data version ``token``: computed once, for every
    session, every server process and every restart (``core.app.persist``).

    ``args[0]`` is the dataset; keyword arguments enter the key, except ``progress``.
    """
    dataset = args[0] if args and isinstance(args[0], str) else None
    stamp = token.removeprefix(db_path() + "|")  # the data stamp; the path is this server's name for the file
    return app_persist.persisted(db_path(), reading, fn, args, stamp, dataset=dataset, **kwargs)


def read_lagged(fn: Callable[..., T], *args: Any, token: str, **kwargs: Any) -> app_persist.Lagged[T]:
    """:func:`read_persisted`, except that a result persisted before the newest votes is returned at once (and
    said to be behind) while the current one is computed in the background (``persist.persisted_or_lagged``)."""
    dataset = args[0] if args and isinstance(args[0], str) else None
    stamp = token.removeprefix(db_path() + "|")
    return app_persist.persisted_or_lagged(db_path(), reading, fn, args, stamp, dataset=dataset, **kwargs)


class _Behind(Exception):
    """Carries a result from before the newest votes out of a cached loader: only current results are cached."""

    def __init__(self, lagged: app_persist.Lagged) -> None:
        super().__init__("a result from before the newest votes")
        self.lagged = lagged


def store_available() -> bool:
    """Whether there is a readable store (or cached results of one); says why not, once, when there is not."""
    state = store_state()
    if state.error:
        st.error(f"The battle store could not be opened. {redact(state.error)}")
        return False
    if state.token is None:
        busy_notice(state.busy or "")
        return False
    return True


def busy_notice(reason: str) -> None:
    """One notice per page view while another process holds the store (never repeated, never 'empty')."""
    run = st.session_state.get("_script_run", 0)
    if st.session_state.get("_busy_shown") == run:
        return
    st.session_state["_busy_shown"] = run
    # in a reader's words: who is writing and what to wait for, never the holder's command line
    st.info(redact(app_display.store_busy(reason)), icon=":material/hourglass_top:")


def version(state: StoreState | None = None) -> str:
    """Cache key for derived results: the store file and its data version (every table).

    Passed to cached loaders as a normal (hashed) argument so new data, or
    another store in the same process, never reuses a stale result.
    """
    return f"{db_path()}|{(state or store_state()).token or 'none'}"


def votes_version(state: StoreState) -> str:
    """Cache key for results that read no judgments (human votes, models, battles): a judge run keeps it."""
    return f"{db_path()}|{app_precompute.Stamps(state.base).votes() if state.base else 'none'}"


def judge_version(state: StoreState, dataset: str, judge: str | None) -> str:
    """Cache key for results that read one judge's judgments (and no other judge's) on one dataset.

    A run writing another judge leaves it unchanged, so the pages of the
    judge being read keep their cached fits while an Admin run writes.
    """
    if state.base is None:
        return f"{db_path()}|none"
    return f"{db_path()}|{app_precompute.Stamps(state.base, state.judges).judge(dataset, judge)}"


@st.cache_data(show_spinner=False)
def dataset_options(token: str) -> list[str]:
    with reading() as store:
        return app_data.dataset_names(store)


@st.cache_data(show_spinner=False)
def judge_options(dataset: str, token: str) -> list[str]:
    with reading() as store:
        return app_data.judge_names(store, dataset)


@st.cache_data(show_spinner="Choosing the judge whose Elo best predicts human Elo…")
def default_judge(dataset: str, token: str) -> tuple[str, str] | None:
    return read_persisted(app_leaderboard.default_judge, dataset, token=token)


@st.cache_data(show_spinner=False)
def dataset_facts(dataset: str, judge: str | None, token: str) -> app_availability.DatasetFacts:
    # counts over every table: a second on an LMArena-size store, so kept like the pages' results
    return read_persisted(app_availability.dataset_facts, dataset, judge, token=token)


def unavailable_pages() -> dict[str, str]:
    """Page key → why it cannot run on the selected dataset (for the navigation and the sidebar)."""
    sel = selection()
    if store_state().token is None or sel.dataset is None:
        return {}
    try:
        return app_availability.unavailable_pages(dataset_facts(sel.dataset, sel.judge, version()), page_needs())
    except StoreLockedError:
        return {}


# ================================================================ selection
SLICE_SEP = "|"  # between a slice's terms in the URL (values may hold commas: Arena-Hard's cluster names)


@dataclass
class Selection:
    """What defines a view; one per browser session (``st.session_state``), mirrored in the URL."""

    dataset: str | None = None
    judge: str | None = None
    tau: float | None = None  # None: the selected judge's fitted τ
    alpha: float = 0.1  # miscoverage of the conformal intervals (Leaderboard, Residuals)
    scope_alpha: float = 0.1  # SCOPE's target error rate among accepted judgments
    scope_source: str | None = None  # where SCOPE's P(a ≻ b) comes from; None: the best the judge supports
    show: tuple[str, ...] = DASHBOARD_METHODS  # leaderboards drawn on the Leaderboard page
    present: bool = False
    slice: Slice = ()  # the Leaderboard's battles: only those whose prompt has every (key, value); () = all
    style: bool = False  # the Leaderboard's style-control toggle

    def to_params(self) -> dict[str, str]:
        """The URL form: only values that differ from a fresh session's."""
        default = Selection()
        out: dict[str, str] = {}
        if self.dataset is not None:
            out["dataset"] = self.dataset
        if self.judge is not None:
            out["judge"] = self.judge
        if self.tau is not None:
            out["tau"] = f"{self.tau:.3g}"
        if self.alpha != default.alpha:
            out["alpha"] = f"{self.alpha:.2f}"
        if self.scope_alpha != default.scope_alpha:
            out["scope_alpha"] = f"{self.scope_alpha:.2f}"
        if self.scope_source is not None:
            out["source"] = self.scope_source
        if self.show != default.show:
            out["show"] = ",".join(self.show)
        if self.present:
            out["present"] = "1"
        if self.slice:
            out["slice"] = SLICE_SEP.join(f"{k}={v}" for k, v in self.slice)
        if self.style:
            out["style"] = "1"
        return out


def _number(params: dict[str, str], key: str, lo: float, hi: float) -> float | None:
    """A numeric query parameter inside its slider's range, else None (bad or absent values are ignored)."""
    try:
        v = float(params[key])
    except (KeyError, ValueError):
        return None
    return min(max(v, lo), hi) if v == v else None


def _from_params(params: dict[str, str]) -> Selection:
    s = Selection(
        dataset=params.get("dataset"),
        judge=params.get("judge"),
        scope_source=params.get("source"),
        tau=_number(params, "tau", *TAU_RANGE),
        present=params.get("present") == "1",
    )
    s.alpha = _number(params, "alpha", *ALPHA_RANGE) or s.alpha
    s.scope_alpha = _number(params, "scope_alpha", *SCOPE_ALPHA_RANGE) or s.scope_alpha
    if "show" in params:
        s.show = tuple(m for m in DASHBOARD_METHODS if m in params["show"].split(","))
    try:  # a malformed slice in a shared link is dropped, as any bad parameter
        s.slice = parse_slice(params["slice"].split(SLICE_SEP)) if params.get("slice") else ()
    except ValueError:
        s.slice = ()
    s.style = params.get("style") == "1"
    return s


def selection() -> Selection:
    """The session's selection (read from the URL on the session's first run)."""
    if "_selection" not in st.session_state:
        st.session_state["_selection"] = _from_params(st.query_params.to_dict())
    sel: Selection = st.session_state["_selection"]
    return sel


def update(**fields: Any) -> None:
    """Change the selection (from a callback or before anything depending on it is drawn)."""
    sel = selection()
    for name, value in fields.items():
        setattr(sel, name, value)


# Query parameters a page owns (the Vote page's annotator, token and queue): kept when the selection is mirrored.
PAGE_PARAMS = ("annotator", "vote_token", "queue")


def sync_url() -> None:
    """Mirror the selection into the URL (``app.py`` calls this on every run), keeping the pages' own parameters."""
    current = st.query_params.to_dict()
    want = {**selection().to_params(), **{k: current[k] for k in PAGE_PARAMS if k in current}}
    if current != want:
        st.query_params.from_dict(want)


def _bound(field: str, to_value: Callable[[Any], Any] = lambda v: v) -> tuple[str, Callable[[], None]]:
    """The widget key of a selection field and the callback that writes the widget's value home."""
    key = field

    def write_home() -> None:
        update(**{field: to_value(st.session_state[key])})

    return key, write_home


def bound_slider(
    field: str, label: str, lo: float, hi: float, shown: float, step: float = 0.01, **kwargs: Any
) -> float:
    """A slider that edits ``Selection.<field>``; ``shown`` is the value it starts from."""
    key, write_home = _bound(field, float)
    st.session_state[key] = min(max(float(shown), lo), hi)
    return float(st.slider(label, lo, hi, step=step, key=key, on_change=write_home, **kwargs))


def bound_radio(field: str, label: str, options: list[str], shown: str, **kwargs: Any) -> str:
    """A horizontal radio that edits ``Selection.<field>``; ``shown`` is the option it starts from."""
    key, write_home = _bound(field)
    st.session_state[key] = shown if shown in options else options[0]
    return str(st.radio(label, options, key=key, on_change=write_home, horizontal=True, **kwargs))


def resolve_selection() -> None:
    """Make the dataset and judge valid for the store: the first dataset, the default judge
    (:func:`core.app.leaderboard.default_judge`) when the URL names none or an unknown one."""
    st.session_state["_script_run"] = st.session_state.get("_script_run", 0) + 1  # for once-per-view notices
    sel = selection()
    if store_state().token is None:
        return  # nothing readable yet: the sidebar says why
    token = version()
    try:
        datasets = dataset_options(token)
        if sel.dataset not in datasets:
            sel.dataset, sel.judge, sel.tau = (datasets[0] if datasets else None), None, None
        judges = judge_options(sel.dataset, token) if sel.dataset else []
        if sel.judge not in judges:
            choice = default_judge(sel.dataset, token) if judges and sel.dataset else None
            sel.judge, sel.tau = (choice[0] if choice else None), None
    except StoreLockedError as exc:  # held past the wait: keep the selection, say so once
        busy_notice(str(exc))


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
    token = version()
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
        datasets = dataset_options(token)
        if not datasets:
            st.info("The store is empty. Build the demo with `python -m core simulate` or import a file.")
            return
        st.session_state["dataset"] = sel.dataset
        st.selectbox("Dataset", datasets, key="dataset", on_change=_on_dataset)
        judges = judge_options(sel.dataset, token) if sel.dataset else []
        if judges and sel.dataset is not None:
            st.session_state["judge"] = sel.judge
            st.selectbox("Judge", judges, key="judge", on_change=_on_judge)
            facts = dataset_facts(sel.dataset, sel.judge, token)
            # a judge's template and description come with imported judgments: shown as text
            about = [f"template {esc(facts.judge_template)}"] if facts.judge_template else []
            if facts.judge_description:
                about.append(esc(facts.judge_description))
            choice = default_judge(sel.dataset, token)
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


# ==================================================================== access
# With ``[auth]`` in Streamlit's secrets, people sign in through an OpenID Connect provider (``st.login``) and
# the ``[roles]`` table gives each a role (``core.app.access``): viewer (every results page), annotator (the Vote
# page, voting under their email), admin (the Admin page and the Evaluate page's form).  Without ``[auth]``
# the dashboard is open to whoever reaches it, and the admin and vote tokens guard what they guard.
# Each page's role is in the page registry (app_pages/_registry.py; PAGE_ROLES is its view).


@dataclass(frozen=True)
class Access:
    """This session's sign-in state and role."""

    sign_in: bool  # an identity provider is configured: people sign in and roles decide
    signed_in: bool = False
    identity: Identity | None = None
    role: str | None = None
    error: str | None = None  # the [roles] table is malformed

    def can(self, needed: str) -> bool:
        """Whether this session may do what ``needed`` (a role) may; without sign-in, the token modes decide."""
        return not self.sign_in or allows(self.role, needed)


def _secret(name: str) -> Any:
    try:
        return st.secrets.get(name)
    except Exception:  # no secrets file
        return None


def sign_in_configured() -> bool:
    """Whether ``[auth]`` is in the secrets: the dashboard then uses ``st.login`` and the ``[roles]`` table."""
    return bool(_secret("auth"))


def access() -> Access:
    """Who this session is and what their role allows (``core.app.access``)."""
    if not sign_in_configured():
        return Access(sign_in=False)
    claims = dict(st.user.to_dict())
    if not claims.get("is_logged_in"):
        return Access(sign_in=True)
    try:
        table = role_table(_secret("roles"))
    except RolesError as exc:
        return Access(sign_in=True, signed_in=True, error=str(exc))
    who = identity_of(claims, table.groups_claim)
    return Access(sign_in=True, signed_in=True, identity=who, role=role_of(table, who))


def allowed_pages(gate: Access) -> list[str]:
    """The pages this session may open (the navigation lists only these)."""
    return [key for key, page in pages().items() if gate.can(page.role)]


def sign_in_page() -> None:
    """The only page a visitor without a role sees: a sign-in button, or why their account cannot go further."""
    gate = access()
    st.title("Judge Arena")
    if not gate.signed_in:
        st.write("Sign in to see the dashboard.")
        st.button("Sign in", type="primary", icon=":material/login:", on_click=st.login, key="sign_in_button")
        return
    if gate.error:
        st.error(f"Sign-in is configured, but the roles table cannot be read: {gate.error}")
    else:
        who = gate.identity.name if gate.identity else "this account"
        st.warning(f"You are signed in as {esc(who)}, which has no role on this dashboard. Ask its admin for one.")
    st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="sign_out_button")


def signed_in_sidebar(gate: Access) -> None:
    """Who is signed in, with which role, and the way out."""
    if not gate.signed_in:
        return
    with st.sidebar:
        who = gate.identity.name if gate.identity else "unknown"
        st.caption(f"Signed in as {esc(who)} ({gate.role or 'no role'})")
        st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="sidebar_sign_out")


def forbidden(what: str, needed: str) -> None:
    """Stop a page (or a part of one) that this session's role does not allow."""
    gate = access()
    who = esc(gate.identity.name) if gate.identity else "you"
    st.error(f"{what} needs the {needed} role; {who} signed in as {gate.role or 'no role'}.", icon=":material/block:")
    st.stop()


# ===================================================================== admin
def configured_admin_token() -> str | None:
    """The admin token (environment, else ``admin_token`` in secrets.toml); None: starting work is disabled."""
    from core.redact import ADMIN_TOKEN_ENV, register

    token = os.environ.get(ADMIN_TOKEN_ENV)
    if not token:
        try:
            token = st.secrets.get("admin_token")
        except Exception:  # no secrets file
            token = None
    if token:
        register(str(token))  # a token from secrets.toml is redacted like the environment's
    return str(token) if token else None


def admin_unlocked(token: str, key: str) -> bool:
    """A password field for the admin token; True once the right token is entered (compared in constant time)."""
    import hmac

    given = st.text_input("Admin token", type="password", key=key)
    if given and not hmac.compare_digest(given.encode(), token.encode()):
        st.error("Wrong token.")
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


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
    token: str  # every table (:func:`version`): for results that read all judges
    judge_token: str  # the selected judge's judgments only (:func:`judge_version`)
    votes_token: str  # no judgments at all (:func:`votes_version`)


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
    state = store_state()  # one reading for the three keys, so they describe the same data
    return Context(
        sel.dataset,
        sel.judge,
        version(state),
        judge_version(state, sel.dataset, sel.judge),
        votes_version(state),
    )


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
            facts = dataset_facts(str(sel.dataset), sel.judge, version())
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


@st.cache_data(show_spinner=False)
def load_sample(dataset: str, judge: str, token: str) -> app_data.SampledFrame:
    """The judge's battles one by one (a stated seeded sample on large arenas): Calibration, Selective judging."""
    return read_persisted(app_data.sample_frame, dataset, judge, token=token)


@st.cache_data(show_spinner=False)
def load_tau(dataset: str, judge: str, token: str) -> Any:
    return read_persisted(app_data.tau_fit_of, dataset, judge, token=token)


@st.cache_data(show_spinner=False)
def load_heldout(dataset: str, judge: str, token: str, all_methods: bool = False) -> Any:
    bar, progress = progress_callback("Leave-one-model-out fits (kept once computed): held-out model")
    try:
        return read_persisted(app_leaderboard.heldout_of, dataset, judge, all_methods, token=token, progress=progress)
    finally:
        bar.empty()


@st.cache_data(show_spinner=False, max_entries=32)
def _current_heldout(dataset: str, judge: str, tau: float | None, token: str) -> app_persist.Lagged:
    bar, progress = progress_callback("Leave-one-model-out fits (kept once computed): held-out model")
    try:
        # the arguments the precompute keys its results with (core.app.precompute.jobs)
        args = (dataset, judge, False) if tau is None else (dataset, judge, False, tau)
        lagged = read_lagged(app_leaderboard.heldout_of, *args, token=token, progress=progress)
    finally:
        bar.empty()
    if not lagged.current:
        raise _Behind(lagged)
    return lagged


def load_heldout_lagged(dataset: str, judge: str, tau: float | None, token: str) -> app_persist.Lagged:
    """The Leaderboard's leave-one-model-out table (τ refitted per fold when ``tau`` is None, else held at
    ``tau``).  During a voting round it may come from before the newest votes, said so by ``current`` and
    ``votes_behind``, while the current table is computed in the background: a visitor never waits for it."""
    try:
        return _current_heldout(dataset, judge, tau, token)
    except _Behind as behind:
        return behind.lagged


def tau_control(fit: Any, label: str, disabled: bool = False, help: str | None = None) -> tuple[float, bool]:
    """The τ slider shared by Leaderboard and Calibration: a log-spaced grid that contains the fitted τ.

    Returns (τ, fitted): the fitted τ until the user moves the slider
    (``Selection.tau`` is None), else the chosen grid value.  Without a
    fitted τ the slider starts at 1.
    """
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
            disabled=disabled,
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
