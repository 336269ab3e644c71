"""The Selective page's figures: coverage against risk, and coverage curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import NEUTRAL, SYMBOLS, _colour, _layout
from core.methods import OKABE_ITO


def coverage_risk(table: pd.DataFrame, methods: list[str], alpha_marker: float | None = None) -> go.Figure:
    """Mean test risk vs α with ±1σ bands, the y = x line, and × where the mean risk exceeds α."""
    fig = go.Figure()
    alphas = sorted(table["alpha"].unique())
    fig.add_trace(
        go.Scatter(
            x=alphas,
            y=alphas,
            mode="lines",
            line=dict(color=NEUTRAL, dash="dot"),
            name="risk = α (target)",
            hoverinfo="skip",
        )
    )
    for k, m in enumerate(methods):
        t = table[table["method"] == m].sort_values("alpha")
        if t.empty:
            continue
        colour = _colour(k)
        upper = (t["risk_mean"] + t["risk_sd"].fillna(0)).to_numpy()
        lower = np.maximum(t["risk_mean"] - t["risk_sd"].fillna(0), 0).to_numpy()
        fig.add_trace(
            go.Scatter(
                x=np.r_[t["alpha"], t["alpha"][::-1]],
                y=np.r_[upper, lower[::-1]],
                fill="toself",
                fillcolor=colour,
                opacity=0.15,
                line=dict(width=0),
                showlegend=False,
                legendgroup=m,
                hoverinfo="skip",
            )
        )
        over = (t["risk_mean"] > t["alpha"] + 1e-12).to_numpy()
        fig.add_trace(
            go.Scatter(
                x=t["alpha"],
                y=t["risk_mean"],
                mode="lines+markers",
                name=m,
                line=dict(color=colour),
                legendgroup=m,
                marker=dict(symbol=np.where(over, "x", "circle"), size=np.where(over, 13, 7), color=colour),
                customdata=np.c_[t["coverage_mean"], t["empty_splits"], t["share_over_alpha"]],
                hovertemplate=(
                    m + "<br>α %{x:.2f}<br>mean risk %{y:.3f}<br>accepted share %{customdata[0]:.2f}"
                    "<br>splits with nothing accepted %{customdata[1]}<br>share of all splits over α "
                    "%{customdata[2]:.2f}<extra></extra>"
                ),
            )
        )
    if alpha_marker is not None:
        fig.add_vline(
            x=alpha_marker,
            line_dash="dash",
            line_color=OKABE_ITO[1],
            annotation_text=f"slider α = {alpha_marker:.2f}",
            annotation_position="top left",
        )
    fig.update_yaxes(rangemode="tozero")
    return _layout(
        fig,
        "Risk among accepted judgments vs target α (× = mean risk above α)",
        "target error rate α",
        "error rate among accepted (mean over splits ±1σ)",
        height=450,
    )


def coverage_curve(table: pd.DataFrame, methods: list[str], alpha_marker: float | None = None) -> go.Figure:
    fig = go.Figure()
    for k, m in enumerate(methods):
        t = table[table["method"] == m].sort_values("alpha")
        if t.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=t["alpha"],
                y=t["coverage_mean"],
                mode="lines+markers",
                name=m,
                line=dict(color=_colour(k)),
                marker=dict(symbol=SYMBOLS[k % len(SYMBOLS)]),
                error_y=dict(type="data", array=t["coverage_sd"].fillna(0).to_numpy(), thickness=1),
                hovertemplate=m + "<br>α %{x:.2f}<br>accepted share %{y:.3f}<extra></extra>",
            )
        )
    if alpha_marker is not None:
        fig.add_vline(x=alpha_marker, line_dash="dash", line_color=OKABE_ITO[1])
    fig.update_yaxes(range=[-0.03, 1.05])
    return _layout(
        fig,
        "Coverage: share of judgments accepted",
        "target error rate α",
        "accepted share of test battles (±1σ)",
        height=400,
    )
