"""Evaluate a model: the saved evaluations of new models, and (admin token) a form that starts one.

saved evaluation → core.app.evaluate.saved_evaluation → Store.evaluation → core.charts.predicted_placement (and, for
the adaptive design, core.charts.width_by_calls over the rounds kept in its result_json);
α slider → core.app.evaluate.model_escalations (SCOPE on the model's judged battles) → Store.battle_frame;
the form → core.app.evaluate.start_evaluation_worker (``python -m core evaluate`` in a worker process).
Viewing needs no token; starting work does (the admin token, or with sign-in configured the admin role).
Every text shown passes ``core.redact``; model, judge and dataset names are shown as text (``core.app.safe_text``).
"""

from functools import partial

import pandas as pd
import streamlit as st

from app_pages._access import access, admin_unlocked, configured_admin_token
from app_pages._loaders import compute, judge_options
from app_pages._selection import SCOPE_ALPHA_RANGE, selection
from app_pages._store import db_path, read_store, store_available
from app_pages._widgets import notice, page_guard, show_chart, show_table
from core import charts
from core.app import Unavailable, judging, newmodel
from core.app import display as show
from core.app import evaluate as app_evaluate
from core.app import evaluate_view as view
from core.app.access import ADMIN
from core.app.escalation import Escalations
from core.app.judging import TEMPLATES, ConfigError, PlanError, WorkerProcess
from core.app.newmodel import Standing
from core.app.safe_text import escape_markdown as esc
from core.redact import ADMIN_TOKEN_ENV, key_env_patterns, redact

st.title("Evaluate a model")
st.caption(
    "A model without human votes gets judge battles against human-rated models (anchors); its judge Elo predicts "
    "its human Elo, with a conformal interval, and SCOPE names the judged battles too uncertain to trust."
)


class _EvaluationWorkers:
    """The evaluations this server process started."""

    def __init__(self) -> None:
        self.items: list[WorkerProcess] = []


# Named apart from the Admin page's ``workers``: Streamlit keys a cached function by its module (every page
# runs as ``__main__``), name and source, so an identical function would share the Admin page's list.
@st.cache_resource
def evaluation_workers() -> _EvaluationWorkers:
    return _EvaluationWorkers()


def load_list(dataset: str) -> pd.DataFrame:
    return compute(app_evaluate.saved_evaluations, dataset)


def load_one(evaluation_id: int) -> app_evaluate.SavedEvaluation | Unavailable:
    return compute(app_evaluate.saved_evaluation, evaluation_id)


def load_escalations(dataset: str, judge: str, model: str, alpha: float) -> Escalations | Unavailable:
    spinner = "Calibrating SCOPE on the judge's human-voted battles…"
    return compute(app_evaluate.model_escalations, dataset, judge, model, alpha, spinner=spinner)


def load_standing(dataset: str, judge: str, model: str, alpha: float) -> Standing | Unavailable:
    """The model's standing as the Leaderboard computes it now (one use case: ``newmodel.standing``)."""
    return compute(newmodel.standing, dataset, judge, model, alpha)


def show_saved(dataset: str) -> None:
    saved = load_list(dataset)
    if saved.empty:
        notice(
            f"no model has been evaluated on **{esc(dataset)}** yet.",
            fix="start an evaluation below (it needs the admin token), or run `python -m core evaluate` on this "
            "dataset from a terminal (README, section Evaluate a new model, shows how)",
        )
        return
    shown = view.saved_table(saved)
    show_table(shown, hide_index=True, column_config=show.labels(shown))
    labels = {int(r["evaluation_id"]): view.saved_label(r) for _, r in saved.iterrows()}
    chosen = st.selectbox("Evaluation", list(labels), format_func=labels.__getitem__, key="evaluation_id")
    one = load_one(int(chosen))
    if isinstance(one, Unavailable):
        notice(one.reason)
        return
    row, st_ = one.row, one.standing
    if st_ is None:
        st.warning(esc(redact(f"{row['model']}: no standing. {row['reason'] or ''}")))
    else:
        c1, c2, c3 = st.columns(3)
        c1.metric("Predicted human Elo", f"{st_.predicted:.0f}")
        c2.metric(f"{1 - st_.alpha:.0%} conformal interval", f"{st_.lower:.0f} – {st_.upper:.0f}")
        c3.metric("Rank among the human-rated models", f"#{row['rank_best']} – #{row['rank_worst']}")
        st.success(esc(st_.text()))
        rated = one.rated()
        if rated.empty:
            st.caption("The human Elo of the human-rated models was not saved with this evaluation.")
        else:
            show_chart(
                partial(charts.predicted_placement, rated, st_.model, st_.predicted, st_.lower, st_.upper, st_.alpha),
                key="placement_chart",
                how_to_read="dots are the human Elo of the models humans rated (filled: the anchors the new model was "
                "judged against); the diamond is the new model's predicted human Elo and the band its conformal "
                "interval. Models inside the band are those it may rank above or below.",
                detail=f"α {st_.alpha:.2f}",
                judge=str(row["judge"]),
            )
        st.markdown(esc(redact(one.design_text())))
        rounds = one.rounds()
        if not rounds.empty:
            show_chart(
                partial(
                    charts.width_by_calls,
                    rounds,
                    int(one.details["adaptive"]["fixed_calls"]),
                    2 * (st_.floor or 0.0),
                ),
                key="adaptive_rounds_chart",
                how_to_read="each dot is the conformal interval's width after a round of the adaptive design, against "
                "the judge calls spent so far; the dashed line is what the fixed design would have spent, the dotted "
                "one the width no number of calls goes below (the judge–human disagreement).",
                detail=f"α {st_.alpha:.2f}",
                judge=str(row["judge"]),
            )
        now = load_standing(dataset, str(row["judge"]), str(row["model"]), float(st_.alpha))
        said = view.now_statement(row, st_, now)
        if said is not None:
            level, text = said
            if level == "caption":
                st.caption(esc(text))
            else:
                st.info(esc(text), icon=":material/update:")
    st.subheader("Battles SCOPE would send to humans")
    when_run = view.escalations_when_run(one.details.get("escalations") or {})
    if when_run:
        st.caption(esc(when_run))
    alpha = st.slider(
        "SCOPE error target α",
        SCOPE_ALPHA_RANGE[0],
        SCOPE_ALPHA_RANGE[1],
        float(min(max(row["alpha"], SCOPE_ALPHA_RANGE[0]), SCOPE_ALPHA_RANGE[1])),
        0.01,
        key=f"escalation_alpha_{chosen}",
    )
    found = load_escalations(dataset, str(row["judge"]), str(row["model"]), float(alpha))
    if isinstance(found, Unavailable):
        notice(found.reason)
        return
    st.markdown(f"At **α = {alpha:.2f}**: {esc(found.text())}")
    table = found.frame.assign(p_bar=found.frame["p_bar"].round(3), entropy=found.frame["entropy"].round(3))
    show_table(table, hide_index=True, column_config=show.labels(table))


@st.fragment(run_every=1.0)
def monitor() -> None:
    """The evaluations this server started: state and the last log lines, refreshed every second."""
    items = evaluation_workers().items
    if not items:
        st.caption("No evaluation started from this server process.")
    for k, w in enumerate(reversed(items[-5:])):
        code = w.returncode
        state = view.worker_state(code)
        st.markdown(f"**{esc(w.name)}** on {esc(w.dataset)} · {state}")
        st.code("\n".join(w.log_lines()) or "(starting…)", language=None)
        if code is None and st.button("Cancel (keeps what is finished)", key=f"cancel_eval_{w.pid}_{k}"):
            w.cancel()


def start_form(dataset: str) -> None:
    allowed = ", ".join(f"`{p}`" for p in key_env_patterns())
    judges = judge_options(dataset)
    with st.form("evaluate_model"):
        name = st.text_input("new model's name (its leaderboard row)", "my-model", key="ev_name")
        answers = st.radio(
            "its answers",
            ["already imported", view.GENERATE],
            horizontal=True,
            key="ev_answers",
            help="Generated answers are kept: starting the same evaluation again generates only what is missing.",
        )
        m1, m2 = st.columns(2)
        m_url = m1.text_input("model base URL", "http://localhost:8000/v1", key="ev_m_url")
        m_model = m2.text_input("endpoint model id", "some-model", key="ev_m_model")
        m_key = m1.text_input(
            "model key variable (empty: no key)", "", key="ev_m_key", help=f"names must match {allowed}"
        )
        m_max = m2.number_input("max tokens per answer", 1, 1_000_000, 1024, key="ev_m_max")
        judge_from = st.radio(
            "judge",
            [view.REGISTERED, "a new judge endpoint"],
            horizontal=True,
            key="ev_judge_from",
        )
        registered = st.selectbox("registered judge (its stored configuration)", judges or ["(none)"], key="ev_judge")
        j1, j2 = st.columns(2)
        j_name = j1.text_input("new judge's name", "my-judge", key="ev_j_name")
        j_url = j2.text_input("judge base URL", "http://127.0.0.1:8000/v1", key="ev_j_url")
        j_model = j1.text_input("judge model id", "some-model", key="ev_j_model")
        j_template = j2.selectbox("template", TEMPLATES, key="ev_j_template")
        j_key = j1.text_input(
            "judge key variable (empty: no key)", "", key="ev_j_key", help=f"names must match {allowed}"
        )
        adaptive = st.toggle(
            "adaptive design",
            True,
            key="ev_adaptive",
            help="A placement, then rounds of the most informative battles until more judge calls cannot narrow the "
            "interval noticeably; never more calls than the fixed design (10 anchors, every shared prompt). In the "
            "benchmark it spent about 5× fewer calls for an interval within 5% of the fixed design's width "
            "(docs/benchmarks.md). It judges only a few anchors, so a judge new to this dataset needs calibration "
            "battles for an interval.",
        )
        c1, c2, c3, c4 = st.columns(4)
        budget = c1.number_input("judge calls at most (both orders count)", 2, 10_000_000, 200, key="ev_budget")
        anchors = c2.number_input("anchors", 2, 100, 10, key="ev_anchors")
        alpha = c3.number_input("α (interval and SCOPE)", 0.01, 0.5, 0.1, 0.01, key="ev_alpha")
        calibration = c4.number_input(
            "calibration battles",
            0,
            1_000_000,
            0,
            key="ev_calibration",
            help="Human-voted battles of the rated models the judge also judges (both orders), unless it has: its "
            "labels on them calibrate τ and the interval. 0 when the judge has judged this dataset already.",
        )
        go = st.form_submit_button("Start the evaluation")
    if not go:
        return
    fields = {
        "name": name,
        "answers": answers,
        "m_url": m_url,
        "m_model": m_model,
        "m_key": m_key,
        "m_max": m_max,
        "judge_from": judge_from,
        "registered": registered,
        "j_name": j_name,
        "j_url": j_url,
        "j_model": j_model,
        "j_template": j_template,
        "j_key": j_key,
        "budget": budget,
        "anchors": anchors,
        "alpha": alpha,
        "calibration": calibration,
        "adaptive": adaptive,
    }
    try:
        form = view.evaluation_form(fields, lambda j: read_store(judging.judge_config, j) if judges else None)
        w = app_evaluate.start_evaluation_worker(
            db_path(),
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
        evaluation_workers().items.append(w)
        st.success(view.started(form, dataset))
    except (ConfigError, PlanError, ValueError, OSError) as exc:
        st.error(redact(str(exc)))


with page_guard("The Evaluate page"):
    dataset = selection().dataset
    if not store_available():
        st.stop()
    if dataset is None:
        notice("no dataset yet: import one with human votes (the anchors) before evaluating a new model.")
        st.stop()
    st.subheader(f"Evaluations on {esc(dataset)}")
    show_saved(dataset)
    st.divider()
    st.subheader("Start an evaluation")
    gate = access()
    if gate.sign_in:  # an identity provider: the admin role starts evaluations, no token is asked
        if not gate.can(ADMIN):
            st.caption(f"Starting an evaluation needs the {ADMIN} role.")
            st.stop()
        start_form(dataset)
        st.subheader("Evaluations started here")
        monitor()
        st.stop()
    admin = configured_admin_token()
    if not admin:
        notice(
            f"starting an evaluation is disabled. Set the environment variable `{ADMIN_TOKEN_ENV}` (or "
            "`admin_token` in `.streamlit/secrets.toml`) before starting the app to enable it; the results above "
            "need no token."
        )
        st.stop()
    if not admin_unlocked(admin, "evaluate_token_input"):
        st.caption("Enter the admin token to start an evaluation.")
        st.stop()
    start_form(dataset)
    st.subheader("Evaluations started here")
    monitor()
