"""Leaderboard: the answer first (headline and table), then the chart, the intervals' promise, head to head.

τ slider (page header) → core.app.leaderboard.judge_elo(soft, τ) and heldout(τ fixed) → Store.battle_frame
         → core.charts.leaderboard_intervals
α slider → core.app.leaderboard.leaderboard_view (q̂ only; the leave-one-out table is cached)
         → core.charts.leaderboard_intervals
Slice    → core.app.leaderboard.view_parts(where=…) → Store.battle_frame / pair_stats (where=…)
         → core.charts.leaderboard_intervals
Style control → core.app.style.style_controlled_leaderboard → Store.battle_frame / votes_frame → a table
Compare with… → core.app.diff.compare_datasets / compare_with_bundle → Store.dataset_tables → a table
MT-Bench score → core.app.mtbench.mtbench_view → Store.grades_frame → a table (a dataset of grades only: all)
"""

import dataclasses
from functools import partial

import pandas as pd
import streamlit as st

from app_pages._loaders import (
    compute,
    dataset_facts,
    dataset_options,
    default_judge,
    load_heldout_lagged,
    load_result,
    load_tau,
)
from app_pages._selection import ALPHA_RANGE, bound_slider, selection, update
from app_pages._store import read_store
from app_pages._widgets import (
    back_to_fitted_tau_button,
    export_buttons,
    notice,
    page_guard,
    require_selection,
    show_chart,
    show_table,
    slice_picker,
    snap_selected_tau,
    tau_control,
)
from core import charts
from core.app import Unavailable, derived, mtbench, newmodel, report, winrate
from core.app import arena_hard as app_arena_hard
from core.app import diff as app_diff
from core.app import leaderboard as lb
from core.app import style as app_style
from core.app.persist import Lagged
from core.app.safe_text import escape_markdown as esc
from core.domain import Ratings, Slice, slice_label
from core.methods import RATING_METHODS

st.title("Leaderboard")
TOP_N = {"top 10": 10, "top 20": 20, "top 50": 50, "all": None}
REFRESH_POLL_S = 2.0  # how often a page showing intervals from before the newest votes looks for current ones


def load_human(dataset: str) -> Ratings | None:
    res = load_result(lb.human_ratings, dataset)
    return None if isinstance(res, Unavailable) else res


def load_coverage(dataset: str, judge: str) -> lb.JudgeCoverage:
    return load_result(lb.judge_coverage, dataset, judge)


def load_judge_elo(dataset: str, judge: str, method: str, tau: float | None) -> pd.DataFrame:
    return load_result(lb.judge_elo_of, dataset, judge, method, tau)


def load_by_turn(dataset: str, method: str, judge: str | None) -> pd.DataFrame | Unavailable:
    return load_result(lb.ratings_by_turn, dataset, method, judge)


def load_pair_model(dataset: str, target: str, judge: str | None, tau: float | None) -> lb.PairModel | Unavailable:
    return load_result(lb.pair_model, dataset, target, judge, tau)


def load_win_rates(dataset: str, judge: str | None) -> winrate.WinRateView | Unavailable:
    return compute(winrate.baseline_view, dataset, judge)


def load_arena_hard(dataset: str, judge: str | None) -> app_arena_hard.BaselineScores | Unavailable:
    return compute(app_arena_hard.baseline_scores, dataset, judge, spinner="Bootstrapping the Arena-Hard score…")


def load_slice_parts(
    dataset: str, judge: str | None, tau: float | None, where: Slice, others: tuple[str, ...] = ()
) -> lb.ViewParts:
    """The view's parts on a slice (τ None: fitted on the slice); α applies after, for free."""
    return compute(lb.view_parts, dataset, judge, tau, where, others, spinner="Fitting every method on the slice…")


def load_style(dataset: str, judge: str | None, where: Slice) -> app_style.StyleControlledLeaderboard | Unavailable:
    return compute(app_style.style_controlled_leaderboard, dataset, judge, where, spinner="Fitting with style control…")


def load_comparison(old: str, new: str, judge: str | None) -> app_diff.Comparison | str:
    return compute(app_diff.comparison_or_why, old, new, judge, spinner="Comparing the two snapshots…")


def load_bundle_comparison(data: bytes, name: str, dataset: str, judge: str | None) -> app_diff.Comparison | str:
    spinner = "Comparing with the bundle…"
    return compute(app_diff.upload_comparison_or_why, dataset, judge, data, name, spinner=spinner)


def style_section(dataset: str, judge: str | None, where: Slice) -> None:
    """The style-controlled leaderboards (human votes, and the judge's hard labels), each with the places a
    model moves once answer length and markdown are held equal."""
    targets: list[tuple[str, str | None]] = [("Human votes", None)]
    if judge is not None:
        targets.append((f"{judge} (Hard-Elo)", judge))
    st.subheader("With style control" + (f" on {esc(slice_label(where))}" if where else ""))
    tabs = st.tabs([t[0] for t in targets])
    for tab, (_, who) in zip(tabs, targets):
        with tab:
            res = load_style(dataset, who, where)
            if isinstance(res, Unavailable):
                notice(esc(res.reason))
                continue
            show_table(app_style.display_table(res), hide_index=True, width="stretch")
            st.caption(lb.style_caption(res.n_battles, res.n_votes, res.note))
            with st.expander("Style coefficients"):
                show_table(app_style.coefficient_table(res), hide_index=True)
            for issue in res.issues:
                notice(esc(issue))


def compare_panel(dataset: str, judge: str | None, datasets: list[str]) -> None:
    """'Compare with…': another dataset of this store, or a bundle exported earlier, against this dataset."""
    with st.expander("Compare with…", icon=":material/compare_arrows:"):
        st.caption(
            "What changed since last time: each model's Elo in the other snapshot and in this one, the change "
            "with a 95% interval that accounts for the votes both share, and a verdict with Holm's correction "
            f"across models (family-wise α = {app_diff.DIFF_ALPHA})."
        )
        others = [d for d in datasets if d != dataset]
        source = st.radio("Earlier snapshot", ["a bundle file", "another dataset"], horizontal=True, key="cmp_source")
        whose = [("human votes", None)] + ([(f"{judge}'s hard labels", judge)] if judge else [])
        on = st.radio("On", [w[0] for w in whose], horizontal=True, key="cmp_on")
        who = dict(whose)[on]
        result: app_diff.Comparison | str | None = None
        if source == "another dataset":
            if not others:
                notice("this store has no other dataset: import an earlier snapshot, or upload a bundle.")
                return
            old = st.selectbox("Dataset", others, key="cmp_dataset")
            result = load_comparison(old, dataset, who)
        else:
            upload = st.file_uploader("Bundle (.zip from `export --bundle`)", type=["zip"], key="cmp_bundle")
            if upload is None:
                return
            result = load_bundle_comparison(upload.getvalue(), upload.name, dataset, who)
        if isinstance(result, str):
            notice(esc(result))
            return
        st.markdown(esc(result.summary()))
        show_table(result.table(), hide_index=True, width="stretch")
        st.caption(esc(result.method()) + ".")


@st.fragment(run_every=REFRESH_POLL_S)
def rerun_when_current(dataset: str, judge: str, tau: float | None) -> None:
    """While the intervals come from before the newest votes: redraw the page once the current table is in."""
    if load_heldout_lagged(dataset, judge, tau).current:
        st.rerun(scope="app")


def load_view(
    dataset: str,
    judge: str | None,
    tau: float | None,
    tau_fitted: bool,
    alpha: float,
    held: Lagged | None,
    tau_reference: lb.TauReference | None = None,
    others: tuple[str, ...] = (),
) -> lb.LeaderboardView:
    """The joined leaderboard at (τ, α), shared by every session showing it; ``held``: the leave-one-out table,
    possibly from before the newest votes (keyed by its data stamp); ``others``: the other registered methods
    drawn (each rated on first use)."""
    held_at, table = (None, None) if held is None else (held.stamp, held.value)
    args = (dataset, judge, tau, tau_fitted, alpha, held_at, tau_reference, others)
    return compute(derived.leaderboard_view, *args, held=table)


def load_mtbench(dataset: str, judge: str | None) -> mtbench.MTBenchView | Unavailable:
    return compute(mtbench.mtbench_view, dataset, judge)


def mtbench_section(dataset: str, lead: bool = False) -> bool:
    """The MT-Bench score table when the dataset has single-answer grades; whether it had.  ``lead``: the
    page's first answer (FastChat's headline number), its sentence as the page's headline."""
    first = load_mtbench(dataset, None)
    if isinstance(first, Unavailable):
        return False
    if lead:
        st.markdown(f"### {first.headline(lambda x: esc(x, at_line_start=False))}")
    st.subheader("MT-Bench score")
    grader = first.judge
    if len(first.judges) > 1:
        grader = st.selectbox("Grading judge", first.judges, index=first.judges.index(first.judge), key="mt_judge")
    view = first if grader == first.judge else load_mtbench(dataset, grader)
    if isinstance(view, Unavailable):
        notice(esc(view.reason))
        return True
    table = mtbench.display_table(view)
    show_table(table, hide_index=True, width="stretch")
    st.caption(esc(view.caption()))
    export_buttons(
        lambda: table,
        mtbench.file_stem(view),
        f"MT-Bench score of {dataset}",
        key="mt_export",
    )
    return True


def baseline_section(
    rates: winrate.WinRateView, scores: app_arena_hard.BaselineScores | Unavailable | None, judge: str | None
) -> None:
    """The peer's own numbers on a star design: the Arena-Hard score (an Arena-Hard import), then AlpacaEval's
    win rates against the baseline."""
    if scores is not None and not isinstance(scores, Unavailable):
        st.subheader(f"Arena-Hard score against {esc(scores.plain.baseline)}")
        show_table(app_arena_hard.table(scores), hide_index=True, width="stretch")
        st.caption(scores.plain.method + (" " + app_arena_hard.STYLE_NOTE if scores.styled else ""))
    st.subheader(f"Against the baseline, {esc(rates.baseline)}")
    show_table(winrate.table(rates), hide_index=True, width="stretch")
    st.caption(lb.baseline_caption(judge, rates.n_battles))
    for note in rates.notes:
        notice(esc(note))


def shown_methods(available: list[str]) -> list[str]:
    """The method toggles (``Selection.show``, in the URL as ``?show=human,hard``): every registered method the
    data can be rated by; the ones not drawn by default (``dashboard``) are rated when first drawn."""
    key = "show"
    st.session_state[key] = [m for m in selection().show if m in available]

    def write_home() -> None:
        picked = st.session_state[key] or []
        kept = selection().show  # a method not offered here (no judge, no votes) keeps its place for later
        update(show=tuple(m for m in RATING_METHODS if m in picked or (m not in available and m in kept)))

    picked = st.pills(
        "Draw",
        available,
        selection_mode="multi",
        key=key,
        on_change=write_home,
        format_func=lambda m: RATING_METHODS[m].label,
        help="Which leaderboards the chart draws; the table has human, Hard- and Soft-Elo always, and any other "
        "method when it is drawn.",
    )
    return [m for m in available if m in (picked or [])]


with page_guard("The leaderboard"):
    ctx = require_selection()
    dataset, judge = ctx.dataset, ctx.judge
    if dataset_facts(dataset, judge).n_battles == 0:  # single-answer grades only: the score is the leaderboard
        if not mtbench_section(dataset, lead=True):
            notice(f"dataset **{esc(dataset)}** has no battles and no grades to rank its models by.")
        else:
            notice(
                "no battles: the Elo leaderboards need pairwise judgments or human votes; this dataset has "
                "single-answer grades only, scored above."
            )
        st.stop()
    present = selection().present
    human_fit = load_human(dataset)
    tau: float | None = None
    tau_fitted = True
    alpha = selection().alpha
    has_gap = has_votes = False
    c_slice = None  # where the slice picker and the style toggle go: beside τ and α when there are sliders
    if judge is not None:
        tau_fit = load_tau(dataset, judge)
        has_gap, has_votes = dataclasses.astuple(load_coverage(dataset, judge))
        if not present:
            # the page's two controls first, in its header: visible without scrolling at 1440×900
            c_tau, c_alpha, c_slice = st.columns(3)
            # a control the data cannot use is left out, with the one line why (never drawn disabled at a value)
            with c_tau:
                if has_gap:
                    tau, tau_fitted = tau_control(
                        tau_fit,
                        "τ (soft-target temperature)",
                        help="Soft targets are σ(τ·score gap); larger τ → targets closer to hard labels. The scale "
                        "is logarithmic; the fitted τ is marked.",
                    )
                    st.caption(tau_fit.caption())
                    back_to_fitted_tau_button(tau_fit)
                else:
                    tau, tau_fitted = None, False
                    st.caption("No τ: this judge has no rubric scores, so there is no Soft-Elo.")
            with c_alpha:
                if has_votes:
                    alpha = bound_slider(
                        "alpha",
                        "α (miscoverage of the intervals)",
                        *ALPHA_RANGE,
                        shown=alpha,
                        help="The intervals cover a new model's human Elo with probability ≥ 1 − α.",
                    )
                else:
                    st.caption("No α: without human votes there are no intervals for a human Elo.")
        else:
            snap_selected_tau(tau_fit)  # the τ the slider would show, as in the interactive page
            tau, tau_fitted = (selection().tau, False) if selection().tau is not None else (tau_fit.tau, True)
        if not tau_fit.ok and selection().tau is None:
            # τ cannot be fitted: no Soft-Elo at a τ nobody chose (the slider's resting place is not a τ)
            tau, tau_fitted = None, False
    elif human_fit is None:
        notice(f"dataset **{esc(dataset)}** has neither human votes nor judgments: there is nothing to rank yet.")
        st.stop()
    tau_key = None if tau is None else round(tau, 4)
    where: Slice = selection().slice
    style_on = selection().style
    if not present:
        with c_slice or st.container():
            where = slice_picker(dataset, key="lb_slice")
            st.session_state["lb_style"] = style_on
            style_on = st.toggle(
                "Style control",
                key="lb_style",
                on_change=lambda: update(style=bool(st.session_state["lb_style"])),
                help="Add the leaderboards fitted with answer length and markdown (headers, bold, lists) as "
                "covariates, so a model is not ranked up for writing longer or more formatted answers.",
            )
    # The leave-one-model-out table behind the intervals: τ refitted per fold at the fitted τ, else held at the
    # slider's; during a voting round possibly from before the newest votes (Lagged), never computed while
    # the page waits when an earlier one exists.
    held_tau = None if tau_fitted or not has_gap else tau_key
    held: Lagged | None = None
    offered = lb.other_methods(has_votes=human_fit is not None, has_judge=judge is not None)
    others = tuple(m for m in selection().show if m in offered)
    if where:
        # every method on the slice's battles alone; τ fitted there unless the slider chose one
        try:
            parts = load_slice_parts(dataset, judge, None if tau_fitted else tau_key, where, others)
        except ValueError as exc:  # a shared link naming a key this dataset does not have
            update(slice=())
            notice(esc(str(exc)) + " The slice is cleared.")
            st.stop()
        view = parts.view(alpha)
        human_fit = parts.human
    else:
        if judge is not None and has_votes:
            held = load_heldout_lagged(dataset, judge, held_tau)
        view = load_view(
            dataset,
            judge,
            tau_key,
            tau_fitted,
            alpha,
            held,
            lb.TauReference.of(tau_fit) if judge is not None else None,
            others,
        )

    # ------------------------------------------------------------ the answer
    # A star design without human votes (AlpacaEval, Arena-Hard: every battle against one baseline) leads with
    # the peer's own metric, the number its users compare with; the Elo leaderboards follow.
    rates = None if where else load_win_rates(dataset, judge)
    against = rates if rates is not None and not isinstance(rates, Unavailable) and rates.result is not None else None
    scores = load_arena_hard(dataset, judge) if against is not None and judge else None
    peer_first = against is not None and human_fit is None
    # FastChat's headline is the single-answer grade: a graded dataset without human votes leads with it
    graded_first = not where and human_fit is None and against is None and mtbench_section(dataset, True)
    if graded_first:
        st.subheader("Elo leaderboards")
        peer_first = True
    if against is not None and peer_first:
        st.markdown(
            "### " + winrate.peer_headline(against, None if isinstance(scores, Unavailable | None) else scores.plain)
        )
        baseline_section(against, scores, judge)
        st.subheader("Elo leaderboards")
    st.markdown(lb.headline_markdown(view, peer_first, bool(where)))
    tau_note = view.tau_note()
    if tau_note:
        (st.warning if view.tau_far else st.info)(tau_note, icon=":material/tune:")
    elif judge is not None and has_gap and tau is None:
        notice(lb.tau_undefined_notice(tau_fit.reason))
    choice = default_judge(dataset) if judge is not None else None
    current = True
    if held is not None and not held.current and judge is not None:
        rerun_when_current(dataset, judge, held_tau)
        current = False
    behind = held.votes_behind if held is not None else 0
    st.caption(lb.ranking_caption(view, judge, alpha, choice, where, current=current, votes_behind=behind))
    if where and view.table.empty:
        notice(esc(view.note or f"no model can be ranked on the slice {slice_label(where)}."))
        st.stop()

    pinned: tuple[str, ...] = ()
    if present:
        rows = lb.select_rows(view.table, top_n=10)
    else:
        c1, c2, c3 = st.columns([2, 1, 3])
        query = c1.text_input(
            "Search", key="lb_search", placeholder="model or organisation", label_visibility="collapsed"
        )
        top = c2.selectbox("Rows", list(TOP_N), index=1, key="lb_top", label_visibility="collapsed")
        pinned = tuple(
            c3.multiselect(
                "Pin",
                view.table["model"].tolist(),
                key="lb_pins",
                placeholder="pin models to keep them in view",
                label_visibility="collapsed",
            )
        )
        rows = lb.select_rows(view.table, query=query, pinned=pinned, top_n=TOP_N[top])
    table = lb.display_table(view, rows, methods=selection().show)
    if present:  # a static table takes the projector's large type (the interactive grid draws on a canvas)
        st.table(table.set_index("Rank"))
    else:
        helps = lb.column_help(view)
        show_table(
            table,
            hide_index=True,
            width="stretch",
            height=min(35 * (len(table) + 1) + 3, 35 * 11 + 3),
            column_config={c: st.column_config.Column(help=helps.get(c)) for c in table.columns},
        )
    rows_note = lb.rows_caption(len(rows), len(view.table), present)
    if rows_note:
        st.caption(rows_note)
    apart = view.set_apart_statement()
    if apart and not present:
        st.caption(esc(apart))
    if human_fit is not None and human_fit.issues and not present:
        with st.expander(f"Read the human Elo with care ({len(human_fit.issues)})", icon="⚠️"):
            for issue in human_fit.issues:
                st.markdown(f"- {esc(issue)}")
    if style_on:
        style_section(dataset, judge, where)

    # --------------------------------------------------------------- the chart
    statement = view.coverage_statement()
    if statement and not present:
        (st.success if view.coverage_level() == "success" else st.warning)(statement)
    elif view.note and not present:
        st.warning(view.note)
    available = [m for m in RATING_METHODS if f"{m}_elo" in view.table or m in offered]
    shown = [m for m in available if f"{m}_elo" in view.table] if present else shown_methods(available)
    drawn = lb.chart_input(view, shown, rows)
    if not drawn.methods:
        notice("select at least one leaderboard to draw.")
    else:
        fig = partial(
            charts.leaderboard_intervals,
            drawn.frame,
            drawn.methods,
            interval=drawn.interval,
            interval_label=drawn.interval_label,
            highlight=pinned,
        )
        show_chart(fig, key="leaderboard_chart", how_to_read=None if present else lb.chart_how_to_read(drawn))

    if present:
        st.stop()
    if "soft_elo" in view.table and "hard_elo" in view.table:
        show_chart(
            # only the columns it draws: the chart (shared across sessions) is not rebuilt when α moves
            partial(
                charts.rank_slope,
                view.table[["model", "hard_elo", "soft_elo"]],
                "hard_elo",
                "soft_elo",
                "Hard-Elo",
                "Soft-Elo",
                # the table's rows (top N, a search, pins), ranked among every model
                tuple(rows["model"]) if len(rows) < len(view.table) else None,
            ),
            key="rank_slope",
            how_to_read="each line joins a model's rank under hard labels (left) to its rank under soft "
            "targets (right), among every model; green ▲ moved up, orange ▼ moved down, grey kept its rank. "
            "It draws the models the table above shows.",
        )

    # ------------------------------------------------- models without human votes
    unrated = newmodel.standings(view)
    if unrated:
        st.subheader("Models without human votes: where they stand")
        lines, caption = lb.unrated_text(unrated)
        for line in lines:
            st.markdown(line)
        st.caption(caption)

    # ------------------------------------------------------------ by turn
    turn_method = "human" if human_fit is not None else "hard" if judge else None
    if turn_method and not where:  # the turn groups are slices of their own
        by_turn = load_by_turn(dataset, turn_method, judge if turn_method == "hard" else None)
        if not isinstance(by_turn, Unavailable):
            st.subheader("By conversation turn")
            show_table(lb.turn_table(by_turn), hide_index=True)
            st.caption(lb.turn_caption(turn_method))

    # ------------------------------------------------------------ MT-Bench score (single-answer grades)
    if not where and not graded_first:
        mtbench_section(dataset)

    # ------------------------------------------------------------ against the baseline (AlpacaEval's numbers)
    if against is not None and not peer_first:  # with human votes the human Elo leads; the peer's numbers here
        baseline_section(against, scores, judge)

    # ------------------------------------------------------------ head to head
    st.subheader("Head to head")
    if where:
        st.caption("On all battles of the dataset (the slice chooses the leaderboard above).")
    names = view.table["model"].tolist()
    if len(names) >= 2:
        h1, h2 = st.columns(2)
        a = h1.selectbox("Model A", names, index=0, key="h2h_a")
        b = h2.selectbox("Model B", names, index=1, key="h2h_b")
        if a == b:
            notice("choose two different models.")
        else:
            fits = [
                load_pair_model(dataset, t, j, tt)
                for t, j, tt in lb.head_to_head_targets(judge, round(tau, 4) if has_gap and tau is not None else None)
            ]
            h2h = lb.compare(fits, a, b, dataset)
            if isinstance(h2h, Unavailable):
                notice(esc(h2h.reason))
            else:
                show_table(lb.head_to_head_table(h2h), hide_index=True, width="stretch")
                st.caption(
                    "Win probability from each method's Bradley–Terry fit, σ(θ_A − θ_B), with a 95% interval "
                    "from the sandwich covariance of the difference; the direct battles are counted as "
                    "each method labels them (a tie counts half)."
                )

    # ----------------------------------------------------------------- what changed
    st.subheader("What changed since last time")
    compare_panel(dataset, judge, dataset_options())

    # ----------------------------------------------------------------- exports
    st.subheader("Take it with you")
    named_tau = tau if has_gap else None  # the τ the files hold, in their names: dataset, judge, τ and α
    context = report.report_context(dataset, judge, named_tau, alpha)
    export_buttons(
        lambda: lb.export_table(view),
        report.file_stem("leaderboard", dataset, judge, named_tau, alpha),
        f"Leaderboard of {dataset}" + (f" on {slice_label(where)}" if where else ""),
        key="lb_export",
        context=context,
    )
    st.download_button(
        "Report (HTML, prints to PDF)",
        data=lambda: read_store(report.report_html, dataset, judge, None if tau_fitted else tau, alpha, others=others),
        file_name=report.report_file_name(dataset, judge, named_tau, alpha),
        mime="text/html",
        icon=":material/description:",
        key="lb_report",
        help="One self-contained file: headline, table, chart, calibration, caveats and provenance; opens "
        "without a network and prints to A4 or Letter (`python -m core report --format pdf` prints it for you).",
    )
