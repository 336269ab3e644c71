"""What the pages call: store queries and statistics composed into view results.

Plain functions, no Streamlit, no SQL.  Each takes the store and the names
that define a view and returns result objects; the pages cache them with
keys that separate expensive inputs (dataset, judge, data version) from cheap
ones (τ, α), so a slider move recomputes only what depends on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.calibration import TauFit, fit_tau
from core.conformal import Quantile, deploy
from core.heldout import DEFAULT_METHODS, HeldoutResult, Method, full_judge_elo, leave_one_model_out


def battle_frame(store, dataset: str, judge: str | None) -> pd.DataFrame:
    return store.battle_frame(dataset, judge)


def tau_fit(frame: pd.DataFrame) -> TauFit:
    return fit_tau(frame["gap"].to_numpy(float), frame["human_y"].to_numpy(float))


HARD_SOFT = (Method("hard", "hard"), Method("soft", "soft"))


def heldout(frame: pd.DataFrame, n_boot: int = 20, seed: int = 42, all_methods: bool = False,
            progress: Callable[[int, int], None] | None = None) -> HeldoutResult | None:
    """The leave-one-model-out table (expensive: cache it per dataset, judge and data version).

    ``all_methods`` adds the label-smoothing baselines (the Residuals page).
    """
    if frame["human_y"].notna().sum() == 0:
        return None
    methods = DEFAULT_METHODS if all_methods else HARD_SOFT
    return leave_one_model_out(frame, methods, n_boot=n_boot, seed=seed, progress=progress)


def ensemble_frame(store, dataset: str, judges: list[str]) -> pd.DataFrame:
    """One battle frame with a ``gap__<judge>`` column per judge (for the judge-ensemble method)."""
    base = None
    for j in judges:
        f = store.battle_frame(dataset, j)
        if base is None:
            base = f[["battle_id", "model_a", "model_b", "human_y", "language"]].copy()
        base[f"gap__{j}"] = f["gap"].to_numpy()
    return base


def human_elo(store, dataset: str) -> pd.DataFrame | None:
    from core.leaderboard import LeaderboardError, bradley_terry_leaderboard

    try:
        lb = bradley_terry_leaderboard(store, dataset, "human", ci="sandwich")
    except LeaderboardError:
        return None
    return lb.frame


def judge_elo(frame: pd.DataFrame, method: str, tau: float | None) -> pd.DataFrame:
    """Deployment-mode judge Elo and bootstrap SE for every model (cheap: one fit)."""
    return full_judge_elo(frame, Method(method, method), tau)


@dataclass(frozen=True)
class LeaderboardView:
    table: pd.DataFrame  # model, human_elo(+ci), hard_elo, soft_elo, interval columns, ranks
    quantile: Quantile | None
    interval_method: str
    alpha: float
    tau: float | None
    note: str | None


def leaderboard_view(human: pd.DataFrame | None, hard: pd.DataFrame, soft: pd.DataFrame | None,
                     held: HeldoutResult | None, alpha: float, tau: float | None,
                     interval_method: str = "soft") -> LeaderboardView:
    """Join the three leaderboards and put each model's conformal interval for its human Elo."""
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
        note = ("No human votes in this dataset: conformal intervals need models with both human and judge "
                "battles to calibrate on.")
    elif f"{interval_method}_elo" not in t:
        note = f"No {interval_method} judge Elo (the judge has no rubric scores): no intervals."
    else:
        base = t[["model", f"{interval_method}_elo", f"{interval_method}_se"]].rename(
            columns={f"{interval_method}_elo": "elo", f"{interval_method}_se": "se"})
        dep, q = deploy(held.table[f"{interval_method}_resid"], held.table[f"{interval_method}_se"], base, alpha)
        t = t.merge(dep[["model", "lower", "upper"]].rename(columns={"lower": "interval_lower",
                                                                     "upper": "interval_upper"}), on="model")
        if not q.finite:
            note = q.reason
    for col in ("human_elo", "hard_elo", "soft_elo"):
        if col in t:
            t[col.replace("_elo", "_rank")] = t[col].rank(ascending=False, method="min")
    sort_col = "soft_elo" if "soft_elo" in t else "hard_elo"
    t = t.sort_values(sort_col, ascending=False).reset_index(drop=True)
    return LeaderboardView(t, q, interval_method, alpha, tau, note)


def export_markdown(df: pd.DataFrame, digits: int = 1) -> str:
    cols = list(df.columns)
    fmt = lambda v: f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) and np.isfinite(v) else (  # noqa: E731
        "" if isinstance(v, (float, np.floating)) else str(v))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def export_latex(df: pd.DataFrame, digits: int = 1, caption: str = "") -> str:
    def esc(s: str) -> str:
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                     ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
            s = s.replace(a, b)
        return s

    fmt = lambda v: f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) and np.isfinite(v) else (  # noqa: E731
        "--" if isinstance(v, (float, np.floating)) else esc(str(v)))
    cols = list(df.columns)
    out = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" + "r" * (len(cols) - 1) + "}", r"\toprule",
           " & ".join(esc(c) for c in cols) + r" \\", r"\midrule"]
    out += [" & ".join(fmt(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    out += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        out.append(r"\caption{" + esc(caption) + "}")
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"


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
