"""Admin: configure a judge, test the connection, start and watch judge runs (admin role or token protected).

Runs execute in worker processes (``core.app.judging.start_worker``): this server only starts them, reads their
logs and signals them, so browsing stays fast and the run keeps its speed.  Every text shown passes ``core.redact``.
"""

from typing import Any

import streamlit as st

from app_pages._access import access, configured_admin_token, forbidden
from app_pages._selection import selection
from app_pages._store import db_path, read_store, store_available
from app_pages._widgets import notice, page_guard
from core.app import StoreError, generation, judging
from core.app import admin_view as view
from core.app.access import ADMIN
from core.app.judging import TEMPLATES, ConfigError, PlanError, WorkerProcess
from core.redact import redact

st.title("Admin")


@st.cache_resource
def workers() -> list[WorkerProcess]:
    """The runs this server process started (any process's runs are in the run list)."""
    return []


def key_field(container: Any, label: str, key: str, variables: dict[str, str]) -> str | None:
    """A choice among the server's key variables; none configured: no field, and how to configure one."""
    if not variables:
        container.caption(view.no_key_variable(label))
        return None
    return container.selectbox(
        label, ["", *variables], key=key, format_func=lambda v: variables.get(v, "(no key)"), help=view.KEY_FIELD_HELP
    )


def start(cfg: judging.JudgeConfig, dataset: str, limit: int | None, sample: str, **kwargs: bool) -> None:
    w = judging.start_worker(db_path(), dataset, cfg, limit=limit, sample=sample, **kwargs)
    workers().append(w)
    st.success(view.started(w.pid, cfg.name, dataset))


@st.fragment(run_every=1.0)
def run_monitor(dataset: str) -> None:
    """Worker progress, refreshed every second without rerunning the page."""
    if not workers():
        st.caption(view.NO_RUN_STARTED)
    for k, w in enumerate(reversed(workers()[-view.RUNS_SHOWN :])):
        code = w.returncode
        st.markdown(view.run_heading(w.judge, w.dataset, w.pid, code))
        st.code("\n".join(w.log_lines()) or "(starting…)", language=None)
        if code is None and st.button("Cancel (keeps what is finished)", key=f"cancel_{w.pid}_{k}"):
            w.cancel()
    st.subheader("Runs")
    st.dataframe(view.runs_table(read_store(judging.runs, dataset)), hide_index=True)


def gate() -> None:
    """Stops the page unless the session may administer: with sign-in configured (``[auth]``), the admin role
    opens the page and no token is asked; without it, the admin token does."""
    signed_in = access()
    if signed_in.sign_in:  # an identity provider: the admin role opens the page (the navigation hides it from others)
        if not signed_in.can(ADMIN):
            forbidden("The Admin page", ADMIN)
        return
    if not (token := configured_admin_token()):
        notice(view.TOKEN_DISABLED)
        st.stop()
    given = st.text_input("Admin token", type="password", key="admin_token_input")
    if not view.token_accepted(given, token):
        if given:
            st.error("Wrong token.")
        st.stop()


def optional_number(column: Any, label: str, places: int, help: str | None = None) -> float | None:
    return column.number_input(label, 0.0, None, None, format=f"%.{places}f", help=help)


def judge_configuration(dataset: str, keys: dict[str, str]) -> None:
    st.subheader("Judge configuration")
    with st.form("judge_config"):
        c1, c2 = st.columns(2)
        fields = {
            "name": c1.text_input("name", "my-judge"),
            "base_url": c2.text_input("base URL", "http://127.0.0.1:8000/v1"),
            "model": c1.text_input("model", "some-model"),
            "api_key_env": key_field(c2, "environment variable holding the API key", "judge_key_env", keys),
            "template": c1.selectbox("template", TEMPLATES),
            "both_orders": c2.checkbox("judge both presentation orders", True),
            "concurrency": c1.number_input("concurrency", 1, 256, 16),
            "timeout_s": c2.number_input("timeout (s)", 1, 600, 60),
            "max_retries": c1.number_input("max retries", 0, 20, 5),
            "max_calls": c2.number_input("max calls (budget)", 1, 10_000_000, 1000),
            "limit": c1.number_input("units this run covers", 1, 10_000_000, 100, help=view.LIMIT_HELP),
            "sample": c2.selectbox("selection", ["all", "balanced"]),
            "price_prompt_per_mtok": optional_number(c1, view.PRICE_PROMPT_LABEL, 4),
            "price_completion_per_mtok": optional_number(c2, "USD per million completion tokens (optional)", 4),
            "max_cost_usd": optional_number(c1, view.MAX_COST_LABEL, 2, view.MAX_COST_HELP),
            "mode": c2.selectbox("calls", ["online", "batch"], help=view.MODE_HELP),
            "action": st.radio("action", ["test connection", "estimate cost", "start run"], horizontal=True),
            "replace_judge": st.checkbox(view.REPLACE_LABEL, False, help=view.REPLACE_HELP),
        }
        submitted = st.form_submit_button("Go")
    if submitted:
        try:
            form = view.judge_form(fields, keys)
            if (said := view.judge_form_said(form, dataset, read_store)) is not None:
                getattr(st, said.level)(said.text)
            else:
                start(form.cfg, dataset, form.limit, form.sample, retry_failed=False, replace_judge=form.replace_judge)
        except (ConfigError, PlanError, OSError) as exc:
            st.error(redact(str(exc)))


def judge_families(dataset: str) -> None:
    """Which family (organisation) each judge belongs to: what the Judge bias page's self-preference needs."""
    st.subheader("Judge families")
    families = read_store(judging.judge_families, dataset)
    if families.empty:
        st.caption(view.NO_FAMILY_JUDGE)
        return
    with st.form("judge_family"):
        c1, c2 = st.columns(2)
        judge = c1.selectbox("judge", list(families["judge"]))
        known = view.family_placeholder(families, judge)
        family = c2.text_input("family", "", placeholder=known, help=view.FAMILY_HELP)
        if st.form_submit_button("Save family"):
            try:
                judging.record_judge_family(db_path(), judge, family)
                st.success(view.family_saved(judge, family))
            except (ValueError, StoreError) as exc:
                st.error(view.family_refused(exc))
    st.caption(view.families_caption(families))


def generate(dataset: str, keys: dict[str, str]) -> None:
    st.subheader("Generate a model's answers")
    st.caption(view.GENERATE_CAPTION)
    with st.form("generate"):
        g1, g2 = st.columns(2)
        fields: dict[str, Any] = {
            "name": g1.text_input("model name (its leaderboard row)", "my-model", key="gen_name"),
            "base_url": g2.text_input("model base URL", "http://localhost:8000/v1", key="gen_url"),
            "model": g1.text_input("endpoint model id", "some-model", key="gen_model"),
            "api_key_env": key_field(g2, "key variable", "gen_key", keys),
            "system_prompt": st.text_area("system prompt (optional)", "", key="gen_system"),
            "temperature": g1.number_input("temperature", 0.0, 2.0, 0.0, key="gen_temp"),
            "max_tokens": g2.number_input("max tokens per turn", 1, 1_000_000, 1024, key="gen_max"),
            "concurrency": g1.number_input("concurrent calls", 1, 512, 8, key="gen_conc"),
            "limit": g2.number_input("prompts (the first N; 0: all)", 0, 10_000_000, 0, key="gen_limit"),
        }
        go = st.form_submit_button("Start generating")
    if go:
        try:
            cfg, limit = view.generation_form(fields, keys)
            w = generation.start_generation_worker(db_path(), dataset, cfg, limit)
            workers().append(w)
            st.success(view.generation_started(w.pid, cfg.name, dataset))
        except (ConfigError, OSError) as exc:
            st.error(redact(str(exc)))


def failures(dataset: str, keys: dict[str, str]) -> None:
    st.subheader("Failures")
    fails = read_store(judging.parse_failures, dataset)
    if fails.empty:
        st.caption("None.")
        return
    st.caption(view.FAILURES_CAPTION)
    st.dataframe(fails, hide_index=True)
    if not (refused := view.refused_judges(fails)):
        return
    judge = st.selectbox("retry the refused calls of", refused)
    if st.button("Retry these calls in a worker (raw outputs are kept)"):
        try:
            cfg = view.retry_config(read_store(judging.judge_config, judge), judge, keys)
            start(cfg, dataset, None, "all", retry_failed=True)
        except (ConfigError, PlanError, OSError) as exc:
            st.error(redact(str(exc)))


with page_guard("The admin page"):
    gate()
    dataset = selection().dataset
    if not store_available():
        st.stop()
    if dataset is None:
        notice(view.NO_DATASET)
        st.stop()
    keys = view.key_variable_labels(lambda: st.secrets.get("judge_keys"))
    judge_configuration(dataset, keys)
    judge_families(dataset)
    generate(dataset, keys)
    st.subheader("Current runs")
    run_monitor(dataset)
    failures(dataset, keys)
