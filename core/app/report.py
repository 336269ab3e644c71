"""A leaderboard report to hand out: one self-contained HTML file that prints cleanly to PDF.

The file needs no network to open: plotly.js is embedded once, every chart
follows it.  It holds the headline, the leaderboard table and chart, the
judge's calibration, the caveats that qualify the numbers, and a provenance
block (dataset and its fingerprint, imported files' SHA-256, the judge's
configuration, τ and the procedure behind the intervals, α, seeds, the code
version and the date), so that a reader can tell exactly what they hold.
"""

from __future__ import annotations

import html
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from core import charts
from core.app import Unavailable
from core.app.calibration import reliability_curves
from core.app.leaderboard import LeaderboardView, chart_input, display_table, view_for
from core.redact import redact
from core.stats.bias import position_bias
from core.stats.calibration import fit_tau
from core.store import Store
from core.version import code_version

HELDOUT_SEED = 42  # the seed of the leave-one-out and deployment bootstraps (core.stats.heldout defaults)

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #1a1a1a; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.9rem; margin-bottom: .2rem; }
h2 { font-size: 1.35rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
.sub { color: #555; margin-top: 0; } .headline { font-size: 1.5rem; font-weight: 600; margin: 1rem 0; }
table { border-collapse: collapse; font-size: .85rem; width: 100%; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .25rem .5rem; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td:nth-child(2), th:nth-child(2), td:nth-child(3), th:nth-child(3) { text-align: left; }
.note { background: #f6f8fa; border-left: 4px solid #0072B2; padding: .5rem .8rem; margin: .6rem 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; } dt { font-weight: 600; }
dd { margin: 0; font-family: ui-monospace, monospace; font-size: .85rem; word-break: break-all; }
@media print { body { margin: 0; max-width: none; } h2 { break-before: auto; } .chart, table { break-inside: avoid; }
               a { color: inherit; text-decoration: none; } }
"""


def _md(text: str) -> str:
    """The few Markdown marks the app's sentences use (**bold**, `code`), as HTML."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _figure(fig: Any, first: bool) -> str:
    fig.update_layout(width=1000)
    return (
        '<div class="chart">'
        + fig.to_html(full_html=False, include_plotlyjs=first, config={"displaylogo": False})
        + "</div>"
    )


def _judge_configuration(store: Store, judge: str) -> dict[str, Any]:
    """The judge's stored configuration: never a key (only the name of its environment variable)."""
    row = store.judge(judge)
    keep = ("name", "family", "model", "base_url", "template", "prompt_version", "profile")
    out: dict[str, Any] = {k: row.get(k) for k in keep if row.get(k) is not None and row.get(k) == row.get(k)}
    config = {k: v for k, v in (row.get("config") or {}).items() if "key" not in k.lower() or k == "api_key_env"}
    if config:
        out["config"] = config
    return out


def caveats(view: LeaderboardView, frame: pd.DataFrame | None, human_issues: tuple[str, ...] = ()) -> list[str]:
    """The sentences that qualify the numbers (each holds for exactly what the report shows)."""
    out = []
    statement = view.coverage_statement()
    if statement:
        out.append(statement)
    if view.note:
        out.append(view.note)
    if view.primary == "human":
        out.append(
            "Human Elo intervals are 95% sandwich intervals of the Bradley–Terry fit on the human votes; ranks "
            "count the models whose interval lies entirely above (models sharing a rank are statistically tied)."
        )
    apart = view.set_apart_statement()
    if apart:
        out.append(apart)
    out.extend(human_issues)
    if frame is not None:
        pos = position_bias(frame)
        if pos.biased:
            out.append(
                f"Position bias: the judge picks the first-shown answer in {pos.first_win_rate:.1%} of decisive "
                f"verdicts (95% interval {pos.ci[0]:.3f}–{pos.ci[1]:.3f}, excludes 0.5)."
            )
    return out


def report_html(
    store: Store,
    dataset: str,
    judge: str | None,
    tau: float | None = None,
    alpha: float = 0.1,
    now: datetime | None = None,
) -> str:
    """The whole report as one HTML document (``tau=None``: the judge's fitted τ)."""
    from core.app.leaderboard import ratings

    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    now = now or datetime.now(UTC)
    view, frame = view_for(store, dataset, judge, tau, alpha)
    human = ratings(store, dataset, "human", ci="sandwich")
    human_issues = () if isinstance(human, Unavailable) else human.issues
    prov = store.provenance(dataset)
    title = f"Leaderboard of {dataset}" + (f", judge {judge}" if judge else "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">Generated {now:%Y-%m-%d %H:%M} UTC'
        + (f" · τ = {view.tau:.3g} ({'fitted' if view.tau_fitted else 'chosen'})" if view.tau else "")
        + f" · α = {alpha:.2f}</p>",
    ]
    headline = view.headline()
    parts.append(f'<p class="headline">{_md(headline or "No model could be rated on this dataset.")}</p>')
    tau_note = view.tau_note()
    if tau_note:
        parts.append(f'<p class="sub">{_md(tau_note)}</p>')
    parts.append("<h2>Leaderboard</h2>")
    parts.append(display_table(view).to_html(index=False, na_rep="—", border=0, escape=True))
    drawn = chart_input(view, ("human", "hard", "soft"))
    fig = charts.leaderboard_intervals(
        drawn.frame, drawn.methods, interval=drawn.interval, interval_label=drawn.interval_label
    )
    parts.append(_figure(fig, first=True))

    if frame is not None and judge is not None:
        fit = fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))
        if fit.ok and fit.tau is not None:
            parts.append("<h2>Calibration of the judge</h2>")
            parts.append(f"<p>{_md(fit.caption())}</p>")
            user = view.tau if view.tau is not None else fit.tau
            curves = reliability_curves(frame, fit.tau, user, 0.75)
            parts.append(_figure(charts.reliability_diagram(curves), first=False))
            ece = pd.DataFrame(
                [
                    {
                        "target": c.label,
                        "ECE": round(c.ece, 4),
                        "battles": c.n,
                        "agreement with humans": round(c.accuracy, 3),
                    }
                    for c in curves
                ]
            )
            parts.append(ece.to_html(index=False, border=0))

    parts.append("<h2>Caveats</h2>")
    for c in caveats(view, frame, human_issues):
        parts.append(f'<div class="note">{_md(c)}</div>')

    parts.append("<h2>Provenance</h2><dl>")
    rows: list[tuple[str, str]] = [
        ("dataset", f"{prov['dataset']} (source: {prov['source']})"),
        ("data fingerprint", prov["fingerprint"]),
    ]
    rows += [(f"imported file ({i['format']})", f"{i['path']} sha256 {i['sha256']}") for i in prov["imports"]]
    if prov["meta"].get("seed") is not None:
        rows.append(("simulation seed", str(prov["meta"]["seed"])))
    if judge is not None:
        rows.append(("judge configuration", json.dumps(_judge_configuration(store, judge), default=str)))
    if view.tau is not None:
        rows.append(
            (
                "τ",
                f"{view.tau:.4g} — "
                + (
                    "fitted by maximum likelihood; intervals use τ refitted per fold"
                    if view.tau_fitted
                    else "chosen; intervals use τ fixed in every fold"
                ),
            )
        )
    rows += [
        ("α", f"{alpha:.2f}"),
        ("seeds", f"leave-one-out and deployment bootstraps: {HELDOUT_SEED} (20 resamples each)"),
        ("code version", code_version()),
        ("generated", now.isoformat(timespec="seconds")),
    ]
    parts += [f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in rows]
    parts.append("</dl></body></html>")
    return redact("\n".join(parts))  # names, notes and the configuration come from the store and files


def report_context(dataset: str, judge: str | None, tau: float | None, alpha: float) -> dict[str, str]:
    """The context every export of a leaderboard carries (CSV, Markdown, LaTeX)."""
    out = {"dataset": dataset}
    if judge:
        out["judge"] = judge
    if tau is not None and math.isfinite(tau):
        out["tau"] = f"{tau:.3g}"
    out |= {"alpha": f"{alpha:.2f}", "code": code_version(), "exported": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"}
    return out
