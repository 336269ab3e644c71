"""Below the chart: the models without human votes, the Elo by conversation turn, head to head, and the
downloads."""

import pandas as pd
import streamlit as st

from app_pages._leaderboard.controls import Controls
from app_pages._loaders import load_result
from app_pages._store import read_store
from app_pages._widgets import export_buttons, notice, show_table
from core.app import Unavailable, newmodel, report
from core.app import leaderboard as lb
from core.app.safe_text import escape_markdown as esc

H2H_CAPTION = (
    "Win probability from each method's Bradley–Terry fit, σ(θ_A − θ_B), with a 95% interval from the sandwich "
    "covariance of the difference; the direct battles are counted as each method labels them (a tie counts half)."
)
REPORT_HELP = (
    "One self-contained file: headline, table, chart, calibration, caveats and provenance; opens without a "
    "network and prints to A4 or Letter (`python -m core report --format pdf` prints it for you)."
)


def load_by_turn(dataset: str, method: str, judge: str | None) -> pd.DataFrame | Unavailable:
    return load_result(lb.ratings_by_turn, dataset, method, judge)


def load_pair_model(dataset: str, target: str, judge: str | None, tau: float | None) -> lb.PairModel | Unavailable:
    return load_result(lb.pair_model, dataset, target, judge, tau)


def unrated_section(view: lb.LeaderboardView) -> None:
    """Where each model without human votes stands, predicted from its judge Elo."""
    unrated = newmodel.standings(view)
    if unrated:
        st.subheader("Models without human votes: where they stand")
        lines, caption = lb.unrated_text(unrated)
        for line in lines:
            st.markdown(line)
        st.caption(caption)


def by_turn_section(dataset: str, judge: str | None, has_human: bool, c: Controls) -> None:
    """The Elo fitted per conversation turn group (none on a slice: the turn groups are slices of their own)."""
    method = lb.turn_method(has_human, judge, bool(c.where))
    if method is None:
        return
    by_turn = load_by_turn(dataset, method, judge if method == "hard" else None)
    if not isinstance(by_turn, Unavailable):
        st.subheader("By conversation turn")
        show_table(lb.turn_table(by_turn), hide_index=True)
        st.caption(lb.turn_caption(method))


def head_to_head_section(dataset: str, judge: str | None, view: lb.LeaderboardView, c: Controls) -> None:
    """Two models' win probability under each method, and their direct battles (on the whole dataset)."""
    st.subheader("Head to head")
    if c.where:
        st.caption("On all battles of the dataset (the slice chooses the leaderboard above).")
    names = view.table["model"].tolist()
    if len(names) < 2:
        return
    h1, h2 = st.columns(2)
    a = h1.selectbox("Model A", names, index=0, key="h2h_a")
    b = h2.selectbox("Model B", names, index=1, key="h2h_b")
    if a == b:
        notice("choose two different models.")
        return
    fits = [load_pair_model(dataset, t, j, tt) for t, j, tt in lb.head_to_head_targets(judge, c.tau.pair_key)]
    h2h = lb.compare(fits, a, b, dataset)
    if isinstance(h2h, Unavailable):
        notice(esc(h2h.reason))
        return
    show_table(lb.head_to_head_table(h2h), hide_index=True, width="stretch")
    st.caption(H2H_CAPTION)


def exports_section(
    dataset: str, judge: str | None, view: lb.LeaderboardView, c: Controls, others: tuple[str, ...]
) -> None:
    """The table's files and the one-file report, named by dataset, judge, τ and α."""
    st.subheader("Take it with you")
    named_tau = c.tau.named
    export_buttons(
        lambda: lb.export_table(view),
        report.file_stem("leaderboard", dataset, judge, named_tau, c.alpha),
        lb.export_title(dataset, c.where),
        key="lb_export",
        context=report.report_context(dataset, judge, named_tau, c.alpha),
    )
    st.download_button(
        "Report (HTML, prints to PDF)",
        data=lambda: read_store(report.report_html, dataset, judge, c.tau.report_tau, c.alpha, others=others),
        file_name=report.report_file_name(dataset, judge, named_tau, c.alpha),
        mime="text/html",
        icon=":material/description:",
        key="lb_report",
        help=REPORT_HELP,
    )
