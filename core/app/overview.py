"""What the store holds and, for one dataset, its models, judges, languages and comparison-graph coverage."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from core.app.availability import ADD_VOTES, RUN_JUDGE
from core.store import Store


@dataclass(frozen=True)
class Overview:
    datasets: pd.DataFrame  # every dataset in the store with its counts
    info: dict  # the selected dataset's counts (Store.info entry)
    models: pd.DataFrame
    judges: pd.DataFrame
    languages: pd.DataFrame
    pairs: pd.DataFrame  # battles per unordered pair


def overview(store: Store, dataset: str) -> Overview:
    info = store.info()["datasets"]
    table = pd.DataFrame(
        [
            {k: d[k] for k in ("name", "source", "n_models", "n_battles", "n_human_votes", "n_annotators", "n_prompts")}
            | {"n_judges": len(d["judges"])}
            for d in info
        ]
    )
    mine = next(d for d in info if d["name"] == dataset)
    return Overview(
        table,
        mine,
        store.models_frame(dataset),
        store.judges_frame(dataset),
        store.languages_frame(dataset),
        store.pair_coverage(dataset),
    )


def headline(ov: Overview) -> list[tuple[str, str]]:
    """The counts across the top of the page, as (label, shown value)."""
    info = ov.info
    return [
        ("Models", f"{info['n_models']}"),
        ("Battles", f"{info['n_battles']:,}"),
        ("Human votes", f"{info['n_human_votes']:,}"),
        ("Annotators", f"{info['n_annotators']}"),
        ("Prompts", f"{info['n_prompts']}"),
        ("Judges", f"{len(info['judges'])}"),
    ]


def missing(ov: Overview) -> list[tuple[str, str]]:
    """What the dataset lacks for some pages, each with the step that adds it."""
    out = []
    if ov.info["n_human_votes"] == 0:
        out.append(
            (
                "this dataset has no human votes: human Elo, τ calibration and conformal intervals need them. "
                "Judge-only views (Hard-Elo, bias, consistency) still work.",
                ADD_VOTES,
            )
        )
    if not ov.info["judges"]:
        out.append(("no judge has judged this dataset yet.", RUN_JUDGE))
    return out


def models_table(ov: Overview) -> pd.DataFrame:
    """The models, with the simulated truth's column only when the dataset has one (a simulated arena)."""
    return ov.models.drop(columns=["true_elo"]) if ov.models["true_elo"].isna().all() else ov.models


def judges_table(ov: Overview) -> pd.DataFrame:
    """One row per judge: who, its family and template, how much it judged, in which orders, parse failures."""
    j = ov.judges[["judge", "family", "template", "n_judgments", "orders", "n_parse_errors"]].copy()
    j["orders"] = j["orders"].map(lambda o: ", ".join(o))
    return j
