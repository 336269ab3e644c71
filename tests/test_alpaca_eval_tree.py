"""AlpacaEval's published results/ tree in one command, and the star design's numbers on it.

``alpaca_eval_more`` holds what broke naive code: two models above the
baseline (70.5% and 51.3%), a nested duplicate folder, an AlpacaEval 1 file
annotated against other baseline outputs and records naming an annotator
variant inside its configuration's folder.  Known answers are AlpacaEval's
published leaderboards shipped beside the tree.
"""

from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pandas as pd
import pytest

from core.app.data import import_path
from core.app.leaderboard import ratings, view_for
from core.app.winrate import win_rate_view
from core.ingest import IngestError, load
from core.store import Store
from tests.conftest import shared_path

pytestmark = pytest.mark.shared

AE2 = "weighted_alpaca_eval_gpt4_turbo"
AE1 = "alpaca_eval_gpt4"
NESTED = ("vicuna-7b-v1.5", AE2, AE2, "annotations.json")


def _results():
    return shared_path("alpaca_eval_more") / "results"


@pytest.fixture(scope="module")
def ae_store(tmp_path_factory):
    db = tmp_path_factory.mktemp("ae") / "s.duckdb"
    with Store.open(db) as s:
        first = import_path(s, _results(), "alpaca-eval", dataset="ae", annotator=AE2)
        second = import_path(s, _results(), "alpaca-eval", dataset="ae1", annotator=AE1)
    return db, first, second


@pytest.mark.slow
def test_the_tree_imports_in_one_command_with_no_model_named_after_a_folder(ae_store):
    db, first, _ = ae_store
    with Store.open(db, read_only=True) as s:
        models = set(s.models_frame("ae")["model"])
        judges = list(s.judges_frame("ae")["judge"])
    assert AE2 not in models and AE1 not in models
    assert {"FuseChat-Gemma-2-9B-Instruct", "vicuna-7b-v1.5", "gpt4_1106_preview", "gpt4_gamed"} <= models
    assert len(models) == 11 and judges == [AE2]
    nested = "weighted_alpaca_eval_gpt4_turbo/weighted_alpaca_eval_gpt4_turbo"
    assert any(nested in n and "duplicate" in n for n in first.notes)


@pytest.mark.slow
def test_alpaca_eval_1_files_import_with_one_judge_and_their_published_win_rates(ae_store):
    db, _, second = ae_store
    published = pd.read_csv(shared_path("alpaca_eval_more") / "leaderboard_alpaca_eval_1.csv", index_col=0)
    with Store.open(db, read_only=True) as s:
        assert list(s.judges_frame("ae1")["judge"]) == [AE1]  # deita's records say alpaca_eval_gpt4_0613
        view = win_rate_view(s, "ae1", judge=AE1)
    rows = view.rows.set_index("model")
    for model in ("Mistral-7B+RAHF-DUAL+LoRA", "LMCocktail-10.7B-v1", "deita-7b-v1.0"):
        assert rows.loc[model, "win_rate"] == pytest.approx(published.loc[model, "win_rate"], abs=1e-9), model
        assert rows.loc[model, "standard_error"] == pytest.approx(published.loc[model, "standard_error"], abs=1e-6)
    # the file annotated against other baseline outputs is scored against its own, and the import says so
    assert any(n.startswith("Mistral-7B+RAHF-DUAL+LoRA/") and "785 of its baseline outputs" in n for n in second.notes)
    meta = load(_results(), "alpaca-eval", annotator=AE1).meta
    assert meta["record_annotators"] == {AE1: {AE1: 1610, "alpaca_eval_gpt4_0613": 805}}


@pytest.mark.slow
def test_every_elo_on_the_tree_is_on_the_scale_and_the_page_equals_the_cli(ae_store):
    """The star design: models above the baseline are placed above it, on the page exactly as on the CLI."""
    db, _, _ = ae_store
    with Store.open(db, read_only=True) as s:
        view, _ = view_for(s, "ae", AE2, None, 0.1)
        cli = ratings(s, "ae", "hard", judge=AE2)
    t = view.table.set_index("model")
    elo = t["hard_elo"].astype(float)
    assert elo.notna().all() and elo.between(0, 3000).all(), elo
    assert elo.idxmax() == "FuseChat-Gemma-2-9B-Instruct"
    assert elo["FuseChat-Llama-3.2-3B-Instruct"] > elo["gpt4_1106_preview"]
    cli_elo = cli.frame.set_index("model")["elo"]
    for model in cli_elo.index:
        assert elo[model] == pytest.approx(cli_elo[model], abs=1.0), model


def _tree_with(tmp_path, models):
    tree = tmp_path / "results"
    for model in models:
        shutil.copytree(_results() / model, tree / model)
    return tree


def test_two_nested_copies_are_both_skipped(tmp_path):
    """The real tree has vicuna-7b-v1.5 and vicuna-13b-v1.5 both carrying the nested copy: it used to refuse."""
    tree = _tree_with(tmp_path, ["gpt4_1106_preview", "vicuna-7b-v1.5", "gemma-7b-it"])
    shutil.copytree(tree / "vicuna-7b-v1.5", tree / "vicuna-13b-v1.5")
    for f in (tree / "vicuna-13b-v1.5").rglob("annotations.json"):  # another model: other answers
        recs = json.loads(f.read_text(encoding="utf-8"))
        for r in recs:
            r["output_2"] = "13b: " + r["output_2"]
        f.write_text(json.dumps(recs), encoding="utf-8")
    t = load(tree, "alpaca-eval", annotator=AE2)
    assert set(t.models["model"]) == {"gpt4_1106_preview", "vicuna-7b-v1.5", "vicuna-13b-v1.5", "gemma-7b-it"}
    assert len(t.meta["skipped_duplicate_files"]) == 2
    assert len(t.battles) == 3 * 805


def test_a_model_folder_copied_under_another_name_is_one_model_not_two(tmp_path):
    """``results/GEMMA-7B-IT/`` beside ``results/gemma-7b-it/``, every record of both naming gemma-7b-it (a
    public fork commits such a copy): the copy is skipped as a duplicate, whichever folder sorts first."""
    tree = _tree_with(tmp_path, ["gpt4_1106_preview", "gemma-7b-it"])
    alone = load(tree, "alpaca-eval", annotator=AE2)
    shutil.copytree(tree / "gemma-7b-it", tree / "GEMMA-7B-IT")  # sorts before the original
    t = load(tree, "alpaca-eval", annotator=AE2)
    assert set(t.models["model"]) == set(alone.models["model"]) == {"gpt4_1106_preview", "gemma-7b-it"}
    assert len(t.battles) == len(alone.battles) and len(t.judgments) == len(alone.judgments)
    skipped = t.meta["skipped_duplicate_files"]
    assert list(skipped) == [f"GEMMA-7B-IT/{AE2}/annotations.json"]
    assert any("GEMMA-7B-IT" in n and "duplicate" in n for n in t.meta["notes"])


def test_a_nested_copy_that_differs_is_refused_naming_both_files(tmp_path):
    tree = _tree_with(tmp_path, ["gpt4_1106_preview", "vicuna-7b-v1.5"])
    nested = tree.joinpath(*NESTED)
    recs = json.loads(nested.read_text(encoding="utf-8"))
    recs[3]["preference"] = 1.0 if recs[3]["preference"] != 1.0 else 2.0
    nested.write_text(json.dumps(recs), encoding="utf-8")
    with pytest.raises(IngestError, match="a second annotations.json for model 'vicuna-7b-v1.5'") as err:
        load(tree, "alpaca-eval", annotator=AE2)
    assert "vicuna-7b-v1.5/weighted_alpaca_eval_gpt4_turbo/annotations.json" in str(err.value)


@pytest.mark.slow
def test_the_fit_places_a_model_above_a_strong_baseline(ae_store):
    """FuseChat-Gemma beats the baseline on 70.5% of instructions: its judge Elo is above the baseline's by
    about 400·log10(0.705/0.295) (the pair's own logit), not millions below."""
    db, _, _ = ae_store
    with Store.open(db, read_only=True) as s:
        view, _ = view_for(s, "ae", AE2, None, 0.1)
        rates = win_rate_view(s, "ae", judge=AE2).rows.set_index("model")
    t = view.table.set_index("model")
    gap = t.loc["FuseChat-Gemma-2-9B-Instruct", "hard_elo"] - t.loc["gpt4_1106_preview", "hard_elo"]
    share = rates.loc["FuseChat-Gemma-2-9B-Instruct", "discrete_win_rate"] / 100
    assert gap == pytest.approx(400 * np.log10(share / (1 - share)), abs=40)


@pytest.mark.integration
def test_the_cli_takes_the_only_judge_and_ranks_with_ties(ae_store, tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    db, _, _ = ae_store

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True)

    run = cli("leaderboard", "--db", str(db), "--dataset", "ae", "--method", "hard", "--json")
    assert run.returncode == 0, run.stderr  # one judge: no --judge needed
    models = pd.DataFrame(json.loads(run.stdout)["models"])
    above = models["lower"].to_numpy()[None, :] > models["upper"].to_numpy()[:, None]
    assert models["rank"].tolist() == (1 + above.sum(axis=1)).tolist()  # METHODS §10's rank, as the page
    assert models["position"].tolist() == list(range(1, len(models) + 1))
    with Store.open(db, read_only=True) as s:
        page = view_for(s, "ae", AE2, None, 0.1)[0].table.set_index("model")["hard_rank"]
    # the page's Hard-Elo intervals are bootstrap intervals, the CLI's sandwich ones: the two ranks can differ
    # by a tie at most, never by a model's order
    assert (models.set_index("model")["rank"] - page.reindex(models["model"])).abs().max() <= 1
    out = tmp_path / "r.html"
    run = cli("report", "--db", str(db), "--dataset", "ae", "--out", str(out))
    assert run.returncode == 0, run.stderr
    html = out.read_text(encoding="utf-8")
    assert "No model could be rated" not in html and "FuseChat-Gemma-2-9B-Instruct" in html


@pytest.mark.slow
def test_lc_is_alpaca_evals_and_does_not_move_with_the_other_models(ae_store, tmp_path):
    """Against AlpacaEval's fixed instruction difficulties every model is fitted alone: the LC lands on the
    published column (the length-gaming model near its 12.2) and is the same number, to the last digit, when
    AlpacaEval 2's other models share the dataset."""
    db, _, _ = ae_store
    published = pd.read_csv(shared_path("alpaca_eval_more") / "leaderboard_alpaca_eval_2.csv", index_col=0)
    with Store.open(db, read_only=True) as s:
        view = win_rate_view(s, "ae", judge=AE2)
    rows = view.rows.set_index("model").drop("gpt4_1106_preview")
    gap = (rows["lc_win_rate"] - published.loc[rows.index, "length_controlled_winrate"]).abs()
    assert gap.mean() <= 1.0 and gap.max() <= 2.0, gap.to_dict()
    assert rows.loc["gpt4_gamed", "lc_win_rate"] == pytest.approx(12.2, abs=2.0)
    assert "AlpacaEval computes it" in view.method and view.result.difficulty_source == "fixed"

    both = tmp_path / "results"  # the two shared trees as one: 15 models and the baseline
    both.mkdir()
    for tree in (shared_path("alpaca_eval_2") / "results", _results()):
        for folder in tree.iterdir():
            if (folder / AE2 / "annotations.json").is_file() and not (both / folder.name).exists():
                (both / folder.name / AE2).mkdir(parents=True)
                (both / folder.name / AE2 / "annotations.json").symlink_to(folder / AE2 / "annotations.json")
    merged = tmp_path / "m.duckdb"
    with Store.open(merged) as s:
        import_path(s, both, "alpaca-eval", dataset="both", annotator=AE2)
        together = win_rate_view(s, "both", judge=AE2).rows.set_index("model")
    assert len(together) == 16
    columns = ["win_rate", "lc_win_rate", "lc_standard_error", "lc_standard_error_glm"]
    assert np.allclose(together.loc[rows.index, columns].astype(float), rows[columns].astype(float), atol=1e-9)


def test_the_report_leads_with_the_length_controlled_win_rate(ae_store):
    """On AlpacaEval's tree the report opens as the Leaderboard page does: the LC win rate with its standard
    error and the raw win rate, then the table of win rates against the baseline, then the Elo leaderboards."""
    import re

    from core.app.report import report_html

    db = ae_store[0]
    with Store.open(db, read_only=True) as s:
        page = report_html(s, "ae", AE2)
    first = re.search(r'<p class="headline">(.*?)</p>', page, re.S).group(1)
    assert "length-controlled win rate" in first and "% ±" in first and "(win rate " in first
    assert page.index("Against the baseline") < page.index("Elo leaderboards")


def test_the_bundle_leads_with_the_win_rates_and_they_survive_the_round_trip(ae_store, tmp_path):
    from core.app.bundle import export_bundle
    from core.app.winrate import peer_headline
    from core.app.winrate import table as rate_table
    from core.ingest import load

    db = ae_store[0]
    with Store.open(db, read_only=True) as s:
        written = export_bundle(s, "ae", tmp_path / "ae.zip")
        view = win_rate_view(s, "ae", judge=AE2)
    with zipfile.ZipFile(written.path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        printed = pd.read_csv(zf.open(f"leaderboards/win_rates-{AE2}.csv"), dtype=str, keep_default_na=False)
    assert manifest["lead"] == {"headline": peer_headline(view), "files": [f"leaderboards/win_rates-{AE2}.csv"]}
    expected = rate_table(view).astype(str)
    assert printed["model"].tolist() == expected["model"].tolist()
    assert printed["LC win rate (%)"].tolist() == expected["LC win rate (%)"].tolist()
    assert load(written.path, "bundle").name == "ae"  # its import recomputes the win rates digit for digit
