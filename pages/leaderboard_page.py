"""Leaderboard: Hard-Elo, Soft-Elo and human Elo, with conformal intervals for human Elo.

τ slider → core.service.judge_elo(soft, τ) → Store.battle_frame → charts.leaderboard_intervals
α slider → core.service.leaderboard_view (q̂ only)   → charts.leaderboard_intervals
"""


import numpy as np
import streamlit as st

from core import charts, service
from pages._shared import (caption, get_store, load_frame, load_heldout, load_tau, page_guard, param,
                           selected_dataset, selected_judge, version)

st.title("Leaderboard")


@st.cache_data(show_spinner=False)
def load_human(dataset, token):
    return service.human_elo(get_store(), dataset)


@st.cache_data(show_spinner=False)
def load_judge_elo(dataset, judge, method, tau, token):
    return service.judge_elo(load_frame(dataset, judge, token), method, tau)


with page_guard("The leaderboard"):
    store = get_store()
    dataset, judge = selected_dataset(), selected_judge()
    if store is None or dataset is None:
        st.info("No dataset selected: build the demo (`make run`) or import data.")
        st.stop()
    if judge is None:
        st.info(f"Dataset **{dataset}** has no judgments yet, so there is no Hard- or Soft-Elo to show. "
                "Run a judge from the Admin page or import judgments.")
        st.stop()
    v = version()
    frame = load_frame(dataset, judge, v)
    tau_fit = load_tau(dataset, judge, v)
    has_gap = frame["gap"].notna().any()

    controls = st.columns([2, 2, 1])
    fitted = tau_fit.tau if tau_fit.ok else 1.0
    if "tau" not in st.session_state:
        st.session_state["tau"] = param("tau", fitted, 0.01, 5.0)
    if "alpha" not in st.session_state:
        st.session_state["alpha"] = param("alpha", 0.1, 0.05, 0.5)
    with controls[2]:
        st.write("")
        if st.button("Back to fitted τ", disabled=not tau_fit.ok, help="Reset the slider to the maximum-likelihood τ"):
            st.session_state["tau"] = float(np.clip(fitted, 0.01, 5.0))
    with controls[0]:
        tau = st.slider("τ (soft-target temperature)", 0.01, 5.0, key="tau", step=0.01, disabled=not has_gap,
                        help="Soft targets are σ(τ·score gap). Larger τ → targets closer to hard labels.")
        st.caption(tau_fit.caption() if has_gap else "This judge has no rubric scores: no Soft-Elo.")
    with controls[1]:
        alpha = st.slider("α (miscoverage of the intervals)", 0.05, 0.5, key="alpha", step=0.01)
    st.query_params["tau"] = f"{tau:.2f}"
    st.query_params["alpha"] = f"{alpha:.2f}"

    held = load_heldout(dataset, judge, v) if frame["human_y"].notna().any() else None
    human = load_human(dataset, v)
    hard = load_judge_elo(dataset, judge, "hard", None, v)
    soft = load_judge_elo(dataset, judge, "soft", round(tau, 4), v) if has_gap else None
    interval_method = "soft" if has_gap else "hard"
    view = service.leaderboard_view(human, hard, soft, held, alpha, tau, interval_method)

    if view.quantile is not None and view.quantile.finite:
        med = float(np.nanmedian(view.table["interval_upper"] - view.table["interval_lower"]))
        st.success(f"Each bar is a split-conformal interval for the model's **human** Elo: with α = {alpha:.2f}, "
                   f"it covers the human Elo of a new model with probability ≥ {1 - alpha:.0%} (marginally, "
                   f"models exchangeable). Calibrated on {view.quantile.n} held-out models with fitted τ per fold; "
                   f"q̂ = {view.quantile.qhat:.2f} SEs, median width {med:.0f} Elo.")
    elif view.note:
        st.warning(view.note)

    methods = {}
    if "human_elo" in view.table:
        methods["human_elo"] = "human Elo"
    methods["hard_elo"] = "Hard-Elo (judge labels)"
    if "soft_elo" in view.table:
        methods["soft_elo"] = f"Soft-Elo (τ = {tau:.2f})"
    plot = view.table.copy()
    interval_col = None
    if "interval_lower" in plot and view.quantile is not None and view.quantile.finite:
        plot[f"{interval_method}_elo_lower"] = plot["interval_lower"]
        plot[f"{interval_method}_elo_upper"] = plot["interval_upper"]
        interval_col = f"{interval_method}_elo"
    fig = charts.leaderboard_intervals(plot, methods, interval=interval_col,
                                       interval_label=f"{1 - alpha:.0%} conformal intervals for human Elo")
    st.plotly_chart(fig, width="stretch", key="leaderboard_chart")
    caption("each row is a model; dots are its Elo under each method, the bar around the Soft-Elo dot is where its "
            "human Elo should lie. Models are sorted by Soft-Elo.")

    if "soft_elo" in view.table:
        st.plotly_chart(charts.rank_slope(view.table, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo"),
                        width="stretch")
        caption("lines connect each model's rank under hard labels to its rank under soft targets; green moved up, "
                "orange moved down.")

    st.subheader("Table")
    cols = [c for c in ("model", "human_elo", "human_lower", "human_upper", "hard_elo", "soft_elo", "interval_lower",
                        "interval_upper", "human_rank", "hard_rank", "soft_rank", "n_judged") if c in view.table]
    table = view.table[cols]
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.1f") for c in cols if c != "model"})
    e = st.columns(3)
    e[0].download_button("CSV", table.to_csv(index=False), f"leaderboard_{dataset}_{judge}.csv", "text/csv")
    e[1].download_button("Markdown", service.export_markdown(table), f"leaderboard_{dataset}_{judge}.md")
    e[2].download_button("LaTeX", service.export_latex(table, caption=f"Leaderboard of {dataset}, judge {judge}"),
                         f"leaderboard_{dataset}_{judge}.tex")
