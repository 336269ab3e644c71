"""Overview: what the store holds for the selected dataset."""

import streamlit as st

from core import charts
from pages._shared import caption, get_store, page_guard, selected_dataset, version

st.title("Overview")


@st.cache_data(show_spinner=False)
def _overview(dataset: str, token: str):
    store = get_store()
    info = next(d for d in store.info()["datasets"] if d["name"] == dataset)
    return (info, store.models_frame(dataset), store.judges_frame(dataset), store.languages_frame(dataset),
            store.pair_coverage(dataset))


with page_guard("The overview"):
    store = get_store()
    dataset = selected_dataset()
    if store is None:
        st.stop()
    if dataset is None:
        st.info("No datasets yet. Run `make run` (it builds the demo arena), `python -m core simulate`, "
                "or import a file with `python -m core import`.")
        st.stop()
    info, models, judges, languages, pairs = _overview(dataset, version())
    c = st.columns(6)
    c[0].metric("Models", info["n_models"])
    c[1].metric("Battles", f"{info['n_battles']:,}")
    c[2].metric("Human votes", f"{info['n_human_votes']:,}")
    c[3].metric("Annotators", info["n_annotators"])
    c[4].metric("Prompts", info["n_prompts"])
    c[5].metric("Judges", len(info["judges"]))
    if info["n_human_votes"] == 0:
        st.info("This dataset has no human votes: human Elo, τ calibration and conformal intervals need them. "
                "Judge-only views (hard labels, bias, consistency) still work.")

    left, right = st.columns([1, 1])
    with left:
        st.subheader("Models")
        show = models.rename(columns={"true_elo": "true Elo (simulated)"})
        if show["true Elo (simulated)"].isna().all():
            show = show.drop(columns=["true Elo (simulated)"])
        st.dataframe(show, hide_index=True, width="stretch")
    with right:
        st.subheader("Judges")
        if judges.empty:
            st.caption("No judgments in this dataset yet (the Admin page runs a judge).")
        else:
            st.dataframe(judges[["judge", "family", "template", "n_judgments", "orders", "n_parse_errors"]],
                         hide_index=True, width="stretch")
        st.subheader("Languages")
        st.plotly_chart(charts.count_bars(languages.head(20), "language", "n_battles", "Battles per language",
                                          "language", "battles"), width="stretch")
        caption("each bar counts the battles whose prompt is in that language (top 20).")

    st.subheader("Battle-graph coverage")
    st.plotly_chart(charts.coverage_heatmap(pairs, sorted(models["model"])), width="stretch")
    caption("each cell counts battles between two models; blank cells are pairs never compared. "
            "Bradley–Terry needs a connected graph, not a full one.")
