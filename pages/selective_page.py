"""Selective judging (SCOPE): accept a judgment only when it is confident enough for an error target α.

α slider → core.service.scope_at_alpha (λ̂ and the selective leaderboard) → Store.battle_frame
         → core.charts.coverage_risk (the curves over the default α grid are cached; the slider's α is one more
           point computed alone)
"""

import numpy as np
import pandas as pd
import streamlit as st

from core import charts, service
from core.selective import DEFAULT_ALPHAS
from pages._shared import (get_store, load_frame, page_guard, param, selected_dataset, selected_judge, show_chart,
                           version)

st.title("Selective judging (SCOPE)")
ALPHA_RANGE = (0.05, 0.4)
N_SPLITS = 300
SOURCE_HELP = ("logprob: first-token A/B probabilities of both orders; rubric: σ(τ·gap) of each order's rubric "
               "scores; verbal: the judge's stated confidence; single: the forward order only (the no-swap "
               "baseline)")


@st.cache_data(show_spinner=False)
def load_curves(dataset, judge, source, token, alphas):
    frame = load_frame(dataset, judge, token)
    bar = st.progress(0.0, text=f"Evaluating {N_SPLITS} calibration/test splits…")
    try:
        return service.scope_curves(frame, source, alphas, n_splits=N_SPLITS,
                                    progress=lambda d, t: bar.progress(d / t, text=f"Split {d} of {t}"))
    finally:
        bar.empty()


@st.cache_data(show_spinner=False, max_entries=64)
def load_at_alpha(dataset, judge, source, token, alpha):
    return service.scope_at_alpha(load_frame(dataset, judge, token), source, alpha)


with page_guard("The selective judging page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None:
        st.info("No dataset selected: build the demo (`make run` or `python -m core simulate`) or import data.")
        st.stop()
    if judge is None:
        st.info(f"Dataset **{dataset}** has no judgments: SCOPE decides which judge verdicts to trust.")
        st.stop()
    v = version()
    frame = load_frame(dataset, judge, v)
    if frame["human_y"].notna().sum() == 0:
        st.info("No human votes: SCOPE calibrates its threshold on battles where the human verdict is known, and "
                "its risk is the share of accepted judgments that disagree with humans.")
        st.stop()
    sources = service.scope_sources(frame)
    if "scope_source" not in st.session_state:
        wanted = st.query_params.get("source")
        st.session_state["scope_source"] = wanted if wanted in sources else sources[0]
    elif st.session_state["scope_source"] not in sources:
        st.session_state["scope_source"] = sources[0]
    if "scope_alpha" not in st.session_state:
        st.session_state["scope_alpha"] = param("alpha", 0.1, *ALPHA_RANGE)
    c1, c2 = st.columns(2)
    source = c1.radio("Source of P(a ≻ b)", sources, horizontal=True, key="scope_source", help=SOURCE_HELP)
    alpha = c2.slider("α (target error rate among accepted judgments)", *ALPHA_RANGE, key="scope_alpha", step=0.01)
    st.query_params["alpha"] = f"{alpha:.2f}"
    st.query_params["source"] = source
    if len(sources) == 1:
        st.info("This judge was not run in both presentation orders (or gave no probabilities), so BPE — averaging "
                "the two orders — is not available; only the single-order baseline is shown.")

    curves = load_curves(dataset, judge, source, v, tuple(DEFAULT_ALPHAS))
    if curves.reason:
        st.warning(f"No SCOPE curves for this source: {curves.reason}.")
        st.stop()
    table = curves.table
    if not np.isclose(list(DEFAULT_ALPHAS), alpha).any():
        extra = load_curves(dataset, judge, source, v, (round(alpha, 2),))
        table = pd.concat([table, extra.table], ignore_index=True)
    methods = list(service.SCOPE_METHODS)
    show_chart(charts.coverage_risk(table, methods, alpha), key="scope_risk",
               how_to_read="each line is a rule for choosing which judgments to trust; on or under the dotted line "
                           "its error rate among accepted judgments met the target. A × marks an α where the mean "
                           f"risk went over it. Bands are ±1σ over {curves.n_splits} random calibration/test splits "
                           f"of {curves.n_instances:,} human-voted battles; heuristic and vanilla are uncalibrated "
                           "baselines.")
    over = table[(table["risk_mean"] > table["alpha"] + 1e-12)].sort_values(["method", "alpha"])
    if len(over):
        by_method = over.groupby("method", sort=False)["alpha"].apply(lambda a: ", ".join(f"{x:.2f}" for x in a))
        st.warning("Mean test risk above α — " + "; ".join(f"**{m}** at α = {a}" for m, a in by_method.items())
                   + ". The SCOPE rule does not guarantee the bound in general (METHODS §6); LTT does with "
                     "probability 1 − δ (δ = 0.1) per calibration set.")
    else:
        st.caption("No method's mean test risk exceeds α at any α shown.")
    show_chart(charts.coverage_curve(table, methods, alpha), key="scope_coverage",
               how_to_read="how much of the judging each rule keeps; a useful rule keeps a lot while staying under "
                           "the target in the chart above.")

    st.subheader(f"At α = {alpha:.2f}")
    at = load_at_alpha(dataset, judge, source, v, round(alpha, 4))
    th = at.threshold
    if th is None:
        st.warning("; ".join(at.notes))
        st.stop()
    if th.feasible:
        st.success(f"SCOPE calibrated on all {th.n_calibration:,} human-voted battles accepts judgments with "
                   f"uncertainty ≤ **{th.lam:.3f} nats** (binary entropy of the averaged P(a ≻ b)): "
                   f"**{th.calibration_coverage:.0%}** accepted, of which {th.calibration_risk:.1%} disagree with "
                   "the human vote.")
    else:
        st.warning(f"At α = {alpha:.2f}: {th.reason}.")
    st.dataframe(curves.quality, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("accuracy", "ece", "auroc", "auprc")})
    st.caption("Quality of the judge's confidence against human votes: accuracy, calibration error (ECE), and how "
               "well confidence separates right from wrong (AUROC, AUPRC). Averaging both orders (BPE) should beat "
               "the forward order alone for a position-biased judge.")
    ex = at.examples
    cols = ["model_a", "model_b", "p_fwd", "p_rev", "p_bar", "uncertainty", "human_a", "judge_right"]
    fmt = {c: st.column_config.NumberColumn(format="%.3f") for c in ("p_fwd", "p_rev", "p_bar", "uncertainty")}
    a, b = st.columns(2)
    with a:
        st.markdown("**Examples accepted** (most confident first)")
        acc = ex[ex["accepted"]]
        if acc.empty:
            st.caption("None: at this α the rule abstains on every battle.")
        else:
            st.dataframe(acc.nsmallest(8, "uncertainty")[cols], hide_index=True, column_config=fmt)
    with b:
        st.markdown("**Examples abstained** (least confident first)")
        rej = ex[~ex["accepted"]]
        if rej.empty:
            st.caption("None: every battle is accepted at this α.")
        else:
            st.dataframe(rej.nlargest(8, "uncertainty")[cols], hide_index=True, column_config=fmt)
    st.caption("p_fwd / p_rev: P(a ≻ b) with a shown first / second; p_bar their mean; human_a: the human "
               "preferred a; judge_right: the judge's pick agrees.")

    st.subheader("Selective leaderboard")
    if at.leaderboard.empty:
        st.info("No leaderboard: " + "; ".join(at.notes))
    else:
        st.dataframe(at.leaderboard, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.1f") for c in at.leaderboard.columns})
        st.caption("Bradley–Terry Elo on all hard judge labels, on the accepted judgments only, and on the accepted "
                   "ones plus the abstained battles handed to their human vote. Battles used: "
                   + ", ".join(f"{k}: {n:,}" for k, n in at.counts.items()) + ".")
        for note in at.notes:
            st.caption(note)
