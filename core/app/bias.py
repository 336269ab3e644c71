"""The judge bias report: position, verbosity, self-preference, style control and echo (METHODS §9)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.app import display as show
from core.app.leaderboard import heldout_of
from core.app.page_view import Metric
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


# Each section of the page states the claims that begin with one of its topics (a notice of the report, such as
# a position note, is a topic of its own: it is stated where its section is).
POSITION_TOPICS = ("Position bias", "No decisive", "No flip rate", "Shown order unknown")
VERBOSITY_TOPICS = ("Verbosity bias", "The longer answer", "No near-tie", "Partial correlation")
SELF_PREFERENCE_TOPICS = ("Own family", "On Elo", "Self-preference")

NO_ECHO_INFORMATION = (
    "No echo information: the store has no completions with an echo flag for this dataset (echo is "
    "detected from the answer text, or simulated in the demo)."
)
NO_ECHOING_MODEL = "No model's answers echo."
NO_RANK_CHANGE = "No model changes rank once style is controlled for."
STYLE_MOVED_SHOWN = 15  # the rank changes listed, largest first


def percent(x: float | None) -> str:
    """A share as the page shows it; an undefined one as a dash."""
    return "—" if x is None or pd.isna(x) else f"{x:.1%}"


def _on(said: list[Claim], topics: tuple[str, ...]) -> tuple[Claim, ...]:
    return tuple(c for c in said if c[1].startswith(topics))


def _with_note(topics: tuple[str, ...], note: str | None) -> tuple[str, ...]:
    return (*topics, note) if note else topics


@dataclass(frozen=True)
class BiasView:
    """What the Judge bias page shows of one :func:`bias_report`, section by section.

    A frame that is None is not drawn; the claims are (level, text) as :func:`claims` states them.
    """

    position_metrics: tuple[Metric, ...]
    position_claims: tuple[Claim, ...]
    position_elo: pd.DataFrame | None  # each model's Elo shown first, shown second and both
    style_note: str | None
    style_coefficients: pd.DataFrame | None  # features as labels; None: no style fit to draw
    style_moved: pd.DataFrame  # the models whose rank moves (display headers), largest moves first
    style_caption: str
    verbosity_metric: Metric
    verbosity_claims: tuple[Claim, ...]
    self_preference_claims: tuple[Claim, ...]
    echo_notice: str | None  # neither echo rates nor the intervention: why the section is empty
    echo_shown: bool
    echo_rates: pd.DataFrame | None  # None: no model echoes (NO_ECHOING_MODEL is said instead)
    echo_preference: pd.DataFrame | None
    echo_note: str | None
    intervention: pd.DataFrame | None
    intervention_how_to_read: str


def _position_metrics(p: dict[str, Any]) -> tuple[Metric, ...]:
    if p["n_decisive"]:
        first_help = f"over {p['n_decisive']:,} decisive verdicts"
    elif p.get("n_order_merged") or p.get("n_order_unknown"):
        first_help = "the shown order of the decisive verdicts is unknown"
    else:
        first_help = "no decisive verdicts"
    advantage = p["first_score_advantage"]
    return (
        Metric("first-shown answer wins", percent(p["first_win_rate"]), first_help),
        Metric(
            "verdict flips when the order is swapped",
            percent(p["flip_rate"]),
            f"over {p['n_both_orders']:,} battles judged in both orders" if p["n_both_orders"] else None,
        ),
        Metric(
            "rubric points gained by going first",
            "—" if advantage is None or pd.isna(advantage) else f"{advantage:+.2f}",
        ),
    )


def _style_moved(s: dict[str, Any]) -> tuple[pd.DataFrame, str]:
    lb = pd.DataFrame(s["leaderboard"])
    moved = lb[lb["moved"] != 0].sort_values("moved", key=abs, ascending=False) if len(lb) else lb
    if moved.empty:
        return moved, NO_RANK_CHANGE
    return show.columns(moved.head(STYLE_MOVED_SHOWN)), (
        f"The {len(moved)} models whose rank changes once style is controlled for (positive: moves "
        f"up); {s['n_battles']:,} battles in the fit."
    )


def _intervention_how_to_read(iv: pd.DataFrame | None) -> str:
    if iv is None:
        return ""
    return (
        f"{int(iv['n_battles'].iloc[0])} battles re-judged by the simulated judge as they are "
        f"({show.label('original')}), and with the question–answer text appended three times to answer a or to "
        f"answer b; a causal penalty moves “{show.label('echo_a')}” left and “{show.label('echo_b')}” right of "
        f"“{show.label('original')}”."
    )


def bias_view(report: dict[str, Any]) -> BiasView:
    """The Judge bias page's sections composed from a :func:`bias_report`: metrics, sentences, what to draw."""
    said = claims(report)
    p, s, vb, e = report["position"], report["style"], report["verbosity"], report["echo"]
    coefficients = None
    if s["coefficients"]:
        coefficients = pd.DataFrame(s["coefficients"])
        coefficients["feature"] = coefficients["feature"].map(show.label)
    moved, style_caption = _style_moved(s) if coefficients is not None else (pd.DataFrame(), "")
    rates = preference = None
    if e:
        frame = pd.DataFrame(e["rates"])
        rates = frame if len(frame) and (frame["echo_rate"] > 0).any() else None
        chosen = pd.DataFrame(e["preference"]).dropna(subset=["echoing_side_win_rate"])
        preference = chosen if len(chosen) else None
    intervention = None
    if report.get("echo_intervention"):
        intervention = pd.DataFrame(report["echo_intervention"])
        intervention["variant"] = intervention["variant"].map(show.label)
    sp_note = report["self_preference"].get("note")
    return BiasView(
        position_metrics=_position_metrics(p),
        position_claims=_on(said, _with_note(POSITION_TOPICS, p["note"])),
        position_elo=pd.DataFrame(p["elo"]) if p["elo"] else None,
        style_note=s["note"] or None,
        style_coefficients=coefficients,
        style_moved=moved,
        style_caption=style_caption,
        verbosity_metric=Metric(
            "longer answer wins decisive verdicts" if vb.get("basis") == "decisive" else "longer answer wins near-ties",
            percent(vb["longer_win_rate"]) if vb["n_near_ties"] else "—",
        ),
        verbosity_claims=_on(said, _with_note(VERBOSITY_TOPICS, vb["note"])),
        self_preference_claims=_on(said, _with_note(SELF_PREFERENCE_TOPICS, sp_note)),
        echo_notice=None if e or report.get("echo_intervention") else NO_ECHO_INFORMATION,
        echo_shown=bool(e),
        echo_rates=rates,
        echo_preference=preference,
        echo_note=e["note"] if e and e["note"] else None,
        intervention=intervention,
        intervention_how_to_read=_intervention_how_to_read(intervention),
    )
