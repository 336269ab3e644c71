"""Streamlit entry point: page config, navigation and the shared sidebar.

``make run`` runs ``streamlit run app.py``; the store comes from the
``ARENA_DB`` environment variable (default ``data/arena.duckdb``).  The
pages live in ``app_pages/`` (a folder named ``pages/`` would put Streamlit
into its legacy file-based routing).  The default page (Overview) is at ``/``.
"""

import streamlit as st

from app_pages._shared import apply_presentation_mode, sidebar, sync_url

st.set_page_config(page_title="Judge Arena", page_icon=":material/leaderboard:", layout="wide")

PAGES = [
    ("overview.py", "Overview", ":material/dashboard:", "overview"),
    ("leaderboard.py", "Leaderboard", ":material/leaderboard:", "leaderboard"),
    ("calibration.py", "Calibration", ":material/tune:", "calibration"),
    ("residuals.py", "Residuals", ":material/scatter_plot:", "residuals"),
    ("bias.py", "Judge bias", ":material/balance:", "bias"),
    ("selective.py", "Selective judging", ":material/filter_alt:", "selective"),
    ("judges.py", "Judges & annotators", ":material/groups:", "judges"),
    ("analyses.py", "Analyses", ":material/science:", "analyses"),
    ("admin.py", "Admin", ":material/admin_panel_settings:", "admin"),
]

nav = st.navigation(
    [
        st.Page(f"app_pages/{file}", title=title, icon=icon, url_path=url, default=(k == 0))
        for k, (file, title, icon, url) in enumerate(PAGES)
    ]
)
sidebar()
sync_url()
apply_presentation_mode()
nav.run()
