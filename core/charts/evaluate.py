"""The Evaluate page's figure: where a new model would place on the leaderboard."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import METHOD_COLOURS, _colour, _layout
from core.methods import OKABE_ITO


def predicted_placement(
    rated: pd.DataFrame, model: str, predicted: float, lower: float, upper: float, alpha: float
) -> go.Figure:
    """A new model's predicted human Elo and its conformal interval among the human-rated models.

    ``rated``: model, elo (human Elo), anchor (bool: the new model was judged against it).  The interval is a
    shaded band across the chart, so the models whose human Elo falls inside it (the rank range) read at a glance.
    """
    rows = pd.concat(
        [
            rated.assign(kind=np.where(rated["anchor"].astype(bool), "anchor (judged against it)", "human-rated")),
            pd.DataFrame([{"model": model, "elo": predicted, "anchor": False, "kind": "new"}]),
        ],
        ignore_index=True,
    ).sort_values("elo")
    fig = go.Figure()
    fig.add_vrect(x0=lower, x1=upper, fillcolor=OKABE_ITO[1], opacity=0.15, line_width=0, layer="below")
    for k, kind in enumerate(("human-rated", "anchor (judged against it)")):
        part = rows[rows["kind"] == kind]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=part["elo"],
                y=part["model"],
                mode="markers",
                name=f"{kind}: human Elo",
                marker=dict(color=METHOD_COLOURS.get("human", _colour(0)), size=9, symbol=("circle-open", "circle")[k]),
                hovertemplate="%{y}<br>human Elo %{x:.0f}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[predicted],
            y=[model],
            mode="markers",
            name=f"{model}: predicted, {1 - alpha:.0%} interval",
            error_x=dict(
                type="data", symmetric=False, array=[upper - predicted], arrayminus=[predicted - lower], thickness=2
            ),
            marker=dict(color=OKABE_ITO[3], size=12, symbol="diamond"),
            hovertemplate=f"%{{y}}<br>predicted human Elo %{{x:.0f}}<br>interval {lower:.0f} – {upper:.0f}"
            "<extra></extra>",
        )
    )
    fig.update_yaxes(categoryorder="array", categoryarray=rows["model"].tolist())
    return _layout(
        fig,
        f"{model}: predicted human Elo among the human-rated models",
        "human Elo (points)",
        "model",
        height=max(350, 22 * len(rows) + 160),
    )


def width_by_calls(rounds: pd.DataFrame, fixed_calls: int, floor: float | None = None) -> go.Figure:
    """The adaptive design's interval width after each round against the judge calls spent so far.

    ``rounds``: calls, width (Elo).  The fixed design's calls are a vertical line, so how far short of them the
    design stopped reads at a glance; ``floor``: the width no number of calls goes below (2·q̂·σ̂), a dotted line.
    """
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=rounds["calls"].tolist(),
            y=rounds["width"].tolist(),
            mode="lines+markers",
            name="adaptive design: interval width after each round",
            marker=dict(color=OKABE_ITO[3], size=7),
            line=dict(color=OKABE_ITO[3]),
            hovertemplate="%{x} judge calls<br>width %{y:.0f} Elo<extra></extra>",
        )
    )
    if floor is not None and np.isfinite(floor) and floor > 0:
        fig.add_hline(y=floor, line_dash="dot", line_color=OKABE_ITO[7], annotation_text="floor (judge–human)")
    if fixed_calls > 0:
        fig.add_vline(x=fixed_calls, line_dash="dash", line_color=OKABE_ITO[5], annotation_text="fixed design's calls")
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, "Interval width as the rounds complete", "judge calls spent", "interval width (Elo)", 360)
