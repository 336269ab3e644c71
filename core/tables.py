"""The in-memory shape of one dataset on its way into the store.

Importers and the demo simulator both produce a :class:`DatasetTables`; the
store writes it in one transaction.  Keys here are *local* to the dataset
(``prompt_key``, ``battle_key``): the store assigns global ids.

Conventions shared by every table:

* sides are always the battle's ``a`` / ``b``; a judgment made with the
  answers shown in the order (b, a) has ``order = 'ba'`` but its verdict,
  scores and ``p_a`` are mapped back to battle terms;
* verdicts and human winners are ``'a'``, ``'b'``, ``'tie'`` or ``'both_bad'``
  (human only);
* missing values are ``NaN`` / ``None`` / ``pd.NA``, never a sentinel number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

CRITERIA: tuple[str, ...] = (
    "adherence", "helpfulness", "factuality", "completeness", "clarity", "fluency",
)
SCORE_COLUMNS: tuple[str, ...] = tuple(
    f"{side}_{c}" for side in ("a", "b") for c in CRITERIA
)
ORDERS = ("ab", "ba", "avg")
HUMAN_WINNERS = ("a", "b", "tie", "both_bad")
VERDICTS = ("a", "b", "tie")

# Required and optional columns of each table.  Optional columns may be absent.
SPEC: dict[str, dict[str, tuple[str, ...]]] = {
    "models": {
        "required": ("model",),
        "optional": ("family", "true_elo", "notes"),
    },
    "prompts": {
        "required": ("prompt_key",),
        "optional": ("external_id", "text", "language", "category", "reference", "verifiable"),
    },
    "completions": {
        "required": ("prompt_key", "model"),
        "optional": ("text", "length", "n_headers", "n_bold", "n_list_items", "correct", "echo",
                     "direct_label"),
    },
    "battles": {
        "required": ("battle_key", "model_a", "model_b"),
        "optional": ("prompt_key", "external_id", "language", "turn", "tstamp"),
    },
    "votes": {
        "required": ("battle_key", "winner"),
        "optional": ("annotator",),
    },
    "annotators": {
        "required": ("annotator",),
        "optional": ("kind", "true_ability"),
    },
    "judges": {
        "required": ("judge",),
        "optional": ("family", "model", "base_url", "template", "prompt_version", "profile",
                     "params_json"),
    },
    "judgments": {
        "required": ("battle_key", "judge", "order"),
        "optional": ("prompt_version", "verdict", *SCORE_COLUMNS, "p_a", "confidence",
                     "raw_output", "parse_error", "latency_ms", "prompt_tokens",
                     "completion_tokens", "variant"),
    },
}


@dataclass
class DatasetTables:
    """One dataset's rows, ready for :meth:`core.store.Store.write_dataset`.

    ``meta`` holds free-form facts about the dataset (source, seed, ground
    truth parameters) stored as JSON.
    """

    name: str
    source: str
    models: pd.DataFrame
    battles: pd.DataFrame
    prompts: pd.DataFrame | None = None
    completions: pd.DataFrame | None = None
    votes: pd.DataFrame | None = None
    annotators: pd.DataFrame | None = None
    judges: pd.DataFrame | None = None
    judgments: pd.DataFrame | None = None
    meta: dict = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {}
        for name in SPEC:
            df = getattr(self, name)
            if df is not None:
                out[name] = df
        return out
