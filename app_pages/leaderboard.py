"""Leaderboard: the answer first (headline and table), then the chart, the intervals' promise, head to head.

τ slider (page header, _leaderboard/controls.py) → core.app.leaderboard.tau_use (the τ each result is keyed by)
         → core.app.derived.leaderboard_view → core.app.leaderboard.judge_elo_of(soft, τ), and heldout(τ fixed)
         → Store.battle_frame
         → core.charts.leaderboard_intervals
α slider → core.app.leaderboard.leaderboard_view (q̂ only; the leave-one-out table is cached)
         → core.charts.leaderboard_intervals
Slice    → core.app.leaderboard.view_parts(where=…) → Store.battle_frame / pair_stats (where=…)
         → core.charts.leaderboard_intervals
Style control → core.app.style.style_controlled_leaderboard → Store.battle_frame / votes_frame → a table
Compare with… → core.app.diff.compare_datasets / compare_with_bundle → Store.dataset_tables → a table
MT-Bench score → core.app.mtbench.mtbench_view → Store.grades_frame → a table (a dataset of grades only: all)

Each section is drawn by a module of ``app_pages/_leaderboard/``; what it shows (sentences, rows, levels, which
τ keys which result, which answer leads) is decided in ``core.app.leaderboard`` (page_text, page_plan).
"""

import streamlit as st

from app_pages._leaderboard.answer import headline, table_section
from app_pages._leaderboard.baseline import baseline_section, lead_section
from app_pages._leaderboard.below import by_turn_section, exports_section, head_to_head_section, unrated_section
from app_pages._leaderboard.chart import chart_section, rank_slope
from app_pages._leaderboard.compare import compare_panel
from app_pages._leaderboard.controls import header
from app_pages._leaderboard.loaders import leaderboard, load_human
from app_pages._leaderboard.mtbench import grades_only, mtbench_section
from app_pages._leaderboard.style import style_section
from app_pages._loaders import dataset_facts, dataset_options
from app_pages._selection import selection
from app_pages._widgets import page_guard, require_selection
from core.app import leaderboard as lb

st.title("Leaderboard")


with page_guard("The leaderboard"):
    ctx = require_selection()
    dataset, judge = ctx.dataset, ctx.judge
    if dataset_facts(dataset, judge).n_battles == 0:  # single-answer grades only: the score is the leaderboard
        grades_only(dataset)
    present = selection().present
    human_fit = load_human(dataset)
    controls = header(dataset, judge, human_fit is not None, present)
    offered = lb.other_methods(has_votes=human_fit is not None, has_judge=judge is not None)
    others = tuple(m for m in selection().show if m in offered)
    view, held, human_fit = leaderboard(dataset, judge, controls, others, human_fit)

    # the answer: a star design without human votes leads with the peer's own metric, the Elo leaderboards follow
    led = lead_section(dataset, judge, controls.where, human_fit is not None)
    headline(dataset, judge, view, controls, held, led.peer_first)
    issues = human_fit.issues if human_fit is not None else ()
    rows, pinned = table_section(view, selection().show, present, issues)
    if controls.style_on:
        style_section(dataset, judge, controls.where)

    chart_section(view, offered, rows, pinned, present)
    if present:
        st.stop()
    rank_slope(view, rows)

    unrated_section(view)
    by_turn_section(dataset, judge, human_fit is not None, controls)
    if not controls.where and not led.graded_first:  # the grades score the whole dataset
        mtbench_section(dataset)
    if led.against is not None and not led.peer_first:  # with human votes the human Elo leads; the peer's here
        baseline_section(led.against, led.scores, judge)
    head_to_head_section(dataset, judge, view, controls)
    st.subheader("What changed since last time")
    compare_panel(dataset, judge, dataset_options())
    exports_section(dataset, judge, view, controls, others)
