"""Per-language breakdown: each language's own τ and its Hard/Soft-Elo against the global human Elo (App. E)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from core.domain import soft_target
from core.stats import bt
from core.stats.calibration import fit_tau


@dataclass(frozen=True)
class LanguageBreakdown:
    table: pd.DataFrame  # language, n_battles, n_decisive, tau, tau_lo, tau_hi, hard_mae, soft_mae, spearman...
    pooled_tau: float | None
    warnings: tuple[str, ...]


def language_breakdown(frame: pd.DataFrame, min_decisive: int = 50) -> LanguageBreakdown:
    """Per language: counts, own τ next to the pooled τ, Hard/Soft Elo vs the global human Elo.

    Per the paper (App. E) each language's Hard- and Soft-Elo are fitted on that
    language's battles with the *pooled* τ and compared with the human Elo from
    all battles.
    """
    pooled = fit_tau(frame["gap"], frame["human_y"])
    hv = frame[frame["human_y"].notna()]
    human = bt.fit_bt(
        bt.comparisons_from_battles(hv["model_a"].to_numpy(), hv["model_b"].to_numpy(), hv["human_y"].to_numpy(float)),
        lam=0.01,
    )
    human_elo = pd.Series(human.elo, index=human.models)
    rows, warnings = [], []
    lang = frame["language"].fillna("unknown")
    for language, f in frame.groupby(lang):
        dec = f["human_y"].isin([0.0, 1.0]) & f["gap"].notna()
        own = fit_tau(f["gap"], f["human_y"])
        row = {
            "language": language,
            "n_battles": len(f),
            "n_decisive": int(dec.sum()),
            "tau": own.tau,
            "tau_lo": own.lower,
            "tau_hi": own.upper,
        }
        for m, y in (
            ("hard", f["judge_hard"].to_numpy(float)),
            ("soft", soft_target(f["gap"].to_numpy(float), pooled.tau) if pooled.tau else None),
        ):
            if y is None:
                continue
            ok = np.isfinite(y)
            if ok.sum() < 2:
                row[f"{m}_mae"] = row[f"{m}_spearman"] = np.nan
                continue
            fit = bt.fit_bt(
                bt.comparisons_from_battles(f["model_a"].to_numpy()[ok], f["model_b"].to_numpy()[ok], y[ok]), lam=0.01
            )
            est = pd.Series(fit.elo, index=fit.models)
            ref = human_elo.reindex(est.index)
            # compare on a common centring: both relative to the models present in this language
            good = ref.notna()
            d = (est[good] - est[good].mean()) - (ref[good] - ref[good].mean())
            row[f"{m}_mae"] = float(d.abs().mean())
            varied = good.sum() >= 3 and np.ptp(est[good]) > 0 and np.ptp(ref[good]) > 0
            row[f"{m}_spearman"] = float(stats.spearmanr(est[good], ref[good])[0]) if varied else np.nan
        if row["n_decisive"] < min_decisive:
            warnings.append(
                f"{language}: only {row['n_decisive']} decisive human battles, too few for its own τ "
                "(use the pooled τ, as the paper recommends)"
            )
        rows.append(row)
    table = pd.DataFrame(rows).sort_values("n_battles", ascending=False).reset_index(drop=True)
    return LanguageBreakdown(table, pooled.tau, tuple(warnings))
