"""SCOPE: selective judging with an error-rate target α (METHODS.md §6).

Per judged battle with a decisive human vote: ``p_fwd`` (P(a ≻ b) with a
shown first), ``p_rev`` (the same from the swapped prompt), their mean
``p̄`` (BPE: both-position evaluation), the prediction ``a`` iff ``p̄ ≥ 0.5``,
the uncertainty ``s = H(p̄)`` (nats) and the confidence ``c = max(p̄, 1 − p̄)``.

Thresholds, calibrated on labelled instances (accept iff ``s ≤ λ̂``):

* ``scope``     the paper's rule: largest λ with Σ 1[s_i ≤ λ](E_i − α) ≤ −1;
* ``ltt``       Learn-then-Test: walk up the calibration quantiles while the
                binomial p-value P(Bin(n_λ, α) ≤ e_λ) ≤ δ (P(risk ≤ α) ≥ 1 − δ);
* ``naive``     largest λ whose calibration error among accepted is ≤ α;
* ``heuristic`` accept iff c ≥ 1 − α (no calibration);
* ``vanilla``   accept everything.

λ ranges over the calibration scores, and instances with equal ``s`` are
admitted together.  METHODS §6 explains why the ``scope`` rule does not bound
the risk in general; the evaluation therefore reports how often each
method's test risk exceeds α, and LTT is the strict alternative.

The evaluation runs every split at once: one argsort per split, cumulative
sums over the sorted calibration half, no loop over instances.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

METHODS = ("scope", "ltt", "naive", "heuristic", "vanilla")
DEFAULT_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
EPS = 1e-12


# --------------------------------------------------------------- uncertainty
@dataclass(frozen=True)
class Uncertainty:
    """Per-instance quantities for one source of P(a ≻ b)."""

    name: str
    p: np.ndarray  # p̄ (or p_fwd for the single-order baseline)
    pred_a: np.ndarray  # prediction: a wins
    score: np.ndarray  # s = binary entropy of p (nats)
    confidence: np.ndarray  # c = max(p, 1 − p)
    correct: np.ndarray  # prediction agrees with the human vote


def binary_entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, float), EPS, 1 - EPS)
    return -(p * np.log(p) + (1 - p) * np.log(1 - p))


def uncertainty(name: str, p: np.ndarray, human_a: np.ndarray) -> Uncertainty:
    p = np.asarray(p, float)
    pred = p >= 0.5
    return Uncertainty(name, p, pred, binary_entropy(p), np.maximum(p, 1 - p), pred == np.asarray(human_a, bool))


def bpe(p_fwd, p_rev, human_a) -> Uncertainty:
    """Both-position evaluation: average the two presentation orders."""
    return uncertainty("bpe", (np.asarray(p_fwd, float) + np.asarray(p_rev, float)) / 2, human_a)


def single_order(p_fwd, human_a) -> Uncertainty:
    return uncertainty("single_order", p_fwd, human_a)


@dataclass(frozen=True)
class Quality:
    accuracy: float
    ece: float
    auroc: float
    auprc: float
    n: int
    reliability: pd.DataFrame  # bin, n, confidence, accuracy

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "ece": self.ece, "auroc": self.auroc, "auprc": self.auprc, "n": self.n}


def quality(u: Uncertainty, n_bins: int = 10) -> Quality:
    """Accuracy, ECE (10 uniform bins on c), AUROC and AUPRC of c for correctness."""
    c, y = u.confidence, u.correct.astype(float)
    n = len(c)
    edges = np.linspace(0.5, 1.0, n_bins + 1)
    b = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, n_bins - 1)
    cnt = np.bincount(b, minlength=n_bins)
    used = cnt > 0
    conf = np.bincount(b, weights=c, minlength=n_bins)[used] / cnt[used]
    acc = np.bincount(b, weights=y, minlength=n_bins)[used] / cnt[used]
    ece = float(np.sum(cnt[used] / n * np.abs(acc - conf))) if n else float("nan")
    rel = pd.DataFrame({"bin": np.flatnonzero(used), "n": cnt[used], "confidence": conf, "accuracy": acc})
    pos, neg = y.sum(), n - y.sum()
    if pos == 0 or neg == 0:
        auroc = auprc = float("nan")
    else:
        ranks = stats.rankdata(c)
        auroc = float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))
        order = np.argsort(-c, kind="stable")
        ys = y[order]
        cs = c[order]
        # average precision with tied confidences scored as one threshold
        last = np.r_[cs[1:] != cs[:-1], True]
        tp = np.cumsum(ys)[last]
        k = (np.arange(1, n + 1))[last]
        prec = tp / k
        rec_gain = np.diff(np.r_[0.0, tp]) / pos
        auprc = float(np.sum(prec * rec_gain))
    return Quality(float(y.mean()) if n else float("nan"), ece, auroc, auprc, n, rel)


# ------------------------------------------------------------------ thresholds
def _sorted_groups(s: np.ndarray):
    """Row-wise sort; a mask of the last index of each tie group."""
    order = np.argsort(s, axis=-1, kind="stable")
    ss = np.take_along_axis(s, order, axis=-1)
    end = np.ones_like(ss, dtype=bool)
    end[..., :-1] = ss[..., 1:] != ss[..., :-1]
    return order, ss, end


@dataclass(frozen=True)
class SortedCalibration:
    """Calibration halves sorted once: everything a threshold rule needs, for all α."""

    ss: np.ndarray  # sorted scores (rows × n)
    end: np.ndarray  # last index of each tie group
    cum_e: np.ndarray  # cumulative errors in score order
    cum_n: np.ndarray  # 1..n

    @classmethod
    def of(cls, s: np.ndarray, err: np.ndarray) -> "SortedCalibration":
        s = np.atleast_2d(s)
        order, ss, end = _sorted_groups(s)
        e = np.take_along_axis(np.atleast_2d(err).astype(float), order, axis=-1)
        return cls(ss, end, np.cumsum(e, axis=-1), np.arange(1, s.shape[1] + 1)[None, :])


def thresholds(s: np.ndarray | SortedCalibration, err: np.ndarray | None, alpha: float, method: str,
               delta: float = 0.1) -> np.ndarray:
    """λ̂ per row of (splits × n) calibration scores and errors; −inf = abstain on all.

    ``heuristic`` and ``vanilla`` need no calibration (+inf: accept per rule).
    Pass a :class:`SortedCalibration` to reuse one sort across α values and methods.
    """
    cal = s if isinstance(s, SortedCalibration) else SortedCalibration.of(s, err)
    rows, n = cal.ss.shape
    if method in ("vanilla", "heuristic"):
        return np.full(rows, np.inf)
    end, cum_e, cum_n = cal.end, cal.cum_e, cal.cum_n
    idx = np.arange(n)[None, :]
    if method == "scope":
        ok = end & (cum_e - alpha * cum_n <= -1 + 1e-12)
    elif method == "naive":
        ok = end & (cum_e <= alpha * cum_n + 1e-12)
    elif method == "ltt":
        n_min = math.ceil(math.log(delta) / math.log(1 - alpha))
        cand = end & (cum_n >= n_min)
        pval = np.ones(cal.ss.shape)
        pval[cand] = stats.binom.cdf(np.broadcast_to(cum_e, cal.ss.shape)[cand],
                                     np.broadcast_to(cum_n, cal.ss.shape)[cand], alpha)
        fail = cand & (pval > delta)
        first_fail = np.where(fail.any(axis=-1), np.argmax(fail, axis=-1), n)
        ok = cand & (idx < first_fail[:, None])
    else:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    last = np.where(ok, idx, -1).max(axis=-1)
    return np.where(last >= 0, cal.ss[np.arange(rows), np.maximum(last, 0)], -np.inf)


def accept(score: np.ndarray, confidence: np.ndarray, lam: np.ndarray, alpha: float, method: str) -> np.ndarray:
    if method == "heuristic":
        return confidence >= 1 - alpha - 1e-12
    if method == "vanilla":
        return np.ones_like(score, dtype=bool)
    return score <= np.asarray(lam)[..., None] if np.ndim(score) > np.ndim(lam) else score <= lam


# ------------------------------------------------------------------ evaluation
@dataclass(frozen=True)
class CurveResult:
    alphas: tuple[float, ...]
    n_instances: int
    n_splits: int
    table: pd.DataFrame  # method, alpha, risk_mean, risk_sd, risk_pooled, coverage_mean, coverage_sd, share_over_alpha, empty_splits
    seconds: dict

    def method_lists(self) -> dict:
        out = {}
        for m in METHODS:
            t = self.table[self.table["method"] == m].set_index("alpha").reindex(self.alphas)
            out[m] = {c: t[c].tolist() for c in ("risk_mean", "risk_sd", "risk_pooled", "coverage_mean",
                                                 "coverage_sd", "share_over_alpha", "empty_splits")}
        return out


def evaluate(u: Uncertainty, alphas=DEFAULT_ALPHAS, n_splits: int = 1000, delta: float = 0.1, seed: int = 0,
             methods=METHODS) -> CurveResult:
    """50/50 calibration/test splits; per method and α the risk and coverage statistics."""
    n = len(u.score)
    if n < 4:
        raise ValueError(f"only {n} instances: the split protocol needs at least 4")
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_splits, n)), axis=1)
    half = n // 2
    cal, test = perm[:, :half], perm[:, half:]
    err = (~u.correct).astype(float)
    t0 = time.perf_counter()
    sorted_cal = SortedCalibration.of(u.score[cal], err[cal])  # one sort per split, shared by every rule
    s_test, e_test, c_test = u.score[test], err[test], u.confidence[test]
    rows, timing = [], {"sort": time.perf_counter() - t0}
    for method in methods:
        t0 = time.perf_counter()
        for alpha in alphas:
            lam = thresholds(sorted_cal, None, alpha, method, delta)
            acc = accept(s_test, c_test, lam, alpha, method)
            n_acc = acc.sum(axis=1)
            n_err = (acc * e_test).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                risk = np.where(n_acc > 0, n_err / np.maximum(n_acc, 1), np.nan)
            defined = n_acc > 0
            cov = n_acc / test.shape[1]
            rows.append({
                "method": method, "alpha": float(alpha),
                "risk_mean": float(np.mean(risk[defined])) if defined.any() else np.nan,
                "risk_sd": float(np.std(risk[defined], ddof=1)) if defined.sum() > 1 else np.nan,
                "risk_pooled": float(n_err.sum() / n_acc.sum()) if n_acc.sum() else np.nan,
                "coverage_mean": float(cov.mean()), "coverage_sd": float(cov.std(ddof=1)) if n_splits > 1 else 0.0,
                "share_over_alpha": float(np.mean(risk[defined] > alpha + 1e-12)) if defined.any() else np.nan,
                "empty_splits": int((~defined).sum()),
            })
        timing[method] = time.perf_counter() - t0
    return CurveResult(tuple(float(a) for a in alphas), n, n_splits, pd.DataFrame(rows), timing)


def violation_rates(u_calib_pool: Uncertainty, population: Uncertainty, alphas=DEFAULT_ALPHAS,
                    n_cal: int = 500, n_splits: int = 500, delta: float = 0.1, seed: int = 0,
                    methods=("scope", "naive", "ltt")) -> pd.DataFrame:
    """How often the *population* risk at λ̂ exceeds α (honesty check with a known population).

    Calibration sets of ``n_cal`` are drawn from ``u_calib_pool``; the risk of
    each λ̂ is measured on the large independent ``population``.
    """
    rng = np.random.default_rng(seed)
    n = len(u_calib_pool.score)
    idx = np.argsort(rng.random((n_splits, n)), axis=1)[:, :n_cal]
    sorted_cal = SortedCalibration.of(u_calib_pool.score[idx], (~u_calib_pool.correct).astype(float)[idx])
    order = np.argsort(population.score, kind="stable")
    ps = population.score[order]
    pe = np.cumsum((~population.correct).astype(float)[order])
    rows = []
    for method in methods:
        for alpha in alphas:
            lam = thresholds(sorted_cal, None, alpha, method, delta)
            k = np.searchsorted(ps, lam, side="right")
            with np.errstate(invalid="ignore", divide="ignore"):
                risk = np.where(k > 0, pe[np.maximum(k, 1) - 1] / np.maximum(k, 1), np.nan)
            ok = k > 0
            # Abstaining on everything cannot violate the target: the guarantee
            # P(risk(λ̂) > α) ≤ δ is over all calibration draws, abstentions included.
            violated = ok & (np.where(ok, risk, 0.0) > alpha)
            rows.append({"method": method, "alpha": alpha, "violation_rate": float(np.mean(violated)),
                         "violation_rate_when_accepting": float(np.mean(risk[ok] > alpha)) if ok.any() else np.nan,
                         "abstain_all": float(np.mean(~ok)),
                         "mean_population_risk": float(np.nanmean(risk)) if ok.any() else np.nan})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- from battles
@dataclass(frozen=True)
class Instances:
    frame: pd.DataFrame  # battle_id, model_a, model_b, human_a, p_fwd, p_rev
    source: str
    tau: float | None
    reason: str | None = None


def instances_from_battles(bf: pd.DataFrame, source: str, tau: float | None = None) -> Instances:
    """Decisive-human battles with P(a ≻ b) per order from logprobs or rubric gaps.

    ``source``: 'logprob' (p_ab, p_ba), 'rubric' (σ(τ·gap) of each order's gap),
    'verbal' (the judge's stated confidence in its verdict, where it gave one)
    or 'single' (the forward order only, from logprobs when present, else the rubric).
    """
    dec = bf[(bf["human_y"] == 1.0) | (bf["human_y"] == 0.0)]
    human_a = (dec["human_y"] == 1.0).to_numpy()
    if source in ("rubric", "single") and tau is None:
        from core.calibration import fit_tau

        t = fit_tau(bf["gap"].to_numpy(float), bf["human_y"].to_numpy(float))
        tau = t.tau
        if tau is None and source == "rubric":
            return Instances(pd.DataFrame(), source, None, f"τ cannot be fitted: {t.reason}")
    sig = lambda g: 1 / (1 + np.exp(-tau * g))  # noqa: E731
    if source == "logprob":
        p_fwd, p_rev = dec["p_ab"].to_numpy(float), dec["p_ba"].to_numpy(float)
    elif source == "rubric":
        p_fwd, p_rev = sig(dec["gap_ab"].to_numpy(float)), sig(dec["gap_ba"].to_numpy(float))
    elif source == "verbal":
        # verbalised confidence c in the stated verdict → P(a ≻ b) per order
        def from_conf(verdict, conf):
            v, c = dec[verdict], dec[conf].to_numpy(float)
            return np.where(v == "a", c, np.where(v == "b", 1 - c, np.where(v == "tie", 0.5, np.nan)))

        p_fwd, p_rev = from_conf("verdict_ab", "conf_ab"), from_conf("verdict_ba", "conf_ba")
        if not np.isfinite(p_rev).any():
            p_rev = p_fwd
    elif source == "single":
        p_fwd = dec["p_ab"].to_numpy(float)
        if not np.isfinite(p_fwd).any() and tau is not None:
            g = dec["gap_ab"].to_numpy(float)
            g = np.where(np.isfinite(g), g, dec["gap"].to_numpy(float))
            p_fwd = sig(g)
        p_rev = p_fwd
    else:
        raise ValueError(f"unknown source {source!r}: expected logprob, rubric, verbal or single")
    ok = np.isfinite(p_fwd) & np.isfinite(p_rev)
    frame = pd.DataFrame({"battle_id": dec["battle_id"].to_numpy()[ok], "model_a": dec["model_a"].to_numpy()[ok],
                          "model_b": dec["model_b"].to_numpy()[ok], "human_a": human_a[ok], "p_fwd": p_fwd[ok],
                          "p_rev": p_rev[ok]})
    reason = None
    if frame.empty:
        reason = {"logprob": "no battle has first-token A/B probabilities in both orders",
                  "rubric": "no battle has rubric scores in both presentation orders",
                  "verbal": "the judge gave no verbalised confidence",
                  "single": "no battle has a forward-order probability or score"}[source]
    return Instances(frame, source, tau, reason)


def selective_leaderboard(bf: pd.DataFrame, u_all: pd.DataFrame, lam: float, escalate: bool = True) -> pd.DataFrame:
    """Bradley–Terry on accepted judgments (optionally abstentions escalated to humans).

    ``u_all``: battle_id, score for every judged battle (human vote or not).
    Returns a long frame: model, elo, leaderboard, n_battles_used.
    """
    from core import bt

    f = bf.merge(u_all[["battle_id", "score"]], on="battle_id", how="left")
    judged = f["judge_hard"].notna()
    accepted = judged & (f["score"] <= lam)
    out = []
    plans = [("hard (all judgments)", judged, "judge_hard", None),
             ("selective (accepted only)", accepted, "judge_hard", None)]
    if escalate:
        plans.append(("selective + human escalation", accepted | (~accepted & f["human_y"].notna()), None, accepted))
    for name, mask, col, acc in plans:
        sub = f[mask]
        if col is None:
            y = np.where(acc[mask], sub["judge_hard"], sub["human_y"]).astype(float)
        else:
            y = sub[col].to_numpy(float)
        if len(sub) == 0:
            continue
        fit = bt.fit_bt(bt.comparisons_from_battles(sub["model_a"].to_numpy(), sub["model_b"].to_numpy(), y),
                        lam=1e-6)
        out.append(pd.DataFrame({"model": fit.models, "elo": fit.elo, "leaderboard": name,
                                 "n_battles_used": int(len(sub))}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=["model", "elo", "leaderboard", "n_battles_used"])
