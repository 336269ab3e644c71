"""Residuals: where and by how much the judge's Elo misses the human Elo (each model held out).

α slider → core.app.residuals.residual_view (q̂ and random splits; the leave-one-out table is cached)
         → core.charts.width_decomposition / split_evaluation
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import compute, load_heldout
from app_pages._selection import ALPHA_RANGE, bound_slider, selection
from app_pages._widgets import notice, page_guard, require, require_selection, show_chart, show_table
from core import charts
from core.app import derived, residuals
from core.app import display as show
from core.app.availability import ADD_RUBRIC, ADD_VOTES, RUN_JUDGE
from core.app.safe_text import escape_markdown as esc

st.title("Residuals")


def load_residual_view(dataset: str, judge: str, alpha: float) -> residuals.ResidualView:
    return compute(derived.residual_view, dataset, judge, alpha)


def charts_section(table: pd.DataFrame, shown: dict[str, str], view: residuals.ResidualView) -> None:
    """Judge Elo against human Elo, the residual ramp by quartile and the width decomposition."""
    show_chart(
        partial(charts.judge_vs_human, table, shown),
        key="judge_vs_human",
        how_to_read="each point is a model left out of the judge fit; on the dotted line the judge's Elo "
        "equals the human Elo. Hard labels stretch the scale: points fan out from the line.",
    )
    c1, c2 = st.columns(2)
    with c1:
        ramp = residuals.residual_ramp(table, list(shown))
        if len(ramp):
            show_chart(
                partial(charts.residual_ramp, ramp, shown),
                key="residual_ramp",
                how_to_read="bars above zero mean the judge over-rates that quarter of models; a ramp from "
                "negative to positive means the error grows with strength.",
            )
        else:
            notice("fewer than four held-out models: no quartiles.")
    with c2:
        show_chart(
            partial(show.plain_chart, charts.width_decomposition, None, view.summary),
            key="width_decomposition",
            how_to_read="interval width is 2·q̂·√(SE² + σ̂²) (σ̂: the judge–human disagreement, which more judged "
            "battles do not shrink), so each dotted line is one width: a method narrows its intervals by a smaller "
            "scale (left) or a smaller calibrated multiplier q̂ (down).",
        )


def splits_section(table: pd.DataFrame, view: residuals.ResidualView, methods: list[str], alpha: float) -> None:
    """Held-out accuracy and the intervals' coverage and width over random calibration/test splits."""
    st.subheader("Held-out accuracy and intervals over random splits")
    for note in view.notes:
        st.warning(note)
    if view.splits_defined and len(view.per_split):
        show_chart(
            partial(
                show.plain_chart,
                charts.split_evaluation,
                None,
                view.per_split[view.per_split["method"].isin(methods)],
                alpha,
            ),
            key="split_evaluation",
            how_to_read=f"each box summarises {view.per_split['split'].nunique()} random half/half splits of "
            f"the {len(table)} held-out models: calibrate q̂ on one half, check the other. "
            f"Coverage should sit near {1 - alpha:.0%} or above; narrower is better at equal "
            "coverage.",
        )
    out = show.columns(
        view.summary[
            [
                "method",
                "mae",
                "spearman",
                "kendall",
                "median_se",
                "sigma",
                "qhat",
                "coverage",
                "coverage_min",
                "coverage_max",
                "median_width",
                "unbounded_splits",
            ]
        ],
        values=["method"],
    )
    show_table(
        out,
        hide_index=True,
        width="stretch",
        column_config={
            c: st.column_config.NumberColumn(format="%.2f")
            for c in out.columns
            if c not in (show.header("method"), show.header("unbounded_splits"))
        },
    )
    st.caption(
        "MAE, Spearman and Kendall compare held-out judge Elo with human Elo; the label-smoothing rows put "
        "confidence q on the judge's side of every battle (baselines). A q̂ of ∞ or an empty coverage cell "
        "means the calibration pool was too small for α."
    )


with page_guard("The residuals page", page="residuals"):
    ctx = require_selection(needs_judge="residuals compare a judge's Elo with the human Elo.")
    assert ctx.judge is not None
    held = require(load_heldout(ctx.dataset, ctx.judge, all_methods=True))
    if held.table.empty:
        notice(
            f"nothing to compare on **{esc(ctx.dataset)}**: no model has enough battles with both a human vote and "
            "a judge label. Residuals are judge Elo minus human Elo for each model left out of the judge fit.",
            fix=f"human votes and judge labels on the same battles: {ADD_VOTES}, or {RUN_JUDGE}",
        )
        st.stop()
    alpha = bound_slider(
        "alpha",
        "α (miscoverage)",
        *ALPHA_RANGE,
        shown=selection().alpha,
        help="Sets the conformal quantile q̂ and the coverage target 1 − α of the split evaluation.",
    )
    table = held.table
    view = load_residual_view(ctx.dataset, ctx.judge, alpha)
    methods = list(view.summary["method"])
    # a method without a single held-out Elo (Soft-Elo without rubric scores) is said missing, not drawn empty
    shown = {m: show.label(m) for m in ("hard", "soft") if m in methods and held.table[f"{m}_elo"].notna().any()}
    if held.tau_reason:
        notice(f"Soft-Elo is missing: {held.tau_reason}.", fix=ADD_RUBRIC)
    charts_section(table, shown, view)
    splits_section(table, view, methods, alpha)
