"""Calibration: is σ(τ·score gap) a trustworthy probability that humans prefer a?

τ slider → core.calibration.reliability(τ) → Store.battle_frame → charts.reliability_diagram
"""

import math

import streamlit as st

from core import charts
from core.calibration import gap_agreement, reliability
from pages._shared import (caption, get_store, load_frame, load_tau, page_guard, param, selected_dataset,
                           selected_judge, version)

st.title("Calibration")

with page_guard("The calibration page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None or judge is None:
        st.info("Select a dataset with judgments (the demo has three judges).")
        st.stop()
    v = version()
    frame = load_frame(dataset, judge, v)
    if frame["gap"].notna().sum() == 0:
        st.info(f"Judge **{judge}** has no rubric scores on **{dataset}**: there is no score gap to calibrate.")
        st.stop()
    fit = load_tau(dataset, judge, v)
    if not fit.ok:
        st.warning(f"τ cannot be fitted here: {fit.reason}. Calibration needs battles with a decisive human vote.")
        st.stop()
    if "tau" not in st.session_state:
        st.session_state["tau"] = param("tau", fit.tau, 0.01, 5.0)
    c1, c2 = st.columns(2)
    tau = c1.slider("τ to compare with the fitted one", 0.01, 5.0, key="tau", step=0.01)
    q = c2.select_slider("label-smoothing q", options=[0.55, 0.65, 0.75, 0.85, 0.95], value=0.75, key="ls_q")
    st.query_params["tau"] = f"{tau:.2f}"
    st.caption(fit.caption() + (" — the optimum sits on the search bound" if fit.at_bound else ""))

    gap, human, hard = frame["gap"], frame["human_y"], frame["judge_hard"]
    agree = gap_agreement(gap, human, fit.tau)
    if agree.warning:
        st.warning(agree.warning)

    left, right = st.columns(2)
    with left:
        st.plotly_chart(charts.tau_profile(fit.profile, fit.tau, fit.lower, fit.upper, tau), width="stretch")
        caption("the curve is twice the log-likelihood lost by moving τ away from its best value; where it stays "
                "under the dotted line is the 95% interval.")
    with right:
        st.plotly_chart(charts.gap_agreement(agree.bins), width="stretch")
        caption("battles grouped by how far apart the judge scored the two answers; a rising curve means the gap "
                "measures how sure humans are, which is what Soft-Elo relies on.")
    curves = [reliability(gap, human, hard, tau=fit.tau, label=f"fitted τ = {fit.tau:.3f}"),
              reliability(gap, human, hard, tau=tau, label=f"slider τ = {tau:.2f}"),
              reliability(gap, human, hard, tau=math.inf),
              reliability(gap, human, hard, q=q)]
    st.plotly_chart(charts.reliability_diagram(curves), width="stretch", key="reliability_chart")
    caption("points on the dotted diagonal are calibrated: when a target says 80% for the judge's side, humans "
            "agree 80% of the time. Hard labels claim 100% and sit far below it.")
    st.dataframe([{"target": c.label, "ECE": round(c.ece, 4), "battles": c.n, "agreement": round(c.accuracy, 3)}
                  for c in curves], hide_index=True)
