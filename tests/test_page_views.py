"""The pages' view models in ``core.app``: the sentences, rows and decisions each page draws, read here without
Streamlit (the pages themselves run through AppTest in tests/test_app.py and the pages' own tests)."""

from __future__ import annotations

import pytest

from core.app import bias as app_bias
from core.app.page_view import Metric
from core.simulate import DemoConfig, simulate_arena
from core.store import Store


@pytest.fixture(scope="module")
def demo() -> Store:
    s = Store.open(":memory:")
    s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return s


# ------------------------------------------------------------------------------------------------ Judge bias


def _report(**changes: dict) -> dict:
    """A bias report of a judge seen in both orders, with no style fit, no echo and no family; ``changes``
    replace fields of its sections (a section that is None is replaced whole)."""
    report = {
        "judge": "j",
        "dataset": "d",
        "position": {
            "first_win_rate": 0.6,
            "ci": [0.55, 0.65],
            "n_decisive": 1200,
            "flip_rate": 0.25,
            "n_both_orders": 600,
            "first_score_advantage": 0.4,
            "biased": True,
            "note": None,
            "n_order_merged": 0,
            "n_order_unknown": 0,
            "elo": None,
        },
        "verbosity": {
            "longer_win_rate": 0.5,
            "ci": [0.4, 0.6],
            "n_near_ties": 80,
            "residual_length_partial_r": None,
            "note": None,
            "basis": "near-tie",
        },
        "self_preference": {
            "family": None,
            "excess": None,
            "n_same_family": 0,
            "note": "needs rubric scores from at least two judges on the same answers",
            "elo_excess": None,
            "all_judges": [],
        },
        "echo_intervention": None,
        "style": {"coefficients": [], "n_battles": 0, "leaderboard": [], "note": "no completion lengths"},
        "echo": None,
    }
    for section, values in changes.items():
        report[section] = {**(report[section] or {}), **values}
    return report


def test_the_bias_view_states_each_claim_in_its_section_with_the_metrics_it_rests_on():
    v = app_bias.bias_view(_report())
    assert v.position_metrics == (
        Metric("first-shown answer wins", "60.0%", "over 1,200 decisive verdicts"),
        Metric("verdict flips when the order is swapped", "25.0%", "over 600 battles judged in both orders"),
        Metric("rubric points gained by going first", "+0.40", None),
    )
    assert v.position_claims == (
        (
            "warning",
            "Position bias: the judge picks the first-shown answer in 60.0% of 1,200 decisive verdicts; "
            "the 95% interval (0.550–0.650) excludes 0.5.",
        ),
    )
    assert v.verbosity_metric == Metric("longer answer wins near-ties", "50.0%")
    assert v.verbosity_claims == (
        ("caption", "The longer answer wins 50.0% of 80 near-tie battles (|gap| < 0.5; 95% interval 0.400–0.600)."),
    )
    assert [level for level, _ in v.self_preference_claims] == ["info"]
    assert v.self_preference_claims[0][1].startswith("Self-preference needs the judge's family")
    # the style note is the style section's notice, said once; with no fit there is nothing to draw
    assert v.style_note == "no completion lengths" and v.style_coefficients is None
    assert all("no completion lengths" not in text for _, text in v.position_claims + v.verbosity_claims)
    assert v.echo_notice == app_bias.NO_ECHO_INFORMATION and not v.echo_shown and v.intervention is None


def test_undefined_shares_are_dashes_and_their_help_says_why():
    v = app_bias.bias_view(
        _report(
            position={
                "first_win_rate": float("nan"),
                "n_decisive": 0,
                "n_order_unknown": 30,
                "flip_rate": None,
                "n_both_orders": 0,
                "first_score_advantage": None,
                "biased": False,
            },
            verbosity={"longer_win_rate": None, "n_near_ties": 0, "basis": "decisive"},
        )
    )
    assert v.position_metrics == (
        Metric("first-shown answer wins", "—", "the shown order of the decisive verdicts is unknown"),
        Metric("verdict flips when the order is swapped", "—", None),
        Metric("rubric points gained by going first", "—", None),
    )
    assert v.verbosity_metric == Metric("longer answer wins decisive verdicts", "—")
    assert v.verbosity_claims == (("info", "No near-tie battles (|gap| < 0.5) to measure verbosity on."),)


def test_the_style_section_lists_the_models_whose_rank_moves_largest_first():
    style = {
        "coefficients": [{"feature": "length", "coef": 0.3, "lower": 0.1, "upper": 0.5}],
        "n_battles": 4321,
        "leaderboard": [
            {"model": "a", "elo_raw": 1510.0, "elo_controlled": 1490.0, "moved": -1},
            {"model": "b", "elo_raw": 1500.0, "elo_controlled": 1500.0, "moved": 0},
            {"model": "c", "elo_raw": 1490.0, "elo_controlled": 1520.0, "moved": 3},
        ],
        "note": None,
    }
    v = app_bias.bias_view(_report(style=style))
    assert v.style_note is None and v.style_coefficients is not None
    assert list(v.style_moved.iloc[:, 0]) == ["c", "a"]
    assert v.style_caption == (
        "The 2 models whose rank changes once style is controlled for (positive: moves up); 4,321 battles in the fit."
    )
    still = {**style, "leaderboard": [{**row, "moved": 0} for row in style["leaderboard"]]}
    v = app_bias.bias_view(_report(style=still))
    assert v.style_moved.empty and v.style_caption == app_bias.NO_RANK_CHANGE


def test_echo_draws_only_what_there_is():
    echo = {
        "rates": [{"model": "a", "echo_rate": 0.0}, {"model": "b", "echo_rate": 0.0}],
        "preference": [{"pairs": "a vs b", "echoing_side_win_rate": None, "lower": None, "upper": None}],
        "note": "few battles where one side echoes",
    }
    v = app_bias.bias_view(_report(echo=echo))
    assert v.echo_notice is None and v.echo_shown
    assert v.echo_rates is None and v.echo_preference is None  # no model echoes: a caption, no empty charts
    assert v.echo_note == "few battles where one side echoes"


def test_on_the_demo_the_bias_view_says_what_the_report_claims_once_each(demo):
    report = app_bias.bias_report(demo, "demo", "judge-position")
    v = app_bias.bias_view(report)
    p = report["position"]
    assert v.position_metrics[0].value == f"{p['first_win_rate']:.1%}"
    assert v.position_metrics[0].help == f"over {p['n_decisive']:,} decisive verdicts"
    assert v.position_claims[0][0] == "warning" and v.position_claims[0][1].startswith("Position bias")
    said = v.position_claims + v.verbosity_claims + v.self_preference_claims
    assert sorted(said) == sorted(c for c in app_bias.claims(report) if c[1] != report["style"]["note"])
    # the simulated judge re-judged the demo's battles with echo added: the chart's reading names how many
    assert v.intervention is not None and v.echo_notice is None
    n = int(report["echo_intervention"][0]["n_battles"])
    assert v.intervention_how_to_read.startswith(f"{n} battles re-judged by the simulated judge as they are")
    assert set(v.intervention["variant"]) == {"as judged", "echo added to answer a", "echo added to answer b"}
