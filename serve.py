"""Start the dashboard with the computing modules already imported: ``python serve.py [streamlit options]``.

``streamlit run app.py`` imports a page's modules (plotly, scipy, the use
cases, the ``openai`` client: about 2 s on 2 cores) in the first visitor's
script run, after the browser has loaded the front end, and pays a few more
one-time costs there (:func:`warm_up`).  This launcher pays them first and
then runs ``streamlit run app.py`` in the same process, so the server starts
that much later and the first page that much sooner.  ``make run`` uses it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# What the pages import (the statistics, the charts and plotly, scipy through them; the judging client).
PRELOAD = (
    "core.app.analyses",
    "core.app.bias",
    "core.app.evaluate",
    "core.app.judges",
    "core.app.leaderboard",
    "core.app.overview",
    "core.app.selective",
    "core.charts",
)

# Imported by a first page run beyond PRELOAD: the pages' own helper modules (every private module of
# app_pages, found at start so a new one is not forgotten; see private_page_modules) and the use cases they
# import, the icon names Streamlit checks, pyarrow's pandas conversion (tables and persisted frames).
FIRST_RUN_MODULES = (
    "pyarrow.pandas_compat",
    "streamlit.emojis",
    "streamlit.material_icon_names",
)


def private_page_modules() -> list[str]:
    """Every module and package of app_pages whose name starts with an underscore: the pages' shared parts
    (a page itself is not imported here: importing one runs it)."""
    import pkgutil

    import app_pages

    return [
        m.name
        for m in pkgutil.walk_packages(app_pages.__path__, "app_pages.")
        if any(part.startswith("_") for part in m.name.split(".")[1:])
    ]


def warm_up() -> None:
    """Pay here, once, what a fresh process otherwise pays in its first visitor's page run.

    A third of the demo's first Leaderboard run (0.72 → 0.47 s on 2 cores, with AppTest):

    - the modules the first run imports beyond :data:`PRELOAD`, and the version persisted results are keyed
      by (it reads ``core``'s source);
    - plotly's first figure: its per-trace-type validators and the dataframe adapter it converts columns
      with are loaded when first used, as is its JSON encoder;
    - Streamlit's check that it was started by ``streamlit run`` (this launcher always starts it so), made on
      the process's first element by walking every frame of the stack with its source (~0.1 s);
    - the imported objects moved out of the garbage collector's generations (``gc.freeze``), so the first
      runs' collections do not traverse them all.
    """
    import gc

    import numpy as np
    import pandas as pd
    import plotly.graph_objects as go
    import plotly.io
    import streamlit.delta_generator

    from core.version import results_version

    for name in (*private_page_modules(), *FIRST_RUN_MODULES):
        importlib.import_module(name)
    results_version()
    x = pd.Series(np.arange(3.0))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=x.astype(str), mode="markers", error_x=dict(array=x), customdata=np.c_[x]))
    fig.add_trace(go.Bar(x=x, y=x))
    fig.add_trace(go.Heatmap(z=np.eye(3)))
    fig.update_layout(title="warm-up", xaxis_title="x")
    plotly.io.to_json(fig, validate=False)
    streamlit.delta_generator._use_warning_has_been_displayed = True
    gc.collect()
    gc.freeze()


def start_background_precompute() -> None:
    """The store's results, computed once in a background process while the server already answers (pages
    compute what they need on demand meanwhile); none when they were computed for this data before, or when
    ``ARENA_PRECOMPUTE=0``."""
    import os

    from core.app import precompute
    from core.datahome import DEFAULT_DB

    db = os.environ.get("ARENA_DB", str(DEFAULT_DB))
    if os.environ.get("ARENA_PRECOMPUTE", "1") != "0" and Path(db).exists() and precompute.needed(db):
        precompute.start_in_background(db)


if __name__ == "__main__":
    import logging

    importlib.import_module("streamlit.runtime.caching.cache_data_api")  # its logger, at Streamlit's level

    # The pages' cached loaders are defined while this launcher imports them, before Streamlit's runtime
    # exists; Streamlit then warns "No runtime found, using MemoryCacheStorageManager" once per loader, about
    # nothing: memory is where the runtime keeps their cache too.
    caching_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = caching_log.level
    caching_log.setLevel(logging.ERROR)
    for name in PRELOAD:
        importlib.import_module(name)
    warm_up()
    caching_log.setLevel(level)
    start_background_precompute()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(Path(__file__).with_name("app.py")), *sys.argv[1:]]
    sys.exit(cli.main())
