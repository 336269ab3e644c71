"""Five FastChat MT-Bench directories exactly as public repositories committed them (``fastchat_forks/``).

Each is imported with one command and scored; the known answers are FastChat's own ``show_result.py --mode
single`` numbers, printed in the shared datasets' README.  FastChat's script reads the judgment file alone, so
what only the answers or questions get wrong (a ``model_id`` that is not the file's stem, models graded but
never answered, answers never graded) must not change or stop the score.
"""

from __future__ import annotations

import pytest

from core.app.mtbench import mtbench_view
from core.store import Store
from tests.cli import run_cli
from tests.conftest import shared_path

pytestmark = pytest.mark.shared

PUBLISHED = {
    "medusa": {
        "vicuna-7b-v1.3": 6.103125,
        "medusa-mistral-7b-jb-1-temperature-0.0-posterior_threshold-0.09-posterior_alpha-0.3": 6.650000,
        "medusa-vicuna-7b-v1.3-1-temperature-0.0-posterior_threshold-0.09-posterior_alpha-0.3": 5.987500,
        "vicuna-7b-v1.3-greedy": 5.878125,
    },
    "alvarobartt": {
        "mistral-orpo-trl": 7.165625,
        "mistral-orpo-capybara": 6.818750,
        "mistral-orpo-mix": 6.003125,
        "mistral-orpo": 5.858934,
    },
    "muhan421": {"claude-3-5-sonnet-20240620": 9.20625, "claude-3-opus-20240229": 8.67500},
    "stefanstud": {"phi-3-dpo": 8.2},
    "dreamingpanda": {"Meta-Llama-3-8B-Instruct-Griffin": 2.7},
}


@pytest.mark.parametrize("fork", sorted(PUBLISHED))
def test_each_fork_imports_as_published_and_scores_as_fastchat_does(fork, tmp_path):
    db = tmp_path / "s.duckdb"
    run = run_cli("import", "--db", db, shared_path(f"fastchat_forks/{fork}"))
    assert run.returncode == 0, run.stderr
    with Store.open(db, read_only=True) as s:
        table = mtbench_view(s, fork, "gpt-4").scores.table
    got = dict(zip(table["model"], table["score"]))
    assert set(got) == set(PUBLISHED[fork])
    for model, published in PUBLISHED[fork].items():
        assert got[model] == pytest.approx(published, abs=5e-7), model  # FastChat prints 6 decimals


def test_a_model_id_other_than_the_stem_is_named_by_the_stem_with_a_note(tmp_path):
    db = tmp_path / "s.duckdb"
    run = run_cli("import", "--db", db, shared_path("fastchat_forks/dreamingpanda"))
    assert run.returncode == 0, run.stderr
    assert "model_id 'meta-llama/Meta-Llama-3-8B-Instruct-Griffin'" in run.stdout + run.stderr
    with Store.open(db, read_only=True) as s:
        answers = s.completions_frame("dreamingpanda", with_text=True)
    # the grades' model has its answers' texts: the two were joined by the stem
    assert (answers["model"] == "Meta-Llama-3-8B-Instruct-Griffin").sum() > 0
    assert answers["text"].str.len().gt(0).all()
