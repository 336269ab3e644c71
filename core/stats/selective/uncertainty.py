"""Per-instance uncertainty of a judge (BPE or one order) and how well it ranks the judge's errors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special, stats

from core.domain import wilson


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
