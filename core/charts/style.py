"""The shared look of every chart: colours and markers, the common layout, and the output forms (context
line, projector, paper)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

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


def method_colour(method: str, k: int) -> str:
    """A method's colour as the registry says now (a method registered after import has its own), else the
    ``k``-th of the cycle."""
    m = RATING_METHODS.get(method)
    return m.colour if m is not None else METHOD_COLOURS.get(method, _colour(k))


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


# The title starts below the band plotly's toolbar takes at the chart's top right (in Streamlit, about 16 to 42 px
# from the chart's top): a title long enough to reach the right edge of a half-width chart ran under its buttons.
TITLE_TOP = 50


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 450) -> go.Figure:
    """Title top-left, legend in its own band under the title (never over it, never clipped), axis titles with
    units."""
    top = TITLE_TOP + 48 + 24 * _legend_rows(fig)
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", y=1, yref="container", yanchor="top", pad=dict(t=TITLE_TOP, l=4)),
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
