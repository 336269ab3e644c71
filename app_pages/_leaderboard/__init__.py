"""The Leaderboard page's sections, one module each: the page (``app_pages/leaderboard.py``) reads its controls,
loads the view and calls them in order; what each section shows is decided in ``core.app.leaderboard``."""
