"""What the store holds and, for one dataset, its models, judges, languages and comparison-graph coverage."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

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
