"""Core of the judge-arena leaderboard: storage, fitting and diagnostics.

Nothing in this package imports Streamlit; only ``core.store`` speaks SQL.
"""

__version__ = "0.2.0"
