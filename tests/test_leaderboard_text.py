"""The Leaderboard page's sentences (``core.app.leaderboard.page_text``) and decisions (``page_plan``), known
answers on hand-built views: the page draws these as they are (tests/test_app.py runs the page itself)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from core.app import Unavailable
from core.app.leaderboard import (
    NO_JUDGE_TAU,
    ChartInput,
    HeadToHead,
    Lead,
    LeaderboardView,
    TauReference,
    TauUse,
    baseline_caption,
    chart_how_to_read,
    coverage_banner,
    drawable_methods,
    empty_slice_notice,
    export_title,
    has_rank_slope,
    head_to_head_table,
    headline_markdown,
    lead,
    no_battles_notice,
    ranking_caption,
    rows_caption,
    slope_models,
    style_caption,
    table_part,
    tau_notice,
    tau_undefined_notice,
    tau_use,
    turn_caption,
    turn_method,
    unrated_text,
    usable_baseline,
)
from core.app.newmodel import Standing
from core.app.safe_text import escape_markdown as esc
from core.app.winrate import DIFFICULTY_NOTE, WinRateView
from core.methods import RATING_METHODS

RANK_MEANING = (
    "; a rank counts the models whose interval lies entirely above, so models sharing a rank are statistically tied."
)


def _view(
    primary: str = "human",
    n_votes: list[int] | None = None,
    tau: float | None = None,
    tau_fitted: bool = True,
    alpha: float = 0.1,
) -> LeaderboardView:
    """A view of two models ranked by ``primary``; ``n_votes``: the table's per-model vote column (None: none)."""
    table = pd.DataFrame({"model": ["a", "b"], "rank": [1, 2], "primary": [1010.0, 990.0]})
    if n_votes is not None:
        table["n_votes"] = n_votes
    return LeaderboardView(table, primary, None, "soft", alpha, tau, tau_fitted, None)


# ------------------------------------------------------------------------------------------ the ranking caption


@pytest.mark.parametrize(
    "primary, basis",
    [
        ("human", "Ranked by human Elo from human votes (95% CI)"),
        (
            "predicted",
            "Ranked by j's predicted human Elo with its 80% conformal interval (this dataset has no human Elo of "
            "its own)",
        ),
        ("hard", "Ranked by j's Hard-Elo (95% bootstrap CI)"),
        ("soft", "Ranked by j's Soft-Elo (95% bootstrap CI)"),
    ],
)
def test_each_primary_score_names_its_basis(primary, basis):
    caption = ranking_caption(_view(primary), "j", 0.2, None, ())
    assert caption == basis + RANK_MEANING + " Judge **j**."


def test_the_whole_caption_with_judge_votes_lag_and_slice():
    view = _view("human", n_votes=[1200, 1000], tau=0.4567)
    caption = ranking_caption(
        view, "j", 0.1, ("j", "best predicts the human Elo"), (("language", "de"),), current=False, votes_behind=7
    )
    assert caption == (
        "Ranked by human Elo from human votes (95% CI)"
        + RANK_MEANING
        + " Judge **j**: best predicts the human Elo."
        + " Human Elo from 1,100 human votes."
        + " The intervals are calibrated without the 7 newest human votes: their leave-one-model-out table is being"
        " recomputed in the background, and the page updates when it is ready."
        + " On the slice **language = de** only (τ fitted on the slice: 0.457)."
    )


@pytest.mark.parametrize(
    "n_votes, said",
    [
        ([1200, 1200], " Human Elo from 1,200 human votes."),  # each vote is on both of its models' rows
        ([3, 4], " Human Elo from 3 human votes."),  # an odd sum rounds down
        ([0, 0], None),
        (None, None),
    ],
)
def test_the_votes_are_counted_once_each(n_votes, said):
    caption = ranking_caption(_view(n_votes=n_votes), None, 0.1, None, ())
    if said is None:
        assert "human votes." not in caption
        assert caption == "Ranked by human Elo from human votes (95% CI)" + RANK_MEANING
    else:
        assert caption.endswith(RANK_MEANING + said)


def test_the_lag_sentence_only_when_the_intervals_are_not_current():
    view = _view(n_votes=[10, 10])
    assert "recomputed in the background" not in ranking_caption(view, "j", 0.1, None, (), votes_behind=5)
    lagging = ranking_caption(view, "j", 0.1, None, (), current=False, votes_behind=1234)
    assert "calibrated without the 1,234 newest human votes:" in lagging
    changed = ranking_caption(view, "j", 0.1, None, (), current=False, votes_behind=0)
    assert "calibrated without the latest changed votes:" in changed


def test_the_default_judges_reason_only_when_it_is_the_judge_shown():
    view = _view("hard")
    assert ranking_caption(view, "j", 0.1, ("j", "why"), ()).endswith(" Judge **j**: why.")
    assert ranking_caption(view, "j", 0.1, ("k", "why"), ()).endswith(" Judge **j**.")
    assert ranking_caption(view, "j", 0.1, None, ()).endswith(" Judge **j**.")
    assert "Judge" not in ranking_caption(_view("human"), None, 0.1, None, ())


def test_names_are_escaped_as_markdown():
    caption = ranking_caption(_view("soft"), "gpt*4_", 0.1, None, (("category", "a_b"),))
    assert caption.startswith("Ranked by gpt\\*4\\_'s Soft-Elo")
    assert " Judge **gpt\\*4\\_**." in caption
    assert "**category = a\\_b**" in caption


@pytest.mark.parametrize(
    "tau, tau_fitted, note",
    [
        (0.4567, True, " On the slice **turn = 1** only (τ fitted on the slice: 0.457)."),
        (0.4567, False, " On the slice **turn = 1** only."),  # the slider's τ, not one fitted on the slice
        (None, True, " On the slice **turn = 1** only."),
    ],
)
def test_the_slice_note_gives_the_tau_fitted_on_the_slice(tau, tau_fitted, note):
    view = _view(tau=tau, tau_fitted=tau_fitted)
    assert ranking_caption(view, None, 0.1, None, (("turn", "1"),)).endswith(note)
    assert "slice" not in ranking_caption(view, None, 0.1, None, ())


# ------------------------------------------------------------------------------------------ the chart's reading


def _drawn(interval: str | None, conformal: bool) -> ChartInput:
    return ChartInput(pd.DataFrame({"model": ["a"]}), {"soft_elo": "Soft-Elo"}, interval, "", conformal)


ROW_AND_MARKERS = "each row is a model, in the table's order; markers are its Elo under each method drawn. "


@pytest.mark.parametrize(
    "interval, conformal, bars",
    [
        (
            "soft_elo",
            True,
            "The bar around the Soft-Elo marker is the conformal interval where the model's human Elo should lie.",
        ),
        (
            "hard_elo",
            True,
            "The bar around the Hard-Elo marker is the conformal interval where the model's human Elo should lie.",
        ),
        ("human_elo", False, "The bar around the human Elo marker is its 95% confidence interval."),
        (None, False, "No intervals are drawn for the methods shown."),
        (None, True, "No intervals are drawn for the methods shown."),  # no bars: nothing is promised
    ],
)
def test_the_chart_says_what_its_bars_are(interval, conformal, bars):
    assert chart_how_to_read(_drawn(interval, conformal)) == ROW_AND_MARKERS + bars


# ------------------------------------------------------------------------------------ models without human votes


def _standings(n: int, name: str = "m") -> list[Standing]:
    return [Standing(f"{name}{k}", "soft", 1000.0 - k, 950.0, 1050.0, 0.1, 40, 12, 1, 2, 10) for k in range(n)]


EACH_PREDICTED = "Each predicted from its judge Elo with the conformal interval drawn above (same α and τ); "
EVALUATE = "Evaluate a new model with `python -m core evaluate` (README)."


@pytest.mark.parametrize(
    "n, listed, more",
    [(1, 1, ""), (20, 20, ""), (21, 20, "1 more in the table. "), (57, 20, "37 more in the table. ")],
)
def test_the_first_twenty_standings_are_listed_and_the_rest_counted(n, listed, more):
    unrated = _standings(n)
    lines, caption = unrated_text(unrated)
    assert lines == [f"- {esc(s.text())}" for s in unrated[:listed]]
    assert caption == EACH_PREDICTED + more + EVALUATE


def test_a_standing_is_one_markdown_list_item_with_its_name_escaped():
    (line,), _ = unrated_text(_standings(1, name="gpt*4_"))
    assert line.startswith("- gpt\\*4\\_0\\: predicted human Elo 1000, 90% conformal interval 950–1050")


# ------------------------------------------------------------------------------------------ the headline


def _ranked(model: str = "a*") -> LeaderboardView:
    table = pd.DataFrame(
        {
            "model": [model, "b"],
            "rank": [1, 2],
            "primary": [1010.0, 990.0],
            "primary_lower": [1000.0, 980.0],
            "primary_upper": [1020.0, 1000.0],
        }
    )
    return LeaderboardView(table, "human", None, "soft", 0.1, None, True, None)


def test_the_headline_is_a_heading_with_the_first_model_escaped():
    top = "#1 a\\* — human Elo 1010 (95% CI 1000–1020); ahead of every other model beyond its interval"
    assert headline_markdown(_ranked(), False, False) == "### " + top
    assert headline_markdown(_ranked(), True, True) == "#### " + top  # under a peer's headline: a level down


def test_without_a_ranked_model_the_headline_says_so_for_the_slice_or_dataset():
    empty = _ranked().table.iloc[0:0]
    view = LeaderboardView(empty, "human", None, None, 0.1, None, True, None)
    assert headline_markdown(view, False, False) == "### No model can be ranked on this dataset yet"
    assert headline_markdown(view, False, True) == "### No model can be ranked on this slice yet"
    assert headline_markdown(view, True, True) == "#### No model can be ranked on this slice yet"


# ------------------------------------------------------------------------------------ τ undefined, rows shown


def test_the_tau_undefined_notice_gives_the_reason():
    assert tau_undefined_notice("every score gap is zero") == (
        "τ undefined: every score gap is zero. Soft-Elo is not drawn; choose a τ on the slider to draw it there."
    )


@pytest.mark.parametrize(
    "shown, total, present, caption",
    [
        (20, 20, False, None),
        (10, 10, True, None),
        (20, 57, False, "20 of 57 models shown."),
        (10, 57, True, "The top 10, and 47 more models (leave presentation mode to see every row)."),
    ],
)
def test_the_rows_caption_only_when_some_models_are_not_shown(shown, total, present, caption):
    assert rows_caption(shown, total, present) == caption


# ------------------------------------------------------------------------ style control, baseline, by turn

STYLE_FIT = (
    "Bradley–Terry with style covariates (answer length, headers, bold, list items: the a − b differences, "
    "standardised) over "
)
MOVES = "; 95% sandwich intervals. 'Moves' is the places a model gains (▲) or loses (▼) once style is held equal. "


def test_the_style_caption_counts_votes_only_for_human_votes_and_ends_with_its_note():
    assert style_caption(12345, 20000, "intervals are not conformal") == (
        STYLE_FIT + "12,345 battles, 20,000 votes" + MOVES + "Intervals are not conformal."
    )
    assert style_caption(800, None, "a_b note") == STYLE_FIT + "800 battles" + MOVES + "A\\_b note."
    assert style_caption(5, 0, "x") == STYLE_FIT + "5 battles, 0 votes" + MOVES + "X."  # human votes, none fitted


def test_the_baseline_caption_names_whose_labels():
    rest = (
        " Win rate: the mean probability of beating the baseline (a tie counts half), ± one standard error over "
        "instructions; discrete: each comparison counted as a win, half or loss."
    )
    assert baseline_caption("gpt*4", 1805, DIFFICULTY_NOTE) == (
        "By judge **gpt\\*4**, over 1,805 battles with the baseline." + rest + " " + DIFFICULTY_NOTE
    )
    assert baseline_caption(None, 3) == "By the human votes, over 3 battles with the baseline." + rest


@pytest.mark.parametrize("method, elo", [("human", "Human"), ("hard", "Hard-")])
def test_the_turn_caption_names_the_elo_fitted_per_turn(method, elo):
    assert turn_caption(method) == (
        f"{elo}Elo fitted separately on the battles of each turn group (95% sandwich intervals; each group has its "
        "own centring, so compare models within a column, and a model's change of rank across columns)."
    )


# ------------------------------------------------------------------------------------------ head to head


def test_the_head_to_head_table_formats_each_method_and_names_the_two_models():
    table = pd.DataFrame(
        {
            "method": ["Human Elo", "Hard-Elo"],
            "p_a": [0.6234, 0.5],
            "lower": [0.55, 0.4012],
            "upper": [0.69, 0.5988],
            "battles": [40, 0],
            "a_score": [0.625, float("nan")],
        }
    )
    shown = head_to_head_table(HeadToHead("x", "y", table))
    expected = pd.DataFrame(
        {
            "method": ["Human Elo", "Hard-Elo"],
            "P(x beats y)": ["62.3%", "50.0%"],
            "95% CI": ["55.0%–69.0%", "40.1%–59.9%"],
            "battles between them": [40, 0],
            "x's mean score in them": ["0.62", "—"],  # no direct battle: no mean
        }
    )
    pd.testing.assert_frame_equal(shown, expected)


# ------------------------------------------------------------------------------------------ the page's decisions


def test_the_slider_decides_tau_when_drawn():
    assert tau_use((0.7, False), 0.5, True, 0.7, True) == TauUse(0.7, False, True)
    assert tau_use((0.5, True), 0.5, True, None, True) == TauUse(0.5, True, True)
    assert tau_use((None, False), 0.5, True, None, False) == TauUse(None, False, False)  # no rubric: no slider


def test_without_a_slider_the_chosen_tau_else_the_fitted_one():
    assert tau_use(None, 0.5, True, 0.7, True) == TauUse(0.7, False, True)
    assert tau_use(None, 0.5, True, None, True) == TauUse(0.5, True, True)


def test_an_unfittable_tau_nobody_chose_is_no_tau():
    assert tau_use((1.0, False), None, False, None, True) == TauUse(None, False, True)  # the slider's resting place
    assert tau_use(None, None, False, None, True) == TauUse(None, False, True)
    assert tau_use(None, None, False, 2.0, True) == TauUse(2.0, False, True)  # a chosen τ is kept


def test_each_result_is_keyed_by_the_tau_it_depends_on():
    chosen = TauUse(0.123456, False, True)
    assert (chosen.key, chosen.heldout_key, chosen.slice_key, chosen.pair_key) == (0.1235, 0.1235, 0.1235, 0.1235)
    assert (chosen.report_tau, chosen.named) == (0.123456, 0.123456)
    fitted = TauUse(0.5, True, True)  # refitted per fold and on a slice: keyed None
    assert (fitted.key, fitted.heldout_key, fitted.slice_key, fitted.report_tau) == (0.5, None, None, None)
    assert (fitted.pair_key, fitted.named) == (0.5, 0.5)
    no_rubric = TauUse(0.7, False, False)  # no Soft-Elo: nothing is keyed or named by τ but the view
    assert (no_rubric.heldout_key, no_rubric.pair_key, no_rubric.named) == (None, None, None)
    assert (NO_JUDGE_TAU.key, NO_JUDGE_TAU.slice_key, NO_JUDGE_TAU.report_tau) == (None, None, None)


@pytest.mark.parametrize(
    "has_baseline, has_human, on_slice, peer_first, grades",
    [
        (True, False, False, True, False),  # AlpacaEval, Arena-Hard: the peer's metric leads
        (True, True, False, False, False),  # human votes: the human Elo leads, the peer's numbers follow
        (False, False, False, False, True),  # MT-Bench pairs: the grades may lead
        (False, False, True, False, False),  # the grades are of the whole dataset, never a slice's
        (False, True, False, False, False),
    ],
)
def test_which_answer_leads(has_baseline, has_human, on_slice, peer_first, grades):
    assert lead(has_baseline, has_human, on_slice) == Lead(peer_first, grades)


def test_only_win_rates_with_a_result_are_a_baseline():
    rates = WinRateView("d", "base", None, None, 0, ())
    assert usable_baseline(None) is None
    assert usable_baseline(Unavailable("no baseline")) is None
    assert usable_baseline(rates) is None
    with_result = dataclasses.replace(rates, result=object())
    assert usable_baseline(with_result) is with_result


def _soft_view(tau: float | None, tau_fitted: bool, reference: TauReference | None) -> LeaderboardView:
    table = pd.DataFrame({"model": ["a"], "soft_elo": [1000.0]})
    return LeaderboardView(table, "human", None, "soft", 0.1, tau, tau_fitted, None, reference)


def test_the_tau_line_is_info_inside_the_fit_warning_outside_and_a_notice_without_tau():
    ref = TauReference(0.5, 0.4, 0.6)
    level, text = tau_notice(_soft_view(0.45, False, ref), TauUse(0.45, False, True), None)
    assert level == "info" and "inside the fitted τ's 95% interval" in text
    level, text = tau_notice(_soft_view(2.0, False, ref), TauUse(2.0, False, True), None)
    assert level == "warning" and "outside the fitted τ's 95% interval" in text
    no_tau = _soft_view(None, False, None)
    assert tau_notice(no_tau, TauUse(None, False, True), "no gaps") == ("notice", tau_undefined_notice("no gaps"))
    assert tau_notice(no_tau, TauUse(None, False, False), "no gaps") is None  # no rubric: the slider said why
    assert tau_notice(_soft_view(0.5, True, ref), TauUse(0.5, True, True), None) is None


def test_an_empty_slice_stops_the_page_with_the_views_note_or_the_slice_named():
    empty = _ranked().table.iloc[0:0]
    where = (("category", "a_b"),)
    view = LeaderboardView(empty, "human", None, None, 0.1, None, True, None)
    assert empty_slice_notice(view, where) == "no model can be ranked on the slice category = a\\_b\\."
    noted = dataclasses.replace(view, note="too few battles on b_c")
    assert empty_slice_notice(noted, where) == "too few battles on b\\_c"
    assert empty_slice_notice(view, ()) is None  # the whole dataset: the headline says it
    assert empty_slice_notice(_ranked(), where) is None


def _table_view(n: int, set_apart: int = 0) -> LeaderboardView:
    notes = ["won all its 3 battles"] * set_apart + [""] * (n - set_apart)
    table = pd.DataFrame(
        {
            "model": [f"m{i}" for i in range(n)],
            "family": [None] * n,
            "rank": list(range(1, n + 1)),
            "human_elo": [1000.0 - i for i in range(n)],
            "human_lower": [990.0 - i for i in range(n)],
            "human_upper": [1010.0 - i for i in range(n)],
            "human_elo_note": notes,
            "n_votes": [10] * n,
        }
    )
    return LeaderboardView(table, "human", None, None, 0.1, None, True, None)


def test_the_table_part_caps_the_height_at_ten_rows_and_counts_the_rows_shown():
    view = _table_view(30)
    part = table_part(view, view.table.head(20), (), False)
    assert len(part.table) == 20 and part.height == 35 * 11 + 3
    assert part.rows_note == "20 of 30 models shown."
    small = table_part(view, view.table.head(3), (), False)
    assert small.height == 35 * 4 + 3
    assert table_part(view, view.table, (), False).rows_note is None


def test_presentation_mode_leaves_out_the_caveats_and_the_set_apart_models():
    view = _table_view(4, set_apart=1)
    part = table_part(view, view.table, (), False, ["graph *split*"])
    assert part.issues == ("- graph \\*split\\*",) and part.issues_title == "Read the human Elo with care (1)"
    assert part.apart is not None and part.apart.startswith("Not ranked, with no human Elo\\: 1 model whose")
    assert part.apart.endswith("\\: m0 (won all its 3 battles)\\.")  # escaped: a model's name is imported text
    shown = table_part(view, view.table, (), True, ["graph *split*"])
    assert shown.issues == () and shown.apart is None


def test_the_banner_over_the_chart_is_the_views_note_without_intervals_and_nothing_when_presenting():
    view = dataclasses.replace(_ranked(), note="no judge")
    assert coverage_banner(view, False) == ("warning", "no judge")
    assert coverage_banner(view, True) is None
    assert coverage_banner(_ranked(), False) is None


def test_the_chart_offers_the_rated_and_the_offered_methods_in_the_registrys_order():
    order = list(RATING_METHODS)
    table = pd.DataFrame({"model": ["a"], "hard_elo": [1.0], "human_elo": [2.0]})
    view = LeaderboardView(table, "human", None, None, 0.1, None, True, None)
    offered = [m for m in reversed(order) if m not in ("hard", "human")][:1]
    assert drawable_methods(view) == [m for m in order if m in ("hard", "human")]  # presentation mode
    assert drawable_methods(view, offered) == [m for m in order if m in ("hard", "human", *offered)]


def test_the_rank_slope_draws_the_tables_rows_and_needs_both_judge_elos():
    view = _table_view(5)
    assert slope_models(view, view.table.head(2)) == ("m0", "m1")
    assert slope_models(view, view.table) is None  # every model
    assert not has_rank_slope(view)
    both = dataclasses.replace(view, table=view.table.assign(hard_elo=1.0, soft_elo=2.0))
    assert has_rank_slope(both)


@pytest.mark.parametrize(
    "has_human, judge, on_slice, method",
    [(True, "j", False, "human"), (False, "j", False, "hard"), (False, None, False, None), (True, "j", True, None)],
)
def test_the_by_turn_table_fits_the_human_elo_else_the_judges(has_human, judge, on_slice, method):
    assert turn_method(has_human, judge, on_slice) == method


def test_a_dataset_without_battles_says_whether_its_grades_rank_it():
    assert no_battles_notice("mt_*bench", False) == (
        "dataset **mt\\_\\*bench** has no battles and no grades to rank its models by."
    )
    assert no_battles_notice("mt_bench", True).startswith("no battles: the Elo leaderboards need pairwise")


def test_the_export_title_names_the_slice():
    assert export_title("demo", ()) == "Leaderboard of demo"
    assert export_title("demo", (("language", "de"),)) == "Leaderboard of demo on language = de"
