"""Every page result declared once: the function, and the data its persisted key depends on.

A page result is ``fn(store, dataset, ...)``, kept in the store (``core.app.persist``) under its function, its
arguments and a *data stamp*.  The stamp must cover exactly what the function reads — a narrower one serves a
stale result, a wider one recomputes for nothing — so it is declared here, once, as a :data:`Scope`:

* ``"everything"``: every table of the store, every judge (a judge run changes it);
* ``"votes"``: no judgment at all (human votes, models, battles): a judge run leaves it;
* ``"judge"``: the votes plus the judgments of the one judge named in the arguments (at ``judge_at``); another
  judge's run leaves it.  Called without a judge (``None``: a human-vote fit) it is the votes' stamp.

Two kinds share the scopes and the keys.  A *kept* result is persisted in the store (and precomputed, or says
why not).  A *server-only* one (``server_only`` says why: a slider's value derived from kept results, a cheap
catalogue read, an on-demand comparison) is cached in the server process alone, under the same key: its name,
its arguments and its declared scope's stamp.  A result ``from_results`` is ``fn(read, *args)``: computed from
other declared results read through ``read(fn, *args)`` (``core.app.derived``), never from the store itself.

The pages' generic loaders (``app_pages._loaders.load_result`` and ``compute``) take the key from here, the
precompute (``core.app.precompute``) stamps its jobs from here, and ``tests/test_results_registry.py`` checks
that every page cache is one of those loaders, that every job is a declared kept result, and that each key
moves exactly when its scope's data does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core.app import (
    analyses,
    arena_hard,
    availability,
    bias,
    derived,
    diff,
    evaluate,
    judges,
    mtbench,
    newmodel,
    overview,
    selective,
    style,
    winrate,
)
from core.app import data as app_data
from core.app import leaderboard as lb
from core.app.persist import Stamps
from core.methods import method_label

Scope = Literal["everything", "votes", "judge"]


@dataclass(frozen=True)
class Result:
    """One page result: ``fn(store, *args)`` (``fn(read, *args)`` when ``from_results``); its key's data scope;
    where the judge is in ``args``."""

    fn: Callable[..., Any]
    scope: Scope
    what: str  # what the page shows from it, for progress lines and listings
    judge_at: int = 1  # index in ``args`` (dataset first) of the judge, for the "judge" scope
    on_demand: str = ""  # why the precompute leaves it to the first page that asks ('': it is precomputed)
    server_only: str = ""  # why it is cached in the server alone, never in the store ('': it is kept)
    from_results: bool = False  # computed from other declared results (``core.app.derived``), not the store

    @property
    def kept(self) -> bool:
        """Whether it is persisted in the store (else cached in the server process only)."""
        return not self.server_only

    @property
    def name(self) -> str:
        return name_of(self.fn)

    def judge_of(self, args: Sequence[Any]) -> str | None:
        if self.scope != "judge":
            return None
        judge = args[self.judge_at] if len(args) > self.judge_at else None
        return None if judge is None else str(judge)

    def stamp(self, stamps: Stamps, args: Sequence[Any]) -> str:
        """The data stamp of ``fn(store, *args)``'s key."""
        return self.stamp_for(stamps, str(args[0]) if args else "", self.judge_of(args))

    def stamp_for(self, stamps: Stamps, dataset: str, judge: str | None) -> str:
        """The data stamp of this result on ``dataset`` for ``judge`` (ignored unless the scope is "judge")."""
        if self.scope == "everything":
            return stamps.everything()
        if self.scope == "votes" or judge is None:
            return stamps.votes()
        return stamps.judge(dataset, judge)


def name_of(fn: Callable[..., Any]) -> str:
    """A result's name: its function's module and qualified name (the persisted key's ``kind``)."""
    return f"{fn.__module__}.{fn.__qualname__}"


# Why a result is cached in the server alone (``Result.server_only``).
CATALOGUE = "a catalogue read: one query, cheaper to repeat than to persist"
SLIDER = "a slider's value: milliseconds from kept results, one per position"
CHOSEN = "the visitor's choice among too many to precompute, and never worth a write"
UPLOAD = "an uploaded file's comparison: the file is the visitor's, not the store's"
AS_BEFORE = "never persisted so far; keeping it would need a precompute job too (a change of its own)"

RESULTS: dict[str, Result] = {
    r.name: r
    for r in (
        # the sidebar and the Overview
        Result(availability.dataset_facts, "everything", "what the sidebar says"),
        Result(overview.overview, "everything", "overview"),
        Result(lb.default_judge, "everything", "the default judge"),
        # the Leaderboard
        Result(lb.human_ratings, "votes", method_label("human")),
        Result(lb.judge_coverage, "judge", "what the judge's battles carry"),
        Result(lb.judge_elo_of, "judge", "the judge's Elo"),
        Result(lb.heldout_of, "judge", "leave-one-model-out table"),
        Result(lb.ratings_by_turn, "judge", "Elo by turn", judge_at=2),
        Result(lb.pair_model, "judge", "head-to-head fit", judge_at=2),
        Result(lb.slice_values, "votes", "the slices battles carry"),
        # Calibration, Residuals, Selective judging: the judge's battles
        Result(app_data.tau_fit_of, "judge", "τ fit"),
        Result(app_data.sample_frame, "judge", "battle sample"),
        Result(selective.scope_curves_of, "judge", "SCOPE curves"),
        Result(selective.scope_at_alpha_of, "judge", "SCOPE at the first visit's α"),
        # Judge bias: against every judge's Elo and self-preference
        Result(bias.bias_report, "everything", "bias"),
        Result(bias.judges_hard_elo, "everything", "judges' Elo on hard labels"),
        Result(bias.judges_self_preference, "everything", "self-preference"),
        # Judges & annotators
        Result(judges.human_agreement, "judge", "agreement with the human votes"),
        Result(judges.judge_arena_elo, "everything", "judges' arena Elo"),
        Result(judges.consistency_study, "everything", "judge consistency"),
        Result(judges.vote_counts, "votes", "vote counts"),
        Result(judges.annotator_abilities, "votes", "am-ELO"),
        Result(judges.shuffle_study, "votes", "online-Elo shuffles"),
        # Analyses
        Result(analyses.alignment, "judge", "accuracy alignment"),
        Result(analyses.aggregation, "judge", "aggregation"),
        Result(analyses.budget, "judge", "budget curves", on_demand="the budgets are the visitor's choice"),
        Result(analyses.languages, "judge", "languages"),
        # ---- server-only: cached in the server process alone, under the same keys
        # catalogues the sidebar and the forms list (one query each)
        Result(app_data.dataset_names, "votes", "the datasets", server_only=CATALOGUE),
        Result(app_data.judge_names, "everything", "the dataset's judges", server_only=CATALOGUE),
        Result(app_data.models_frame, "votes", "the dataset's models", server_only=CATALOGUE),
        # a slider's value, derived in milliseconds from kept results
        Result(derived.leaderboard_view, "judge", "the leaderboard at (τ, α)", server_only=SLIDER, from_results=True),
        Result(derived.agreement, "judge", "agreement with the gap", server_only=SLIDER, from_results=True),
        Result(derived.tau_profile, "judge", "τ profile", server_only=SLIDER, from_results=True),
        Result(derived.reliability, "judge", "reliability curves", server_only=SLIDER, from_results=True),
        Result(derived.label_reliability, "judge", "label reliability", server_only=SLIDER, from_results=True),
        Result(derived.residual_view, "judge", "residuals at α", server_only=SLIDER, from_results=True),
        Result(derived.scope_at_alpha, "judge", "SCOPE at α", server_only=SLIDER, from_results=True),
        # the visitor's choices (a slice, a method, a model, α, another snapshot), computed when asked
        Result(lb.view_parts, "judge", "the leaderboard on a slice", server_only=CHOSEN),
        Result(lb.method_ratings, "judge", "another method's ratings", judge_at=2, server_only=CHOSEN),
        Result(style.style_controlled_leaderboard, "judge", "style control", server_only=CHOSEN),
        Result(selective.scope_at_alpha_on, "judge", "SCOPE at α on a slice", server_only=CHOSEN),
        Result(winrate.baseline_view, "judge", "win rates against the baseline", server_only=AS_BEFORE),
        Result(arena_hard.baseline_scores, "judge", "Arena-Hard score", server_only=AS_BEFORE),
        Result(mtbench.mtbench_view, "everything", "MT-Bench score", server_only=AS_BEFORE),
        Result(diff.comparison_or_why, "everything", "comparison of two datasets", server_only=CHOSEN),
        Result(diff.upload_comparison_or_why, "everything", "comparison with a bundle", server_only=UPLOAD),
        # Evaluate a model: saved evaluations and what they look like against the data now
        Result(evaluate.saved_evaluations, "everything", "saved evaluations", server_only=CATALOGUE),
        Result(evaluate.saved_evaluation, "everything", "one saved evaluation", server_only=CATALOGUE),
        Result(evaluate.model_escalations, "everything", "escalations", server_only=CHOSEN),
        Result(newmodel.standing, "everything", "a new model's standing now", server_only=CHOSEN),
    )
}


class UndeclaredResult(KeyError):
    """A persisted read or a precompute job of a function this registry does not declare."""


def of(fn: Callable[..., Any]) -> Result:
    """The declared result of ``fn``; :class:`UndeclaredResult` for an undeclared one (a page that persists a
    result must declare its scope here)."""
    try:
        return RESULTS[name_of(fn)]
    except KeyError:
        raise UndeclaredResult(
            f"{name_of(fn)} is not a declared page result: add it to core.app.results.RESULTS with its scope"
        ) from None


def by_name(name: str) -> Result:
    try:
        return RESULTS[name]
    except KeyError:
        raise UndeclaredResult(f"{name} is not a declared page result") from None


def stamp(fn: Callable[..., Any], stamps: Stamps, args: Sequence[Any]) -> str:
    """The data stamp of ``fn(store, *args)``'s persisted key, from its declared scope."""
    return of(fn).stamp(stamps, args)


def compute(store: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """The declared result ``fn`` computed on ``store`` directly, its inputs too (the CLI's and the tests' read;
    the pages cache each through ``app_pages._loaders``)."""
    if of(fn).from_results:
        return fn(lambda f, *a: compute(store, f, *a), *args)
    return fn(store, *args)
