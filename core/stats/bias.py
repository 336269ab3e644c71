"""Judge bias diagnostics (METHODS.md §9) on battle and judgment frames from the store.

Each function takes the per-battle frame of one judge (``Store.battle_frame``)
or the per-judgment frame, and returns a small result; intervals are Wilson
95% intervals for shares and sandwich 95% intervals for coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from core.domain import CRITERIA, Z95, outcome_y, wilson
from core.stats import bt

NEAR_TIE = 0.5  # |gap| below this many rubric points is a near-tie (METHODS §9)
ONE_ORDER_NOTE = "the judge never saw both presentation orders: no flip rate or single-order comparison"


# ------------------------------------------------------------------ position
@dataclass(frozen=True)
class PositionBias:
    first_win_rate: float
    ci: tuple[float, float]
    n_decisive: int
    flip_rate: float | None  # None when the judge never saw both orders
    n_both_orders: int
    first_score_advantage: float | None  # rubric points the first-shown answer gains
    elo: pd.DataFrame | None  # model, first_order, second_order, swap_averaged, deflection
    note: str | None = None
    # decisive verdicts whose shown order is not known: merged over both orders, or never recorded
    n_order_merged: int = 0
    n_order_unknown: int = 0

    @property
    def biased(self) -> bool:
        """The 95% interval of the first-position win rate excludes 0.5 (False when there is no interval)."""
        lo, hi = self.ci
        return bool(np.isfinite(lo) and np.isfinite(hi) and not (lo <= 0.5 <= hi))


def position_bias(bf: pd.DataFrame) -> PositionBias:
    """Share of decisive verdicts won by the first-shown answer, flips, and single-order Elo."""
    ab, ba = bf["verdict_ab"], bf["verdict_ba"]
    first_wins = int((ab == "a").sum() + (ba == "b").sum())
    decisive = int(ab.isin(["a", "b"]).sum() + ba.isin(["a", "b"]).sum())
    both = ab.notna() & ba.notna()
    note = None
    flip = adv = None
    elo = None
    if both.any():
        flip = float((ab[both] != ba[both]).mean())
        g = bf.loc[both, ["gap_ab", "gap_ba"]].dropna()
        if len(g):
            # order ab shows a first: gap_ab = quality + bonus; order ba: gap_ba = quality − bonus
            adv = float(((g["gap_ab"] - g["gap_ba"]) / 2).mean())
        fits = {}
        for name, y in (
            ("first_order", outcome_y(ab)),
            ("second_order", outcome_y(ba)),
            ("swap_averaged", bf["judge_hard"].to_numpy(float)),
        ):
            ok = np.isfinite(y)
            f = bt.fit_bt(
                bt.comparisons_from_battles(bf["model_a"].to_numpy()[ok], bf["model_b"].to_numpy()[ok], y[ok]), lam=1e-6
            )
            fits[name] = pd.Series(f.elo, index=f.models)
        elo = pd.DataFrame(fits).reset_index(names="model")
        elo["deflection"] = (elo["first_order"] - elo["second_order"]) / 2
    else:
        note = ONE_ORDER_NOTE
    # Decisive judge labels with no verdict in a known order: merged over both orders ('avg'), or shown in an
    # order the source did not keep ('unknown', e.g. AlpacaEval, which randomised it and stored the
    # preference un-swapped).  Neither can say anything about the first position.
    hard = bf["judge_hard"].to_numpy(float) if "judge_hard" in bf else np.full(len(bf), np.nan)
    free = ab.isna().to_numpy() & ba.isna().to_numpy() & np.isin(hard, (0.0, 1.0))
    merged = free & bf["verdict_avg"].notna().to_numpy() if "verdict_avg" in bf else np.zeros(len(bf), bool)
    n_merged, n_unknown = int(merged.sum()), int((free & ~merged).sum())
    if decisive == 0:
        if n_merged or n_unknown:
            kinds = []
            if n_unknown:
                kinds.append(f"{n_unknown:,} were shown in an order the source did not record")
            if n_merged:
                kinds.append(f"{n_merged:,} are averaged over both orders")
            note = (
                f"Shown order unknown: of the judge's {n_merged + n_unknown:,} decisive verdicts, "
                f"{' and '.join(kinds)}, so no statement about the first position can be made."
            )
        else:
            note = "no decisive verdicts in known presentation order"
    return PositionBias(
        first_wins / decisive if decisive else float("nan"),
        wilson(first_wins, decisive),
        decisive,
        flip,
        int(both.sum()),
        adv,
        elo,
        note,
        n_merged,
        n_unknown,
    )


# ----------------------------------------------------------------- verbosity
@dataclass(frozen=True)
class Verbosity:
    longer_win_rate: float
    ci: tuple[float, float]
    n_near_ties: int  # the battles the rate is over (near-ties, or every decisive verdict: see ``basis``)
    residual_length_partial_r: float | None
    note: str | None = None
    # "near-ties": |rubric gap| < NEAR_TIE, where quality hardly differs; "decisive": no rubric gaps, so every
    # decisive verdict between answers of different length, where the longer answer may also be the better one
    basis: str = "near-ties"


def verbosity(bf: pd.DataFrame, residuals: pd.DataFrame | None = None) -> Verbosity:
    """How often the longer answer wins: on near-tie battles (|gap| < 0.5) when the judge gives rubric scores,
    else on every decisive verdict (stated as such); and the residual–length link.

    ``residuals``: model, residual (judge − human Elo), human_elo (from the held-out table).
    """
    has_len = bf["len_a"].notna() & bf["len_b"].notna()
    if not has_len.any():
        return Verbosity(
            float("nan"),
            (float("nan"), float("nan")),
            0,
            None,
            "no completion lengths (the answers' texts are not in the store): verbosity needs them",
        )
    has_gap = has_len & bf["gap"].notna()
    basis, note = "near-ties", None
    if has_gap.any():
        f = bf[has_gap & (bf["gap"].abs() < NEAR_TIE)]
    else:
        basis = "decisive"
        note = (
            "no rubric score gaps (the judge gives verdicts, not scores), so no near-ties: the rate is over every "
            "decisive verdict, where the longer answer may also be the better one; the style-control length "
            "coefficient separates the two"
        )
        f = bf[has_len]
    f = f[f["judge_hard"].isin([0.0, 1.0]) & (f["len_a"] != f["len_b"])]
    longer_a = f["len_a"] > f["len_b"]
    wins = int(((f["judge_hard"] == 1.0) == longer_a).sum())
    partial = None
    if residuals is not None and len(residuals) >= 5:
        lengths = pd.concat(
            [
                bf[["model_a", "len_a"]].set_axis(["model", "len"], axis=1),
                bf[["model_b", "len_b"]].set_axis(["model", "len"], axis=1),
            ]
        )
        mean_len = np.log(lengths.groupby("model")["len"].mean())
        r = residuals.assign(log_len=residuals["model"].map(mean_len)).dropna(subset=["log_len", "residual"])
        if len(r) >= 5:
            x = np.column_stack([np.ones(len(r)), r["human_elo"]])
            res_r = r["residual"] - x @ np.linalg.lstsq(x, r["residual"], rcond=None)[0]
            res_l = r["log_len"] - x @ np.linalg.lstsq(x, r["log_len"], rcond=None)[0]
            partial = float(stats.pearsonr(res_r, res_l)[0])
    rate = wins / len(f) if len(f) else float("nan")
    return Verbosity(rate, wilson(wins, len(f)), len(f), partial, note, basis)


# ----------------------------------------------------------- self-preference
@dataclass(frozen=True)
class SelfPreference:
    judge: str
    family: str | None
    excess: float | None  # score points: same-family minus other families, relative to other judges
    n_same: int
    note: str | None = None


def side_scores(judgments: pd.DataFrame) -> pd.DataFrame:
    """Mean rubric score each judge gave each answer (battle, side), averaged over orders."""
    a = judgments[[f"a_{c}" for c in CRITERIA]].mean(axis=1)
    b = judgments[[f"b_{c}" for c in CRITERIA]].mean(axis=1)
    long = pd.concat(
        [
            pd.DataFrame(
                {
                    "battle_id": judgments["battle_id"],
                    "judge": judgments["judge"],
                    "side": "a",
                    "model": judgments["model_a"],
                    "score": a,
                }
            ),
            pd.DataFrame(
                {
                    "battle_id": judgments["battle_id"],
                    "judge": judgments["judge"],
                    "side": "b",
                    "model": judgments["model_b"],
                    "score": b,
                }
            ),
        ]
    )
    return (
        long.dropna(subset=["score"]).groupby(["battle_id", "side", "judge", "model"], as_index=False)["score"].mean()
    )


def self_preference(
    judgments: pd.DataFrame, judge_family: dict[str, str], model_family: dict[str, str]
) -> list[SelfPreference]:
    """Each judge's same-family excess, against the other judges' median on the same answer."""
    s = side_scores(judgments)
    out = []
    judges = sorted(s["judge"].unique())
    if len(judges) < 2:
        return [
            SelfPreference(
                j,
                judge_family.get(j),
                None,
                0,
                "needs at least two judges scoring the same answers (the baseline is the other judges' median)",
            )
            for j in judges
        ]
    wide = s.pivot_table(index=["battle_id", "side", "model"], columns="judge", values="score").reset_index()
    for j in judges:
        fam = judge_family.get(j)
        others = [o for o in judges if o != j]
        base = wide[others].median(axis=1)
        excess = wide[j] - base
        same = wide["model"].map(model_family) == fam
        ok = excess.notna()
        if fam is None or not (same & ok).any():
            out.append(SelfPreference(j, fam, None, 0, "no answers from the judge's own family"))
            continue
        out.append(
            SelfPreference(j, fam, float(excess[same & ok].mean() - excess[~same & ok].mean()), int((same & ok).sum()))
        )
    return out


# -------------------------------------------------------------- style control


@dataclass(frozen=True)
class StyleControl:
    coefficients: pd.DataFrame  # feature, coef, se, lower, upper
    leaderboard: pd.DataFrame  # model, elo_raw, elo_controlled, rank_raw, rank_controlled, moved
    n_battles: int
    note: str | None = None


def style_features(bf: pd.DataFrame, echo: bool = False) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Standardised a − b differences: log length, headers, bold, list items (+ echo).

    A same-family feature is deliberately absent: for one judge it is a fixed
    function of the two models (f(a) − f(b)), hence a linear combination of the
    model strengths and not identifiable next to them.  Self-preference is
    measured at score level against other judges instead (``self_preference``).
    """
    cols = {
        "log_length": np.log1p(bf["len_a"].to_numpy(float)) - np.log1p(bf["len_b"].to_numpy(float)),
        "headers": bf["headers_a"].to_numpy(float) - bf["headers_b"].to_numpy(float),
        "bold": bf["bold_a"].to_numpy(float) - bf["bold_b"].to_numpy(float),
        "list_items": bf["lists_a"].to_numpy(float) - bf["lists_b"].to_numpy(float),
    }
    if echo:
        cols["echo"] = bf["echo_a"].astype("float").to_numpy() - bf["echo_b"].astype("float").to_numpy()
    x = np.column_stack(list(cols.values()))
    ok = np.all(np.isfinite(x), axis=1)
    sd = x[ok].std(axis=0)
    keep = sd > 0  # a constant feature (e.g. no echo anywhere) cannot be estimated
    x = (x[:, keep] - x[ok][:, keep].mean(axis=0)) / sd[keep]
    return x, [n for n, k in zip(cols, keep) if k], ok


def style_control(bf: pd.DataFrame, echo: bool = False) -> StyleControl:
    """Bradley–Terry with style features on the judge's hard labels, vs without."""
    if bf["len_a"].isna().all():
        return StyleControl(pd.DataFrame(), pd.DataFrame(), 0, "no completions with text: style features unknown")
    x, names, ok = style_features(bf, echo)
    y = bf["judge_hard"].to_numpy(float)
    ok &= np.isfinite(y)
    a, b = bf["model_a"].to_numpy()[ok], bf["model_b"].to_numpy()[ok]
    raw = bt.fit_bt(bt.comparisons_from_battles(a, b, y[ok]), lam=1e-6)
    c = bt.comparisons_from_battles(a, b, y[ok], x=x[ok], feature_names=names, aggregate=False)
    ctl = bt.fit_with_ci(c, ci="sandwich", lam=1e-6)
    lb = pd.DataFrame({"model": raw.models, "elo_raw": raw.elo}).merge(
        pd.DataFrame({"model": ctl.fit.models, "elo_controlled": ctl.fit.elo}), on="model"
    )
    lb["rank_raw"] = lb["elo_raw"].rank(ascending=False, method="min").astype(int)
    lb["rank_controlled"] = lb["elo_controlled"].rank(ascending=False, method="min").astype(int)
    lb["moved"] = lb["rank_raw"] - lb["rank_controlled"]
    return StyleControl(
        ctl.coef_frame(), lb.sort_values("elo_controlled", ascending=False).reset_index(drop=True), int(ok.sum())
    )


# ---------------------------------------------------------------------- echo
@dataclass(frozen=True)
class EchoPreference:
    rates: pd.DataFrame  # model, echo_rate, n
    preference: pd.DataFrame  # pairs, n, echoing_side_win_rate, lower, upper
    note: str | None = None


def echo_preference(bf: pd.DataFrame, completions: pd.DataFrame) -> EchoPreference:
    """Echo rate per model; how often the judge prefers the echoing side, by pair type."""
    rates = (
        completions.groupby("model")["echo"]
        .agg(["mean", "size"])
        .rename(columns={"mean": "echo_rate", "size": "n"})
        .reset_index()
    )
    f = bf[bf["echo_a"].notna() & bf["echo_b"].notna() & bf["judge_hard"].isin([0.0, 1.0])]
    one = f[f["echo_a"].astype(bool) != f["echo_b"].astype(bool)]
    rows = []
    known = one["correct_a"].notna() & one["correct_b"].notna()
    groups = {"all pairs with one echoing side": one}
    if known.any():
        k = one[known]
        same = k["correct_a"].astype(bool) == k["correct_b"].astype(bool)
        groups["non-discriminative (both right or both wrong)"] = k[same]
        groups["discriminative (exactly one right)"] = k[~same]
    for name, g in groups.items():
        echo_wins = int(((g["judge_hard"] == 1.0) == g["echo_a"].astype(bool)).sum())
        lo, hi = wilson(echo_wins, len(g))
        rows.append(
            {
                "pairs": name,
                "n": len(g),
                "echoing_side_win_rate": echo_wins / len(g) if len(g) else np.nan,
                "lower": lo,
                "upper": hi,
            }
        )
    note = None if known.any() else "no correctness labels: pairs cannot be split into (non-)discriminative"
    return EchoPreference(rates, pd.DataFrame(rows), note)


def echo_intervention_summary(results: pd.DataFrame) -> pd.DataFrame:
    """P(a ≻ b) per variant ('original', 'echo_a', 'echo_b') with 95% intervals.

    ``results``: battle_key, variant, order, p_a (and/or verdict); P is the mean
    of p_a over battles and orders (verdict share when p_a is missing), with a
    battle-clustered normal interval.
    """
    rows = []
    for variant, g in results.groupby("variant", sort=False):
        p = g["p_a"] if "p_a" in g and g["p_a"].notna().any() else pd.Series(outcome_y(g["verdict"]), index=g.index)
        per_battle = p.groupby(g["battle_key"]).mean()
        m, se = per_battle.mean(), per_battle.std(ddof=1) / np.sqrt(len(per_battle))
        rows.append(
            {"variant": variant, "p_a": m, "lower": m - Z95 * se, "upper": m + Z95 * se, "n_battles": len(per_battle)}
        )
    return pd.DataFrame(rows)


def self_preference_elo(
    elos: pd.DataFrame, judge_family: dict[str, str], model_family: dict[str, str]
) -> dict[str, float | None]:
    """Same-family excess on Elo: each judge's Elo of a model minus the other judges' median.

    ``elos``: models × judges table of (centred) Elo from each judge's hard labels.
    Needs at least two judges; None where the judge's family has no models.
    """
    out: dict[str, float | None] = {}
    if elos.shape[1] < 2:
        return dict.fromkeys(elos.columns)
    centred = elos - elos.mean()
    for j in elos.columns:
        others = centred.drop(columns=[j]).median(axis=1)
        excess = centred[j] - others
        family = judge_family.get(j)
        same = np.array([model_family.get(m) == family for m in elos.index], dtype=bool)
        out[j] = float(excess[same].mean() - excess[~same].mean()) if same.any() and (~same).any() else None
    return out
