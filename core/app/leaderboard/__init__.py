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
Every name is importable from here.
"""

from __future__ import annotations

from core.app.leaderboard.head_to_head import (
    HeadToHead as HeadToHead,
)
from core.app.leaderboard.head_to_head import (
    PairModel as PairModel,
)
from core.app.leaderboard.head_to_head import (
    compare as compare,
)
from core.app.leaderboard.head_to_head import (
    head_to_head_table as head_to_head_table,
)
from core.app.leaderboard.head_to_head import (
    head_to_head_targets as head_to_head_targets,
)
from core.app.leaderboard.head_to_head import (
    pair_model as pair_model,
)
from core.app.leaderboard.judge import (
    HARD_SOFT as HARD_SOFT,
)
from core.app.leaderboard.judge import (
    SOFT_ONLY as SOFT_ONLY,
)
from core.app.leaderboard.judge import (
    TAU_BOUNDS as TAU_BOUNDS,
)
from core.app.leaderboard.judge import (
    JudgeCoverage as JudgeCoverage,
)
from core.app.leaderboard.judge import (
    default_judge as default_judge,
)
from core.app.leaderboard.judge import (
    heldout as heldout,
)
from core.app.leaderboard.judge import (
    heldout_of as heldout_of,
)
from core.app.leaderboard.judge import (
    judge_coverage as judge_coverage,
)
from core.app.leaderboard.judge import (
    judge_elo as judge_elo,
)
from core.app.leaderboard.judge import (
    judge_elo_of as judge_elo_of,
)
from core.app.leaderboard.judge import (
    snap_tau as snap_tau,
)
from core.app.leaderboard.judge import (
    tau_grid as tau_grid,
)
from core.app.leaderboard.page_plan import (
    NO_JUDGE_TAU as NO_JUDGE_TAU,
)
from core.app.leaderboard.page_plan import (
    Lead as Lead,
)
from core.app.leaderboard.page_plan import (
    TablePart as TablePart,
)
from core.app.leaderboard.page_plan import (
    TauUse as TauUse,
)
from core.app.leaderboard.page_plan import (
    coverage_banner as coverage_banner,
)
from core.app.leaderboard.page_plan import (
    drawable_methods as drawable_methods,
)
from core.app.leaderboard.page_plan import (
    empty_slice_notice as empty_slice_notice,
)
from core.app.leaderboard.page_plan import (
    has_rank_slope as has_rank_slope,
)
from core.app.leaderboard.page_plan import (
    lead as lead,
)
from core.app.leaderboard.page_plan import (
    slope_models as slope_models,
)
from core.app.leaderboard.page_plan import (
    table_part as table_part,
)
from core.app.leaderboard.page_plan import (
    tau_notice as tau_notice,
)
from core.app.leaderboard.page_plan import (
    tau_use as tau_use,
)
from core.app.leaderboard.page_plan import (
    turn_method as turn_method,
)
from core.app.leaderboard.page_plan import (
    usable_baseline as usable_baseline,
)
from core.app.leaderboard.page_text import (
    baseline_caption as baseline_caption,
)
from core.app.leaderboard.page_text import (
    chart_how_to_read as chart_how_to_read,
)
from core.app.leaderboard.page_text import (
    export_title as export_title,
)
from core.app.leaderboard.page_text import (
    headline_markdown as headline_markdown,
)
from core.app.leaderboard.page_text import (
    no_battles_notice as no_battles_notice,
)
from core.app.leaderboard.page_text import (
    ranking_caption as ranking_caption,
)
from core.app.leaderboard.page_text import (
    rows_caption as rows_caption,
)
from core.app.leaderboard.page_text import (
    style_caption as style_caption,
)
from core.app.leaderboard.page_text import (
    tau_undefined_notice as tau_undefined_notice,
)
from core.app.leaderboard.page_text import (
    turn_caption as turn_caption,
)
from core.app.leaderboard.page_text import (
    unrated_text as unrated_text,
)
from core.app.leaderboard.ratings import (
    TurnGroup as TurnGroup,
)
from core.app.leaderboard.ratings import (
    _votes_and_battles as _votes_and_battles,
)
from core.app.leaderboard.ratings import (
    check_others as check_others,
)
from core.app.leaderboard.ratings import (
    check_slice as check_slice,
)
from core.app.leaderboard.ratings import (
    human_ratings as human_ratings,
)
from core.app.leaderboard.ratings import (
    method_ratings as method_ratings,
)
from core.app.leaderboard.ratings import (
    only_judge as only_judge,
)
from core.app.leaderboard.ratings import (
    other_methods as other_methods,
)
from core.app.leaderboard.ratings import (
    ratings as ratings,
)
from core.app.leaderboard.ratings import (
    ratings_by_turn as ratings_by_turn,
)
from core.app.leaderboard.ratings import (
    slice_values as slice_values,
)
from core.app.leaderboard.ratings import (
    too_few as too_few,
)
from core.app.leaderboard.ratings import (
    turn_groups as turn_groups,
)
from core.app.leaderboard.ratings import (
    turn_table as turn_table,
)
from core.app.leaderboard.tables import (
    ChartInput as ChartInput,
)
from core.app.leaderboard.tables import (
    _decimals as _decimals,
)
from core.app.leaderboard.tables import (
    _interval_text as _interval_text,
)
from core.app.leaderboard.tables import (
    _others_in as _others_in,
)
from core.app.leaderboard.tables import (
    _rounded as _rounded,
)
from core.app.leaderboard.tables import (
    chart_input as chart_input,
)
from core.app.leaderboard.tables import (
    column_help as column_help,
)
from core.app.leaderboard.tables import (
    display_table as display_table,
)
from core.app.leaderboard.tables import (
    export_table as export_table,
)
from core.app.leaderboard.tables import (
    interval_tag as interval_tag,
)
from core.app.leaderboard.tables import (
    method_labels as method_labels,
)
from core.app.leaderboard.tables import (
    rank_change as rank_change,
)
from core.app.leaderboard.tables import (
    select_rows as select_rows,
)
from core.app.leaderboard.view import (
    LeaderboardView as LeaderboardView,
)
from core.app.leaderboard.view import (
    TauReference as TauReference,
)
from core.app.leaderboard.view import (
    ViewParts as ViewParts,
)
from core.app.leaderboard.view import (
    _judge_columns as _judge_columns,
)
from core.app.leaderboard.view import (
    _rank_change as _rank_change,
)
from core.app.leaderboard.view import (
    decimals_for as decimals_for,
)
from core.app.leaderboard.view import (
    leaderboard_view as leaderboard_view,
)
from core.app.leaderboard.view import (
    ordinal_rank as ordinal_rank,
)
from core.app.leaderboard.view import (
    primary_label as primary_label,
)
from core.app.leaderboard.view import (
    rank_with_ties as rank_with_ties,
)
from core.app.leaderboard.view import (
    smallest_alpha as smallest_alpha,
)
from core.app.leaderboard.view import (
    view_for as view_for,
)
from core.app.leaderboard.view import (
    view_parts as view_parts,
)

# names the pages read through this package
from core.domain import MIN_SLICE_BATTLES as MIN_SLICE_BATTLES
from core.stats.heldout import HeldoutResult as HeldoutResult
