"""The pages: one entry each, from which the navigation, the sidebar, access and availability are read.

Adding a page is one :class:`Page` in :data:`PAGES` (and its module in ``app_pages/``): ``app.py`` builds
``st.navigation`` from :func:`navigation` in this order (the first is the default page, at ``/``), the
sidebar and the page's own notice name it by ``title``, :func:`allowed_pages` shows it only to sessions
whose role allows ``role``, and ``needs`` names the data it cannot run without (requirements of
``core.app.availability.REQUIREMENTS``, checked in order: the first one the dataset fails is the reason
the sidebar gives).

Everything here reads :data:`PAGES` when called, so a page registered later (or by a test) is seen by all
of them.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.app.access import ADMIN, ANNOTATOR, VIEWER

BLOCKED_ICON = ":material/block:"  # a page that cannot run on the selected dataset (the sidebar says why)


@dataclass(frozen=True)
class Page:
    """One page of the dashboard."""

    key: str  # its URL path and the name the rest of the code uses for it
    title: str
    icon: str  # a Material icon, ``:material/name:``
    role: str = VIEWER  # the least role that may open it (core.app.access), when sign-in is configured
    needs: tuple[str, ...] = ()  # core.app.availability requirements, in the order they are checked
    file: str | Path | None = None  # its script; default ``app_pages/<key>.py`` (relative to app.py)

    @property
    def path(self) -> str | Path:
        return self.file if self.file is not None else f"app_pages/{self.key}.py"


# the data every results page needs before anything else: battles
_DATA = ("battles",)

PAGES: tuple[Page, ...] = (
    Page("overview", "Overview", ":material/dashboard:"),
    # a dataset of single-answer grades only (FastChat's MT-Bench) has no battles: its leaderboard is the score
    Page("leaderboard", "Leaderboard", ":material/leaderboard:", needs=("battles-or-grades", "votes-judge-or-grades")),
    Page("calibration", "Calibration", ":material/tune:", needs=(*_DATA, "judge", "votes")),
    Page("residuals", "Residuals", ":material/scatter_plot:", needs=(*_DATA, "judge", "votes")),
    Page("bias", "Judge bias", ":material/balance:", needs=(*_DATA, "judge", "order-or-texts")),
    Page(
        "selective",
        "Selective judging",
        ":material/filter_alt:",
        needs=(*_DATA, "judge", "votes", "confidence"),
    ),
    Page("judges", "Judges & annotators", ":material/groups:", needs=(*_DATA, "judge-or-annotators")),
    Page("analyses", "Analyses", ":material/science:", needs=(*_DATA, "any-signal")),
    Page("vote", "Vote", ":material/how_to_vote:", role=ANNOTATOR),
    Page("evaluate", "Evaluate a model", ":material/model_training:"),
    Page("admin", "Admin", ":material/admin_panel_settings:", role=ADMIN),
)


def pages() -> dict[str, Page]:
    """Key → page, in navigation order (read from :data:`PAGES` at each call)."""
    return {p.key: p for p in PAGES}


def page_title(key: str) -> str:
    """The page's title (the key itself for an unknown page)."""
    page = pages().get(key)
    return page.title if page is not None else key


def page_needs() -> dict[str, tuple[str, ...]]:
    """Page key → the requirements it checks (``core.app.availability.unavailable_pages`` reads these)."""
    return {p.key: p.needs for p in PAGES}


def navigation(allowed: Iterable[str], blocked: Container[str] = ()) -> list[dict[str, Any]]:
    """The arguments of each ``st.Page`` of the navigation: the ``allowed`` pages in registry order, the first
    the default, a page in ``blocked`` (it cannot run on this dataset) with the block icon."""
    chosen = set(allowed)
    entries = [
        {
            "page": p.path,
            "title": p.title,
            "icon": BLOCKED_ICON if p.key in blocked else p.icon,
            "url_path": p.key,
            "default": k == 0,
        }
        for k, p in enumerate(p for p in PAGES if p.key in chosen)
    ]
    if entries:
        # Streamlit serves the default page only at "/" yet reserves its own pathname, so "/overview" (a
        # bookmarked or shared link) would be "page not found": the default takes a reserved name and the page's
        # own path becomes a hidden alias of the same script.
        first = entries[0]
        entries.append({**first, "default": False, "visibility": "hidden"})
        first["url_path"] = f"{first['url_path']}{DEFAULT_SUFFIX}"
    return entries


DEFAULT_SUFFIX = "-home"  # the default page's reserved pathname: its key + this (it is served at "/")
