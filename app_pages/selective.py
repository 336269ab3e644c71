"""Selective judging (SCOPE): accept a judgment only when it is confident enough for an error target α.

α slider → core.app.selective.scope_at_alpha (λ̂ and the selective leaderboard; kept in the store at the first
           visit's α, selective.scope_at_alpha_of) → Store.battle_frame
         → core.charts.coverage_risk (the curves over the default α grid are cached; the slider's α is one more
           point computed alone)
"""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app_pages._loaders import compute, load_result, load_sample
from app_pages._selection import SCOPE_ALPHA_RANGE, bound_radio, bound_slider, selection
from app_pages._widgets import notice, page_guard, require, require_selection, show_chart, show_table, slice_picker
from core import charts
from core.app import Unavailable, derived, selective
from core.app import display as show
from core.app.availability import ADD_BOTH_ORDERS, ADD_CONFIDENCE
from core.app.data import SampledFrame
from core.app.precompute import SCOPE_SPLITS as N_SPLITS
from core.app.safe_text import escape_markdown as esc
from core.domain import Slice, slice_label
from core.methods import SCOPE_RULES

st.title("Selective judging (SCOPE)")
SOURCE_HELP = selective.source_help(show.scope_source)


def load_curves(
    dataset: str, judge: str, source: str, alphas: tuple[float, ...]
) -> selective.ScopeCurves | Unavailable:
    progress = f"Evaluating {N_SPLITS} calibration/test splits: split"
    return load_result(selective.scope_curves_of, dataset, judge, source, alphas, N_SPLITS, progress=progress)


def load_at_alpha(dataset: str, judge: str, source: str, alpha: float) -> selective.ScopeAtAlpha | Unavailable:
    if abs(alpha - selective.DEFAULT_ALPHA) < 1e-9:  # the first visit's position: kept by the precompute
        return load_result(selective.scope_at_alpha_of, dataset, judge, source, selective.DEFAULT_ALPHA)
    return compute(derived.scope_at_alpha, dataset, judge, source, alpha)


def load_at_alpha_on(
    dataset: str, judge: str, source: str, where: Slice, alpha: float
) -> selective.ScopeAtAlpha | Unavailable:
    spinner = "Calibrating on the slice…"
    return compute(selective.scope_at_alpha_on, dataset, judge, source, alpha, where, spinner=spinner)


def controls(sources: list[str]) -> tuple[str, float]:
    """The source of P(a ≻ b) (named, not offered, when there is one) and the α slider, side by side."""
    c1, c2 = st.columns(2)
    with c1:
        if len(sources) > 1:
            source = bound_radio(
                "scope_source",
                "Source of P(a ≻ b)",
                sources,
                shown=selection().scope_source or "",
                help=SOURCE_HELP,
                format_func=show.scope_source,
            )
        else:  # one choice is no choice: named, not offered
            source = sources[0]
            st.caption(f"Source of P(a ≻ b): {show.scope_source(source)}, the only one this judge's data gives.")
    with c2:
        alpha = bound_slider(
            "scope_alpha",
            "α (target error rate among accepted judgments)",
            *SCOPE_ALPHA_RANGE,
            shown=selection().scope_alpha,
        )
    return source, alpha


def curves_section(
    dataset: str, judge: str, source: str, sources: list[str], alpha: float, sample: SampledFrame
) -> selective.ScopeCurves:
    """The coverage–risk curves over the default α grid plus the slider's α, and what they say."""
    found = load_curves(dataset, judge, source, tuple(selective.DEFAULT_ALPHAS))
    if isinstance(found, Unavailable):
        # nothing to draw: say so once, with what would give SCOPE a confidence to threshold
        notice(found.reason.replace(repr(source), f"“{show.scope_source(source)}”"), fix=ADD_CONFIDENCE)
        st.stop()
    curves = found
    if len(sources) == 1:
        notice(selective.one_order_notice(show.scope_source(source)), fix=ADD_BOTH_ORDERS)
    table = curves.table
    if not np.isclose(list(selective.DEFAULT_ALPHAS), alpha).any():
        extra = require(load_curves(dataset, judge, source, (round(alpha, 2),)))
        table = pd.concat([table, extra.table], ignore_index=True)
    methods = list(SCOPE_RULES)
    named = table.assign(method=table["method"].map(show.scope_rule))  # the charts' legend: rules in words
    rules = [show.scope_rule(m) for m in methods]
    show_chart(
        partial(charts.coverage_risk, named, rules, alpha),
        key="scope_risk",
        how_to_read="each line is a rule for choosing which judgments to trust; on or under the dotted line "
        "its error rate among accepted judgments met the target. A × marks an α where the mean "
        f"risk went over it. Bands are ±1σ over {curves.n_splits} random calibration/test splits "
        f"of {curves.n_instances:,} human-voted battles; {show.scope_rule('heuristic')} and "
        f"{show.scope_rule('vanilla')} are uncalibrated baselines.",
    )
    if sample.sampled:
        st.caption(str(sample.statement()))
    for level, text in selective.risk_claims(table, curves.n_splits, show.scope_rule):
        (st.warning if level == "warning" else st.caption)(text)
    show_chart(
        partial(charts.coverage_curve, named, rules, alpha),
        key="scope_coverage",
        how_to_read="how much of the judging each rule keeps; a useful rule keeps a lot while staying under "
        "the target in the chart above.",
    )

    return curves


def at_alpha_section(
    dataset: str, judge: str, source: str, alpha: float, curves: selective.ScopeCurves
) -> selective.ScopeAtAlpha:
    """At the slider's α (on a slice when one is picked): the threshold, the confidence's quality, examples."""
    st.subheader(f"At α = {alpha:.2f}")
    where = slice_picker(dataset, key="scope_slice", what=selective.SLICE_HELP)
    if where:
        st.caption(
            f"On the slice **{esc(slice_label(where))}**: the threshold is calibrated, and the judgments accepted, "
            "counted and ranked, on its battles alone (the curves above are on all battles)."
        )
        at = require(load_at_alpha_on(dataset, judge, source, where, round(alpha, 4)))
    else:
        at = require(load_at_alpha(dataset, judge, source, round(alpha, 4)))
    level, text = selective.threshold_statement(at)
    (st.success if level == "success" else st.warning)(text)
    show_table(
        show.columns(curves.quality),
        hide_index=True,
        width="stretch",
        column_config={
            show.header(c): st.column_config.NumberColumn(format="%.3f") for c in ("accuracy", "ece", "auroc", "auprc")
        },
    )
    st.caption(selective.QUALITY_CAPTION)
    fmt = {
        show.header(c): st.column_config.NumberColumn(format="%.3f") for c in ("p_fwd", "p_rev", "p_bar", "uncertainty")
    }
    accepted, abstained = selective.examples(at)
    a, b = st.columns(2)
    with a:
        st.markdown("**Examples accepted** (most confident first)")
        if accepted.empty:
            st.caption("No battle is accepted: at this α the rule abstains on every one.")
        else:
            show_table(show.columns(accepted), hide_index=True, column_config=fmt)
    with b:
        st.markdown("**Examples abstained** (least confident first)")
        if abstained.empty:
            st.caption("None: every battle is accepted at this α.")
        else:
            show_table(show.columns(abstained), hide_index=True, column_config=fmt)
    st.caption(selective.EXAMPLES_CAPTION)

    return at


def leaderboard_section(at: selective.ScopeAtAlpha) -> None:
    """Elo on all judge labels, on the accepted ones, and on those plus the abstained battles' human votes."""
    st.subheader("Selective leaderboard")
    if at.leaderboard.empty:
        notice("no leaderboard: " + "; ".join(at.notes))
    else:
        for note in at.notes:
            st.warning(note)
        show_table(selective.leaderboard_display(at), width="stretch")
        st.caption(selective.leaderboard_caption(at))


with page_guard("The selective judging page", page="selective"):
    ctx = require_selection(needs_judge="SCOPE decides which judge verdicts to trust.")
    dataset, judge = ctx.dataset, ctx.judge
    assert judge is not None
    sample = load_sample(dataset, judge)
    frame = sample.frame
    if frame["human_y"].notna().sum() == 0:
        notice(selective.NO_VOTES)
        st.stop()
    sources = selective.scope_sources(frame)
    if not sources:
        notice(selective.NO_PROBABILITY, fix=ADD_CONFIDENCE)
        st.stop()
    source, alpha = controls(sources)
    curves = curves_section(dataset, judge, source, sources, alpha, sample)
    at = at_alpha_section(dataset, judge, source, alpha, curves)
    leaderboard_section(at)
