"""The Residuals page's figures: judge against human Elo, residual ramps, interval widths, splits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.charts.style import METHOD_COLOURS, NEUTRAL, _colour, _layout, _nice_log_ticks, _symbol
from core.methods import OKABE_ITO


def judge_vs_human(table: pd.DataFrame, methods: dict[str, str]) -> go.Figure:
    lo = np.nanmin([table["human_elo"].min()] + [table[f"{m}_elo"].min() for m in methods])
    hi = np.nanmax([table["human_elo"].max()] + [table[f"{m}_elo"].max() for m in methods])
    fig = go.Figure(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line=dict(color=NEUTRAL, dash="dot"),
            name="judge = human",
            hoverinfo="skip",
        )
    )
    for k, (m, label) in enumerate(methods.items()):
        fig.add_trace(
            go.Scatter(
                x=table["human_elo"],
                y=table[f"{m}_elo"],
                mode="markers",
                name=label,
                marker=dict(color=METHOD_COLOURS.get(m, _colour(k)), size=9, symbol=_symbol(m, k)),
                text=table["model"],
                customdata=np.c_[table[f"{m}_resid"]],
                hovertemplate="%{text}<br>human %{x:.0f}<br>" + label + " %{y:.0f}<br>residual %{customdata[0]:+.0f}"
                "<extra></extra>",
            )
        )
    return _layout(
        fig, "Held-out judge Elo vs human Elo", "human Elo (points)", "judge Elo with the model held out (points)"
    )


def residual_ramp(ramp: pd.DataFrame, labels: dict[str, str]) -> go.Figure:
    fig = go.Figure()
    for k, (m, label) in enumerate(labels.items()):
        r = ramp[ramp["method"] == m]
        fig.add_trace(
            go.Bar(
                x=r["quartile"],
                y=r["mean_residual"],
                name=label,
                marker_color=METHOD_COLOURS.get(m, _colour(k)),
                customdata=r["n"],
                hovertemplate=label + " %{x}: %{y:+.1f} Elo (%{customdata} models)<extra></extra>",
            )
        )
    fig.add_hline(y=0, line_color=NEUTRAL)
    fig.update_layout(barmode="group")
    return _layout(
        fig,
        "Residual ramp: judge − human Elo by human-Elo quartile",
        "human-Elo quartile (Q1 weakest)",
        "mean signed residual (Elo points)",
        height=400,
    )


def width_decomposition(summary: pd.DataFrame) -> go.Figure:
    """Median scale vs q̂ per method on log–log axes, where constant width (2·q̂·scale) is a straight line.

    The scale is √(SE² + σ̂²) (``median_scale``, the "floor" score of METHODS §4) where the summary has it, else the
    sandwich SE (the "se" score)."""
    x_col = "median_scale" if "median_scale" in summary else "median_se"
    s = summary[np.isfinite(summary["qhat"]) & (summary[x_col] > 0)]
    fig = go.Figure()
    if len(s):
        se_lo, se_hi = float(s[x_col].min()) / 2, float(s[x_col].max()) * 2
        q_lo, q_hi = float(s["qhat"].min()) / 2, float(s["qhat"].max()) * 2
        se_grid = np.geomspace(se_lo, se_hi, 50)
        widths = [w for w in (5, 10, 25, 50, 100, 200, 400, 800, 1600) if q_lo * 2 * se_lo < w < q_hi * 2 * se_hi]
        for w in widths:
            fig.add_trace(
                go.Scatter(
                    x=se_grid,
                    y=w / (2 * se_grid),
                    mode="lines",
                    line=dict(color=NEUTRAL, width=1, dash="dot"),
                    showlegend=False,
                    name=f"width {w} Elo",
                    hovertemplate=f"interval width {w} Elo<extra></extra>",
                )
            )
            # label each contour where it leaves the plot on the right or at the top
            x_at = min(se_hi, w / (2 * q_lo))
            x_lab = x_at / 1.15
            fig.add_annotation(
                x=np.log10(x_lab),
                y=np.log10(w / (2 * x_lab)),
                text=f"{w} Elo",
                showarrow=False,
                font=dict(size=10, color=NEUTRAL),
                xanchor="right",
            )
        fig.update_xaxes(
            type="log",
            range=[np.log10(se_lo), np.log10(se_hi)],
            tickvals=_nice_log_ticks(se_lo, se_hi),
            tickformat="~g",
            minor_showgrid=False,
        )
        fig.update_yaxes(
            type="log",
            range=[np.log10(q_lo), np.log10(q_hi)],
            tickvals=_nice_log_ticks(q_lo, q_hi),
            tickformat="~g",
            minor_showgrid=False,
        )
    fig.add_trace(
        go.Scatter(
            x=s[x_col],
            y=s["qhat"],
            mode="markers+text",
            text=s["method"],
            textposition="top center",
            marker=dict(size=12, color=[METHOD_COLOURS.get(m, OKABE_ITO[4]) for m in s["method"]]),
            name="method",
            showlegend=False,
            customdata=np.c_[2 * s["qhat"] * s[x_col]],
            hovertemplate="%{text}<br>median scale %{x:.1f} Elo<br>q̂ %{y:.2f}"
            "<br>median width ≈ %{customdata[0]:.0f} Elo<extra></extra>",
        )
    )
    return _layout(
        fig,
        "Why intervals differ: width = 2 · q̂ · √(SE² + σ̂²)"
        if x_col == "median_scale"
        else "Why intervals differ: width = 2 · q̂ · SE",
        "median √(SE² + σ̂²): sandwich SE and judge–human disagreement (Elo points, log scale)"
        if x_col == "median_scale"
        else "median sandwich SE (Elo points, log scale)",
        "conformal quantile q̂ (log scale)",
        height=440,
    )


def split_evaluation(per_split: pd.DataFrame, alpha: float) -> go.Figure:
    """Per-split coverage and median interval width, one box per method (finite splits only for width)."""
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=("coverage of the test models", "median interval width")
    )
    for k, (m, g) in enumerate(per_split.groupby("method", sort=False)):
        colour = METHOD_COLOURS.get(m, _colour(k))
        fin = g[np.isfinite(g["median_width"])]
        fig.add_trace(
            go.Box(
                y=g["coverage"],
                name=m,
                marker_color=colour,
                boxmean=True,
                legendgroup=m,
                showlegend=False,
                hovertemplate=m + "<br>coverage %{y:.2f}<extra></extra>",
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Box(
                y=fin["median_width"],
                name=m,
                marker_color=colour,
                boxmean=True,
                legendgroup=m,
                showlegend=False,
                hovertemplate=m + "<br>median width %{y:.0f} Elo<extra></extra>",
            ),
            1,
            2,
        )
    fig.add_hline(
        y=1 - alpha,
        line_dash="dot",
        line_color=NEUTRAL,
        row=1,
        col=1,
        annotation_text=f"1 − α = {1 - alpha:.2f}",
        annotation_position="bottom left",
    )
    fig.update_yaxes(title_text="share of test models covered", range=[-0.02, 1.05], row=1, col=1)
    fig.update_yaxes(title_text="Elo points", row=1, col=2)
    n = int(per_split["split"].nunique()) if len(per_split) else 0
    return _layout(fig, f"Coverage and width over {n} random calibration/test splits", "method", "", height=420)
