"""Judge bias: position, verbosity, self-preference, style control and echo.

judge selector → core.app.bias.bias_report → Store.battle_frame / judgments_frame → core.charts.*
               → core.app.bias.bias_view (what each section shows)
"""

from collections.abc import Iterable
from functools import partial

import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import bias
from core.app import display as show
from core.app.bias import BiasView, Claim
from core.app.page_view import Metric
from core.app.safe_text import escape_markdown as esc

st.title("Judge bias")


def load_report(dataset: str, judge: str) -> dict:
    with st.spinner("Fitting the bias diagnostics (cached afterwards)…"):
        return load_result(bias.bias_report, dataset, judge)


def say(claims: Iterable[Claim]) -> None:
    """Sentences, each in its own register (warning, notice, caption)."""
    for level, text in claims:
        # the sentences name models and judges (imported names): shown as text
        if level == "warning":
            st.warning(esc(text))
        elif level == "info":
            notice(esc(text))
        else:
            st.caption(esc(text))


def metric(m: Metric) -> None:
    st.metric(m.label, m.value, help=m.help)


def position(view: BiasView) -> None:
    st.subheader("Position")
    for column, m in zip(st.columns(3), view.position_metrics, strict=True):
        with column:
            metric(m)
    say(view.position_claims)
    if view.position_elo is not None:
        show_chart(
            partial(charts.position_deflection, view.position_elo),
            key="position_elo",
            how_to_read="each model's Elo from the verdicts where it was shown first only (▶) or second only "
            "(◀), against both orders averaged (●); wide gaps mean the order of presentation "
            "moves the leaderboard.",
        )


def style(view: BiasView) -> None:
    st.subheader("Style control")
    if view.style_note:
        notice(view.style_note)
    if view.style_coefficients is None:
        return
    show_chart(
        partial(charts.coefficient_bars, view.style_coefficients, "What the judge rewards beyond model strength"),
        key="style_coef",
        how_to_read="positive: at equal model strength the judge prefers the answer that is longer / has "
        "more of that element; intervals crossing zero are indistinguishable from no effect.",
    )
    if not view.style_moved.empty:
        show_table(
            view.style_moved,
            hide_index=True,
            width="stretch",
            column_config={
                show.header("elo_raw"): st.column_config.NumberColumn(format="%.0f"),
                show.header("elo_controlled"): st.column_config.NumberColumn(format="%.0f"),
                show.header("moved"): st.column_config.NumberColumn(format="%+d"),
            },
        )
    st.caption(view.style_caption)


def verbosity_and_self_preference(view: BiasView) -> None:
    st.subheader("Verbosity and self-preference")
    metric(view.verbosity_metric)
    say(view.verbosity_claims)
    say(view.self_preference_claims)


def echo(view: BiasView) -> None:
    st.subheader("Echo")
    if view.echo_notice:
        notice(view.echo_notice)
    if view.echo_shown:
        left, right = st.columns(2)
        with left:
            if view.echo_rates is not None:
                show_chart(
                    partial(charts.echo_rates, view.echo_rates),
                    key="echo_rates",
                    how_to_read="how often each model's answers echo (repeat phrases or add new "
                    "question–answer pairs after the final answer).",
                )
            else:
                st.caption(bias.NO_ECHOING_MODEL)
        with right:
            if view.echo_preference is not None:
                show_chart(
                    partial(
                        charts.rate_intervals,
                        view.echo_preference,
                        "pairs",
                        "echoing_side_win_rate",
                        "lower",
                        "upper",
                        "Does the judge prefer the echoing answer?",
                        "share of verdicts for the echoing side (95% CI)",
                    ),
                    key="echo_pref",
                    how_to_read="battles where exactly one side echoes; left of the dotted line the judge "
                    "penalises echo, right of it rewards it.",
                )
            if view.echo_note:
                st.caption(esc(view.echo_note))
    if view.intervention is not None:
        show_chart(
            partial(
                charts.rate_intervals,
                view.intervention,
                "variant",
                "p_a",
                "lower",
                "upper",
                "Echo intervention: the same battles with echo added to one side",
                "P(judge prefers a) (mean over battles and orders, 95% CI)",
                reference=None,
                x_range=None,
            ),
            key="echo_intervention",
            how_to_read=view.intervention_how_to_read,
        )


with page_guard("The judge bias page", page="bias"):
    ctx = require_selection(needs_judge="the bias diagnostics read a judge's verdicts and scores.")
    assert ctx.judge is not None
    view = bias.bias_view(load_report(ctx.dataset, ctx.judge))
    position(view)
    style(view)
    verbosity_and_self_preference(view)
    echo(view)
