"""Judge bias: position, verbosity, self-preference, style control and echo.

judge selector → core.app.bias.bias_report → Store.battle_frame / judgments_frame → core.charts.*
"""

import pandas as pd
import streamlit as st

from app_pages._shared import current_store, notice, page_guard, require_selection, show_chart
from core import charts
from core.app import bias

st.title("Judge bias")


@st.cache_data(show_spinner="Fitting the bias diagnostics (cached afterwards)…")
def load_report(dataset: str, judge: str, token: str) -> dict:
    return bias.bias_report(current_store(), dataset, judge)


def _pct(x: float | None) -> str:
    return "—" if x is None or pd.isna(x) else f"{x:.1%}"


with page_guard("The judge bias page"):
    ctx = require_selection(needs_judge="the bias diagnostics read a judge's verdicts and scores.")
    assert ctx.judge is not None
    r = load_report(ctx.dataset, ctx.judge, ctx.token)

    # ------------------------------------------------------------ position
    p = r["position"]
    st.subheader("Position")
    c = st.columns(3)
    ci = p["ci"]
    c[0].metric(
        "first-shown answer wins",
        _pct(p["first_win_rate"]),
        help=f"95% interval {ci[0]:.3f}–{ci[1]:.3f} over {p['n_decisive']:,} decisive verdicts"
        if ci[0] is not None and not pd.isna(ci[0])
        else "no decisive verdicts",
    )
    c[1].metric(
        "verdict flips when the order is swapped",
        _pct(p["flip_rate"]),
        help=f"over {p['n_both_orders']:,} battles judged in both orders" if p["n_both_orders"] else None,
    )
    c[2].metric(
        "rubric points gained by going first",
        "—" if p["first_score_advantage"] is None else f"{p['first_score_advantage']:+.2f}",
    )
    if p["flip_rate"] is None:
        notice(
            "No flip rate: this judge saw each battle in one presentation order only, so there is no swapped "
            "verdict to compare with."
        )
    if p["biased"]:
        st.warning(
            f"Position bias: the 95% interval for the first-position win rate ({ci[0]:.3f}–{ci[1]:.3f}) excludes 0.5."
        )
    if p["note"]:
        notice(p["note"])
    if p["elo"]:
        show_chart(
            charts.position_deflection(pd.DataFrame(p["elo"])),
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
        show_chart(
            charts.coefficient_bars(coef, "What the judge rewards beyond model strength"),
            key="style_coef",
            how_to_read="positive: at equal model strength the judge prefers the answer that is longer / has "
            "more of that element; intervals crossing zero are indistinguishable from no effect.",
        )
        lb = pd.DataFrame(s["leaderboard"])
        moved = lb[lb["moved"] != 0].sort_values("moved", key=abs, ascending=False)
        if moved.empty:
            st.caption("No model changes rank once style is controlled for.")
        else:
            st.dataframe(
                moved.head(15),
                hide_index=True,
                width="stretch",
                column_config={
                    "elo_raw": st.column_config.NumberColumn("Elo (judge)", format="%.0f"),
                    "elo_controlled": st.column_config.NumberColumn("Elo (style-controlled)", format="%.0f"),
                    "moved": st.column_config.NumberColumn("ranks moved", format="%+d"),
                },
            )
            st.caption(
                f"The {len(moved)} models whose rank changes once style is controlled for (positive: moves "
                f"up); {s['n_battles']:,} battles in the fit."
            )

    # --------------------------------------------- verbosity, self-preference
    st.subheader("Verbosity and self-preference")
    vb, sp = r["verbosity"], r["self_preference"]
    cols = st.columns(2)
    if vb["n_near_ties"]:
        cols[0].metric(
            "longer answer wins near-ties",
            _pct(vb["longer_win_rate"]),
            help=f"{vb['n_near_ties']} battles with |gap| < 0.5; 95% interval {vb['ci'][0]:.3f}–{vb['ci'][1]:.3f}",
        )
        if vb.get("residual_length_partial_r") is not None and not pd.isna(vb["residual_length_partial_r"]):
            cols[0].caption(
                f"Partial correlation of a model's Hard-Elo residual with its mean answer length: "
                f"{vb['residual_length_partial_r']:+.2f}."
            )
    else:
        cols[0].info(vb["note"] or "No near-tie battles (|gap| < 0.5) to measure verbosity on.")
    if sp["excess"] is None:
        cols[1].info(sp["note"] or "Self-preference needs the judge's family and models of that family.")
    else:
        cols[1].metric(
            f"own family ({sp['family']}) excess",
            f"{sp['excess']:+.2f} points",
            help="mean rubric score on its own family's answers minus on others', each relative to the "
            "other judges' median on the same answer",
        )
    if sp.get("elo_excess") is not None:
        st.caption(
            f"On Elo: the judge rates its own family's models {sp['elo_excess']:+.1f} Elo higher than the "
            "other judges do, relative to other models."
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
                    charts.echo_rates(rates),
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
                    charts.rate_intervals(
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
                st.caption(e["note"])
    if r.get("echo_intervention"):
        iv = pd.DataFrame(r["echo_intervention"])
        show_chart(
            charts.rate_intervals(
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
            "(original), with the question–answer text appended three times to a (echo_a) or to "
            "b (echo_b); a causal penalty moves echo_a left and echo_b right of the original.",
        )
