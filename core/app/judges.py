"""Judges and annotators: consistency as a proxy for judge strength, am-ELO abilities, online-Elo instability."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import IO

import pandas as pd

from core import charts
from core.app import Unavailable
from core.app import display as show
from core.app.availability import ADD_VOTES
from core.app.data import REPLAY_SAMPLE
from core.app.page_view import Metric, Notice
from core.app.safe_text import escape_markdown as esc
from core.datahome import shared_file
from core.domain import Z95
from core.stats.agreement import EXPERT_PREFIX, AgreementFigure, judge_human_agreement, mt_bench_agreement
from core.stats.amelo import fit_amelo
from core.stats.consistency import ConsistencyStudy, study
from core.stats.ratings import ShuffleStudy, online_elo_shuffles
from core.store import Store

__all__ = [
    "ConsistencyStudy",
    "JudgeElo",
    "ShuffleStudy",
    "annotator_abilities",
    "annotator_table",
    "consistency_from_contests",
    "consistency_study",
    "contests",
    "judge_arena_elo",
    "read_judge_elo",
    "shuffle_study",
    "vote_counts",
]

JudgeElo = tuple[pd.Series, str]  # the judges' own arena Elo, and where it came from


def judge_arena_elo(store: Store, dataset: str) -> JudgeElo | Unavailable:
    """The judges' own arena Elo, where known.

    Looked up in the judges' stored parameters (``arena_elo``), then in the
    shared ``judge_elo.csv`` of the consistency paper when at least three of
    this dataset's judges are named there.
    """
    judges = store.judges_frame(dataset)
    if judges.empty:
        return Unavailable(f"dataset {dataset!r} has no judges")
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
    return Unavailable("the judges' own arena Elo is known for fewer than three of them")


def read_judge_elo(file: str | IO[bytes], name: str) -> JudgeElo:
    """Judge Elo values from a CSV with columns judge, arena_elo (an upload); ValueError naming what is missing."""
    e = pd.read_csv(file)
    if not {"judge", "arena_elo"} <= set(e.columns):
        raise ValueError(f"{name} needs the columns judge and arena_elo (found {', '.join(map(str, e.columns))})")
    return e.set_index("judge")["arena_elo"].astype(float), f"the uploaded {name}"


def consistency_study(store: Store, dataset: str, judge_elo: pd.Series | None) -> ConsistencyStudy | Unavailable:
    """Consistency per judge (and against ``judge_elo`` when given)."""
    contests = store.contests_frame(dataset)
    if contests.empty:
        return Unavailable(
            "no judge verdicts in this dataset: consistency counts how often a judge picks the same "
            "winner for the same matchup"
        )
    return study(contests, judge_elo)


def vote_counts(store: Store, dataset: str) -> tuple[int, int]:
    """(human votes, annotators with an id) in the dataset."""
    return store.vote_totals(dataset)


def annotator_abilities(store: Store, dataset: str, min_records: int) -> pd.DataFrame | Unavailable:
    """am-ELO abilities per annotator, with the simulated kind and true ability when the store has them."""
    votes = store.votes_frame(dataset)
    if votes.empty or votes["annotator"].isna().all():
        return Unavailable(
            "no human votes with annotator ids: am-ELO estimates each annotator's ability from who voted what"
        )
    try:
        res = fit_amelo(votes, min_records=min_records)
    except ValueError as exc:
        return Unavailable(f"am-ELO cannot be fitted: {exc}")
    truth = store.annotators_frame(dataset)[["annotator", "kind", "true_ability"]]
    return res.annotators.merge(truth, on="annotator", how="left")


def annotator_table(annotators: pd.DataFrame) -> pd.DataFrame:
    """One row per annotator of an am-ELO fit, as downloaded: votes, ability with its 95% interval, flags
    (and the simulated kind and true ability when the store has them)."""
    half = Z95 * annotators["ability_se_rel"]
    out = pd.DataFrame(
        {
            "annotator": annotators["annotator"],
            "votes": annotators["n_records"],
            "ability": annotators["ability_rel"],
            "ability_lower95": annotators["ability_rel"] - half,
            "ability_upper95": annotators["ability_rel"] + half,
            "status": annotators["status"],
            "anomalous_paper_rule": annotators["anomalous"],
        }
    )
    if "kind" in annotators and annotators["kind"].notna().any():
        out["simulated_kind"] = annotators["kind"]
        out["simulated_true_ability"] = annotators["true_ability"]
    return out.sort_values(["ability", "annotator"], ignore_index=True)


def annotator_truth_caption(annotators: pd.DataFrame) -> str | None:
    """How the flags compare with the simulator's truth, when the store has it (None otherwise)."""
    if "kind" not in annotators or annotators["kind"].isna().all():
        return None
    parts = []
    for kind, status in (("flipper", "adversarial"), ("random", "uninformative")):
        group = annotators[annotators["kind"] == kind]
        if len(group):
            parts.append(f"{int((group['status'] == status).sum())} of {len(group)} simulated {kind}s flagged {status}")
    honest = annotators[annotators["kind"] == "honest"]
    if len(honest):
        parts.append(f"{int((honest['status'] != 'reliable').sum())} of {len(honest)} honest annotators flagged")
    return "Simulated truth: " + "; ".join(parts) + "."


def shuffle_study(store: Store, dataset: str, n_shuffles: int, seed: int = 0) -> ShuffleStudy | Unavailable:
    """Online Elo replayed in ``n_shuffles`` random orders of the human votes, beside m-ELO."""
    population = vote_counts(store, dataset)[0]
    if population == 0:
        return Unavailable("no human votes to replay")
    sampled = population > REPLAY_SAMPLE
    votes = store.votes_frame(dataset, sample=REPLAY_SAMPLE if sampled else None, seed=seed)
    study = online_elo_shuffles(votes, n_shuffles=n_shuffles, seed=seed)
    return replace(study, n_population=population) if sampled else study


def consistency_from_contests(
    contests: pd.DataFrame,
    judge_elo: pd.Series | None,
    contestant_elo: pd.Series | None = None,
    top_matchups: int | None = None,
) -> ConsistencyStudy:
    """The consistency study of a contests frame (judge, first, second, question_id, winner)."""
    if contests.empty:
        raise ValueError("no contests with a verdict to score")
    if top_matchups is not None and contestant_elo is None:
        raise ValueError("--top-matchups needs --contestant-elo (the contested models' Elo)")
    return study(contests, judge_elo, contestant_elo, top_matchups)


def contests(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's judge verdicts as contests in presentation order (judge_contests.csv layout)."""
    return store.contests_frame(dataset)


AGREEMENT_SETUPS = ("votes", "mt-bench")


def human_agreement(
    store: Store, dataset: str, judge: str, setup: str = "votes"
) -> dict[str, AgreementFigure] | Unavailable:
    """The judge's agreement with the human votes.

    ``setup='votes'``: every vote (all annotators, all turns pooled) under the MT-Bench paper's two definitions,
    and battle by battle.  ``setup='mt-bench'``: the paper's own procedure (FastChat's compute_agreement: experts
    only, per turn, inconsistent ties as ties), :func:`core.stats.agreement.mt_bench_agreement`.
    """
    if setup not in AGREEMENT_SETUPS:
        raise ValueError(f"unknown agreement setup {setup!r}; expected one of {', '.join(AGREEMENT_SETUPS)}")
    votes = store.votes_frame(dataset)
    if votes.empty:
        return Unavailable(f"dataset {dataset!r} has no human votes to compare judge {judge!r} with")
    bf = store.battle_frame(dataset, judge)
    judged = bf[bf["judge_hard"].notna()]
    if judged.empty:
        return Unavailable(f"judge {judge!r} labelled no battle of {dataset!r}")
    if setup == "votes":
        return judge_human_agreement(votes["winner"], votes["battle_id"], judged["judge_hard"], judged["battle_id"])
    turn = votes["battle_id"].map(dict(zip(bf["battle_id"], bf["turn"])))
    experts = votes["annotator"].astype(str).str.startswith(EXPERT_PREFIX)
    if not experts.any():
        return Unavailable(
            f"dataset {dataset!r} has no expert votes (annotators named {EXPERT_PREFIX}_*): the MT-Bench setup "
            "compares the judge with the experts only"
        )
    return mt_bench_agreement(
        votes["winner"], votes["battle_id"], votes["annotator"], turn, judged["judge_hard"], judged["battle_id"]
    )


AGREEMENT_LABELS = {
    "with_ties": "with ties (MT-Bench setup S1)",
    "without_ties": "without ties (MT-Bench setup S2)",
    "unanimous_battles": "unanimous battles",
}


def agreement_table(figures: dict[str, AgreementFigure]) -> pd.DataFrame:
    """One row per figure: its name, the agreement ('undefined' when it counts nothing), n and definition."""
    return pd.DataFrame(
        {
            "figure": [AGREEMENT_LABELS.get(k, k.replace("_", " ")) for k in figures],
            "agreement": ["undefined" if f.n == 0 else f"{f.agreement:.1%}" for f in figures.values()],
            "pairs counted": [f.n for f in figures.values()],
            "definition": [f.definition for f in figures.values()],
        }
    )


# ------------------------------------------------------------------ what the Judges & annotators page shows

CONSISTENCY_COLUMNS = ("judge", "consistency", "arena_elo", "predicted_elo", "n_contests", "first_position_win_rate")
FEW_JUDGE_ELO = (
    "The judges' own arena Elo is known for fewer than three of them, so consistency is shown "
    "alone. Upload a CSV (judge, arena_elo) above to correlate the two."
)
AGREEMENT_CAPTION = (
    "The MT-Bench paper's two setups (vote level, with and without ties) beside the battle-level figure "
    "on unanimous human votes; each counts different pairs, so the three differ on the same data."
)


@dataclass(frozen=True)
class ConsistencyView:
    """The consistency section: the scatter against judge Elo when it can be drawn, else the bars (and why)."""

    study: ConsistencyStudy
    with_elo: pd.DataFrame | None  # the judges whose arena Elo is known; None: no scatter, the bars instead
    how_to_read: str  # the scatter's
    few_elo_notice: str | None  # why the bars stand alone (None: nothing to say)
    table: pd.DataFrame  # one row per judge, most consistent first; columns with no value left out


def consistency_view(cs: ConsistencyStudy, elo_source: str | None) -> ConsistencyView:
    """What the page shows of a consistency study whose judge Elo came from ``elo_source``."""
    judges = cs.judges
    with_elo = judges.dropna(subset=["arena_elo"]) if "arena_elo" in judges else judges.iloc[0:0]
    scatter = len(with_elo) >= 3 and pd.notna(cs.pearson_r)
    how_to_read = (
        "each point is a judge; the dashed line is the least-squares fit. If more "
        "consistent judges (same winner for the same matchup) are stronger models, "
        f"consistency is a cheap proxy for Elo. Judge Elo from {esc(elo_source or '')}; "
        f"line MAE {cs.elo_mae:.1f} Elo in-sample, {cs.elo_mae_loo:.1f} leaving each "
        "judge out."
        if scatter
        else ""
    )
    # a column with no value at all (no judge's arena Elo is known) says nothing: left out, not "None"
    columns = [c for c in CONSISTENCY_COLUMNS if c in judges and judges[c].notna().any()]
    return ConsistencyView(
        study=cs,
        with_elo=with_elo if scatter else None,
        how_to_read=how_to_read,
        few_elo_notice=FEW_JUDGE_ELO if len(with_elo) < 3 else None,
        table=judges[columns].sort_values("consistency", ascending=False),
    )


def agreement_heading(judge: str) -> str:
    return f"Agreement of {esc(judge)} with the human votes"


def amelo_missing(total_votes: int, n_annotators: int) -> Notice | None:
    """Why am-ELO has nothing to fit (None: it has votes with annotator ids)."""
    if total_votes and n_annotators:
        return None
    return Notice(
        "no human votes with annotator ids: am-ELO estimates each annotator's ability from who voted what.",
        fix=f"votes that name their annotator: {ADD_VOTES} (each voter is named there)",
    )


def replay_missing(total_votes: int) -> Notice | None:
    """Why online Elo has nothing to replay (None: there are votes)."""
    return None if total_votes else Notice("no human votes to replay.", fix=ADD_VOTES)


@dataclass(frozen=True)
class AmeloView:
    """The am-ELO section: the fit (for the chart), the annotators kept in it, the counts and captions."""

    annotators: pd.DataFrame  # every annotator, those left out for too few votes included
    kept: pd.DataFrame
    how_to_read: str
    metrics: tuple[Metric, ...]  # adversarial, uninformative, anomalous by the paper's rule
    truth: str | None  # how the flags compare with the simulator's truth

    def csv(self) -> str:
        """The kept annotators as downloaded (:func:`annotator_table`)."""
        return annotator_table(self.kept).to_csv(index=False)


def amelo_view(annotators: pd.DataFrame, min_records: int) -> AmeloView:
    """What the page shows of an :func:`annotator_abilities` fit with δ = ``min_records``."""
    kept = annotators[~annotators["excluded"]]
    n_reliable = int((kept["status"] == "reliable").sum())
    drawn = (
        f"the {n_reliable:,} reliable annotators are drawn as a density (the darker a cell, the more "
        "of them voted about that often with about that ability; as points they would only cover each "
        "other, and the CSV below lists each with its interval); each flagged annotator is a point "
        "with its 95% interval"
        if n_reliable > charts.WEBGL_ABOVE
        else "each point is an annotator with its 95% interval"
    )
    return AmeloView(
        annotators=annotators,
        kept=kept,
        how_to_read=drawn + "; ability says how strongly their votes "
        "follow the consensus ranking (1 = average). Entirely below zero: they vote against it "
        "(adversarial, orange ×); straddling zero: their votes carry no information about the "
        "ranking (uninformative, grey ◆); the paper's rule flags ability ≤ 0.",
        metrics=(
            Metric("adversarial", int((kept["status"] == "adversarial").sum()), "ability significantly below zero"),
            Metric(
                "uninformative",
                int((kept["status"] == "uninformative").sum()),
                "ability indistinguishable from zero given the annotator's votes",
            ),
            Metric(
                "anomalous (paper's rule, ability ≤ 0)",
                f"{int(kept['anomalous'].sum())} of {len(kept)}",
                f"{int(annotators['excluded'].sum())} annotators with fewer than {min_records} votes left out",
            ),
        ),
        truth=annotator_truth_caption(kept),
    )


def shuffle_how_to_read(study: ShuffleStudy, n_shuffles: int) -> str:
    """How to read the online-Elo instability chart of ``n_shuffles`` replays."""
    return (
        f"online Elo (K = 4) replayed in {n_shuffles} random orders of the same votes moves each model "
        f"by {study.online_spread:.1f} Elo on average (sd; bars span min–max); the "
        f"maximum-likelihood fit (m-ELO) {show.movement(study.mle_spread)}."
    )
