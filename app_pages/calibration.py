"""Calibration: is σ(τ·score gap) a trustworthy probability that humans prefer a?

τ slider → core.app.calibration.reliability_curves(τ) / tau_profile → Store.battle_frame
         → core.charts.reliability_diagram
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import compute, load_sample, load_tau
from app_pages._widgets import (
    back_to_fitted_tau_button,
    notice,
    page_guard,
    require_selection,
    show_chart,
    show_table,
    tau_control,
)
from core import charts
from core.app import calibration, derived
from core.app import data as app_data
from core.app.availability import ADD_RUBRIC
from core.app.safe_text import escape_markdown as esc

st.title("Calibration")
Q_OPTIONS = [0.55, 0.65, 0.75, 0.85, 0.95]


def load_agreement(dataset: str, judge: str) -> calibration.GapAgreement:
    return compute(derived.agreement, dataset, judge)


def load_tau_profile(dataset: str, judge: str, tau: float | None) -> pd.DataFrame:
    return compute(derived.tau_profile, dataset, judge, tau)


def load_reliability(dataset: str, judge: str, tau: float, q: float) -> list[calibration.Reliability]:
    return compute(derived.reliability, dataset, judge, tau, q)


def load_label_reliability(dataset: str, judge: str, q: float) -> list[calibration.Reliability]:
    return compute(derived.label_reliability, dataset, judge, q)


def show_reliability(curves: list[calibration.Reliability], sample: app_data.SampledFrame) -> None:
    show_chart(
        partial(charts.reliability_diagram, curves),
        key="reliability_chart",
        how_to_read="points on the dotted diagonal are calibrated: when a target puts 80% on the judge's "
        "side, humans agree 80% of the time. Hard labels claim 100% and sit far below it; "
        "hard labels and label smoothing have one confidence value, hence one point.",
    )
    show_table(
        [
            {"target": c.label, "ECE": round(c.ece, 4), "battles": c.n, "agreement with humans": round(c.accuracy, 3)}
            for c in curves
        ],
        hide_index=True,
    )
    st.caption(
        "ECE: expected calibration error, Σ (battles in bin / all) × |agreement − confidence|. Soft "
        "targets skip battles with a zero gap; hard labels and label smoothing skip judge ties; every "
        "target counts only battles whose human verdict is decisive (all votes on one side)."
        + (f" {sample.statement()}" if sample.sampled else "")
    )


with page_guard("The calibration page", page="calibration"):
    ctx = require_selection(needs_judge="calibration compares a judge's score gaps with human votes.")
    dataset, judge = ctx.dataset, ctx.judge
    assert judge is not None
    sample = load_sample(dataset, judge)
    frame = sample.frame
    if frame["gap"].notna().sum() == 0:
        notice(
            f"judge **{esc(judge)}** has no rubric scores on **{esc(dataset)}**: there is no score gap, so no τ and "
            "no soft targets to calibrate. Its verdicts are hard labels; below, how often humans agree with them.",
            fix=ADD_RUBRIC,
        )
        q = st.select_slider(
            "label-smoothing q (baseline)",
            options=Q_OPTIONS,
            value=0.75,
            key="ls_q",
            help="Label smoothing puts confidence q on the judge's side of every battle.",
        )
        show_reliability(load_label_reliability(dataset, judge, q), sample)
        st.stop()
    fit = load_tau(dataset, judge)
    if not fit.ok:
        notice(
            f"τ cannot be fitted here: {fit.reason}. Calibration needs battles with both a score gap and a "
            "decisive human vote.",
            fix=ADD_RUBRIC,
        )
        st.stop()
    c1, c2 = st.columns(2)
    with c1:
        tau, _ = tau_control(
            fit,
            "τ to compare with the fitted one",
            help="Drawn as a second soft-target curve in the reliability diagram and a dashed line on the profile.",
        )
        st.caption(fit.caption() + (f" — the optimum sits on the {fit.at_bound} search bound" if fit.at_bound else ""))
        back_to_fitted_tau_button(fit)
    q = c2.select_slider(
        "label-smoothing q (baseline)",
        options=Q_OPTIONS,
        value=0.75,
        key="ls_q",
        help="Label smoothing puts confidence q on the judge's side of every battle.",
    )

    agree = load_agreement(dataset, judge)
    if agree.warning:
        st.warning("Low-τ warning: " + agree.warning)

    left, right = st.columns(2)
    with left:
        show_chart(
            partial(charts.tau_profile, load_tau_profile(dataset, judge, tau), fit.tau, fit.lower, fit.upper, tau),
            key="tau_profile",
            how_to_read="the curve is twice the log-likelihood lost by moving τ away from its best value; "
            "τ values under the dotted line form the 95% interval (shaded).",
        )
    with right:
        if len(agree.bins):
            show_chart(
                partial(charts.gap_agreement, agree.bins),
                key="gap_agreement",
                how_to_read="battles grouped by how far apart the judge scored the two answers; a rising "
                "curve means the gap measures how sure humans are, which Soft-Elo relies on.",
            )
        else:
            notice(agree.warning or "too few decisive battles for the agreement curve.")

    show_reliability(load_reliability(dataset, judge, tau, q), sample)
