"""Plotly figure builders: pure functions from results to figures.

Every figure has a title, axis titles with units and hover text; colours come
from the Okabe–Ito palette (colour-blind safe), and no background colours are
fixed so Streamlit's light and dark themes both apply.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
METHOD_COLOURS = {"human": OKABE_ITO[0], "hard": OKABE_ITO[3], "soft": OKABE_ITO[2], "truth": "#7f7f7f"}


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 450) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=height, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig


def coverage_heatmap(pairs: pd.DataFrame, models: list[str] | None = None) -> go.Figure:
    """Battles per unordered model pair (symmetric)."""
    if models is None:
        models = sorted(set(pairs["model_1"]) | set(pairs["model_2"]))
    idx = {m: k for k, m in enumerate(models)}
    mat = np.zeros((len(models), len(models)))
    for r in pairs.itertuples():
        if r.model_1 in idx and r.model_2 in idx:
            mat[idx[r.model_1], idx[r.model_2]] = mat[idx[r.model_2], idx[r.model_1]] = r.n_battles
    z = np.where(mat > 0, mat, np.nan)
    fig = go.Figure(go.Heatmap(z=z, x=models, y=models, colorscale="Cividis", colorbar=dict(title="battles"),
                               hovertemplate="%{y} vs %{x}: %{z} battles<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, "Battle-graph coverage: battles per model pair", "model", "model",
                   height=max(450, 14 * len(models) + 150))


def count_bars(df: pd.DataFrame, x: str, y: str, title: str, x_title: str, y_title: str) -> go.Figure:
    fig = go.Figure(go.Bar(x=df[x], y=df[y], marker_color=OKABE_ITO[0],
                           hovertemplate="%{x}: %{y}<extra></extra>"))
    return _layout(fig, title, x_title, y_title, height=350)


def leaderboard_intervals(frame: pd.DataFrame, methods: dict[str, str], interval: str | None = None,
                          interval_label: str = "") -> go.Figure:
    """Point estimates per method (columns of ``frame``); an optional interval column pair as error bars.

    ``methods`` maps column → legend label; ``interval`` names the method whose
    ``{interval}_lower``/``{interval}_upper`` columns are drawn as bars.
    """
    df = frame.iloc[::-1]
    fig = go.Figure()
    for k, (col, label) in enumerate(methods.items()):
        err = None
        if interval == col and f"{col}_lower" in df:
            err = dict(type="data", symmetric=False, array=(df[f"{col}_upper"] - df[col]).to_numpy(),
                       arrayminus=(df[col] - df[f"{col}_lower"]).to_numpy(), thickness=1.5, width=3)
        fig.add_trace(go.Scatter(
            x=df[col], y=df["model"], mode="markers", name=label, error_x=err,
            marker=dict(color=METHOD_COLOURS.get(col.split("_")[0], OKABE_ITO[k % len(OKABE_ITO)]), size=9,
                        symbol=["circle", "diamond", "square", "x"][k % 4]),
            hovertemplate="%{y}<br>" + label + ": %{x:.0f} Elo<extra></extra>"))
    title = "Leaderboard: Elo by method" + (f" with {interval_label}" if interval_label else "")
    return _layout(fig, title, "Elo (points; 1500 = average model)", "model", height=max(450, 18 * len(df) + 150))


def rank_slope(frame: pd.DataFrame, left: str, right: str, left_label: str, right_label: str) -> go.Figure:
    """Slope chart of ranks from one method to another."""
    fig = go.Figure()
    rl = frame[left].rank(ascending=False, method="min")
    rr = frame[right].rank(ascending=False, method="min")
    for m, a, b in zip(frame["model"], rl, rr):
        colour = OKABE_ITO[2] if b < a else (OKABE_ITO[3] if b > a else "#999999")
        fig.add_trace(go.Scatter(x=[left_label, right_label], y=[a, b], mode="lines+markers", line=dict(color=colour),
                                 name=m, showlegend=False,
                                 hovertemplate=f"{m}<br>{left_label}: #{int(a)}<br>{right_label}: #{int(b)}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, f"Rank changes {left_label} → {right_label}", "method", "rank (1 = best)",
                   height=max(450, 14 * len(frame) + 150))
