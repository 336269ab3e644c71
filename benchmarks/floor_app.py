"""The smallest page like the Leaderboard: a title, a 50-row table and a 50-point Plotly chart.

``bench_app.py`` times its first draw in a fresh Chromium beside the Leaderboard's, in the same run: what
any Streamlit page with a table and a chart costs on this machine (the front end's own load, its table and
chart components, plotly.js), against which the Leaderboard's figure is read.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

st.title("Leaderboard")
table = pd.DataFrame({"model": [f"model-{k:02d}" for k in range(50)], "elo": np.linspace(1300.0, 1700.0, 50)})
st.dataframe(table, hide_index=True)
st.plotly_chart(go.Figure(go.Scatter(x=table["elo"], y=table["model"], mode="markers")))
st.caption("How to read this: one marker per model.")
