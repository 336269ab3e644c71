"""Analyses from the papers: accuracy alignment, aggregation methods, budget curves, languages."""

import pandas as pd
import streamlit as st

from core import charts
from core.analyses import (AnalysisUnavailable, aggregation_from_store, alignment_from_store, budget_from_store,
                           languages_from_store)
from pages._shared import caption, get_store, page_guard, selected_dataset, selected_judge, version

st.title("Analyses")


def _progress(text):
    bar = st.progress(0.0, text=text)
    return bar, (lambda d, t: bar.progress(d / t, text=f"{text} {d}/{t}"))


@st.cache_data(show_spinner=False)
def alignment(dataset, judge, token):
    bar, cb = _progress("Bootstrapping prompts…")
    try:
        return alignment_from_store(get_store(), dataset, judge, n_boot=100, progress=cb)
    finally:
        bar.empty()


@st.cache_data(show_spinner=False)
def aggregation(dataset, judge, token):
    return aggregation_from_store(get_store(), dataset, judge, n_shuffles=30)


@st.cache_data(show_spinner=False)
def budget(dataset, judge, token, budgets):
    bar, cb = _progress("Subsampling and refitting…")
    try:
        return budget_from_store(get_store(), dataset, judge, list(budgets), repeats=5, progress=cb)
    finally:
        bar.empty()


@st.cache_data(show_spinner=False)
def languages(dataset, judge, token):
    return languages_from_store(get_store(), dataset, judge)


with page_guard("The analyses page"):
    dataset, judge = selected_dataset(), selected_judge()
    if get_store() is None or dataset is None:
        st.info("Select a dataset.")
        st.stop()
    v = version()
    tabs = st.tabs(["Accuracy alignment", "Aggregation methods", "Budget curves", "Languages"])
    with tabs[0]:
        try:
            res = alignment(dataset, judge, v)
        except AnalysisUnavailable as exc:
            st.info(str(exc))
        else:
            if res.reason:
                st.info(res.reason)
            else:
                st.markdown(f"**Finding on this data:** {res.finding}.")
                st.dataframe(res.table().round(3), hide_index=True)
                caption("Kendall's τ between the accuracy ranking and each pairwise ranking, with K_D = (1 − τ)/2 the "
                        "share of model pairs to swap; intervals resample prompts. Discriminative pairs: exactly one "
                        f"answer correct ({res.discriminative_share:.0%} of graded battles).")
                ranking = st.selectbox("ranking", sorted(res.scores["ranking"].unique()), key="align_ranking")
                st.plotly_chart(charts.alignment_scatter(res.scores, ranking), width="stretch")
                caption("each point is a model: further right is more accurate, higher is stronger by pairwise "
                        "judgments; a rising cloud means the judge's ranking recovers accuracy.")
                if res.direct is not None:
                    st.metric("direct judge (grading single answers) Kendall τ vs accuracy", f"{res.direct.kendall:.3f}")
    with tabs[1]:
        try:
            agg = aggregation(dataset, judge, v)
        except AnalysisUnavailable as exc:
            st.info(str(exc))
        else:
            st.dataframe(agg.table.round(3), hide_index=True)
            caption(f"rank agreement of each aggregation of the same {agg.n_battles:,} battles with the reference "
                    f"({agg.reference_name}); TrueSkill is the openskill package's Thurstone–Mosteller model.")
    with tabs[2]:
        if judge is None:
            st.info("No judge selected.")
        else:
            budgets = st.multiselect("judged battles per model", [10, 25, 50, 100, 200, 400], [25, 50, 100, 200],
                                     key="budgets")
            if st.button("Compute budget curves", key="run_budget") or st.session_state.get("budget_ran"):
                st.session_state["budget_ran"] = True
                try:
                    bc = budget(dataset, judge, v, tuple(sorted(budgets)))
                except AnalysisUnavailable as exc:
                    st.info(str(exc))
                else:
                    c1, c2 = st.columns(2)
                    c1.plotly_chart(charts.budget_curve(bc.summary, "mae", "held-out MAE (Elo)"), width="stretch")
                    c2.plotly_chart(charts.budget_curve(bc.summary, "spearman", "Spearman ρ with human Elo"),
                                    width="stretch")
                    caption("five random balanced subsamples per budget (band: min–max); the human reference uses "
                            "all human votes. Soft-Elo's advantage should hold at every budget.")
                    st.dataframe(bc.tau_summary.round(3), hide_index=True)
                    caption("τ across held-out folds and subsamples: a stable τ is a property of the judge and data.")
            else:
                st.caption("Runs the held-out protocol 5 times per budget; press the button to start.")
    with tabs[3]:
        if judge is None:
            st.info("No judge selected.")
        else:
            try:
                lang = languages(dataset, judge, v)
            except AnalysisUnavailable as exc:
                st.info(str(exc))
            else:
                st.caption(f"pooled τ = {lang.pooled_tau:.3f}" if lang.pooled_tau else "pooled τ undefined")
                st.dataframe(lang.table.round(3), hide_index=True)
                caption("per language: battle counts, its own τ next to the pooled one, and Hard/Soft-Elo fitted on "
                        "that language (with the pooled τ) against the human Elo from all battles.")
                if lang.warnings:
                    with st.expander(f"{len(lang.warnings)} languages have too few decisive battles for their own τ"):
                        st.write("\n".join(f"- {w}" for w in lang.warnings))
