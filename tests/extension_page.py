"""The page ``tests/extension_plugin.py`` registers: a page as a newcomer writes one, over the shared selection."""

import streamlit as st

from app_pages._widgets import page_guard, require_selection

st.title("Extension")

with page_guard("The extension page"):
    ctx = require_selection()
    st.markdown(f"the extension page ran on {ctx.dataset}")
