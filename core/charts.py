"""Plotly figure builders: pure functions from results to figures (no Streamlit).

Every figure has a title, axis titles with units and hover text.  Colours come
from the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies) without its black, which disappears on a dark background; no
background or font colour is fixed, so the Streamlit theme (light or dark)
applies when a page draws the figure with ``theme="streamlit"``.  Where colour
carries meaning (above/below a target) a marker symbol carries it too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.domain import Z95
from core.methods import OKABE_ITO, RATING_METHODS, TRUTH_COLOUR

# the cycle for categorical series: black dropped (invisible in the dark theme), yellow last (low contrast on white)
CYCLE = OKABE_ITO[:7]
METHOD_COLOURS = {**{name: m.colour for name, m in RATING_METHODS.items()}, "truth": TRUTH_COLOUR}
NEUTRAL = "#999999"  # reference lines: visible on white and on Streamlit's dark background
WEBGL_ABOVE = 2_000  # points of one chart above which it is drawn by WebGL (SVG slows the browser down)
SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x", "star", "cross")
# A method keeps its marker whichever other methods are drawn beside it.
METHOD_SYMBOLS = {
    "human": "circle",
    "hard": "diamond",
    "soft": "square",
    "online-elo": "triangle-up",
    "am-elo": "star",
    "truth": "x",
}


def _symbol(method: str, k: int) -> str:
    return METHOD_SYMBOLS.get(method, SYMBOLS[k % len(SYMBOLS)])


def _colour(k: int) -> str:
    return CYCLE[k % len(CYCLE)]


def _legend_rows(fig: go.Figure, width_px: int = 900) -> int:
    """How many rows plotly's horizontal legend needs (≈ 7 px a character plus the symbol)."""
    names = [str(t.name or "") for t in fig.data if t.showlegend is not False]
    if len(names) < 2:  # plotly draws no legend for a single trace
        return 0
    rows, used = 1, 0
    for name in names:
        need = 40 + 7 * len(name)
        if used and used + need > width_px:
            rows, used = rows + 1, 0
        used += need
    return rows


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 450) -> go.Figure:
    """Title top-left, legend in its own band under the title (never over it, never clipped), axis titles with
    units."""
    top = 60 + 24 * _legend_rows(fig)
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", y=1, yref="container", yanchor="top", pad=dict(t=12, l=4)),
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin=dict(l=10, r=10, t=top, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0, font=dict(size=11)),
        hoverlabel=dict(namelength=-1),
    )
    # The margins grow to hold the tick labels and axis titles (a 10 px margin alone cuts a long model name to
    # its last letters); set here rather than left to the template, which a page's theme replaces.
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def title_of(fig: go.Figure) -> str:
    """The figure's title text without its context line (used to name its PNG download)."""
    t = fig.layout.title.text or "chart"
    return str(t).split("<br>")[0]


def with_context(fig: go.Figure, context: str) -> go.Figure:
    """A second title line saying what the chart shows (dataset, judge, τ, α): it travels with a PNG export."""
    if not context or "<br>" in str(fig.layout.title.text or ""):
        return fig
    fig.update_layout(
        title_text=f"{fig.layout.title.text}<br><sup>{context}</sup>", margin_t=(fig.layout.margin.t or 60) + 18
    )
    return fig


def for_presentation(fig: go.Figure, base: int = 18, min_height: int = 760) -> go.Figure:
    """Type large enough for a projector: every text at least ``base`` px, the title larger, one chart per
    screen (at least ``min_height`` px tall)."""
    if "_presented" in (fig.layout.meta or {}):
        return fig
    fig.update_layout(
        font=dict(size=base),
        title_font=dict(size=base + 8),
        legend_font=dict(size=base),
        hoverlabel_font=dict(size=base),
        title_pad=dict(t=28, l=4),
    )
    fig.update_xaxes(tickfont=dict(size=base), title_font=dict(size=base))
    fig.update_yaxes(tickfont=dict(size=base), title_font=dict(size=base))
    fig.update_annotations(font_size=base)
    height = max(fig.layout.height or 0, min_height)
    rows = _category_count(fig, "y")
    if rows:
        # every row keeps its label: Plotly drops labels that would overlap, so the chart grows to a row
        # height the projector's type fits in, and the axis is told to label each category
        height = max(height, int(rows * base * 1.6) + (fig.layout.margin.t or 60) + (fig.layout.margin.b or 60) + 60)
        fig.update_yaxes(dtick=1, automargin=True)
    if _category_count(fig, "x"):
        fig.update_xaxes(dtick=1, automargin=True)
    fig.update_layout(margin_t=(fig.layout.margin.t or 60) + 30, height=height, meta={"_presented": True})
    return fig


def _category_count(fig: go.Figure, axis: str) -> int:
    """How many distinct text values the traces put on the ``axis`` (``x`` or ``y``) axis; 0 when it is numeric."""
    seen: set[str] = set()
    for trace in fig.data:
        values = getattr(trace, axis, None)
        if values is None or len(values) == 0:
            continue
        if not isinstance(values[0], str):
            return 0
        seen.update(str(v) for v in values)
    return len(seen)


def for_paper(fig: go.Figure, width: int = 680, max_height: int = 900, base: int = 11) -> go.Figure:
    """Sized for a printed page: ``width`` px wide (inside an A4 or Letter page's margins at 96 px/in), at most
    ``max_height`` px tall so that it fits on one page, type at least ``base`` px, and margins that hold every tick
    label and axis title whole (automargin, plus room on the left for the y-axis title)."""
    height = min(int(fig.layout.height or 450), max_height)
    more_legend_rows = max(0, _legend_rows(fig, width) - _legend_rows(fig))  # a narrower figure wraps its legend
    m = fig.layout.margin
    fig.update_layout(
        width=width,
        height=height,
        font=dict(size=base),
        legend_font=dict(size=base - 1),
        margin=dict(
            l=max(int(m.l or 0), 16),
            r=max(int(m.r or 0), 16),
            t=int(m.t if m.t is not None else 60) + 24 * more_legend_rows,
        ),
    )
    fig.update_xaxes(automargin=True, tickfont=dict(size=base - 1))
    fig.update_yaxes(automargin=True, tickfont=dict(size=base - 1))
    return fig


def _nice_log_ticks(lo: float, hi: float) -> list[float]:
    """1–2–5 tick values inside [lo, hi] (at least the decade ends), for a log axis without crowded labels."""
    ticks = [
        m * 10.0**e for e in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1) for m in (1, 2, 5)
    ]
    inside = [v for v in ticks if lo <= v <= hi]
    return inside if len(inside) >= 2 else [v for v in ticks if lo / 10 <= v <= hi * 10][:3]


# ------------------------------------------------------------------ overview
def coverage_heatmap(pairs: pd.DataFrame, models: list[str] | None = None) -> go.Figure:
    """Battles per unordered model pair (symmetric); pairs never compared stay blank."""
    if models is None:
        models = sorted(set(pairs["model_1"]) | set(pairs["model_2"]))
    idx = {m: k for k, m in enumerate(models)}
    mat = np.zeros((len(models), len(models)))
    if len(pairs):
        keep = pairs["model_1"].isin(idx) & pairs["model_2"].isin(idx)
        p = pairs[keep]
        i, j = p["model_1"].map(idx).to_numpy(int), p["model_2"].map(idx).to_numpy(int)
        mat[i, j] = mat[j, i] = p["n_battles"].to_numpy(float)
    z = np.where(mat > 0, mat, np.nan)
    if np.nanmax(z, initial=0.0) < 2**24:
        z = z.astype(np.float32)  # every count below 2^24 exactly, in half the bytes (250 models: 0.33 MB less)
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
    return _layout(
        fig, "Battle-graph coverage: battles per model pair", "model", "model", height=max(450, 14 * len(models) + 200)
    )


def count_bars(df: pd.DataFrame, x: str, y: str, title: str, x_title: str, y_title: str) -> go.Figure:
    fig = go.Figure(
        go.Bar(x=df[x], y=df[y], marker_color=OKABE_ITO[0], name=y_title, hovertemplate="%{x}: %{y:,}<extra></extra>")
    )
    return _layout(fig, title, x_title, y_title, height=350)


# --------------------------------------------------------------- leaderboard
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
                    color=METHOD_COLOURS.get(col.split("_")[0], _colour(k)),
                    size=9,
                    symbol=_symbol(col.split("_")[0], k),
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


def rank_slope(frame: pd.DataFrame, left: str, right: str, left_label: str, right_label: str) -> go.Figure:
    """Slope chart of ranks from one method to another, model names at both ends.

    One trace per direction (up, down, same), its lines separated by gaps: with one trace per model, a
    250-model arena took ~0.5 s of the server to build and the browser as long to draw."""
    fig = go.Figure()
    rl = frame[left].rank(ascending=False, method="min").to_numpy(float)
    rr = frame[right].rank(ascending=False, method="min").to_numpy(float)
    names = frame["model"].astype(str).to_numpy()
    finite = np.isfinite(rl) & np.isfinite(rr)
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
    return _layout(
        fig,
        f"Rank changes {left_label} → {right_label} (▲ up, ▼ down)",
        "method",
        "rank (1 = best)",
        height=max(450, 16 * len(frame) + 160),
    )


# ------------------------------------------------------------- calibration
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


# --------------------------------------------------------------- residuals
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
    """Median SE vs q̂ per method on log–log axes, where constant width (2·q̂·SE) is a straight line."""
    s = summary[np.isfinite(summary["qhat"]) & (summary["median_se"] > 0)]
    fig = go.Figure()
    if len(s):
        se_lo, se_hi = float(s["median_se"].min()) / 2, float(s["median_se"].max()) * 2
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
            x=s["median_se"],
            y=s["qhat"],
            mode="markers+text",
            text=s["method"],
            textposition="top center",
            marker=dict(size=12, color=[METHOD_COLOURS.get(m, OKABE_ITO[4]) for m in s["method"]]),
            name="method",
            showlegend=False,
            customdata=np.c_[2 * s["qhat"] * s["median_se"]],
            hovertemplate="%{text}<br>median SE %{x:.1f} Elo<br>q̂ %{y:.2f} SEs"
            "<br>median width ≈ %{customdata[0]:.0f} Elo<extra></extra>",
        )
    )
    return _layout(
        fig,
        "Why intervals differ: width = 2 · q̂ · SE",
        "median bootstrap SE (Elo points, log scale)",
        "conformal quantile q̂ (SEs, log scale)",
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


# --------------------------------------------------------------- selective
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


# ------------------------------------------------------ judges & annotators
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


# ------------------------------------------------------------------ bias
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


# --------------------------------------------------------------- analyses
def alignment_scatter(scores: pd.DataFrame, ranking: str) -> go.Figure:
    fig = go.Figure()
    for k, subset in enumerate(["all", "discriminative", "non_discriminative"]):
        s = scores[(scores["ranking"] == ranking) & (scores["subset"] == subset)]
        fig.add_trace(
            go.Scatter(
                x=s["accuracy"],
                y=s["score"],
                mode="markers",
                name=subset.replace("_", "-"),
                marker=dict(color=_colour(k), size=8, symbol=SYMBOLS[k]),
                text=s["model"],
                hovertemplate="%{text}<br>accuracy %{x:.3f}<br>BT score %{y:.2f}<extra></extra>",
            )
        )
    return _layout(
        fig,
        f"Accuracy vs Bradley–Terry score ({ranking})",
        "accuracy on graded prompts (share correct)",
        "Bradley–Terry score (logits)",
        height=420,
    )


def budget_curve(summary: pd.DataFrame, metric: str, label: str) -> go.Figure:
    fig = go.Figure()
    for m in ("hard", "soft"):
        s = summary[summary["method"] == m].sort_values("budget")
        colour = METHOD_COLOURS[m]
        lo, hi = f"{metric}_lo", f"{metric}_hi"
        if lo in s:
            fig.add_trace(
                go.Scatter(
                    x=np.r_[s["budget"], s["budget"][::-1]],
                    y=np.r_[s[hi], s[lo][::-1]],
                    fill="toself",
                    fillcolor=colour,
                    opacity=0.15,
                    line=dict(width=0),
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=s["budget"],
                y=s[f"{metric}_mean"],
                mode="lines+markers",
                name=f"{m}-Elo",
                line=dict(color=colour),
                hovertemplate=f"{m}<br>budget %{{x}}<br>{label} %{{y:.3f}}<extra></extra>",
            )
        )
    budgets = sorted({float(b) for b in s["budget"]}) if len(s) else []
    fig.update_xaxes(type="log", tickvals=budgets, tickformat="~g")
    return _layout(
        fig, f"{label} vs judged battles per model", "judged battles per model (log scale)", label, height=380
    )


# ------------------------------------------------------------------ new model
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
