"""A leaderboard report to hand out: one self-contained HTML file that prints cleanly to PDF.

The file needs no network to open: plotly.js is embedded once, every chart
follows it.  It holds the headline, the leaderboard table and chart, the
judge's calibration, the caveats that qualify the numbers, and a provenance
block (dataset and its fingerprint, imported files' SHA-256, the judge's
configuration, τ and the procedure behind the intervals, α, seeds, the code
version and the date), so that a reader can tell exactly what they hold.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from core import charts
from core.app import Unavailable
from core.app.arena_hard import baseline_scores
from core.app.calibration import reliability_curves
from core.app.leaderboard import (
    LeaderboardView,
    baseline_caption,
    chart_input,
    display_table,
    lead,
    usable_baseline,
    view_for,
)
from core.app.mtbench import MTBenchView, mtbench_view
from core.app.mtbench import display_table as mtbench_display_table
from core.app.winrate import baseline_view, peer_headline
from core.redact import redact
from core.stats.bias import position_bias
from core.stats.calibration import Reliability, TauFit, fit_tau
from core.store import Store
from core.version import code_version

# Screen: a readable page.  Paper (@page, @media print): A4 or Letter, whichever the printer is set to; the
# headline, the key figures and the top of the table on page 1; a table as wide as the page at most (headers and
# long names wrap), its header repeated on every page; the charts drawn at paper width (PAPER_WIDTH_PX), without
# plotly's toolbar.
_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #1a1a1a; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.9rem; margin-bottom: .2rem; }
h2 { font-size: 1.35rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
.sub { color: #555; margin-top: 0; } .headline { font-size: 1.5rem; font-weight: 600; margin: 1rem 0; }
.lead { font-size: 1.15rem; font-weight: 600; margin: .5rem 0; }
ul.figures { list-style: none; padding: 0; margin: .4rem 0 .8rem; display: flex; flex-wrap: wrap; gap: .2rem 1.6rem; }
ul.figures li { white-space: nowrap; } ul.figures b { font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; font-size: .85rem; width: 100%; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .25rem .5rem; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
table.leaderboard :is(td, th):is(:nth-child(2), :nth-child(3)), table.ece :is(td, th):first-child {
  text-align: left; }
thead { display: table-header-group; } tr { break-inside: avoid; }
table.ece { width: auto; min-width: 60%; }
.note { background: #f6f8fa; border-left: 4px solid #0072B2; padding: .5rem .8rem; margin: .6rem 0; }
.note.tau { border-left-color: #D55E00; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; } dt { font-weight: 600; }
dd { margin: 0; font-family: ui-monospace, monospace; font-size: .85rem; word-break: break-all; }
.chart { margin: .8rem 0; }
@page { size: auto; margin: 12mm 11mm 13mm; }
@media print {
  html { font-size: 9.5pt; }
  body { margin: 0; max-width: none; padding: 0; line-height: 1.3; }
  h1 { font-size: 15pt; margin: 0 0 .1rem; } h2 { font-size: 12pt; margin: 1.1rem 0 .4rem; break-after: avoid; }
  .headline { font-size: 12pt; margin: .5rem 0 .3rem; } .sub { margin-bottom: .3rem; }
  ul.figures { margin: .2rem 0 .4rem; gap: .1rem 1.2rem; }
  table { font-size: 7.3pt; width: 100%; break-inside: auto; }
  th, td { padding: .12rem .24rem; }
  th { white-space: normal; vertical-align: bottom; }
  table.leaderboard td:is(:nth-child(2), :nth-child(3)) { white-space: normal; overflow-wrap: break-word; }
  table.leaderboard td:nth-child(2) { min-width: 7.5em; }
  .chart, .note, dl > * { break-inside: avoid; }
  .modebar, .modebar-container { display: none !important; }
  .note { padding: .3rem .6rem; margin: .4rem 0; }
  dl { font-size: 7.5pt; gap: 0 .8rem; grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr); }
  dd { font-size: 7pt; }
  a { color: inherit; text-decoration: none; }
}
"""
PAPER_CHART_ROWS = 20  # the leaderboard chart on paper: about half a page, so it fits beside a table's last rows
PAPER_ROW_PX, PAPER_CHART_BASE_PX = 18, 200  # its height on paper: title, legend and axes, then each row
PAPER_WIDTH_PX = 680  # a chart's width on paper: A4 (186 mm) and Letter (194 mm) inside the page margins, at 96 px/in


def _html_table(frame: pd.DataFrame, classes: str) -> str:
    """A table as HTML with every missing value as "—": pandas writes a nullable integer's NA as "<NA>"
    whatever ``na_rep`` says, and a person should never read that."""
    shown = frame.astype(object).where(frame.notna(), "—")
    return shown.to_html(index=False, border=0, escape=True, classes=classes)


def _md(text: str) -> str:
    """The few Markdown marks the app's sentences use (**bold**, `code`), as HTML."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _figure(fig: Any, first: bool) -> str:
    """One chart, sized for paper, without plotly's toolbar (it would print); plotly.js embedded with the first."""
    charts.for_paper(fig, PAPER_WIDTH_PX)
    config = {"displaylogo": False, "displayModeBar": False, "responsive": False}
    return '<div class="chart">' + fig.to_html(full_html=False, include_plotlyjs=first, config=config) + "</div>"


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


def _number(x: float, digits: int) -> str:
    return f"{x:.{digits}f}" if abs(x - round(x, digits)) < 1e-12 else f"{x:.{digits + 2}g}"


def file_stem(kind: str, dataset: str, judge: str | None, tau: float | None, alpha: float) -> str:
    """``<kind>_<dataset>_<judge>_tau<τ>_alpha<α>``: what a downloaded file holds, in its name; any character
    other than a letter, digit, ``.``, ``_`` or ``-`` becomes ``-`` (a dataset named ``org/set`` is ``org-set``)."""

    def clean(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "x"

    parts = [kind, clean(dataset)]
    if judge:
        parts.append(clean(judge))
    if tau is not None and math.isfinite(tau):
        parts.append(f"tau{tau:.3g}")
    parts.append(f"alpha{_number(alpha, 2)}")
    return "_".join(parts)


def report_file_name(dataset: str, judge: str | None, tau: float | None, alpha: float, suffix: str = ".html") -> str:
    """``report_<dataset>_<judge>_tau0.477_alpha0.10.html`` (τ: the one the report is drawn at, fitted or chosen)."""
    return file_stem("report", dataset, judge, tau, alpha) + suffix


@dataclass(frozen=True)
class TauCaveat:
    """The chosen τ beside the fitted one, with the ECE of the soft targets at each (None: τ cannot be fitted)."""

    chosen: float
    fit: TauFit
    ece_chosen: float
    ece_fitted: float | None
    n: int

    def sentence(self) -> str:
        if self.fit.tau is None or self.ece_fitted is None:
            return (
                f"**τ = {self.chosen:.3g} was chosen, and τ cannot be fitted on this data ({self.fit.reason}).** "
                f"The Soft-Elo and its intervals use this τ; nothing checks that its soft targets are calibrated "
                f"(their ECE against the human votes is {self.ece_chosen:.3f} on {self.n:,} battles)."
            )
        if self.fit.lower is not None and self.fit.upper is not None:
            side = "inside" if self.fit.lower <= self.chosen <= self.fit.upper else "outside"
            where = f" ({side} its 95% interval {self.fit.lower:.3f}–{self.fit.upper:.3f})"
        else:
            where = ""
        return (
            f"**τ = {self.chosen:.3g} was chosen; it is not the fitted τ = {self.fit.tau:.3f}**{where}. The "
            f"Soft-Elo and its intervals use the chosen τ. Against the human votes on {self.n:,} battles, the soft "
            f"targets have an expected calibration error (ECE) of {self.ece_chosen:.3f} at the chosen τ and "
            f"{self.ece_fitted:.3f} at the fitted τ."
        )


def _chosen_is_fitted(view: LeaderboardView, fit: TauFit) -> bool:
    if view.tau_fitted:
        return True
    return fit.tau is not None and view.tau is not None and math.isclose(view.tau, fit.tau, rel_tol=1e-9)


def _calibration(frame: pd.DataFrame, view: LeaderboardView, fit: TauFit) -> tuple[list[Reliability], TauCaveat | None]:
    """The reliability curves the report draws (fitted τ, the chosen τ when it differs, hard labels, label
    smoothing) and the τ caveat when the chosen τ is not the fitted one."""
    from core.app.calibration import label_reliability, pool_tied_bins
    from core.stats.calibration import reliability

    q = 0.75
    same = _chosen_is_fitted(view, fit)
    if fit.tau is not None:
        curves = reliability_curves(frame, fit.tau, view.tau if view.tau is not None else fit.tau, q)
        if same or view.tau is None:
            curves = [curves[0], *curves[2:]]
        else:
            curves[1] = dataclasses.replace(curves[1], label=f"chosen τ = {view.tau:.3g}")
    else:
        curves = label_reliability(frame, q)
        if view.tau is not None:
            chosen = reliability(
                frame["gap"], frame["human_y"], frame["judge_hard"], tau=view.tau, label=f"chosen τ = {view.tau:.3g}"
            )
            curves = [pool_tied_bins(chosen), *curves]
    caveat = None
    if view.tau is not None and not same and "soft_elo" in view.table:
        first = curves[1] if fit.tau is not None else curves[0]
        caveat = TauCaveat(view.tau, fit, first.ece, curves[0].ece if fit.tau is not None else None, first.n)
    return curves, caveat


def _key_figures(view: LeaderboardView, frame: pd.DataFrame | None, human: Any, alpha: float) -> list[str]:
    """The numbers a reader wants beside the headline (HTML fragments, values escaped)."""
    out = [f"<b>{len(view.table):,}</b> models"]
    if human is not None:
        votes = f"<b>{human.n_votes:,}</b> human votes on " if human.n_votes is not None else "human votes on "
        out.append(f"{votes}<b>{human.n_battles:,}</b> battles")
    if frame is not None:
        out.append(f"<b>{int(frame['judge_hard'].notna().sum()):,}</b> battles judged")
    if view.tau is not None:
        out.append(f"<b>τ = {view.tau:.3g}</b> ({'fitted' if view.tau_fitted else 'chosen'})")
    if view.has_intervals:
        width = view.table["interval_upper"] - view.table["interval_lower"]
        out.append(
            f"<b>{1 - alpha:.0%}</b> conformal intervals (α = {alpha:.2f}), median width "
            f"<b>{float(pd.Series(width).median()):.0f}</b> Elo"
        )
    else:
        out.append(f"α = {alpha:.2f}")
    return out


def _tau_words(view: LeaderboardView, fit: TauFit | None) -> str:
    """ "τ = 0.48 (chosen; the fitted τ is 0.477)" or "τ = 0.477 (fitted)"."""
    assert view.tau is not None
    if view.tau_fitted:
        return f"τ = {view.tau:.3g} (fitted)"
    if fit is None or fit.tau is None:
        return f"τ = {view.tau:.3g} (chosen; τ cannot be fitted on this data)"
    return f"τ = {view.tau:.3g} (chosen; the fitted τ is {fit.tau:.3f})"


def _changes_since(store: Store, dataset: str, judge: str | None, previous: str | Path) -> list[str]:
    """The "Changes since <previous report>" section: one comparison per kind of label both snapshots hold."""
    from core.app.diff import compare_with_bundle

    name = Path(previous).name
    parts = [f"<h2>Changes since {html.escape(name)}</h2>"]
    for who in (None, judge) if judge is not None else (None,):
        try:
            comparison = compare_with_bundle(store, previous, dataset, who)
        except ValueError as exc:
            parts.append(f'<p class="sub">{html.escape(str(exc))}: no comparison of these.</p>')
            continue
        parts.append(f"<h3>On the {html.escape(comparison.what)}</h3>")
        parts.append(f"<p>{html.escape(comparison.summary())}</p>")
        parts.append(_html_table(comparison.table(), "changes"))
        parts.append(f'<p class="sub">{html.escape(comparison.method())}.</p>')
    return parts


def report_html(
    store: Store,
    dataset: str,
    judge: str | None,
    tau: float | None = None,
    alpha: float = 0.1,
    now: datetime | None = None,
    previous: str | Path | None = None,
    others: Sequence[str] = (),
) -> str:
    """The whole report as one HTML document (``tau=None``: the judge's fitted τ; ``previous``: the bundle of
    an earlier report, which adds "Changes since" it; ``others``: registered rating methods beside human,
    Hard- and Soft-Elo in its table)."""
    return build_report(store, dataset, judge, tau, alpha, now, previous, others).html


@dataclass(frozen=True)
class Report:
    html: str
    dataset: str
    judge: str | None
    tau: float | None  # the τ the report is drawn at (fitted or chosen); None without Soft-Elo
    alpha: float

    def file_name(self, suffix: str = ".html") -> str:
        return report_file_name(self.dataset, self.judge, self.tau, self.alpha, suffix)


def _arena_hard_section(scores: Any) -> list[str]:
    """The section "Arena-Hard score" when the judge graded its verdicts against a baseline (an Arena-Hard import;
    ``scores``: :func:`core.app.arena_hard.baseline_scores`)."""
    from core.app.arena_hard import table as score_table

    if scores is None or isinstance(scores, Unavailable):
        return []
    parts = [
        f"<h2>Arena-Hard score against {html.escape(scores.plain.baseline)}</h2>",
        _html_table(score_table(scores), "arena-hard"),
        f'<p class="sub">{_md(scores.plain.method)}'
        + (f" {_md(scores.styled.style_note)}" if scores.styled is not None else "")
        + "</p>",
    ]
    for note in (*scores.plain.notes, *((scores.style_reason,) if scores.style_reason else ())):
        parts.append(f'<div class="note">{_md(note)}</div>')
    return parts


def _against_baseline(rates: Any, judge: str | None) -> list[str]:
    """The section "Against the baseline": the Leaderboard's win-rate table (AlpacaEval's LC and win rate with
    their standard errors), its caption and notes."""
    from core.app.winrate import table as rate_table

    parts = [
        f"<h2>Against the baseline, {html.escape(str(rates.baseline))}</h2>",
        _html_table(rate_table(rates), "against-baseline"),
        # the LC method's paragraph is the page's; on paper it pushed a short report's provenance onto a page
        # of its own (tests/test_report_document.py), and docs/METHODS.md states it
        f'<p class="sub">{_md(baseline_caption(judge, rates.n_battles))} Length-controlled '
        "win rate: Dubois et al. (2024), as docs/METHODS.md states it.</p>",
    ]
    parts += [f'<div class="note">{_md(note)}</div>' for note in rates.notes]
    return parts


def build_report(
    store: Store,
    dataset: str,
    judge: str | None,
    tau: float | None = None,
    alpha: float = 0.1,
    now: datetime | None = None,
    previous: str | Path | None = None,
    others: Sequence[str] = (),
) -> Report:
    """The report (:func:`report_html`) with the τ it is drawn at, which names its file.

    ``previous``: a bundle of the same dataset exported earlier (``export --bundle``); the report then has a
    section "Changes since <bundle>": per model the change of Elo with its 95% interval and a Holm verdict,
    on the human votes and on the judge's hard labels (:mod:`core.app.diff`).
    """
    from core.app.leaderboard import ratings

    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    now = now or datetime.now(UTC)
    graded = mtbench_view(store, dataset)
    if store.dataset_counts(dataset)["battles"] == 0 and isinstance(graded, MTBenchView):
        return _grades_report(store, dataset, graded, alpha, now)
    view, frame = view_for(store, dataset, judge, tau, alpha, others=others)
    human = ratings(store, dataset, "human", ci="sandwich")
    human_issues = () if isinstance(human, Unavailable) else human.issues
    prov = store.provenance(dataset)
    fit = None
    if frame is not None and judge is not None:
        fit = fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))
    title = f"Leaderboard of {dataset}" + (f", judge {judge}" if judge else "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">Generated {now:%Y-%m-%d %H:%M} UTC'
        + (f" · {html.escape(_tau_words(view, fit))}" if view.tau is not None else "")
        + f" · α = {alpha:.2f}</p>",
    ]
    # a star design without human votes leads with the peer's own metric, as the Leaderboard page does
    # (core.app.leaderboard.lead; the same sentence, winrate.peer_headline), the Elo leaderboards after it
    rates = usable_baseline(baseline_view(store, dataset, judge))
    led = lead(rates is not None, not isinstance(human, Unavailable), on_slice=False)
    scores = baseline_scores(store, dataset, judge) if rates is not None and judge else None
    peer_first = rates is not None and led.peer_first
    if rates is not None and peer_first:
        plain = None if scores is None or isinstance(scores, Unavailable) else scores.plain
        parts.append(f'<p class="headline">{_md(peer_headline(rates, plain))}</p>')
        parts += _arena_hard_section(scores)
        parts += _against_baseline(rates, judge)
        parts.append("<h2>Elo leaderboards</h2>")
    headline = view.headline()
    parts.append(
        f'<p class="{"lead" if peer_first else "headline"}">'
        f"{_md(headline or 'No model could be rated on this dataset.')}</p>"
    )
    figures = _key_figures(view, frame, None if isinstance(human, Unavailable) else human, alpha)
    parts.append('<ul class="figures">' + "".join(f"<li>{f}</li>" for f in figures) + "</ul>")
    tau_note = view.tau_note()
    if tau_note:
        parts.append(f'<p class="sub">{_md(tau_note)}</p>')
    if not peer_first:  # after the peer's numbers the heading "Elo leaderboards" stands above the table
        parts.append("<h2>Leaderboard</h2>")
    parts.append(_html_table(display_table(view), "leaderboard"))
    # the chart holds the top rows only: a chart of every model is a page of its own, and after a table that
    # spills a few rows it left a page holding those rows alone (the table lists every model)
    drawn = chart_input(view, ("human", "hard", "soft"), rows=view.table.head(PAPER_CHART_ROWS))
    fig = charts.leaderboard_intervals(
        drawn.frame, drawn.methods, interval=drawn.interval, interval_label=drawn.interval_label
    )
    # on paper a row needs 18 px, not the screen's 450 px floor: five models drawn 450 px tall pushed the
    # provenance's last lines onto a page of their own
    fig.update_layout(height=PAPER_CHART_BASE_PX + PAPER_ROW_PX * min(len(view.table), PAPER_CHART_ROWS))
    parts.append(_figure(fig, first=True))
    if (more := len(view.table) - PAPER_CHART_ROWS) > 0:
        parts.append(
            f'<p class="sub">The chart shows the top {PAPER_CHART_ROWS}; the table above lists all '
            f"{len(view.table)} models ({more} more).</p>"
        )
    if not peer_first:
        parts += _arena_hard_section(scores)
        if rates is not None:
            parts += _against_baseline(rates, judge)
    if isinstance(graded, MTBenchView):
        parts += _mtbench_parts(graded)
    if previous is not None:
        parts += _changes_since(store, dataset, judge, previous)

    tau_caveat = None
    if frame is not None and fit is not None and (fit.ok or view.tau is not None):
        curves, tau_caveat = _calibration(frame, view, fit)
        parts.append("<h2>Calibration of the judge</h2>")
        parts.append(f"<p>{_md(fit.caption())}</p>")
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
        parts.append(_html_table(ece, "ece"))

    parts.append("<h2>Caveats</h2>")
    if tau_caveat is not None:
        parts.append(f'<div class="note tau">{_md(tau_caveat.sentence())}</div>')
    for c in caveats(view, frame, human_issues):
        parts.append(f'<div class="note">{_md(c)}</div>')

    parts.append("<h2>Provenance</h2><dl>")
    rows = _provenance_rows(prov)
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
        ("judge SEs", "analytic (each model's sandwich SE of its placement): no resampling, no seed"),
        ("code version", code_version()),
        ("generated", now.isoformat(timespec="seconds")),
    ]
    parts += [f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in rows]
    parts.append("</dl></body></html>")
    text = redact("\n".join(parts))  # names, notes and the configuration come from the store and files
    return Report(text, dataset, judge, view.tau if "soft_elo" in view.table else None, alpha)


def _provenance_rows(prov: dict) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = [
        ("dataset", f"{prov['dataset']} (source: {prov['source']})"),
        ("data fingerprint", prov["fingerprint"]),
    ]
    rows += [(f"imported file ({i['format']})", f"{i['path']} sha256 {i['sha256']}") for i in prov["imports"]]
    return rows


def _mtbench_parts(view: MTBenchView) -> list[str]:
    """The MT-Bench score section: its table and how it is computed."""
    table = mtbench_display_table(view)
    return [
        "<h2>MT-Bench score</h2>",
        _html_table(table, "leaderboard"),
        f'<p class="sub">{_md(view.caption())}</p>',
    ]


def _grades_report(store: Store, dataset: str, view: MTBenchView, alpha: float, now: datetime) -> Report:
    """The report of a dataset of single-answer grades only (no battles to rate): the MT-Bench score."""
    title = f"MT-Bench score of {dataset}, judge {view.judge}"
    prov = store.provenance(dataset)
    meta = prov["meta"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">Generated {now:%Y-%m-%d %H:%M} UTC</p>',
        f'<p class="headline">{_md(view.headline())}</p>',
        *_mtbench_parts(view),
        "<h2>Caveats</h2>",
        '<div class="note">No battles: the dataset holds single-answer grades only, so there is no Elo, no '
        "confidence interval and no calibration; the score is a mean of grades, not a comparison.</div>",
    ]
    for key, what in (
        (
            "grades_repeated",
            "grades repeat an answer already graded (a run appended to the file); counted, as "
            "FastChat counts every row",
        ),
        ("grades_without_answer", "grades are of answers the directory does not hold (their text is unknown)"),
        ("grades_unread", "grades could not be read (FastChat's -1) and are left out"),
    ):
        if meta.get(key):
            parts.append(f'<div class="note">{int(meta[key]):,} {html.escape(what)}.</div>')
    for note in meta.get("notes") or ():
        parts.append(f'<div class="note">{html.escape(str(note))}.</div>')
    rows = _provenance_rows(prov)
    rows += [("code version", code_version()), ("generated", now.isoformat(timespec="seconds"))]
    parts.append("<h2>Provenance</h2><dl>")
    parts += [f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in rows]
    parts.append("</dl></body></html>")
    return Report(redact("\n".join(parts)), dataset, view.judge, None, alpha)


# ------------------------------------------------------------------ PDF
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_DIRS: tuple[str, ...] = ("/usr/bin",)  # looked in after PATH
CHROMIUM_ENV = "ARENA_CHROMIUM"  # an explicit browser executable


class NoChromium(RuntimeError):
    """No headless Chromium to print with (the message says where it looked and what to do)."""


def find_chromium() -> str:
    """The Chromium (or Chrome) executable: ``$ARENA_CHROMIUM``, else the first of CHROMIUM_NAMES on PATH, else in
    CHROMIUM_DIRS."""
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        found = shutil.which(given)
        if found is None:
            raise NoChromium(f"{CHROMIUM_ENV}={given} is not an executable Chromium or Chrome")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    for folder in CHROMIUM_DIRS:
        for name in CHROMIUM_NAMES:
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise NoChromium(
        "a PDF is printed by headless Chromium, and none was found ("
        + ", ".join(CHROMIUM_NAMES)
        + f" on PATH or in {', '.join(CHROMIUM_DIRS)}): install it (Debian: apt-get install chromium), point "
        f"{CHROMIUM_ENV} at one, or write the HTML report (--format html) and print it from a browser"
    )


PAPER_CSS = {"a4": "A4", "letter": "letter"}


def html_to_pdf(
    text: str, out: str | Path, paper: str = "a4", chromium: str | None = None, timeout: float = 180
) -> Path:
    """Print the report ``text`` to the PDF ``out`` with headless Chromium, on A4 or Letter paper.

    The file appears whole or not at all (printed beside ``out``, then renamed).  Chromium runs with a fresh
    profile in a temporary folder and no network use of its own; as root it needs ``--no-sandbox``.
    """
    if paper not in PAPER_CSS:
        raise ValueError(f"paper {paper!r}: expected one of {', '.join(PAPER_CSS)}")
    exe = chromium or find_chromium()
    out = Path(out)
    sized = text.replace("</style>", f"@page {{ size: {PAPER_CSS[paper]}; }}</style>", 1)
    with tempfile.TemporaryDirectory(prefix="arena-report-") as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(sized, encoding="utf-8")
        printed = Path(tmp) / "report.pdf"
        cmd = [
            exe,
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={printed}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        cmd.append(page.as_uri())
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{exe} did not print the report within {timeout:.0f} s") from None
        if not printed.is_file() or printed.read_bytes()[:5] != b"%PDF-":
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise RuntimeError(f"{exe} printed no PDF (exit {done.returncode}): {tail}")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        shutil.copyfile(printed, partial)
        partial.replace(out)
    return out


def report_context(dataset: str, judge: str | None, tau: float | None, alpha: float) -> dict[str, str]:
    """The context every export of a leaderboard carries (CSV, Markdown, LaTeX)."""
    out = {"dataset": dataset}
    if judge:
        out["judge"] = judge
    if tau is not None and math.isfinite(tau):
        out["tau"] = f"{tau:.3g}"
    out |= {"alpha": f"{alpha:.2f}", "code": code_version(), "exported": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"}
    return out
