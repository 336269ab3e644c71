"""SCOPE: selective judging with an error-rate target α (METHODS.md §6).

Per judged battle: ``p_fwd`` (P(a ≻ b) with a shown first), ``p_rev`` (the
same from the swapped prompt), their mean ``p̄`` (BPE, "both-position
evaluation"), the prediction ``a`` iff ``p̄ ≥ 0.5``, the uncertainty
``s = H(p̄)`` (binary entropy in nats, at most ln 2) and the confidence
``c = max(p̄, 1 − p̄)``.  The single-order baseline uses ``p_fwd`` alone.

Thresholds, calibrated on instances with a decisive human vote (accept iff
``s ≤ λ̂``; λ ranges over the calibration scores and instances with equal
``s`` are admitted together; ``λ̂ = −inf`` means abstain on everything):

* ``scope``     the paper's LEC rule: the largest λ with Σ 1[s_i ≤ λ](E_i − α) ≤ −1;
* ``ltt``       Learn-then-Test: from the first threshold accepting at least
                ⌈ln δ / ln(1 − α)⌉ instances, walk up while the binomial
                p-value P(Bin(n_λ, α) ≤ e_λ) ≤ δ; then P(risk(λ̂) ≤ α) ≥ 1 − δ;
* ``naive``     the largest λ whose calibration error among accepted is ≤ α;
* ``heuristic`` accept iff c ≥ 1 − α (no calibration);
* ``vanilla``   accept everything.

METHODS §6 explains why the ``scope`` rule does not bound the risk in
general (λ̂ is chosen with the calibration errors, so the exchangeability
step of the paper's proof fails): :func:`evaluate` reports how often each
method's test risk exceeds α and :func:`violation_rates` measures, against a
known population, how often the *population* risk at λ̂ exceeds α.

Speed: :func:`evaluate` sorts the instances once, not once per split.  A
split is a calibration mask; read in score order, its members are already
sorted, so each rule is one cumulative sum of errors over a (splits ×
calibration size) array compared with a bound that depends only on how many
instances are accepted (αk − 1 for SCOPE, αk for naive, the binomial critical
value for LTT).  The test counts at λ̂ are the totals up to λ̂ minus the
calibration counts: one lookup per split.  No loop over instances or splits
(only over chunks of splits, to bound memory).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special, stats

from core.domain import soft_target, wilson
from core.methods import SCOPE_RULES, SCOPE_SOURCES, THRESHOLD_RULES
from core.stats import bt

METHODS: tuple[str, ...] = tuple(SCOPE_RULES)
THRESHOLD_METHODS = THRESHOLD_RULES
DEFAULT_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
SOURCES: tuple[str, ...] = tuple(SCOPE_SOURCES)
# α·n is not exact in binary floating point (0.1·30 = 3.0000000000000004); error
# counts are integers and α has a few decimals, so a tolerance far below any
# real gap between the two sides decides the boundary cases the intended way.
_TOL = 1e-9
# Work on at most this many (split, instance) cells at a time: ~100 MB of temporaries.
_CELLS_PER_CHUNK = 4_000_000


# =============================================================== uncertainty
def binary_entropy(p: ArrayLike) -> np.ndarray:
    """H(p) = −[p ln p + (1 − p) ln(1 − p)] in nats; exactly 0 at p ∈ {0, 1}."""
    p = np.asarray(p, dtype=float)
    return special.entr(p) + special.entr(1.0 - p)


def _probabilities(name: str, values: ArrayLike) -> np.ndarray:
    p = np.asarray(values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {p.shape}")
    bad = np.flatnonzero(~np.isfinite(p) | (p < 0) | (p > 1))
    if len(bad):
        raise ValueError(f"{name}[{bad[0]}] = {p[bad[0]]!r} is not a probability in [0, 1]")
    return p


@dataclass(frozen=True)
class Uncertainty:
    """Per-instance quantities of one source of P(a ≻ b) (METHODS §6)."""

    name: str
    p_fwd: np.ndarray
    p_rev: np.ndarray
    p: np.ndarray  # p̄ = (p_fwd + p_rev) / 2 (equal to p_fwd for the single-order baseline)
    pred_a: np.ndarray  # prediction: a wins (p̄ ≥ 0.5)
    score: np.ndarray  # s = H(p̄) in nats: the uncertainty SCOPE thresholds
    confidence: np.ndarray  # c = max(p̄, 1 − p̄)
    human_a: np.ndarray  # the decisive human vote: a wins
    correct: np.ndarray  # prediction agrees with the human vote

    @property
    def errors(self) -> np.ndarray:
        """E_i = 1[prediction ≠ human] as floats (what the threshold rules sum)."""
        return (~self.correct).astype(float)

    def __len__(self) -> int:
        return len(self.score)

    def frame(self) -> pd.DataFrame:
        """One row per instance: p_fwd, p_rev, p_bar, pred_a, entropy, confidence, human_a, correct."""
        return pd.DataFrame(
            {
                "p_fwd": self.p_fwd,
                "p_rev": self.p_rev,
                "p_bar": self.p,
                "pred_a": self.pred_a,
                "entropy": self.score,
                "confidence": self.confidence,
                "human_a": self.human_a,
                "correct": self.correct,
            }
        )


def from_probabilities(p_fwd: ArrayLike, p_rev: ArrayLike, human_a: ArrayLike, name: str = "bpe") -> Uncertainty:
    """Build the per-instance quantities from both orders' P(a ≻ b) and the human vote."""
    pf, pr = _probabilities("p_fwd", p_fwd), _probabilities("p_rev", p_rev)
    h = np.asarray(human_a)
    if not (len(pf) == len(pr) == len(h)):
        raise ValueError(f"p_fwd, p_rev and human_a differ in length ({len(pf)}, {len(pr)}, {len(h)})")
    if h.dtype != bool:
        if not np.isin(h, (0, 1)).all():
            raise ValueError("human_a must be booleans (True: the human preferred a)")
        h = h.astype(bool)
    p = (pf + pr) / 2.0
    pred = p >= 0.5
    return Uncertainty(name, pf, pr, p, pred, binary_entropy(p), np.maximum(p, 1.0 - p), h, pred == h)


def bpe(p_fwd: ArrayLike, p_rev: ArrayLike, human_a: ArrayLike) -> Uncertainty:
    """Both-position evaluation: average the two presentation orders."""
    return from_probabilities(p_fwd, p_rev, human_a, name="bpe")


def single_order(p_fwd: ArrayLike, human_a: ArrayLike) -> Uncertainty:
    """The single-order baseline: the forward order's probability alone."""
    return from_probabilities(p_fwd, p_fwd, human_a, name="single_order")


# ------------------------------------------------------------------- quality
@dataclass(frozen=True)
class Quality:
    """How good a confidence c is at telling right judgments from wrong ones.

    ``reliability`` is the reliability-diagram table (one row per non-empty
    bin: bin, lo, hi, n, confidence, accuracy, lower, upper with a Wilson 95%
    interval on the accuracy); ``bins``/``label``/``ece`` make the object
    directly usable by ``core.charts.reliability_diagram``.
    """

    label: str
    accuracy: float
    ece: float
    auroc: float
    auprc: float
    n: int
    reliability: pd.DataFrame
    reason: str | None = None  # why AUROC/AUPRC are undefined, when they are

    @property
    def bins(self) -> pd.DataFrame:
        return self.reliability

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "ece": self.ece, "auroc": self.auroc, "auprc": self.auprc, "n": self.n}


def auroc(confidence: ArrayLike, correct: ArrayLike) -> float:
    """P(c of a correct instance > c of a wrong one), ties counting one half (Mann–Whitney)."""
    c, y = np.asarray(confidence, float), np.asarray(correct, bool)
    pos, neg = int(y.sum()), int((~y).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = stats.rankdata(c)  # midranks: a tie contributes one half
    return float((ranks[y].sum() - pos * (pos + 1) / 2) / (pos * neg))


def average_precision(confidence: ArrayLike, correct: ArrayLike) -> float:
    """AUPRC as average precision: Σ over distinct thresholds of (ΔR)·P, correct = positive."""
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    pos = y.sum()
    if pos == 0 or pos == len(y):
        return float("nan")
    order = np.argsort(-c, kind="stable")
    cs, ys = c[order], y[order]
    last = np.r_[cs[1:] != cs[:-1], True]  # one threshold per tie group of c
    tp = np.cumsum(ys)[last]
    k = np.arange(1, len(c) + 1)[last]
    return float(np.sum(np.diff(np.r_[0.0, tp]) / pos * (tp / k)))


def quality(u: Uncertainty, n_bins: int = 10, lo: float = 0.5) -> Quality:
    """Accuracy, ECE (``n_bins`` uniform bins of c), AUROC and AUPRC of c for correctness.

    The bins split the range c can take, [0.5, 1] (bins on [0, 1] would leave
    the lower five empty); bin k is [lo + k·w, lo + (k+1)·w), the last one
    closed so that c = 1 counts.
    """
    c, y = u.confidence, u.correct
    n = len(c)
    edges = np.linspace(lo, 1.0, n_bins + 1)
    b = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, n_bins - 1)
    cnt = np.bincount(b, minlength=n_bins)
    used = cnt > 0
    conf = np.bincount(b, weights=c, minlength=n_bins)[used] / cnt[used]
    hits = np.bincount(b, weights=y.astype(float), minlength=n_bins)[used]
    acc = hits / cnt[used]
    lower, upper = wilson(hits, cnt[used].astype(float))
    ece = float(np.sum(cnt[used] / n * np.abs(acc - conf))) if n else float("nan")
    rel = pd.DataFrame(
        {
            "bin": np.flatnonzero(used),
            "lo": edges[:-1][used],
            "hi": edges[1:][used],
            "n": cnt[used],
            "confidence": conf,
            "accuracy": acc,
            "lower": lower,
            "upper": upper,
        }
    )
    reason = None
    if n == 0:
        reason = "no instances"
    elif y.all() or not y.any():
        reason = (
            "every prediction agrees with the human vote" if y.all() else "no prediction agrees with the human vote"
        ) + ": AUROC and AUPRC need both right and wrong judgments"
    return Quality(
        u.name, float(y.mean()) if n else float("nan"), ece, auroc(c, y), average_precision(c, y), n, rel, reason
    )


# ================================================================ thresholds
def ltt_min_accepted(alpha: float, delta: float) -> int:
    """⌈ln δ / ln(1 − α)⌉: below this many accepted instances even zero errors cannot pass."""
    return math.ceil(math.log(delta) / math.log(1.0 - alpha))


def _ltt_critical(n_max: int, alpha: float, delta: float) -> np.ndarray:
    """kstar[n] = the largest e with P(Bin(n, α) ≤ e) ≤ δ, or −1 when none; n = 0…n_max.

    The p-value is monotone in e, so LTT's test at (n, e) is ``e ≤ kstar[n]``:
    n_max + 1 binomial quantiles replace one CDF per (split, threshold).
    """
    n = np.arange(n_max + 1)
    k0 = stats.binom.ppf(delta, n, alpha)  # the smallest e with CDF ≥ δ
    k0 = np.where(np.isfinite(k0), k0, 0).astype(np.int64)
    kstar = np.full(n_max + 1, -1, dtype=np.int64)
    # ppf is computed in floating point: check its neighbours with the CDF itself
    for shift in (-2, -1, 0, 1):
        k = k0 + shift
        ok = (k >= 0) & (k <= n) & (stats.binom.cdf(k, n, alpha) <= delta)
        kstar = np.where(ok, np.maximum(kstar, k), kstar)
    return kstar


def _last_true(mask: np.ndarray) -> np.ndarray:
    """Index of the last True in each row, −1 for rows without one."""
    k = mask.shape[1]
    last = k - 1 - np.argmax(mask[:, ::-1], axis=1)
    return np.where(mask.any(axis=1), last, -1)


def _acceptance_bounds(
    k_max: int, alpha: float, method: str, delta: float, kstar: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """Each rule as "accept the k smallest iff (errors among them) ≤ bound[k−1]", k = 1…k_max.

    Returns (bound, k_min): the rule only considers k ≥ k_min.  scope:
    Σ(E − α) ≤ −1 ⇔ e ≤ αk − 1; naive: e ≤ αk; ltt: e ≤ k*(k), the binomial
    critical value, from k_min = ⌈ln δ / ln(1 − α)⌉ upwards.
    """
    k = np.arange(1, k_max + 1, dtype=float)
    if method == "scope":
        return alpha * k - 1.0 + _TOL, 1
    if method == "naive":
        return alpha * k + _TOL, 1
    if method == "ltt":
        if kstar is None:
            kstar = _ltt_critical(k_max, alpha, delta)
        return kstar[1 : k_max + 1].astype(float), ltt_min_accepted(alpha, delta)
    raise ValueError(f"unknown threshold method {method!r}; expected one of {THRESHOLD_METHODS}")


def _last_feasible(
    cum_e: np.ndarray,
    valid: np.ndarray | None,
    alpha: float,
    method: str,
    delta: float,
    kstar: np.ndarray | None = None,
) -> np.ndarray:
    """Column of λ̂ per row (−1: abstain on all).

    ``cum_e[r, k−1]``: errors among the k lowest-scored calibration instances
    of row r; ``valid``: the column ends a tie group of scores (None: no ties),
    so that equal scores enter together.  scope and naive take the last
    feasible column; LTT walks up its candidates and stops at the first failure.
    """
    n_cols = cum_e.shape[1]
    bound, k_min = _acceptance_bounds(n_cols, alpha, method, delta, kstar)
    passes = cum_e <= bound[None, :]
    if method != "ltt":
        return _last_true(passes if valid is None else passes & valid)
    cand = np.zeros(n_cols, dtype=bool)
    cand[k_min - 1 :] = True
    cand = np.broadcast_to(cand, cum_e.shape) if valid is None else valid & cand[None, :]
    fail = cand & ~passes
    first_fail = np.where(fail.any(axis=1), np.argmax(fail, axis=1), n_cols)
    return _last_true(cand & (np.arange(n_cols)[None, :] < first_fail[:, None]))


def _check_alpha_delta(alpha: float, delta: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"α must be in (0, 1), got {alpha}")
    if not 0 < delta < 1:
        raise ValueError(f"δ must be in (0, 1), got {delta}")


def thresholds(score: ArrayLike, errors: ArrayLike, alpha: float, method: str, delta: float = 0.1) -> np.ndarray:
    """λ̂ for each row of calibration scores and errors (1-D input: one row); −inf = abstain on all.

    ``heuristic`` and ``vanilla`` are not calibrated: +inf (their acceptance
    rule is applied by :func:`accept`).
    """
    _check_alpha_delta(alpha, delta)
    s = np.atleast_2d(np.asarray(score, dtype=float))
    if method in ("vanilla", "heuristic"):
        return np.full(s.shape[0], np.inf)
    e = np.atleast_2d(np.asarray(errors, dtype=float))
    if e.shape != s.shape:
        raise ValueError(f"scores {s.shape} and errors {e.shape} differ in shape")
    if s.shape[1] == 0:
        return np.full(s.shape[0], -np.inf)
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, axis=1)
    cum_e = np.cumsum(np.take_along_axis(e, order, axis=1), axis=1)
    group_end = np.ones(s.shape, dtype=bool)  # instances with equal s enter together
    group_end[:, :-1] = ss[:, 1:] != ss[:, :-1]
    col = _last_feasible(cum_e, group_end, alpha, method, delta)
    return np.where(col >= 0, ss[np.arange(s.shape[0]), np.maximum(col, 0)], -np.inf)


def accept(score: ArrayLike, confidence: ArrayLike, lam: ArrayLike, alpha: float, method: str) -> np.ndarray:
    """Which instances a method accepts: s ≤ λ̂ (threshold rules), c ≥ 1 − α (heuristic), all (vanilla)."""
    score = np.asarray(score, dtype=float)
    if method == "heuristic":
        return np.asarray(confidence, dtype=float) >= 1.0 - alpha - 1e-12
    if method == "vanilla":
        return np.ones(score.shape, dtype=bool)
    lam = np.asarray(lam, dtype=float)
    return score <= (lam[..., None] if score.ndim > lam.ndim else lam)


@dataclass(frozen=True)
class Threshold:
    """λ̂ fitted on one calibration set, with what it means on that set."""

    method: str
    alpha: float
    delta: float
    lam: float  # −inf: abstain on all; +inf: no threshold (heuristic, vanilla)
    n_calibration: int
    n_accepted: int
    n_errors: int
    reason: str | None = None

    @property
    def feasible(self) -> bool:
        return self.lam > -np.inf

    @property
    def calibration_risk(self) -> float:
        return self.n_errors / self.n_accepted if self.n_accepted else float("nan")

    @property
    def calibration_coverage(self) -> float:
        return self.n_accepted / self.n_calibration if self.n_calibration else float("nan")


def fit_threshold(u: Uncertainty, alpha: float, method: str = "scope", delta: float = 0.1) -> Threshold:
    """Calibrate one threshold on every instance of ``u`` (e.g. all battles with a human vote)."""
    lam = float(thresholds(u.score, u.errors, alpha, method, delta)[0])
    acc = accept(u.score, u.confidence, lam, alpha, method)
    n_acc, n_err = int(acc.sum()), int((acc & ~u.correct).sum())
    reason = None
    if lam == -np.inf:
        n = len(u)
        if method == "scope":
            reason = (
                f"no threshold satisfies Σ(E − α) ≤ −1 on the {n} calibration instances at α = {alpha:g} "
                f"(even an error-free accepted set needs at least {math.ceil(1 / alpha - _TOL)} instances): "
                "abstain on all"
            )
        elif method == "ltt":
            reason = (
                f"the first candidate threshold fails the binomial test at α = {alpha:g}, δ = {delta:g} "
                f"(at least {ltt_min_accepted(alpha, delta)} accepted instances are needed even with no "
                f"errors; {n} calibration instances): abstain on all"
            )
        else:
            reason = f"no threshold keeps the calibration error at or below α = {alpha:g}: abstain on all"
    return Threshold(method, float(alpha), float(delta), lam, len(u), n_acc, n_err, reason)


# ================================================================ evaluation
def calibration_masks(n: int, n_splits: int, seed: int = 0) -> np.ndarray:
    """(splits × n) booleans, True = calibration: n // 2 random instances per split, the rest is test."""
    if n < 2:
        raise ValueError(f"{n} instances cannot be split into calibration and test halves")
    rng = np.random.default_rng(seed)
    half = n // 2
    perm = rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int32), (n_splits, n)), axis=1)
    return perm < half


@dataclass(frozen=True)
class CurveResult:
    """Per method and α: the split statistics (``table``) and per-split arrays (``per_split``).

    ``table`` columns: method, alpha, risk_mean, risk_sd (ddof 1, over splits
    that accepted something), risk_pooled (all accepted errors over all
    accepted instances), coverage_mean, coverage_sd, share_over_alpha (the
    share of all splits whose test risk exceeds α; a split that accepts
    nothing counts as not over α),
    empty_splits (nothing accepted: excluded from the risk statistics, never
    averaged in as zero), exceeds_alpha (risk_mean > α: what a chart marks).
    """

    alphas: tuple[float, ...]
    n_instances: int
    n_splits: int
    delta: float
    table: pd.DataFrame
    per_split: dict = field(repr=False)  # (method, alpha) -> {"risk": array (NaN = empty), "coverage": array}
    seconds: dict = field(default_factory=dict)

    LIST_KEYS = (
        "risk_mean",
        "risk_sd",
        "risk_pooled",
        "coverage_mean",
        "coverage_sd",
        "share_over_alpha",
        "empty_splits",
    )

    def method_lists(self, methods: Sequence[str] | None = None) -> dict:
        """{method: {statistic: list aligned with ``alphas``}} (the CLI's JSON shape)."""
        out = {}
        for m in methods or self.table["method"].unique():
            t = self.table[self.table["method"] == m].set_index("alpha").reindex(self.alphas)
            out[m] = {k: t[k].tolist() for k in self.LIST_KEYS}
        return out


def _split_statistics(
    method: str, alpha: float, n_acc: np.ndarray, n_err: np.ndarray, n_test: np.ndarray
) -> tuple[dict, np.ndarray, np.ndarray]:
    """One table row, the per-split risks (NaN where nothing was accepted) and coverages."""
    defined = n_acc > 0
    risk = np.full(len(n_acc), np.nan)
    risk[defined] = n_err[defined] / n_acc[defined]
    r = risk[defined]
    cov = n_acc / n_test
    mean = float(r.mean()) if len(r) else float("nan")
    return (
        {
            "method": method,
            "alpha": float(alpha),
            "risk_mean": mean,
            "risk_sd": float(r.std(ddof=1)) if len(r) > 1 else float("nan"),
            "risk_pooled": float(n_err.sum() / n_acc.sum()) if n_acc.sum() else float("nan"),
            "coverage_mean": float(cov.mean()),
            "coverage_sd": float(cov.std(ddof=1)) if len(cov) > 1 else float("nan"),
            # over every split: one that accepts nothing has no error among its accepted judgments, so it is
            # not over α (LTT's 1 − δ promise is over all splits, and so is this share)
            "share_over_alpha": float(np.sum(r > alpha + 1e-12) / len(n_acc)) if len(n_acc) else float("nan"),
            "empty_splits": int((~defined).sum()),
            "exceeds_alpha": bool(mean > alpha + 1e-12) if len(r) else False,
        },
        risk,
        cov,
    )


def evaluate(
    u: Uncertainty,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_splits: int = 1000,
    delta: float = 0.1,
    seed: int = 0,
    methods: Sequence[str] = METHODS,
    splits: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CurveResult:
    """Random 50/50 calibration/test splits; per method and α the risk and coverage statistics.

    ``splits``: explicit (splits × n) calibration masks, each with the same
    number of calibration instances (see :func:`calibration_masks`, the
    default with ``seed``).  Work is done in chunks of splits so that memory
    stays bounded for large ``n``.
    """
    n = len(u)
    if n < 4:
        raise ValueError(f"only {n} instances: the split protocol needs at least 4")
    alphas = tuple(float(a) for a in alphas)
    for a in alphas:
        _check_alpha_delta(a, delta)
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; expected some of {METHODS}")
    t_start = time.perf_counter()
    if splits is None:
        splits = calibration_masks(n, n_splits, seed)
    splits = np.asarray(splits, dtype=bool)
    if splits.ndim != 2 or splits.shape[1] != n:
        raise ValueError(f"splits must be (n_splits × {n}) calibration masks, got shape {splits.shape}")
    n_cal = splits.sum(axis=1)
    k_cal = int(n_cal[0]) if len(n_cal) else 0
    if not 0 < k_cal < n or np.any(n_cal != k_cal):
        raise ValueError(
            "every split needs the same number of calibration instances, at least one, and at least one test instance"
        )
    S = splits.shape[0]
    n_test_rows = np.full(S, n - k_cal)

    # One global sort: the calibration members of a split, read off its mask in
    # this order, are already sorted.  Their k-th member closes a prefix of k
    # calibration instances, so each rule is one comparison of the running error
    # count with a bound that depends on k only (_acceptance_bounds).
    order = np.argsort(u.score, kind="stable")
    s_sorted = u.score[order]
    err_sorted = u.errors[order].astype(np.int32)
    starts = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    group = np.cumsum(starts) - 1  # tie group of each sorted position
    group_last = np.r_[np.flatnonzero(starts)[1:] - 1, n - 1]  # its last sorted position
    n_upto_group = group_last + 1  # instances with s ≤ the group's score
    err_upto_group = np.cumsum(err_sorted)[group_last]
    ties = bool(group[-1] < n - 1)
    wrong = ~u.correct
    kstar = {a: _ltt_critical(k_cal, a, delta) for a in alphas} if "ltt" in methods else {}

    n_acc = {(m, a): np.empty(S, dtype=np.int64) for m in methods for a in alphas}
    n_err = {(m, a): np.empty(S, dtype=np.int64) for m in methods for a in alphas}
    # "shared": the split masks, the sort and the cumulative sums every method reads
    timing = {"shared": time.perf_counter() - t_start, **dict.fromkeys(methods, 0.0)}
    chunk = max(1, _CELLS_PER_CHUNK // n)
    for lo in range(0, S, chunk):
        hi = min(S, lo + chunk)
        rows = np.arange(hi - lo)
        t0 = time.perf_counter()
        pos = np.nonzero(splits[lo:hi][:, order])[1].reshape(hi - lo, k_cal)  # sorted positions of members
        cum_e = np.cumsum(err_sorted[pos], axis=1, dtype=np.int32)
        grp = group[pos]
        valid = None  # equal scores enter together: only the last member of a tie group closes a prefix
        if ties:
            valid = np.ones(pos.shape, dtype=bool)
            valid[:, :-1] = grp[:, 1:] != grp[:, :-1]
        test = ~splits[lo:hi]
        timing["shared"] += time.perf_counter() - t0
        for m in methods:
            t0 = time.perf_counter()
            for a in alphas:
                if m in THRESHOLD_METHODS:
                    col = _last_feasible(cum_e, valid, a, m, delta, kstar.get(a))
                    safe = np.maximum(col, 0)
                    g = grp[rows, safe]  # λ̂ = that member's score; test counts = all − calibration
                    na = np.where(col >= 0, n_upto_group[g] - (safe + 1), 0)
                    ne = np.where(col >= 0, err_upto_group[g] - cum_e[rows, safe], 0)
                elif m == "heuristic":
                    acc = test & (u.confidence >= 1.0 - a - 1e-12)[None, :]
                    na, ne = acc.sum(axis=1), (acc & wrong[None, :]).sum(axis=1)
                else:  # vanilla
                    na, ne = n_test_rows[lo:hi], (test & wrong[None, :]).sum(axis=1)
                n_acc[(m, a)][lo:hi], n_err[(m, a)][lo:hi] = na, ne
            timing[m] += time.perf_counter() - t0
        if progress is not None:
            progress(hi, S)

    rows_out, per_split = [], {}
    for m in methods:
        for a in alphas:
            stats_row, risk, cov = _split_statistics(m, a, n_acc[(m, a)], n_err[(m, a)], n_test_rows)
            rows_out.append(stats_row)
            per_split[(m, a)] = {"risk": risk, "coverage": cov}
    timing["total"] = time.perf_counter() - t_start
    return CurveResult(alphas, n, S, float(delta), pd.DataFrame(rows_out), per_split, timing)


# ===================================================================== honesty
def simulate_judge(
    n: int, rng: np.random.Generator, signal: float = 1.5, position_bias: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A position-biased judge over a known population (for honesty checks and demos).

    Latent preference ``z ~ N(0, signal²)``; the human prefers a with
    probability σ(z); the judge reports ``p_fwd = σ(z + b)`` and
    ``p_rev = σ(z − b)`` (it favours whichever answer is shown first by b
    logits).  Returns (p_fwd, p_rev, human_a).
    """
    z = rng.normal(0.0, signal, n)
    human_a = rng.random(n) < special.expit(z)
    return special.expit(z + position_bias), special.expit(z - position_bias), human_a


def violation_rates(
    cal_score: np.ndarray,
    cal_errors: np.ndarray,
    population: Uncertainty,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    methods: Sequence[str] = THRESHOLD_METHODS,
    delta: float = 0.1,
) -> pd.DataFrame:
    """How often the population risk at λ̂ exceeds α, over many calibration sets.

    ``cal_score``/``cal_errors``: (sets × n_cal) independent calibration sets;
    ``population``: a large independent sample standing in for the true
    distribution.  Columns: method, alpha, violation_rate (share of
    calibration sets whose λ̂ has population risk > α; abstaining on all is
    not a violation, as in LTT's guarantee P(risk(λ̂) > α) ≤ δ),
    violation_rate_when_accepting, abstain_all, mean_population_risk (over
    sets that accept something), pooled_population_risk (Σ errors / Σ
    accepted over all sets: the marginal ratio SCOPE's theorem claims to
    bound), mean_population_coverage, mc_se (binomial Monte-Carlo standard
    error of violation_rate), exceeds_alpha (mean_population_risk > α) and
    pooled_exceeds_alpha.
    """
    cal_score = np.atleast_2d(np.asarray(cal_score, float))
    cal_errors = np.atleast_2d(np.asarray(cal_errors, float))
    n_sets = cal_score.shape[0]
    order = np.argsort(population.score, kind="stable")
    pop_s = population.score[order]
    pop_cum_e = np.cumsum(population.errors[order])
    n_pop = len(pop_s)
    rows = []
    for m in methods:
        for a in alphas:
            if m in THRESHOLD_METHODS:
                lam = thresholds(cal_score, cal_errors, a, m, delta)
                k = np.searchsorted(pop_s, lam, side="right")  # population instances with s ≤ λ̂
                e = np.where(k > 0, pop_cum_e[np.maximum(k, 1) - 1], 0.0)
            else:  # calibration-free: the same accepted set for every calibration draw
                acc = accept(population.score, population.confidence, np.inf, a, m)
                k = np.full(n_sets, int(acc.sum()))
                e = np.full(n_sets, float((acc & ~population.correct).sum()))
            ok = k > 0
            risk = np.where(ok, e / np.maximum(k, 1), np.nan)
            violated = ok & (np.nan_to_num(risk) > a + 1e-12)
            rate = float(violated.mean())
            mean_risk = float(np.nanmean(risk)) if ok.any() else float("nan")
            rows.append(
                {
                    "method": m,
                    "alpha": float(a),
                    "violation_rate": rate,
                    "violation_rate_when_accepting": float(violated[ok].mean()) if ok.any() else float("nan"),
                    "abstain_all": float((~ok).mean()),
                    "mean_population_risk": mean_risk,
                    # the ratio of expectations the paper's theorem bounds (pooled over calibration draws)
                    "pooled_population_risk": float(e.sum() / k.sum()) if k.sum() else float("nan"),
                    "mean_population_coverage": float((k / n_pop).mean()),
                    "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / n_sets),
                    "exceeds_alpha": bool(ok.any() and mean_risk > a + 1e-12),
                    "pooled_exceeds_alpha": bool(k.sum() > 0 and e.sum() / k.sum() > a + 1e-12),
                }
            )
    return pd.DataFrame(rows)


def simulated_violation_rates(
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_cal: int = 500,
    n_sets: int = 500,
    signal: float = 1.0,
    position_bias: float = 1.0,
    delta: float = 0.1,
    n_population: int = 200_000,
    seed: int = 0,
    both_orders: bool = True,
    methods: Sequence[str] = THRESHOLD_METHODS,
) -> pd.DataFrame:
    """:func:`violation_rates` for the simulated judge of :func:`simulate_judge`.

    Every calibration set is a fresh draw, the population an independent one.
    """
    rng = np.random.default_rng(seed)
    pf, pr, h = simulate_judge(n_population, rng, signal, position_bias)
    population = bpe(pf, pr, h) if both_orders else single_order(pf, h)
    pf, pr, h = simulate_judge(n_cal * n_sets, rng, signal, position_bias)
    cal = bpe(pf, pr, h) if both_orders else single_order(pf, h)
    return violation_rates(
        cal.score.reshape(n_sets, n_cal), cal.errors.reshape(n_sets, n_cal), population, alphas, methods, delta
    )


# ================================================================ from battles
@dataclass(frozen=True)
class BattleProbabilities:
    """P(a ≻ b) per presentation order for every judged battle where the source gives one.

    ``frame``: battle_id, model_a, model_b, human_y, judge_hard, p_fwd, p_rev,
    p_bar, pred_a, s (BPE entropy), c (confidence); ``reason`` says why it is
    empty when it is.
    """

    frame: pd.DataFrame
    source: str
    tau: float | None
    reason: str | None = None


def _fit_tau(gap: np.ndarray, human_y: np.ndarray) -> tuple[float | None, str | None]:
    from core.stats.calibration import fit_tau

    t = fit_tau(gap, human_y, interval=False)
    return t.tau, t.reason


def _verbal_p(verdict: pd.Series, conf: pd.Series) -> np.ndarray:
    """A stated verdict with confidence c → P(a ≻ b): c for 'a', 1 − c for 'b', 0.5 for a tie."""
    c = pd.to_numeric(conf, errors="coerce").to_numpy(float)
    finite = c[np.isfinite(c)]
    if len(finite) and finite.max() > 1 and finite.max() <= 100:
        c = c / 100.0  # stated as a percentage
    c = np.where((c >= 0) & (c <= 1), c, np.nan)
    v = verdict.to_numpy(dtype=object)
    return np.where(v == "a", c, np.where(v == "b", 1 - c, np.where(v == "tie", 0.5, np.nan)))


def battle_probabilities(bf: pd.DataFrame, source: str, tau: float | None = None) -> BattleProbabilities:
    """P(a ≻ b) of both orders for every judged battle (human vote or not).

    ``source``: 'logprob' (first-token A/B probabilities p_ab, p_ba),
    'rubric' (σ(τ·gap) of each order's rubric gap, τ fitted by maximum
    likelihood on human-decisive battles unless given, METHODS §2), 'verbal'
    (the judge's stated confidence in its verdict, per order; one order when
    only one was judged) or 'single' (the forward order only: logprobs when
    present, else the rubric gap of the forward order, else the averaged gap).
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}: expected one of {SOURCES}")
    empty = pd.DataFrame(
        columns=[
            "battle_id",
            "model_a",
            "model_b",
            "human_y",
            "judge_hard",
            "p_fwd",
            "p_rev",
            "p_bar",
            "pred_a",
            "s",
            "c",
        ]
    )
    col = lambda name: (bf[name] if name in bf else pd.Series(np.nan, index=bf.index)).to_numpy(float)
    need_tau = source == "rubric" or (source == "single" and not np.isfinite(col("p_ab")).any())
    reason = None
    if need_tau and tau is None:
        tau, why = _fit_tau(col("gap"), col("human_y"))
        if tau is None:
            return BattleProbabilities(empty, source, None, f"τ cannot be fitted: {why}")
    if source == "logprob":
        p_fwd, p_rev = col("p_ab"), col("p_ba")
    elif source == "rubric":
        assert tau is not None  # fitted above when not given
        p_fwd, p_rev = soft_target(col("gap_ab"), tau), soft_target(col("gap_ba"), tau)
    elif source == "verbal":
        none = pd.Series([None] * len(bf), index=bf.index, dtype=object)
        p_fwd = _verbal_p(bf.get("verdict_ab", none), bf.get("conf_ab", none))
        p_rev = _verbal_p(bf.get("verdict_ba", none), bf.get("conf_ba", none))
        if not np.isfinite(p_rev).any():
            p_rev = p_fwd  # the judge was run in one order only
    else:  # single
        p_fwd = col("p_ab")
        if not np.isfinite(p_fwd).any():
            g = col("gap_ab")
            assert tau is not None  # fitted above when not given
            p_fwd = soft_target(np.where(np.isfinite(g), g, col("gap")), tau)
        p_rev = p_fwd
    ok = np.isfinite(p_fwd) & np.isfinite(p_rev)
    if not ok.any():
        reason = {
            "logprob": "no battle has first-token A/B probabilities in both orders",
            "rubric": "no battle has rubric scores in both presentation orders",
            "verbal": "the judge gave no verbalised confidence",
            "single": "no battle has a forward-order probability or score",
        }[source]
        return BattleProbabilities(empty, source, tau, reason)
    pf, pr = np.clip(p_fwd[ok], 0, 1), np.clip(p_rev[ok], 0, 1)
    p = (pf + pr) / 2.0
    sub = bf.loc[ok]
    frame = pd.DataFrame(
        {
            "battle_id": sub["battle_id"].to_numpy() if "battle_id" in sub else np.flatnonzero(ok),
            "model_a": sub["model_a"].to_numpy(),
            "model_b": sub["model_b"].to_numpy(),
            "human_y": col("human_y")[ok],
            "judge_hard": col("judge_hard")[ok],
            "p_fwd": pf,
            "p_rev": pr,
            "p_bar": p,
            "pred_a": p >= 0.5,
            "s": binary_entropy(p),
            "c": np.maximum(p, 1 - p),
        }
    )
    return BattleProbabilities(frame, source, tau, None)


@dataclass(frozen=True)
class Instances:
    """Battles with a decisive human vote (majority, ties excluded) and P(a ≻ b) from ``source``.

    ``frame``: battle_id, model_a, model_b, human_a, p_fwd, p_rev.
    """

    frame: pd.DataFrame
    source: str
    tau: float | None
    reason: str | None = None

    def uncertainty(self) -> Uncertainty:
        f = self.frame
        name = "single_order" if self.source == "single" else "bpe"
        return from_probabilities(
            f["p_fwd"].to_numpy(float), f["p_rev"].to_numpy(float), f["human_a"].to_numpy(bool), name
        )


def instances_from_battles(bf: pd.DataFrame, source: str, tau: float | None = None) -> Instances:
    """The calibration/evaluation instances of a battle frame (human decisive, judged by ``source``)."""
    bp = battle_probabilities(bf, source, tau)
    cols = ["battle_id", "model_a", "model_b", "human_a", "p_fwd", "p_rev"]
    if bp.reason:
        return Instances(pd.DataFrame(columns=cols), source, bp.tau, bp.reason)
    f = bp.frame
    dec = f["human_y"].notna() & (f["human_y"] != 0.5)
    frame = f.loc[dec].assign(human_a=f.loc[dec, "human_y"] > 0.5)[cols].reset_index(drop=True)
    reason = None if len(frame) else "no judged battle has a decisive human vote"
    return Instances(frame, source, bp.tau, reason)


# ======================================================== selective leaderboard
LEADERBOARDS = ("all judgments", "accepted only", "accepted + human escalation")


@dataclass(frozen=True)
class LeaderboardPart:
    name: str
    fit: bt.BTFit | None  # None when no battle is left
    n_battles: int
    n_judge: int  # battles labelled by the judge
    n_human: int  # battles labelled by the human vote (escalated)
    reason: str | None = None


@dataclass(frozen=True)
class SelectiveLeaderboard:
    """Bradley–Terry fits on all judgments, on the accepted ones, and with abstentions escalated."""

    alpha: float
    lam: float
    parts: tuple[LeaderboardPart, ...]
    threshold: Threshold | None = None

    def part(self, name: str) -> LeaderboardPart:
        return next(p for p in self.parts if p.name == name)

    def frame(self) -> pd.DataFrame:
        """Long format: model, elo, rank, leaderboard, n_battles_used, well_defined."""
        out = []
        for p in self.parts:
            if p.fit is None:
                continue
            f = p.fit.frame()
            out.append(
                f[["model", "elo", "rank"]].assign(
                    leaderboard=p.name, n_battles_used=p.n_battles, well_defined=p.fit.well_defined
                )
            )
        cols = ["model", "elo", "rank", "leaderboard", "n_battles_used", "well_defined"]
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)

    def counts(self) -> dict:
        return {p.name: p.n_battles for p in self.parts}


def selective_leaderboards(
    bf: pd.DataFrame,
    score: ArrayLike | str,
    alpha: float,
    lam: float,
    bt_lam: float = 0.0,
    threshold: Threshold | None = None,
) -> SelectiveLeaderboard:
    """Bradley–Terry (i) on every hard judge label, (ii) on accepted judgments only, (iii) on accepted
    judgments plus the abstained battles handed to their human vote where one exists.

    ``bf``: model_a, model_b, judge_hard, human_y (a battle frame); ``score``:
    the uncertainty s per row of ``bf`` (array, or the name of a column; NaN =
    unknown, which never passes the threshold).  A judged battle is accepted
    iff ``s ≤ lam``; abstained battles without a human vote drop out of (iii).
    """

    s = (bf[score] if isinstance(score, str) else pd.Series(np.asarray(score, float), index=bf.index)).to_numpy(float)
    if len(s) != len(bf):
        raise ValueError(f"{len(s)} scores for {len(bf)} battles")
    jh = bf["judge_hard"].to_numpy(float)
    hy = bf["human_y"].to_numpy(float)
    judged = np.isfinite(jh)
    accepted = judged & np.isfinite(s) & (s <= lam)
    escalated = judged & ~accepted & np.isfinite(hy)
    plans = [
        (LEADERBOARDS[0], judged, jh),
        (LEADERBOARDS[1], accepted, jh),
        (LEADERBOARDS[2], accepted | escalated, np.where(accepted, jh, hy)),
    ]
    ma, mb = bf["model_a"].to_numpy(), bf["model_b"].to_numpy()
    parts = []
    for name, mask, y in plans:
        n_h = int((mask & escalated).sum())
        n_total = int(mask.sum())
        if n_total == 0:
            why = (
                "no battle has a judge label"
                if not judged.any()
                else (
                    "no judgment is accepted at this threshold"
                    if name == LEADERBOARDS[1]
                    else "no judgment is accepted and no abstained battle has a human vote"
                )
            )
            parts.append(LeaderboardPart(name, None, 0, 0, 0, why))
            continue
        fit = bt.fit_bt(bt.comparisons_from_battles(ma[mask], mb[mask], y[mask]), lam=bt_lam)
        issues = "; ".join(str(i) for i in fit.issues) or None
        parts.append(LeaderboardPart(name, fit, n_total, n_total - n_h, n_h, issues))
    return SelectiveLeaderboard(float(alpha), float(lam), tuple(parts), threshold)


def fit_selective_leaderboard(
    bf: pd.DataFrame, source: str, alpha: float, method: str = "scope", delta: float = 0.1, tau: float | None = None
) -> SelectiveLeaderboard | str:
    """Calibrate λ̂ on the human-voted battles, then :func:`selective_leaderboards` on all battles.

    Returns a reason string when the source gives no usable probabilities.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError(f"the selective leaderboard needs a threshold method {THRESHOLD_METHODS}, got {method!r}")
    bp = battle_probabilities(bf, source, tau)
    if bp.reason:
        return bp.reason
    inst = instances_from_battles(bf, source, bp.tau)
    if inst.reason:
        return inst.reason
    th = fit_threshold(inst.uncertainty(), alpha, method, delta)
    s = bf[["battle_id"]].merge(bp.frame[["battle_id", "s"]], on="battle_id", how="left")["s"].to_numpy(float)
    return selective_leaderboards(bf, s, alpha, th.lam, threshold=th)
