"""Selective judging (SCOPE): accept a judgment only when it is confident enough for an error target α.

α slider → core.selective.thresholds → Store.battle_frame → charts.coverage_risk
"""

import numpy as np
import streamlit as st

from core import charts, selective
from pages._shared import (caption, get_store, load_frame, page_guard, param, selected_dataset, selected_judge,
                           version)

st.title("Selective judging (SCOPE)")
METHODS = ["scope", "ltt", "naive", "heuristic", "vanilla"]


@st.cache_data(show_spinner=False)
def curves(dataset, judge, source, token, extra_alpha):
    frame = load_frame(dataset, judge, token)
    inst = selective.instances_from_battles(frame, source)
    if inst.reason:
        return inst, None, None, None
    f = inst.frame
    u = selective.bpe(f["p_fwd"], f["p_rev"], f["human_a"])
    single = selective.single_order(f["p_fwd"], f["human_a"])
    alphas = sorted(set(selective.DEFAULT_ALPHAS) | {round(extra_alpha, 2)})
    res = selective.evaluate(u, alphas, n_splits=300, seed=0)
    return inst, u, single, res


with page_guard("The selective judging page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None or judge is None:
        st.info("Select a dataset with judgments and human votes.")
        st.stop()
    frame = load_frame(dataset, judge, version())
    has_lp = frame["p_ab"].notna().any() and frame["p_ba"].notna().any()
    has_both_gaps = frame["gap_ab"].notna().any() and frame["gap_ba"].notna().any()
    has_verbal = frame["conf_ab"].notna().any()
    sources = [s for s, ok in (("logprob", has_lp), ("rubric", has_both_gaps), ("verbal", has_verbal),
                               ("single", True)) if ok]
    c1, c2 = st.columns(2)
    source = c1.radio("Source of P(a ≻ b)", sources, horizontal=True, key="scope_source",
                      help="logprob: first-token A/B probabilities; rubric: σ(τ·gap) of each order; "
                           "single: the forward order only (the no-swap baseline)")
    if "scope_alpha" not in st.session_state:
        st.session_state["scope_alpha"] = param("alpha", 0.1, 0.05, 0.4)
    alpha = c2.slider("α (target error rate among accepted)", 0.05, 0.4, key="scope_alpha", step=0.01)
    st.query_params["alpha"] = f"{alpha:.2f}"
    if not has_both_gaps and not has_lp:
        st.info("This judge was not run in both presentation orders, so BPE (averaging the two orders) is not "
                "available; only the single-order baseline is shown.")
    inst, u, single, res = curves(dataset, judge, source, version(), alpha)
    if u is None:
        st.warning(inst.reason)
        st.stop()
    t = res.table
    st.plotly_chart(charts.coverage_risk(t, METHODS, alpha), width="stretch", key="scope_risk")
    caption("each line is a way of choosing which judgments to trust; points under the dotted line kept the error "
            "rate below the target. A cross marks an α where the mean risk went over it. Bands are ±1σ over "
            f"{res.n_splits} calibration/test splits.")
    over = t[(t["risk_mean"] > t["alpha"] + 1e-12) & t["method"].isin(["scope", "naive", "ltt"])]
    if len(over):
        st.warning("Mean test risk above α for: " + ", ".join(f"{r.method} at α = {r.alpha:.2f}"
                                                               for r in over.itertuples())
                   + ". The SCOPE rule does not guarantee the bound in general (METHODS §6); LTT does with "
                     "probability 1 − δ.")
    st.plotly_chart(charts.coverage_curve(t, METHODS), width="stretch")
    caption("how much of the judging each rule keeps; a useful rule keeps a lot while staying under the target.")

    # the threshold at the chosen α on all instances (calibrate on everything, for display)
    lam = selective.thresholds(u.score, (~u.correct).astype(float), alpha, "scope")[0]
    accepted = u.score <= lam
    if np.isfinite(lam):
        st.success(f"At α = {alpha:.2f}, SCOPE accepts judgments with uncertainty ≤ {lam:.3f} nats: "
                   f"{accepted.mean():.0%} of {len(u.score):,} battles, with {1 - u.correct[accepted].mean():.1%} "
                   "disagreeing with the human vote.")
    else:
        st.warning(f"At α = {alpha:.2f} no threshold satisfies the SCOPE rule on these battles: abstain on all.")
    q = {"BPE (both orders)": selective.quality(u).as_dict(), "single order": selective.quality(single).as_dict()}
    st.dataframe([{"source": k, **{m: round(val, 3) for m, val in d.items()}} for k, d in q.items()], hide_index=True)
    caption("accuracy against human votes, calibration error, and how well confidence separates right from wrong "
            "(AUROC, AUPRC): averaging both orders should help a position-biased judge.")
    ex = inst.frame.assign(uncertainty=u.score, accepted=accepted, judge_p=u.p)
    cols = ["model_a", "model_b", "judge_p", "uncertainty", "human_a"]
    a, b = st.columns(2)
    a.caption("Examples accepted")
    a.dataframe(ex[ex["accepted"]].nsmallest(8, "uncertainty")[cols], hide_index=True)
    b.caption("Examples abstained")
    b.dataframe(ex[~ex["accepted"]].nlargest(8, "uncertainty")[cols], hide_index=True)

    st.subheader("Selective leaderboard")
    all_inst = frame.assign(score=selective.binary_entropy(
        (frame["p_ab"] + frame["p_ba"]) / 2 if source == "logprob" else
        1 / (1 + np.exp(-(inst.tau or 1.0) * frame["gap"]))))
    lb = selective.selective_leaderboard(frame, all_inst[["battle_id", "score"]], lam if np.isfinite(lam) else -1.0)
    wide = lb.pivot_table(index="model", columns="leaderboard", values="elo").round(1)
    used = lb.groupby("leaderboard")["n_battles_used"].first()
    st.dataframe(wide.sort_values(wide.columns[0], ascending=False), width="stretch")
    caption("Bradley–Terry on all hard labels, on accepted judgments only, and with abstained battles handed to "
            "the human vote where one exists. Battles used: " + ", ".join(f"{k}: {v:,}" for k, v in used.items()))
