"""What the Evaluate page shows: the saved evaluations' table and labels, one evaluation's view (its metrics, its
charts' inputs, its standing then and now, its SCOPE escalations when it ran and at the slider's α), the
configurations the start form makes (and the worker it starts) and the states of the evaluations this server
started.

Text from outside (a model, judge or dataset name, an error, a worker's reason) is redacted here; the page
escapes what it shows as markdown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.app import Unavailable, generation
from core.app.escalation import Escalations
from core.app.evaluate import SavedEvaluation, start_evaluation_worker
from core.app.generation import ModelConfig
from core.app.judging import ConfigError, JudgeConfig, PlanError, from_mapping
from core.app.newmodel import Standing
from core.app.page_view import Metric, Notice
from core.app.safe_text import escape_markdown as esc
from core.app.workers import WorkerProcess
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


def no_evaluations(dataset: str) -> Notice:
    """Why the page lists no evaluation, and how to make one."""
    return Notice(
        f"no model has been evaluated on **{esc(dataset)}** yet.",
        fix="start an evaluation below (it needs the admin token), or run `python -m core evaluate` on this "
        "dataset from a terminal (README, section Evaluate a new model, shows how)",
    )


def saved_labels(saved: pd.DataFrame) -> dict[int, str]:
    """The picker's options: evaluation id → :func:`saved_label`."""
    return {int(r["evaluation_id"]): saved_label(r) for _, r in saved.iterrows()}


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


PLACEMENT_HOW_TO_READ = (
    "dots are the human Elo of the models humans rated (filled: the anchors the new model was judged against); "
    "the diamond is the new model's predicted human Elo and the band its conformal interval. Models inside the "
    "band are those it may rank above or below."
)
ROUNDS_HOW_TO_READ = (
    "each dot is the conformal interval's width after a round of the adaptive design, against the judge calls "
    "spent so far; the dashed line is what the fixed design would have spent, the dotted one the width no number "
    "of calls goes below (the judge–human disagreement)."
)
NO_RATED = "The human Elo of the human-rated models was not saved with this evaluation."


@dataclass(frozen=True)
class SavedView:
    """What the page shows of one saved evaluation, in its order: the standing it found (or why none), its
    design, then the SCOPE escalations it saved and the α slider's start.  Sentences are redacted, not escaped."""

    judge: str
    model: str
    standing: Standing | None
    no_standing: str | None  # the warning when it found no standing
    metrics: list[Metric]
    summary: str  # the standing in one sentence ("" without a standing)
    rated: pd.DataFrame  # model, elo, anchor: the placement chart's dots (empty: ``NO_RATED`` instead)
    design: str
    rounds: pd.DataFrame  # calls, width: the adaptive design's rounds (empty: no chart)
    fixed_calls: int  # what the fixed design would have spent (the rounds chart's dashed line)
    floor_width: float  # the interval's width no number of calls goes below (its dotted line)
    detail: str  # the charts' title detail
    when_run: str | None
    alpha: float  # the escalations slider's start: the evaluation's α within the slider's range


def saved_view(one: SavedEvaluation, alpha_range: tuple[float, float]) -> SavedView:
    """The page's view of ``one``; ``alpha_range``: the SCOPE α slider's (min, max)."""
    row, found = one.row, one.standing
    judge, model = str(row["judge"]), str(row["model"])
    alpha = float(min(max(row["alpha"], alpha_range[0]), alpha_range[1]))
    when_run = escalations_when_run(one.details.get("escalations") or {})
    if found is None:
        no_standing = redact(f"{row['model']}: no standing. {row['reason'] or ''}")
        empty = pd.DataFrame()
        return SavedView(judge, model, None, no_standing, [], "", empty, "", empty, 0, 0.0, "", when_run, alpha)
    metrics = [
        Metric("Predicted human Elo", f"{found.predicted:.0f}"),
        Metric(f"{1 - found.alpha:.0%} conformal interval", f"{found.lower:.0f} – {found.upper:.0f}"),
        Metric("Rank among the human-rated models", f"#{row['rank_best']} – #{row['rank_worst']}"),
    ]
    rounds = one.rounds()
    fixed_calls = int(one.details["adaptive"]["fixed_calls"]) if not rounds.empty else 0
    return SavedView(
        judge,
        model,
        found,
        None,
        metrics,
        redact(found.text()),
        one.rated(),
        redact(one.design_text()),
        rounds,
        fixed_calls,
        2 * (found.floor or 0.0),
        f"α {found.alpha:.2f}",
        when_run,
        alpha,
    )


def escalations_at(found: Escalations, alpha: float) -> tuple[str, pd.DataFrame]:
    """The escalations at the slider's α: the sentence (markdown, escaped) and the table, rounded to read."""
    table = found.frame.assign(p_bar=found.frame["p_bar"].round(3), entropy=found.frame["entropy"].round(3))
    return f"At **α = {alpha:.2f}**: {esc(found.text())}", table


ANSWERS_HELP = "Generated answers are kept: starting the same evaluation again generates only what is missing."
ADAPTIVE_HELP = (
    "A placement, then rounds of the most informative battles until more judge calls cannot narrow the interval "
    "noticeably; never more calls than the fixed design (10 anchors, every shared prompt). In the benchmark it "
    "spent about 5× fewer calls for an interval within 5% of the fixed design's width (docs/benchmarks.md). It "
    "judges only a few anchors, so a judge new to this dataset needs calibration battles for an interval."
)
CALIBRATION_HELP = (
    "Human-voted battles of the rated models the judge also judges (both orders), unless it has: its labels on "
    "them calibrate τ and the interval. 0 when the judge has judged this dataset already."
)


def key_help() -> str:
    """A key variable's help: the names the server allows (the page must not read an arbitrary variable)."""
    return "names must match " + ", ".join(f"`{p}`" for p in key_env_patterns())


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


@dataclass(frozen=True)
class Start:
    """The start form's outcome: the worker started and what the page says (success), or why not (error)."""

    worker: WorkerProcess | None
    message: str


def start(
    db_path: str, dataset: str, fields: Mapping[str, Any], stored_judge: Callable[[str], JudgeConfig | None]
) -> Start:
    """Read the form (:func:`evaluation_form`) and start ``python -m core evaluate`` in a worker process; a bad
    field, an impossible plan or a worker that cannot start is the redacted error instead."""
    try:
        form = evaluation_form(fields, stored_judge)
        worker = start_evaluation_worker(
            db_path,
            dataset,
            form.name,
            form.judge,
            form.model,
            form.budget,
            form.anchors,
            form.alpha,
            form.calibration,
            adaptive=form.adaptive,
        )
    except (ConfigError, PlanError, ValueError, OSError) as exc:
        return Start(None, redact(str(exc)))
    return Start(worker, started(form, dataset))


def started(form: EvaluationForm, dataset: str) -> str:
    return (
        f"Started a worker process evaluating {esc(form.name)} on {esc(dataset)} with judge {esc(form.judge.name)}: "
        "it runs in the background, and its progress shows under *Evaluations started here*."
    )


def worker_state(returncode: int | None) -> str:
    if returncode is None:
        return "working"
    return WORKER_STATES.get(returncode, "stopped by an error (its log below)")
