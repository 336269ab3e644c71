"""The style-controlled leaderboard: human votes or one judge's hard labels, with and without style control.

Style features come from the battle's two answers (``Store.battle_frame``:
lengths, headers, bold, list items); without answer texts there are none and
the result is :class:`~core.app.Unavailable`, never a number made up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.app import Unavailable
from core.app.leaderboard import too_few
from core.domain import MIN_SLICE_BATTLES, Slice
from core.stats.bias import style_features
from core.stats.style import StyleControlled, style_controlled_ratings
from core.store import Store

CONFORMAL_NOTE = (
    "the conformal intervals are computed without style control; under the toggle only the sandwich CIs are shown"
)

STYLE_COLUMNS = ("len_a", "len_b", "headers_a", "headers_b", "bold_a", "bold_b", "lists_a", "lists_b")


@dataclass(frozen=True)
class StyleControlledLeaderboard:
    """``ratings`` of ``target`` ('human' votes or 'hard' labels of ``judge``) with and without style control."""

    dataset: str
    judge: str | None
    target: str
    ratings: StyleControlled
    n_battles: int  # battles fitted (with an outcome and style features)
    n_votes: int | None  # human votes fitted (None for a judge's labels)
    note: str = CONFORMAL_NOTE

    @property
    def frame(self) -> pd.DataFrame:
        return self.ratings.frame

    @property
    def coefficients(self) -> pd.DataFrame:
        return self.ratings.coefficients

    @property
    def issues(self) -> tuple[str, ...]:
        return self.ratings.issues

    def to_json(self) -> dict:
        return {
            "dataset": self.dataset,
            "judge": self.judge,
            "target": self.target,
            "style_control": True,
            "ci": "sandwich",
            "n_battles": self.n_battles,
            "n_votes": self.n_votes,
            "note": self.note,
            **{k: v for k, v in self.ratings.to_json().items() if k not in ("n_rows", "n_clusters")},
        }


def style_controlled_leaderboard(
    store: Store, dataset: str, judge: str | None = None, where: Slice = ()
) -> StyleControlledLeaderboard | Unavailable:
    """Bradley–Terry with style covariates on the human votes (``judge`` None) or on the judge's hard labels.

    Human votes: one row per vote, the votes on one battle a cluster (the
    sandwich is cluster-robust by battle, as on the plain human leaderboard).
    ``where``: on the battles of that slice (too few of them: Unavailable, as every sliced leaderboard).
    """
    bf = store.battle_frame(dataset, judge, where=where)
    if judge is None:
        votes = store.votes_frame(dataset, where=where)
        if votes.empty:
            return Unavailable(f"dataset {dataset!r} has no human votes to rate under style control")
        rows = votes[["battle_id", "y"]].merge(
            bf[["battle_id", "model_a", "model_b", *STYLE_COLUMNS]], on="battle_id", how="inner", validate="m:1"
        )
        target, what = "human", "human votes"
    else:
        rows = bf[["battle_id", "model_a", "model_b", *STYLE_COLUMNS]].assign(y=bf["judge_hard"].to_numpy(float))
        target, what = "hard", f"labels of judge {judge!r}"
    rows = rows[np.isfinite(rows["y"].to_numpy(float))].reset_index(drop=True)
    if where and rows["battle_id"].nunique() < MIN_SLICE_BATTLES:
        return too_few(where, int(rows["battle_id"].nunique()), what)
    if rows.empty:
        return Unavailable(f"dataset {dataset!r} has no {what} to rate under style control")
    has_text = rows["len_a"].notna() & rows["len_b"].notna()
    if not has_text.any():
        return Unavailable(
            f"no answer texts in {dataset!r} for the battles with {what}: the style features (lengths, headers, "
            "bold, list items) are unknown, so there is no style-controlled leaderboard"
        )
    # Features standardised over the battles fitted (one row per battle, not per vote).
    battles = rows[has_text].drop_duplicates("battle_id").reset_index(drop=True)
    x_b, names, _ = style_features(battles)
    if not names:
        return Unavailable(f"the style features do not vary over the battles with {what}: nothing to control for")
    x_battle = pd.DataFrame(x_b, columns=names).assign(battle_id=battles["battle_id"].to_numpy())
    rows = rows.merge(x_battle, on="battle_id", how="left")
    res = style_controlled_ratings(
        rows["model_a"].to_numpy(),
        rows["model_b"].to_numpy(),
        rows["y"].to_numpy(float),
        rows[names].to_numpy(float),
        names,
        cluster=rows["battle_id"].to_numpy() if judge is None else None,
    )
    return StyleControlledLeaderboard(
        dataset=dataset,
        judge=judge,
        target=target,
        ratings=res,
        n_battles=res.n_clusters if judge is None else res.n_rows,
        n_votes=res.n_rows if judge is None else None,
    )


def _signed_places(change: object) -> str:
    d = int(change) if isinstance(change, (int, np.integer)) else 0
    return f"▲ {d}" if d > 0 else f"▼ {-d}" if d < 0 else "–"


def display_table(res: StyleControlledLeaderboard) -> pd.DataFrame:
    """The style-controlled leaderboard as the page shows it: the controlled Elo with its 95% sandwich interval
    beside the Elo and rank of the same rows without the covariates, and the places each model moves."""
    f = res.frame

    def interval(lo: float, hi: float, note: str) -> str:
        return f"{lo:.0f} – {hi:.0f}" if np.isfinite(lo) and np.isfinite(hi) else (note or "—")

    return pd.DataFrame(
        {
            "Rank": f["rank"].astype(int),
            "Model": f["model"],
            "Elo, style controlled": f["elo"].round(1),
            "95% CI": [interval(lo, hi, n) for lo, hi, n in zip(f["lower"], f["upper"], f["interval_note"])],
            "Elo without": f["elo_raw"].round(1),
            "Rank without": f["rank_raw"].astype(int),  # both ranks with ties; "Moves" counts places by Elo
            "Moves": [_signed_places(c) for c in f["rank_change"].tolist()],
            "Battles": f["n_battles"].astype(int),
        }
    )


def coefficient_table(res: StyleControlledLeaderboard) -> pd.DataFrame:
    """The style coefficients: logit per standard deviation of the a − b difference, with its 95% interval."""
    c = res.coefficients
    return pd.DataFrame(
        {
            "feature": c["feature"],
            "coefficient": c["coef"].round(3),
            "95% CI": [f"{lo:+.3f} – {hi:+.3f}" for lo, hi in zip(c["lower"], c["upper"])],
        }
    )
