"""What the Evaluate page shows: the saved evaluations' table and labels, the sentences on one evaluation (its
standing then and now, its SCOPE escalations when it ran), the configurations the start form makes and the
states of the evaluations this server started.

Text from outside (a model, judge or dataset name, an error, a worker's reason) is redacted here; the page
escapes what it shows as markdown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.app import Unavailable, generation
from core.app.generation import ModelConfig
from core.app.judging import ConfigError, JudgeConfig, from_mapping
from core.app.newmodel import Standing
from core.app.safe_text import escape_markdown as esc
from core.redact import key_env_allowed, key_env_patterns, redact

SAVED_COLUMNS = ("evaluation_id", "model", "judge", "alpha", "status", "predicted", "lower", "upper")
GENERATE = "generate from an endpoint"
REGISTERED = "a registered judge"
WORKER_STATES = {0: "finished: select it above", 143: "cancelled"}  # a worker's exit codes (core.app.workers)


def saved_table(saved: pd.DataFrame) -> pd.DataFrame:
    """The saved evaluations as the page lists them: rank ranges as "#b–#w", the reason redacted, Elo whole."""
    shown = saved[list(SAVED_COLUMNS)].copy()
    shown["ranks"] = [
        f"#{int(b)}–#{int(w)}" if pd.notna(b) else "" for b, w in zip(saved["rank_best"], saved["rank_worst"])
    ]
    shown["note"] = saved["reason"].fillna("").map(redact)
    shown["created_at"] = saved["created_at"]
    return shown.round({"predicted": 0, "lower": 0, "upper": 0})


def saved_label(row: pd.Series) -> str:
    """One saved evaluation in the picker: id, model, judge, α and when it ran."""
    when = pd.Timestamp(row["created_at"]).strftime("%Y-%m-%d %H:%M")
    return f"#{row['evaluation_id']} {row['model']} · judge {row['judge']} · α={row['alpha']:.2f} · {when}"


def now_statement(row: Mapping[str, Any], then: Standing, now: Standing | Unavailable) -> tuple[str, str] | None:
    """(level, redacted sentence) on the model's standing on the Leaderboard now, beside the saved one: a
    caption when it cannot be computed, a notice when the data changed it, nothing when it is the same."""
    if not isinstance(now, Standing):
        return "caption", redact(f"On the Leaderboard now (judge {row['judge']}, fitted τ): {now.reason}.")
    if (now.predicted, now.lower, now.upper) == (then.predicted, then.lower, then.upper):
        return None
    return "info", redact(
        f"On the Leaderboard now (judge {row['judge']}, fitted τ, α = {then.alpha:.2f}; the data changed since "
        f"this evaluation ran): {now.text()}"
    )


def escalations_when_run(stored: Mapping[str, Any]) -> str | None:
    """The SCOPE escalations the evaluation saved when it ran, as one redacted sentence (None: none saved)."""
    if "n_escalated" in stored:
        return redact(f"When it ran (α = {stored['alpha']:.2f}): {stored['text']}")
    if "unavailable" in stored:
        return redact(f"When it ran: no SCOPE escalations ({stored['unavailable']}).")
    return None


@dataclass(frozen=True)
class EvaluationForm:
    """What the start form asks for, validated: the worker's arguments."""

    name: str
    model: ModelConfig | None  # None: the model's answers are already imported
    judge: JudgeConfig
    budget: int
    anchors: int
    alpha: float
    calibration: int
    adaptive: bool


def evaluation_form(fields: Mapping[str, Any], stored_judge: Callable[[str], JudgeConfig | None]) -> EvaluationForm:
    """The start form's fields read (ConfigError naming what is wrong). ``stored_judge(name)``: a registered
    judge's stored configuration, None when it has none (its judgments were imported)."""
    model = None
    if fields["answers"] == GENERATE:
        # the same allow-list as a judge's key variable: the page must not read an arbitrary server variable
        if fields["m_key"] and not key_env_allowed(fields["m_key"]):
            raise ConfigError(
                "the model endpoint: key 'api_key_env' must name a variable matching " + ", ".join(key_env_patterns())
            )
        model = generation.model_config(
            {
                "name": fields["name"],
                "base_url": fields["m_url"],
                "model": fields["m_model"],
                "api_key_env": fields["m_key"] or None,
                "max_tokens": int(fields["m_max"]),
            },
            "the model endpoint",
        )
    if fields["judge_from"] == REGISTERED:
        registered = fields["registered"]
        stored = stored_judge(registered)
        if stored is None:
            raise ConfigError(
                f"judge {registered!r} has no stored configuration (its judgments were imported): "
                "enter a judge endpoint instead"
            )
        judge = from_mapping(stored.to_store(), f"the stored configuration of {registered!r}", form=True)
    else:
        judge = from_mapping(
            {
                "name": fields["j_name"],
                "base_url": fields["j_url"],
                "model": fields["j_model"],
                "template": fields["j_template"],
                "api_key_env": fields["j_key"] or None,
            },
            "the judge endpoint",
            form=True,
        )
    return EvaluationForm(
        fields["name"],
        model,
        judge,
        int(fields["budget"]),
        int(fields["anchors"]),
        float(fields["alpha"]),
        int(fields["calibration"]),
        bool(fields["adaptive"]),
    )


def started(form: EvaluationForm, dataset: str) -> str:
    return (
        f"Started a worker process evaluating {esc(form.name)} on {esc(dataset)} with judge {esc(form.judge.name)}: "
        "it runs in the background, and its progress shows under *Evaluations started here*."
    )


def worker_state(returncode: int | None) -> str:
    if returncode is None:
        return "working"
    return WORKER_STATES.get(returncode, "stopped by an error (its log below)")
