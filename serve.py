"""Start the dashboard with the computing modules already imported: ``python serve.py [streamlit options]``.

``streamlit run app.py`` imports a page's modules (plotly, scipy, the use
cases: about 1.5 s on 2 cores) in the first visitor's script run, after the
browser has loaded the front end.  This launcher imports them first and then
runs ``streamlit run app.py`` in the same process, so the server starts
~1.5 s later and the first page is that much sooner.  ``make run`` uses it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# What the pages import (the statistics, the charts and plotly, scipy through them).
PRELOAD = (
    "core.app.analyses",
    "core.app.bias",
    "core.app.judges",
    "core.app.leaderboard",
    "core.app.overview",
    "core.app.selective",
    "core.charts",
)

if __name__ == "__main__":
    for name in PRELOAD:
        importlib.import_module(name)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(Path(__file__).with_name("app.py")), *sys.argv[1:]]
    sys.exit(cli.main())
