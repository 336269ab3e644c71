"""Plotly figure builders: pure functions from results to figures (no Streamlit).

Every figure has a title, axis titles with units and hover text.  Colours come
from the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies) without its black, which disappears on a dark background; no
background or font colour is fixed, so the Streamlit theme (light or dark)
applies when a page draws the figure with ``theme="streamlit"``.  Where colour
carries meaning (above/below a target) a marker symbol carries it too.

One module per page (``overview``, ``leaderboard``, … ``evaluate``) and ``style`` for what they share;
every builder and helper stays importable from ``core.charts``.
"""

from __future__ import annotations

from core.charts.analyses import alignment_scatter as alignment_scatter
from core.charts.analyses import budget_curve as budget_curve
from core.charts.bias import coefficient_bars as coefficient_bars
from core.charts.bias import echo_rates as echo_rates
from core.charts.bias import position_deflection as position_deflection
from core.charts.bias import rate_intervals as rate_intervals
from core.charts.calibration import gap_agreement as gap_agreement
from core.charts.calibration import reliability_diagram as reliability_diagram
from core.charts.calibration import tau_profile as tau_profile
from core.charts.evaluate import predicted_placement as predicted_placement
from core.charts.evaluate import width_by_calls as width_by_calls
from core.charts.judges import DENSITY_CELLS as DENSITY_CELLS
from core.charts.judges import annotator_abilities as annotator_abilities
from core.charts.judges import consistency_bars as consistency_bars
from core.charts.judges import consistency_vs_elo as consistency_vs_elo
from core.charts.judges import shuffle_instability as shuffle_instability
from core.charts.leaderboard import leaderboard_intervals as leaderboard_intervals
from core.charts.leaderboard import rank_slope as rank_slope
from core.charts.overview import count_bars as count_bars
from core.charts.overview import coverage_heatmap as coverage_heatmap
from core.charts.residuals import judge_vs_human as judge_vs_human
from core.charts.residuals import residual_ramp as residual_ramp
from core.charts.residuals import split_evaluation as split_evaluation
from core.charts.residuals import width_decomposition as width_decomposition
from core.charts.selective import coverage_curve as coverage_curve
from core.charts.selective import coverage_risk as coverage_risk
from core.charts.style import CYCLE as CYCLE
from core.charts.style import METHOD_COLOURS as METHOD_COLOURS
from core.charts.style import METHOD_SYMBOLS as METHOD_SYMBOLS
from core.charts.style import NEUTRAL as NEUTRAL
from core.charts.style import SYMBOLS as SYMBOLS
from core.charts.style import WEBGL_ABOVE as WEBGL_ABOVE
from core.charts.style import for_paper as for_paper
from core.charts.style import for_presentation as for_presentation
from core.charts.style import title_of as title_of
from core.charts.style import with_context as with_context
