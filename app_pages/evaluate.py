"""Evaluate a model: the saved evaluations of new models, and (admin token) a form that starts one.

saved evaluation → core.app.evaluate.saved_evaluation → Store.evaluation → core.charts.predicted_placement (and, for
the adaptive design, core.charts.width_by_calls over the rounds kept in its result_json);
α slider → core.app.evaluate.model_escalations (SCOPE on the model's judged battles) → Store.battle_frame;
the form → core.app.evaluate.start_evaluation_worker (``python -m core evaluate`` in a worker process).
Viewing needs no token; starting work does (the admin token, or with sign-in configured the admin role).
Every text shown passes ``core.redact``; model, judge and dataset names are shown as text (``core.app.safe_text``).
What the page says comes from ``core.app.evaluate_view`` (``saved_view``, ``escalations_at``, ``start``);
app_pages/_evaluate_parts.py draws one evaluation's standing and the start form.
"""

import pandas as pd
import streamlit as st

from app_pages._access import access, admin_unlocked, configured_admin_token
from app_pages._evaluate_parts import show_standing, start_form
from app_pages._loaders import compute
from app_pages._selection import SCOPE_ALPHA_RANGE, selection
from app_pages._store import store_available
from app_pages._widgets import notice, page_guard, show_table
from core.app import Unavailable
from core.app import display as show
from core.app import evaluate as app_evaluate
from core.app import evaluate_view as view
from core.app.access import ADMIN
from core.app.escalation import Escalations
from core.app.judging import WorkerProcess
from core.app.safe_text import escape_markdown as esc
from core.redact import ADMIN_TOKEN_ENV

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


def show_saved(dataset: str) -> None:
    saved = load_list(dataset)
    if saved.empty:
        empty = view.no_evaluations(dataset)
        notice(empty.text, fix=empty.fix)
        return
    shown = view.saved_table(saved)
    show_table(shown, hide_index=True, column_config=show.labels(shown))
    labels = view.saved_labels(saved)
    chosen = st.selectbox("Evaluation", list(labels), format_func=labels.__getitem__, key="evaluation_id")
    one = load_one(int(chosen))
    if isinstance(one, Unavailable):
        notice(one.reason)
        return
    seen = view.saved_view(one, SCOPE_ALPHA_RANGE)
    if seen.no_standing is not None:
        st.warning(esc(seen.no_standing))
    else:
        show_standing(dataset, one.row, seen)
    st.subheader("Battles SCOPE would send to humans")
    if seen.when_run:
        st.caption(esc(seen.when_run))
    alpha = st.slider(
        "SCOPE error target α",
        SCOPE_ALPHA_RANGE[0],
        SCOPE_ALPHA_RANGE[1],
        seen.alpha,
        0.01,
        key=f"escalation_alpha_{chosen}",
    )
    found = load_escalations(dataset, seen.judge, seen.model, float(alpha))
    if isinstance(found, Unavailable):
        notice(found.reason)
        return
    said, table = view.escalations_at(found, alpha)
    st.markdown(said)
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
        start_form(dataset, evaluation_workers().items)
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
    start_form(dataset, evaluation_workers().items)
    st.subheader("Evaluations started here")
    monitor()
