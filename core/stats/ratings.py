"""Online Elo (the sequential baseline) and its dependence on battle order.

``R_a += K·(S_a − E_a)`` with ``E_a = 1/(1 + 10^((R_b − R_a)/400))``, K = 4,
initial rating 1000 (METHODS.md §1).  The result depends on the order in
which battles are replayed; the shuffle study replays them in many random
orders (all at once, one vector per step) and reports each model's spread,
next to the order-free maximum-likelihood fit (m-ELO, ``core.stats.bt``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.domain import ELO_BASE, Ratings, ranked, with_vote_counts

K_FACTOR = 4.0
INIT = 1000.0
SCALE = 400.0
BASE = 10.0


def _battle_arrays(battles: pd.DataFrame) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    y_col = "y" if "y" in battles else "human_y"
    b = battles[battles[y_col].notna()]
    models = tuple(sorted(set(b["model_a"]) | set(b["model_b"])))
    idx = {m: k for k, m in enumerate(models)}
    return models, b["model_a"].map(idx).to_numpy(), b["model_b"].map(idx).to_numpy(), b[y_col].to_numpy(float)


def online_elo(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    n_models: int,
    orders: np.ndarray | None = None,
    k: float = K_FACTOR,
    init: float = INIT,
) -> np.ndarray:
    """Ratings after replaying battles in each given order: (n_orders, n_models).

    ``orders`` is (n_orders, n_battles) of battle indices; None = the given order.
    """
    if orders is None:
        orders = np.arange(len(y))[None, :]
    n_orders = orders.shape[0]
    ratings = np.full((n_orders, n_models), init)
    rows = np.arange(n_orders)
    for t in range(orders.shape[1]):
        idx = orders[:, t]
        ia, ib = a[idx], b[idx]
        ra, rb = ratings[rows, ia], ratings[rows, ib]
        expected = 1.0 / (1.0 + BASE ** ((rb - ra) / SCALE))
        delta = k * (y[idx] - expected)
        ratings[rows, ia] = ra + delta
        ratings[rows, ib] = rb - delta
    return ratings


@dataclass(frozen=True)
class ShuffleStudy:
    frame: pd.DataFrame  # model, mean, sd, min, max, q025, q975, rank_min, rank_max, m_elo, m_elo_sd
    n_shuffles: int
    online_spread: float  # mean over models of the sd across shuffles
    mle_spread: float  # the same for m-ELO (zero up to solver tolerance)
    samples: np.ndarray  # (n_shuffles, n_models)
    n_battles: int = 0  # battles replayed
    n_population: int | None = None  # battles they were sampled from (None: not a sample)

    def statement(self) -> str | None:
        """What the page says when the replays rest on a sample (None: on every battle)."""
        return sample_statement(self.n_battles, self.n_population, "human votes")


def online_elo_shuffles(
    battles: pd.DataFrame, n_shuffles: int = 100, seed: int = 0, mle_shuffles: int = 5
) -> ShuffleStudy:
    """Online Elo over random battle orders, beside m-ELO refitted on shuffled copies.

    ``battles`` has model_a, model_b and y (or human_y).  Both are centred at
    1500 so they can share an axis.
    """
    from core.stats import bt

    models, a, b, y = _battle_arrays(battles)
    rng = np.random.default_rng(seed)
    orders = np.argsort(rng.random((n_shuffles, len(y))), axis=1)
    samples = online_elo(a, b, y, len(models), orders)
    samples = samples - samples.mean(axis=1, keepdims=True) + ELO_BASE
    names = np.array(models, dtype=object)
    mle = []
    for s in range(max(mle_shuffles, 1)):
        perm = orders[s % n_shuffles]
        fit = bt.fit_bt(
            bt.comparisons_from_battles(names[a[perm]], names[b[perm]], y[perm], models=models, aggregate=False),
            lam=1e-6,
        )
        mle.append(fit.elo)
    mle_elo = np.array(mle)
    ranks = (-samples).argsort(axis=1).argsort(axis=1) + 1
    frame = pd.DataFrame(
        {
            "model": models,
            "mean": samples.mean(axis=0),
            "sd": samples.std(axis=0, ddof=1),
            "min": samples.min(axis=0),
            "max": samples.max(axis=0),
            "q025": np.quantile(samples, 0.025, axis=0),
            "q975": np.quantile(samples, 0.975, axis=0),
            "rank_min": ranks.min(axis=0),
            "rank_max": ranks.max(axis=0),
            "m_elo": mle_elo[0],
            "m_elo_sd": mle_elo.std(axis=0, ddof=1) if len(mle_elo) > 1 else np.zeros(len(models)),
        }
    )
    return ShuffleStudy(
        frame.sort_values("mean", ascending=False).reset_index(drop=True),
        n_shuffles,
        float(frame["sd"].mean()),
        float(frame["m_elo_sd"].mean()),
        samples,
        len(y),
    )


def sample_statement(n: int, population: int | None, what: str) -> str | None:
    """The sentence under a chart computed on a seeded sample of ``population`` (None when it is not one)."""
    if population is None or n >= population:
        return None
    return (
        f"Replayed on a seeded uniform sample of {n:,} of the {population:,} {what}: replays run battle by "
        "battle, so at this size they read a sample, as the other methods beside them do."
    )


def ratings_from_votes(
    votes: pd.DataFrame, *, ci: str | None = "shuffles", n_boot: int = 100, seed: int = 0, progress: object = None
) -> Ratings:
    """Online Elo as a leaderboard: the mean over ``n_boot`` shuffled orders, with no confidence interval.

    The spread across orders (``order_lower``/``order_upper``: the 2.5% and 97.5% quantiles, ``order_sd``) says
    how much the replay order alone moves a rating; it is not sampling uncertainty, so it is never put in the
    interval columns.  A model whose record is all ties, all wins or all losses is named in ``issues``.
    """
    study = online_elo_shuffles(votes, n_shuffles=max(n_boot, 2) if ci else 100, seed=seed)
    f = study.frame.rename(columns={"mean": "elo", "sd": "order_sd", "q025": "order_lower", "q975": "order_upper"})
    f["se"] = f["lower"] = f["upper"] = np.nan
    f = with_vote_counts(f, votes)
    return Ratings(
        method="online-elo",
        frame=ranked(f),
        n_battles=int(votes["battle_id"].nunique()) if "battle_id" in votes else len(votes),
        n_votes=len(votes),
        ci=None,
        issues=(
            f"Online Elo has no confidence interval: order_lower–order_upper is the spread of each rating over "
            f"{study.n_shuffles} random replay orders of the same votes, not sampling uncertainty.",
            *degenerate_records(votes),
        ),
        extra={"n_shuffles": study.n_shuffles},
    )


def degenerate_records(votes: pd.DataFrame) -> list[str]:
    """Models whose votes are all ties, all wins or all losses: an Elo says nothing reliable about them."""
    y = votes["y"].to_numpy(float)
    score = pd.concat(
        [pd.DataFrame({"model": votes["model_a"], "y": y}), pd.DataFrame({"model": votes["model_b"], "y": 1 - y})]
    ).dropna()
    kinds = score.groupby("model")["y"].agg(["min", "max", "size"])
    out = []
    for label, rows in (
        ("only ties", kinds[(kinds["min"] == 0.5) & (kinds["max"] == 0.5)]),
        ("won every vote", kinds[kinds["min"] == 1.0]),
        ("lost every vote", kinds[kinds["max"] == 0.0]),
    ):
        if len(rows):
            names = ", ".join(f"{m} ({int(n)})" for m, n in rows["size"].items())
            out.append(f"{label}: {names}; their online Elo reflects the step size and the order, not a strength")
    return out
