"""Coverage and robustness studies: many seeds or thousands of inputs, the full versions of small tests.

Each study runs the same procedure as a known-answer test of the suite, over more seeds or inputs than a
test can afford, and checks the bound the test checks.  The test keeps a small seeded version that still
fails when the property it guards is broken (scripts/mutants.py shows which bug each one catches); the study
measures the property itself, and its figures go to docs/benchmarks.md ("Studies moved out of the test
suite").

    python benchmarks/bench_studies.py [--only truth,tau-star,coverage,am-elo,queue,diff-bundles,fuzz,nan] [--quick]

Exit status 1 when a figure misses its bound.  ``--quick`` runs each study at its test's size (a smoke run).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

Study = Callable[[bool], list[tuple[str, bool]]]  # quick → [(figure, within its bound)]


def truth(quick: bool) -> list[tuple[str, bool]]:
    """The human fit recovers the simulator's stored truth (tests/test_simulate.py, 3 seeds)."""
    from tests.test_simulate import _truth_recovery

    seeds = range(3) if quick else range(10)
    slope, coverage, soft, hard = _truth_recovery(seeds)
    return [
        (
            f"human fit's slope on the truth over {len(seeds)} seeds: {slope:.3f} (bound 1 ± 0.05)",
            abs(slope - 1) <= 0.05,
        ),
        (f"95% CIs cover the truth: {coverage:.3f} (bound 0.95 ± 0.03)", abs(coverage - 0.95) <= 0.03),
        (f"MAE to the truth: Soft-Elo {soft:.1f} < Hard-Elo {hard:.1f}", soft < hard),
    ]


def tau_star(quick: bool) -> list[tuple[str, bool]]:
    """The τ fitted on the votes is unbiased for the stored τ* (tests/test_simulate.py checks one store)."""
    import numpy as np

    from core.simulate import simulate_arena
    from core.store import Store
    from tests.test_simulate import _tau_star_z

    zs: list[float] = []
    seeds = range(2) if quick else range(5)
    for seed in seeds:
        with Store.open(":memory:") as s:
            s.write_dataset(simulate_arena(seed))
            zs.extend(_tau_star_z(s).values())
    mean, sd = float(np.mean(zs)), float(np.std(zs))
    bound = 4 / np.sqrt(len(zs))
    return [
        (f"z of fitted τ − τ* over {len(zs)} judge-seeds: mean {mean:+.2f} (bound ±{bound:.2f})", abs(mean) < bound),
        (f"z's standard deviation {sd:.2f} (bound < 1.6)", sd < 1.6),
    ]


def coverage(quick: bool) -> list[tuple[str, bool]]:
    """The drawn conformal bars cover human Elo at every τ (tests/test_intervals_at_any_tau.py, 3 seeds)."""
    from tests.test_intervals_at_any_tau import _coverage

    if quick:
        result = _coverage(range(3), n_models=24, n_battles=8000, taus=(None, 1.5), alphas=(0.1, 0.2))
    else:
        result = _coverage(range(10), n_models=30, n_battles=12_000, taus=(None, 0.8, 1.5, 2.0), alphas=(0.1, 0.2))
    out = []
    for (tau, alpha), (split, drawn, on_truth, old) in result.items():
        at = "fitted τ" if tau is None else f"τ = {tau:g}"
        out.append(
            (
                f"{at}, α = {alpha:g}: held-out {split:.3f} (bound ≥ {1 - alpha - 0.03:.2f}), drawn bars {drawn:.3f} "
                f"(bound ≥ {1 - alpha - 0.05:.2f}); stored truth {on_truth:.3f}, old procedure {old:.3f}",
                split >= 1 - alpha - 0.03 and drawn >= 1 - alpha - 0.05,
            )
        )
    return out


def am_elo(quick: bool) -> list[tuple[str, bool]]:
    """am-ELO flags adversarial and uninformative annotators (tests/test_ratings.py, 3 seeds)."""
    from tests.test_ratings import _status_f1

    seeds = range(3) if quick else range(10)
    adversarial, uninformative = _status_f1(seeds)
    return [
        (f"F1 of the adversarial flag over {len(seeds)} seeds: {adversarial:.3f} (bound ≥ 0.9)", adversarial >= 0.9),
        (f"F1 of the uninformative flag: {uninformative:.3f} (bound ≥ 0.9)", uninformative >= 0.9),
    ]


def queue(quick: bool) -> list[tuple[str, bool]]:
    """The Vote page's calibration queue narrows the intervals more than random votes, coverage kept."""
    import numpy as np

    from tests.test_calibration_queue import ALPHA, COVERAGE_SLACK, SEEDS, STUDY_SEEDS, _experiment

    seeds = SEEDS if quick else STUDY_SEEDS
    results = {seed: _experiment(seed) for seed in seeds}
    shrink = {a: np.array([r["before"].width - r[a].width for r in results.values()]) for a in ("queue", "random")}
    covered = float(np.concatenate([r["queue"].covered for r in results.values()]).mean())
    even = sum(max(r["queue"].votes_to_hidden) - min(r["queue"].votes_to_hidden) <= 1 for r in results.values())
    return [
        (
            f"mean median-width reduction over {len(seeds)} seeds: queue {shrink['queue'].mean():.1f}, random "
            f"{shrink['random'].mean():.1f} Elo (bound: queue ahead); queue ahead on "
            f"{int((shrink['queue'] > shrink['random']).sum())} seeds",
            shrink["queue"].mean() > shrink["random"].mean(),
        ),
        (
            f"coverage after the queue's votes {covered:.3f} (bound ≥ {1 - ALPHA - COVERAGE_SLACK:.2f})",
            covered >= 1 - ALPHA - COVERAGE_SLACK,
        ),
        (
            f"seeds whose new models got even shares of the votes: {even} of {len(seeds)} (bound: all)",
            even == len(seeds),
        ),
    ]


def diff_bundles(quick: bool) -> list[tuple[str, bool]]:
    """Two demo bundles of one truth, 5,000 votes apart, flag no model at Holm's family-wise rate."""
    from tests.test_diff import bundles_nominal_rate

    seeds = range(1) if quick else range(4)
    with tempfile.TemporaryDirectory() as folder:
        flagging = bundles_nominal_rate(Path(folder), seeds)
    return [
        (
            f"seeds flagging any of 48 models: {flagging} of {len(seeds)} (expected ≤ {0.05 * len(seeds):.2f}; "
            "bound ≤ 1)",
            flagging <= 1,
        )
    ]


def fuzz(quick: bool) -> list[tuple[str, bool]]:
    """Every corrupted variant of every import layout exits 0 or 2 and a rejection changes nothing."""
    from tests.test_import_fuzz import N_VARIANTS, SAMPLE, fuzz_imports

    out = []
    for fmt, n in N_VARIANTS.items():
        wanted = SAMPLE if quick else n
        with tempfile.TemporaryDirectory() as folder:
            try:
                outcomes = fuzz_imports(fmt, wanted, Path(folder))
            except AssertionError as e:  # the first variant that broke a promise, as the test reports it
                out.append((f"{fmt}: a variant broke a promise: {e}", False))
                continue
        out.append(
            (
                f"{fmt}: {wanted} variants, {outcomes[2]} rejected cleanly, {outcomes[0]} accepted and valid "
                "(bound: > 30% rejected)",
                outcomes[2] > 0.3 * wanted,
            )
        )
    return out


def nan(quick: bool) -> list[tuple[str, bool]]:
    """No sentence on any page is made from an undefined number, over generated datasets."""
    from hypothesis import HealthCheck, given, settings

    from tests.test_no_statement_from_nan import _no_sentence_from_nan, datasets

    examples = 12 if quick else 60
    check = settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])(
        given(datasets())(_no_sentence_from_nan)
    )
    try:
        check()
    except AssertionError as e:
        return [(f"{examples} generated datasets: a sentence made from NaN: {e}", False)]
    return [(f"{examples} generated datasets: no sentence made from an undefined number", True)]


STUDIES: dict[str, Study] = {
    "truth": truth,
    "tau-star": tau_star,
    "coverage": coverage,
    "am-elo": am_elo,
    "queue": queue,
    "diff-bundles": diff_bundles,
    "fuzz": fuzz,
    "nan": nan,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(STUDIES), help="comma-separated subset of " + ", ".join(STUDIES))
    ap.add_argument("--quick", action="store_true", help="each study at its test's size")
    args = ap.parse_args(argv)
    wanted = args.only.split(",")
    unknown = [w for w in wanted if w not in STUDIES]
    if unknown:
        ap.error(f"unknown studies {unknown}; known: {', '.join(STUDIES)}")
    missed = 0
    for key in wanted:
        t0 = time.perf_counter()
        figures = STUDIES[key](args.quick)
        print(f"{key} ({time.perf_counter() - t0:.0f} s): {(STUDIES[key].__doc__ or '').strip()}", flush=True)
        for text, ok in figures:
            print(f"  {'ok    ' if ok else 'MISSED'} {text}", flush=True)
            missed += not ok
    print(f"{missed} figure(s) missed their bound" if missed else "every figure within its bound")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
