"""Judge bias: position, verbosity, self-preference, style control and echo.

judge selector → core.app.bias.bias_report → Store.battle_frame / judgments_frame → core.charts.*
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import bias
from core.app import display as show
from core.app.safe_text import escape_markdown as esc

st.title("Judge bias")


def load_report(dataset: str, judge: str) -> dict:
    with st.spinner("Fitting the bias diagnostics (cached afterwards)…"):
        return load_result(bias.bias_report, dataset, judge)


def _pct(x: float | None) -> str:
    return "—" if x is None or pd.isna(x) else f"{x:.1%}"


with page_guard("The judge bias page", page="bias"):
    ctx = require_selection(needs_judge="the bias diagnostics read a judge's verdicts and scores.")
    assert ctx.judge is not None
    r = load_report(ctx.dataset, ctx.judge)

    said = bias.claims(r)

    def say(topic: tuple[str, ...]) -> None:
        """The report's sentences on one topic, each in its own register (warning, notice, caption)."""
        for level, text in said:
            if not text.startswith(topic):
                continue
            # the sentences name models and judges (imported names): shown as text
            if level == "warning":
                st.warning(esc(text))
            elif level == "info":
                notice(esc(text))
            else:
                st.caption(esc(text))

    # ------------------------------------------------------------ position
    p = r["position"]
    st.subheader("Position")
    c = st.columns(3)
    c[0].metric(
        "first-shown answer wins",
        _pct(p["first_win_rate"]),
        help=f"over {p['n_decisive']:,} decisive verdicts"
        if p["n_decisive"]
        else "the shown order of the decisive verdicts is unknown"
        if p.get("n_order_merged") or p.get("n_order_unknown")
        else "no decisive verdicts",
    )
    c[1].metric(
        "verdict flips when the order is swapped",
        _pct(p["flip_rate"]),
        help=f"over {p['n_both_orders']:,} battles judged in both orders" if p["n_both_orders"] else None,
    )
    c[2].metric(
        "rubric points gained by going first",
        "—"
        if p["first_score_advantage"] is None or pd.isna(p["first_score_advantage"])
        else f"{p['first_score_advantage']:+.2f}",
    )
    say(("Position bias", "No decisive", "No flip rate", "Shown order unknown", *([p["note"]] if p["note"] else [])))
    if p["elo"]:
        show_chart(
            partial(charts.position_deflection, pd.DataFrame(p["elo"])),
            key="position_elo",
            how_to_read="each model's Elo from the verdicts where it was shown first only (▶) or second only "
            "(◀), against both orders averaged (●); wide gaps mean the order of presentation "
            "moves the leaderboard.",
        )

    # --------------------------------------------------------------- style
    st.subheader("Style control")
    s = r["style"]
    if s["note"]:
        notice(s["note"])
    if s["coefficients"]:
        coef = pd.DataFrame(s["coefficients"])
        coef["feature"] = coef["feature"].map(show.label)
        show_chart(
            partial(charts.coefficient_bars, coef, "What the judge rewards beyond model strength"),
            key="style_coef",
            how_to_read="positive: at equal model strength the judge prefers the answer that is longer / has "
            "more of that element; intervals crossing zero are indistinguishable from no effect.",
        )
        lb = pd.DataFrame(s["leaderboard"])
        moved = lb[lb["moved"] != 0].sort_values("moved", key=abs, ascending=False)
        if moved.empty:
            st.caption("No model changes rank once style is controlled for.")
        else:
            show_table(
                show.columns(moved.head(15)),
                hide_index=True,
                width="stretch",
                column_config={
                    show.header("elo_raw"): st.column_config.NumberColumn(format="%.0f"),
                    show.header("elo_controlled"): st.column_config.NumberColumn(format="%.0f"),
                    show.header("moved"): st.column_config.NumberColumn(format="%+d"),
                },
            )
            st.caption(
                f"The {len(moved)} models whose rank changes once style is controlled for (positive: moves "
                f"up); {s['n_battles']:,} battles in the fit."
            )

    # --------------------------------------------- verbosity, self-preference
    st.subheader("Verbosity and self-preference")
    vb = r["verbosity"]
    st.metric(
        "longer answer wins decisive verdicts" if vb.get("basis") == "decisive" else "longer answer wins near-ties",
        _pct(vb["longer_win_rate"]) if vb["n_near_ties"] else "—",
    )
    say(
        (
            "Verbosity bias",
            "The longer answer",
            "No near-tie",
            "Partial correlation",
            *([vb["note"]] if vb["note"] else []),
        )
    )
    say(
        (
            "Own family",
            "On Elo",
            "Self-preference",
            *([r["self_preference"]["note"]] if r["self_preference"].get("note") else []),
        )
    )

    # ---------------------------------------------------------------- echo
    st.subheader("Echo")
    if not r["echo"] and not r.get("echo_intervention"):
        notice(
            "No echo information: the store has no completions with an echo flag for this dataset (echo is "
            "detected from the answer text, or simulated in the demo)."
        )
    if r["echo"]:
        e = r["echo"]
        left, right = st.columns(2)
        with left:
            rates = pd.DataFrame(e["rates"])
            if len(rates) and (rates["echo_rate"] > 0).any():
                show_chart(
                    partial(charts.echo_rates, rates),
                    key="echo_rates",
                    how_to_read="how often each model's answers echo (repeat phrases or add new "
                    "question–answer pairs after the final answer).",
                )
            else:
                st.caption("No model's answers echo.")
        with right:
            pref = pd.DataFrame(e["preference"]).dropna(subset=["echoing_side_win_rate"])
            if len(pref):
                show_chart(
                    partial(
                        charts.rate_intervals,
                        pref,
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
            if e["note"]:
                st.caption(esc(e["note"]))
    if r.get("echo_intervention"):
        iv = pd.DataFrame(r["echo_intervention"])
        iv["variant"] = iv["variant"].map(show.label)
        show_chart(
            partial(
                charts.rate_intervals,
                iv,
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
            how_to_read=f"{int(iv['n_battles'].iloc[0])} battles re-judged by the simulated judge as they are "
            f"({show.label('original')}), and with the question–answer text appended three times to answer a or to "
            f"answer b; a causal penalty moves “{show.label('echo_a')}” left and “{show.label('echo_b')}” right of "
            f"“{show.label('original')}”.",
        )
