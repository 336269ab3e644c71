"""'Compare with…': another dataset of this store, or a bundle exported earlier, against this dataset."""

import streamlit as st

from app_pages._loaders import compute
from app_pages._widgets import notice, show_table
from core.app import diff as app_diff
from core.app.safe_text import escape_markdown as esc


def load_comparison(old: str, new: str, judge: str | None) -> app_diff.Comparison | str:
    return compute(app_diff.comparison_or_why, old, new, judge, spinner="Comparing the two snapshots…")


def load_bundle_comparison(data: bytes, name: str, dataset: str, judge: str | None) -> app_diff.Comparison | str:
    spinner = "Comparing with the bundle…"
    return compute(app_diff.upload_comparison_or_why, dataset, judge, data, name, spinner=spinner)


def compare_panel(dataset: str, judge: str | None, datasets: list[str]) -> None:
    """Each model's Elo in the earlier snapshot and in this one, on the human votes or the judge's labels."""
    with st.expander("Compare with…", icon=":material/compare_arrows:"):
        st.caption(
            "What changed since last time: each model's Elo in the other snapshot and in this one, the change "
            "with a 95% interval that accounts for the votes both share, and a verdict with Holm's correction "
            f"across models (family-wise α = {app_diff.DIFF_ALPHA})."
        )
        others = [d for d in datasets if d != dataset]
        source = st.radio("Earlier snapshot", ["a bundle file", "another dataset"], horizontal=True, key="cmp_source")
        whose = [("human votes", None)] + ([(f"{judge}'s hard labels", judge)] if judge else [])
        on = st.radio("On", [w[0] for w in whose], horizontal=True, key="cmp_on")
        who = dict(whose)[on]
        result: app_diff.Comparison | str | None = None
        if source == "another dataset":
            if not others:
                notice("this store has no other dataset: import an earlier snapshot, or upload a bundle.")
                return
            old = st.selectbox("Dataset", others, key="cmp_dataset")
            result = load_comparison(old, dataset, who)
        else:
            upload = st.file_uploader("Bundle (.zip from `export --bundle`)", type=["zip"], key="cmp_bundle")
            if upload is None:
                return
            result = load_bundle_comparison(upload.getvalue(), upload.name, dataset, who)
        if isinstance(result, str):
            notice(esc(result))
            return
        st.markdown(esc(result.summary()))
        show_table(result.table(), hide_index=True, width="stretch")
        st.caption(esc(result.method()) + ".")
