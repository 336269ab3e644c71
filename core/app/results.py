"""Every page result declared once: the function, and the data its persisted key depends on.

A page result is ``fn(store, dataset, ...)``, kept in the store (``core.app.persist``) under its function, its
arguments and a *data stamp*.  The stamp must cover exactly what the function reads — a narrower one serves a
stale result, a wider one recomputes for nothing — so it is declared here, once, as a :data:`Scope`:

* ``"everything"``: every table of the store, every judge (a judge run changes it);
* ``"votes"``: no judgment at all (human votes, models, battles): a judge run leaves it;
* ``"judge"``: the votes plus the judgments of the one judge named in the arguments (at ``judge_at``); another
  judge's run leaves it.  Called without a judge (``None``: a human-vote fit) it is the votes' stamp.

The pages' generic loader (``app_pages._loaders.load_result``) and ``read_persisted`` take the key from here,
the precompute (``core.app.precompute``) stamps its jobs from here, and ``tests/test_results_registry.py``
checks that every persisted read and every job is a declared result and that each key moves exactly when its
scope's data does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core.app import analyses, availability, bias, judges, overview, selective
from core.app import data as app_data
from core.app import leaderboard as lb
from core.app.persist import Stamps

Scope = Literal["everything", "votes", "judge"]


@dataclass(frozen=True)
class Result:
    """One page result: ``fn(store, *args)``; its key's data scope; where the judge is in ``args``."""

    fn: Callable[..., Any]
    scope: Scope
    what: str  # what the page shows from it, for progress lines and listings
    judge_at: int = 1  # index in ``args`` (dataset first) of the judge, for the "judge" scope
    on_demand: str = ""  # why the precompute leaves it to the first page that asks ('': it is precomputed)

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
        return self.stamp_for(stamps, str(args[0]), self.judge_of(args))

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


RESULTS: dict[str, Result] = {
    r.name: r
    for r in (
        # the sidebar and the Overview
        Result(availability.dataset_facts, "everything", "what the sidebar says"),
        Result(overview.overview, "everything", "overview"),
        Result(lb.default_judge, "everything", "the default judge"),
        # the Leaderboard
        Result(lb.human_ratings, "votes", "human Elo"),
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
