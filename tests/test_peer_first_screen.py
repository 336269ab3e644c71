"""On a star design the Leaderboard leads with the peer's own number; its Elo equals the CLI's on real trees.

AlpacaEval's users compare LC win rates, Arena-Hard's the Arena-Hard score,
FastChat's the MT-Bench score: a dataset imported from their published files
opens on that number (headline and first table), the Elo leaderboards below.
"""

from __future__ import annotations

import pytest

from core.app.data import import_path
from core.app.leaderboard import ratings, view_for
from core.app.winrate import win_rate_view
from core.store import Store
from tests.conftest import ROOT, shared_path

pytestmark = pytest.mark.shared

AE2 = "weighted_alpaca_eval_gpt4_turbo"
AH_JUDGE = "DeepSeek-R1-Distill-Llama-70B"


@pytest.fixture(scope="module")
def peers_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("peers") / "peers.duckdb"
    with Store.open(db) as s:
        import_path(s, shared_path("alpaca_eval_more") / "results", "alpaca-eval", dataset="ae", annotator=AE2)
        import_path(s, shared_path("arena_hard_v0.1_judged"), "arena-hard", dataset="ah")
    return db


@pytest.mark.parametrize("dataset", ["ae", "ah"])
def test_the_view_equals_the_cli_for_every_model_on_the_real_trees(peers_db, dataset):
    """Hard-Elo on the page (the re-placed judge Elo) and on the CLI (the joint MLE) agree model for model, and
    no Elo leaves [0, 3000] (a model above a strong baseline used to be placed at −4,000,000)."""
    with Store.open(peers_db, read_only=True) as s:
        judge = str(s.judges_frame(dataset)["judge"].iloc[0])
        view, _ = view_for(s, dataset, judge, None, 0.1)
        cli = ratings(s, dataset, "hard")  # the only judge, taken without --judge
    page = view.table.set_index("model")["hard_elo"].astype(float)
    assert page.notna().all() and page.between(0, 3000).all(), page.to_dict()
    frame = cli.frame.set_index("model")
    assert set(frame.index) == set(page.index)
    for model, elo in frame["elo"].items():
        assert page[model] == pytest.approx(elo, abs=1.0), model
    assert frame["elo"].between(0, 3000).all()


def _leaderboard(db, dataset, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["dataset"] = dataset
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    return at


def _order(at) -> list[str]:
    """The page's headings and headline in the order drawn."""
    out = []
    for el in at.main:
        kind = getattr(el, "type", "")
        if kind not in ("subheader", "markdown"):
            continue
        value = str(el.value)
        if kind == "subheader" or value.startswith("#"):
            out.append(value)
    return out


@pytest.mark.integration
def test_an_alpaca_eval_tree_opens_on_the_lc_win_rate(peers_db, monkeypatch):
    at = _leaderboard(peers_db, "ae", monkeypatch)
    order = _order(at)
    assert order[0].startswith("### ") and "highest length-controlled win rate" in order[0], order
    assert "FuseChat" in order[0]
    first_sub = next(i for i, h in enumerate(order) if h.startswith("Against the baseline"))
    elo = order.index("Elo leaderboards")
    assert first_sub < elo, order
    with Store.open(peers_db, read_only=True) as s:
        rows = win_rate_view(s, "ae", judge=AE2).rows
    top = rows[rows["model"] != "gpt4_1106_preview"].iloc[0]
    assert f"{top['lc_win_rate']:.1f}%" in order[0]
    table = next(d.value for d in at.dataframe if "LC win rate (%)" in d.value.columns)
    # each model's caveat as the view states it (AlpacaEval's extreme-change warning; none fires on this tree)
    assert dict(zip(table["model"], table["LC caveat"])) == dict(zip(rows["model"], rows["lc_caveat"]))


@pytest.mark.integration
def test_an_arena_hard_directory_opens_on_the_arena_hard_score(peers_db, monkeypatch):
    at = _leaderboard(peers_db, "ah", monkeypatch)
    order = _order(at)
    # the model as the judgment files name it; its name escaped for Markdown
    assert order[0].startswith("### **jondurbin/bagel-8b-v1\\.0** has an Arena-Hard score of 6.3 (95% CI"), order
    assert "gpt-4-0314" in order[0]
    assert order.index(next(h for h in order if h.startswith("Arena-Hard score against"))) < order.index(
        "Elo leaderboards"
    )
