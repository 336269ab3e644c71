"""Residuals: where and by how much the judge's Elo misses the human Elo (held out)."""

import streamlit as st

from core import charts
from core.conformal import conformal_quantile, evaluate_splits, scores
from core.heldout import residual_ramp
from pages._shared import (caption, get_store, load_heldout, page_guard, param, selected_dataset, selected_judge,
                           version)

st.title("Residuals")

LABELS = {"hard": "Hard-Elo", "soft": "Soft-Elo"}

with page_guard("The residuals page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None or judge is None:
        st.info("Select a dataset with judgments and human votes.")
        st.stop()
    held = load_heldout(dataset, judge, version(), all_methods=True)
    if held is None or held.table.empty:
        st.info("No human votes here: residuals compare judge Elo with human Elo, so they need human votes.")
        st.stop()
    if "alpha" not in st.session_state:
        st.session_state["alpha"] = param("alpha", 0.1, 0.05, 0.5)
    alpha = st.slider("α (miscoverage)", 0.05, 0.5, key="alpha", step=0.01)
    st.query_params["alpha"] = f"{alpha:.2f}"
    table = held.table
    methods = [m for m in held.methods if f"{m}_elo" in table]
    summary = held.summary()
    summary["qhat"] = [conformal_quantile(scores(table[f"{m}_resid"], table[f"{m}_se"]), alpha).qhat
                       for m in summary["method"]]
    shown = {m: LABELS.get(m, m) for m in ("hard", "soft") if m in methods}
    st.plotly_chart(charts.judge_vs_human(table, shown), width="stretch")
    caption("each point is a model left out of the fit; on the dotted line the judge's Elo equals the human Elo. "
            "Hard-Elo spreads models further than humans do.")
    c1, c2 = st.columns(2)
    with c1:
        st.plotly_chart(charts.residual_ramp(residual_ramp(table, list(shown)), shown), width="stretch")
        caption("bars above zero mean the judge over-rates that quarter of models; a ramp means the error depends "
                "on strength.")
    with c2:
        st.plotly_chart(charts.width_decomposition(summary[summary["method"].isin(methods)]), width="stretch")
        caption("interval width is 2·q̂·SE: a method moves down-left toward narrower intervals by either a smaller "
                "SE or a smaller calibrated multiplier q̂.")
    st.subheader("Held-out accuracy and intervals over random splits")
    rows = []
    for m in methods:
        ev = evaluate_splits(table[f"{m}_resid"], table[f"{m}_se"], alpha, n_splits=50, seed=42)
        s = summary.set_index("method").loc[m]
        rows.append({"method": m, "MAE (Elo)": s["mae"], "Spearman": s["spearman"], "Kendall": s["kendall"],
                     "median SE": s["median_se"], "q̂": s["qhat"], "coverage (mean)": ev.coverage_mean,
                     "coverage (min–max)": f"{ev.coverage_min:.2f}–{ev.coverage_max:.2f}",
                     "median width": ev.width_mean, "splits too small for α": ev.n_infinite})
    st.dataframe(rows, hide_index=True)
    caption(f"50 random half/half splits of the {len(table)} held-out models; coverage should sit near "
            f"{1 - alpha:.0%} or above.")
