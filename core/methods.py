"""Registries: rating methods, import formats, SCOPE sources and SCOPE rules.

Everything that offers a choice among these (argparse ``choices``, the
Leaderboard's method toggles, chart colours, ``--format``, the SCOPE source
radio) reads it here, so adding one is one entry plus the function it names.

The module is deliberately light (no numpy or pandas): the CLI reads it to
build its parser.  Functions are named as ``"module:function"`` and imported
only when called (:func:`resolve`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def resolve(path: str) -> Callable[..., Any]:
    """The function a registry entry names as ``"package.module:function"``."""
    module, _, name = path.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


# ============================================================ rating methods
# The vocabulary: a *method* is an entry of RATING_METHODS (what a leaderboard ranks by); a *target* is one of the
# store's three pair tables a pairs method fits (human votes, the judge's hard labels, soft targets σ(τ·gap)).
# Its label is the method's one name in sentences, tables, charts and files (method_label, method_heading).
Target = Literal["human", "hard", "soft"]
TARGETS: tuple[Target, ...] = ("human", "hard", "soft")


@dataclass(frozen=True)
class RatingMethod:
    """A way to turn a dataset's battles into a leaderboard.

    ``data`` says what the fit function receives:

    * ``"pairs"``: Bradley–Terry on the pair table of the store ``target``
      (human votes, the judge's hard labels, or soft targets σ(τ·gap));
      ``fit(pairs, battles, *, ci, n_boot, seed, progress) -> core.domain.Ratings``,
      where ``battles`` (per-battle rows) is given only for a soft/human bootstrap;
    * ``"votes"``: the per-vote sequence; ``fit(votes, *, ci, n_boot, seed, progress)``.
    """

    name: str
    label: str
    colour: str
    data: Literal["pairs", "votes"]
    fit: str
    description: str
    target: Target | None = None
    needs_judge: bool = False
    needs_tau: bool = False
    dashboard: bool = False  # drawn on the Leaderboard page (with human/judge columns)


RATING_METHODS: dict[str, RatingMethod] = {
    m.name: m
    for m in (
        RatingMethod(
            "human",
            "human Elo",
            OKABE_ITO[0],
            "pairs",
            "core.stats.bt:ratings_from_pairs",
            "Bradley–Terry on human votes (METHODS §1)",
            target="human",
            dashboard=True,
        ),
        RatingMethod(
            "hard",
            "Hard-Elo",
            OKABE_ITO[3],
            "pairs",
            "core.stats.bt:ratings_from_pairs",
            "Bradley–Terry on the judge's hard labels (METHODS §1–2)",
            target="hard",
            needs_judge=True,
            dashboard=True,
        ),
        RatingMethod(
            "soft",
            "Soft-Elo",
            OKABE_ITO[2],
            "pairs",
            "core.stats.bt:ratings_from_pairs",
            "Bradley–Terry on calibrated soft targets σ(τ·score gap) (METHODS §2)",
            target="soft",
            needs_judge=True,
            needs_tau=True,
            dashboard=True,
        ),
        RatingMethod(
            "online-elo",
            "online Elo",
            OKABE_ITO[1],
            "votes",
            "core.stats.ratings:ratings_from_votes",
            "sequential Elo (K = 4) over human votes, mean and spread over shuffled orders (METHODS §1)",
        ),
        RatingMethod(
            "am-elo",
            "am-ELO",
            OKABE_ITO[4],
            "votes",
            "core.stats.amelo:ratings_from_votes",
            "annotator-aware maximum likelihood over human votes (METHODS §7)",
        ),
    )
}


def method_label(name: str) -> str:
    """The method's name as a sentence says it ("human Elo", "Soft-Elo")."""
    return RATING_METHODS[name].label


def method_heading(name: str) -> str:
    """The method's name as a column or axis heading says it ("Human Elo")."""
    label = method_label(name)
    return label[:1].upper() + label[1:]


TRUTH_COLOUR = "#7f7f7f"  # simulated ground truth, where a chart shows it


# ============================================================= SCOPE
@dataclass(frozen=True)
class ScopeSource:
    """Where a judge's probability P(a ≻ b) comes from (METHODS §6)."""

    name: str
    description: str
    columns: tuple[str, ...]  # battle-frame columns that must hold values for this source
    both_orders: bool  # averages the two presentation orders (BPE)


SCOPE_SOURCES: dict[str, ScopeSource] = {
    s.name: s
    for s in (
        ScopeSource("logprob", "first-token A/B probabilities of both orders", ("p_ab", "p_ba"), True),
        ScopeSource("rubric", "σ(τ·gap) of each order's rubric scores", ("gap_ab", "gap_ba"), True),
        ScopeSource("verbal", "the judge's stated confidence", ("conf_ab",), False),
        ScopeSource("single", "the forward order only (the no-swap baseline)", (), False),
    )
}


@dataclass(frozen=True)
class ScopeRule:
    """A rule that decides which judgments to accept at a target error rate α (METHODS §6)."""

    name: str
    label: str
    threshold: bool  # calibrates a threshold λ̂ on human-labelled instances
    description: str


SCOPE_RULES: dict[str, ScopeRule] = {
    r.name: r
    for r in (
        ScopeRule("scope", "SCOPE", True, "the largest λ with Σ 1[s ≤ λ](E − α) ≤ −1 on the calibration set"),
        ScopeRule(
            "ltt",
            "Learn-then-Test",
            True,
            "binomial tests walking up the thresholds: risk ≤ α with probability ≥ 1 − δ",
        ),
        ScopeRule("naive", "naive", True, "the largest λ whose calibration error among accepted is ≤ α"),
        ScopeRule("heuristic", "heuristic", False, "accept when the confidence max(p̄, 1 − p̄) ≥ 1 − α"),
        ScopeRule("vanilla", "vanilla", False, "accept every judgment"),
    )
}
THRESHOLD_RULES: tuple[str, ...] = tuple(r.name for r in SCOPE_RULES.values() if r.threshold)
