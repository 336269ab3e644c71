"""The Analyses page's figures: judge–human alignment and the annotation budget curve."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts.style import METHOD_COLOURS, SYMBOLS, _colour, _layout


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
