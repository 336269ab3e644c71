"""The Judges page's figures: annotator abilities, shuffle instability, judge consistency."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import NEUTRAL, WEBGL_ABOVE, _layout
from core.domain import Z95
from core.methods import OKABE_ITO

DENSITY_CELLS = (60, 40)  # (votes, ability) cells of the reliable annotators' density above WEBGL_ABOVE of them


def annotator_abilities(ann: pd.DataFrame) -> go.Figure:
    """Estimated ability per annotator with its 95% interval, by status (reliable, uninformative, adversarial).

    Above :data:`WEBGL_ABOVE` reliable annotators their cloud is drawn as a
    density (how many fall in each cell of votes × ability), the flagged
    ones still as points with their intervals: thousands of overlapping
    points show no more than the density and cost the browser ~0.4 s a
    visit.  When the frame has ``kind``/``true_ability`` (simulated
    annotators), the hover shows them so the flags can be checked against
    the truth.
    """
    a = ann[~ann["excluded"]]
    fig = go.Figure()
    has_truth = "kind" in a and a["kind"].notna().any()
    reliable = a[a["status"] == "reliable"]
    dense = len(reliable) > WEBGL_ABOVE
    if dense:
        fig.add_trace(_density(reliable["n_records"], reliable["ability_rel"], OKABE_ITO[0], "reliable"))
    flagged = len(a) - (len(reliable) if dense else 0)
    trace = go.Scattergl if flagged > WEBGL_ABOVE else go.Scatter
    styles = (
        ("reliable", OKABE_ITO[0], "circle", 8),
        ("uninformative", NEUTRAL, "diamond", 10),
        ("adversarial", OKABE_ITO[3], "x", 11),
    )
    for status, colour, symbol, size in styles:
        s = a[a["status"] == status]
        if s.empty or (dense and status == "reliable"):
            continue
        custom = np.c_[s["kind"].fillna("?"), s["true_ability"]] if has_truth else None
        truth = "<br>simulated as %{customdata[0]} (true κ %{customdata[1]:.2f})" if has_truth else ""
        half = Z95 * s["ability_se_rel"]
        fig.add_trace(
            trace(
                x=s["n_records"],
                y=s["ability_rel"],
                mode="markers",
                name=status,
                error_y=dict(type="data", array=half.to_numpy(), thickness=1, width=0, color=colour),
                marker=dict(color=colour, size=size, symbol=symbol),
                text=s["annotator"],
                customdata=custom,
                hovertemplate="%{text}<br>%{x} votes<br>ability %{y:.2f} × average (95%: ± %{error_y.array:.2f})"
                + truth
                + "<extra></extra>",
            )
        )
    fig.add_hline(y=0, line_color=NEUTRAL)
    fig.add_hline(y=1, line_dash="dot", line_color=NEUTRAL)
    # its label in the right margin, beside the line's end: among the points it would print over them
    fig.add_annotation(
        x=1,
        xref="paper",
        y=1,
        text="average<br>annotator",
        showarrow=False,
        xanchor="left",
        align="left",
        font=dict(color=NEUTRAL),
    )
    fig = _layout(
        fig,
        "Annotator abilities (am-ELO)"
        + (": reliable ones as a density, flagged ones" if dense else "")
        + " with 95% intervals",
        "votes cast (count)",
        "ability relative to the mean (1 = average)",
        height=440,
    )
    return fig.update_layout(margin_r=90)  # room for the line's label


def _density(x: pd.Series, y: pd.Series, colour: str, name: str) -> go.Heatmap:
    """How many (x, y) fall in each of :data:`DENSITY_CELLS` equal cells over their range; empty cells blank."""
    nx, ny = DENSITY_CELLS
    x_edges = np.linspace(float(x.min()), float(x.max()) + 1e-9, nx + 1)
    y_edges = np.linspace(float(y.min()), float(y.max()) + 1e-9, ny + 1)
    counts, _, _ = np.histogram2d(x.to_numpy(float), y.to_numpy(float), bins=[x_edges, y_edges])
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    return go.Heatmap(
        x=(x_edges[1:] + x_edges[:-1]) / 2,
        y=(y_edges[1:] + y_edges[:-1]) / 2,
        z=np.where(counts.T > 0, counts.T, np.nan),
        name=name,
        colorscale=[[0.0, f"rgba({r},{g},{b},0.15)"], [1.0, f"rgb({r},{g},{b})"]],
        colorbar=dict(title=dict(text=f"{name}<br>annotators"), thickness=12, len=0.6),
        hovertemplate=f"%{{z:.0f}} {name} annotators with about %{{x:.0f}} votes and ability about %{{y:.2f}}"
        "<extra></extra>",
    )


def shuffle_instability(frame: pd.DataFrame) -> go.Figure:
    f = frame.sort_values("m_elo")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=f["mean"],
            y=f["model"],
            mode="markers",
            name="online Elo (mean; bars: min–max)",
            marker=dict(color=OKABE_ITO[3], size=8),
            error_x=dict(
                type="data",
                symmetric=False,
                array=(f["max"] - f["mean"]).to_numpy(),
                arrayminus=(f["mean"] - f["min"]).to_numpy(),
                thickness=1.5,
            ),
            customdata=np.c_[f["sd"], f["rank_min"], f["rank_max"]],
            hovertemplate="%{y}<br>online Elo %{x:.0f} (sd %{customdata[0]:.1f})<br>rank "
            "%{customdata[1]}–%{customdata[2]}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=f["m_elo"],
            y=f["model"],
            mode="markers",
            name="m-ELO (maximum likelihood)",
            marker=dict(color=OKABE_ITO[0], size=8, symbol="diamond"),
            hovertemplate="%{y}<br>m-ELO %{x:.0f}<extra></extra>",
        )
    )
    return _layout(
        fig,
        "Online Elo depends on battle order; maximum likelihood does not",
        "Elo (points; bars span all shuffled orders)",
        "model",
        height=max(450, 16 * len(f) + 160),
    )


def consistency_vs_elo(
    judges: pd.DataFrame, slope: float, intercept: float, r: float, max_labels: int = 8
) -> go.Figure:
    """Judges as points; only the ``max_labels`` farthest from the fitted line (and the extremes) are named
    on the chart, so names never pile up; every name is in the hover."""
    resid = (judges["arena_elo"] - (intercept + slope * judges["consistency"])).abs()
    keep = set(resid.nlargest(max_labels - 2).index) | {judges["arena_elo"].idxmax(), judges["arena_elo"].idxmin()}
    labels = [name if k in keep else "" for k, name in zip(judges.index, judges["judge"])]
    fig = go.Figure(
        go.Scatter(
            x=judges["consistency"],
            y=judges["arena_elo"],
            mode="markers+text",
            text=labels,
            customdata=np.c_[judges["judge"]],
            textposition=["top center" if k % 2 == 0 else "bottom center" for k in range(len(judges))],
            textfont=dict(size=10),
            marker=dict(size=9, color=OKABE_ITO[0]),
            name="judge",
            hovertemplate="%{customdata[0]}<br>consistency %{x:.3f}<br>arena Elo %{y:.0f}<extra></extra>",
        )
    )
    xs = np.linspace(judges["consistency"].min(), judges["consistency"].max(), 20)
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=intercept + slope * xs,
            mode="lines",
            line=dict(color=OKABE_ITO[3], dash="dash"),
            name=f"least squares (r = {r:.2f})",
            hoverinfo="skip",
        )
    )
    return _layout(
        fig,
        f"Judge consistency vs the judge's own arena Elo (Pearson r = {r:.2f})",
        "consistency (0 = coin flip, 1 = always the same winner)",
        "judge's arena Elo (points)",
        height=480,
    )


def consistency_bars(judges: pd.DataFrame) -> go.Figure:
    """Consistency per judge when no judge Elo is known to correlate with."""
    f = judges.sort_values("consistency")
    fig = go.Figure(
        go.Bar(
            x=f["consistency"],
            y=f["judge"],
            orientation="h",
            marker_color=OKABE_ITO[0],
            name="consistency",
            customdata=np.c_[f["n_contests"]],
            hovertemplate="%{y}<br>consistency %{x:.3f}<br>%{customdata[0]} contests<extra></extra>",
        )
    )
    return _layout(
        fig,
        "Judge consistency (same winner for the same matchup)",
        "consistency (0 = coin flip, 1 = always the same winner)",
        "judge",
        height=max(300, 22 * len(f) + 160),
    )
