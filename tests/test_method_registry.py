"""The rating-method registry drives the Leaderboard: every registered method is offered, drawn and listed, on
the page and in the CLI, and a method added only through the registry appears in both (issue 35, item 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.app import Unavailable
from core.app import leaderboard as lb
from core.domain import Ratings, ranked, theta_to_elo
from core.methods import RATING_METHODS, TARGETS, RatingMethod, method_heading
from core.store import Store
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
JUDGE = "judge-strong"


def tiny_fit(votes: pd.DataFrame, *, ci=None, n_boot=0, seed=0, progress=None) -> Ratings:
    """A method only this test registers: each model's share of wins, on the logit scale, as Elo."""
    ends = pd.concat(
        [
            pd.DataFrame({"model": votes["model_a"], "y": votes["y"]}),
            pd.DataFrame({"model": votes["model_b"], "y": 1.0 - votes["y"]}),
        ]
    )
    share = ends.groupby("model")["y"].agg(["mean", "size"])
    p = share["mean"].clip(0.01, 0.99).to_numpy()
    frame = pd.DataFrame(
        {
            "model": share.index,
            "elo": theta_to_elo(np.log(p / (1 - p))),
            "lower": np.nan,
            "upper": np.nan,
            "se": np.nan,
            "n_battles": share["size"].to_numpy(),
        }
    )
    return Ratings("tiny", ranked(frame), n_battles=len(votes))


TINY = RatingMethod("tiny", "Tiny-Elo", "#117733", "votes", "tests.test_method_registry:tiny_fit", "win share")


@pytest.fixture(scope="module")
def demo_db(demo_raw_store) -> str:
    return str(demo_raw_store)


@pytest.fixture
def with_tiny(monkeypatch):
    monkeypatch.setitem(RATING_METHODS, "tiny", TINY)
    return TINY


def _cli_json(capsys, *argv: str) -> dict:
    from core.cli import main

    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", [*RATING_METHODS, "tiny"])
def test_every_registered_method_is_in_the_view_and_the_cli(method, demo_db, capsys, request):
    if method == "tiny":
        request.getfixturevalue("with_tiny")
    m = RATING_METHODS[method]
    judge = JUDGE if m.needs_judge else None
    with Store.open(demo_db, read_only=True) as s:
        others = [] if method in TARGETS else [method]
        assert method in TARGETS or method in lb.other_methods(has_votes=True, has_judge=True)
        view, _ = lb.view_for(s, "demo", JUDGE, None, 0.1)
        parts = lb.view_parts(s, "demo", JUDGE, None, others=others)
        rated = lb.ratings(s, "demo", method, judge=judge)
    view = parts.view(0.1) if others else view
    assert f"{method}_elo" in view.table
    # the table lists it under its registry label, with the same numbers the method's own fit gives
    table = lb.display_table(view, methods=[method])
    assert (method_heading(method) if method in TARGETS else m.label) in table.columns
    got = view.table.set_index("model")[f"{method}_elo"].dropna()
    want = rated.frame.set_index("model")["elo"].loc[got.index]
    # the judge's Elo in the view is the deployment fit of the held-out protocol (battle rows, its own small
    # regularisation); the CLI's is the pair-table fit: the same estimate to within a fraction of an Elo point
    tol = 1.0 if method in ("hard", "soft") else 1e-6
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), atol=tol)
    # the chart draws it with the registry's label and colour
    drawn = lb.chart_input(view, [method])
    assert list(drawn.methods) == [f"{method}_elo"] and drawn.methods[f"{method}_elo"].startswith(m.label.split()[0])
    from core import charts

    fig = charts.leaderboard_intervals(drawn.frame, drawn.methods)
    assert fig.data[0].marker.color == m.colour
    # the CLI prints it (in this process, so that a method registered here is known to the parser)
    args = ["leaderboard", "--db", demo_db, "--dataset", "demo", "--method", method, "--json"]
    out = _cli_json(capsys, *args, *(["--judge", judge] if judge else []))
    assert out["method"] == method
    assert {r["model"] for r in out["models"]} == set(rated.frame["model"])


def test_a_method_removed_from_the_registry_is_not_offered(demo_db, with_tiny, monkeypatch):
    assert "tiny" in lb.other_methods(has_votes=True, has_judge=False)
    monkeypatch.delitem(RATING_METHODS, "tiny")
    assert "tiny" not in lb.other_methods(has_votes=True, has_judge=False)
    assert all(RATING_METHODS[m].data == "votes" for m in lb.other_methods(has_votes=True, has_judge=False))
    assert lb.other_methods(has_votes=False, has_judge=False) == []


@pytest.mark.integration
def test_the_leaderboard_page_draws_a_method_added_only_through_the_registry(demo_db, with_tiny, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", demo_db)
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({"dataset": "demo", "judge": JUDGE, "show": "human,tiny"})
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    chart = next(c for c in at.get("plotly_chart") if "leaderboard_chart" in (c.proto.id or ""))
    names = [t["name"] for t in json.loads(chart.proto.spec)["data"]]
    assert names == ["human Elo", "Tiny-Elo"]
    table = next(d.value for d in at.dataframe if "Model" in d.value.columns)
    assert "Tiny-Elo" in table.columns


def broken_fit(votes: pd.DataFrame, *, ci=None, n_boot=0, seed=0, progress=None) -> Ratings:
    """A registered method with a bug: every interval lies above its own point."""
    res = tiny_fit(votes)
    frame = res.frame.assign(lower=res.frame["elo"] + 1.4, upper=res.frame["elo"] - 0.8 + 2.0)
    return Ratings("broken", frame, n_battles=res.n_battles)


def test_a_method_whose_frame_breaks_the_contract_is_refused_everywhere(demo_db, monkeypatch, capsys):
    """Issue 44: a method whose frame has lower > elo was printed as `1593.8 [1595.2, 1593.0]`."""
    from core.cli import main
    from core.domain import ratings_problem

    monkeypatch.setitem(
        RATING_METHODS,
        "broken",
        RatingMethod("broken", "Broken", "#882255", "votes", "tests.test_method_registry:broken_fit", "a bug"),
    )
    with Store.open(demo_db, read_only=True) as s:
        got = lb.ratings(s, "demo", "broken")
        tiny = tiny_fit(s.votes_frame("demo").assign(y=1.0))
    assert isinstance(got, Unavailable) and "does not hold its Elo" in got.reason
    assert main(["leaderboard", "--db", demo_db, "--dataset", "demo", "--method", "broken"]) == 2
    assert "breaks the ratings contract" in capsys.readouterr().err
    # the contract itself, on frames written here
    assert ratings_problem(tiny.frame) is None
    assert "missing column" in (ratings_problem(tiny.frame.drop(columns="rank")) or "")
    assert "two rows" in (ratings_problem(pd.concat([tiny.frame, tiny.frame.iloc[:1]])) or "")
    assert "±∞" in (ratings_problem(tiny.frame.assign(upper=np.inf)) or "")


def test_a_methods_registry_label_is_its_one_name_in_tables_help_sentences_and_files(monkeypatch):
    """One vocabulary: renaming a method in its registry entry renames it in the table's headings and their
    help, the headline, the export's columns and the display names (no second list of labels to forget)."""
    import dataclasses

    from core.app import display

    for name, label in (("human", "crowd Elo"), ("hard", "Judge-BT")):
        monkeypatch.setitem(RATING_METHODS, name, dataclasses.replace(RATING_METHODS[name], label=label))
    models = ["m0", "m1", "m2"]
    elo = np.array([1550.0, 1500.0, 1450.0])
    human = pd.DataFrame({"model": models, "elo": elo, "lower": elo - 10, "upper": elo + 10, "n_battles": 90})
    hard = pd.DataFrame({"model": models, "elo": elo + [5.0, 0.0, -5.0], "se": 2.0, "n_battles": 90})
    view = lb.leaderboard_view(human, hard, None, None, 0.1, None)
    shown = lb.display_table(view)
    assert {"Crowd Elo", "Judge-BT"} <= set(shown.columns), list(shown.columns)
    assert {"Crowd Elo", "Judge-BT"} <= set(lb.column_help(view))
    assert "crowd Elo" in (view.headline() or "")
    assert {"crowd Elo", "Judge-BT"} <= set(lb.export_table(view).columns)
    assert display.label("hard") == display.label("hard-Elo") == "Judge-BT"
    assert method_heading("human") == "Crowd Elo"
    assert not {"human Elo", "Human Elo", "Hard-Elo"} & (set(shown.columns) | set(lb.export_table(view).columns))
