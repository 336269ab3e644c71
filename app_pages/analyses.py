"""Analyses from the papers: accuracy alignment, aggregation methods, budget curves, languages."""

from functools import partial

import streamlit as st

from app_pages._loaders import load_result
from app_pages._widgets import caption, notice, page_guard, require_selection, show_chart, show_table
from core import charts
from core.app import Unavailable, analyses
from core.app import display as show
from core.app.availability import ADD_RUBRIC, ADD_VOTES, IMPORT, RUN_JUDGE
from core.app.precompute import AGG_SHUFFLES
from core.app.safe_text import escape_markdown as esc

st.title("Analyses")


def alignment(dataset: str, judge: str | None) -> analyses.AlignmentResult | Unavailable:
    return load_result(analyses.alignment, dataset, judge, progress="Fitting each ranking…")


def aggregation(dataset: str, judge: str | None) -> analyses.AggregationResult | Unavailable:
    return load_result(analyses.aggregation, dataset, judge, n_shuffles=AGG_SHUFFLES)


def budget(dataset: str, judge: str, budgets: tuple[int, ...]) -> analyses.BudgetCurves | Unavailable:
    return load_result(analyses.budget, dataset, judge, list(budgets), progress="Subsampling and refitting…")


def languages(dataset: str, judge: str) -> analyses.LanguageBreakdown | Unavailable:
    return load_result(analyses.languages, dataset, judge)


def _fix(reason: str) -> str:
    """What would make a held-out analysis work: the missing human votes, else the judge's rubric scores."""
    return ADD_VOTES if "human votes" in reason else ADD_RUBRIC


def alignment_view(dataset: str, judge: str | None) -> None:
    """Kendall τ between the accuracy ranking and each pairwise ranking, and the scatter of one of them."""
    res = alignment(dataset, judge)
    if isinstance(res, Unavailable):
        notice(
            res.reason,
            fix="answers graded correct or not: the demo arena's verifiable prompts, or "
            + IMPORT.replace("a file", "a benchmark with ground truth"),
        )
    else:
        finding = res.finding
        for raw in res.scores["ranking"].unique():  # the rankings as the table names them
            finding = finding.replace(f"{raw}:", f"{show.label(raw)}:")
        st.markdown(f"**Finding on this data:** {esc(finding)}.")
        show_table(show.columns(res.table().round(3), values=["ranking", "subset"]), hide_index=True)
        caption(
            "Kendall's τ between the accuracy ranking and each pairwise ranking, with K_D = (1 − τ)/2 the "
            "share of model pairs to swap; 95% percentile intervals from resampling the compared models (they "
            "say how much τ depends on which models are compared; resampling prompts would pull every "
            "resampled τ below the estimate). Discriminative pairs: exactly one answer correct "
            f"({res.discriminative_share:.0%} of graded battles)."
        )
        scores = res.scores.assign(ranking=res.scores["ranking"].map(show.label))  # the chart's title names it
        ranking = st.selectbox("ranking", sorted(scores["ranking"].unique()), key="align_ranking")
        show_chart(partial(charts.alignment_scatter, scores, ranking), key="alignment_scatter")
        caption(
            "each point is a model: further right is more accurate, higher is stronger by pairwise "
            "judgments; a rising cloud means the judge's ranking recovers accuracy."
        )
        if res.direct is not None:
            st.metric("direct judge (grading single answers) Kendall τ vs accuracy", f"{res.direct.kendall:.3f}")


def aggregation_view(dataset: str, judge: str | None) -> None:
    """The rank agreement of each way of aggregating the same battles with the reference."""
    agg = aggregation(dataset, judge)
    if isinstance(agg, Unavailable):
        notice(agg.reason, fix=f"{ADD_VOTES}, or {RUN_JUDGE}")
    else:
        show_table(show.columns(agg.table.round(3), values=["method"]), hide_index=True)
        sampled = (
            f", a seeded uniform sample of the {agg.n_population:,} (online Elo and TrueSkill replay battle by battle)"
            if agg.n_population
            else ""
        )
        caption(
            f"rank agreement of each aggregation of the same {agg.n_battles:,} battles{sampled} with the "
            f"reference ({agg.reference_name}); TrueSkill is the openskill package's Thurstone–Mosteller model."
        )


def budget_view(dataset: str, judge: str | None) -> None:
    """Held-out accuracy against the number of judged battles per model (computed when asked)."""
    if judge is None:
        notice("no judge has judged this dataset.", fix=RUN_JUDGE)
    else:
        budgets = st.multiselect(
            "judged battles per model", [10, 25, 50, 100, 200, 400], [25, 50, 100, 200], key="budgets"
        )
        if st.button("Compute budget curves", key="run_budget") or st.session_state.get("budget_ran"):
            st.session_state["budget_ran"] = True
            bc = budget(dataset, judge, tuple(sorted(budgets)))
            if isinstance(bc, Unavailable):
                notice(bc.reason, fix=_fix(bc.reason))
            else:
                c1, c2 = st.columns(2)
                with c1:
                    show_chart(
                        partial(show.plain_chart, charts.budget_curve, None, bc.summary, "mae", "held-out MAE (Elo)"),
                        key="budget_mae",
                    )
                with c2:
                    show_chart(
                        partial(
                            show.plain_chart,
                            charts.budget_curve,
                            None,
                            bc.summary,
                            "spearman",
                            "Spearman ρ with human Elo",
                        ),
                        key="budget_spearman",
                    )
                caption(
                    "five random balanced subsamples per budget (band: min–max); the human reference uses "
                    "all human votes. Soft-Elo's advantage should hold at every budget."
                )
                show_table(show.columns(bc.tau_summary.round(3)), hide_index=True)
                caption("τ across held-out folds and subsamples: a stable τ is a property of the judge and data.")
        else:
            st.caption("Runs the held-out protocol 5 times per budget; press the button to start.")


def languages_view(dataset: str, judge: str | None) -> None:
    """τ and Hard/Soft-Elo per language against the human Elo from all battles."""
    if judge is None:
        notice("no judge has judged this dataset.", fix=RUN_JUDGE)
    else:
        lang = languages(dataset, judge)
        if isinstance(lang, Unavailable):
            notice(lang.reason, fix=_fix(lang.reason))
        else:
            st.caption(f"pooled τ = {lang.pooled_tau:.3f}" if lang.pooled_tau else "pooled τ undefined")
            show_table(show.columns(lang.table.round(3)), hide_index=True)
            caption(
                "per language: battle counts, its own τ next to the pooled one, and Hard/Soft-Elo fitted on "
                "that language (with the pooled τ) against the human Elo from all battles."
            )
            if lang.warnings:
                with st.expander(f"{len(lang.warnings)} languages have too few decisive battles for their own τ"):
                    st.markdown("\n".join(f"- {esc(w)}" for w in lang.warnings))


with page_guard("The analyses page", page="analyses"):
    ctx = require_selection()
    # One analysis at a time: only the one in view is computed (tabs would compute all four).
    views = {
        "Accuracy alignment": alignment_view,
        "Aggregation methods": aggregation_view,
        "Budget curves": budget_view,
        "Languages": languages_view,
    }
    names = list(views)
    shown = st.segmented_control("Analysis", names, default=names[0], key="analysis") or names[0]
    views[shown](ctx.dataset, ctx.judge)
