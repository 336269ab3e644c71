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


# ------------------------------------------------------------ calibration
def tau_profile(profile: pd.DataFrame, tau: float, lower: float | None, upper: float | None,
                user_tau: float | None = None) -> go.Figure:
    fig = go.Figure(go.Scatter(x=profile["tau"], y=profile["delta"], mode="lines", line=dict(color=OKABE_ITO[0]),
                               name="2·(ℓ(τ̂) − ℓ(τ))", hovertemplate="τ = %{x:.3f}<br>deviance %{y:.2f}<extra></extra>"))
    fig.add_hline(y=3.841, line_dash="dot", line_color=OKABE_ITO[3], annotation_text="95% cut-off (χ²₁)")
    fig.add_vline(x=tau, line_color=OKABE_ITO[2], annotation_text=f"fitted τ = {tau:.3f}")
    if user_tau is not None and abs(user_tau - tau) > 1e-6:
        fig.add_vline(x=user_tau, line_dash="dash", line_color=OKABE_ITO[1], annotation_text=f"slider τ = {user_tau:.2f}")
    fig.update_xaxes(type="log")
    fig.update_yaxes(range=[0, max(12, 3.841 * 2)])
    return _layout(fig, "τ profile likelihood", "τ (log scale)", "deviance from the best fit", height=380)


def reliability_diagram(curves: list) -> go.Figure:
    """``curves``: objects with label, bins (confidence, accuracy, lower, upper, n) and ece."""
    fig = go.Figure(go.Scatter(x=[0.5, 1], y=[0.5, 1], mode="lines", line=dict(color="#999999", dash="dot"),
                               name="perfect calibration", hoverinfo="skip"))
    for k, c in enumerate(curves):
        b = c.bins
        err = None
        if "lower" in b:
            err = dict(type="data", symmetric=False, array=(b["upper"] - b["accuracy"]).to_numpy(),
                       arrayminus=(b["accuracy"] - b["lower"]).to_numpy(), thickness=1)
        fig.add_trace(go.Scatter(
            x=b["confidence"], y=b["accuracy"], mode="lines+markers", error_y=err,
            name=f"{c.label} (ECE {c.ece:.3f})", marker=dict(color=OKABE_ITO[k % len(OKABE_ITO)], size=8),
            customdata=b["n"], hovertemplate="confidence %{x:.3f}<br>agreement %{y:.3f}<br>%{customdata} battles"
                                             "<extra></extra>"))
    return _layout(fig, "Reliability of the judge's targets", "confidence put on the judge's side",
                   "share of battles where humans agree", height=420)


def gap_agreement(bins: pd.DataFrame) -> go.Figure:
    err = dict(type="data", symmetric=False, array=(bins["upper"] - bins["agreement"]).to_numpy(),
               arrayminus=(bins["agreement"] - bins["lower"]).to_numpy())
    fig = go.Figure(go.Scatter(x=bins["abs_gap_mid"], y=bins["agreement"], mode="lines+markers", error_y=err,
                               marker=dict(color=OKABE_ITO[0], size=8), name="agreement",
                               customdata=bins["n"],
                               hovertemplate="|gap| ≈ %{x:.2f}<br>agreement %{y:.3f}<br>%{customdata} battles<extra></extra>"))
    fig.add_hline(y=0.5, line_dash="dot", line_color="#999999", annotation_text="coin flip")
    return _layout(fig, "Score gap → human agreement", "|mean rubric score gap| (points)",
                   "share of humans agreeing with the gap's sign", height=380)


# -------------------------------------------------------------- residuals
def judge_vs_human(table: pd.DataFrame, methods: dict[str, str]) -> go.Figure:
    lo = np.nanmin([table["human_elo"].min()] + [table[f"{m}_elo"].min() for m in methods])
    hi = np.nanmax([table["human_elo"].max()] + [table[f"{m}_elo"].max() for m in methods])
    fig = go.Figure(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#999999", dash="dot"),
                               name="judge = human", hoverinfo="skip"))
    for k, (m, label) in enumerate(methods.items()):
        fig.add_trace(go.Scatter(x=table["human_elo"], y=table[f"{m}_elo"], mode="markers", name=label,
                                 marker=dict(color=METHOD_COLOURS.get(m, OKABE_ITO[k]), size=9),
                                 text=table["model"],
                                 hovertemplate="%{text}<br>human %{x:.0f}<br>judge %{y:.0f}<extra></extra>"))
    return _layout(fig, "Held-out judge Elo vs human Elo", "human Elo (held out, points)", "judge Elo (points)")


def residual_ramp(ramp: pd.DataFrame, labels: dict[str, str]) -> go.Figure:
    fig = go.Figure()
    for k, (m, label) in enumerate(labels.items()):
        r = ramp[ramp["method"] == m]
        fig.add_trace(go.Bar(x=r["quartile"], y=r["mean_residual"], name=label,
                             marker_color=METHOD_COLOURS.get(m, OKABE_ITO[k]), customdata=r["n"],
                             hovertemplate="%{x}: %{y:+.1f} Elo (%{customdata} models)<extra></extra>"))
    fig.add_hline(y=0, line_color="#999999")
    fig.update_layout(barmode="group")
    return _layout(fig, "Residual ramp: judge − human Elo by human-Elo quartile", "human-Elo quartile (Q1 weakest)",
                   "mean signed residual (Elo points)", height=380)


def width_decomposition(summary: pd.DataFrame) -> go.Figure:
    """Median SE vs q̂ per method, on constant-width contours (width = 2·q̂·SE)."""
    se_max = float(np.nanmax(summary["median_se"])) * 1.3 + 1
    q_max = float(np.nanmax(summary["qhat"].replace(np.inf, np.nan))) * 1.3 + 0.5
    fig = go.Figure()
    se_grid = np.linspace(0.2, se_max, 100)
    for w in (25, 50, 100, 200, 400):
        fig.add_trace(go.Scatter(x=se_grid, y=w / (2 * se_grid), mode="lines", line=dict(color="#cccccc", width=1),
                                 name=f"width {w}", showlegend=False, hoverinfo="skip"))
        fig.add_annotation(x=se_max * 0.95, y=w / (2 * se_max * 0.95), text=f"{w} Elo", showarrow=False,
                           font=dict(size=10, color="#888888"))
    fig.add_trace(go.Scatter(x=summary["median_se"], y=summary["qhat"], mode="markers+text", text=summary["method"],
                             textposition="top center", marker=dict(size=12, color=OKABE_ITO[0]), name="method",
                             hovertemplate="%{text}<br>median SE %{x:.1f}<br>q̂ %{y:.2f}<extra></extra>"))
    fig.update_yaxes(range=[0, q_max])
    fig.update_xaxes(range=[0, se_max])
    return _layout(fig, "Why intervals differ: width = 2 · q̂ · SE", "median bootstrap SE (Elo points)",
                   "conformal quantile q̂ (SEs)", height=420)


# --------------------------------------------------------------- selective
def coverage_risk(table: pd.DataFrame, methods: list[str], alpha_marker: float | None = None) -> go.Figure:
    """Mean test risk vs α with ±1σ bands, the y = x line, and markers where risk exceeds α."""
    fig = go.Figure()
    alphas = sorted(table["alpha"].unique())
    fig.add_trace(go.Scatter(x=alphas, y=alphas, mode="lines", line=dict(color="#999999", dash="dot"),
                             name="risk = α (target)", hoverinfo="skip"))
    for k, m in enumerate(methods):
        t = table[table["method"] == m].sort_values("alpha")
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        upper, lower = t["risk_mean"] + t["risk_sd"], t["risk_mean"] - t["risk_sd"]
        fig.add_trace(go.Scatter(x=np.r_[t["alpha"], t["alpha"][::-1]], y=np.r_[upper, lower[::-1]], fill="toself",
                                 fillcolor=colour, opacity=0.15, line=dict(width=0), showlegend=False,
                                 hoverinfo="skip"))
        over = t["risk_mean"] > t["alpha"]
        fig.add_trace(go.Scatter(
            x=t["alpha"], y=t["risk_mean"], mode="lines+markers", name=m, line=dict(color=colour),
            marker=dict(symbol=np.where(over, "x", "circle"), size=np.where(over, 12, 7)),
            customdata=np.c_[t["coverage_mean"], t["empty_splits"], t["share_over_alpha"]],
            hovertemplate=(m + "<br>α %{x:.2f}<br>mean risk %{y:.3f}<br>coverage %{customdata[0]:.2f}"
                           "<br>splits with nothing accepted %{customdata[1]}<br>share of splits over α "
                           "%{customdata[2]:.2f}<extra></extra>")))
    if alpha_marker is not None:
        fig.add_vline(x=alpha_marker, line_dash="dash", line_color=OKABE_ITO[1])
    return _layout(fig, "Risk among accepted judgments vs target α (× = mean risk above α)", "target error rate α",
                   "error rate among accepted (mean over splits ±1σ)", height=430)


def coverage_curve(table: pd.DataFrame, methods: list[str]) -> go.Figure:
    fig = go.Figure()
    for k, m in enumerate(methods):
        t = table[table["method"] == m].sort_values("alpha")
        fig.add_trace(go.Scatter(x=t["alpha"], y=t["coverage_mean"], mode="lines+markers", name=m,
                                 line=dict(color=OKABE_ITO[k % len(OKABE_ITO)]),
                                 error_y=dict(type="data", array=t["coverage_sd"].to_numpy(), thickness=1),
                                 hovertemplate=m + "<br>α %{x:.2f}<br>coverage %{y:.3f}<extra></extra>"))
    return _layout(fig, "Coverage: share of judgments accepted", "target error rate α", "accepted share (±1σ)",
                   height=380)


# ------------------------------------------------------ judges & annotators
def annotator_abilities(ann: pd.DataFrame) -> go.Figure:
    a = ann[~ann["excluded"]]
    fig = go.Figure()
    for flag, colour, name in ((False, OKABE_ITO[0], "reliable"), (True, OKABE_ITO[3], "anomalous (θ ≤ ε)")):
        s = a[a["anomalous"] == flag]
        fig.add_trace(go.Scatter(x=s["n_records"], y=s["ability_rel"], mode="markers", name=name,
                                 marker=dict(color=colour, size=9, symbol="x" if flag else "circle"),
                                 text=s["annotator"],
                                 hovertemplate="%{text}<br>%{x} votes<br>ability %{y:.2f} × average<extra></extra>"))
    fig.add_hline(y=0, line_color="#999999")
    fig.add_hline(y=1, line_dash="dot", line_color="#999999", annotation_text="average annotator")
    return _layout(fig, "Annotator abilities (am-ELO)", "votes cast", "ability relative to the mean (1 = average)",
                   height=420)


def shuffle_instability(frame: pd.DataFrame) -> go.Figure:
    f = frame.sort_values("m_elo")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=f["mean"], y=f["model"], mode="markers", name="online Elo (mean over orders)",
                             marker=dict(color=OKABE_ITO[3], size=8),
                             error_x=dict(type="data", symmetric=False, array=(f["max"] - f["mean"]).to_numpy(),
                                          arrayminus=(f["mean"] - f["min"]).to_numpy(), thickness=1.5),
                             customdata=np.c_[f["sd"], f["rank_min"], f["rank_max"]],
                             hovertemplate="%{y}<br>online Elo %{x:.0f} (sd %{customdata[0]:.1f})<br>rank "
                                           "%{customdata[1]}–%{customdata[2]}<extra></extra>"))
    fig.add_trace(go.Scatter(x=f["m_elo"], y=f["model"], mode="markers", name="m-ELO (maximum likelihood)",
                             marker=dict(color=OKABE_ITO[0], size=8, symbol="diamond"),
                             hovertemplate="%{y}<br>m-ELO %{x:.0f}<extra></extra>"))
    return _layout(fig, "Online Elo depends on battle order; maximum likelihood does not",
                   "Elo (points; bars span all shuffled orders)", "model", height=max(450, 16 * len(f) + 150))


# ------------------------------------------------------------------ bias
def coefficient_bars(coef: pd.DataFrame, title: str) -> go.Figure:
    fig = go.Figure(go.Scatter(
        x=coef["coef"], y=coef["feature"], mode="markers", marker=dict(size=11, color=OKABE_ITO[0]),
        error_x=dict(type="data", symmetric=False, array=(coef["upper"] - coef["coef"]).to_numpy(),
                     arrayminus=(coef["coef"] - coef["lower"]).to_numpy()),
        hovertemplate="%{y}: %{x:+.3f} logits per SD (95% CI)<extra></extra>"))
    fig.add_vline(x=0, line_color="#999999")
    return _layout(fig, title, "effect on log-odds of winning, per standard deviation of the a − b difference",
                   "feature", height=340)


def position_deflection(elo: pd.DataFrame) -> go.Figure:
    f = elo.sort_values("swap_averaged")
    fig = go.Figure()
    for col, name, k in (("first_order", "shown first only", 3), ("second_order", "shown second only", 1),
                         ("swap_averaged", "both orders", 0)):
        fig.add_trace(go.Scatter(x=f[col], y=f["model"], mode="markers", name=name,
                                 marker=dict(color=OKABE_ITO[k], size=8),
                                 hovertemplate="%{y}<br>" + name + ": %{x:.0f}<extra></extra>"))
    return _layout(fig, "Elo from one presentation order vs both", "Elo (points)", "model",
                   height=max(420, 16 * len(f) + 150))


def consistency_vs_elo(judges: pd.DataFrame, slope: float, intercept: float, r: float) -> go.Figure:
    fig = go.Figure(go.Scatter(x=judges["consistency"], y=judges["arena_elo"], mode="markers+text",
                               text=judges["judge"], textposition="top center", textfont=dict(size=9),
                               marker=dict(size=9, color=OKABE_ITO[0]),
                               hovertemplate="%{text}<br>consistency %{x:.3f}<br>Elo %{y:.0f}<extra></extra>"))
    xs = np.linspace(judges["consistency"].min(), judges["consistency"].max(), 20)
    fig.add_trace(go.Scatter(x=xs, y=intercept + slope * xs, mode="lines", line=dict(color=OKABE_ITO[3], dash="dash"),
                             name=f"least squares (r = {r:.2f})", hoverinfo="skip"))
    return _layout(fig, f"Judge consistency vs the judge's own arena Elo (Pearson r = {r:.2f})",
                   "consistency (0 = coin flip, 1 = always the same winner)", "judge's arena Elo", height=460)


# --------------------------------------------------------------- analyses
def alignment_scatter(scores: pd.DataFrame, ranking: str) -> go.Figure:
    fig = go.Figure()
    for k, subset in enumerate(["all", "discriminative", "non_discriminative"]):
        s = scores[(scores["ranking"] == ranking) & (scores["subset"] == subset)]
        fig.add_trace(go.Scatter(x=s["accuracy"], y=s["score"], mode="markers", name=subset.replace("_", "-"),
                                 marker=dict(color=OKABE_ITO[k], size=8), text=s["model"],
                                 hovertemplate="%{text}<br>accuracy %{x:.3f}<br>BT score %{y:.2f}<extra></extra>"))
    return _layout(fig, f"Accuracy vs Bradley–Terry score ({ranking})", "accuracy on graded prompts",
                   "Bradley–Terry score (logits)", height=420)


def budget_curve(summary: pd.DataFrame, metric: str, label: str) -> go.Figure:
    fig = go.Figure()
    for m in ("hard", "soft"):
        s = summary[summary["method"] == m].sort_values("budget")
        colour = METHOD_COLOURS[m]
        lo, hi = f"{metric}_lo", f"{metric}_hi"
        if lo in s:
            fig.add_trace(go.Scatter(x=np.r_[s["budget"], s["budget"][::-1]], y=np.r_[s[hi], s[lo][::-1]],
                                     fill="toself", fillcolor=colour, opacity=0.15, line=dict(width=0),
                                     showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=s["budget"], y=s[f"{metric}_mean"], mode="lines+markers", name=f"{m}-Elo",
                                 line=dict(color=colour),
                                 hovertemplate=f"{m}<br>budget %{{x}}<br>{label} %{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(type="log")
    return _layout(fig, f"{label} vs judged battles per model", "judged battles per model (log scale)", label,
                   height=380)
