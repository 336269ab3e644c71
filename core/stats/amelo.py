"""am-ELO: model scores and annotator abilities by joint maximum likelihood (METHODS.md §7).

``P(a ≻ b | annotator k) = σ(θ_k·(R_a − R_b))`` subject to ``Σ_k θ_k = 1``
(fixes scale and sign: the majority of annotators is assumed honest).  The
problem is biconvex, so it is solved by alternating exact maximisations:

* θ fixed: a weighted Bradley–Terry problem in R (each record's logit scaled
  by θ_k), solved by Newton with the exact Hessian on (annotator, pair) cells;
* R fixed: one 1-D logistic regression per annotator on ``x = R_a − R_b``,
  all solved together by vectorised Newton;
* rescale ``θ ← θ/Σθ, R ← R·Σθ`` (the likelihood only sees θ_k·R).

Each step cannot lower the likelihood, so the trace is monotone.  Abilities
are reported relative to their mean (1 = average annotator); ``θ_k ≤ ε`` flags
an anomalous annotator.  Model scores go on the Elo scale after absorbing the
mean ability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from core.domain import Z95, Ratings, ranked, theta_to_elo, with_vote_counts

MIN_RECORDS = 50
EPSILON = 0.0


@dataclass(frozen=True)
class AmEloResult:
    models: pd.DataFrame  # model, elo, rank
    annotators: pd.DataFrame  # annotator, n_records, ability_raw, ability_rel, anomalous, excluded
    converged: bool
    iterations: int
    loglik_trace: tuple[float, ...]
    n_records: int


def _cells(
    votes: pd.DataFrame, annotators: list[str], models: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    aidx = {a: k for k, a in enumerate(annotators)}
    midx = {m: k for k, m in enumerate(models)}
    k = votes["annotator"].map(aidx).to_numpy()
    a = votes["model_a"].map(midx).to_numpy()
    b = votes["model_b"].map(midx).to_numpy()
    y = votes["y"].to_numpy(float)
    flip = a > b
    a, b = np.where(flip, b, a), np.where(flip, a, b)
    y = np.where(flip, 1 - y, y)
    m = len(models)
    key = (k * m + a) * m + b
    uniq, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv).astype(float)
    s = np.bincount(inv, weights=y)
    return uniq // (m * m), (uniq // m) % m, uniq % m, n, s


def _loglik(
    ck: np.ndarray, ca: np.ndarray, cb: np.ndarray, n: np.ndarray, s: np.ndarray, theta: np.ndarray, r: np.ndarray
) -> float:
    z = theta[ck] * (r[ca] - r[cb])
    return float(np.sum(-s * np.logaddexp(0, -z) - (n - s) * np.logaddexp(0, z)))


def _solve_r(
    ck: np.ndarray,
    ca: np.ndarray,
    cb: np.ndarray,
    n: np.ndarray,
    s: np.ndarray,
    theta: np.ndarray,
    r: np.ndarray,
    m: int,
    iters: int = 50,
) -> np.ndarray:
    """Newton in R for fixed θ (gauge: centred)."""
    for _ in range(iters):
        w = theta[ck]
        z = w * (r[ca] - r[cb])
        p = 1 / (1 + np.exp(-z))
        res = w * (s - n * p)
        g = np.bincount(ca, weights=res, minlength=m) - np.bincount(cb, weights=res, minlength=m)
        d = n * w * w * p * (1 - p)
        h = np.zeros((m, m))
        np.add.at(h, (ca, cb), -d)
        np.add.at(h, (cb, ca), -d)
        h[np.diag_indices(m)] = np.bincount(ca, weights=d, minlength=m) + np.bincount(cb, weights=d, minlength=m)
        step = np.linalg.solve(h + np.ones((m, m)) / m, g)
        step = _damped(partial(_along, (ck, ca, cb, n, s), theta, r, np.zeros_like(theta), step), step)
        r = r + step
        r -= r.mean()
        if np.max(np.abs(step)) < 1e-10:
            break
    return r


def _along(
    cells: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    theta: np.ndarray,
    r: np.ndarray,
    d_theta: np.ndarray,
    d_r: np.ndarray,
    t: float,
) -> float:
    """The log-likelihood a step ``t`` along (d_theta, d_r) from (theta, r): what the damping halves against."""
    ck, ca, cb, n, s = cells
    return _loglik(ck, ca, cb, n, s, theta + t * d_theta, r + t * d_r)


def _damped(objective: Callable[[float], float], step: np.ndarray) -> np.ndarray:
    """The Newton step halved until the log-likelihood does not fall (METHODS §10): a monotone ascent.

    Far from the optimum (abilities near 0, a nearly separated pair) the full
    step can overshoot into the flat tail of the likelihood and diverge.
    """
    base = objective(0.0)
    t = 1.0
    for _ in range(40):
        value = objective(t)
        if np.isfinite(value) and value >= base - 1e-12 * abs(base):
            return t * step
        t *= 0.5
    return np.zeros_like(step)


def _solve_theta(
    ck: np.ndarray,
    ca: np.ndarray,
    cb: np.ndarray,
    n: np.ndarray,
    s: np.ndarray,
    theta: np.ndarray,
    r: np.ndarray,
    n_ann: int,
    iters: int = 50,
) -> np.ndarray:
    """Newton in every θ_k at once for fixed R (independent 1-D problems)."""
    x = r[ca] - r[cb]
    for _ in range(iters):
        z = theta[ck] * x
        p = 1 / (1 + np.exp(-z))
        g = np.bincount(ck, weights=x * (s - n * p), minlength=n_ann)
        h = np.bincount(ck, weights=n * x * x * p * (1 - p), minlength=n_ann)
        step = g / np.maximum(h, 1e-12)
        step = _damped(partial(_along, (ck, ca, cb, n, s), theta, r, step, np.zeros_like(r)), step)
        theta = theta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta


def fit_amelo(
    votes: pd.DataFrame,
    min_records: int = MIN_RECORDS,
    epsilon: float = EPSILON,
    tol: float = 1e-9,
    max_iter: int = 200,
) -> AmEloResult:
    """Joint MLE of model scores and annotator abilities from votes.

    ``votes``: model_a, model_b, annotator, y (1 = a wins, 0 = b wins, 0.5 tie).
    Annotators with fewer than ``min_records`` votes are left out of the fit.
    """
    from core.stats import bt

    v = votes[votes["annotator"].notna() & votes["y"].notna()]
    counts = v["annotator"].value_counts()
    kept = sorted(counts[counts >= min_records].index)
    if len(kept) < 2:
        raise ValueError(f"am-ELO needs at least two annotators with ≥ {min_records} votes; found {len(kept)}")
    fitv = v[v["annotator"].isin(kept)]
    models = tuple(sorted(set(fitv["model_a"]) | set(fitv["model_b"])))
    m, n_ann = len(models), len(kept)
    ck, ca, cb, n, s = _cells(fitv, kept, models)
    # start from m-ELO with every annotator equally able
    start = bt.fit_bt(
        bt.comparisons_from_battles(
            fitv["model_a"].to_numpy(), fitv["model_b"].to_numpy(), fitv["y"].to_numpy(float), models=models
        ),
        lam=1e-6,
    )
    theta = np.full(n_ann, 1.0 / n_ann)
    r = start.theta * n_ann
    trace = [_loglik(ck, ca, cb, n, s, theta, r)]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        r = _solve_r(ck, ca, cb, n, s, theta, r, m)
        theta = _solve_theta(ck, ca, cb, n, s, theta, r, n_ann)
        total = theta.sum()
        if total <= 0:
            raise ValueError(
                "the annotators' abilities sum to a non-positive value: the majority does not "
                "agree with any ranking (am-ELO assumes most annotators are honest)"
            )
        theta, r = theta / total, r * total
        trace.append(_loglik(ck, ca, cb, n, s, theta, r))
        if abs(trace[-1] - trace[-2]) <= tol * max(1.0, abs(trace[-1])):
            converged = True
            break
    # Each θ_k is a 1-D logistic regression given R: its Fisher information Σ n·x²·p(1−p) gives the SE
    # that separates "votes against the consensus" from "votes carry no information".
    x = r[ca] - r[cb]
    p_fit = 1 / (1 + np.exp(-theta[ck] * x))
    info = np.bincount(ck, weights=n * x * x * p_fit * (1 - p_fit), minlength=n_ann)
    se = 1 / np.sqrt(np.maximum(info, 1e-300))
    mean_theta = theta.mean()
    strength = r * mean_theta
    elo = theta_to_elo(strength)
    mframe = pd.DataFrame({"model": models, "elo": elo})
    mframe["rank"] = mframe["elo"].rank(ascending=False, method="min").astype(int)
    rel = theta / mean_theta
    ann = pd.DataFrame(
        {
            "annotator": kept,
            "n_records": counts[kept].to_numpy(),
            "ability_raw": theta,
            "ability_rel": rel,
            "ability_se_rel": se / mean_theta,
            "anomalous": theta <= epsilon,
            "status": annotator_status(theta, se),
            "excluded": False,
        }
    )
    dropped = counts[counts < min_records]
    if len(dropped):
        ann = pd.concat(
            [
                ann,
                pd.DataFrame(
                    {
                        "annotator": dropped.index,
                        "n_records": dropped.to_numpy(),
                        "ability_raw": np.nan,
                        "ability_rel": np.nan,
                        "ability_se_rel": np.nan,
                        "anomalous": False,
                        "status": "too few votes",
                        "excluded": True,
                    }
                ),
            ],
            ignore_index=True,
        )
    return AmEloResult(
        mframe.sort_values("elo", ascending=False).reset_index(drop=True), ann, converged, it, tuple(trace), len(fitv)
    )


def annotator_status(theta: np.ndarray, se: np.ndarray, z: float | None = None) -> np.ndarray:
    """What an annotator's votes are, beyond the paper's θ ≤ ε rule (95% intervals of θ_k):

    * ``adversarial``: θ_k significantly below 0 (votes against the consensus ranking: flippers);
    * ``uninformative``: θ_k indistinguishable from 0 given the record (votes carry no information
      about the ranking: random voters, or too few decisive votes to tell);
    * ``reliable``: θ_k significantly above 0.
    """
    zz = Z95 if z is None else z
    lo, hi = theta - zz * se, theta + zz * se
    return np.where(hi < 0, "adversarial", np.where(lo > 0, "reliable", "uninformative"))


# ---------------------------------------------------------------- perturbation
PERTURBATIONS = ("random", "equal", "flip", "mixed")


def perturb(votes: pd.DataFrame, annotators: list[str], kind: str, rng: np.random.Generator) -> pd.DataFrame:
    """am-ELO §5.5 perturbations of the chosen annotators' votes.

    random: a decisive vote becomes a tie or the other side, 50/50; equal: every
    vote becomes a tie; flip: decisive votes swap sides, ties stay; mixed: one of
    the three at random per vote.
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}; expected one of {PERTURBATIONS}")
    out = votes.copy()
    sel = out["annotator"].isin(annotators).to_numpy()
    y = out["y"].to_numpy(float).copy()
    n = sel.sum()
    kinds = rng.choice(["random", "equal", "flip"], n) if kind == "mixed" else np.full(n, kind)
    ys = y[sel]
    decisive = ys != 0.5
    coin = rng.random(n) < 0.5
    new = ys.copy()
    new = np.where((kinds == "random") & decisive, np.where(coin, 0.5, 1 - ys), new)
    new = np.where(kinds == "equal", 0.5, new)
    new = np.where((kinds == "flip") & decisive, 1 - ys, new)
    y[sel] = new
    out["y"] = y
    return out


def ranking_consistency(x: np.ndarray, y: np.ndarray) -> float:
    """Share of model pairs ordered the same way by two score vectors (am-ELO's consistency)."""
    from core.stats.agreement import concordance

    c, d = concordance(x, y)
    return c / (c + d) if c + d else float("nan")


def perturbation_study(
    votes: pd.DataFrame,
    share: float,
    kind: str,
    seed: int = 0,
    min_records: int = MIN_RECORDS,
    epsilon: float = EPSILON,
) -> dict:
    """Perturb ``share`` of the annotators; consistency with the unperturbed ranking and flag F1.

    Returns consistency for online Elo (battles in their stored order), m-ELO
    and am-ELO, and precision / recall / F1 of am-ELO's anomaly flags against
    the perturbed annotators.
    """
    from core.stats import bt
    from core.stats.ratings import _battle_arrays, online_elo

    rng = np.random.default_rng(seed)
    counts = votes["annotator"].value_counts()
    eligible = sorted(counts[counts >= min_records].index)
    n_pert = int(round(share * len(eligible)))
    chosen = list(rng.choice(eligible, n_pert, replace=False)) if n_pert else []
    pert = perturb(votes, chosen, kind, rng)

    def scores(v: pd.DataFrame) -> tuple[tuple[str, ...], dict[str, np.ndarray], AmEloResult]:
        models, a, b, y = _battle_arrays(v)
        online = online_elo(a, b, y, len(models))[0]
        names = np.array(models, dtype=object)
        mle = bt.fit_bt(bt.comparisons_from_battles(names[a], names[b], y, models=models), lam=1e-6).elo
        am = fit_amelo(v, min_records=min_records, epsilon=epsilon)
        am_elo = am.models.set_index("model")["elo"].reindex(models).to_numpy()
        return models, {"online_elo": online, "m_elo": mle, "am_elo": am_elo}, am

    models0, base, am0 = scores(votes)
    models1, new, am = scores(pert)
    assert models0 == models1
    cons = {k: ranking_consistency(base[k], new[k]) for k in base}
    # Annotators already flagged before perturbing are anomalies of the data
    # itself (the demo has some): they are left out of the flag scoring.
    already = set(am0.annotators.loc[am0.annotators["anomalous"], "annotator"]) - set(chosen)
    flagged = set(am.annotators.loc[am.annotators["anomalous"], "annotator"]) - already
    truth = set(chosen)
    tp = len(flagged & truth)
    precision = tp / len(flagged) if flagged else float("nan")
    recall = tp / len(truth) if truth else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {
        "kind": kind,
        "share": share,
        "n_perturbed": n_pert,
        "consistency": cons,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_already_anomalous": len(already),
    }


def ratings_from_votes(
    votes: pd.DataFrame, *, ci: str | None = None, n_boot: int = 0, seed: int = 0, progress: object = None
) -> Ratings:
    """am-ELO as a leaderboard (no intervals: the paper gives none)."""
    res = fit_amelo(votes)
    f = with_vote_counts(res.models, votes)
    return Ratings(
        method="am-elo",
        frame=ranked(f),
        n_battles=int(votes["battle_id"].nunique()) if "battle_id" in votes else len(votes),
        n_votes=len(votes),
        converged=bool(res.converged),
        iterations=int(res.iterations),
        ci=None,
        extra={"n_annotators": int(len(res.annotators)), "n_anomalous": int(res.annotators["anomalous"].sum())},
    )
