"""The Leaderboard page's figures: Elo with its intervals, and rank changes between two rankings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import NEUTRAL, _layout, _symbol, method_colour
from core.methods import OKABE_ITO


def leaderboard_intervals(
    frame: pd.DataFrame,
    methods: dict[str, str],
    interval: str | None = None,
    interval_label: str = "",
    highlight: tuple[str, ...] = (),
) -> go.Figure:
    """Point estimates per method (columns of ``frame``); an optional interval column pair as error bars.

    ``methods`` maps column → legend label; ``interval`` names the method whose
    ``{interval}_lower``/``{interval}_upper`` columns are drawn as bars.
    Rows are drawn in the frame's order, first at the top; ``highlight``ed
    models (pinned) are named in bold.
    """
    df = frame.iloc[::-1]
    fig = go.Figure()
    for k, (col, label) in enumerate(methods.items()):
        err, extra = None, ""
        custom = np.c_[df[col.replace("_elo", "_rank")]] if col.replace("_elo", "_rank") in df else None
        if interval == col and f"{col}_lower" in df:
            err = dict(
                type="data",
                symmetric=False,
                array=(df[f"{col}_upper"] - df[col]).to_numpy(),
                arrayminus=(df[col] - df[f"{col}_lower"]).to_numpy(),
                thickness=1.5,
                width=4,
            )
            custom = np.c_[
                custom if custom is not None else np.full(len(df), np.nan), df[f"{col}_lower"], df[f"{col}_upper"]
            ]
            extra = "<br>human Elo interval %{customdata[1]:.0f} – %{customdata[2]:.0f}"
        rank = "<br>rank %{customdata[0]:.0f}" if custom is not None else ""
        fig.add_trace(
            go.Scatter(
                x=df[col],
                y=df["model"],
                mode="markers",
                name=label,
                error_x=err,
                customdata=custom,
                marker=dict(
                    color=method_colour(col.removesuffix("_elo"), k),
                    size=9,
                    symbol=_symbol(col.removesuffix("_elo"), k),
                ),
                hovertemplate="%{y}<br>" + label + ": %{x:.0f} Elo" + rank + extra + "<extra></extra>",
            )
        )
    if highlight:
        names = df["model"].astype(str).tolist()
        fig.update_yaxes(
            tickmode="array", tickvals=names, ticktext=[f"<b>📌 {n}</b>" if n in highlight else n for n in names]
        )
    title = "Leaderboard: Elo by method" + (f", with {interval_label}" if interval_label else "")
    return _layout(fig, title, "Elo (points; 1500 = average model)", "model", height=max(450, 20 * len(df) + 160))


def rank_slope(
    frame: pd.DataFrame,
    left: str,
    right: str,
    left_label: str,
    right_label: str,
    models: tuple[str, ...] | None = None,
) -> go.Figure:
    """Slope chart of ranks from one method to another, model names at both ends.

    Ranks are over every model of ``frame``; only ``models`` are drawn when given (the rows the page's table
    shows: a 250-model arena's 500 names took the browser over a second to lay out, on every first visit).
    One trace per direction (up, down, same), its lines separated by gaps: with one trace per model, a
    250-model arena took ~0.5 s of the server to build and the browser as long to draw."""
    fig = go.Figure()
    rl = frame[left].rank(ascending=False, method="min").to_numpy(float)
    rr = frame[right].rank(ascending=False, method="min").to_numpy(float)
    names = frame["model"].astype(str).to_numpy()
    finite = np.isfinite(rl) & np.isfinite(rr)
    if models is not None:
        finite &= np.isin(names, list(models))
    direction = np.where(rr < rl, "up", np.where(rr > rl, "down", "same"))
    for moved, colour, symbol in (
        ("up", OKABE_ITO[2], "triangle-up"),
        ("down", OKABE_ITO[3], "triangle-down"),
        ("same", NEUTRAL, "circle"),
    ):
        pick = finite & (direction == moved)
        if not pick.any():
            continue
        xs: list[str | None] = []
        ys: list[float | None] = []
        text: list[str] = []
        where: list[str] = []
        hover: list[list] = []
        for m, a, b in zip(names[pick], rl[pick], rr[pick]):
            xs += [left_label, right_label, None]
            ys += [a, b, None]
            text += [m, m, ""]
            where += ["middle left", "middle right", "middle center"]
            hover += [[m, int(a), int(b)]] * 3
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers+text",
                line=dict(color=colour),
                marker=dict(symbol=symbol, size=8, color=colour),
                text=text,
                textposition=where,
                textfont=dict(size=10),
                customdata=hover,
                name=moved,
                showlegend=False,
                connectgaps=False,
                hovertemplate=f"%{{customdata[0]}}<br>{left_label}: #%{{customdata[1]}}<br>"
                f"{right_label}: #%{{customdata[2]}}<extra></extra>",
            )
        )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(range=[-0.8, 1.8])  # room for the names beside each end
    drawn = int(finite.sum())
    of = f", {drawn} of {len(frame)} models" if models is not None and drawn < len(frame) else ""
    return _layout(
        fig,
        f"Rank changes {left_label} → {right_label} (▲ up, ▼ down{of})",
        "method",
        "rank (1 = best)",
        height=max(450, 16 * (drawn if models is not None else len(frame)) + 160),
    )
