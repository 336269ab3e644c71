"""Streamlit entry point: page config, navigation and the shared sidebar.

``make run`` runs ``streamlit run app.py``; the store comes from the
``ARENA_DB`` environment variable (default ``data/arena.duckdb``).  The
pages live in ``app_pages/`` (a folder named ``pages/`` would put Streamlit
into its legacy file-based routing).  The default page (Overview) is at ``/``.

With ``[auth]`` in Streamlit's secrets, a visitor signs in first (``st.login``) and the navigation lists only
the pages their role allows (``app_pages/_access.py``; README: Serving others).  Every page, its title,
icon, role and what data it needs is one entry of the page registry, ``app_pages/_registry.py``.
"""

import streamlit as st

from app_pages._access import access, allowed_pages, sign_in_page, signed_in_sidebar
from app_pages._loaders import unavailable_pages
from app_pages._preload import preload_charts
from app_pages._registry import navigation
from app_pages._selection import sync_url
from app_pages._sidebar import apply_presentation_mode, resolve_selection, sidebar

st.set_page_config(page_title="Judge Arena", page_icon=":material/leaderboard:", layout="wide")
preload_charts()  # the browser loads the chart library while this run computes

gate = access()
if gate.sign_in and gate.role is None:  # signed out, or no role: the sign-in page and nothing else
    st.navigation([st.Page(sign_in_page, title="Sign in", url_path="sign-in", default=True)], position="hidden").run()
    st.stop()
allowed = allowed_pages(gate)
resolve_selection()
blocked = unavailable_pages()  # a page that cannot run on this dataset gets a "block" icon; the sidebar says why
nav = st.navigation([st.Page(**entry) for entry in navigation(allowed, blocked)])
signed_in_sidebar(gate)
sidebar()
sync_url()
apply_presentation_mode()
nav.run()
