"""Judges & annotators: annotator reliability (am-ELO) and online-Elo instability."""

import streamlit as st

from core import charts
from core.amelo import fit_amelo
from core.ratings import online_elo_shuffles
from pages._shared import caption, get_store, load_votes, page_guard, selected_dataset, version

st.title("Judges & annotators")


@st.cache_data(show_spinner=False)
def amelo(dataset, token, min_records):
    return fit_amelo(load_votes(dataset, token), min_records=min_records)


@st.cache_data(show_spinner=False)
def shuffles(dataset, token, n):
    return online_elo_shuffles(load_votes(dataset, token), n_shuffles=n)


@st.cache_data(show_spinner=False)
def consistency(dataset, token):
    from core.consistency import study

    contests = get_store().contests_frame(dataset)
    return None if contests.empty else study(contests, None)


with page_guard("The judges & annotators page"):
    dataset = selected_dataset()
    if get_store() is None or dataset is None:
        st.info("Select a dataset.")
        st.stop()
    v = version()
    st.subheader("Judge consistency")
    cs = consistency(dataset, v)
    if cs is None:
        st.info("No judge verdicts in this dataset.")
    else:
        judges = cs.judges
        elo_file = st.file_uploader("Judges' own arena Elo (CSV: judge, arena_elo) to correlate with", type="csv")
        if elo_file is not None:
            import pandas as pd

            from core.consistency import study

            e = pd.read_csv(elo_file)
            if {"judge", "arena_elo"} <= set(e.columns):
                full = study(get_store().contests_frame(dataset), e.set_index("judge")["arena_elo"])
                st.plotly_chart(charts.consistency_vs_elo(full.judges.dropna(subset=["arena_elo"]), full.slope,
                                                          full.intercept, full.pearson_r), width="stretch")
                caption("each point is a judge; more consistent judges (picking the same winner for the same "
                        f"matchup) tend to be stronger models. Elo MAE of the line: {full.elo_mae:.1f}.")
                judges = full.judges
            else:
                st.warning("The CSV needs the columns judge and arena_elo.")
        st.dataframe(judges[["judge", "consistency", "n_contests", "first_position_win_rate"]]
                     .sort_values("consistency", ascending=False), hide_index=True)
        caption("consistency = 1 − 4 × the contest-weighted variance of each matchup's outcome (METHODS §8).")
    votes = load_votes(dataset, v)
    st.subheader("Annotator reliability (am-ELO)")
    if votes.empty or votes["annotator"].isna().all():
        st.info("This dataset has no human votes with annotator ids: am-ELO estimates each annotator's ability "
                "from who voted what.")
    else:
        min_records = st.slider("minimum votes per annotator (δ)", 10, 200, 50, step=10, key="amelo_delta")
        try:
            res = amelo(dataset, v, min_records)
        except ValueError as exc:
            st.warning(str(exc))
        else:
            ann = res.annotators
            st.plotly_chart(charts.annotator_abilities(ann), width="stretch")
            caption("each point is an annotator; the ability says how strongly their votes follow the consensus "
                    "ranking (1 = average). At or below zero they vote against it: flagged as anomalous.")
            st.metric("anomalous annotators", f"{int(ann['anomalous'].sum())} of {int((~ann['excluded']).sum())}")
    st.subheader("Online Elo instability")
    if votes.empty:
        st.info("No human votes to replay.")
    else:
        n = st.select_slider("shuffled battle orders", [20, 50, 100], value=50, key="shuffles")
        study = shuffles(dataset, v, n)
        st.plotly_chart(charts.shuffle_instability(study.frame), width="stretch")
        caption(f"online Elo (K = 4) replayed in {n} random orders moves each model by {study.online_spread:.1f} "
                f"Elo on average (sd); the maximum-likelihood fit moves by {study.mle_spread:.1e}.")
