"""Deliberate bugs the suite must catch: `make mutants` (not part of CI).

Each mutant is one textual change to one file of the product, a bug someone could plausibly write (a sign,
an index, a dropped term, a skipped step), and the tests that stand guard over it.  The runner copies the
tracked tree beside the repository once (so ``../shared`` resolves the same way), checks that the guarding
tests pass on the unchanged copy, then for each mutant writes the change, runs its tests and restores the
file.  A mutant is *caught* when its tests fail (pytest's exit 1); *survived* when they pass; *stale* when the
text it changes is no longer in the file exactly once (the catalogue must follow the code).

    python scripts/mutants.py              # every mutant
    python scripts/mutants.py --only tau,floor
    python scripts/mutants.py --list

Exit status 0 only when every mutant was caught.  The list grows with the suite: a bug found in review or
in CI is a candidate entry (the change, and the test that now catches it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    key: str
    what: str  # the bug, in words
    path: str  # the file it changes, relative to the repository
    old: str  # text that occurs exactly once in that file
    new: str  # what it becomes
    tests: tuple[str, ...]  # pytest node ids or files that must fail


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "bt-gradient-sign",
        "a sign flipped in the Bradley–Terry gradient",
        "core/stats/bt/likelihood.py",
        "r = c.s - c.n * sigmoid(_eta(c, beta))",
        "r = c.n * sigmoid(_eta(c, beta)) - c.s",
        ("tests/test_bt.py::test_gradient_and_hessian_match_finite_differences",),
    ),
    Mutant(
        "conformal-rank",
        "the conformal quantile's index off by one: ⌈n(1 − α)⌉ instead of ⌈(n + 1)(1 − α)⌉",
        "core/stats/conformal.py",
        "return math.ceil((n + 1) * (1 - _exact(alpha)))",
        "return math.ceil(n * (1 - _exact(alpha)))",
        (
            "tests/test_softelo.py::test_conformal_quantile_rule",
            "tests/test_softelo.py::test_conformal_rank_is_exact_where_floating_point_rounds_up",
        ),
    ),
    Mutant(
        "floor-dropped",
        "the conformal interval's disagreement floor dropped: the scale is SE alone",
        "core/stats/conformal.py",
        'return np.sqrt(s**2 + self.sigma**2) if self.score == "floor" else s',
        "return s",
        ("tests/test_conformal_floor.py::test_deploy_draws_q_hat_times_the_floored_scale",),
    ),
    Mutant(
        "ties-as-losses",
        "ties counted as losses for the first side",
        "core/domain.py",
        '"tie": 0.5, "both_bad": 0.5}',
        '"tie": 0.0, "both_bad": 0.5}',
        ("tests/test_domain.py",),
    ),
    Mutant(
        "resume-repeats",
        "a resumed judge run judges again what it already stored (pays twice)",
        "core/app/judging.py",
        'have = set(zip(done["battle_id"].tolist(), done["order"].tolist()))\n    if retry_failed',
        "have: set = set()\n    if retry_failed",
        ("tests/test_judging.py",),
    ),
    Mutant(
        "export-unredacted",
        "a key left unredacted in the CSV export",
        "core/app/export.py",
        "return redact(df.to_csv(index=False))",
        "return df.to_csv(index=False)",
        ("tests/test_export.py::test_every_export_format_redacts_a_secret_in_a_cell_or_the_context",),
    ),
    Mutant(
        "sentence-alpha",
        "the Leaderboard's caption no longer follows α (always says 90%)",
        "core/app/leaderboard/page_text.py",
        "predicted human Elo with its {1 - alpha:.0%} conformal interval",
        "predicted human Elo with its {0.9:.0%} conformal interval",
        ("tests/test_leaderboard_text.py",),
    ),
    Mutant(
        "tau-dropped",
        "the soft target ignores τ: σ(gap) instead of σ(τ·gap)",
        "core/store/sql.py",
        "exp(-({tau}) * {gap})",
        "exp(-(1.0) * {gap})",
        ("tests/test_store.py::test_soft_target_and_pair_stats_match_an_independent_groupby",),
    ),
    Mutant(
        "scope-bound",
        "SCOPE's finite-sample correction dropped: accept while e ≤ αk (the naive rule)",
        "core/stats/selective/rules.py",
        "return alpha * k - 1.0 + _TOL, 1",
        "return alpha * k + _TOL, 1",
        ("tests/test_selective.py",),
    ),
    Mutant(
        "ece-unweighted",
        "ECE from signed gaps (over- and under-confidence cancel)",
        "core/stats/calibration.py",
        "ece = float(np.sum(counts[used] / n * np.abs(acc - mean_conf)))",
        "ece = float(np.sum(counts[used] / n * (acc - mean_conf)))",
        ("tests/test_softelo.py::test_ece_matches_a_direct_computation",),
    ),
    Mutant(
        "position-first-wins",
        "position bias counts the second-shown answer's wins in the reversed order",
        "core/stats/bias.py",
        'first_wins = int((ab == "a").sum() + (ba == "b").sum())',
        'first_wins = int((ab == "a").sum() + (ba == "a").sum())',
        ("tests/test_bias.py",),
    ),
    Mutant(
        "mtbench-unreadable",
        "FastChat's unreadable grade (−1) averaged into the MT-Bench score",
        "core/stats/mtbench.py",
        "dropped = ~np.isfinite(score) | (score < 0)",
        "dropped = ~np.isfinite(score)",
        ("tests/test_mtbench_score.py::test_score_is_the_mean_of_every_readable_grade_and_turns_apart",),
    ),
    Mutant(
        "arena-hard-weight",
        "Arena-Hard's strong verdict counted once instead of `weight` times",
        "core/stats/arena_hard.py",
        "mult = np.where(np.abs(g) >= 2, weight, 1).astype(np.int64)",
        "mult = np.ones_like(g, dtype=np.int64)",
        ("tests/test_arena_hard_score.py::test_the_published_score_of_bagel",),
    ),
    Mutant(
        "alpaca-discrete-tie",
        "AlpacaEval's exact tie counted as a loss in the discrete win rate",
        "core/stats/winrate.py",
        "return np.where(p > 0.5, 1.0, np.where(p == 0.5, 0.5, 0.0))",
        "return np.where(p > 0.5, 1.0, 0.0)",
        ("tests/test_winrate_stats.py",),
    ),
    Mutant(
        "lc-joint-difficulty",
        "AlpacaEval's fixed difficulties ignored: an LC moves with the store's other models",
        "core/app/winrate.py",
        "result = win_rates(per, baseline, fixed_difficulty=fixed, slope_prior=slope_prior)",
        "result = win_rates(per, baseline)",
        ("tests/test_alpaca_eval_tree.py::test_lc_is_alpaca_evals_and_does_not_move_with_the_other_models",),
    ),
    Mutant(
        "lc-se-sandwich",
        "the LC's SE is no longer AlpacaEval's spread of length-free predictions",
        "core/stats/winrate.py",
        '"lc_standard_error": fit.lc_spread_standard_error if fit else math.nan,',
        '"lc_standard_error": fit.lc_standard_error if fit else math.nan,',
        ("tests/test_winrate_stats.py::test_fixed_difficulty_se_is_alpaca_evals_and_the_slope_prior_holds_the_slope",),
    ),
    Mutant(
        "script-interval-anchored",
        "Arena-Hard's script interval computed as if its replicates anchored the baseline",
        "core/stats/arena_hard.py",
        "        baseline = np.asarray(baseline_coef, dtype=float)",
        "        baseline = np.zeros(len(coef))",
        (
            "tests/test_arena_hard_score.py::test_the_script_interval_is_arena_hards_percentile_arithmetic_on_its_own_fit",
        ),
    ),
    Mutant(
        "disconnected-silent",
        "a disconnected comparison graph is no longer reported",
        "core/stats/bt/diagnostics.py",
        "    if n_comp > 1:\n        desc =",
        "    if n_comp > 10**9:\n        desc =",
        ("tests/test_bt.py::test_disconnected_graph_is_reported",),
    ),
    Mutant(
        "bootstrap-one-stream",
        "every bootstrap chunk drawn from the same seed (replicates repeat)",
        "core/stats/bt/resampling.py",
        "rng = np.random.default_rng(child)",
        "rng = np.random.default_rng(seed)",
        ("tests/test_bt.py::test_bootstrap_is_seeded_vectorised_and_agrees_with_sandwich",),
    ),
    # The small tests kept in the suite when their studies moved to benchmarks/bench_studies.py (issue #56):
    # each still catches the bug its study measures.
    Mutant(
        "ci-one-se",
        "the human Elo's 95% interval drawn at ± 1 SE instead of ± 1.96 SE (study: truth)",
        "core/stats/bt/sandwich.py",
        "        fit.elo - Z95 * elo_units(se_t),\n        fit.elo + Z95 * elo_units(se_t),",
        "        fit.elo - elo_units(se_t),\n        fit.elo + elo_units(se_t),",
        ("tests/test_simulate.py::test_the_stored_truth_is_what_the_human_fit_estimates",),
    ),
    Mutant(
        "tau-fit-ties",
        "τ fitted with the tied votes taken as half wins (ties are not decisive) (study: tau-star)",
        "core/stats/calibration.py",
        "ok = np.isfinite(g) & ((y == 0.0) | (y == 1.0))",
        "ok = np.isfinite(g) & np.isfinite(y)",
        ("tests/test_simulate.py::test_each_judge_tau_star_is_what_the_crowd_would_fit",),
    ),
    Mutant(
        "heldout-tau-dropped",
        "the held-out folds refit τ whatever τ the bars are drawn at (study: coverage)",
        "core/app/leaderboard/judge.py",
        "return leave_one_model_out(frame, methods, progress=progress, tau=tau)",
        "return leave_one_model_out(frame, methods, progress=progress, tau=None)",
        ("tests/test_intervals_at_any_tau.py::test_bars_cover_human_elo_at_the_fitted_tau_and_at_fixed_taus",),
    ),
    Mutant(
        "am-elo-adversarial-loose",
        "an annotator flagged adversarial when θ's interval merely reaches below 0 (study: am-elo)",
        "core/stats/amelo.py",
        'return np.where(hi < 0, "adversarial",',
        'return np.where(lo < 0, "adversarial",',
        ("tests/test_ratings.py::test_am_elo_tells_adversarial_from_uninformative_annotators",),
    ),
    Mutant(
        "queue-forgets-its-votes",
        "the calibration queue forgets the votes it placed: the neediest model is picked again and again "
        "(study: queue)",
        "core/app/voting.py",
        "        counts[model] = counts.get(model, 0) + 1\n",
        "        counts[model] = counts.get(model, 0)\n",
        ("tests/test_calibration_queue.py::test_the_queue_spends_its_votes_on_the_new_models_in_even_shares",),
    ),
    Mutant(
        "diff-holm-dropped",
        "the snapshot diff flags models on unadjusted p-values (Holm dropped) (study: diff-bundles)",
        "core/stats/diff.py",
        "p_adj = np.where(same, 1.0, holm(np.where(same, np.nan, p)))",
        "p_adj = np.where(same, 1.0, p)",
        (
            "tests/test_diff.py::test_same_truth_flags_at_most_alpha",
            "tests/test_diff.py::test_one_large_mover_does_not_drag_the_others",
        ),
    ),
    Mutant(
        "import-error-escapes",
        "a file rejected by validation escapes as a traceback (exit 1) instead of a message (exit 2) (study: fuzz)",
        "core/commands/import_.py",
        "    except IngestError as exc:\n        raise UserError(str(exc)) from None\n    store = open_store",
        "    except StoreError as exc:\n        raise UserError(str(exc)) from None\n    store = open_store",
        ("tests/test_import_fuzz.py::test_corrupted_imports_exit_0_or_2_and_a_rejection_changes_nothing",),
    ),
    Mutant(
        "ingest-range-unchecked",
        "an imported number outside its field's range accepted (a tstamp after 2100)",
        "core/ingest/common.py",
        "if x is None or not math.isfinite(x) or not lo <= x <= hi:",
        "if x is None or not math.isfinite(x):",
        ("tests/test_import_fuzz.py::test_a_number_outside_its_fields_range_is_refused_by_row_and_field",),
    ),
    Mutant(
        "headline-nan-score",
        "the headline names a #1 whose score is undefined ('#1 m — nan') (study: nan)",
        "core/app/leaderboard/view.py",
        'if self.table.empty or not np.isfinite(self.table["primary"].iloc[0]):',
        "if self.table.empty:",
        ("tests/test_no_statement_from_nan.py::test_no_sentence_is_made_from_an_undefined_number",),
    ),
)


def _copy_tree(dest: Path) -> None:
    """The tracked and untracked-but-not-ignored files of the work tree (the change under test included)."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the work tree
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)


def _pytest(tree: Path, tests: tuple[str, ...], timeout: float) -> int:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        return subprocess.run(cmd, cwd=tree, env=env, capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return -1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated mutant keys")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    args = ap.parse_args(argv)
    chosen = MUTANTS
    if args.only:
        keys = set(args.only.split(","))
        unknown = keys - {m.key for m in MUTANTS}
        if unknown:
            ap.error(f"unknown mutants: {', '.join(sorted(unknown))}")
        chosen = tuple(m for m in MUTANTS if m.key in keys)
    if args.list:
        for m in chosen:
            print(f"{m.key:22} {m.path}: {m.what}")
        return 0

    tree = ROOT.parent / f".{ROOT.name}-mutants"
    shutil.rmtree(tree, ignore_errors=True)
    _copy_tree(tree)
    results: list[tuple[Mutant, str, float]] = []
    try:
        guards = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        rc = _pytest(tree, guards, args.timeout)
        if rc != 0:
            print(f"the guarding tests fail on the unchanged tree (pytest exit {rc}): fix them first", file=sys.stderr)
            return 2
        for m in chosen:
            target = tree / m.path
            original = target.read_text()
            if original.count(m.old) != 1:
                results.append((m, "stale", 0.0))
                continue
            target.write_text(original.replace(m.old, m.new))
            t0 = time.monotonic()
            try:
                rc = _pytest(tree, m.tests, args.timeout)
            finally:
                target.write_text(original)
            verdict = {1: "caught", 0: "survived", -1: "timeout"}.get(rc, f"error (pytest exit {rc})")
            results.append((m, verdict, time.monotonic() - t0))
            print(f"{verdict:9} {m.key:22} {time.monotonic() - t0:6.1f} s  {m.what}", flush=True)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    caught = sum(v == "caught" for _, v, _ in results)
    print(f"\n{caught} of {len(results)} mutants caught")
    for m, v, _ in results:
        if v != "caught":
            print(f"  {v}: {m.key} ({m.path}): {m.what}")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
