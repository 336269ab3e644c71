"""The chart-library preload names a module the installed Streamlit serves (a release that renames it would
silently lose the preload: this test says so instead)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app_pages._preload import chart_module


def test_the_preloaded_module_is_the_one_streamlits_front_end_imports():
    name = chart_module()
    assert name is not None, "no PlotlyChart.*.js in this Streamlit release: update app_pages/_preload.py"
    js = Path(st.__file__).parent / "static" / "static" / "js"
    importers = [f.name for f in js.glob("*.js") if f.name != name and name in f.read_text(errors="ignore")]
    assert importers, f"no front-end module imports {name}"  # the same URL the front end's lazy import uses
