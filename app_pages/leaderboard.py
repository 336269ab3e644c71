"""Leaderboard: Hard-Elo, Soft-Elo and human Elo, with conformal intervals for human Elo.

τ slider → core.app.leaderboard.judge_elo(soft, τ) → Store.battle_frame → core.charts.leaderboard_intervals
α slider → core.app.leaderboard.leaderboard_view (q̂ only; leave-one-out table cached)
         → core.charts.leaderboard_intervals
"""

import pandas as pd
import streamlit as st

from app_pages._shared import (
    ALPHA_RANGE,
    DASHBOARD_METHODS,
    back_to_fitted_tau_button,
    bound_slider,
    current_store,
    export_buttons,
    load_frame,
    load_heldout,
    load_tau,
    page_guard,
    require_selection,
    selection,
    show_chart,
    tau_slider,
    update,
)
from core import charts
from core.app import Unavailable
from core.app import leaderboard as lb
from core.methods import RATING_METHODS

st.title("Leaderboard")


@st.cache_data(show_spinner=False)
def load_human(dataset: str, token: str) -> pd.DataFrame | None:
    res = lb.human_ratings(current_store(), dataset)
    return None if isinstance(res, Unavailable) else res.frame


@st.cache_data(show_spinner=False, max_entries=64)
def load_judge_elo(dataset: str, judge: str, method: str, tau: float | None, token: str) -> pd.DataFrame:
    return lb.judge_elo(load_frame(dataset, judge, token), method, tau)


def shown_methods(available: list[str]) -> list[str]:
    """The method toggles (``Selection.show``, in the URL as ``?show=human,hard``)."""
    key = "show"
    st.session_state[key] = [m for m in selection().show if m in available]

    def write_home() -> None:
        picked = st.session_state[key] or []
        update(show=tuple(m for m in DASHBOARD_METHODS if m in picked or m not in available))

    picked = st.pills(
        "Show",
        available,
        selection_mode="multi",
        key=key,
        on_change=write_home,
        format_func=lambda m: RATING_METHODS[m].label,
        help="Which leaderboards to draw; the table always has all of them.",
    )
    return [m for m in available if m in (picked or [])]


with page_guard("The leaderboard"):
    ctx = require_selection(needs_judge="there is no Hard- or Soft-Elo to show.")
    dataset, judge, v = ctx.dataset, ctx.judge, ctx.token
    assert judge is not None
    frame = load_frame(dataset, judge, v)
    tau_fit = load_tau(dataset, judge, v)
    has_gap = bool(frame["gap"].notna().any())
    has_votes = bool(frame["human_y"].notna().any())

    controls = st.columns([2, 2, 1])
    with controls[2]:
        st.write("")
        back_to_fitted_tau_button(tau_fit)
    with controls[0]:
        tau = tau_slider(
            tau_fit,
            "τ (soft-target temperature)",
            disabled=not has_gap,
            help="Soft targets are σ(τ·score gap). Larger τ → targets closer to hard labels.",
        )
        st.caption(tau_fit.caption() if has_gap else "This judge has no rubric scores: no Soft-Elo.")
    with controls[1]:
        alpha = bound_slider(
            "alpha",
            "α (miscoverage of the intervals)",
            *ALPHA_RANGE,
            shown=selection().alpha,
            disabled=not has_votes,
            help="The intervals cover a new model's human Elo with probability ≥ 1 − α.",
        )
        st.caption(
            f"intervals at {1 - alpha:.0%} coverage" if has_votes else "No human votes: no conformal intervals to size."
        )

    held = load_heldout(dataset, judge, v) if has_votes else None
    human = load_human(dataset, v)
    hard = load_judge_elo(dataset, judge, "hard", None, v)
    soft = load_judge_elo(dataset, judge, "soft", round(tau, 4), v) if has_gap else None
    interval_method = "soft" if has_gap else "hard"
    view = lb.leaderboard_view(human, hard, soft, held, alpha, tau, interval_method)

    statement = view.coverage_statement()
    if statement:
        st.success(statement)
    elif view.note:
        st.warning(view.note)

    available = [m for m in DASHBOARD_METHODS if f"{m}_elo" in view.table]
    shown = shown_methods(available)
    labels = {"human_elo": "human Elo", "hard_elo": "Hard-Elo (judge labels)", "soft_elo": f"Soft-Elo (τ = {tau:.2f})"}
    methods = {f"{m}_elo": labels[f"{m}_elo"] for m in shown}
    plot = view.table.copy()
    interval_col = None
    if view.has_intervals and f"{interval_method}_elo" in methods:
        plot[f"{interval_method}_elo_lower"] = plot["interval_lower"]
        plot[f"{interval_method}_elo_upper"] = plot["interval_upper"]
        interval_col = f"{interval_method}_elo"
    if not methods:
        st.info("Select at least one leaderboard to draw.")
    else:
        fig = charts.leaderboard_intervals(
            plot,
            methods,
            interval=interval_col,
            interval_label=f"{1 - alpha:.0%} conformal intervals for human Elo" if interval_col else "",
        )
        show_chart(
            fig,
            key="leaderboard_chart",
            how_to_read=(
                "each row is a model; markers are its Elo under each method (hover for the rank). The bar around the "
                f"{'Soft' if interval_method == 'soft' else 'Hard'}-Elo marker is the conformal interval: where the "
                "model's human Elo should lie. Models are sorted by "
                f"{'Soft' if 'soft_elo' in view.table else 'Hard'}-Elo."
            ),
        )

    if "soft_elo" in view.table:
        show_chart(
            charts.rank_slope(view.table, "hard_elo", "soft_elo", "Hard-Elo", "Soft-Elo"),
            key="rank_slope",
            how_to_read="each line joins a model's rank under hard labels (left) to its rank under soft "
            "targets (right); green ▲ moved up, orange ▼ moved down, grey kept its rank.",
        )

    st.subheader("Table")
    cols = [
        c
        for c in (
            "model",
            "human_rank",
            "human_elo",
            "human_lower",
            "human_upper",
            "hard_rank",
            "hard_elo",
            "soft_rank",
            "soft_elo",
            "interval_lower",
            "interval_upper",
            "n_judged",
        )
        if c in view.table
    ]
    table = view.table[cols]
    help_text = {
        "human_lower": "95% sandwich interval of the human Elo (lower end)",
        "human_upper": "95% sandwich interval of the human Elo (upper end)",
        "interval_lower": f"{1 - alpha:.0%} conformal interval for the human Elo (lower end)",
        "interval_upper": f"{1 - alpha:.0%} conformal interval for the human Elo (upper end)",
        "n_judged": "battles with a judge label",
    }
    config = {
        c: st.column_config.NumberColumn(format="%.1f", help=help_text.get(c))
        for c in cols
        if c.endswith(("_elo", "_lower", "_upper"))
    }
    config |= {
        c: st.column_config.NumberColumn(format="%d", help=help_text.get(c))
        for c in cols
        if c.endswith("_rank") or c == "n_judged"
    }
    st.dataframe(
        table, hide_index=True, width="stretch", column_config=config, height=min(38 * (len(table) + 1) + 4, 720)
    )
    st.caption("Click a column header to sort. Exports contain exactly this table.")
    export_buttons(
        table,
        f"leaderboard_{dataset}_{judge}",
        f"Leaderboard of {dataset}, judge {judge}" + (f", τ = {tau:.2f}, α = {alpha:.2f}" if has_gap else ""),
        key="lb_export",
    )
