"""The Calibration page's figures: the temperature profile, reliability diagrams, gap agreement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import NEUTRAL, SYMBOLS, _colour, _layout
from core.methods import OKABE_ITO


def tau_profile(
    profile: pd.DataFrame,
    tau: float,
    lower: float | None,
    upper: float | None,
    user_tau: float | None = None,
    cutoff: float = 3.841,
) -> go.Figure:
    """Deviance 2·(ℓ(τ̂) − ℓ(τ)) over τ with the χ²₁ 95% cut-off and the interval it gives."""
    fig = go.Figure(
        go.Scatter(
            x=profile["tau"],
            y=profile["delta"],
            mode="lines",
            name="profile deviance",
            line=dict(color=OKABE_ITO[0]),
            hovertemplate="τ = %{x:.3f}<br>deviance %{y:.2f}<extra></extra>",
        )
    )
    # The labels sit at different heights (paper coordinates) so that none overlaps another, whichever
    # side of the fitted τ the slider is on.
    fig.add_hline(y=cutoff, line_dash="dot", line_color=NEUTRAL)
    fig.add_annotation(
        x=0,
        xref="paper",
        y=cutoff,
        text="95% cut-off (χ²₁)",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font=dict(color=NEUTRAL),
    )
    if lower is not None and upper is not None:
        fig.add_vrect(x0=lower, x1=upper, fillcolor=OKABE_ITO[0], opacity=0.12, line_width=0)
        # named in the legend, not written inside the band: the curve bottoms out there, under any label
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker=dict(symbol="square", size=14, color=OKABE_ITO[0], opacity=0.25),
                name=f"95% interval {lower:.3f}–{upper:.3f}",
                hoverinfo="skip",
            )
        )
    right_of_fit = user_tau is not None and user_tau > tau
    fig.add_vline(x=tau, line_color=OKABE_ITO[2])
    fig.add_annotation(
        x=tau,
        y=1.0,
        yref="paper",
        text=f"fitted τ = {tau:.3f}",
        showarrow=False,
        yanchor="top",
        xanchor="right" if right_of_fit else "left",
        font=dict(color=OKABE_ITO[2]),
    )
    if user_tau is not None and abs(user_tau - tau) > 1e-6:
        fig.add_vline(x=user_tau, line_dash="dash", line_color=OKABE_ITO[1])
        fig.add_annotation(
            x=user_tau,
            y=0.88,
            yref="paper",
            text=f"slider τ = {user_tau:.2f}",
            showarrow=False,
            yanchor="top",
            xanchor="left" if right_of_fit else "right",
            font=dict(color=OKABE_ITO[1]),
        )
    top = float(np.nanmax(profile["delta"])) if len(profile) else 10.0
    fig.update_yaxes(range=[0, max(2.5 * cutoff, min(top, 5 * cutoff))])
    return _layout(
        fig,
        "τ profile likelihood",
        "τ (soft-target temperature, per rubric point)",
        "deviance from the best fit (2 × log-likelihood drop)",
        height=400,
    )


def reliability_diagram(curves: list) -> go.Figure:
    """``curves``: objects with label, bins (confidence, accuracy, lower, upper, n) and ece."""
    fig = go.Figure(
        go.Scatter(
            x=[0.5, 1],
            y=[0.5, 1],
            mode="lines",
            line=dict(color=NEUTRAL, dash="dot"),
            name="perfect calibration",
            hoverinfo="skip",
        )
    )
    for k, c in enumerate(curves):
        b = c.bins
        err = None
        if "lower" in b:
            err = dict(
                type="data",
                symmetric=False,
                array=(b["upper"] - b["accuracy"]).to_numpy(),
                arrayminus=(b["accuracy"] - b["lower"]).to_numpy(),
                thickness=1,
            )
        fig.add_trace(
            go.Scatter(
                x=b["confidence"],
                y=b["accuracy"],
                mode="lines+markers",
                error_y=err,
                name=f"{c.label} (ECE {c.ece:.3f})",
                line=dict(color=_colour(k)),
                marker=dict(color=_colour(k), size=8, symbol=SYMBOLS[k % len(SYMBOLS)]),
                customdata=b["n"],
                hovertemplate=c.label + "<br>confidence %{x:.3f}<br>agreement %{y:.3f}<br>"
                "%{customdata} battles<extra></extra>",
            )
        )
    fig.update_xaxes(range=[0.48, 1.02])
    return _layout(
        fig,
        "Reliability of the judge's targets",
        "confidence the target puts on the judge's side",
        "share of battles where humans agree",
        height=440,
    )


def gap_agreement(bins: pd.DataFrame) -> go.Figure:
    err = dict(
        type="data",
        symmetric=False,
        array=(bins["upper"] - bins["agreement"]).to_numpy(),
        arrayminus=(bins["agreement"] - bins["lower"]).to_numpy(),
    )
    fig = go.Figure(
        go.Scatter(
            x=bins["abs_gap_mid"],
            y=bins["agreement"],
            mode="lines+markers",
            error_y=err,
            marker=dict(color=OKABE_ITO[0], size=8),
            name="human agreement (95% CI)",
            customdata=bins["n"],
            hovertemplate="|gap| ≈ %{x:.2f} points<br>agreement %{y:.3f}<br>%{customdata} battles<extra></extra>",
        )
    )
    fig.add_hline(y=0.5, line_dash="dot", line_color=NEUTRAL, annotation_text="coin flip")
    return _layout(
        fig,
        "Score gap → human agreement",
        "|mean rubric score gap| (points on the 1–10 scale)",
        "share of humans agreeing with the gap's sign",
        height=400,
    )
