"""The pages' view models in ``core.app``: the sentences, rows and decisions each page draws, read here without
Streamlit (the pages themselves run through AppTest in tests/test_app.py and the pages' own tests)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from core.app import admin_view as view
from core.app import bias as app_bias
from core.app import judges as app_judges
from core.app.availability import ADD_VOTES
from core.app.page_view import Metric, Notice
from core.judging.config import ConfigError
from core.redact import ADMIN_TOKEN_ENV, KEY_ENV_ALLOW_ENV
from core.simulate import DemoConfig, simulate_arena
from core.stats.consistency import study
from core.stats.ratings import ShuffleStudy
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


# --------------------------------------------------------------------------------------- Judges & annotators


def _contests(judges: list[str], seed: int = 0) -> pd.DataFrame:
    """Each judge picks the same winner for a matchup with its own probability: the later, the less often."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, judge in enumerate(judges):
        for q in range(20):
            for _ in range(4):
                first_wins = rng.random() < 0.95 - 0.1 * k
                rows.append((judge, "m1", "m2", f"q{q}", "m1" if first_wins else "m2"))
    return pd.DataFrame(rows, columns=["judge", "first", "second", "question_id", "winner"])


def test_consistency_is_drawn_against_judge_elo_only_with_three_judges_of_known_elo():
    judges = ["j1", "j2", "j3", "j4"]
    elo = pd.Series([1300.0, 1250.0, 1200.0, 1150.0], index=judges)
    v = app_judges.consistency_view(study(_contests(judges), elo), "the uploaded e.csv")
    assert v.with_elo is not None and len(v.with_elo) == 4 and v.few_elo_notice is None
    assert r"Judge Elo from the uploaded e\.csv; line MAE" in v.how_to_read  # the file name shown as text
    assert list(v.table["judge"]) == list(v.table.sort_values("consistency", ascending=False)["judge"])

    v = app_judges.consistency_view(study(_contests(judges), elo.iloc[:2]), "the uploaded e.csv")
    assert v.with_elo is None and v.few_elo_notice == app_judges.FEW_JUDGE_ELO


def test_on_the_demo_consistency_stands_alone_without_empty_columns(demo):
    known = app_judges.judge_arena_elo(demo, "demo")
    assert isinstance(known, app_judges.Unavailable)  # the demo's judges carry no arena Elo
    v = app_judges.consistency_view(app_judges.consistency_study(demo, "demo", None), None)
    assert v.with_elo is None and v.few_elo_notice == app_judges.FEW_JUDGE_ELO
    assert list(v.table.columns) == ["judge", "consistency", "n_contests", "first_position_win_rate"]
    assert set(v.table["judge"]) == {"judge-position", "judge-strong", "judge-verbose"}


def test_the_vote_sections_say_why_they_are_empty():
    assert app_judges.amelo_missing(100, 5) is None and app_judges.replay_missing(100) is None
    why = app_judges.amelo_missing(100, 0)
    assert why == app_judges.amelo_missing(0, 0)
    assert isinstance(why, Notice) and why.text.startswith("no human votes with annotator ids")
    assert why.fix == f"votes that name their annotator: {ADD_VOTES} (each voter is named there)"
    assert app_judges.replay_missing(0) == Notice("no human votes to replay.", fix=ADD_VOTES)


def _annotators() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "annotator": ["h1", "h2", "f1", "r1", "few"],
            "n_records": [120, 110, 90, 80, 3],
            "ability_rel": [1.1, 0.9, -0.8, 0.05, 0.5],
            "ability_se_rel": [0.1, 0.1, 0.2, 0.3, 1.0],
            "status": ["reliable", "adversarial", "adversarial", "uninformative", "reliable"],
            "anomalous": [False, False, True, False, False],
            "excluded": [False, False, False, False, True],
            "kind": ["honest", "honest", "flipper", "random", "honest"],
            "true_ability": [1.0, 1.0, -1.0, 0.0, 1.0],
        }
    )


def test_the_amelo_view_counts_the_kept_annotators_against_the_simulated_truth():
    v = app_judges.amelo_view(_annotators(), min_records=10)
    assert list(v.kept["annotator"]) == ["h1", "h2", "f1", "r1"]
    assert v.metrics == (
        Metric("adversarial", 2, "ability significantly below zero"),
        Metric("uninformative", 1, "ability indistinguishable from zero given the annotator's votes"),
        Metric("anomalous (paper's rule, ability ≤ 0)", "1 of 4", "1 annotators with fewer than 10 votes left out"),
    )
    assert v.how_to_read.startswith("each point is an annotator with its 95% interval; ability says")
    assert v.truth == (
        "Simulated truth: 1 of 1 simulated flippers flagged adversarial; 1 of 1 simulated randoms flagged "
        "uninformative; 1 of 2 honest annotators flagged."
    )
    csv = v.csv().splitlines()
    assert csv[0].startswith("annotator,votes,ability,ability_lower95,ability_upper95,status")
    assert [row.split(",")[0] for row in csv[1:]] == ["f1", "r1", "h2", "h1"]  # by ability


def test_many_reliable_annotators_are_read_as_a_density():
    from core import charts

    n = charts.WEBGL_ABOVE + 1
    many = pd.DataFrame(
        {
            "annotator": [f"a{k}" for k in range(n)],
            "n_records": 50,
            "ability_rel": 1.0,
            "ability_se_rel": 0.1,
            "status": "reliable",
            "anomalous": False,
            "excluded": False,
        }
    )
    v = app_judges.amelo_view(many, min_records=10)
    assert v.how_to_read.startswith(f"the {n:,} reliable annotators are drawn as a density")
    assert v.truth is None


def test_the_shuffle_reading_states_both_spreads():
    s = ShuffleStudy(pd.DataFrame(), n_shuffles=50, online_spread=12.34, mle_spread=0.0, samples=np.zeros((50, 2)))
    text = app_judges.shuffle_how_to_read(s, 50)
    assert text.startswith("online Elo (K = 4) replayed in 50 random orders of the same votes moves each model by 12.3")
    assert "the maximum-likelihood fit (m-ELO) does not move" in text


# ------------------------------------------------------------------------------------------------------ Admin


def test_the_key_variables_offered_are_the_allowed_ones_with_their_labels(monkeypatch):
    monkeypatch.setenv(KEY_ENV_ALLOW_ENV, "OTHER_KEY")
    labels = view.key_variable_labels(lambda: {"OpenAI": "OPENAI_API_KEY", "admin": ADMIN_TOKEN_ENV})
    assert labels == {"OPENAI_API_KEY": "OpenAI (OPENAI_API_KEY)", "OTHER_KEY": "OTHER_KEY"}

    def no_secrets_file() -> object:
        raise FileNotFoundError("no secrets.toml")

    assert view.key_variable_labels(no_secrets_file) == {"OTHER_KEY": "OTHER_KEY"}
    monkeypatch.delenv(KEY_ENV_ALLOW_ENV)
    assert view.key_variable_labels(lambda: None) == {}
    assert KEY_ENV_ALLOW_ENV in view.no_key_variable("key variable")


def test_the_admin_token_opens_the_page_only_when_given_exactly():
    assert view.token_accepted("s3cret", "s3cret")
    assert not view.token_accepted("", "s3cret") and not view.token_accepted("s3cre", "s3cret")


def test_a_run_line_says_whether_it_works_and_how_it_ended():
    assert view.run_heading("j*1", "d", 42, None) == r"**j\*1** on d · pid 42 · working"
    assert view.run_heading("j", "d", 42, 75).endswith("paused, resumable")
    assert view.run_heading("j", "d", 42, 143).endswith("cancelled")
    assert view.run_heading("j", "d", 42, 3).endswith("ended with exit code 3")
    runs = pd.DataFrame({"run_id": [1], "owner_host": ["box"]})
    assert list(view.runs_table(runs).columns) == ["run_id"]


def test_the_families_are_listed_with_the_missing_ones_said():
    families = pd.DataFrame({"judge": ["a", "b"], "family": ["openai", None]})
    assert view.families_caption(families) == "Known: a → openai, b → not given"
    assert view.family_placeholder(families, "a") == "openai"
    assert view.family_placeholder(families, "b") == "e.g. openai, anthropic, meta"


def _judge_fields(**changes: object) -> dict:
    fields = {
        "name": "my-judge",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "some-model",
        "api_key_env": "",
        "template": "rubric",
        "both_orders": True,
        "concurrency": 16,
        "timeout_s": 60,
        "max_retries": 0,
        "max_calls": 1000,
        "limit": 100,
        "sample": "balanced",
        "price_prompt_per_mtok": None,
        "price_completion_per_mtok": None,
        "max_cost_usd": 0.0,
        "mode": "online",
        "action": "estimate cost",
        "replace_judge": False,
    }
    return {**fields, **changes}


def test_the_judge_form_reads_into_a_configuration_and_what_go_does():
    form = view.judge_form(_judge_fields(), {})
    assert (form.action, form.limit, form.sample, form.replace_judge) == ("estimate cost", 100, "balanced", False)
    assert form.cfg.name == "my-judge" and form.cfg.api_key_env is None and form.cfg.max_cost_usd is None
    with pytest.raises(ConfigError):  # a key variable the server does not allow
        view.judge_form(_judge_fields(api_key_env="HOME"), {})

    calls = []

    def read(fn, *args):
        calls.append(fn.__name__)
        if fn.__name__ == "estimate_plan":
            return SimpleNamespace(defined=100, already_done=40, units=[1] * 60), SimpleNamespace(text=lambda: "$1")
        return "judge 'my-judge' was run with model other-model"

    said = view.judge_form_said(form, "d", read)
    assert said == view.Said("info", "This run covers 100 units; 40 are judged already. The rest: $1.")
    refused = view.judge_form_said(view.judge_form(_judge_fields(action="start run"), {}), "d", read)
    assert refused is not None and refused.level == "warning"
    assert refused.text.startswith(r"judge 'my-judge' was run with model other-model\. Give the run another name")
    replacing = view.judge_form(_judge_fields(action="start run", replace_judge=True), {})
    assert view.judge_form_said(replacing, "d", read) is None  # Go starts the run
    assert calls == ["estimate_plan", "judge_identity_change", "judge_identity_change"]


def test_an_estimate_with_nothing_left_says_so():
    plan = SimpleNamespace(defined=10, already_done=10, units=[])
    assert view.estimate_sentence(plan, SimpleNamespace(text=lambda: "unused")) == (
        "This run covers 10 units; 10 are judged already. Nothing is left to judge."
    )


def test_a_connection_test_result_is_one_redacted_sentence(monkeypatch):
    key = "sk-test-0123456789abcdef0123"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    ok, text = view.connection_result({"ok": True, "model": "m", "latency_ms": 12.4, "logprobs": False})
    assert ok and text == "model m, 12 ms, logprobs not returned"
    ok, text = view.connection_result({"ok": False, "error": f"HTTP 401 *denied* for {key}"})
    assert not ok and text.startswith(r"HTTP 401 \*denied\* for ") and key not in text and "redacted" in text


def test_the_generate_form_reads_into_a_model_and_a_prompt_count():
    fields = {
        "name": "my-model",
        "base_url": "http://localhost:8000/v1",
        "model": "some-model",
        "api_key_env": None,
        "system_prompt": "",
        "temperature": 0.0,
        "max_tokens": 1024,
        "concurrency": 8,
        "limit": 0,
    }
    cfg, limit = view.generation_form(fields, {})
    assert cfg.name == "my-model" and cfg.system_prompt is None and limit is None
    assert view.generation_form({**fields, "limit": 25}, {})[1] == 25
    with pytest.raises(ConfigError, match="one of the server's key variables"):
        view.generation_form({**fields, "api_key_env": "SOME_KEY"}, {})


def test_a_retry_needs_the_judges_stored_configuration_and_names_the_refused_judges():
    failures = pd.DataFrame({"judge": ["b", "a", "b", "c"], "kind": ["call failed", "call failed", "x", "unparseable"]})
    assert view.refused_judges(failures) == ["a", "b"]
    with pytest.raises(ConfigError, match="has no stored configuration"):
        view.retry_config(None, "a", {})
    stored = view.judge_form(_judge_fields(), {}).cfg
    assert view.retry_config(stored, "my-judge", {}) == stored


def test_selective_risk_sentences_name_exactly_the_rules_and_alphas_over_the_target():
    """The warning under the SCOPE risk chart names each (rule, α) whose mean test risk is above α in the table
    drawn, and no other; with none over, it says so; LTT's share over α is listed for each α drawn."""
    from core.app.selective import risk_claims

    rng = np.random.default_rng(3)
    for _ in range(30):
        alphas = np.round(rng.choice(np.arange(0.05, 0.5, 0.05), size=4, replace=False), 2)
        rows = [
            {"method": m, "alpha": a, "risk_mean": a + rng.normal(0, 0.02), "share_over_alpha": rng.random()}
            for m in ("scope", "ltt", "vanilla")
            for a in alphas
        ]
        table = pd.DataFrame(rows)
        said = risk_claims(table, 50, str.upper)
        over = table[table["risk_mean"] > table["alpha"] + 1e-12]
        level, text = said[0]
        if over.empty:
            assert (level, text) == ("caption", "No method's mean test risk exceeds α at any α shown.")
        else:
            assert level == "warning"
            for m in ("scope", "ltt", "vanilla"):
                named = over[over["method"] == m]["alpha"].sort_values()
                if named.empty:
                    assert f"**{m.upper()}**" not in text
                else:
                    assert f"**{m.upper()}** at α = " + ", ".join(f"{a:.2f}" for a in named) in text
        ltt = table[table["method"] == "ltt"].sort_values("alpha")
        assert said[1][0] == "caption" and "of all 50 splits" in said[1][1]
        for a, x in zip(ltt["alpha"], ltt["share_over_alpha"]):
            assert f"α = {a:.2f}: {x:.2f}" in said[1][1]
    assert len(risk_claims(table[table["method"] != "ltt"], 50, str.upper)) == 1  # no LTT drawn, no LTT line


def test_selective_examples_are_the_most_and_least_confident_of_each_side():
    from core.app.selective import EXAMPLE_COLUMNS, examples

    rng = np.random.default_rng(4)
    n = 40
    ex = pd.DataFrame({c: rng.random(n) for c in EXAMPLE_COLUMNS}).assign(accepted=rng.random(n) < 0.5)
    at = SimpleNamespace(examples=ex)
    accepted, abstained = examples(at, n=5)  # type: ignore[arg-type]
    assert list(accepted.columns) == list(EXAMPLE_COLUMNS)
    assert list(accepted["uncertainty"]) == sorted(ex[ex["accepted"]]["uncertainty"])[:5]
    assert list(abstained["uncertainty"]) == sorted(ex[~ex["accepted"]]["uncertainty"], reverse=True)[:5]
    none = examples(SimpleNamespace(examples=ex.assign(accepted=False)))  # type: ignore[arg-type]
    assert none[0].empty and len(none[1]) == 8


# ---------------------------------------------------------------------- Vote
def test_vote_offers_the_queues_that_can_be_filled_and_says_why_not_the_others():
    from core.app import voting

    offer = voting.QueueOffer.of({"scope": "no *judge* probabilities", "calibration": None, "random": None})
    assert offer.kinds == ["calibration", "random"]
    caption = offer.left_out_caption()
    assert caption == f"Not offered here: {voting.QUEUE_TITLES['scope']} (no \\*judge\\* probabilities)"
    assert voting.QueueOffer.of(dict.fromkeys(voting.QUEUES)).left_out_caption() is None
    none = voting.QueueOffer.of({"scope": "a", "random": "b"})
    titles = voting.QUEUE_TITLES
    assert none.kinds == [] and none.none_text() == f"{titles['scope']}: a; {titles['random']}: b"


def test_vote_keeps_the_battle_on_screen_until_it_is_voted_or_skipped():
    from core.app.voting import on_screen, stale_skip

    assert on_screen(None, "random", [5, 6], set(), set()) == ("random", 5)
    assert on_screen(("random", 9), "random", [5, 6], set(), set()) == ("random", 9)  # a re-planned queue
    assert on_screen(("random", 9), "random", [5, 6], {9}, set()) == ("random", 5)  # voted
    assert on_screen(("random", 9), "random", [5, 6], set(), {9}) == ("random", 5)  # skipped
    assert on_screen(("scope", 9), "random", [5, 6], set(), set()) == ("random", 5)  # another queue chosen
    assert stale_skip(4, None) is None and stale_skip(4, 4) is None
    assert stale_skip(4, 7) == (
        "Nothing was skipped: the press reached battle 4's buttons while battle 7 was coming on screen. "
        "Press skip again."
    )


def test_vote_toast_names_the_choice_and_shows_model_names_literally():
    from core.app.voting import stored_toast

    text = stored_toast(12, "gpt-$4$", "m_b", "left", replaced=False)
    assert text == "Stored: battle 12, you chose left (gpt-\\$4\\$). Left was **gpt-\\$4\\$**, right **m\\_b**."
    assert stored_toast(3, "a", "b", "both_bad", replaced=True).startswith("Changed: battle 3, you chose both bad.")


# ------------------------------------------------------------------------------------------------- Overview


def test_the_overview_counts_and_tables_are_the_stores_own_on_the_demo(demo):
    from core.app import overview

    ov = overview.overview(demo, "demo")
    shown = dict(overview.headline(ov))
    battles = demo.battle_frame("demo")
    assert shown["Battles"] == f"{len(battles):,}"
    assert shown["Models"] == str(len(ov.models)) == str(len(set(battles["model_a"]) | set(battles["model_b"])))
    assert shown["Judges"] == str(len(ov.judges))
    assert overview.missing(ov) == []  # the demo has votes and judges
    assert "true_elo" in overview.models_table(ov)  # a simulated arena knows its truth
    orders = overview.judges_table(ov)["orders"]
    assert all(isinstance(o, str) and o for o in orders), orders


def test_the_overview_says_what_a_judge_only_dataset_lacks_and_drops_an_empty_truth():
    from core.app import overview

    models = pd.DataFrame({"model": ["a", "b"], "true_elo": [np.nan, np.nan]})
    info = {"n_models": 2, "n_battles": 1200, "n_human_votes": 0, "n_annotators": 0, "n_prompts": 3, "judges": []}
    empty = pd.DataFrame()
    ov = overview.Overview(empty, info, models, empty, empty, empty)
    assert dict(overview.headline(ov))["Battles"] == "1,200"
    said = overview.missing(ov)
    assert [fix for _, fix in said] == [ADD_VOTES, overview.RUN_JUDGE]
    assert "no human votes" in said[0][0] and "no judge" in said[1][0]
    assert list(overview.models_table(ov).columns) == ["model"]
