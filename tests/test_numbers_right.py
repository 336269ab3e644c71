"""Issue 32: the numbers on presented views, each defect with a test that failed on the code before the fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from core import charts
from core.app.leaderboard import chart_input, display_table, export_table, leaderboard_view, rank_change, view_for
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.cli import run_cli


def _view_with_wide_human_intervals():
    """Six models; the human Elo's intervals are wide (every human rank is a tie at 1), the judge's narrow: the
    old Δ rank (tie-aware human rank − nearly ordinal judge rank) was ≤ 0 for every model."""
    models = [f"m{k}" for k in range(6)]
    human_elo = np.array([1560.0, 1540.0, 1520.0, 1500.0, 1480.0, 1460.0])
    human = pd.DataFrame(
        {"model": models, "elo": human_elo, "lower": human_elo - 200, "upper": human_elo + 200, "n_battles": 50}
    )
    # the judge swaps m0/m1 and m4/m5: it moves m1 and m5 up one place, m0 and m4 down one
    judge_elo = np.array([1540.0, 1560.0, 1520.0, 1500.0, 1460.0, 1480.0])
    hard = pd.DataFrame({"model": models, "elo": judge_elo, "se": 1.0, "n_battles": 100})
    return leaderboard_view(human, hard, None, None, 0.1, None, models=None)


def test_rank_change_compares_ordinal_places_and_moves_both_ways():
    view = _view_with_wide_human_intervals()
    shift = dict(zip(view.table["model"], rank_change(view)))
    assert shift == {"m0": -1, "m1": 1, "m2": 0, "m3": 0, "m4": -1, "m5": 1}
    shown = display_table(view).set_index("Model")["Δ rank"]
    assert shown.to_dict() == shift
    # the export carries the same column with the same values
    exported = export_table(view).set_index("model")["rank change by judge"]
    assert exported.to_dict() == shift


def test_rank_change_sums_to_zero_and_has_both_signs_on_the_demo(demo_view):
    shift = rank_change(demo_view).dropna()
    assert int(shift.sum()) == 0  # a permutation of places
    assert (shift > 0).any() and (shift < 0).any()


def _error_bars(fig):
    return {tr.name: tr.error_x.array is not None for tr in fig.data}


def test_the_legend_never_promises_human_bars_that_are_not_drawn(demo_view):
    for shown in (("human", "hard"), ("human",), ("human", "hard", "soft"), ("hard",)):
        drawn = chart_input(demo_view, shown)
        fig = charts.leaderboard_intervals(
            drawn.frame, drawn.methods, interval=drawn.interval, interval_label=drawn.interval_label
        )
        bars = _error_bars(fig)
        if drawn.interval is None:
            assert not any(bars.values())
            continue
        # exactly the marker named as carrying the bars has them, and they are finite
        assert [n for n, has in bars.items() if has] == [drawn.methods[drawn.interval]]
        tr = next(t for t in fig.data if t.name == drawn.methods[drawn.interval])
        assert np.isfinite(np.asarray(tr.error_x.array, float)).any()
    human_only = chart_input(demo_view, ("human", "hard"))
    assert human_only.interval == "human_elo" and "human Elo" in human_only.interval_label


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("numbers") / "demo.duckdb"
    with Store.open(path) as s:
        s.write_dataset(simulate_arena(0, DemoConfig()))
    return path


@pytest.fixture(scope="module")
def demo_view(demo_db):
    with Store.open(demo_db, read_only=True) as s:
        view, _ = view_for(s, "demo", "judge-strong", None, 0.2)
    return view


def test_kendall_intervals_contain_their_estimates_over_seeds(demo_db):
    from core.app.analyses import alignment

    with Store.open(demo_db, read_only=True) as s:
        for seed in range(4):
            res = alignment(s, "demo", "judge-strong", n_boot=100, seed=seed)
            table = res.table()
            assert len(table) == 6
            assert (table["kendall_lo"] <= table["kendall"]).all() and (table["kendall"] <= table["kendall_hi"]).all()
            kd = table["kendall_distance"]
            assert (table["kd_lo"] <= kd).all() and (kd <= table["kd_hi"]).all()


def test_kendall_percentile_interval_is_the_quantiles_of_resampled_models():
    from core.stats.agreement import kendall_tau
    from core.stats.alignment import kendall_percentile_interval

    rng = np.random.default_rng(5)
    x = rng.normal(size=30)
    y = x + rng.normal(scale=0.7, size=30)
    lo, hi = kendall_percentile_interval(x, y, np.random.default_rng(1), 400)
    # the same draws by hand
    r = np.random.default_rng(1)
    reps = [kendall_tau(x[i], y[i]) for i in (r.integers(0, 30, 30) for _ in range(400))]
    np.testing.assert_allclose([lo, hi], np.quantile(reps, [0.025, 0.975]), rtol=0, atol=1e-12)
    assert lo <= kendall_tau(x, y) <= hi


def _softelo_csv_without_gaps(path, n_models=12, n_battles=600, seed=3):
    """A SoftElo-layout file whose rubric scores are equal on both sides: every score gap is 0, so τ is undefined."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, n_models)
    rows = ["row_id,model_a,model_b,human_pref,judge_pref,scores_a,scores_b,meta_lang"]
    same = "\"{'helpfulness': 7.0}\""
    for k in range(n_battles):
        a, b = rng.choice(n_models, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
        human = 1.0 if rng.random() < p else 0.0
        judge = 1.0 if rng.random() < p else 0.0
        rows.append(f"r{k},m{a},m{b},{human},{judge},{same},{same},en")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.integration
def test_heldout_without_a_fittable_tau_keeps_hard_elo_and_says_why_soft_is_missing(tmp_path):
    import json

    f = _softelo_csv_without_gaps(tmp_path / "flat.csv")
    done = run_cli("heldout", str(f), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["tau"]["full"] is None and out["tau"]["heldout_mean"] is None and out["tau"]["reason"]
    hard = out["methods"]["hard"]
    assert hard["n_models"] == 12 and np.isfinite(hard["mae"])
    assert out["methods"]["soft"]["n_models"] == 0 and out["methods"]["soft"]["undefined"].startswith("τ undefined")
    text = run_cli("heldout", str(f))
    assert text.returncode == 0 and "soft     undefined: τ undefined" in text.stdout
    assert "nan" not in text.stdout.lower()


@pytest.mark.parametrize(
    "name, family",
    [
        ("cerebras-gpt-6.7B", "cerebras"),  # was "openai": a substring match on "gpt"
        ("opt-7b", "meta"),  # was "other"
        ("gpt-j-6b", "eleutherai"),
        ("gpt4_1106_preview", "openai"),
        ("meta-llama/Llama-2-7b-chat-hf", "meta"),
        ("phind-codellama-34b", None),  # "phi" must be a whole prefix
        ("dynamo-7b", None),  # unknown: blank, never a guess
    ],
)
def test_organisation_only_when_a_known_prefix_names_it(name, family):
    from core.ingest.common import known_family

    assert known_family(name) == family


@pytest.mark.shared
def test_pandalm_models_carry_their_known_organisations(tmp_path):
    from core.app.data import import_path
    from tests.conftest import shared_path

    src = shared_path("pandalm_testset_v1")
    with Store.open(tmp_path / "p.duckdb") as s:
        import_path(s, src, "pandalm")
        fam = dict(zip(*s.models_frame("pandalm")[["model", "family"]].to_numpy().T))
    assert fam["cerebras-gpt-6.7B"] == "cerebras" and fam["opt-7b"] == "meta" and fam["llama-7b"] == "meta"
    assert "other" not in fam.values()


def _votes(rows):
    frame = pd.DataFrame(rows, columns=["battle_id", "model_a", "model_b", "y"])
    frame["annotator"] = "a0"
    return frame


def test_online_elo_shows_its_order_spread_apart_and_names_degenerate_records():
    from core.stats.ratings import ratings_from_votes

    rng = np.random.default_rng(0)
    rows = []
    for k in range(400):
        a, b = rng.choice(["p", "q", "r"], 2, replace=False)
        rows.append((k, a, b, float(rng.random() < 0.6)))
    rows += [(400 + k, "tied", "p", 0.5) for k in range(5)]  # a record of ties only
    res = ratings_from_votes(_votes(rows), n_boot=30)
    f = res.frame.set_index("model")
    assert res.ci is None and f[["lower", "upper", "se"]].isna().all().all()  # no CI in the CI fields
    assert (f["order_lower"] <= f["elo"]).all() and (f["elo"] <= f["order_upper"]).all()
    assert any("only ties: tied (5)" in i for i in res.issues)
    assert any("not sampling uncertainty" in i for i in res.issues)
    records = {r["model"]: r for r in res.to_json()["models"]}
    assert "order_lower" in records["tied"] and (res.n_battles, res.n_votes) == (405, 405)


def test_the_share_of_splits_over_alpha_counts_every_split():
    from core.stats.selective.evaluation import _split_statistics

    # 10 splits: 2 accept something (one over α = 0.1, one under), 8 accept nothing
    n_acc = np.array([10, 10, 0, 0, 0, 0, 0, 0, 0, 0])
    n_err = np.array([5, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    row, risk, _ = _split_statistics("ltt", 0.1, n_acc, n_err, np.full(10, 20))
    assert row["share_over_alpha"] == 0.1  # was 0.5: 1 of the 2 splits that accepted something
    assert row["empty_splits"] == 8 and np.isnan(risk[2:]).all()


def test_the_accepted_only_leaderboard_prints_no_ridge_bound_as_an_elo(demo_db):
    from core.app.selective import leaderboard_display, scope_at_alpha
    from core.stats import selective

    with Store.open(demo_db, read_only=True) as s:
        bf = s.battle_frame("demo", "judge-verbose")
    found = False
    for alpha in (0.1, 0.15, 0.2):
        at = scope_at_alpha(bf, "rubric", alpha, "scope")
        if not hasattr(at, "leaderboard") or "accepted only" not in at.leaderboard:
            continue
        sl = selective.fit_selective_leaderboard(bf, "rubric", alpha, "scope")
        fit = sl.part("accepted only").fit
        no_mle = {str(m) for i in fit.issues if i.kind == "no_mle" for m in i.models}
        col = at.leaderboard["accepted only"]
        absent = set(col.index) - {str(m) for m in fit.models}  # no battle left in this leaderboard
        assert set(col[col.isna()].index) == (no_mle & set(col.index)) | absent  # blank exactly where no MLE
        assert all("no Elo in accepted only" in at.leaderboard.loc[m, "caveat"] for m in no_mle & set(col.index))
        # what the page shows: a blank there, as its caption says, never "None"
        shown = leaderboard_display(at)["accepted only"]
        assert set(shown[shown == ""].index) == set(col[col.isna()].index)
        assert not any(v is None or v is pd.NA for v in shown)
        found |= bool(no_mle)
    assert found, "no α left a model with a perfect record in the accepted-only fit"


def _perfect_record_arena():
    """Six models in a round robin with wins and losses, plus 'lucky' that won its single battle."""
    from core.domain import DatasetTables

    rng = np.random.default_rng(2)
    models = [f"m{k}" for k in range(6)]
    rows, votes = [], []
    key = 0
    for _ in range(40):
        for i in range(6):
            for j in range(i + 1, 6):
                rows.append((key, models[i], models[j]))
                votes.append((key, "a" if rng.random() < 0.5 + 0.05 * (j - i) else "b"))
                key += 1
    rows.append((key, "lucky", "m5"))
    votes.append((key, "a"))
    battles = pd.DataFrame(rows, columns=["battle_key", "model_a", "model_b"])
    v = pd.DataFrame(votes, columns=["battle_key", "winner"]).assign(annotator="h0")
    return DatasetTables(
        name="pr",
        source="test",
        models=pd.DataFrame({"model": [*models, "lucky"]}),
        battles=battles,
        votes=v,
        annotators=pd.DataFrame({"annotator": ["h0"]}),
    )


@pytest.mark.integration
def test_a_perfect_record_is_never_the_headline_nor_ranked_by_the_penalty(tmp_path):
    import json

    db = tmp_path / "pr.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_perfect_record_arena())
        view, _ = view_for(s, "pr", None, None, 0.1)
    top = view.table.iloc[0]
    assert top["model"] != "lucky" and view.headline() is not None and "lucky" not in view.headline()
    row = view.table.set_index("model").loc["lucky"]
    assert (
        pd.isna(row["rank"])
        and pd.isna(row["human_elo"])
        and row["human_elo_note"] == "undefined: won all its 1 battle"
    )
    assert view.table["model"].iloc[-1] == "lucky"  # listed apart, last
    assert "lucky (undefined: won all its 1 battle)" in (view.set_apart_statement() or "")
    shown = display_table(view).set_index("Model").loc["lucky"]
    assert shown["95% CI"] == "undefined: won all its 1 battle" and pd.isna(shown["Human Elo"])
    exported = export_table(view).set_index("model").loc["lucky"]
    assert exported["human Elo note"] == "undefined: won all its 1 battle" and pd.isna(exported["human Elo"])
    # the CLI's JSON carries the reason per model, and no number
    done = run_cli("leaderboard", "--db", str(db), "--dataset", "pr", "--method", "human", "--json")
    assert done.returncode == 0, done.stderr
    rec = {r["model"]: r for r in json.loads(done.stdout)["models"]}
    assert rec["lucky"]["elo"] is None and rec["lucky"]["rank"] is None
    assert rec["lucky"]["elo_note"] == "undefined: won all its 1 battle"
    assert rec["m0"]["elo_note"] == "" and rec["m0"]["elo"] is not None
    # the others are ranked from 1, and their Elo is the MLE on the battles among them (METHODS §1: the limit as
    # lucky's Elo goes to +∞), not the ridge fallback: an independent fit of the six models' votes
    ranks = sorted(r["rank"] for r in rec.values() if r["rank"] is not None)
    assert ranks[0] == 1
    tables = _perfect_record_arena()
    joined = tables.battles.merge(tables.votes, on="battle_key")
    joined = joined[joined["model_a"] != "lucky"]
    names = sorted(set(joined["model_a"]) | set(joined["model_b"]))
    ia = joined["model_a"].map(names.index).to_numpy()
    ib = joined["model_b"].map(names.index).to_numpy()
    y = (joined["winner"] == "a").to_numpy(float)

    def nll(free: np.ndarray) -> float:
        theta = np.concatenate([[0.0], free])
        d = theta[ia] - theta[ib]
        return float(np.sum(np.logaddexp(0, -d) * y + np.logaddexp(0, d) * (1 - y)))

    mle = optimize.minimize(nll, np.zeros(len(names) - 1), method="BFGS", options={"gtol": 1e-10}).x
    mle_elo = np.concatenate([[0.0], mle]) * 400 / np.log(10)
    shown = np.array([rec[m]["elo"] for m in names]) - rec[names[0]]["elo"]
    np.testing.assert_allclose(shown, mle_elo, atol=0.05)
    text = run_cli("leaderboard", "--db", str(db), "--dataset", "pr", "--method", "human")
    assert text.returncode == 0, text.stderr
    assert "as bounds" not in text.stdout + text.stderr
    first_row = next(line for line in text.stdout.splitlines() if line.strip()[:1].isdigit())
    assert first_row.split()[0] == "1"
    assert "not ranked (no maximum-likelihood Elo):" in text.stdout and "lucky" in text.stdout.split("not ranked")[1]


@pytest.mark.shared
def test_the_readme_evaluate_walkthrough_names_the_dataset_its_import_creates(tmp_path):
    import re

    from core.app.data import import_path
    from tests.conftest import ROOT, shared_path

    text = (ROOT / "README.md").read_text()
    block = text[text.index("### Evaluate a new model") :]
    block = block[: block.index("```", block.index("```bash") + 3)]
    imported = re.search(r"core import\s+--db \S+ \.\./shared/datasets/(\S+)", block)
    named = set(re.findall(r"--dataset (\S+)", block))
    assert imported and named
    with Store.open(tmp_path / "e.duckdb") as s:
        result = import_path(s, shared_path(imported.group(1)), "auto")
    assert named == {result.dataset}


@pytest.mark.shared
def test_alpaca_eval_states_no_position_bias_because_the_shown_order_is_unknown(tmp_path):
    from core.app.bias import bias_report, claims
    from core.app.data import import_path
    from core.app.report import report_html
    from tests.conftest import shared_path

    src = shared_path("alpaca_eval_2") / "results" / "phi-2" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    with Store.open(tmp_path / "ae.duckdb") as s:
        result = import_path(s, src, "alpaca-eval")
        judge = "weighted_alpaca_eval_gpt4_turbo"
        assert set(s.judgments_frame(result.dataset)["order"]) == {"unknown"}
        report = bias_report(s, result.dataset, judge)
        said = claims(report)
        html = report_html(s, result.dataset, judge)
    texts = [t for _, t in said]
    assert not any(t.startswith("Position bias") for t in texts)  # was: "picks the first-shown answer in 73.3%"
    note = next(t for t in texts if t.startswith("Shown order unknown"))
    assert f"{report['position']['n_order_unknown']:,} were shown in an order the source did not record" in note
    assert report["position"]["n_order_unknown"] > 700 and report["position"]["n_decisive"] == 0
    assert "first-shown" not in html


@pytest.mark.shared
def test_the_softelo_sample_says_its_verdicts_are_averaged_over_both_orders(tmp_path):
    from core.app.bias import bias_report, claims
    from core.app.data import import_path
    from tests.conftest import shared_path

    with Store.open(tmp_path / "se.duckdb") as s:
        result = import_path(s, shared_path("softelo_sample_annotations.csv"), "softelo")
        bf = s.battle_frame(result.dataset, "softelo-judge")
        texts = [t for _, t in claims(bias_report(s, result.dataset, "softelo-judge"))]
    decisive = int(bf["judge_hard"].isin([0.0, 1.0]).sum())  # recomputed here: 748 in the published sample
    assert decisive == 748
    assert not any(t.startswith("No decisive") for t in texts)  # was: "No decisive verdicts"
    assert any(
        f"of the judge's {decisive:,} decisive verdicts, {decisive:,} are averaged over both orders" in t for t in texts
    )


@pytest.mark.parametrize("tau", [None, 0.02, 0.49, 0.89, 5.0])
def test_the_coverage_box_is_green_only_where_the_data_supports_the_tau(demo_db, tau):
    from core.stats.calibration import fit_tau

    with Store.open(demo_db, read_only=True) as s:
        view, frame = view_for(s, "demo", "judge-strong", tau, 0.2)
    fit = fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))
    supported = tau is None or fit.lower <= tau <= fit.upper
    assert view.coverage_level() == ("success" if supported else "warning")
    statement = view.coverage_statement()
    assert statement is not None and statement.startswith("**τ =") is (not supported)
    # the check sentence counts exactly what is drawn
    t = view.table
    both = t["human_elo"].notna() & t["interval_lower"].notna()
    inside = both & t["human_elo"].between(t["interval_lower"], t["interval_upper"])
    assert f"Here {int(inside.sum())} of the {int(both.sum())} models with a human Elo" in statement
    note = view.tau_note()
    if tau is None:
        assert note is None
    else:
        assert note is not None and note.startswith(f"τ = {tau:.3g}, chosen") and f"fitted {fit.tau:.3g}" in note
        assert ("inside" in note) is supported


def test_an_unfittable_tau_is_never_used_silently(tmp_path):
    from core.app.data import import_path

    f = _softelo_csv_without_gaps(tmp_path / "flat.csv")
    with Store.open(tmp_path / "flat.duckdb") as s:
        ds = import_path(s, f, "softelo").dataset
        default, _ = view_for(s, ds, "softelo-judge", None, 0.2)
        chosen, _ = view_for(s, ds, "softelo-judge", 1.0, 0.2)
    assert "soft_elo" not in default.table and default.interval_method == "hard"  # no Soft-Elo at a τ nobody chose
    assert default.tau_note() is None and not default.tau_far
    assert chosen.tau_far and chosen.coverage_level() == "warning"
    assert (chosen.tau_note() or "").startswith("τ = 1, chosen (τ cannot be fitted: ")


def test_the_export_carries_every_column_the_leaderboard_shows_with_the_same_values(demo_db):
    from core.app.bundle import leaderboard_files

    with Store.open(demo_db, read_only=True) as s:
        table, record = leaderboard_files(s, "demo", "judge-strong", 0.2)
        view, _ = view_for(s, "demo", "judge-strong", None, 0.2)
    shown = display_table(view).set_index("Model")
    exported = table.set_index("model")
    pairs = {
        "Rank": "rank",
        "Organisation": "organisation",
        "Human Elo": "human Elo",
        "Votes": "votes",
        "Soft-Elo": "Soft-Elo",
        "Hard-Elo": "Hard-Elo",
        "Judged": "judged battles",
        "Δ rank": "rank change by judge",
    }
    assert set(pairs) <= set(shown.columns)
    for page_col, file_col in pairs.items():
        assert shown[page_col].astype(str).to_dict() == exported.loc[shown.index, file_col].astype(str).to_dict(), (
            page_col
        )
    for label, lo, hi in (("95% CI", "human Elo 95% lower", "human Elo 95% upper"), ("Conformal 80%", None, None)):
        assert label in shown.columns
        if lo:
            text = exported[lo].astype(str) + "–" + exported[hi].astype(str)
            assert (shown[label] == text.loc[shown.index]).all()
    conformal = (
        exported["human Elo 80% conformal lower"].astype(str)
        + "–"
        + exported["human Elo 80% conformal upper"].astype(str)
    )
    assert (shown["Conformal 80%"] == conformal.loc[shown.index]).all()
    rows = {r["model"]: r for r in record["rows"]}
    assert all(rows[m]["rank_change"] == v for m, v in shown["Δ rank"].items())
    assert record["coverage_level"] == "success" and record["tau_note"] is None


def test_a_perfect_record_in_the_judges_labels_is_never_the_headline_without_human_votes(tmp_path):
    from core.domain import DatasetTables

    rng = np.random.default_rng(4)
    models = [f"m{k}" for k in range(6)]
    rows, verdicts = [], []
    for key in range(600):
        i, j = rng.choice(6, 2, replace=False)
        rows.append((key, models[i], models[j]))
        verdicts.append("a" if rng.random() < 0.5 + 0.06 * (j - i) else "b")
    for key in range(600, 606):  # 'ace' wins all of its 6 judged battles
        rows.append((key, "ace", models[key % 6]))
        verdicts.append("a")
    tables = DatasetTables(
        name="j",
        source="test",
        models=pd.DataFrame({"model": [*models, "ace"]}),
        battles=pd.DataFrame(rows, columns=["battle_key", "model_a", "model_b"]),
        judges=pd.DataFrame({"judge": ["jj"]}),
        judgments=pd.DataFrame(
            {
                "battle_key": [r[0] for r in rows],
                "judge": "jj",
                "order": "ab",
                "prompt_version": "v",
                "verdict": verdicts,
            }
        ),
    )
    with Store.open(tmp_path / "j.duckdb") as s:
        s.write_dataset(tables)
        view, _ = view_for(s, "j", "jj", None, 0.1)
    assert view.primary == "hard"
    assert "ace" not in (view.headline() or "") and view.table["model"].iloc[-1] == "ace"
    assert pd.isna(view.table.set_index("model").loc["ace", "rank"])
    assert "ace (undefined: won all its 6 battles)" in (view.set_apart_statement() or "")
    assert display_table(view).set_index("Model").loc["ace", "Hard CI"] == "undefined: won all its 6 battles"


@pytest.mark.parametrize(
    "gap, human_y",
    [
        (np.full(40, 1.0), np.r_[np.ones(25), np.zeros(15)]),  # one |gap| value: no slope to fit
        (np.r_[np.full(20, 0.5), np.full(20, 2.0)], np.ones(40)),  # the judge always agrees: separated
    ],
)
def test_the_gap_agreement_warning_never_prints_an_undefined_slope(gap, human_y):
    from core.stats.calibration import gap_agreement

    res = gap_agreement(pd.Series(gap), pd.Series(human_y), 0.001)  # was: "z = nan", or a singular-matrix error
    assert res.warning is not None and "nan" not in res.warning.lower() and "inf" not in res.warning.lower()


def test_the_report_writes_no_missing_value_as_text(tmp_path):
    """A set-apart model's rank and Elo are missing: the report shows "—", never "<NA>", "None" or "nan"."""
    import re

    from core.app.report import build_report

    db = tmp_path / "pr.duckdb"
    with Store.open(db) as s:
        s.write_dataset(_perfect_record_arena())
        report = build_report(s, "pr", None, None, 0.1)
    cells = re.findall(r"<td>(.*?)</td>", report.html)
    assert cells and "lucky" in report.html
    assert not [c for c in cells if c.strip() in ("&lt;NA&gt;", "<NA>", "None", "nan", "NaN")], cells
