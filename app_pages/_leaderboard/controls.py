"""The page's header: the τ and α sliders, the slice picker and the style toggle, read into :class:`Controls`."""

import dataclasses
from typing import Any

import streamlit as st

from app_pages._leaderboard.loaders import load_coverage
from app_pages._loaders import load_tau
from app_pages._selection import ALPHA_RANGE, bound_slider, selection, update
from app_pages._widgets import back_to_fitted_tau_button, notice, slice_picker, snap_selected_tau, tau_control
from core.app import leaderboard as lb
from core.app.safe_text import escape_markdown as esc
from core.domain import Slice

TAU_HELP = (
    "Soft targets are σ(τ·score gap); larger τ → targets closer to hard labels. The scale is logarithmic; the "
    "fitted τ is marked."
)
STYLE_HELP = (
    "Add the leaderboards fitted with answer length and markdown (headers, bold, lists) as covariates, so a "
    "model is not ranked up for writing longer or more formatted answers."
)


@dataclasses.dataclass(frozen=True)
class Controls:
    """What the header chose: τ (and the fit it is compared with, None without a judge), α, the slice, style."""

    tau: lb.TauUse
    alpha: float
    where: Slice
    style_on: bool
    has_votes: bool  # the judge's battles have human votes: there are intervals for a human Elo
    fit: Any = None


def _tau_slider(tau_fit: Any, has_gap: bool) -> tuple[float | None, bool]:
    if not has_gap:  # a control the data cannot use is left out, with the one line why
        st.caption("No τ: this judge has no rubric scores, so there is no Soft-Elo.")
        return None, False
    picked = tau_control(tau_fit, "τ (soft-target temperature)", help=TAU_HELP)
    st.caption(tau_fit.caption())
    back_to_fitted_tau_button(tau_fit)
    return picked


def _alpha_slider(alpha: float, has_votes: bool) -> float:
    if not has_votes:
        st.caption("No α: without human votes there are no intervals for a human Elo.")
        return alpha
    return bound_slider(
        "alpha",
        "α (miscoverage of the intervals)",
        *ALPHA_RANGE,
        shown=alpha,
        help="The intervals cover a new model's human Elo with probability ≥ 1 − α.",
    )


def _slice_and_style(dataset: str, present: bool, column: Any) -> tuple[Slice, bool]:
    """The slice picker and the style toggle (beside τ and α when there are sliders); the URL's in presentation
    mode."""
    where, style_on = selection().slice, selection().style
    if present:
        return where, style_on
    with column or st.container():
        where = slice_picker(dataset, key="lb_slice")
        st.session_state["lb_style"] = style_on
        style_on = st.toggle(
            "Style control",
            key="lb_style",
            on_change=lambda: update(style=bool(st.session_state["lb_style"])),
            help=STYLE_HELP,
        )
    return where, style_on


def header(dataset: str, judge: str | None, has_human: bool, present: bool) -> Controls:
    """The page's controls first, in its header: visible without scrolling at 1440×900 (none in presentation
    mode, which reads the same τ and α from the selection); stops when there is nothing to rank."""
    alpha = selection().alpha
    has_gap = has_votes = False
    tau_fit, column = None, None
    tau = lb.NO_JUDGE_TAU
    if judge is not None:
        tau_fit = load_tau(dataset, judge)
        has_gap, has_votes = dataclasses.astuple(load_coverage(dataset, judge))
        slider = None
        if not present:
            c_tau, c_alpha, column = st.columns(3)
            with c_tau:
                slider = _tau_slider(tau_fit, has_gap)
            with c_alpha:
                alpha = _alpha_slider(alpha, has_votes)
        else:
            snap_selected_tau(tau_fit)  # the τ the slider would show, as in the interactive page
        tau = lb.tau_use(slider, tau_fit.tau, tau_fit.ok, selection().tau, has_gap)
    elif not has_human:
        notice(f"dataset **{esc(dataset)}** has neither human votes nor judgments: there is nothing to rank yet.")
        st.stop()
    where, style_on = _slice_and_style(dataset, present, column)
    return Controls(tau, alpha, where, style_on, has_votes, tau_fit)
