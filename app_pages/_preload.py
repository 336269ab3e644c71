"""Start loading the browser's chart library while the server still runs the page.

Streamlit's front end loads Plotly (a 4.7 MB module) only when the first chart of a page load arrives, that
is after the page's script has computed it; then the browser fetches and evaluates the module (about 2.7 s
on the first visit of a 2-core machine, 0.8 s from its cache) before it draws anything.  Importing that
module from the first element of every run lets the browser do it while the server computes, so the chart is
drawn as soon as it arrives.  The module is the same file the front end imports later (same URL, one module
instance), so nothing is loaded twice.  Its name is hashed per Streamlit release: it is found in the
installed package, and without it (another release) nothing is emitted and pages load as before.
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

_CHUNK_GLOB = "PlotlyChart.*.js"


@functools.cache
def chart_module() -> str | None:
    """The file name of the front end's Plotly module in the installed Streamlit, or None."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob(_CHUNK_GLOB))
    return found[0].name if len(found) == 1 else None


def preload_charts() -> None:
    """Emit (once per page load) the import of the chart module, resolved next to the front end's own
    scripts so a served base path is kept."""
    name = chart_module()
    if name is None:
        return
    script = (
        "<script>(() => {"
        " if (window.__chartsPreloaded) return; window.__chartsPreloaded = true;"
        " const own = document.querySelector('script[src*=\"/static/js/index.\"]');"
        f" if (own) import(new URL({name!r}, own.src).href).catch(() => {{}});"
        "})();</script>"
    )
    with st.sidebar:
        st.html(script, unsafe_allow_javascript=True)
