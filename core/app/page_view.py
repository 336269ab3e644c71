"""What a page shows besides its figures and tables, as plain data the view models return: metrics and notices.

The pages draw these (``st.metric``, the pages' ``notice``); composing them here lets a test read what a page
will say without running Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One ``st.metric``: its label, the value as shown, and its help (None: no help icon)."""

    label: str
    value: str | int
    help: str | None = None


@dataclass(frozen=True)
class Notice:
    """A result the data cannot support: why, and what would make it work (None: nothing to add)."""

    text: str
    fix: str | None = None
