"""Admin: configure a judge, test the connection, start and watch judge runs (admin role or token protected).

With sign-in configured (``[auth]``), the admin role opens the page and no token is asked; without it, the
admin token does.

Runs execute in worker processes (``core.app.judging.start_worker``): this
server only starts them, reads their logs and signals them, so browsing stays
fast and the run keeps its speed.  Every text shown passes ``core.redact``.
"""

import hmac
from typing import Any

import pandas as pd
import streamlit as st

from app_pages._access import access, configured_admin_token, forbidden
from app_pages._selection import selection
from app_pages._store import db_path, read_store, store_available
from app_pages._widgets import notice, page_guard
from core.app import StoreError, generation, judging
from core.app.access import ADMIN
from core.app.judging import TEMPLATES, ConfigError, PlanError, WorkerProcess, connection_test, from_mapping
from core.app.safe_text import escape_markdown as esc
from core.redact import ADMIN_TOKEN_ENV, KEY_ENV_ALLOW_ENV, key_env_allow_list, key_env_allowed, key_env_names, redact

st.title("Admin")


def _configured_token() -> str | None:
    return configured_admin_token()


class _Workers:
    """The runs this server process started (any process's runs are in the run list)."""

    def __init__(self) -> None:
        self.items: list[WorkerProcess] = []


def _key_variables() -> dict[str, str]:
    """The key variables this server lets the dashboard use (variable → label): ``[judge_keys]`` in the server's
    Streamlit secrets (a table label → variable, or a list of variables) and ``ARENA_KEY_ENV_ALLOW``.  Only the
    names are read here; the values stay in the environment, read by the worker."""
    try:
        configured = st.secrets.get("judge_keys")
    except Exception:  # no secrets file
        configured = None
    labels: dict[str, str] = {}
    if configured is not None and hasattr(configured, "items"):
        for label, name in configured.items():
            if name in key_env_names([name]):
                labels.setdefault(name, f"{label} ({name})")
    names = key_env_allow_list(key_env_names(configured))
    return {name: labels.get(name, name) for name in names}


def _key_field(container: Any, label: str, key: str, variables: dict[str, str]) -> str | None:
    """A choice among the server's key variables; none configured: no field, and how to configure one."""
    if not variables:
        container.caption(
            f"{label}: none (this server lets the dashboard use no key variable). The server's operator lists the "
            f"allowed ones in `[judge_keys]` of `.streamlit/secrets.toml` or in `{KEY_ENV_ALLOW_ENV}` "
            "(comma-separated names) before starting the app."
        )
        return None
    options = ["", *variables]
    return container.selectbox(
        label,
        options,
        key=key,
        format_func=lambda v: variables.get(v, "(no key)"),
        help="The server's operator chose these variables; the key's value stays on the server.",
    )


@st.cache_resource
def workers() -> _Workers:
    return _Workers()


def _start(
    cfg: judging.JudgeConfig,
    dataset: str,
    limit: int | None,
    sample: str,
    retry_failed: bool,
    replace_judge: bool = False,
) -> None:
    w = judging.start_worker(
        db_path(),
        dataset,
        cfg,
        limit=limit,
        sample=sample,
        retry_failed=retry_failed,
        replace_judge=replace_judge,
    )
    workers().items.append(w)
    st.success(f"Started a worker process (pid {w.pid}) for {esc(cfg.name)} on {esc(dataset)}.")


@st.fragment(run_every=1.0)
def run_monitor(dataset: str) -> None:
    """Worker progress, refreshed every second without rerunning the page."""
    items = workers().items
    if not items:
        st.caption("No run started from this server process.")
    for k, w in enumerate(reversed(items[-5:])):
        code = w.returncode
        state = (
            "working"
            if code is None
            else {0: "finished", 75: "paused, resumable", 143: "cancelled"}.get(code, f"ended with exit code {code}")
        )
        lines = w.log_lines()
        st.markdown(f"**{esc(w.judge)}** on {esc(w.dataset)} · pid {w.pid} · {state}")
        st.code("\n".join(lines) or "(starting…)", language=None)
        if code is None and st.button("Cancel (keeps what is finished)", key=f"cancel_{w.pid}_{k}"):
            w.cancel()
    st.subheader("Runs")
    runs = read_store(judging.runs, dataset)
    st.dataframe(runs.drop(columns=["owner_host"], errors="ignore"), hide_index=True)


def judge_family_setting(dataset: str) -> None:
    """Which family (organisation) each judge belongs to: what the Judge bias page's self-preference needs."""
    families = read_store(judging.judge_families, dataset)
    if families.empty:
        st.caption("No judge has judged this dataset yet.")
        return
    with st.form("judge_family"):
        c1, c2 = st.columns(2)
        judge = c1.selectbox("judge", list(families["judge"]))
        known = families.set_index("judge")["family"].get(judge)
        family = c2.text_input(
            "family",
            "",
            placeholder=str(known) if isinstance(known, str) else "e.g. openai, anthropic, meta",
            help="Lowercase letters, digits, '-', '_' or '.', as the models' families are named, "
            "so the Judge bias page can compare a judge's verdicts on its own "
            "family's models with other judges' verdicts on them.",
        )
        if st.form_submit_button("Save family"):
            try:
                judging.record_judge_family(db_path(), judge, family)
                st.success(f"{esc(judge)}: family {esc(family.strip())}.")
            except (ValueError, StoreError) as exc:
                st.error(esc(redact(str(exc))))
    st.caption(
        "Known: "
        + ", ".join(
            f"{esc(j)} → {esc(f) if isinstance(f, str) else 'not given'}" for j, f in families.itertuples(False)
        )
    )


with page_guard("The admin page"):
    gate = access()
    if gate.sign_in:  # an identity provider: the admin role opens the page (the navigation hides it from others)
        if not gate.can(ADMIN):
            forbidden("The Admin page", ADMIN)
    else:
        token = _configured_token()
        if not token:
            notice(
                f"the admin page is disabled. Set the environment variable `{ADMIN_TOKEN_ENV}` (or `admin_token` "
                "in `.streamlit/secrets.toml`) before starting the app to enable it, or configure sign-in "
                "(README: Serving others)."
            )
            st.stop()
        given = st.text_input("Admin token", type="password", key="admin_token_input")
        if not given or not hmac.compare_digest(given.encode(), token.encode()):
            if given:
                st.error("Wrong token.")
            st.stop()
    dataset = selection().dataset
    if not store_available():
        st.stop()
    if dataset is None:
        notice("no dataset to judge yet: import one (e.g. an Arena-Hard directory) first.")
        st.stop()
    st.subheader("Judge configuration")
    key_variables = _key_variables()
    with st.form("judge_config"):
        c1, c2 = st.columns(2)
        name = c1.text_input("name", "my-judge")
        base_url = c2.text_input("base URL", "http://127.0.0.1:8000/v1")
        model = c1.text_input("model", "some-model")
        api_key_env = _key_field(c2, "environment variable holding the API key", "judge_key_env", key_variables)
        template = c1.selectbox("template", TEMPLATES)
        both = c2.checkbox("judge both presentation orders", True)
        concurrency = c1.number_input("concurrency", 1, 256, 16)
        timeout_s = c2.number_input("timeout (s)", 1, 600, 60)
        retries = c1.number_input("max retries", 0, 20, 5)
        max_calls = c2.number_input("max calls (budget)", 1, 10_000_000, 1000)
        limit = c1.number_input(
            "units this run covers",
            1,
            10_000_000,
            100,
            help="The first units (battle × order) in a fixed order, or of the balanced sample. Starting the same "
            "run again completes exactly this set: units judged before are not judged again, and no more are added.",
        )
        sample = c2.selectbox("selection", ["all", "balanced"])
        price_in = c1.number_input(
            "USD per million prompt tokens (optional, for the cost column)", 0.0, None, None, format="%.4f"
        )
        price_out = c2.number_input("USD per million completion tokens (optional)", 0.0, None, None, format="%.4f")
        max_cost = c1.number_input(
            "hard budget in USD (optional; needs both prices)",
            0.0,
            None,
            None,
            format="%.2f",
            help="No call starts whose reserved cost (its prompt and max_tokens of answer) would pass it.",
        )
        mode = c2.selectbox(
            "calls",
            ["online", "batch"],
            help="batch: the OpenAI Batch API (/v1/files, /v1/batches; about half the price, results within 24 h). "
            "The run submits, waits up to 10 minutes, then pauses; starting the same run again collects the batch.",
        )
        action = st.radio("action", ["test connection", "estimate cost", "start run"], horizontal=True)
        replace_judge = st.checkbox(
            "this configuration replaces the existing judge of this name",
            False,
            help="A judge's name is its identity. A run whose model, template, prompt version or sampling differ "
            "from the stored judge's would change what that judge's leaderboard reads, so it is refused unless "
            "this is ticked. Another base URL, budget or price is the same judge.",
        )
        submitted = st.form_submit_button("Go")
    if submitted:
        try:
            cfg = from_mapping(
                {
                    "name": name,
                    "base_url": base_url,
                    "model": model,
                    "api_key_env": api_key_env or None,
                    "template": template,
                    "both_orders": both,
                    "concurrency": int(concurrency),
                    "timeout_s": float(timeout_s),
                    "max_retries": int(retries),
                    "max_calls": int(max_calls),
                    "price_prompt_per_mtok": price_in,
                    "price_completion_per_mtok": price_out,
                    "max_cost_usd": max_cost or None,
                    "mode": mode,
                },
                "the form",
                form=True,
                key_envs=key_variables,
            )
            if action == "test connection":
                res = connection_test(cfg)
                if res["ok"]:
                    st.success(
                        esc(
                            redact(
                                f"model {res.get('model')}, {res.get('latency_ms', 0):.0f} ms, logprobs "
                                f"{'returned' if res.get('logprobs') else 'not returned'}"
                            )
                        )
                    )
                else:
                    st.error(esc(redact(res["error"])))
            elif action == "estimate cost":
                run_plan, estimate = read_store(judging.estimate_plan, dataset, cfg, int(limit), sample)
                st.info(
                    redact(
                        f"This run covers {run_plan.defined:,} units; {run_plan.already_done:,} are judged already. "
                        + (f"The rest: {estimate.text()}." if run_plan.units else "Nothing is left to judge.")
                    )
                )
            else:
                change = read_store(judging.judge_identity_change, cfg)
                if change is not None and not replace_judge:
                    st.warning(
                        esc(f"{change}.")
                        + " Give the run another name, or tick *this configuration replaces the existing judge "
                        "of this name* and press Go again."
                    )
                else:
                    _start(cfg, dataset, int(limit), sample, retry_failed=False, replace_judge=replace_judge)
        except (ConfigError, PlanError, OSError) as exc:
            st.error(redact(str(exc)))

    st.subheader("Judge families")
    judge_family_setting(dataset)

    st.subheader("Generate a model's answers")
    st.caption(
        "A new model's answers to this dataset's prompts (one per prompt and settings; starting it again completes "
        "what is missing). They become its completions: plan battles against anchors, judge them, and read its "
        "standing (README: the loop for a new model)."
    )
    with st.form("generate"):
        g1, g2 = st.columns(2)
        gen_name = g1.text_input("model name (its leaderboard row)", "my-model", key="gen_name")
        gen_url = g2.text_input("model base URL", "http://localhost:8000/v1", key="gen_url")
        gen_model = g1.text_input("endpoint model id", "some-model", key="gen_model")
        gen_key = _key_field(g2, "key variable", "gen_key", key_variables)
        gen_system = st.text_area("system prompt (optional)", "", key="gen_system")
        gen_temp = g1.number_input("temperature", 0.0, 2.0, 0.0, key="gen_temp")
        gen_max = g2.number_input("max tokens per turn", 1, 1_000_000, 1024, key="gen_max")
        gen_conc = g1.number_input("concurrent calls", 1, 512, 8, key="gen_conc")
        gen_limit = g2.number_input("prompts (the first N; 0: all)", 0, 10_000_000, 0, key="gen_limit")
        gen_go = st.form_submit_button("Start generating")
    if gen_go:
        try:
            if gen_key and not key_env_allowed(gen_key, key_variables):
                raise ConfigError("the key variable must be one of the server's key variables")
            model_cfg = generation.model_config(
                {
                    "name": gen_name,
                    "base_url": gen_url,
                    "model": gen_model,
                    "api_key_env": gen_key or None,
                    "system_prompt": gen_system or None,
                    "temperature": float(gen_temp),
                    "max_tokens": int(gen_max),
                    "concurrency": int(gen_conc),
                },
                "the form",
            )
            w = generation.start_generation_worker(db_path(), dataset, model_cfg, int(gen_limit) or None)
            workers().items.append(w)
            st.success(
                f"Started a worker process (pid {w.pid}) generating {esc(model_cfg.name)}'s answers on {esc(dataset)}."
            )
        except (ConfigError, OSError) as exc:
            st.error(redact(str(exc)))

    st.subheader("Current runs")
    run_monitor(dataset)

    st.subheader("Failures")
    fails: pd.DataFrame = read_store(judging.parse_failures, dataset)
    if fails.empty:
        st.caption("None.")
    else:
        st.caption(
            "'call failed': the endpoint refused the call (a 4xx); nothing was judged. 'unparseable': the judge "
            "answered but no verdict could be read; its raw output is kept and never deleted."
        )
        st.dataframe(fails, hide_index=True)
        refused = fails[fails["kind"] == "call failed"]
        if not refused.empty:
            judge = st.selectbox("retry the refused calls of", sorted(refused["judge"].unique()))
            if st.button("Retry these calls in a worker (raw outputs are kept)"):
                try:
                    stored = read_store(judging.judge_config, judge)
                    if stored is None:
                        st.error(f"judge {esc(repr(judge))} has no stored configuration to run it with")
                    else:
                        # the page's rules apply to a stored configuration too (its key variable is allow-listed)
                        cfg = from_mapping(
                            stored.to_store(),
                            f"the stored configuration of {judge!r}",
                            form=True,
                            key_envs=key_variables,
                        )
                        _start(cfg, dataset, None, "all", retry_failed=True)
                except (ConfigError, PlanError, OSError) as exc:
                    st.error(redact(str(exc)))
