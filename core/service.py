"""What the pages call: store queries and statistics composed into view results.

Plain functions, no Streamlit, no SQL.  Each takes the store (or a battle
frame the store produced) and the names that define a view, and returns a
result object.  The pages cache them with keys that separate the expensive
inputs (dataset, judge, data version) from the cheap ones (τ, α), so a slider
move recomputes only what depends on it:

==============  =======================================  ==========================
page            expensive, cached per (dataset, judge)    cheap, per slider value
==============  =======================================  ==========================
Leaderboard     battle frame, τ fit, leave-one-out table  Soft-Elo at τ, q̂ at α
Calibration     battle frame, τ fit                       reliability at τ, profile
Residuals       leave-one-out table (all methods)         q̂ and split evaluation at α
Selective       curves over the default α grid            threshold and leaderboard at α
==============  =======================================  ==========================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.calibration import Reliability, TauFit, fit_tau, neg_loglik
from core.conformal import Quantile, conformal_quantile, deploy, evaluate_splits, min_pool, scores
from core.heldout import DEFAULT_METHODS, HeldoutResult, Method, full_judge_elo, leave_one_model_out


# ================================================================== overview
@dataclass(frozen=True)
class Overview:
    datasets: pd.DataFrame  # every dataset in the store with its counts
    info: dict  # the selected dataset's counts (Store.info entry)
    models: pd.DataFrame
    judges: pd.DataFrame
    languages: pd.DataFrame
    pairs: pd.DataFrame  # battles per unordered pair (Store.pair_coverage)


def overview(store, dataset: str) -> Overview:
    info = store.info()["datasets"]
    table = pd.DataFrame([{k: d[k] for k in ("name", "source", "n_models", "n_battles", "n_human_votes",
                                            "n_annotators", "n_prompts")} | {"n_judges": len(d["judges"])}
                          for d in info])
    mine = next(d for d in info if d["name"] == dataset)
    return Overview(table, mine, store.models_frame(dataset), store.judges_frame(dataset),
                    store.languages_frame(dataset), store.pair_coverage(dataset))


# =============================================================== leaderboard
def battle_frame(store, dataset: str, judge: str | None) -> pd.DataFrame:
    return store.battle_frame(dataset, judge)


def tau_fit(frame: pd.DataFrame) -> TauFit:
    return fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))


HARD_SOFT = (Method("hard", "hard"), Method("soft", "soft"))


def heldout(frame: pd.DataFrame, n_boot: int = 20, seed: int = 42, all_methods: bool = False,
            progress: Callable[[int, int], None] | None = None) -> HeldoutResult | None:
    """The leave-one-model-out table (expensive: cache it per dataset, judge and data version).

    ``all_methods`` adds the label-smoothing baselines (the Residuals page).
    None when no battle has a human vote (nothing to hold out against).
    """
    if frame["human_y"].notna().sum() == 0:
        return None
    methods = DEFAULT_METHODS if all_methods else HARD_SOFT
    return leave_one_model_out(frame, methods, n_boot=n_boot, seed=seed, progress=progress)


def human_elo(store, dataset: str) -> pd.DataFrame | None:
    """Human Bradley–Terry Elo with sandwich 95% intervals; None when there are no human votes."""
    from core.leaderboard import LeaderboardError, leaderboard

    try:
        return leaderboard(store, dataset, "human", ci="sandwich").frame
    except LeaderboardError:
        return None


def judge_elo(frame: pd.DataFrame, method: str, tau: float | None) -> pd.DataFrame:
    """Deployment-mode judge Elo and bootstrap SE for every model (cheap: one fit).

    The SE is the same kind the conformal quantile was calibrated with in the
    leave-one-out table, which is what makes q̂·SE an interval for human Elo.
    """
    return full_judge_elo(frame, Method(method, method), tau)


@dataclass(frozen=True)
class LeaderboardView:
    table: pd.DataFrame  # model, human_elo(+ci), hard_elo, soft_elo, interval columns, integer ranks
    quantile: Quantile | None
    interval_method: str
    alpha: float
    tau: float | None
    note: str | None

    @property
    def has_intervals(self) -> bool:
        return self.quantile is not None and self.quantile.finite and "interval_lower" in self.table

    def coverage_statement(self) -> str | None:
        """The sentence that says what the bars promise (None without finite intervals)."""
        if not self.has_intervals:
            return None
        width = self.table["interval_upper"] - self.table["interval_lower"]
        q = self.quantile
        return (f"Each bar is a split-conformal interval for the model's **human** Elo: with α = {self.alpha:.2f}, "
                f"it covers the human Elo of a new model with probability ≥ {1 - self.alpha:.0%} (marginally, "
                f"models exchangeable). Calibrated on {q.n} held-out models with τ refitted per fold; "
                f"q̂ = {q.qhat:.2f} SEs, median width {float(np.nanmedian(width)):.0f} Elo.")


def leaderboard_view(human: pd.DataFrame | None, hard: pd.DataFrame, soft: pd.DataFrame | None,
                     held: HeldoutResult | None, alpha: float, tau: float | None,
                     interval_method: str = "soft") -> LeaderboardView:
    """Join the three leaderboards and give each model its conformal interval for its human Elo.

    Only q̂ depends on α (one quantile of the cached leave-one-out scores).
    """
    t = hard[["model", "elo", "se", "n_battles"]].rename(columns={"elo": "hard_elo", "se": "hard_se",
                                                                 "n_battles": "n_judged"})
    if soft is not None:
        t = t.merge(soft[["model", "elo", "se"]].rename(columns={"elo": "soft_elo", "se": "soft_se"}), on="model",
                    how="outer")
    if human is not None:
        t = t.merge(human[["model", "elo", "lower", "upper"]].rename(
            columns={"elo": "human_elo", "lower": "human_lower", "upper": "human_upper"}), on="model", how="outer")
    note, q = None, None
    if held is None or held.table.empty:
        note = ("No human votes in this dataset, so no conformal intervals: they are calibrated on models that "
                "have both human and judge battles (leave-one-model-out residuals).")
    elif f"{interval_method}_elo" not in t:
        note = f"No {interval_method} judge Elo (the judge has no rubric scores): no intervals."
    else:
        base = t[["model", f"{interval_method}_elo", f"{interval_method}_se"]].rename(
            columns={f"{interval_method}_elo": "elo", f"{interval_method}_se": "se"})
        dep, q = deploy(held.table[f"{interval_method}_resid"], held.table[f"{interval_method}_se"], base, alpha)
        t = t.merge(dep[["model", "lower", "upper"]].rename(columns={"lower": "interval_lower",
                                                                     "upper": "interval_upper"}), on="model")
        if not q.finite:
            note = (f"{q.reason}. Raise α to at least {smallest_alpha(q.n):.2f} or add models with human votes.")
    for col in ("human_elo", "hard_elo", "soft_elo"):
        if col in t:
            t[col.replace("_elo", "_rank")] = t[col].rank(ascending=False, method="min").astype("Int64")
    sort_col = "soft_elo" if "soft_elo" in t else "hard_elo"
    t = t.sort_values(sort_col, ascending=False, na_position="last").reset_index(drop=True)
    return LeaderboardView(t, q, interval_method, alpha, tau, note)


def smallest_alpha(n_calibration: int, step: float = 0.01) -> float:
    """The smallest α on a ``step`` grid whose conformal quantile is finite with this many calibration models."""
    if n_calibration < 1:
        return math.nan
    a = step
    while min_pool(a) > n_calibration and a < 1:
        a = round(a + step, 10)
    return a


# =============================================================== calibration
def _decisive(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The battles fit_tau uses: a finite gap and a decisive human vote."""
    g, y = frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float)
    ok = np.isfinite(g) & ((y == 0.0) | (y == 1.0))
    return g[ok], y[ok]


def tau_profile(frame: pd.DataFrame, fit: TauFit, user_tau: float | None = None, points: int = 161) -> pd.DataFrame:
    """Profile deviance 2·(ℓ(τ̂) − ℓ(τ)) on a grid that frames the interval (and the user's τ).

    The fit's own profile spans ±2.5 in ln τ, where a well-determined τ is a
    spike; this grid spans about three interval half-widths on each side.
    """
    g, y = _decisive(frame)
    lt = math.log(fit.tau)
    lo = math.log(fit.lower) if fit.lower else lt - 1.0
    hi = math.log(fit.upper) if fit.upper else lt + 1.0
    half = max(lt - lo, hi - lt, 0.02)
    a, b = lt - 3 * half, lt + 3 * half
    if user_tau is not None and user_tau > 0:
        a, b = min(a, math.log(user_tau) - 0.5 * half), max(b, math.log(user_tau) + 0.5 * half)
    grid = np.linspace(a, b, points)
    nll = neg_loglik(grid, g, y)
    best = float(neg_loglik(lt, g, y)[0])
    return pd.DataFrame({"tau": np.exp(grid), "delta": 2 * (nll - best)})


def _pool_tied_bins(rel: Reliability) -> Reliability:
    """Merge reliability bins that share one confidence value (hard labels, label smoothing).

    Equal-mass bins cut a constant confidence into arbitrary groups whose
    spread is noise, not miscalibration; one bin per distinct confidence shows
    (and scores) what the target claims.  ECE is recomputed on the pooled bins.
    """
    from core.bias import wilson

    b = rel.bins
    if len(b) < 2 or b["confidence"].round(12).nunique() == len(b):
        return rel
    hits = b["accuracy"] * b["n"]
    grouped = pd.DataFrame({"confidence": b["confidence"].round(12), "n": b["n"], "hits": hits}).groupby(
        "confidence", as_index=False).sum()
    acc = grouped["hits"] / grouped["n"]
    ci = [wilson(k, n) for k, n in zip(grouped["hits"], grouped["n"])]
    bins = pd.DataFrame({"bin": np.arange(len(grouped)), "n": grouped["n"].astype(int),
                         "confidence": grouped["confidence"], "accuracy": acc,
                         "lower": [c[0] for c in ci], "upper": [c[1] for c in ci]})
    ece = float(np.sum(bins["n"] / bins["n"].sum() * np.abs(bins["accuracy"] - bins["confidence"])))
    return Reliability(rel.label, bins, ece, rel.n, rel.accuracy)


def reliability_curves(frame: pd.DataFrame, fitted_tau: float, user_tau: float, q: float) -> list[Reliability]:
    """Reliability at the fitted τ, the user's τ, hard labels (τ = ∞) and label smoothing q."""
    from core.calibration import reliability

    gap, human, hard = frame["gap"], frame["human_y"], frame["judge_hard"]
    curves = [reliability(gap, human, hard, tau=fitted_tau, label=f"fitted τ = {fitted_tau:.3f}"),
              reliability(gap, human, hard, tau=user_tau, label=f"slider τ = {user_tau:.2f}"),
              reliability(gap, human, hard, tau=math.inf),
              reliability(gap, human, hard, q=q)]
    return [_pool_tied_bins(c) for c in curves]


# ================================================================= residuals
@dataclass(frozen=True)
class ResidualView:
    summary: pd.DataFrame  # method, MAE, Spearman, Kendall, median SE, q̂ at α, coverage/width over splits
    per_split: pd.DataFrame  # method, split, qhat, coverage, median_width
    splits_defined: bool  # half the models are enough for α: split coverage means something
    notes: tuple[str, ...] = ()


def residual_view(held: HeldoutResult, alpha: float, n_splits: int = 50, seed: int = 42) -> ResidualView:
    """q̂ at α on all held-out models and the coverage/width of random half/half splits (cheap).

    When half the models are too few for α, every split's interval is
    unbounded: coverage is then trivially 1 and is reported as undefined.
    """
    table = held.table
    methods = [m for m in held.methods if f"{m}_elo" in table]
    summary = held.summary()
    summary = summary[summary["method"].isin(methods)].reset_index(drop=True)
    rows, per = [], []
    notes: list[str] = []
    for m in summary["method"]:
        s = scores(table[f"{m}_resid"], table[f"{m}_se"])
        q = conformal_quantile(s, alpha)
        ev = evaluate_splits(table[f"{m}_resid"], table[f"{m}_se"], alpha, n_splits=n_splits, seed=seed)
        all_infinite = ev.n_infinite == ev.n_splits
        rows.append({"qhat": q.qhat, "coverage": np.nan if all_infinite else ev.coverage_mean,
                     "coverage_min": np.nan if all_infinite else ev.coverage_min,
                     "coverage_max": np.nan if all_infinite else ev.coverage_max,
                     "median_width": ev.width_mean, "unbounded_splits": ev.n_infinite})
        per.append(ev.per_split.assign(method=m))
    out = pd.concat([summary, pd.DataFrame(rows)], axis=1)
    per_split = pd.concat(per, ignore_index=True) if per else pd.DataFrame(
        columns=["method", "split", "qhat", "coverage", "median_width"])
    n = len(table)
    n_cal = int(round(n / 2))
    splits_defined = n_cal >= min_pool(alpha)
    if not splits_defined:
        notes.append(f"Half/half splits calibrate on {n_cal} of the {n} held-out models, fewer than the "
                     f"{min_pool(alpha)} that α = {alpha:.2f} needs: every split's interval is unbounded, so "
                     f"coverage is undefined. Raise α to at least {smallest_alpha(n_cal):.2f} to evaluate splits.")
    if not np.isfinite(out["qhat"]).all():
        notes.append(f"With all {n} held-out models as the calibration pool, α = {alpha:.2f} needs at least "
                     f"{min_pool(alpha)} models: q̂ is unbounded.")
    return ResidualView(out, per_split, splits_defined, tuple(notes))


# ====================================================================== bias
def bias_report(store, dataset: str, judge: str) -> dict:
    """Every bias diagnostic for one judge, as plain data (CLI ``bias`` and the Judge bias page)."""
    from core import bias

    bf = store.battle_frame(dataset, judge)
    judges = store.judges_frame(dataset)
    judge_family = dict(zip(judges["judge"], judges["family"]))
    models = store.models_frame(dataset)
    model_family = dict(zip(models["model"], models["family"]))
    pos = bias.position_bias(bf)
    held = heldout(bf) if bf["human_y"].notna().any() and bf["gap"].notna().any() else None
    residuals = None
    if held is not None and len(held.table):
        residuals = held.table[["model", "human_elo"]].assign(residual=held.table["hard_resid"])
    verb = bias.verbosity(bf, residuals)
    sp = bias.self_preference(store.judgments_frame(dataset), judge_family, model_family)
    mine = next((x for x in sp if x.judge == judge), None)
    elo_excess = None
    if len(judges) >= 2:
        from core import bt

        elos = {}
        for j in judges["judge"]:
            jf = bf if j == judge else store.battle_frame(dataset, j)
            ok = jf["judge_hard"].notna()
            if ok.sum() < 2:
                continue
            fit = bt.fit_bt(bt.comparisons_from_battles(jf["model_a"][ok].to_numpy(), jf["model_b"][ok].to_numpy(),
                                                        jf["judge_hard"][ok].to_numpy(float)), lam=0.01)
            elos[j] = pd.Series(fit.elo, index=fit.models)
        elo_excess = bias.self_preference_elo(pd.DataFrame(elos), judge_family, model_family).get(judge)
    intervention = None
    meta = store.dataset_meta(dataset)
    if meta.get("description", "").startswith("seeded demo arena") and judge.startswith("judge-"):
        from core.simulate import DemoConfig, rejudge_with_echo

        try:
            runs = rejudge_with_echo(int(meta.get("seed", 0)), judge, sample_size=300,
                                     config=DemoConfig(**meta["config"]))
            intervention = bias.echo_intervention_summary(runs).to_dict("records")
        except ValueError:
            intervention = None
    has_echo = bf["echo_a"].notna().any()
    style = bias.style_control(bf, echo=bool(has_echo))
    comps = store.completions_frame(dataset)
    echo = bias.echo_preference(bf, comps) if has_echo and len(comps) else None
    return {
        "judge": judge, "dataset": dataset,
        "position": {"first_win_rate": pos.first_win_rate, "ci": list(pos.ci), "n_decisive": pos.n_decisive,
                     "flip_rate": pos.flip_rate, "n_both_orders": pos.n_both_orders,
                     "first_score_advantage": pos.first_score_advantage, "biased": pos.biased, "note": pos.note,
                     "elo": None if pos.elo is None else pos.elo.to_dict("records")},
        "verbosity": {"longer_win_rate": verb.longer_win_rate, "ci": list(verb.ci), "n_near_ties": verb.n_near_ties,
                      "residual_length_partial_r": verb.residual_length_partial_r, "note": verb.note},
        "self_preference": {"family": None if mine is None else mine.family,
                            "excess": None if mine is None else mine.excess,
                            "n_same_family": 0 if mine is None else mine.n_same,
                            "note": None if mine is None else mine.note,
                            "elo_excess": elo_excess,
                            "all_judges": [x.__dict__ for x in sp]},
        "echo_intervention": intervention,
        "style": {"coefficients": style.coefficients.to_dict("records"), "n_battles": style.n_battles,
                  "leaderboard": style.leaderboard.to_dict("records"), "note": style.note},
        "echo": None if echo is None else {"rates": echo.rates.to_dict("records"),
                                           "preference": echo.preference.to_dict("records"), "note": echo.note},
    }


# ================================================================= selective
SCOPE_METHODS = ("scope", "ltt", "naive", "heuristic", "vanilla")


def scope_sources(frame: pd.DataFrame) -> list[str]:
    """The sources of P(a ≻ b) this judge's battles support, best first."""
    has = lambda c: c in frame and frame[c].notna().any()  # noqa: E731
    out = []
    if has("p_ab") and has("p_ba"):
        out.append("logprob")
    if has("gap_ab") and has("gap_ba"):
        out.append("rubric")
    if has("conf_ab"):
        out.append("verbal")
    out.append("single")
    return out


@dataclass(frozen=True)
class ScopeCurves:
    source: str
    reason: str | None  # why there are no instances, when there are none
    n_instances: int = 0
    table: pd.DataFrame = field(default_factory=pd.DataFrame)  # CurveResult.table
    n_splits: int = 0
    quality: pd.DataFrame = field(default_factory=pd.DataFrame)  # BPE vs single-order quality


def scope_curves(frame: pd.DataFrame, source: str, alphas, n_splits: int = 300, seed: int = 0,
                 progress: Callable[[int, int], None] | None = None) -> ScopeCurves:
    """Coverage–risk statistics over random calibration/test splits for each α (cache per α grid)."""
    from core import selective

    inst = selective.instances_from_battles(frame, source)
    if inst.reason:
        return ScopeCurves(source, inst.reason)
    if len(inst.frame) < 4:
        return ScopeCurves(source, f"only {len(inst.frame)} battles have a decisive human vote and a judge "
                                   "probability: the split protocol needs at least 4")
    u = inst.uncertainty()
    res = selective.evaluate(u, sorted(set(float(a) for a in alphas)), n_splits=n_splits, seed=seed,
                             methods=SCOPE_METHODS, progress=progress)
    f = inst.frame
    single = selective.single_order(f["p_fwd"].to_numpy(float), f["human_a"].to_numpy(bool))
    label = "single order" if source == "single" else "BPE (both orders)"
    quality = pd.DataFrame([{"probabilities": label, **selective.quality(u).as_dict()}]
                           + ([] if source == "single" else
                              [{"probabilities": "forward order only", **selective.quality(single).as_dict()}]))
    return ScopeCurves(source, None, len(f), res.table, res.n_splits, quality)


@dataclass(frozen=True)
class ScopeAtAlpha:
    alpha: float
    threshold: object | None  # core.selective.Threshold fitted on every human-voted instance
    examples: pd.DataFrame  # judged battles with a decisive human vote: probabilities, uncertainty, accepted
    leaderboard: pd.DataFrame  # wide: model × leaderboard (Elo)
    counts: dict  # battles used per leaderboard
    notes: tuple[str, ...] = ()


def scope_at_alpha(frame: pd.DataFrame, source: str, alpha: float, method: str = "scope") -> ScopeAtAlpha:
    """λ̂ at α calibrated on all human-voted battles, what it accepts, and the selective leaderboard."""
    from core import selective

    sl = selective.fit_selective_leaderboard(frame, source, alpha, method)
    if isinstance(sl, str):
        return ScopeAtAlpha(alpha, None, pd.DataFrame(), pd.DataFrame(), {}, (sl,))
    th = sl.threshold
    inst = selective.instances_from_battles(frame, source)
    u = inst.uncertainty()
    ex = inst.frame.assign(p_bar=u.p, uncertainty=u.score, accepted=u.score <= th.lam, judge_right=u.correct)
    long = sl.frame()
    wide = (long.pivot_table(index="model", columns="leaderboard", values="elo").round(1)
            if len(long) else pd.DataFrame())
    if len(wide.columns):
        wide = wide[[c for c in selective.LEADERBOARDS if c in wide.columns]]
        wide = wide.sort_values(wide.columns[0], ascending=False)
    notes = tuple(f"{p.name}: {p.reason}" for p in sl.parts if p.reason)
    return ScopeAtAlpha(alpha, th, ex, wide, sl.counts(), notes)


# ==================================================================== judges
def judge_arena_elo(store, dataset: str) -> tuple[pd.Series | None, str | None]:
    """The judges' own arena Elo, where known: (Series indexed by judge, where it came from).

    Looked up in the judges' stored parameters (``arena_elo``), then in the
    shared ``judge_elo.csv`` of the consistency paper when at least three of
    this dataset's judges are named there.
    """
    import json

    from core.datahome import shared_file

    judges = store.judges_frame(dataset)
    if judges.empty:
        return None, None
    stored = {}
    for name, params in zip(judges["judge"], judges["params_json"]):
        try:
            v = json.loads(params or "{}").get("arena_elo")
        except (TypeError, ValueError):
            v = None
        if isinstance(v, (int, float)) and math.isfinite(v):
            stored[name] = float(v)
    if len(stored) >= 3:
        return pd.Series(stored, dtype=float), "the judges' stored parameters"
    path = shared_file("judge_elo.csv")
    if path is not None:
        e = pd.read_csv(path)
        if {"judge", "arena_elo"} <= set(e.columns):
            known = e[e["judge"].isin(set(judges["judge"]))]
            if len(known) >= 3:
                return known.set_index("judge")["arena_elo"].astype(float), f"{path.name} (shared datasets)"
    return None, None


def consistency_study(store, dataset: str, judge_elo: pd.Series | None):
    """Consistency per judge (and against ``judge_elo`` when given); None without judge verdicts."""
    from core.consistency import study

    contests = store.contests_frame(dataset)
    return None if contests.empty else study(contests, judge_elo)


def annotator_abilities(store, dataset: str, min_records: int):
    """am-ELO abilities per annotator, with the simulated kind and true ability when the store has them."""
    from core.amelo import fit_amelo

    res = fit_amelo(store.votes_frame(dataset), min_records=min_records)
    truth = store.annotators_frame(dataset)[["annotator", "kind", "true_ability"]]
    return res.annotators.merge(truth, on="annotator", how="left")


def shuffle_study(store, dataset: str, n_shuffles: int, seed: int = 0):
    from core.ratings import online_elo_shuffles

    return online_elo_shuffles(store.votes_frame(dataset), n_shuffles=n_shuffles, seed=seed)
