"""Consistency of a judge as a proxy for its own strength (METHODS.md §8).

For one judge and each unordered contestant pair {i, j} with n_ij contests:
``p_ij = (wins_i + 0.5·ties)/n_ij``; ``Var̄ = Σ n_ij·p_ij(1 − p_ij) / Σ n_ij``;
``Consistency = 1 − 4·Var̄`` (0 = coin flip, 1 = always the same winner).
Across judges: Pearson r with their own arena Elo, a least-squares line
predicting Elo from consistency (in-sample MAE, as the paper reports, and
leave-one-out MAE), the mean rank displacement, and the correlation inside
clusters of judges close in Elo (the paper's weakness among top models).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from core.domain import wilson


def matchup_table(contests: pd.DataFrame) -> pd.DataFrame:
    """Per judge and unordered pair: n, wins of the alphabetically first model, ties, p."""
    c = contests
    lo = np.where(c["first"] < c["second"], c["first"], c["second"])
    hi = np.where(c["first"] < c["second"], c["second"], c["first"])
    tie = c["winner"].astype(str).str.lower() == "tie"
    lo_wins = (c["winner"] == lo) & ~tie
    t = pd.DataFrame(
        {"judge": c["judge"], "model_1": lo, "model_2": hi, "win_1": lo_wins.astype(float), "tie": tie.astype(float)}
    )
    g = t.groupby(["judge", "model_1", "model_2"], as_index=False).agg(
        n=("tie", "size"), wins_1=("win_1", "sum"), ties=("tie", "sum")
    )
    g["p"] = (g["wins_1"] + 0.5 * g["ties"]) / g["n"]
    return g


def consistency_scores(contests: pd.DataFrame, matchups: set[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Consistency per judge (optionally on a subset of unordered matchups), plus position bias."""
    m = matchup_table(contests)
    if matchups is not None:
        keys = {(min(a, b), max(a, b)) for a, b in matchups}
        m = m[[(a, b) in keys for a, b in zip(m["model_1"], m["model_2"])]]
    m = m.assign(var=m["n"] * m["p"] * (1 - m["p"]))
    agg = m.groupby("judge").agg(var=("var", "sum"), n=("n", "sum"), n_matchups=("n", "size"))
    out = pd.DataFrame(
        {
            "judge": agg.index,
            "consistency": 1 - 4 * agg["var"] / agg["n"],
            "n_contests": agg["n"].astype(int).to_numpy(),
            "n_matchups": agg["n_matchups"].to_numpy(),
        }
    )
    c = contests
    decisive = c["winner"].astype(str).str.lower() != "tie"
    first_won = decisive & (c["winner"] == c["first"])
    pos = pd.DataFrame({"judge": c["judge"], "decisive": decisive, "first": first_won}).groupby("judge").sum()
    out["first_position_win_rate"] = out["judge"].map(pos["first"] / pos["decisive"])
    # the Wilson interval as two float columns: a column of [lo, hi] arrays is not hashable (Streamlit's caches
    # hash their arguments) and not a column Arrow or a CSV holds
    cis = {j: wilson(pos.loc[j, "first"], pos.loc[j, "decisive"]) for j in pos.index}
    out["first_position_lower"] = out["judge"].map(lambda j: float(cis[j][0]))
    out["first_position_upper"] = out["judge"].map(lambda j: float(cis[j][1]))
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class ConsistencyStudy:
    judges: pd.DataFrame  # judge, consistency, n_contests, arena_elo, predicted_elo, ranks, position bias
    pearson_r: float
    elo_mae: float  # in-sample, as in the paper
    elo_mae_loo: float  # leave-one-judge-out, an honest out-of-sample figure
    slope: float
    intercept: float
    mean_rank_displacement: float
    clusters: pd.DataFrame  # cluster, n_judges, elo range, pearson_r
    matchups_used: int


def study(
    contests: pd.DataFrame,
    judge_elo: pd.Series | None,
    contestant_elo: pd.Series | None = None,
    top_matchups: int | None = None,
    n_clusters: int = 3,
) -> ConsistencyStudy:
    """Consistency vs the judges' arena Elo (``judge_elo`` indexed by judge name)."""
    matchups = None
    if top_matchups is not None:
        if contestant_elo is None:
            raise ValueError("restricting to the matchups with the largest Elo gap needs the contestants' Elo")
        m = matchup_table(contests)[["model_1", "model_2"]].drop_duplicates()
        gap = (m["model_1"].map(contestant_elo) - m["model_2"].map(contestant_elo)).abs()
        m = m.assign(gap=gap).dropna().nlargest(top_matchups, "gap")
        matchups = set(zip(m["model_1"], m["model_2"]))
    scores = consistency_scores(contests, matchups)
    n_used = int(scores["n_matchups"].max()) if len(scores) else 0
    scores["arena_elo"] = scores["judge"].map(judge_elo) if judge_elo is not None else np.nan
    ok = scores.dropna(subset=["arena_elo"])
    x, y = ok["consistency"].to_numpy(), ok["arena_elo"].to_numpy()
    if len(ok) < 3:  # no judge Elo, or too few judges with one: the correlation is undefined
        nan = float("nan")
        return ConsistencyStudy(scores, nan, nan, nan, nan, nan, nan, pd.DataFrame(), n_used)
    r = float(stats.pearsonr(x, y)[0])
    slope, intercept = np.polyfit(x, y, 1)
    pred = intercept + slope * x
    loo = []
    for k in range(len(x)):
        keep = np.arange(len(x)) != k
        s, i = np.polyfit(x[keep], y[keep], 1)
        loo.append(abs(i + s * x[k] - y[k]))
    scores.loc[ok.index, "predicted_elo"] = pred
    rank_c = ok["consistency"].rank(ascending=False)
    rank_e = ok["arena_elo"].rank(ascending=False)
    scores.loc[ok.index, "rank_consistency"] = rank_c
    scores.loc[ok.index, "rank_elo"] = rank_e
    # clusters of judges by Elo (equal-count, sorted): the paper's within-cluster weakness
    order = np.argsort(-y)
    rows = []
    for k, idx in enumerate(np.array_split(order, n_clusters)):
        cr = float(stats.pearsonr(x[idx], y[idx])[0]) if len(idx) >= 3 else float("nan")
        rows.append(
            {
                "cluster": ["high", "medium", "low"][k] if n_clusters == 3 else str(k),
                "n_judges": len(idx),
                "elo_min": float(y[idx].min()),
                "elo_max": float(y[idx].max()),
                "pearson_r": cr,
            }
        )
    return ConsistencyStudy(
        scores,
        r,
        float(np.mean(np.abs(pred - y))),
        float(np.mean(loo)),
        float(slope),
        float(intercept),
        float(np.mean(np.abs(rank_c - rank_e))),
        pd.DataFrame(rows),
        n_used,
    )
