"""What every page shares: the store handle, the selection, cached loaders, notices, downloads.

This module is the facade the pages import from (``from app_pages._shared import …``); each concept lives in
its own module, and every name is re-exported here:

- ``_store``: the store's data version (one reader per server process), read-only reads, persisted results,
  the busy notice, the cache keys (``version``, ``judge_version``, ``votes_version``);
- ``_selection``: :class:`Selection`, its one home in ``st.session_state``, the URL, bound widgets;
- ``_loaders``: the cached loaders and which pages cannot run on the selected dataset;
- ``_sidebar``: the shared sidebar, making the selection valid for the store, presentation mode;
- ``_widgets``: notices, ``page_guard``, ``require_selection``, charts, tables, downloads, the τ slider;
- ``_access``: sign-in, roles and the admin token;
- ``_registry``: the pages themselves (``PAGES``; ``PAGE_TITLES`` and ``PAGE_ROLES`` are views of it).

The selection (dataset, judge, τ, α, the SCOPE α, the Leaderboard's method
toggles, slice and style control, presentation mode) has one home: :class:`Selection` in
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

A name read by code in one of these modules is looked up there: to patch it (a test), patch the module that
defines it (``app_pages._store.TOKEN_REFRESH_S``), not this facade.
"""

from __future__ import annotations

from app_pages._access import (
    Access,
    _secret,
    access,
    admin_unlocked,
    allowed_pages,
    configured_admin_token,
    forbidden,
    sign_in_configured,
    sign_in_page,
    signed_in_sidebar,
)
from app_pages._loaders import (
    _current_heldout,
    dataset_facts,
    dataset_options,
    default_judge,
    judge_options,
    load_frame,
    load_heldout,
    load_heldout_lagged,
    load_result,
    load_sample,
    load_slices,
    load_tau,
    progress_callback,
    unavailable_pages,
)
from app_pages._registry import PAGE_ROLES, PAGE_TITLES, page_needs, page_title, pages
from app_pages._selection import (
    ALPHA_RANGE,
    DASHBOARD_METHODS,
    PAGE_PARAMS,
    SCOPE_ALPHA_RANGE,
    SLICE_SEP,
    TAU_RANGE,
    Selection,
    _bound,
    _from_params,
    _number,
    bound_radio,
    bound_slider,
    selection,
    sync_url,
    update,
)
from app_pages._sidebar import (
    PRESENTATION_CSS,
    _on_dataset,
    _on_judge,
    _sidebar,
    apply_presentation_mode,
    resolve_selection,
    sidebar,
)
from app_pages._store import (
    ALL_JUDGES_MIN_INTERVAL_S,
    PRECOMPUTE_SETTLE_S,
    READ_LINGER_S,
    READ_WAIT_S,
    TOKEN_REFRESH_S,
    StoreState,
    _Behind,
    _file_stamp,
    _store_states,
    _StoreStates,
    busy_notice,
    db_path,
    judge_version,
    read_lagged,
    read_persisted,
    read_store,
    reading,
    start_precompute,
    store_available,
    store_state,
    version,
    votes_version,
)
from app_pages._widgets import (
    Context,
    _builder_name,
    _shared_figure,
    back_to_fitted_tau_button,
    caption,
    export_buttons,
    notice,
    page_guard,
    require,
    require_selection,
    show_chart,
    show_table,
    slice_picker,
    snap_selected_tau,
    tau_control,
)
from core.app.safe_text import escape_markdown as esc

__all__ = [
    "ALL_JUDGES_MIN_INTERVAL_S",
    "ALPHA_RANGE",
    "Access",
    "Context",
    "DASHBOARD_METHODS",
    "PAGE_PARAMS",
    "PAGE_ROLES",
    "PAGE_TITLES",
    "PRECOMPUTE_SETTLE_S",
    "PRESENTATION_CSS",
    "READ_LINGER_S",
    "READ_WAIT_S",
    "SCOPE_ALPHA_RANGE",
    "SLICE_SEP",
    "Selection",
    "StoreState",
    "TAU_RANGE",
    "TOKEN_REFRESH_S",
    "_Behind",
    "_StoreStates",
    "_bound",
    "_builder_name",
    "_current_heldout",
    "_file_stamp",
    "_from_params",
    "_number",
    "_on_dataset",
    "_on_judge",
    "_secret",
    "_shared_figure",
    "_sidebar",
    "_store_states",
    "access",
    "admin_unlocked",
    "allowed_pages",
    "apply_presentation_mode",
    "back_to_fitted_tau_button",
    "bound_radio",
    "bound_slider",
    "busy_notice",
    "caption",
    "configured_admin_token",
    "dataset_facts",
    "dataset_options",
    "db_path",
    "default_judge",
    "esc",
    "export_buttons",
    "forbidden",
    "judge_options",
    "judge_version",
    "load_frame",
    "load_heldout",
    "load_heldout_lagged",
    "load_result",
    "load_slices",
    "load_sample",
    "load_tau",
    "notice",
    "page_guard",
    "page_needs",
    "page_title",
    "pages",
    "progress_callback",
    "read_lagged",
    "read_persisted",
    "read_store",
    "reading",
    "require",
    "require_selection",
    "resolve_selection",
    "selection",
    "show_chart",
    "show_table",
    "slice_picker",
    "sidebar",
    "sign_in_configured",
    "sign_in_page",
    "signed_in_sidebar",
    "start_precompute",
    "store_available",
    "store_state",
    "sync_url",
    "snap_selected_tau",
    "tau_control",
    "unavailable_pages",
    "update",
    "version",
    "votes_version",
]
