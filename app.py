"""Streamlit entry point: page config, navigation and the shared sidebar.

Run with ``make run`` (or ``streamlit run app.py``); the store comes from the
``ARENA_DB`` environment variable (default ``data/arena.duckdb``).
"""

import streamlit as st

from pages._shared import apply_presentation_mode, sidebar

st.set_page_config(page_title="Judge Arena", page_icon=":material/leaderboard:", layout="wide")

PAGES = [
    st.Page("pages/overview_page.py", title="Overview", icon=":material/dashboard:", default=True, url_path="overview"),
    st.Page("pages/leaderboard_page.py", title="Leaderboard", icon=":material/leaderboard:", url_path="leaderboard"),
    st.Page("pages/calibration_page.py", title="Calibration", icon=":material/tune:", url_path="calibration"),
    st.Page("pages/residuals_page.py", title="Residuals", icon=":material/scatter_plot:", url_path="residuals"),
    st.Page("pages/bias_page.py", title="Judge bias", icon=":material/balance:", url_path="bias"),
    st.Page("pages/selective_page.py", title="Selective judging", icon=":material/filter_alt:", url_path="selective"),
    st.Page("pages/judges_page.py", title="Judges & annotators", icon=":material/groups:", url_path="judges"),
    st.Page("pages/analyses_page.py", title="Analyses", icon=":material/science:", url_path="analyses"),
    st.Page("pages/admin_page.py", title="Admin", icon=":material/admin_panel_settings:", url_path="admin"),
]

# Page files end in _page.py so that no file name equals a URL path: Streamlit
# would otherwise route a deep link such as /overview straight to
# pages/overview.py (its legacy pages/ folder), bypassing this script and the
# sidebar it draws.
nav = st.navigation(PAGES)
sidebar()
apply_presentation_mode()
nav.run()
