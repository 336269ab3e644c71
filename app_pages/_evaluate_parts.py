"""The Evaluate page's drawing: one saved evaluation's standing and design, and the form that starts one.

What these show and decide comes from ``core.app.evaluate_view`` (``saved_view``, ``now_statement``, ``start``);
here are only the widgets and charts.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from app_pages._loaders import compute, judge_options
from app_pages._store import db_path, read_store
from app_pages._widgets import show_chart
from core import charts
from core.app import Unavailable, judging, newmodel
from core.app import evaluate_view as view
from core.app.judging import TEMPLATES, WorkerProcess
from core.app.newmodel import Standing
from core.app.safe_text import escape_markdown as esc


def load_standing(dataset: str, judge: str, model: str, alpha: float) -> Standing | Unavailable:
    """The model's standing as the Leaderboard computes it now (one use case: ``newmodel.standing``)."""
    return compute(newmodel.standing, dataset, judge, model, alpha)


def show_standing(dataset: str, row: dict, seen: view.SavedView) -> None:
    """The standing a saved evaluation found, where it places the model, its design, and its standing now."""
    found = seen.standing
    assert found is not None
    for col, m in zip(st.columns(len(seen.metrics)), seen.metrics):
        col.metric(m.label, m.value)
    st.success(esc(seen.summary))
    if seen.rated.empty:
        st.caption(view.NO_RATED)
    else:
        show_chart(
            partial(
                charts.predicted_placement,
                seen.rated,
                found.model,
                found.predicted,
                found.lower,
                found.upper,
                found.alpha,
            ),
            key="placement_chart",
            how_to_read=view.PLACEMENT_HOW_TO_READ,
            detail=seen.detail,
            judge=seen.judge,
        )
    st.markdown(esc(seen.design))
    if not seen.rounds.empty:
        show_chart(
            partial(charts.width_by_calls, seen.rounds, seen.fixed_calls, seen.floor_width),
            key="adaptive_rounds_chart",
            how_to_read=view.ROUNDS_HOW_TO_READ,
            detail=seen.detail,
            judge=seen.judge,
        )
    now = load_standing(dataset, seen.judge, seen.model, float(found.alpha))
    said = view.now_statement(row, found, now)
    if said is not None:
        level, text = said
        if level == "caption":
            st.caption(esc(text))
        else:
            st.info(esc(text), icon=":material/update:")


def start_form(dataset: str, started: list[WorkerProcess]) -> None:
    """The form that starts an evaluation; a worker it starts joins ``started`` (the page's monitor lists it)."""
    key_help = view.key_help()
    judges = judge_options(dataset)
    fields: dict[str, Any] = {}  # the form's answers, by the names view.evaluation_form reads
    with st.form("evaluate_model"):
        fields["name"] = st.text_input("new model's name (its leaderboard row)", "my-model", key="ev_name")
        fields["answers"] = st.radio(
            "its answers",
            ["already imported", view.GENERATE],
            horizontal=True,
            key="ev_answers",
            help=view.ANSWERS_HELP,
        )
        m1, m2 = st.columns(2)
        fields["m_url"] = m1.text_input("model base URL", "http://localhost:8000/v1", key="ev_m_url")
        fields["m_model"] = m2.text_input("endpoint model id", "some-model", key="ev_m_model")
        fields["m_key"] = m1.text_input("model key variable (empty: no key)", "", key="ev_m_key", help=key_help)
        fields["m_max"] = m2.number_input("max tokens per answer", 1, 1_000_000, 1024, key="ev_m_max")
        fields["judge_from"] = st.radio(
            "judge",
            [view.REGISTERED, "a new judge endpoint"],
            horizontal=True,
            key="ev_judge_from",
        )
        fields["registered"] = st.selectbox(
            "registered judge (its stored configuration)", judges or ["(none)"], key="ev_judge"
        )
        j1, j2 = st.columns(2)
        fields["j_name"] = j1.text_input("new judge's name", "my-judge", key="ev_j_name")
        fields["j_url"] = j2.text_input("judge base URL", "http://127.0.0.1:8000/v1", key="ev_j_url")
        fields["j_model"] = j1.text_input("judge model id", "some-model", key="ev_j_model")
        fields["j_template"] = j2.selectbox("template", TEMPLATES, key="ev_j_template")
        fields["j_key"] = j1.text_input("judge key variable (empty: no key)", "", key="ev_j_key", help=key_help)
        fields["adaptive"] = st.toggle("adaptive design", True, key="ev_adaptive", help=view.ADAPTIVE_HELP)
        c1, c2, c3, c4 = st.columns(4)
        fields["budget"] = c1.number_input(
            "judge calls at most (both orders count)", 2, 10_000_000, 200, key="ev_budget"
        )
        fields["anchors"] = c2.number_input("anchors", 2, 100, 10, key="ev_anchors")
        fields["alpha"] = c3.number_input("α (interval and SCOPE)", 0.01, 0.5, 0.1, 0.01, key="ev_alpha")
        fields["calibration"] = c4.number_input(
            "calibration battles", 0, 1_000_000, 0, key="ev_calibration", help=view.CALIBRATION_HELP
        )
        go = st.form_submit_button("Start the evaluation")
    if not go:
        return
    # a registered judge without judges to choose from is "(none)": no stored configuration to read
    outcome = view.start(db_path(), dataset, fields, lambda j: read_store(judging.judge_config, j) if judges else None)
    if outcome.worker is None:
        st.error(outcome.message)
        return
    started.append(outcome.worker)
    st.success(outcome.message)
