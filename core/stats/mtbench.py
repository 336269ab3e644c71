"""The MT-Bench score: each model's mean single-answer grade, as FastChat's ``show_result.py --mode single``.

Arrays in, a frozen result out; no store.  Per model, over one judge's grades:

* ``turn_1`` / ``turn_2``: the mean grade of the model's answers at that turn;
* ``score``: the mean of every grade the model received (not the mean of the turn means: a model graded on
  fewer second turns weighs them less, exactly as FastChat averages);
* ``n``: the grades used; ``n_dropped``: grades the judge gave no readable value (FastChat's ``-1``), left out
  of every mean.

Every grade row counts, including a second grade of the same answer from a run appended to the judgment file
(FastChat's ``show_result`` reads every row).  Models are ordered by score, highest first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

COLUMNS = ("model", "score", "turn_1", "turn_2", "n", "n_dropped")


@dataclass(frozen=True)
class MTBenchScores:
    """One judge's MT-Bench score table.

    ``table``: one row per model, columns :data:`COLUMNS` (a turn's mean is NaN when the model has no readable
    grade at that turn; ``score`` NaN when it has none at all), highest score first.
    """

    judge: str | None
    table: pd.DataFrame
    n_grades: int  # rows read, dropped ones included
    n_dropped: int
    turns: tuple[int, ...]  # the turns graded

    def rows(self) -> list[dict]:
        """The table as JSON-ready records (NaN → None)."""
        out = []
        for r in self.table.to_dict("records"):
            out.append(
                {
                    k: (None if isinstance(v, float) and not np.isfinite(v) else v.item() if hasattr(v, "item") else v)
                    for k, v in r.items()
                }
            )
        return out


def mtbench_scores(model: np.ndarray, turn: np.ndarray, score: np.ndarray, judge: str | None = None) -> MTBenchScores:
    """The score table from one judge's grades: ``model`` (names), ``turn`` (1, 2, …) and ``score`` (the grade;
    NaN or any negative value, as FastChat's ``-1``, is a grade that could not be read and is dropped)."""
    model = np.asarray(model, dtype=object)
    turn = np.asarray(turn, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    if not (len(model) == len(turn) == len(score)):
        raise ValueError(f"model, turn and score differ in length ({len(model)}, {len(turn)}, {len(score)})")
    dropped = ~np.isfinite(score) | (score < 0)
    frame = pd.DataFrame({"model": model, "turn": turn, "score": np.where(dropped, np.nan, score), "drop": dropped})
    if frame.empty:
        return MTBenchScores(judge, pd.DataFrame(columns=list(COLUMNS)), 0, 0, ())
    by_model = frame.groupby("model", sort=True)
    table = pd.DataFrame(
        {
            "score": by_model["score"].mean(),  # pandas' mean skips NaN: the dropped grades
            "n": by_model["score"].count(),
            "n_dropped": by_model["drop"].sum(),
        }
    )
    per_turn = frame.groupby(["model", "turn"])["score"].mean().unstack("turn")
    for t in (1, 2):
        table[f"turn_{t}"] = per_turn[t] if t in per_turn.columns else np.nan
    table = table.reset_index()[list(COLUMNS)]
    table["n"] = table["n"].astype(np.int64)
    table["n_dropped"] = table["n_dropped"].astype(np.int64)
    table = table.sort_values(["score", "model"], ascending=[False, True], na_position="last").reset_index(drop=True)
    return MTBenchScores(judge, table, len(frame), int(dropped.sum()), tuple(sorted(int(t) for t in set(turn))))
