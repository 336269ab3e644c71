"""The Elo scale shared by every rating method (METHODS.md §1)."""

from __future__ import annotations

import math

import numpy as np

ELO_BASE = 1500.0
ELO_PER_LOGIT = 400.0 / math.log(10.0)


def theta_to_elo(theta: np.ndarray) -> np.ndarray:
    """Centre logit strengths and map them to the Elo scale."""
    theta = np.asarray(theta, dtype=float)
    return ELO_BASE + ELO_PER_LOGIT * (theta - theta.mean())


def logit_to_elo_units(x):
    """Convert a logit difference (or standard error) to Elo points."""
    return ELO_PER_LOGIT * np.asarray(x, dtype=float)


def sigmoid(x):
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out
