"""Style control: the leaderboards fitted with answer length and markdown held equal."""

import streamlit as st

from app_pages._loaders import compute
from app_pages._widgets import notice, show_table
from core.app import Unavailable
from core.app import leaderboard as lb
from core.app import style as app_style
from core.app.safe_text import escape_markdown as esc
from core.domain import Slice, slice_label


def load_style(dataset: str, judge: str | None, where: Slice) -> app_style.StyleControlledLeaderboard | Unavailable:
    return compute(app_style.style_controlled_leaderboard, dataset, judge, where, spinner="Fitting with style control…")


def style_section(dataset: str, judge: str | None, where: Slice) -> None:
    """The style-controlled leaderboards (human votes, and the judge's hard labels), each with the places a
    model moves once answer length and markdown are held equal."""
    targets: list[tuple[str, str | None]] = [("Human votes", None)]
    if judge is not None:
        targets.append((f"{judge} (Hard-Elo)", judge))
    st.subheader("With style control" + (f" on {esc(slice_label(where))}" if where else ""))
    tabs = st.tabs([t[0] for t in targets])
    for tab, (_, who) in zip(tabs, targets):
        with tab:
            res = load_style(dataset, who, where)
            if isinstance(res, Unavailable):
                notice(esc(res.reason))
                continue
            show_table(app_style.display_table(res), hide_index=True, width="stretch")
            st.caption(lb.style_caption(res.n_battles, res.n_votes, res.note))
            with st.expander("Style coefficients"):
                show_table(app_style.coefficient_table(res), hide_index=True)
            for issue in res.issues:
                notice(esc(issue))
