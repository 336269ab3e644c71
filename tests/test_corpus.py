"""The corpus: every real directory and file in ../shared/datasets, and where each is checked against its peer.

Each entry of :data:`CORPUS` names the tests that import that directory as published (one command, no edits)
and compare what the product computes with what the peer published there (the shared README's numbers, the
peer's own leaderboard files).  The tests themselves live beside the feature they check, on the fixture
stores those modules already build, so nothing is imported twice; this module is the index and its guard:
a directory added to ../shared/datasets without an entry here, or an entry naming a test that no longer
exists, fails.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from tests.conftest import shared_path

pytestmark = pytest.mark.shared

# directory or file → (what the peer published, the tests that import it as published and compare)
CORPUS: dict[str, tuple[str, tuple[str, ...]]] = {
    "alpaca_eval_2": (
        "AlpacaEval 2 leaderboard.csv: win rate, SE, discrete win rate, LC (with the shipped difficulties)",
        (
            "test_peer_files::test_winrate_reproduces_the_published_alpaca_eval_leaderboard",
            "test_winrate_stats::test_alpaca_eval_2_published_numbers",
            "test_lc_reference::test_alpaca_evals_own_coefficients_give_its_published_lc_with_these_difficulties",
        ),
    ),
    "alpaca_eval_more": (
        "leaderboard_alpaca_eval_{1,2}.csv: AE1 win rates to 1e-9, AE2 LC",
        (
            "test_alpaca_eval_tree::test_the_tree_imports_in_one_command_with_no_model_named_after_a_folder",
            "test_alpaca_eval_tree::test_alpaca_eval_1_files_import_with_one_judge_and_their_published_win_rates",
            "test_alpaca_eval_tree::test_lc_is_alpaca_evals_and_does_not_move_with_the_other_models",
        ),
    ),
    "arena_hard_v0.1": (
        "500 prompts, 500 answers of three models (no judgments, no published score)",
        ("test_ingest::test_arena_hard_real_directory",),
    ),
    "arena_hard_v0.1_2024": (
        "the April-2024 layout of the same answers (no published score)",
        ("test_peer_files::test_arena_hard_v01_as_published_in_2024_imports_with_every_answer",),
    ),
    "arena_hard_v0.1_judged": (
        "show_result.py: bagel-8b-v1.0 6.3 (−1.5, +1.7) with weight 3, 10.0 with weight 1",
        (
            "test_arena_hard_score::test_the_published_score_of_bagel",
            "test_arena_hard_score::test_the_published_interval_within_bootstrap_noise",
        ),
    ),
    "arena_hard_v2.0": (
        "750 prompts (one holds U+2028) and one model's answers (no published score)",
        ("test_peer_files::test_arena_hard_v2_questions_and_one_models_answers_import_without_battles",),
    ),
    "fastchat_forks": (
        "FastChat show_result --mode single per fork, 6 decimals (README)",
        ("test_fastchat_forks::test_each_fork_imports_as_published_and_scores_as_fastchat_does",),
    ),
    "fastchat_japanese_mt_bench": (
        "FastChat show_result --mode single: 7 MT-Bench scores, 3 decimals (README)",
        ("test_mtbench_score::test_the_score_equals_fastchats_published_numbers",),
    ),
    "fastchat_skycamp": (
        "the same 5 battles judged twice; show_result counts every row",
        ("test_mtbench_score::test_skycamp_imports_its_appended_run_as_repeats",),
    ),
    "pandalm_testset_v1": (
        "999 battles, 2,997 human votes, gpt-3.5-turbo and PandaLM-7B verdicts",
        ("test_pandalm::test_the_real_file_imports_as_999_battles_with_2997_votes_and_two_judges",),
    ),
    "judge_contests.csv": (
        "the judge-consistency paper's contests",
        ("test_ingest::test_contests_real_file", "test_bias::test_consistency_matches_the_papers_table"),
    ),
    "judge_elo.csv": (
        "the paper's arena Elo per judge (its consistency–strength table)",
        ("test_bias::test_consistency_matches_the_papers_table",),
    ),
    "softelo_sample_annotations.csv": (
        "Soft-Elo sample annotations",
        ("test_ingest::test_softelo_real_sample",),
    ),
}


def _shared_entries() -> list[str]:
    root = shared_path(".")
    return sorted(p.name for p in root.iterdir() if p.name != "README.md" and not p.name.startswith("."))


def test_every_shared_directory_has_its_published_numbers_checked():
    missing = [name for name in _shared_entries() if name not in CORPUS]
    assert not missing, f"no test checks these against their peer's published numbers: {missing}"
    gone = [name for name in CORPUS if name not in _shared_entries()]
    assert not gone, f"CORPUS names entries ../shared/datasets no longer has: {gone}"


@pytest.mark.parametrize("entry", sorted(CORPUS))
def test_each_named_test_exists_and_reads_that_entry(entry):
    """Every test named for an entry exists, and its module reads that entry of ../shared/datasets."""
    for name in CORPUS[entry][1]:
        module_name, function = name.split("::")
        module = importlib.import_module(f"tests.{module_name}")
        assert callable(getattr(module, function, None)), f"{name} does not exist"
        assert entry in inspect.getsource(module), f"tests/{module_name}.py never reads {entry}"


def test_every_fastchat_fork_has_its_published_scores():
    from tests.test_fastchat_forks import PUBLISHED

    forks = sorted(p.name for p in shared_path("fastchat_forks").iterdir() if p.is_dir())
    assert forks == sorted(PUBLISHED)
