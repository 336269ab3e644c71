"""The selection: what defines a view, with one home (:class:`Selection` in ``st.session_state``).

A fresh session reads it from the URL (``st.query_params``); every widget that edits it writes it back
through its callback, before the script reruns; ``app.py`` mirrors it into the URL on every run
(:func:`sync_url`).  Widgets never own the state: their keys are rewritten from the home before they are
drawn (:func:`bound_slider`, :func:`bound_radio`), because Streamlit forgets the value of a widget that
the current page does not draw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.app import leaderboard as app_leaderboard
from core.app import selective as app_selective
from core.domain import Slice, parse_slice
from core.methods import RATING_METHODS

TAU_RANGE = app_leaderboard.TAU_BOUNDS
ALPHA_RANGE = (0.05, 0.5)
SCOPE_ALPHA_RANGE = (0.05, 0.4)
DASHBOARD_METHODS = tuple(name for name, m in RATING_METHODS.items() if m.dashboard)  # drawn by default


# ================================================================ selection
SLICE_SEP = "|"  # between a slice's terms in the URL (values may hold commas: Arena-Hard's cluster names)


@dataclass
class Selection:
    """What defines a view; one per browser session (``st.session_state``), mirrored in the URL."""

    dataset: str | None = None
    judge: str | None = None
    tau: float | None = None  # None: the selected judge's fitted τ
    alpha: float = 0.1  # miscoverage of the conformal intervals (Leaderboard, Residuals)
    scope_alpha: float = app_selective.DEFAULT_ALPHA  # SCOPE's target error rate among accepted judgments
    scope_source: str | None = None  # where SCOPE's P(a ≻ b) comes from; None: the best the judge supports
    show: tuple[str, ...] = DASHBOARD_METHODS  # leaderboards drawn on the Leaderboard page
    present: bool = False
    slice: Slice = ()  # the Leaderboard's battles: only those whose prompt has every (key, value); () = all
    style: bool = False  # the Leaderboard's style-control toggle

    def to_params(self) -> dict[str, str]:
        """The URL form: only values that differ from a fresh session's."""
        default = Selection()
        out: dict[str, str] = {}
        if self.dataset is not None:
            out["dataset"] = self.dataset
        if self.judge is not None:
            out["judge"] = self.judge
        if self.tau is not None:
            out["tau"] = f"{self.tau:.3g}"
        if self.alpha != default.alpha:
            out["alpha"] = f"{self.alpha:.2f}"
        if self.scope_alpha != default.scope_alpha:
            out["scope_alpha"] = f"{self.scope_alpha:.2f}"
        if self.scope_source is not None:
            out["source"] = self.scope_source
        if self.show != default.show:
            out["show"] = ",".join(self.show)
        if self.present:
            out["present"] = "1"
        if self.slice:
            out["slice"] = SLICE_SEP.join(f"{k}={v}" for k, v in self.slice)
        if self.style:
            out["style"] = "1"
        return out


def _number(params: dict[str, str], key: str, lo: float, hi: float) -> float | None:
    """A numeric query parameter inside its slider's range, else None (bad or absent values are ignored)."""
    try:
        v = float(params[key])
    except (KeyError, ValueError):
        return None
    return min(max(v, lo), hi) if v == v else None


def _from_params(params: dict[str, str]) -> Selection:
    s = Selection(
        dataset=params.get("dataset"),
        judge=params.get("judge"),
        scope_source=params.get("source"),
        tau=_number(params, "tau", *TAU_RANGE),
        present=params.get("present") == "1",
    )
    s.alpha = _number(params, "alpha", *ALPHA_RANGE) or s.alpha
    s.scope_alpha = _number(params, "scope_alpha", *SCOPE_ALPHA_RANGE) or s.scope_alpha
    if "show" in params:
        # any registered method (read now: one registered after import is drawn too), in the registry's order
        s.show = tuple(m for m in RATING_METHODS if m in params["show"].split(","))
    try:  # a malformed slice in a shared link is dropped, as any bad parameter
        s.slice = parse_slice(params["slice"].split(SLICE_SEP)) if params.get("slice") else ()
    except ValueError:
        s.slice = ()
    s.style = params.get("style") == "1"
    return s


def selection() -> Selection:
    """The session's selection (read from the URL on the session's first run)."""
    if "_selection" not in st.session_state:
        st.session_state["_selection"] = _from_params(st.query_params.to_dict())
    sel: Selection = st.session_state["_selection"]
    return sel


def update(**fields: Any) -> None:
    """Change the selection (from a callback or before anything depending on it is drawn)."""
    sel = selection()
    for name, value in fields.items():
        setattr(sel, name, value)


# Query parameters a page owns (the Vote page's annotator, token and queue): kept when the selection is mirrored.
PAGE_PARAMS = ("annotator", "vote_token", "queue")


def sync_url() -> None:
    """Mirror the selection into the URL (``app.py`` calls this on every run), keeping the pages' own parameters."""
    current = st.query_params.to_dict()
    want = {**selection().to_params(), **{k: current[k] for k in PAGE_PARAMS if k in current}}
    if current != want:
        st.query_params.from_dict(want)


def _bound(field: str, to_value: Callable[[Any], Any] = lambda v: v) -> tuple[str, Callable[[], None]]:
    """The widget key of a selection field and the callback that writes the widget's value home."""
    key = field

    def write_home() -> None:
        update(**{field: to_value(st.session_state[key])})

    return key, write_home


def bound_slider(
    field: str, label: str, lo: float, hi: float, shown: float, step: float = 0.01, **kwargs: Any
) -> float:
    """A slider that edits ``Selection.<field>``; ``shown`` is the value it starts from."""
    key, write_home = _bound(field, float)
    st.session_state[key] = min(max(float(shown), lo), hi)
    return float(st.slider(label, lo, hi, step=step, key=key, on_change=write_home, **kwargs))


def bound_radio(field: str, label: str, options: list[str], shown: str, **kwargs: Any) -> str:
    """A horizontal radio that edits ``Selection.<field>``; ``shown`` is the option it starts from."""
    key, write_home = _bound(field)
    st.session_state[key] = shown if shown in options else options[0]
    return str(st.radio(label, options, key=key, on_change=write_home, horizontal=True, **kwargs))
