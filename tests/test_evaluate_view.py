"""What the Evaluate page shows of a saved evaluation and what its start form does, read without Streamlit
(``core.app.evaluate_view``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.app import evaluate_view as ev
from core.app.escalation import Escalations
from core.app.evaluate import SavedEvaluation
from core.app.judging import TEMPLATES
from core.app.page_view import Metric
from core.judging.config import ConfigError
from core.redact import KEY_ENV_ALLOW_ENV
from core.stats.selective import Threshold

KEY = "sk-test-" + "ev4l" * 10
RANGE = (0.05, 0.3)


def _row(**over: object) -> dict:
    row = {
        "evaluation_id": 7,
        "model": "new-model",
        "judge": "J",
        "method": "soft",
        "status": "placed",
        "predicted": 1012.4,
        "lower": 950.6,
        "upper": 1070.2,
        "alpha": 0.1,
        "n_judged": 120,
        "n_calibration": 9,
        "n_rated": 10,
        "rank_best": 3,
        "rank_worst": 6,
        "reason": None,
    }
    return {**row, **over}


def test_no_evaluation_yet_names_the_dataset_as_text_and_says_how_to_make_one():
    said = ev.no_evaluations("arena_*2024*")
    assert said.text == "no model has been evaluated on **arena\\_\\*2024\\*** yet."
    assert said.fix is not None and "python -m core evaluate" in said.fix


def test_the_picker_lists_each_saved_evaluation_by_its_id():
    saved = pd.DataFrame(
        {
            "evaluation_id": [9, 4],
            "model": ["m9", "m4"],
            "judge": ["J", "K"],
            "alpha": [0.1, 0.25],
            "created_at": pd.to_datetime(["2026-11-28 10:05", "2026-11-01 08:00"]),
        }
    )
    assert ev.saved_labels(saved) == {
        9: "#9 m9 · judge J · α=0.10 · 2026-11-28 10:05",
        4: "#4 m4 · judge K · α=0.25 · 2026-11-01 08:00",
    }


def test_a_placed_fixed_design_evaluation_shows_its_metrics_placement_and_design():
    details = {
        "design": "fixed",
        "plan_rule": "10 anchors",
        "judge_calls": 240,
        "rated": [{"model": "a", "elo": 1000.0}, {"model": "b", "elo": 1100.0}],
        "anchors": ["b"],
        "escalations": {"n_escalated": 4, "alpha": 0.1, "text": "4 battles"},
    }
    seen = ev.saved_view(SavedEvaluation(_row(), details), RANGE)
    assert seen.no_standing is None and seen.standing is not None
    assert (seen.judge, seen.model) == ("J", "new-model")
    assert seen.metrics == [
        Metric("Predicted human Elo", "1012"),
        Metric("90% conformal interval", "951 – 1070"),
        Metric("Rank among the human-rated models", "#3 – #6"),
    ]
    assert seen.summary.startswith("new-model: predicted human Elo 1012, 90% conformal interval 951–1070")
    assert list(seen.rated["anchor"]) == [False, True]
    assert seen.design == "Design: fixed (10 anchors); 240 judge calls made."
    assert seen.rounds.empty and seen.detail == "α 0.10"
    assert seen.when_run == "When it ran (α = 0.10): 4 battles"
    assert seen.alpha == 0.1


def test_an_adaptive_evaluation_gives_its_rounds_chart_the_fixed_design_and_the_floor():
    adaptive = {
        "calls": 84,
        "fixed_calls": 240,
        "rounds": [{"calls": 20, "width": 150.0}, {"calls": 84, "width": 90.0}],
        "stop_text": "the floor was reached",
    }
    details = {"design": "adaptive", "adaptive": adaptive, "floor": 30.0}
    seen = ev.saved_view(SavedEvaluation(_row(alpha=0.5), details), RANGE)
    assert list(seen.rounds["width"]) == [150.0, 90.0]
    assert seen.fixed_calls == 240 and seen.floor_width == 60.0  # the floor is a half-width: ± 30 Elo
    assert "stopped because the floor was reached" in seen.design
    assert seen.rated.empty  # evaluations saved before the rated models were kept: a caption instead
    assert seen.when_run is None
    assert seen.alpha == RANGE[1]  # the saved α, within the slider's range


def test_an_evaluation_without_a_standing_says_why_with_its_keys_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    failed = _row(status="failed", reason=f"401 for key {KEY}", alpha=0.01)
    seen = ev.saved_view(SavedEvaluation(failed, {"escalations": {"unavailable": "no votes"}}), RANGE)
    assert seen.standing is None and seen.metrics == []
    assert seen.no_standing is not None and seen.no_standing.startswith("new-model: no standing. 401 for key ")
    assert KEY not in seen.no_standing
    assert seen.when_run == "When it ran: no SCOPE escalations (no votes)."
    assert seen.alpha == RANGE[0]


def test_the_escalations_at_the_sliders_alpha_are_one_sentence_and_a_rounded_table():
    frame = pd.DataFrame({"battle_id": [3, 1], "p_bar": [0.51234, 0.4444], "entropy": [0.69312, 0.6871]})
    threshold = Threshold("scope", 0.1, 0.1, float("-inf"), 50, 0, 0, "too few votes")
    found = Escalations(frame, threshold, 2, 0.1, "bpe", "judge_*x*")
    said, table = ev.escalations_at(found, 0.1)
    assert said.startswith("At **α = 0.10**: SCOPE at α=0\\.10 accepts no judgment (too few votes)")
    assert "judge\\_\\*x\\*" in said and "*x*" not in said  # the sentence, the judge's name in it, as text
    assert list(table["p_bar"]) == [0.512, 0.444] and list(table["entropy"]) == [0.693, 0.687]
    assert list(table["battle_id"]) == [3, 1]


def _fields(**over: object) -> dict:
    base = {
        "name": "new",
        "answers": "already imported",
        "m_url": "http://localhost:8000/v1",
        "m_model": "some-model",
        "m_key": "",
        "m_max": 512,
        "judge_from": "a new judge endpoint",
        "registered": "(none)",
        "j_name": "my-judge",
        "j_url": "http://127.0.0.1:8000/v1",
        "j_model": "judge-model",
        "j_template": TEMPLATES[0],
        "j_key": "",
        "budget": 200,
        "anchors": 10,
        "alpha": 0.1,
        "calibration": 0,
        "adaptive": True,
    }
    return {**base, **over}


def test_starting_an_evaluation_starts_one_worker_or_says_why_not(monkeypatch):
    monkeypatch.delenv(KEY_ENV_ALLOW_ENV, raising=False)
    calls: list[tuple] = []

    def fake_worker(*args: object, **kwargs: object) -> str:
        calls.append((args, kwargs))
        return "the worker"

    monkeypatch.setattr(ev, "start_evaluation_worker", fake_worker)
    bad = ev.start("db.duckdb", "demo", _fields(j_key="HOME"), lambda j: None)
    assert bad.worker is None and "'api_key_env'" in bad.message and not calls
    unregistered = ev.start("db.duckdb", "demo", _fields(judge_from=ev.REGISTERED), lambda j: None)
    assert unregistered.worker is None and "has no stored configuration" in unregistered.message
    ok = ev.start("db.duckdb", "demo", _fields(budget="300", adaptive=False), lambda j: None)
    assert ok.worker == "the worker"
    assert ok.message.startswith("Started a worker process evaluating new on demo with judge my-judge")
    ((args, kwargs),) = calls
    assert args[:3] == ("db.duckdb", "demo", "new") and args[5:] == (300, 10, 0.1, 0)
    assert kwargs == {"adaptive": False}


def test_a_worker_that_cannot_start_is_an_error_with_its_keys_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def no_worker(*args: object, **kwargs: object) -> None:
        raise OSError(f"cannot spawn with {KEY}")

    monkeypatch.setattr(ev, "start_evaluation_worker", no_worker)
    failed = ev.start("db.duckdb", "demo", _fields(), lambda j: None)
    assert failed.worker is None and failed.message.startswith("cannot spawn with ") and KEY not in failed.message


def test_a_key_variables_help_names_the_variables_the_server_allows(monkeypatch):
    monkeypatch.setenv(KEY_ENV_ALLOW_ENV, "MY_JUDGE_KEY, OTHER_KEY")
    assert ev.key_help() == "names must match `MY_JUDGE_KEY`, `OTHER_KEY`"


def _standing(predicted: float, lower: float, upper: float) -> object:
    from core.app.newmodel import Standing

    return Standing("new", "soft", predicted, lower, upper, 0.1, 400, 30, 2, 5, 12)


def test_evaluate_lists_saved_evaluations_with_rank_ranges_and_redacted_reasons(monkeypatch):

    key = "sk-test-" + "k3y" * 12
    monkeypatch.setenv("OPENAI_API_KEY", key)  # a secret the server holds: redacted wherever it is quoted
    saved = pd.DataFrame(
        {
            "evaluation_id": [2, 1],
            "model": ["m2", "m1"],
            "judge": ["J", "J"],
            "alpha": [0.1, 0.2],
            "status": ["done", "failed"],
            "predicted": [1012.4, np.nan],
            "lower": [950.6, np.nan],
            "upper": [1070.2, np.nan],
            "rank_best": [3, np.nan],
            "rank_worst": [7, np.nan],
            "reason": [None, f"401: bad key {key}"],
            "created_at": pd.to_datetime(["2026-11-28 10:05:59", "2026-11-27 09:00:00"]),
        }
    )
    shown = ev.saved_table(saved)
    assert list(shown["ranks"]) == ["#3–#7", ""]
    assert shown["predicted"].iloc[0] == 1012 and shown["upper"].iloc[0] == 1070
    assert key not in shown["note"].iloc[1] and shown["note"].iloc[0] == ""
    assert ev.saved_label(saved.iloc[0]) == "#2 m2 · judge J · α=0.10 · 2026-11-28 10:05"


def test_evaluate_says_the_standing_now_only_when_it_differs():
    from core.app import Unavailable

    row = {"judge": "J"}
    then = _standing(1000, 950, 1050)
    assert ev.now_statement(row, then, _standing(1000, 950, 1050)) is None  # type: ignore[arg-type]
    level, text = ev.now_statement(row, then, _standing(1010, 955, 1065))  # type: ignore[arg-type,misc]
    assert level == "info" and "the data changed since this evaluation ran" in text and "α = 0.10" in text
    level, text = ev.now_statement(row, then, Unavailable("no judge Elo"))  # type: ignore[arg-type,misc]
    assert (level, text) == ("caption", "On the Leaderboard now (judge J, fitted τ): no judge Elo.")
    assert ev.escalations_when_run({}) is None
    assert ev.escalations_when_run({"unavailable": "no votes"}) == "When it ran: no SCOPE escalations (no votes)."
    said = ev.escalations_when_run({"n_escalated": 4, "alpha": 0.1, "text": "4 battles"})
    assert said == "When it ran (α = 0.10): 4 battles"


def test_evaluate_form_makes_the_worker_arguments_and_names_what_is_wrong(monkeypatch):

    monkeypatch.delenv(KEY_ENV_ALLOW_ENV, raising=False)
    template = TEMPLATES[0]
    form = ev.evaluation_form(_fields(j_template=template, budget="300"), lambda j: None)
    assert form.model is None and form.judge.name == "my-judge" and form.judge.template == template
    assert (form.budget, form.anchors, form.alpha, form.adaptive) == (300, 10, 0.1, True)
    generated = ev.evaluation_form(_fields(j_template=template, answers=ev.GENERATE), lambda j: None)
    assert generated.model is not None and generated.model.max_tokens == 512 and generated.model.name == "new"
    with pytest.raises(ConfigError, match="'api_key_env' must name a variable matching"):
        ev.evaluation_form(_fields(j_template=template, answers=ev.GENERATE, m_key="HOME"), lambda j: None)
    with pytest.raises(ConfigError, match="judge '\\(none\\)' has no stored configuration"):
        ev.evaluation_form(_fields(judge_from=ev.REGISTERED), lambda j: None)
    assert [ev.worker_state(c) for c in (None, 0, 143, 1)] == [
        "working",
        "finished: select it above",
        "cancelled",
        "stopped by an error (its log below)",
    ]
