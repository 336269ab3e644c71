"""Streamlit entry point: page config, navigation and the shared sidebar.

Run with ``make run`` (``scripts/serve.py``, which is ``streamlit run app.py``
with the first visitor's deep link fixed); the store comes from the
``ARENA_DB`` environment variable (default ``data/arena.duckdb``).

Page files end in ``_page.py`` so that no file name equals a URL path:
Streamlit would otherwise route a deep link such as ``/leaderboard`` straight
to ``pages/leaderboard.py`` (its legacy pages/ folder), bypassing this script
and the sidebar it draws.  The default page (Overview) lives at ``/``.
"""

import streamlit as st

from pages._shared import apply_presentation_mode, sidebar

st.set_page_config(page_title="Judge Arena", page_icon=":material/leaderboard:", layout="wide")

PAGES = [
    ("overview_page.py", "Overview", ":material/dashboard:", "overview"),
    ("leaderboard_page.py", "Leaderboard", ":material/leaderboard:", "leaderboard"),
    ("calibration_page.py", "Calibration", ":material/tune:", "calibration"),
    ("residuals_page.py", "Residuals", ":material/scatter_plot:", "residuals"),
    ("bias_page.py", "Judge bias", ":material/balance:", "bias"),
    ("selective_page.py", "Selective judging", ":material/filter_alt:", "selective"),
    ("judges_page.py", "Judges & annotators", ":material/groups:", "judges"),
    ("analyses_page.py", "Analyses", ":material/science:", "analyses"),
    ("admin_page.py", "Admin", ":material/admin_panel_settings:", "admin"),
]

nav = st.navigation([
    st.Page(f"pages/{file}", title=title, icon=icon, url_path=url, default=(k == 0))
    for k, (file, title, icon, url) in enumerate(PAGES)
])
sidebar()
apply_presentation_mode()
nav.run()
