"""Leaderboards: one rating method from the store, and the joined human / Hard / Soft view.

``ratings(store, dataset, method, ...)`` serves the CLI's ``leaderboard``
command: the method's registry entry (``core.methods.RATING_METHODS``) says
whether its fit reads the SQL-aggregated pair table or the per-vote rows.
The Leaderboard page composes :func:`human_ratings`, :func:`judge_elo`,
:func:`heldout` and :func:`leaderboard_view`; pages cache the expensive ones
per (dataset, judge, data stamp) so that a slider move recomputes only
what depends on it:

==============  =======================================  ==========================
page            expensive, cached per (dataset, judge)    cheap, per slider value
==============  =======================================  ==========================
Leaderboard     battle frame, τ fit, leave-one-out table  Soft-Elo at τ, q̂ at α
==============  =======================================  ==========================

The package holds one concept per module: :mod:`.ratings` (one method's leaderboard, slices, turns),
:mod:`.judge` (the judge's Elo, the held-out table, τ's grid, the default judge), :mod:`.view` (the joined
view and its one composer, :func:`view_parts`), :mod:`.tables` (table, help, export, chart input) and
:mod:`.head_to_head`; the Leaderboard page's sentences (:mod:`.page_text`) and decisions (:mod:`.page_plan`).
This module exports what other layers use (pages, commands, reports, tests); the rest is imported from
its module.
"""

from __future__ import annotations

from core.app.leaderboard.head_to_head import (
    HeadToHead,
    PairModel,
    compare,
    head_to_head_table,
    head_to_head_targets,
    pair_model,
)
from core.app.leaderboard.judge import (
    TAU_BOUNDS,
    JudgeCoverage,
    default_judge,
    heldout,
    heldout_of,
    judge_coverage,
    judge_elo,
    judge_elo_of,
    snap_tau,
    tau_grid,
)
from core.app.leaderboard.page_plan import (
    NO_JUDGE_TAU,
    Lead,
    TauUse,
    coverage_banner,
    drawable_methods,
    empty_slice_notice,
    has_rank_slope,
    lead,
    slope_models,
    table_part,
    tau_notice,
    tau_use,
    turn_method,
    usable_baseline,
)
from core.app.leaderboard.page_text import (
    baseline_caption,
    chart_how_to_read,
    export_title,
    headline_markdown,
    no_battles_notice,
    ranking_caption,
    rows_caption,
    style_caption,
    tau_undefined_notice,
    turn_caption,
    unrated_text,
)
from core.app.leaderboard.ratings import (
    check_others,
    check_slice,
    human_ratings,
    method_ratings,
    only_judge,
    other_methods,
    ratings,
    ratings_by_turn,
    slice_values,
    too_few,
    turn_groups,
    turn_table,
)
from core.app.leaderboard.tables import (
    ChartInput,
    chart_input,
    column_help,
    display_table,
    export_table,
    rank_change,
    select_rows,
)
from core.app.leaderboard.view import (
    LeaderboardView,
    TauReference,
    ViewParts,
    leaderboard_view,
    smallest_alpha,
    view_for,
    view_parts,
)

__all__ = [
    "baseline_caption",
    "chart_how_to_read",
    "chart_input",
    "ChartInput",
    "check_others",
    "check_slice",
    "column_help",
    "compare",
    "coverage_banner",
    "default_judge",
    "display_table",
    "drawable_methods",
    "empty_slice_notice",
    "export_table",
    "export_title",
    "has_rank_slope",
    "head_to_head_table",
    "head_to_head_targets",
    "headline_markdown",
    "HeadToHead",
    "heldout",
    "heldout_of",
    "human_ratings",
    "judge_coverage",
    "judge_elo",
    "judge_elo_of",
    "JudgeCoverage",
    "Lead",
    "lead",
    "leaderboard_view",
    "LeaderboardView",
    "method_ratings",
    "no_battles_notice",
    "NO_JUDGE_TAU",
    "only_judge",
    "other_methods",
    "pair_model",
    "PairModel",
    "rank_change",
    "ranking_caption",
    "ratings",
    "ratings_by_turn",
    "rows_caption",
    "select_rows",
    "slice_values",
    "slope_models",
    "smallest_alpha",
    "snap_tau",
    "style_caption",
    "table_part",
    "TAU_BOUNDS",
    "tau_grid",
    "tau_notice",
    "tau_undefined_notice",
    "tau_use",
    "TauReference",
    "TauUse",
    "too_few",
    "turn_caption",
    "turn_groups",
    "turn_method",
    "turn_table",
    "unrated_text",
    "usable_baseline",
    "view_for",
    "view_parts",
    "ViewParts",
]
