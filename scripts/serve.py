"""Serve the dashboard: ``streamlit run app.py [streamlit options]`` with routing fixed for the first visitor.

Why this launcher exists: Streamlit treats an app that has a ``pages/``
folder next to its entry script as a legacy multipage app until the entry
script has called ``st.navigation`` once in that server process.  So the very
first script run after a server start routes through the ``pages/`` file names
(``leaderboard_page``), and when that first visitor follows a shared deep link
such as ``/leaderboard?judge=...`` Streamlit sends a "Page not found" modal
before ``app.py`` takes over and renders the right page underneath it.  Every
later visitor is fine.  ``app.py`` routes with ``st.navigation`` only, so the
launcher tells Streamlit that before the server starts.  ``streamlit run
app.py`` still works; it just has that first-visitor modal
(``tests/test_browser.py`` checks both).

    python scripts/serve.py [--server.port 8501 ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

APP = Path(__file__).resolve().parent.parent / "app.py"


def main() -> int:
    if hasattr(PagesManager, "uses_pages_directory"):  # a private flag: without it there is nothing to fix
        PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", str(APP), *sys.argv[1:]]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
