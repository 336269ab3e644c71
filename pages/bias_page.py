"""Judge bias: position, verbosity, self-preference, style control and echo."""

import pandas as pd
import streamlit as st

from core import charts, service
from pages._shared import caption, get_store, page_guard, selected_dataset, selected_judge, version

st.title("Judge bias")


@st.cache_data(show_spinner="Fitting the bias diagnostics…")
def report(dataset, judge, token):
    return service.bias_report(get_store(), dataset, judge)


with page_guard("The judge bias page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None or judge is None:
        st.info("Select a dataset with judgments.")
        st.stop()
    r = report(dataset, judge, version())
    p = r["position"]
    st.subheader("Position")
    c = st.columns(3)
    c[0].metric("first-shown answer wins", f"{p['first_win_rate']:.1%}",
                help=f"95% interval {p['ci'][0]:.3f}–{p['ci'][1]:.3f} over {p['n_decisive']:,} decisive verdicts")
    c[1].metric("verdict flips when swapped", "—" if p["flip_rate"] is None else f"{p['flip_rate']:.1%}")
    c[2].metric("rubric points gained by going first",
                "—" if p["first_score_advantage"] is None else f"{p['first_score_advantage']:+.2f}")
    if p["biased"]:
        st.warning(f"Position bias: the 95% interval for the first-position win rate ({p['ci'][0]:.3f}–{p['ci'][1]:.3f}) "
                   "excludes 0.5.")
    if p["note"]:
        st.info(p["note"])
    if p["elo"]:
        st.plotly_chart(charts.position_deflection(pd.DataFrame(p["elo"])), width="stretch")
        caption("each model's Elo from verdicts where it appeared in one position only, against both orders "
                "averaged; wide gaps mean the order of presentation moves the leaderboard.")

    st.subheader("Style control")
    s = r["style"]
    if s["note"]:
        st.info(s["note"])
    else:
        coef = pd.DataFrame(s["coefficients"])
        st.plotly_chart(charts.coefficient_bars(coef, "What the judge rewards beyond model strength"), width="stretch")
        caption("positive bars: the judge prefers the answer that is longer / has more of that markdown element, "
                "at equal model strength; intervals crossing zero are not distinguishable from no effect.")
        lb = pd.DataFrame(s["leaderboard"])
        st.dataframe(lb[lb["moved"] != 0].sort_values("moved", key=abs, ascending=False).head(15), hide_index=True)
        caption("models whose rank changes once style is controlled for (positive: moves up).")

    st.subheader("Verbosity and self-preference")
    v, sp = r["verbosity"], r["self_preference"]
    c = st.columns(2)
    if v["n_near_ties"]:
        c[0].metric("longer answer wins near-ties", f"{v['longer_win_rate']:.1%}",
                    help=f"{v['n_near_ties']} battles with |gap| < 0.5; 95% interval {v['ci'][0]:.3f}–{v['ci'][1]:.3f}")
    else:
        c[0].info(v["note"] or "no near-tie battles")
    if sp["excess"] is None:
        c[1].info(sp["note"] or "self-preference unavailable")
    else:
        c[1].metric(f"own family ({sp['family']}) excess", f"{sp['excess']:+.2f} points",
                    help="mean rubric score on its own family's answers minus on others', each relative to the "
                         "other judges' median on the same answer")
    if sp.get("elo_excess") is not None:
        st.caption(f"On Elo: the judge rates its own family's models {sp['elo_excess']:+.1f} Elo higher than the "
                   "other judges do, relative to other models.")
    if r["echo"]:
        st.subheader("Echo")
        pref = pd.DataFrame(r["echo"]["preference"])
        st.dataframe(pref, hide_index=True)
        caption("how often the judge picks the answer that echoes (repeats itself after the final answer) when "
                "exactly one side does; below 0.5 means echo is penalised.")
        if r.get("echo_intervention"):
            iv = pd.DataFrame(r["echo_intervention"])
            st.dataframe(iv.round(3), hide_index=True)
            caption("the intervention on the simulated judge: the same battles re-judged with the question–answer "
                    "text appended three times to side a (echo_a) or side b (echo_b); P(a ≻ b) with 95% intervals.")
