"""Judge variance: the same battles judged again, how often the verdict flips and how much the leaderboard moves.

A judgment's label is its verdict in battle terms, or for rubric scores the side of the score gap
(a zero gap is a tie).  A (battle, order) *flips* when its labels across the original judgment and
the k repeats are not all equal.  The leaderboard's spread: Bradley–Terry on each repetition's hard
labels of the sampled battles (orders averaged), then each model's standard deviation across them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.domain import OUTCOME_Y, theta_to_elo


@dataclass(frozen=True)
class JudgeVariance:
    repeats: int  # repetitions besides the original
    n_units: int  # (battle, order) pairs judged in every repetition
    flip_rate: float  # share of those whose label is not the same in all repetitions
    spread: pd.DataFrame  # model, elo_sd (across repetitions), n_battles
    median_sd: float

    def statement(self) -> str:
        return (
            f"Re-judged {self.repeats}× on {self.n_units} (battle, order) units: the verdict changed in "
            f"{self.flip_rate:.1%} of them; across the repetitions each model's Elo on this sample moves by a median "
            f"standard deviation of {self.median_sd:.1f} Elo."
        )


def _labels(j: pd.DataFrame) -> pd.Series:
    gap = j["gap"].to_numpy(float) if "gap" in j else np.full(len(j), np.nan)
    verdict = j["verdict"].astype(object).to_numpy()
    by_gap = np.where(gap > 0, "a", np.where(gap < 0, "b", "tie"))
    return pd.Series(np.where(np.isfinite(gap), by_gap, verdict), index=j.index)


def judge_variance(j: pd.DataFrame) -> JudgeVariance | None:
    """``j``: judgments (battle_id, order, variant, verdict, gap, model_a, model_b) of the original and of the
    ``repeat-*`` variants; None without repeats."""
    j = j[j["parse_error"].isna()] if "parse_error" in j else j
    rep = j[j["variant"].str.startswith("repeat-")]
    if rep.empty:
        return None
    variants = ["original", *sorted(rep["variant"].unique())]
    j = j[j["variant"].isin(variants) & j["battle_id"].isin(rep["battle_id"])].copy()
    j["label"] = _labels(j)
    wide = j.pivot_table(index=["battle_id", "order"], columns="variant", values="label", aggfunc="first")
    wide = wide.dropna()
    flips = wide.nunique(axis=1) > 1
    per_variant = {}
    battles = j.drop_duplicates("battle_id").set_index("battle_id")[["model_a", "model_b"]]
    for v in variants:
        part = j[j["variant"] == v]
        y = part.assign(y=part["label"].map(OUTCOME_Y)).groupby("battle_id")["y"].mean()
        per_variant[v] = _bt_elo(battles.loc[y.index, "model_a"], battles.loc[y.index, "model_b"], y)
    elo = pd.DataFrame(per_variant)
    counts = pd.concat([battles["model_a"], battles["model_b"]]).value_counts()
    spread = pd.DataFrame(
        {"model": elo.index, "elo_sd": elo.std(axis=1, ddof=1).to_numpy(), "n_battles": counts.reindex(elo.index)}
    ).reset_index(drop=True)
    return JudgeVariance(
        len(variants) - 1,
        int(len(wide)),
        float(flips.mean()) if len(wide) else float("nan"),
        spread,
        float(np.nanmedian(spread["elo_sd"])) if len(spread) else float("nan"),
    )


def _bt_elo(a: pd.Series, b: pd.Series, y: pd.Series) -> pd.Series:
    """Elo of a small penalised Bradley–Terry fit (λ = 0.01, so a sample with a perfect record stays finite)."""
    from core.stats.bt import comparisons_from_battles, fit_bt

    comps = comparisons_from_battles(a.to_numpy(), b.to_numpy(), y.to_numpy(float))
    fit = fit_bt(comps, lam=0.01)
    return pd.Series(theta_to_elo(fit.theta), index=list(fit.models))
