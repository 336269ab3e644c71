"""What the Admin page shows: its gate's notices, the key variables it offers, the configurations its forms
make, and the sentences on runs, estimates and failures.

Text from outside (an imported judge or dataset name, an endpoint's answer, an error) is escaped where the page
shows it as markdown; an answer or an error, which may quote a key, is redacted too.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from core.app import generation, judging
from core.app.judging import ConfigError, JudgeConfig, RunEstimate, RunPlan, connection_test, from_mapping
from core.app.safe_text import escape_markdown as esc
from core.redact import ADMIN_TOKEN_ENV, KEY_ENV_ALLOW_ENV, key_env_allow_list, key_env_allowed, key_env_names, redact

TOKEN_DISABLED = (
    f"the admin page is disabled. Set the environment variable `{ADMIN_TOKEN_ENV}` (or `admin_token` "
    "in `.streamlit/secrets.toml`) before starting the app to enable it, or configure sign-in "
    "(README: Serving others)."
)
NO_DATASET = "no dataset to judge yet: import one (e.g. an Arena-Hard directory) first."
# the judge form's longer labels and its helps: wording the page shows, kept with its other sentences
PRICE_PROMPT_LABEL = "USD per million prompt tokens (optional, for the cost column)"
MAX_COST_LABEL = "hard budget in USD (optional; needs both prices)"
REPLACE_LABEL = "this configuration replaces the existing judge of this name"
KEY_FIELD_HELP = "The server's operator chose these variables; the key's value stays on the server."
LIMIT_HELP = (
    "The first units (battle × order) in a fixed order, or of the balanced sample. Starting the same "
    "run again completes exactly this set: units judged before are not judged again, and no more are added."
)
MAX_COST_HELP = "No call starts whose reserved cost (its prompt and max_tokens of answer) would pass it."
MODE_HELP = (
    "batch: the OpenAI Batch API (/v1/files, /v1/batches; about half the price, results within 24 h). "
    "The run submits, waits up to 10 minutes, then pauses; starting the same run again collects the batch."
)
REPLACE_HELP = (
    "A judge's name is its identity. A run whose model, template, prompt version or sampling differ "
    "from the stored judge's would change what that judge's leaderboard reads, so it is refused unless "
    "this is ticked. Another base URL, budget or price is the same judge."
)
FAMILY_HELP = (
    "Lowercase letters, digits, '-', '_' or '.', as the models' families are named, "
    "so the Judge bias page can compare a judge's verdicts on its own "
    "family's models with other judges' verdicts on them."
)
GENERATE_CAPTION = (
    "A new model's answers to this dataset's prompts (one per prompt and settings; starting it again completes "
    "what is missing). They become its completions: plan battles against anchors, judge them, and read its "
    "standing (README: the loop for a new model)."
)
FAILURES_CAPTION = (
    "'call failed': the endpoint refused the call (a 4xx); nothing was judged. 'unparseable': the judge "
    "answered but no verdict could be read; its raw output is kept and never deleted."
)
NO_FAMILY_JUDGE = "No judge has judged this dataset yet."
NO_RUN_STARTED = "No run started from this server process."
RUN_STATES = {0: "finished", 75: "paused, resumable", 143: "cancelled"}  # a worker's exit codes (core.app.workers)
RUNS_SHOWN = 5  # the newest runs this server started whose logs the page follows


def key_variable_labels(read_configured: Callable[[], Any]) -> dict[str, str]:
    """The key variables the dashboard may use (variable → label), from ``[judge_keys]`` of the server's
    secrets as ``read_configured`` returns it (a table label → variable, or a list of variables; None: none)
    and ``ARENA_KEY_ENV_ALLOW``.  Only the names: the values stay in the environment, read by the worker."""
    try:
        configured = read_configured()
    except Exception:  # the secrets' reader raises when the server has no secrets file: then none is configured
        configured = None
    labels: dict[str, str] = {}
    if configured is not None and hasattr(configured, "items"):
        for label, name in configured.items():
            if name in key_env_names([name]):
                labels.setdefault(name, f"{label} ({name})")
    names = key_env_allow_list(key_env_names(configured))
    return {name: labels.get(name, name) for name in names}


def token_accepted(given: str, token: str) -> bool:
    """Whether the admin token given matches the server's (compared in constant time: no timing oracle)."""
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


def no_key_variable(label: str) -> str:
    """The caption in place of a key field when the server allows no key variable: how to allow one."""
    return (
        f"{label}: none (this server lets the dashboard use no key variable). The server's operator lists the "
        f"allowed ones in `[judge_keys]` of `.streamlit/secrets.toml` or in `{KEY_ENV_ALLOW_ENV}` "
        "(comma-separated names) before starting the app."
    )


def run_heading(judge: str, dataset: str, pid: int, returncode: int | None) -> str:
    """One started run's line: what it judges and whether it still works."""
    state = "working" if returncode is None else RUN_STATES.get(returncode, f"ended with exit code {returncode}")
    return f"**{esc(judge)}** on {esc(dataset)} · pid {pid} · {state}"


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The run list as shown: which host owns a run is the workers' business, not the reader's."""
    return runs.drop(columns=["owner_host"], errors="ignore")


def family_placeholder(families: pd.DataFrame, judge: str) -> str:
    """The family field's placeholder: the judge's known family, else examples."""
    known = families.set_index("judge")["family"].get(judge)
    return str(known) if isinstance(known, str) else "e.g. openai, anthropic, meta"


def families_caption(families: pd.DataFrame) -> str:
    return "Known: " + ", ".join(
        f"{esc(j)} → {esc(f) if isinstance(f, str) else 'not given'}" for j, f in families.itertuples(False)
    )


@dataclass(frozen=True)
class JudgeForm:
    """The Admin page's judge form once read: the run's configuration and what Go does with it."""

    cfg: JudgeConfig
    action: str  # "test connection", "estimate cost" or "start run"
    limit: int  # the units the run covers
    sample: str  # "all" or "balanced"
    replace_judge: bool  # the configuration may replace the stored judge of its name


RUN_FIELDS = ("action", "limit", "sample", "replace_judge")  # the form's fields that are not the configuration's


def family_saved(judge: str, family: str) -> str:
    return f"{esc(judge)}: family {esc(family.strip())}."


def family_refused(exc: Exception) -> str:
    """Why a family was not saved (the error may quote the name typed: redacted, shown as text)."""
    return esc(redact(str(exc)))


def judge_form(fields: Mapping[str, Any], key_variables: Iterable[str]) -> JudgeForm:
    """The judge form's fields read (ConfigError naming what is wrong).

    An empty key variable or hard budget means none; the key variable must be one the server allows.
    """
    config = {k: v for k, v in fields.items() if k not in RUN_FIELDS}
    cfg = from_mapping(
        {
            **config,
            "api_key_env": config["api_key_env"] or None,
            "concurrency": int(config["concurrency"]),
            "timeout_s": float(config["timeout_s"]),
            "max_retries": int(config["max_retries"]),
            "max_calls": int(config["max_calls"]),
            "max_cost_usd": config["max_cost_usd"] or None,
        },
        "the form",
        form=True,
        key_envs=key_variables,
    )
    return JudgeForm(cfg, fields["action"], int(fields["limit"]), fields["sample"], bool(fields["replace_judge"]))


@dataclass(frozen=True)
class Said:
    """A sentence for the page and its register (the Streamlit element that shows it)."""

    level: Literal["success", "error", "info", "warning"]
    text: str


def judge_form_said(form: JudgeForm, dataset: str, read: Callable[..., Any]) -> Said | None:
    """What pressing Go says; None: start the run.  ``read(fn, *args)`` is ``fn(store, *args)`` in a brief
    read of the store (the page's ``read_store``), so the connection test holds no store open."""
    if form.action == "test connection":
        ok, text = connection_result(connection_test(form.cfg))
        return Said("success" if ok else "error", text)
    if form.action == "estimate cost":
        plan, estimate = read(judging.estimate_plan, dataset, form.cfg, form.limit, form.sample)
        return Said("info", estimate_sentence(plan, estimate))
    change = read(judging.judge_identity_change, form.cfg)
    if change is not None and not form.replace_judge:
        return Said("warning", identity_refusal(change))
    return None


def connection_result(result: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether a connection test succeeded, and what to say (redacted, escaped)."""
    if not result["ok"]:
        return False, esc(redact(result["error"]))
    return True, esc(
        redact(
            f"model {result.get('model')}, {result.get('latency_ms', 0):.0f} ms, logprobs "
            f"{'returned' if result.get('logprobs') else 'not returned'}"
        )
    )


def estimate_sentence(plan: RunPlan, estimate: RunEstimate) -> str:
    """What a run would cover and cost."""
    return redact(
        f"This run covers {plan.defined:,} units; {plan.already_done:,} are judged already. "
        + (f"The rest: {estimate.text()}." if plan.units else "Nothing is left to judge.")
    )


def identity_refusal(change: str) -> str:
    """Why a run that would change the stored judge of its name is not started, and the two ways on."""
    return (
        esc(f"{change}.") + " Give the run another name, or tick *this configuration replaces the existing judge "
        "of this name* and press Go again."
    )


def started(pid: int, judge: str, dataset: str) -> str:
    return f"Started a worker process (pid {pid}) for {esc(judge)} on {esc(dataset)}."


def generation_form(
    fields: Mapping[str, Any], key_variables: Iterable[str]
) -> tuple[generation.ModelConfig, int | None]:
    """The model configuration of the Generate form's fields, and how many prompts it answers (None: all);
    ConfigError naming what is wrong."""
    key = fields["api_key_env"]
    if key and not key_env_allowed(key, key_variables):
        raise ConfigError("the key variable must be one of the server's key variables")
    config = {k: v for k, v in fields.items() if k != "limit"}
    cfg = generation.model_config(
        {
            **config,
            "api_key_env": key or None,
            "system_prompt": fields["system_prompt"] or None,
            "temperature": float(fields["temperature"]),
            "max_tokens": int(fields["max_tokens"]),
            "concurrency": int(fields["concurrency"]),
        },
        "the form",
    )
    return cfg, int(fields["limit"]) or None


def generation_started(pid: int, model: str, dataset: str) -> str:
    return f"Started a worker process (pid {pid}) generating {esc(model)}'s answers on {esc(dataset)}."


def refused_judges(failures: pd.DataFrame) -> list[str]:
    """The judges with calls the endpoint refused, which a retry can run again (sorted)."""
    return sorted(failures.loc[failures["kind"] == "call failed", "judge"].unique())


def retry_config(stored: JudgeConfig | None, judge: str, key_variables: Iterable[str]) -> JudgeConfig:
    """The configuration a retry of ``judge``'s refused calls runs with: its stored one, under the page's rules
    (its key variable must be allowed here too).  ConfigError when there is none or it breaks them."""
    if stored is None:
        raise ConfigError(f"judge {esc(repr(judge))} has no stored configuration to run it with")
    return from_mapping(stored.to_store(), f"the stored configuration of {judge!r}", form=True, key_envs=key_variables)
