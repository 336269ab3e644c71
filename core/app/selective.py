"""Selective judging (SCOPE): which judgments to accept at a target error rate α (METHODS §6).

The page caches :func:`scope_curves` per (dataset, judge, source, α grid);
the α slider adds one point and :func:`scope_at_alpha` (λ̂ calibrated on every
human-voted battle, what it accepts, the selective leaderboard).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.domain import MIN_SLICE_BATTLES, Slice
from core.methods import SCOPE_RULES, SCOPE_SOURCES
from core.stats import selective
from core.stats.selective import DEFAULT_ALPHAS, Threshold
from core.store import Store

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_ALPHAS",
    "ScopeAtAlpha",
    "ScopeCurves",
    "scope_at_alpha",
    "scope_at_alpha_of",
    "scope_curves",
    "scope_report",
    "scope_sources",
    "instances_from_store",
    "threshold_statement",
]


# The α slider's value on a first visit: the page's statement at it is kept with the curves (precomputed), every
# other position is derived in the server from the kept battle sample.
DEFAULT_ALPHA = 0.1


def scope_sources(frame: pd.DataFrame) -> list[str]:
    """The sources of P(a ≻ b) this judge's battles support, in registry order (best first)."""
    return [s.name for s in SCOPE_SOURCES.values() if all(c in frame and frame[c].notna().any() for c in s.columns)]


@dataclass(frozen=True)
class ScopeCurves:
    source: str
    n_instances: int
    table: pd.DataFrame  # CurveResult.table: method, alpha, risk/coverage statistics
    n_splits: int
    quality: pd.DataFrame  # BPE vs single-order quality of the confidence


def scope_curves(
    frame: pd.DataFrame,
    source: str,
    alphas: Sequence[float],
    n_splits: int = 300,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> ScopeCurves | Unavailable:
    """Coverage–risk statistics over random calibration/test splits for each α (cache per α grid)."""
    inst = selective.instances_from_battles(frame, source)
    if inst.reason:
        return Unavailable(f"no SCOPE curves for the source {source!r}: {inst.reason}")
    if len(inst.frame) < 4:
        return Unavailable(
            f"only {len(inst.frame)} battles have a decisive human vote and a judge probability: "
            "the split protocol needs at least 4"
        )
    u = inst.uncertainty()
    res = selective.evaluate(
        u,
        sorted({float(a) for a in alphas}),
        n_splits=n_splits,
        seed=seed,
        methods=tuple(SCOPE_RULES),
        progress=progress,
    )
    f = inst.frame
    single = selective.single_order(f["p_fwd"].to_numpy(float), f["human_a"].to_numpy(bool))
    label = "single order" if source == "single" else "BPE (both orders)"
    quality = pd.DataFrame(
        [{"probabilities": label, **selective.quality(u).as_dict()}]
        + (
            []
            if source == "single"
            else [{"probabilities": "forward order only", **selective.quality(single).as_dict()}]
        )
    )
    return ScopeCurves(source, len(f), res.table, res.n_splits, quality)


# Fit issues under which a model's number is the ridge fallback's bound rather than an Elo estimate.
UNDEFINED_ELO_ISSUES = ("no_mle",)


@dataclass(frozen=True)
class ScopeAtAlpha:
    alpha: float
    threshold: Threshold  # fitted on every human-voted instance
    examples: pd.DataFrame  # judged battles with a decisive human vote: probabilities, uncertainty, accepted
    leaderboard: pd.DataFrame  # wide: model × leaderboard (Elo)
    counts: dict  # battles used per leaderboard
    notes: tuple[str, ...] = ()


def scope_curves_of(
    store: Store,
    dataset: str,
    judge: str,
    source: str,
    alphas: Sequence[float],
    n_splits: int = 300,
    progress: Callable[[int, int], None] | None = None,
) -> ScopeCurves | Unavailable:
    """:func:`scope_curves` on the judge's battles (a seeded sample on large arenas: ``data.sample_frame``)."""
    from core.app.data import sample_frame

    frame = sample_frame(store, dataset, judge).frame
    return scope_curves(frame, source, alphas, n_splits=n_splits, progress=progress)


def scope_at_alpha_of(store: Store, dataset: str, judge: str, source: str, alpha: float) -> ScopeAtAlpha | Unavailable:
    """:func:`scope_at_alpha` on the judge's battles (the same seeded sample as :func:`scope_curves_of`): the
    form that is kept in the store, at :data:`DEFAULT_ALPHA` (three Bradley–Terry fits on the sample take most
    of a first visit on a large arena)."""
    from core.app.data import sample_frame

    return scope_at_alpha(sample_frame(store, dataset, judge).frame, source, alpha)


def scope_at_alpha_on(
    store: Store, dataset: str, judge: str, source: str, alpha: float, where: Slice
) -> ScopeAtAlpha | Unavailable:
    """:func:`scope_at_alpha` on the battles of a slice (λ̂ calibrated on the slice's human-voted battles alone); a
    slice with fewer than ``MIN_SLICE_BATTLES`` such battles is Unavailable ("too few"), never a threshold."""
    from core.app.leaderboard import check_slice, too_few

    check_slice(store, dataset, where)
    frame = store.battle_frame(dataset, judge, where=where)
    both = int(((frame["n_judgments"] > 0) & frame["human_y"].notna()).sum())
    if both < MIN_SLICE_BATTLES:
        return too_few(where, both, f"a human vote and a judgment by {judge}")
    return scope_at_alpha(frame, source, alpha)


def scope_at_alpha(frame: pd.DataFrame, source: str, alpha: float, method: str = "scope") -> ScopeAtAlpha | Unavailable:
    """λ̂ at α calibrated on all human-voted battles, what it accepts, and the selective leaderboard."""
    sl = selective.fit_selective_leaderboard(frame, source, alpha, method)
    if isinstance(sl, str):
        return Unavailable(sl)
    th = sl.threshold
    if th is None:
        return Unavailable(f"no threshold could be calibrated at α = {alpha:g}")
    inst = selective.instances_from_battles(frame, source)
    u = inst.uncertainty()
    ex = inst.frame.assign(p_bar=u.p, uncertainty=u.score, accepted=u.score <= th.lam, judge_right=u.correct)
    long = sl.frame()
    wide = (
        long.pivot_table(index="model", columns="leaderboard", values="elo").round(1) if len(long) else pd.DataFrame()
    )
    if len(wide.columns):
        wide = wide[[c for c in selective.LEADERBOARDS if c in wide.columns]]
        wide = wide.sort_values(wide.columns[0], ascending=False)
    notes = tuple(f"{p.name}: {p.reason}" for p in sl.parts if p.reason)
    if len(wide):
        # A model with no maximum-likelihood Elo in a leaderboard (it won or lost every battle there) gets no
        # number in that column: the ridge fallback's value is a bound, not an Elo, and reads like one
        # (3,000+).  Other issues (few battles, a cut-off graph, a record that never varies) keep the number
        # and say so.
        undefined: dict[str, list[str]] = {}
        flagged: dict[str, list[str]] = {}
        for part in sl.parts:
            for issue in () if part.fit is None else part.fit.issues:
                for m in issue.models:
                    if issue.kind in UNDEFINED_ELO_ISSUES:
                        undefined.setdefault(str(m), []).append(part.name)
                    elif issue.kind in ("few_battles", "disconnected", "degenerate"):
                        flagged.setdefault(str(m), []).append(f"{part.name} ({issue.kind.replace('_', ' ')})")
        wide = wide.round(0).astype("Int64")
        for m, parts in undefined.items():
            if m in wide.index:
                wide.loc[m, [p for p in dict.fromkeys(parts) if p in wide.columns]] = pd.NA

        def caveat(m: str) -> str:
            parts = []
            if m in undefined:
                parts.append(f"no Elo in {', '.join(dict.fromkeys(undefined[m]))}: won or lost every battle there")
            if m in flagged:
                parts.append(f"uncertain in {', '.join(dict.fromkeys(flagged[m]))}")
            return "; ".join(parts)

        wide["caveat"] = [caveat(str(m)) for m in wide.index]
    return ScopeAtAlpha(alpha, th, ex, wide, sl.counts(), notes)


def leaderboard_display(at: ScopeAtAlpha) -> pd.DataFrame:
    """The selective leaderboard as a person reads it: a blank where a model has no Elo (a grid would write
    "None" for a missing integer), the numbers as whole Elo."""
    t = at.leaderboard
    return t.astype(object).where(t.notna(), "")


def threshold_statement(at: ScopeAtAlpha) -> tuple[str, str]:
    """(level, sentence) on what λ̂ accepts at this α; an infeasible threshold says why instead."""
    th = at.threshold
    if not th.feasible or not th.n_accepted:
        return "warning", f"At α = {at.alpha:.2f}: {th.reason or 'no judgment is accepted'}."
    return "success", (
        f"SCOPE calibrated on all {th.n_calibration:,} human-voted battles accepts judgments with uncertainty "
        f"≤ **{th.lam:.3f} nats** (binary entropy of the averaged P(a ≻ b)): **{th.calibration_coverage:.0%}** "
        f"accepted, of which {th.calibration_risk:.1%} disagree with the human vote."
    )


# The Selective judging page's words, kept with the sentences it composes.
SLICE_HELP = (
    "The threshold, the judgments it accepts and the selective leaderboard on only the battles whose prompt has "
    "all the chosen values (an AND), calibrated on the slice's human-voted battles alone; a slice with too few "
    "says so instead of a threshold."
)
NO_VOTES = (
    "no human votes: SCOPE calibrates its threshold on battles where the human verdict is known, and "
    "its risk is the share of accepted judgments that disagree with humans."
)
NO_PROBABILITY = "this judge's battles give no probability of a win to threshold."
QUALITY_CAPTION = (
    "Quality of the judge's confidence against human votes: accuracy, calibration error (ECE), and how "
    "well confidence separates right from wrong (AUROC, AUPRC). Averaging both orders (BPE) should beat "
    "the forward order alone for a position-biased judge."
)
EXAMPLES_CAPTION = (
    "P(a wins): the judge's probability that answer a is better, with a shown first, shown second, and "
    "the two averaged; uncertainty: the binary entropy of the averaged probability, in nats."
)


def source_help(name: Callable[[str], str]) -> str:
    """Every source of P(a ≻ b) and what it is, ``name`` naming a source in words."""
    return "; ".join(f"{name(s.name)}: {s.description}" for s in SCOPE_SOURCES.values())


def one_order_notice(source_name: str) -> str:
    return (
        "this judge was not run in both presentation orders (or gave no probabilities in both), so BPE — "
        f"averaging the two orders — is not available; below, the single-order baseline ({source_name})."
    )


def leaderboard_caption(at: ScopeAtAlpha) -> str:
    """What the selective leaderboard's three columns are, and the battles each used."""
    return (
        "Bradley–Terry Elo on all hard judge labels, on the accepted judgments only, and on the accepted "
        "ones plus the abstained battles handed to their human vote. Battles used: "
        + ", ".join(f"{k}: {n:,}" for k, n in at.counts.items())
        + ". A blank cell: the model won or lost every battle left in that leaderboard, so it has no "
        "Elo there (the caveat says where)."
    )


def risk_claims(table: pd.DataFrame, n_splits: int, rule_name: Callable[[str], str]) -> list[tuple[str, str]]:
    """(level, sentence) under the risk chart, for exactly the α drawn in ``table`` (the curves' rows):
    where a rule's mean test risk went over α (a warning) or that none did, and LTT's share of splits over α.
    ``rule_name`` names a rule in words."""
    out: list[tuple[str, str]] = []
    over = table[(table["risk_mean"] > table["alpha"] + 1e-12)].sort_values(["method", "alpha"])
    if len(over):
        by_method = over.groupby("method", sort=False)["alpha"].apply(lambda a: ", ".join(f"{x:.2f}" for x in a))
        out.append(
            (
                "warning",
                "Mean test risk above α — "
                + "; ".join(f"**{rule_name(str(m))}** at α = {a}" for m, a in by_method.items())
                + ". The SCOPE rule does not guarantee the bound in general (METHODS §6); LTT does with "
                "probability 1 − δ (δ = 0.1) per calibration set.",
            )
        )
    else:
        out.append(("caption", "No method's mean test risk exceeds α at any α shown."))
    ltt = table[table["method"] == "ltt"].sort_values("alpha")
    if len(ltt):
        out.append(
            (
                "caption",
                f"Share of all {n_splits} splits whose test risk exceeds α, for LTT (a split that accepts "
                "nothing has no error among what it accepts, so it is not over α): "
                + "; ".join(f"α = {a:.2f}: {x:.2f}" for a, x in zip(ltt["alpha"], ltt["share_over_alpha"]))
                + ". LTT promises at most δ = 0.1 per calibration set.",
            )
        )
    return out


EXAMPLE_COLUMNS = ("model_a", "model_b", "p_fwd", "p_rev", "p_bar", "uncertainty", "human_a", "judge_right")


def examples(at: ScopeAtAlpha, n: int = 8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``n`` most confident accepted battles and the ``n`` least confident abstained ones, in that order."""
    ex, cols = at.examples, list(EXAMPLE_COLUMNS)
    return ex[ex["accepted"]].nsmallest(n, "uncertainty")[cols], ex[~ex["accepted"]].nlargest(n, "uncertainty")[cols]


# --------------------------------------------------------------- the CLI
Instances = tuple[np.ndarray, np.ndarray, np.ndarray]  # p_fwd, p_rev, human prefers a


def instances_from_store(store: Store, dataset: str, judge: str, source: str | None) -> Instances:
    """(forward P, reverse P, human prefers a) of a judge's human-decisive battles; default source logprob/rubric."""
    bf = store.battle_frame(dataset, judge)
    has_lp = bf["p_ab"].notna().any() and bf["p_ba"].notna().any()
    source = source or ("logprob" if has_lp else "rubric")
    inst = selective.instances_from_battles(bf, source)
    if inst.reason:
        raise ValueError(f"judge {judge!r} on {dataset!r}, source {source!r}: {inst.reason}")
    f = inst.frame
    return f["p_fwd"].to_numpy(float), f["p_rev"].to_numpy(float), f["human_a"].to_numpy(bool)


def scope_report(
    instances: Instances, alphas: Sequence[float], n_splits: int = 1000, delta: float = 0.1, seed: int = 0
) -> dict:
    """Every rule's risk and coverage over random splits at each α, and the quality of the confidence."""
    p_fwd, p_rev, human_a = instances
    if len(p_fwd) < 4:
        raise ValueError(f"only {len(p_fwd)} instances with a decisive human vote: at least 4 are needed to split")
    u = selective.bpe(p_fwd, p_rev, human_a)
    single = selective.single_order(p_fwd, human_a)
    curves = selective.evaluate(u, alphas, n_splits=n_splits, delta=delta, seed=seed)
    quality_keys = ("accuracy", "ece", "auroc", "auprc")
    return {
        "alphas": list(alphas),
        "n_instances": int(len(u)),
        "methods": curves.method_lists(selective.METHODS),
        "uncertainty": {
            name: {k: getattr(selective.quality(x), k) for k in quality_keys}
            for name, x in (("bpe", u), ("single_order", single))
        },
    }
