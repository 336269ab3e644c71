"""The dashboard through Streamlit's AppTest: every page on five stores, sliders, query params, the
leaderboard's search, pins, top-N and head to head, the default judge, and which pages say they cannot run."""

from __future__ import annotations

import json
import re

import duckdb
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages._registry import pages
from core.app.data import import_path
from core.domain import CRITERIA
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT, shared_path, viewer_pages

# multi-process or Streamlit AppTest throughout: the integration tier (pytest.ini)
pytestmark = pytest.mark.integration

APP = str(ROOT / "app.py")
PAGES = [str(pages()[key].path) for key in viewer_pages()]  # Vote and Admin: their own tests


@pytest.fixture(scope="module")
def demo_db(demo_store):
    return str(demo_store)


@pytest.fixture(scope="module")
def softelo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "softelo.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("softelo_sample_annotations.csv"), "softelo")
    return str(path)


@pytest.fixture(scope="module")
def contests_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "contests.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("judge_contests.csv"), "contests")
    return str(path)


@pytest.fixture(scope="module")
def arena_hard_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "arena_hard.duckdb"
    with Store.open(path) as s:
        import_path(s, shared_path("arena_hard_v0.1"), "arena-hard")
    return str(path)


@pytest.fixture(scope="module")
def alpaca_db(tmp_path_factory):
    """AlpacaEval's GPT-4-turbo preferences on claude-2: a judge without rubric scores, no human votes."""
    path = tmp_path_factory.mktemp("app") / "alpaca.duckdb"
    src = shared_path("alpaca_eval_2") / "results" / "claude-2" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    with Store.open(path) as s:
        import_path(s, src, "alpaca-eval")
    return str(path)


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "empty.duckdb"
    Store.open(path).close()
    return str(path)


def _app(db: str, monkeypatch, page: str | None = None, params: dict | None = None) -> AppTest:
    monkeypatch.setenv("ARENA_DB", db)
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    return at


def _no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("store", ["demo_db", "softelo_db", "contests_db", "arena_hard_db", "empty_db"])
def test_every_page_renders(page, store, request, monkeypatch):
    at = _app(request.getfixturevalue(store), monkeypatch, page)
    _no_errors(at)
    if store == "empty_db":
        assert at.info or at.sidebar.info


def _figure(at: AppTest, key: str = "leaderboard_chart") -> dict:
    charts = [c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id] or at.get("plotly_chart")
    return json.loads(charts[0].proto.spec)


def _tau_option(at: AppTest, target: float) -> float:
    """The τ slider's grid value nearest to ``target`` (the slider is log-spaced)."""
    options = [float(str(o).split()[0]) for o in at.select_slider(key="tau").options]
    return min(options, key=lambda o: abs(np.log(o) - np.log(target)))


def test_sliders_change_the_figure_and_the_statement_names_the_procedure(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    before = _figure(at)
    text_before = at.success[0].value
    assert "τ refitted on every fold" in text_before  # the bars are drawn at the fitted τ
    at.slider(key="alpha").set_value(0.3).run()
    _no_errors(at)
    assert at.success[0].value != text_before and "0.30" in at.success[0].value
    after_alpha = _figure(at)
    assert after_alpha["data"] != before["data"]  # interval bars shrink
    tau = _tau_option(at, 2.0)
    at.select_slider(key="tau").set_value(tau).run()
    _no_errors(at)
    after_tau = _figure(at)
    soft = lambda fig: next(t["x"] for t in fig["data"] if t["name"].startswith("Soft-Elo"))
    assert soft(after_tau) != soft(after_alpha)
    # the statement follows the slider; at a τ the votes reject it is a warning, not a green box
    boxes = [b.value for b in (*at.success, *at.warning) if "in every fold" in b.value]
    assert len(boxes) == 1 and f"τ fixed at {tau:.3g} in every fold" in boxes[0]
    assert boxes[0] in [w.value for w in at.warning] and boxes[0].startswith(f"**τ = {tau:.3g} is not a τ")
    assert any(w.value.startswith(f"τ = {tau:.3g}, chosen: outside") for w in at.warning)  # beside the headline
    assert at.query_params["tau"] == f"{tau:.3g}" and at.query_params["alpha"] == "0.30"
    at.button(key="back_to_fitted_tau").click().run()  # back to the fitted τ and its procedure
    assert "τ refitted on every fold" in at.success[0].value and "tau" not in at.query_params


def test_query_params_reproduce_the_view(demo_db, monkeypatch):
    at = _app(
        demo_db,
        monkeypatch,
        "app_pages/leaderboard.py",
        params={"dataset": "demo", "judge": "judge-position", "alpha": "0.25", "tau": "0.70"},
    )
    _no_errors(at)
    assert at.slider(key="alpha").value == pytest.approx(0.25)
    assert at.select_slider(key="tau").value == pytest.approx(_tau_option(at, 0.70))
    assert at.query_params["judge"] == "judge-position" and at.query_params["dataset"] == "demo"
    # the page computed the position judge's view: its own fitted τ is in the caption
    from core.stats.calibration import fit_tau

    with Store.open(demo_db, read_only=True) as s:
        f = s.battle_frame("demo", "judge-position")
    tau = fit_tau(f["gap"], f["human_y"]).tau
    assert any(f"fitted τ = {tau:.3f}" in c.value for c in at.caption)  # beside the τ slider, in the page header


@pytest.mark.parametrize("present", [False, True])
def test_a_tau_off_the_grid_in_a_link_is_snapped_and_the_url_rewritten(demo_db, monkeypatch, present):
    """One link, one τ (#45): ?tau=0.777 showed 0.794 on the slider while the URL kept 0.777, and presentation
    mode computed at 0.777 — other Soft-Elo numbers for the same link."""
    from core.app.leaderboard import snap_tau, tau_grid
    from core.stats.calibration import fit_tau

    with Store.open(demo_db, read_only=True) as s:
        f = s.battle_frame("demo", "judge-position")
    grid = tau_grid(fit_tau(f["gap"], f["human_y"]).tau)
    want = snap_tau(0.777, grid)
    assert want != 0.777  # off the grid, or the test proves nothing
    params = {"dataset": "demo", "judge": "judge-position", "tau": "0.777"}
    if present:
        params["present"] = "1"
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py", params=params)
    _no_errors(at)
    assert at.query_params["tau"] == f"{want:.3g}"
    if not present:
        assert at.select_slider(key="tau").value == pytest.approx(want)
    else:
        # presentation caps the table and the chart at one screen, and says how many models it leaves out
        with Store.open(demo_db, read_only=True) as s:
            n_models = len(s.models_frame("demo"))
        assert len(at.table[0].value) == 10
        said = " ".join(c.value for c in at.caption)
        assert f"The top 10, and {n_models - 10} more models" in said


def test_softelo_store_says_why_intervals_are_missing_or_shows_them(softelo_db, monkeypatch):
    at = _app(softelo_db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    # 14 models: enough for α = 0.1 (needs 9), so intervals are shown
    assert at.success and "14 held-out models" in at.success[0].value
    at.slider(key="alpha").set_value(0.05).run()
    assert at.warning and "too few" in at.warning[0].value


def test_scope_alpha_slider_moves_the_threshold(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/selective.py")
    _no_errors(at)
    msgs = lambda: [m.value for m in at.success] + [w.value for w in at.warning]
    before = msgs()
    at.slider(key="scope_alpha").set_value(0.3).run()
    _no_errors(at)
    assert msgs() != before and any("0.30" in m for m in msgs())


def test_calibration_tau_slider_changes_the_reliability_curve(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/calibration.py")
    _no_errors(at)
    before = _figure(at, "reliability_chart")
    at.select_slider(key="tau").set_value(_tau_option(at, 3.0)).run()
    _no_errors(at)
    after = _figure(at, "reliability_chart")
    assert before["data"][2]["x"] != after["data"][2]["x"]  # the slider-τ curve moved


def _leaderboard_models(at: AppTest) -> list[str]:
    table = at.dataframe[0].value
    return [m.removeprefix("📌 ") for m in table["Model"]]


def test_leaderboard_answers_first_sorted_by_human_elo_with_tie_aware_ranks(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    headline = at.markdown[0].value
    table = at.dataframe[0].value
    assert headline.startswith("### #1 ") and table["Model"].iloc[0] in headline
    assert list(table["Human Elo"]) == sorted(table["Human Elo"], reverse=True)
    assert {
        "Rank",
        "Model",
        "Organisation",
        "Human Elo",
        "95% CI",
        "Votes",
        "Soft-Elo",
        "Soft CI",
        "Hard-Elo",
        "Hard CI",
        "Conformal 90%",
        "Judged",
        "Δ rank",
    } <= set(table)
    assert not any(c.startswith(("human_", "interval_", "rank_")) for c in table.columns)  # readable names only
    # rank = 1 + the number of models whose CI lies entirely above: ties share a rank, the first is 1
    assert table["Rank"].iloc[0] == 1 and (table["Rank"].diff().dropna() >= 0).all()
    tied = int((table["Rank"] == 1).sum()) - 1
    assert (f"statistically tied with {tied} model" in headline) if tied else ("ahead of every other" in headline)


def test_leaderboard_search_pins_and_top_n(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    at.selectbox(key="lb_top").set_value("top 10").run()
    assert len(_leaderboard_models(at)) == 10
    full = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    full.selectbox(key="lb_top").set_value("all").run()
    order = _leaderboard_models(full)
    last = order[-1]
    at.multiselect(key="lb_pins").select(last).run()
    _no_errors(at)
    shown = at.dataframe[0].value["Model"].tolist()
    assert len(shown) == 11 and shown[-1] == f"📌 {last}"  # a pinned model stays in view beyond the top 10
    family = at.dataframe[0].value["Organisation"].iloc[0]
    at.text_input(key="lb_search").input(family).run()
    rows = at.dataframe[0].value
    assert set(rows["Organisation"]) <= {family} | set(rows.loc[rows["Model"].str.startswith("📌"), "Organisation"])
    assert len(rows) >= 1


def test_head_to_head_gives_a_win_probability_with_an_interval(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    at.selectbox(key="lb_top").set_value("all").run()
    order = _leaderboard_models(at)
    at.selectbox(key="h2h_a").set_value(order[0]).run()
    at.selectbox(key="h2h_b").set_value(order[-1]).run()
    _no_errors(at)
    h2h = next(d.value for d in at.dataframe if any(str(c).startswith("P(") for c in d.value.columns))
    row = h2h.set_index("method").loc["human votes"]
    p = float(row[f"P({order[0]} beats {order[-1]})"].rstrip("%")) / 100
    lo, hi = (float(x.rstrip("%")) / 100 for x in row["95% CI"].split("–"))
    assert 0.5 < lo <= p <= hi < 1  # the top model beats the bottom one, with an interval around it
    assert len(h2h) == 3  # human votes, hard labels, soft targets


def test_default_judge_is_the_one_whose_elo_best_predicts_human_elo(demo_db, monkeypatch):
    from core.stats.heldout import Predictor, leave_one_model_out

    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py")
    chosen = at.query_params["judge"]
    with Store.open(demo_db, read_only=True) as s:
        frames = {j: s.battle_frame("demo", j) for j in ("judge-position", "judge-strong", "judge-verbose")}
    mae = {}
    for judge, frame in frames.items():
        held = leave_one_model_out(frame, (Predictor("soft", "soft"),))
        mae[judge] = held.table["soft_resid"].abs().mean()
    assert chosen == min(mae, key=mae.get)
    assert any(
        "best predicts the human Elo" in c.value and f"{mae[chosen]:.1f} Elo" in c.value for c in at.sidebar.caption
    )


@pytest.mark.parametrize(
    "store, blocked",
    [
        ("demo_db", {}),
        ("softelo_db", {"Judge bias": "shown first"}),  # its verdicts say neither the order shown nor the texts
        (
            "contests_db",
            {"Calibration": "no human votes", "Residuals": "no human votes", "Selective judging": "no human votes"},
        ),
        (
            "arena_hard_db",
            {
                "Leaderboard": "no human votes and no judgments",
                "Calibration": "no judge",
                "Judge bias": "no judge",
                "Judges & annotators": "no judge verdicts",
                "Analyses": "no votes, judgments or correctness labels",
            },
        ),
    ],
)
def test_sidebar_says_which_pages_cannot_run_and_why(store, blocked, request, monkeypatch):
    at = _app(request.getfixturevalue(store), monkeypatch)
    _no_errors(at)
    notes = [c.value for c in at.sidebar.caption if c.value.startswith("Not available on this dataset")]
    if not blocked:
        assert not notes
        return
    assert len(notes) == 1
    for page, why in blocked.items():
        assert f"**{page}**: " in notes[0] and why in notes[0].split(f"**{page}**: ")[1].split(";")[0]
    assert "**Overview**" not in notes[0] and "**Admin**" not in notes[0]


def test_empty_store_says_so_on_every_page(empty_db, monkeypatch):
    at = _app(empty_db, monkeypatch)
    assert any("store is empty" in i.value for i in at.sidebar.info)


def test_the_judges_page_shows_the_agreement_figures_of_the_selected_judge(demo_db, monkeypatch):
    from core.app.judges import agreement_table, human_agreement

    at = _app(demo_db, monkeypatch, "app_pages/judges.py")
    _no_errors(at)
    shown = next(df.value for df in at.dataframe if "pairs counted" in df.value.columns)
    judge = next(h.value for h in at.subheader if h.value.startswith("Agreement of "))
    name = judge.removeprefix("Agreement of ").removesuffix(" with the human votes")
    with Store.open(demo_db, read_only=True) as s:
        want = agreement_table(human_agreement(s, "demo", name))
    assert shown.reset_index(drop=True).equals(want)
    assert list(shown["figure"]) == [
        "with ties (MT-Bench setup S1)",
        "without ties (MT-Bench setup S2)",
        "unanimous battles",
    ]


def test_the_selective_page_states_ltts_share_of_all_splits_over_alpha(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/selective.py")
    _no_errors(at)
    line = next(c.value for c in at.caption if c.value.startswith("Share of all "))
    n_splits = int(re.search(r"Share of all (\d+) splits", line).group(1))
    shares = {float(a): float(x) for a, x in re.findall(r"α = (\d+\.\d+): (\d+\.\d+)", line)}
    assert shares and all(0 <= x <= 1 for x in shares.values())
    # each share is a count of splits over α out of all of them (a multiple of 1/n_splits up to rounding)
    assert all(abs(round(x * n_splits) / n_splits - x) <= 0.005 for x in shares.values())
    assert "not over α" in line


def test_compare_with_an_earlier_dataset_shows_each_models_change_and_verdict(tmp_path, monkeypatch):
    """Issue 36: the Leaderboard's "Compare with…" against another dataset of the store says what moved, as
    ``core.app.diff.compare_datasets`` computes it (the votes both snapshots share counted once)."""
    import dataclasses

    from core.app.diff import compare_datasets

    t = simulate_arena(0, DemoConfig.small())
    keep = set(t.battles["battle_key"].iloc[:3000])
    old = dataclasses.replace(
        t,
        name="last-month",
        battles=t.battles[t.battles["battle_key"].isin(keep)],
        votes=t.votes[t.votes["battle_key"].isin(keep)],
        judgments=t.judgments[t.judgments["battle_key"].isin(keep)],
    )
    db = str(tmp_path / "two.duckdb")
    with Store.open(db) as s:
        s.write_dataset(t)
        s.write_dataset(old)
        want = compare_datasets(s, "last-month", "demo")
    at = _app(db, monkeypatch, "app_pages/leaderboard.py", params={"dataset": "demo"})
    _no_errors(at)
    at.radio(key="cmp_source").set_value("another dataset").run()
    at.selectbox(key="cmp_dataset").set_value("last-month").run()
    _no_errors(at)
    assert any(m.value.replace("\\", "") == want.summary() for m in at.markdown)  # as shown, escapes removed
    table = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert len(table) == 12 and list(table["model"]) == list(want.table()["model"])
    assert "Elo in last-month" in table.columns


def test_a_slice_in_the_url_draws_the_leaderboard_of_its_battles(demo_db, monkeypatch):
    at = _app(demo_db, monkeypatch, "app_pages/leaderboard.py", params={"dataset": "demo", "slice": "language=de"})
    _no_errors(at)
    with Store.open(demo_db, read_only=True) as s:
        n_de = s._cur().execute("SELECT count(*) FROM votes JOIN battles USING (battle_id) WHERE language = 'de'")
        n_de = n_de.fetchone()[0]
    caption = next(c.value for c in at.caption if "On the slice" in c.value)
    assert "language = de" in caption and f"Human Elo from {n_de:,} human votes" in caption
    assert at.multiselect(key="lb_slice").value == ["language=de"]
    assert at.query_params["slice"] == "language=de"


@pytest.mark.parametrize("judge, alpha", [("judge-strong", 0.1), ("judge-position", 0.25)])
def test_the_page_draws_the_view_the_report_and_the_bundle_compose(demo_db, monkeypatch, judge, alpha):
    """One view, two assemblies: the Leaderboard page builds it from cached parts, the report, the bundle and
    new-model placement from ``core.app.leaderboard.view_for``; the table a visitor sees is the composer's."""
    from core.app import leaderboard as lb

    at = _app(
        demo_db,
        monkeypatch,
        "app_pages/leaderboard.py",
        params={"dataset": "demo", "judge": judge, "alpha": f"{alpha:.2f}"},
    )
    _no_errors(at)
    shown = next(d.value for d in at.dataframe if "Model" in d.value.columns)
    with Store.open(demo_db, read_only=True) as s:
        view, _ = lb.view_for(s, "demo", judge, None, alpha)
    want = lb.display_table(view, lb.select_rows(view.table, top_n=20), methods=("human", "hard", "soft"))
    assert list(shown.columns) == list(want.columns)
    assert shown.astype(str).reset_index(drop=True).equals(want.astype(str).reset_index(drop=True))


def test_a_link_naming_an_unknown_dataset_or_judge_says_so(demo_db, monkeypatch):
    """Issue 45: a link naming an unknown dataset or judge silently showed another one."""
    at = _app(demo_db, monkeypatch, params={"dataset": "no-such-data"})
    said = " ".join(w.value for w in at.warning)
    assert "no-such-data" in said and "showing **demo** instead" in said
    at = _app(demo_db, monkeypatch, params={"dataset": "demo", "judge": "no-such-judge"})
    said = " ".join(w.value for w in at.warning)
    assert "no-such-judge" in said and "showing **" in said
    # a link that names what the store has draws no such warning
    at = _app(demo_db, monkeypatch, params={"dataset": "demo", "judge": "judge-strong"})
    assert not any("which this store does not have" in w.value for w in at.warning)


@pytest.mark.parametrize("store", ["demo_db", "softelo_db", "contests_db", "arena_hard_db", "alpaca_db"])
def test_a_control_the_data_cannot_use_is_left_out_with_one_line_why(store, request, monkeypatch):
    """Issue 45: controls a dataset cannot use were drawn disabled at a value nobody chose."""
    db = request.getfixturevalue(store)
    at = _app(db, monkeypatch, "app_pages/leaderboard.py")
    _no_errors(at)
    assert not [w.label for w in [*at.slider, *at.select_slider] if w.disabled]
    con = duckdb.connect(db, read_only=True)
    try:  # what the data holds, read here: human votes, and rubric gaps of the judge shown
        judges = [j for (j,) in con.execute("SELECT DISTINCT name FROM judges").fetchall()]
        picker = [w.value for w in at.sidebar.selectbox if w.label == "Judge"]
        judge = picker[0] if picker else (judges[0] if judges else None)
        assert picker or len(judges) <= 1
        votes = con.execute("SELECT count(*) FROM votes").fetchone()[0]
        gaps = con.execute(
            "SELECT count(*) FROM judgments g JOIN judges j USING (judge_id) WHERE j.name = ? AND ("
            + " OR ".join(f"(a_{c} IS NOT NULL AND b_{c} IS NOT NULL)" for c in CRITERIA)
            + ")",
            [judge],
        ).fetchone()[0]
    finally:
        con.close()
    captions = [c.value for c in at.caption]
    has_tau = any(w.label.startswith("τ") for w in at.select_slider)
    has_alpha = any(w.label.startswith("α") for w in at.slider)
    if judge is None:  # no judge: no judge leaderboard, so neither control (nor a line about them)
        assert not has_tau and not has_alpha
        return
    assert has_tau == (gaps > 0) and has_tau != any(c.startswith("No τ") for c in captions)
    assert has_alpha == (votes > 0) and has_alpha != any(c.startswith("No α") for c in captions)
