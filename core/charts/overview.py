"""The Overview page's figures: battle coverage of the model pairs, and counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import _layout
from core.methods import OKABE_ITO

# Beyond this many models the heatmap shows the most-compared ones: 250 models make a 3,700 px chart of 62,500
# cells whose drawing alone took the browser a second, and a cell 14 px wide is read by hovering anyway.
COVERAGE_MODELS = 60


def coverage_heatmap(pairs: pd.DataFrame, models: list[str] | None = None, limit: int = COVERAGE_MODELS) -> go.Figure:
    """Battles per unordered model pair (symmetric); pairs never compared stay blank.  With more than ``limit``
    models, the ``limit`` with the most battles (ties by name), in the given order, and the title says so."""
    if models is None:
        models = sorted(set(pairs["model_1"]) | set(pairs["model_2"]))
    title = "Battle-graph coverage: battles per model pair"
    if len(models) > limit:
        per_model = (
            pd.concat([pairs.groupby("model_1")["n_battles"].sum(), pairs.groupby("model_2")["n_battles"].sum()])
            .groupby(level=0)
            .sum()
        )
        counts = per_model.reindex(models, fill_value=0)
        kept = set(sorted(models, key=lambda m: (-counts[m], m))[:limit])
        title += f" — the {limit} models with the most battles, of {len(models)}"
        models = [m for m in models if m in kept]
    idx = {m: k for k, m in enumerate(models)}
    mat = np.zeros((len(models), len(models)))
    if len(pairs):
        keep = pairs["model_1"].isin(idx) & pairs["model_2"].isin(idx)
        p = pairs[keep]
        i, j = p["model_1"].map(idx).to_numpy(int), p["model_2"].map(idx).to_numpy(int)
        mat[i, j] = mat[j, i] = p["n_battles"].to_numpy(float)
    z = np.where(mat > 0, mat, np.nan)
    if np.nanmax(z, initial=0.0) < 2**24:
        z = z.astype(np.float32)  # every count below 2^24 exactly, in half the bytes
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=models,
            y=models,
            colorscale="Cividis",
            colorbar=dict(title="battles"),
            hovertemplate="%{y} vs %{x}: %{z} battles<extra></extra>",
            hoverongaps=False,
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=-45)
    return _layout(fig, title, "model", "model", height=max(450, 14 * len(models) + 200))


def count_bars(df: pd.DataFrame, x: str, y: str, title: str, x_title: str, y_title: str) -> go.Figure:
    fig = go.Figure(
        go.Bar(x=df[x], y=df[y], marker_color=OKABE_ITO[0], name=y_title, hovertemplate="%{x}: %{y:,}<extra></extra>")
    )
    return _layout(fig, title, x_title, y_title, height=350)
