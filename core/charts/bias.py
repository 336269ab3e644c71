"""The Bias page's figures: bias coefficients, position deflection, rate intervals, echo rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import NEUTRAL, _layout
from core.methods import OKABE_ITO


def coefficient_bars(coef: pd.DataFrame, title: str) -> go.Figure:
    fig = go.Figure(
        go.Scatter(
            x=coef["coef"],
            y=coef["feature"],
            mode="markers",
            marker=dict(size=11, color=OKABE_ITO[0]),
            name="coefficient (95% CI)",
            error_x=dict(
                type="data",
                symmetric=False,
                array=(coef["upper"] - coef["coef"]).to_numpy(),
                arrayminus=(coef["coef"] - coef["lower"]).to_numpy(),
            ),
            hovertemplate="%{y}: %{x:+.3f} logits per SD (95% CI)<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_color=NEUTRAL)
    return _layout(
        fig, title, "effect on the log-odds of winning, per SD of the a − b difference (logits)", "feature", height=360
    )


def position_deflection(elo: pd.DataFrame) -> go.Figure:
    f = elo.sort_values("swap_averaged")
    fig = go.Figure()
    for col, name, k, sym in (
        ("first_order", "shown first only", 3, "triangle-right"),
        ("second_order", "shown second only", 1, "triangle-left"),
        ("swap_averaged", "both orders", 0, "circle"),
    ):
        fig.add_trace(
            go.Scatter(
                x=f[col],
                y=f["model"],
                mode="markers",
                name=name,
                marker=dict(color=OKABE_ITO[k], size=9, symbol=sym),
                hovertemplate="%{y}<br>" + name + ": %{x:.0f} Elo<extra></extra>",
            )
        )
    return _layout(
        fig, "Elo from one presentation order vs both", "Elo (points)", "model", height=max(420, 16 * len(f) + 160)
    )


def rate_intervals(
    df: pd.DataFrame,
    label: str,
    value: str,
    lower: str,
    upper: str,
    title: str,
    x_title: str,
    reference: float | None = 0.5,
    reference_text: str = "no preference",
    x_range: tuple[float, float] | None = (0.0, 1.0),
) -> go.Figure:
    """A rate (or probability) per row with its 95% interval, against a reference value."""
    fig = go.Figure(
        go.Scatter(
            x=df[value],
            y=df[label],
            mode="markers",
            marker=dict(size=11, color=OKABE_ITO[0]),
            name="estimate (95% CI)",
            error_x=dict(
                type="data",
                symmetric=False,
                array=(df[upper] - df[value]).to_numpy(),
                arrayminus=(df[value] - df[lower]).to_numpy(),
            ),
            customdata=np.c_[df[lower], df[upper]],
            hovertemplate="%{y}<br>%{x:.3f} (95% CI %{customdata[0]:.3f}–%{customdata[1]:.3f})<extra></extra>",
        )
    )
    if reference is not None:
        fig.add_vline(x=reference, line_dash="dot", line_color=NEUTRAL, annotation_text=reference_text)
    fig.update_yaxes(autorange="reversed", automargin=True)
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    return _layout(fig, title, x_title, "", height=max(280, 45 * len(df) + 160))


def echo_rates(rates: pd.DataFrame) -> go.Figure:
    """Share of each model's answers that echo (only models that ever do)."""
    r = rates[rates["echo_rate"] > 0].sort_values("echo_rate")
    fig = go.Figure(
        go.Bar(
            x=r["echo_rate"],
            y=r["model"],
            orientation="h",
            marker_color=OKABE_ITO[4],
            name="echo rate",
            customdata=np.c_[r["n"]],
            hovertemplate="%{y}<br>%{x:.1%} of %{customdata[0]} answers echo<extra></extra>",
        )
    )
    fig.update_xaxes(tickformat=".0%")
    return _layout(
        fig,
        "Echo rate per model (models that ever echo)",
        "share of the model's answers that echo",
        "model",
        height=max(280, 24 * len(r) + 160),
    )
