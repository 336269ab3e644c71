"""Do pairwise rankings recover accuracy rankings? (``correct-looks-better.txt`` §3–5)

Where completions carry correctness (the demo arena's verifiable prompts, or
an imported benchmark with ground truth), compare each model's accuracy with
its Bradley–Terry score from pairwise judgments:

* on all battles whose two completions both have a correctness label,
* on discriminative pairs only (exactly one side correct),
* on non-discriminative pairs only (both correct or both wrong),

plus the direct-judge baseline (a judge grading single answers as correct /
incorrect / not attempted, ranked by its own accuracy estimate).  Kendall's
τ and K_D get 95% percentile intervals from resampling the compared models
(the statistic's own bootstrap distribution, so the interval is about the
estimate shown).  Resampling prompts instead refits every score and adds a
second dose of sampling noise to the accuracies: its replicates of τ fall
below the estimate (on the demo arena all 100 of them), so neither its
percentile nor its basic interval contains the τ that is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.stats.agreement import Agreement, agreement, kendall_tau

SUBSETS = ("all", "discriminative", "non_discriminative")


@dataclass(frozen=True)
class AlignmentRow:
    ranking: str  # which pairwise ranking: e.g. 'judge (hard)', 'human'
    subset: str
    n_battles: int
    agreement: Agreement
    kendall_ci: tuple[float, float]
    kd_ci: tuple[float, float]


@dataclass(frozen=True)
class AlignmentResult:
    accuracy: pd.DataFrame  # model, accuracy, n_graded, direct_accuracy (if any)
    scores: pd.DataFrame  # model, ranking, subset, score (BT logit)
    rows: tuple[AlignmentRow, ...]
    direct: Agreement | None
    discriminative_share: float
    finding: str  # plain-language verdict on the paper's claim for this data
    reason: str | None = None

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "ranking": r.ranking,
                    "subset": r.subset,
                    "n_battles": r.n_battles,
                    **r.agreement.as_dict(),
                    "kendall_lo": r.kendall_ci[0],
                    "kendall_hi": r.kendall_ci[1],
                    "kd_lo": r.kd_ci[0],
                    "kd_hi": r.kd_ci[1],
                }
                for r in self.rows
            ]
        )


def _bt_scores(models: list[str], a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    """BT logits for ``models`` (NaN for models without battles in this subset)."""
    from core.stats.bt import comparisons_from_battles, fit_bt

    out = np.full(len(models), np.nan)
    if len(a) == 0:
        return out
    present = sorted(set(a) | set(b))
    comps = comparisons_from_battles(a, b, y, models=present)
    # A small ridge keeps subsets with a perfect record finite; the ranking,
    # which is all that is compared, is unaffected by its size.
    fit = fit_bt(comps, lam=1e-3)
    idx = {m: i for i, m in enumerate(models)}
    for m, t in zip(fit.models, fit.theta):
        out[idx[m]] = t
    return out


def kendall_percentile_interval(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_boot: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of Kendall's τ between ``x`` and ``y`` over models resampled with replacement.

    A model drawn twice forms a pair tied in both scorings, which τ = (C − D)/(C + D) leaves out.  NaN bounds
    when fewer than 3 models have both scores or fewer than 10 replicates have a defined τ.
    """
    ok = np.isfinite(x) & np.isfinite(y)
    xa, ya = np.asarray(x, float)[ok], np.asarray(y, float)[ok]
    n = len(xa)
    if n < 3:
        return (np.nan, np.nan)
    taus = np.array([kendall_tau(xa[i], ya[i]) for i in (rng.integers(0, n, n) for _ in range(n_boot))])
    taus = taus[np.isfinite(taus)]
    if len(taus) < 10:
        return (np.nan, np.nan)
    tail = (1 - level) / 2
    lo, hi = np.quantile(taus, [tail, 1 - tail])
    return (float(lo), float(hi))


def model_accuracy(completions: pd.DataFrame) -> pd.DataFrame:
    """Per-model accuracy on graded completions, and the direct judge's estimate."""
    graded = completions[completions["correct"].notna()]
    acc = (
        graded.groupby("model")["correct"]
        .agg(["mean", "size"])
        .rename(columns={"mean": "accuracy", "size": "n_graded"})
    )
    if "direct_label" in completions and completions["direct_label"].notna().any():
        d = completions[completions["direct_label"].notna()]
        acc["direct_accuracy"] = d.groupby("model")["direct_label"].apply(lambda s: float((s == "correct").mean()))
    return acc.reset_index()


def accuracy_alignment(
    battles: pd.DataFrame,
    completions: pd.DataFrame,
    labels: dict[str, str],
    n_boot: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> AlignmentResult:
    """Alignment of pairwise rankings with accuracy.

    ``battles``: a battle frame (``Store.battle_frame``) with ``correct_a``,
    ``correct_b``, ``prompt_id`` and the label columns named in ``labels``
    (display name → column, e.g. ``{"judge (hard)": "judge_hard", "human": "human_y"}``).
    ``completions``: ``Store.completions_frame`` (model, prompt_id, correct, direct_label).
    """
    acc = model_accuracy(completions)
    if acc.empty or len(acc) < 3:
        return AlignmentResult(
            acc,
            pd.DataFrame(),
            (),
            None,
            float("nan"),
            "",
            reason="fewer than 3 models have graded completions: accuracy alignment needs "
            "correctness labels (verifiable prompts or a benchmark with ground truth)",
        )
    models = acc["model"].tolist()
    accuracy = acc["accuracy"].to_numpy(float)
    both = battles[battles["correct_a"].notna() & battles["correct_b"].notna()]
    both = both[both["model_a"].isin(models) & both["model_b"].isin(models)]
    ca, cb = both["correct_a"].astype(bool).to_numpy(), both["correct_b"].astype(bool).to_numpy()
    masks = {"all": np.ones(len(both), bool), "discriminative": ca != cb, "non_discriminative": ca == cb}
    disc_share = float(masks["discriminative"].mean()) if len(both) else float("nan")

    rng = np.random.default_rng(seed)
    rows, score_rows = [], []
    total = max(1, len(labels) * len(SUBSETS))
    step = 0
    for name, col in labels.items():
        y_all = both[col].to_numpy(float)
        for subset in SUBSETS:
            m = masks[subset] & np.isfinite(y_all)
            a, b, y = both["model_a"].to_numpy()[m], both["model_b"].to_numpy()[m], y_all[m]
            scores = _bt_scores(models, a, b, y)
            agr = agreement(accuracy, scores)
            ci = (
                kendall_percentile_interval(accuracy, scores, rng, n_boot)
                if np.isfinite(agr.kendall)
                else (np.nan,) * 2
            )
            kd_ci = ((1 - ci[1]) / 2, (1 - ci[0]) / 2)
            rows.append(AlignmentRow(name, subset, int(m.sum()), agr, ci, kd_ci))
            score_rows.append(
                pd.DataFrame(
                    {"model": models, "ranking": name, "subset": subset, "score": scores, "accuracy": accuracy}
                )
            )
            step += 1
            if progress:
                progress(step, total)

    direct = None
    if "direct_accuracy" in acc:
        direct = agreement(accuracy, acc["direct_accuracy"].to_numpy(float))
    finding = _finding(rows)
    return AlignmentResult(acc, pd.concat(score_rows, ignore_index=True), tuple(rows), direct, disc_share, finding)


def _finding(rows: list[AlignmentRow]) -> str:
    """Does restricting to discriminative pairs raise alignment here (the paper's finding)?"""
    parts = []
    for name in dict.fromkeys(r.ranking for r in rows):
        by = {r.subset: r for r in rows if r.ranking == name}
        a, d = by.get("all"), by.get("discriminative")
        if a is None or d is None or not np.isfinite(a.agreement.kendall) or not np.isfinite(d.agreement.kendall):
            parts.append(f"{name}: not enough battles to compare subsets")
            continue
        verb = "raises" if d.agreement.kendall > a.agreement.kendall else "does not raise"
        parts.append(
            f"{name}: restricting to discriminative pairs {verb} Kendall τ "
            f"({a.agreement.kendall:.3f} → {d.agreement.kendall:.3f})"
        )
    return "; ".join(parts)
