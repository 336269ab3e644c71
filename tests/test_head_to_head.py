"""Head to head: P(a ≻ b) and the direct battles of the pair, from the persisted fit, in either order."""

from __future__ import annotations

import numpy as np
import pytest

from core.app import leaderboard as lb
from core.app.data import build_demo
from core.codec import decode, encode
from core.domain import sigmoid
from core.store import Store


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("h2h") / "d.duckdb"
    with Store.open(db) as s:
        build_demo(s, seed=4, small=True)
    return db


def test_the_direct_battles_and_scores_match_the_labelled_pairs_in_both_orders(demo):
    with Store.open(demo, read_only=True) as s:
        fit = lb.pair_model(s, "demo", "human", None, None)
        raw = s.pair_stats("demo", "human")
    fit = decode(encode(fit))  # what a page reads back from the store
    counts = raw.groupby(["model_a", "model_b"])[["n", "s"]].sum()
    checked = 0
    for (a, b), _ in counts.head(40).iterrows():
        forward = counts.loc[(a, b)] if (a, b) in counts.index else None
        backward = counts.loc[(b, a)] if (b, a) in counts.index else None
        n = (0 if forward is None else forward["n"]) + (0 if backward is None else backward["n"])
        s_a = (0 if forward is None else forward["s"]) + (0 if backward is None else backward["n"] - backward["s"])
        for x, y, score in ((a, b, s_a), (b, a, n - s_a)):  # either model as A
            row = lb.compare([fit], x, y, "demo").table.iloc[0]
            assert row["battles"] == round(n)
            assert row["a_score"] == pytest.approx(score / n)
            ia, ib = fit.models.index(x), fit.models.index(y)
            assert row["p_a"] == pytest.approx(float(sigmoid(fit.theta[ia] - fit.theta[ib])))
            assert row["lower"] <= row["p_a"] <= row["upper"]
        checked += 1
    assert checked >= 20
    assert len(fit.pairs) == len({tuple(sorted(k)) for k in counts.index})  # one row per unordered pair
    assert (fit.pairs["lo"] < fit.pairs["hi"]).all() and np.issubdtype(fit.pairs["lo"].dtype, np.integer)
