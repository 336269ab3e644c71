"""Admin: configure a judge, test the connection, run and monitor judging (token protected).

Every write goes through core.app.judging (plan, start a run, forget failures).
"""

import hmac
import os
import time

import streamlit as st

from app_pages._shared import get_store, notice, page_guard, selection
from core.app import judging
from core.app.judging import TEMPLATES, ConfigError, JudgeWorker, PlanError, connection_test, from_mapping, plan

st.title("Admin")


def _configured_token() -> str | None:
    token = os.environ.get("ARENA_ADMIN_TOKEN")
    if token:
        return token
    try:
        return st.secrets.get("admin_token")
    except (FileNotFoundError, KeyError, AttributeError, Exception):  # no secrets file
        return None


@st.cache_resource
def worker() -> JudgeWorker:
    return JudgeWorker()  # one per server process: runs outlive browser tabs


with page_guard("The admin page"):
    token = _configured_token()
    if not token:
        notice(
            "the admin page is disabled. Set the environment variable `ARENA_ADMIN_TOKEN` (or `admin_token` in "
            "`.streamlit/secrets.toml`) before starting the app to enable it."
        )
        st.stop()
    given = st.text_input("Admin token", type="password", key="admin_token_input")
    if not given or not hmac.compare_digest(given.encode(), token.encode()):
        if given:
            st.error("Wrong token.")
        st.stop()
    store, dataset = get_store(), selection().dataset
    if store is None or dataset is None:
        notice("no dataset to judge yet: import one (e.g. an Arena-Hard directory) first.")
        st.stop()
    w = worker()
    st.subheader("Judge configuration")
    with st.form("judge_config"):
        c1, c2 = st.columns(2)
        name = c1.text_input("name", "my-judge")
        base_url = c2.text_input("base URL", "http://127.0.0.1:8000/v1")
        model = c1.text_input("model", "some-model")
        api_key_env = c2.text_input("environment variable holding the API key (empty: no key)", "")
        template = c1.selectbox("template", TEMPLATES)
        both = c2.checkbox("judge both presentation orders", True)
        concurrency = c1.number_input("concurrency", 1, 256, 16)
        timeout_s = c2.number_input("timeout (s)", 1, 600, 60)
        retries = c1.number_input("max retries", 0, 20, 5)
        max_calls = c2.number_input("max calls (budget)", 1, 10_000_000, 1000)
        limit = c1.number_input("judge at most this many units now", 1, 10_000_000, 100)
        sample = c2.selectbox("selection", ["all", "balanced"])
        price_in = c1.number_input(
            "USD per million prompt tokens (optional, for the cost column)", 0.0, None, None, format="%.4f"
        )
        price_out = c2.number_input("USD per million completion tokens (optional)", 0.0, None, None, format="%.4f")
        action = st.radio("action", ["test connection", "start run"], horizontal=True)
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
                },
                "the form",
            )
            if action == "test connection":
                res = connection_test(cfg)
                (st.success if res["ok"] else st.error)(
                    f"model {res.get('model')}, {res.get('latency_ms', 0):.0f} ms, logprobs "
                    f"{'returned' if res.get('logprobs') else 'not returned'}"
                    if res["ok"]
                    else res["error"]
                )
            else:
                units = plan(store, dataset, cfg, limit=int(limit), sample=sample)
                if not units:
                    st.info("Nothing to judge: every selected battle already has this judge's judgment.")
                else:
                    w.start(store, dataset, cfg, units)
                    st.success(f"Started: {len(units)} calls planned.")
        except (ConfigError, PlanError, RuntimeError) as exc:
            st.error(str(exc))

    st.subheader("Current run")
    cur = w.current
    if cur is None:
        st.caption("No run started in this server process.")
    else:
        s = cur.stats
        cost = cur.config.cost(s.prompt_tokens, s.completion_tokens) if cur.config is not None else None
        eta = s.eta_seconds() if s.status == "running" else None
        parts = [f"{cur.judge} on {cur.dataset}: {s.finished}/{s.planned}", f"{s.throughput():.1f}/s"]
        if eta is not None:
            parts.append(f"ETA {eta:.0f} s")
        parts += [
            f"failed {s.failed}",
            f"unparseable {s.parse_errors}",
            f"tokens {s.prompt_tokens + s.completion_tokens:,}" + (f" (${cost:,.4f})" if cost is not None else ""),
            f"status {s.status}",
        ]
        st.progress(min(1.0, s.finished / max(s.planned, 1)), text=" · ".join(parts))
        if cur.error:
            st.error(cur.error)
        if w.busy():
            if st.button("Cancel run"):
                w.cancel()
            time.sleep(1.0)
            st.rerun()
    st.subheader("Runs")
    st.dataframe(judging.runs(store, dataset), hide_index=True)
    st.subheader("Parse failures")
    fails = judging.parse_failures(store, dataset)
    if fails.empty:
        st.caption("None.")
    else:
        st.dataframe(fails, hide_index=True)
        judge = st.selectbox("re-run the failed calls of", sorted(fails["judge"].unique()))
        if st.button("Forget these failures so the next run retries them"):
            n = judging.forget_failures(store, dataset, judge)
            st.success(f"{n} failed judgments removed; start a run with the same configuration to retry them.")
