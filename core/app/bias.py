"""The judge bias report: position, verbosity, self-preference, style control and echo (METHODS §9)."""

from __future__ import annotations

import math

import pandas as pd

from core.app.leaderboard import heldout_of
from core.app.persist import Stamps, load_or_compute
from core.stats import bias, bt
from core.stats.heldout import HeldoutResult
from core.store import Store


def judges_hard_elo(store: Store, dataset: str) -> pd.DataFrame:
    """Each judge's Bradley–Terry Elo on its hard labels (a column per judge, a row per model).

    Fitted from the label counts per pair, for the Elo-level self-preference
    check that compares judges on the same models.
    """
    elos = {}
    for j in store.judges_frame(dataset)["judge"]:
        cells = store.hard_label_cells(dataset, j)
        if cells["n"].sum() < 2:
            continue
        fit = bt.fit_bt(
            bt.comparisons_from_battles(
                cells["model_a"].to_numpy(), cells["model_b"].to_numpy(), cells["y"].to_numpy(float), cells["n"]
            ),
            lam=0.01,
        )
        elos[j] = pd.Series(fit.elo, index=fit.models)
    return pd.DataFrame(elos)


def judges_self_preference(store: Store, dataset: str) -> list[bias.SelfPreference]:
    """Every judge's same-family excess at score level, against the other judges' median on the same answers."""
    judges = store.judges_frame(dataset)
    models = store.models_frame(dataset)
    return bias.self_preference(
        store.judgments_frame(dataset),
        dict(zip(judges["judge"], judges["family"])),
        dict(zip(models["model"], models["family"])),
    )


def bias_report(store: Store, dataset: str, judge: str) -> dict:
    """Every bias diagnostic for one judge, as plain data (CLI ``bias`` and the Judge bias page).

    The leave-one-model-out table, the judges' Elo and the self-preference
    scores are other results of the store: read where persisted, computed
    otherwise.
    """
    stamps = Stamps.of(store)
    bf = store.battle_frame(dataset, judge)
    judges = store.judges_frame(dataset)
    judge_family = dict(zip(judges["judge"], judges["family"]))
    models = store.models_frame(dataset)
    model_family = dict(zip(models["model"], models["family"]))
    pos = bias.position_bias(bf)
    held = None
    if bf["human_y"].notna().any() and bf["gap"].notna().any():
        held = load_or_compute(store, heldout_of, (dataset, judge, False), stamps.judge(dataset, judge))
    residuals = None
    if isinstance(held, HeldoutResult) and len(held.table):
        residuals = held.table[["model", "human_elo"]].assign(residual=held.table["hard_resid"])
    verb = bias.verbosity(bf, residuals)
    sp = load_or_compute(store, judges_self_preference, (dataset,), stamps.everything())
    mine = next((x for x in sp if x.judge == judge), None)
    elo_excess = None
    if len(judges) >= 2:
        elos = load_or_compute(store, judges_hard_elo, (dataset,), stamps.everything())
        elo_excess = bias.self_preference_elo(elos, judge_family, model_family).get(judge)
    intervention = None
    meta = store.dataset_meta(dataset)
    if meta.get("description", "").startswith("seeded demo arena") and judge.startswith("judge-"):
        from core.simulate import DemoConfig, rejudge_with_echo

        try:
            runs = rejudge_with_echo(
                int(meta.get("seed", 0)), judge, sample_size=300, config=DemoConfig(**meta["config"])
            )
            intervention = bias.echo_intervention_summary(runs).to_dict("records")
        except ValueError:
            intervention = None
    has_echo = bf["echo_a"].notna().any()
    style = bias.style_control(bf, echo=bool(has_echo))
    comps = store.completions_frame(dataset)
    echo = bias.echo_preference(bf, comps) if has_echo and len(comps) else None
    return {
        "judge": judge,
        "dataset": dataset,
        "position": {
            "first_win_rate": pos.first_win_rate,
            "ci": list(pos.ci),
            "n_decisive": pos.n_decisive,
            "flip_rate": pos.flip_rate,
            "n_both_orders": pos.n_both_orders,
            "first_score_advantage": pos.first_score_advantage,
            "biased": pos.biased,
            "note": pos.note,
            "n_order_merged": pos.n_order_merged,
            "n_order_unknown": pos.n_order_unknown,
            "elo": None if pos.elo is None else pos.elo.to_dict("records"),
        },
        "verbosity": {
            "longer_win_rate": verb.longer_win_rate,
            "ci": list(verb.ci),
            "n_near_ties": verb.n_near_ties,
            "residual_length_partial_r": verb.residual_length_partial_r,
            "note": verb.note,
            "basis": verb.basis,
        },
        "self_preference": {
            "family": judge_family.get(judge) if mine is None else mine.family,
            "excess": None if mine is None else mine.excess,
            "n_same_family": 0 if mine is None else mine.n_same,
            "note": "needs rubric scores from at least two judges on the same answers" if mine is None else mine.note,
            "elo_excess": elo_excess,
            "all_judges": [x.__dict__ for x in sp],
        },
        "echo_intervention": intervention,
        "style": {
            "coefficients": style.coefficients.to_dict("records"),
            "n_battles": style.n_battles,
            "leaderboard": style.leaderboard.to_dict("records"),
            "note": style.note,
        },
        "echo": None
        if echo is None
        else {
            "rates": echo.rates.to_dict("records"),
            "preference": echo.preference.to_dict("records"),
            "note": echo.note,
        },
    }


Claim = tuple[str, str]  # (level: "warning" | "info" | "caption", text)


def _finite(*xs: object) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(float(x)) for x in xs)


def claims(report: dict) -> list[Claim]:
    """Every sentence the Judge bias page states about the judge, each one only when its numbers exist.

    A share or interval that is undefined (no decisive verdicts, no near-ties,
    no family) yields a sentence saying so, never a statement made from NaN.
    """
    out: list[Claim] = []
    p = report["position"]
    lo, hi = p["ci"]
    if p["biased"] and _finite(lo, hi, p["first_win_rate"]):
        out.append(
            (
                "warning",
                f"Position bias: the judge picks the first-shown answer in {p['first_win_rate']:.1%} "
                f"of {p['n_decisive']:,} decisive verdicts; the 95% interval ({lo:.3f}–{hi:.3f}) "
                "excludes 0.5.",
            )
        )
    elif p["n_decisive"] == 0 and not (p.get("n_order_merged") or p.get("n_order_unknown")):
        out.append(("info", "No decisive verdicts: the first-position win rate is undefined."))
    one_order = p["flip_rate"] is None and bool(p["n_decisive"])
    if one_order:
        out.append(
            (
                "info",
                "No flip rate: this judge saw each battle in one presentation order only, so there is "
                "no swapped verdict to compare with.",
            )
        )
    if p["note"] and not (one_order and p["note"] == bias.ONE_ORDER_NOTE):  # one notice per fact
        out.append(("info", p["note"]))
    v = report["verbosity"]
    vlo, vhi = v["ci"]
    if v["n_near_ties"] and _finite(v["longer_win_rate"], vlo, vhi) and v.get("basis") == "decisive":
        # no rubric gaps: a raw rate, which quality confounds, so never a bias warning
        out.append(
            (
                "caption",
                f"The longer answer wins {v['longer_win_rate']:.1%} of {v['n_near_ties']:,} decisive verdicts "
                f"between answers of different length (95% interval {vlo:.3f}–{vhi:.3f}). The judge gives no "
                "rubric scores, so there are no near-ties: where the longer answer is also the better one this "
                "counts quality, not verbosity; the style-control length coefficient controls for the models' "
                "strength.",
            )
        )
    elif v["n_near_ties"] and _finite(v["longer_win_rate"], vlo, vhi):
        text = (
            f"The longer answer wins {v['longer_win_rate']:.1%} of {v['n_near_ties']:,} near-tie battles "
            f"(|gap| < {bias.NEAR_TIE}; 95% interval {vlo:.3f}–{vhi:.3f})"
        )
        if vlo > 0.5 or vhi < 0.5:
            out.append(("warning", f"Verbosity bias: {text[0].lower()}{text[1:]}, which excludes 0.5."))
        else:
            out.append(("caption", text + "."))
    else:
        out.append(("info", v["note"] or f"No near-tie battles (|gap| < {bias.NEAR_TIE}) to measure verbosity on."))
    if _finite(v.get("residual_length_partial_r")):
        out.append(
            (
                "caption",
                "Partial correlation of a model's Hard-Elo residual with its mean answer length: "
                f"{v['residual_length_partial_r']:+.2f}.",
            )
        )
    sp = report["self_preference"]
    if _finite(sp.get("excess")):
        out.append(
            (
                "caption",
                f"Own family ({sp['family']}): {sp['excess']:+.2f} rubric points above the other "
                "judges' median on the same answers, relative to other families.",
            )
        )
    elif isinstance(sp.get("family"), str) and sp["family"]:  # a missing family may read as NaN
        why = sp.get("note") or "no answers from the judge's own family"
        out.append(("info", f"Self-preference (the judge's family: {sp['family']}): not measured, {why}."))
    else:
        out.append(
            (
                "info",
                "Self-preference needs the judge's family: give it with `python -m core judge-family --judge "
                "NAME --family FAMILY` or `family` in the judge's TOML.",
            )
        )
    if _finite(sp.get("elo_excess")):
        out.append(
            (
                "caption",
                f"On Elo: the judge rates its own family's models {sp['elo_excess']:+.1f} Elo higher "
                "than the other judges do, relative to other models.",
            )
        )
    if report["style"]["note"]:
        out.append(("info", report["style"]["note"]))
    return out
