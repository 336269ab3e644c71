"""Ill-posedness of a fit: graph components, existence of the MLE (Ford's condition), thin and degenerate records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.stats import bt as _bt
from core.stats.bt.data import Comparisons
from core.stats.bt.records import _records

DEFAULT_MIN_BATTLES = 10


@dataclass(frozen=True)
class FitIssue:
    """A reason to read a fit with care: which models, and why."""

    # 'disconnected' | 'no_mle' | 'few_battles' | 'not_converged' | 'regularised' | 'degenerate' | 'gauge'
    kind: str
    models: tuple
    message: str

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict:
        return {"kind": self.kind, "models": list(self.models), "message": self.message}


def _components(c: Comparisons) -> np.ndarray:
    """Connected components of the comparison graph, labelled by size (0 = largest)."""
    m = c.n_models
    keep = c.n > 0
    if m <= _bt.SPARSE_MIN_MODELS:
        labels = _weak_labels(c.i[keep], c.j[keep], m)
    else:
        from core.stats.bt.sparse_linalg import _sparse_components  # scipy: loaded on this path only

        labels = _sparse_components(c.i[keep], c.j[keep], m, directed=False)[1]
    order = np.argsort(-np.bincount(labels), kind="stable")
    return np.argsort(order)[labels]


def _weak_labels(i: np.ndarray, j: np.ndarray, m: int) -> np.ndarray:
    """Component of each of ``m`` nodes joined by edges (i, j), numbered by smallest member.

    scipy's ``connected_components`` numbers them the same way, so the size
    order (ties by label) does not depend on which of the two ran.  Each round
    lowers every node's label to the smallest across its edges, then jumps
    labels to their label's label; labels only decrease, and at the fixed
    point both ends of every edge agree, on the component's smallest index.
    """
    label = np.arange(m)
    while True:
        low = np.minimum(label[i], label[j])
        new = label.copy()
        np.minimum.at(new, i, low)
        np.minimum.at(new, j, low)
        new = new[new]
        if np.array_equal(new, label):
            return np.unique(label, return_inverse=True)[1]
        label = new


def _strongly_connected_within(src: np.ndarray, dst: np.ndarray, comps: np.ndarray) -> bool:
    """Does every component reach all its members along the edges src → dst, and back?

    (Each component one strong component: Ford's condition.)  Breadth-first
    from one member per component, forwards then backwards, on a dense m×m
    adjacency: O(m²), for the dense path only.
    """
    m = len(comps)
    adj = np.zeros((m, m), bool)
    adj[src, dst] = True
    roots = np.unique(comps, return_index=True)[1]
    for step in (adj, adj.T):
        reached = np.zeros(m, bool)
        reached[roots] = True
        frontier = reached.copy()
        while frontier.any():
            frontier = step[frontier].any(axis=0) & ~reached
            reached |= frontier
        if not reached.all():
            return False
    return True


def _names(models: Sequence[Any] | np.ndarray, limit: int = 8) -> str:
    shown = ", ".join(map(str, list(models)[:limit]))
    return shown + (f", … ({len(models)} in all)" if len(models) > limit else "")


def _win_mass_edges(c: Comparisons) -> tuple[np.ndarray, np.ndarray]:
    """The directed "took win mass from" graph: an edge i → j where i won (or tied) against j at least once."""
    win = c.s > 1e-12 * np.maximum(c.n, 1)
    loss = (c.n - c.s) > 1e-12 * np.maximum(c.n, 1)
    return np.concatenate([c.i[win], c.j[loss]]), np.concatenate([c.j[win], c.i[loss]])


def separated_models(c: Comparisons) -> set[str]:
    """The models whose Elo has no maximum-likelihood value relative to the bulk of their component.

    Distinct strongly connected groups of the "took win mass from" graph are driven infinitely far apart by
    the likelihood, so only the largest group of each component has finite Elo differences among its members;
    every model outside it (the one that won its single battle, a group that never beat the rest) is
    separated.  Empty when the MLE exists.
    """
    m = c.n_models
    if m == 0:
        return set()
    from core.stats.bt.sparse_linalg import _sparse_components  # scipy: loaded on this path only

    src, dst = _win_mass_edges(c)
    _, strong = _sparse_components(src, dst, m, directed=True, connection="strong")
    _, weak = _sparse_components(src, dst, m, directed=True, connection="weak")
    size = np.bincount(strong)
    models = np.array(c.models, dtype=object)
    out: set[str] = set()
    for k in np.unique(weak):
        members = np.flatnonzero(weak == k)
        groups = strong[members]
        if len(np.unique(groups)) == 1:
            continue
        # the largest group is the reference (on a tie in size, the one holding the most battles)
        battles = np.bincount(groups, weights=c.battles_per_model()[members], minlength=len(size))
        best = max(np.unique(groups), key=lambda g: (size[g], battles[g]))
        out |= {str(x) for x in models[members[groups != best]]}
    return out


def diagnose(c: Comparisons, min_battles: int = DEFAULT_MIN_BATTLES) -> tuple[list[FitIssue], np.ndarray, bool]:
    """Ill-posedness checks: graph components, existence of the MLE, thin models.

    Returns (issues, component label per model, well_defined).  Without
    features the MLE exists iff, within each component, the directed "took
    win mass from" graph is strongly connected (Ford's condition); a group
    (a strongly connected set of models, which may have beaten each other)
    that never lost to, or never took win mass from, any model outside the
    group drives it to ±∞.  With features the same condition is reported; it
    is necessary, not sufficient (a feature can also separate the outcomes).

    Also reported: models whose own record cannot show its uncertainty
    ('degenerate': ties only or a single battle, see the module docstring).
    """
    m = c.n_models
    models = np.array(c.models, dtype=object)
    issues: list[FitIssue] = []
    comps = _components(c) if m else np.zeros(0, int)
    n_comp = int(comps.max()) + 1 if m else 0
    counts = c.battles_per_model()
    if n_comp > 1:
        desc = "; ".join("{" + _names(models[comps == k], 6) + "}" for k in range(min(n_comp, 5)))
        desc += "; …" if n_comp > 5 else ""
        issues.append(
            FitIssue(
                "disconnected",
                tuple(models[comps != 0]),
                f"the comparison graph has {n_comp} disconnected components ({desc}): Elo is only comparable "
                "within a component (each is centred on its own)",
            )
        )
    src, dst = _win_mass_edges(c)
    strong: np.ndarray | None = None
    if m <= _bt.SPARSE_MIN_MODELS and _strongly_connected_within(src, dst, comps):
        n_strong = n_comp
    elif m:
        # The groups themselves (and the order the message names them in) come from scipy's labels.
        from core.stats.bt.sparse_linalg import _sparse_components  # scipy: loaded on this path only

        n_strong, strong = _sparse_components(src, dst, m, directed=True, connection="strong")
    else:
        n_strong = 0
    well_defined = n_strong <= n_comp
    if not well_defined:
        assert strong is not None  # m > 0: there are components to condense
        # Condensation: a strong component with no edge in never lost to the
        # rest; with no edge out it never won.  (Models without battles are
        # their own component and not an MLE problem.)
        s_src, s_dst = strong[src], strong[dst]
        cross = s_src != s_dst
        has_out = np.bincount(s_src[cross], minlength=n_strong) > 0
        has_in = np.bincount(s_dst[cross], minlength=n_strong) > 0
        # Vectorised over models: a long tail can have tens of thousands of
        # one-battle models, each its own strong component.  A group of one
        # never lost (or never won) at all; a larger group did, but only
        # within itself, so each is named separately.
        source, sink = (has_out & ~has_in)[strong], (has_in & ~has_out)[strong]
        group_size = np.bincount(strong, minlength=n_strong)[strong]
        winners = list(models[source])
        losers = list(models[sink])
        parts = []
        wording = (
            (
                source,
                "never lost or tied a battle",
                "never lost to or tied with a model outside it (only to each other)",
            ),
            (sink, "never won or tied a battle", "never beat or tied with a model outside it (only each other)"),
        )
        for side, alone, as_group in wording:
            if np.any(side & (group_size == 1)):
                parts.append(f"these models {alone}: {_names(models[side & (group_size == 1)])}")
            for label in np.unique(strong[side & (group_size > 1)])[:5]:
                parts.append(f"the group {{{_names(models[strong == label])}}} {as_group}")
        issues.append(
            FitIssue(
                "no_mle",
                tuple(winners + losers),
                "the maximum-likelihood Elo does not exist (it is ±∞) because "
                + "; ".join(parts or ["some models are separated by perfect records"]),
            )
        )
    thin = np.flatnonzero(counts < min_battles)
    if len(thin):
        issues.append(
            FitIssue(
                "few_battles",
                tuple(models[thin]),
                f"{len(thin)} model(s) have fewer than {min_battles} battles ({_names(models[thin])}): "
                "their Elo is very uncertain",
            )
        )
    rec = _records(c)
    weak = rec.constant | (rec.single & (rec.battles > 0))
    if weak.any():
        parts = []
        if rec.constant.any():
            parts.append(
                f"only ties (or one repeated soft target): {_names(models[rec.constant])}; their sandwich "
                "interval assumes the largest possible outcome variance p(1 − p) and they have no bootstrap interval"
            )
        single = rec.single & (rec.battles > 0)
        if single.any():
            parts.append(
                f"a single battle: {_names(models[single])}; a single win or loss has no interval, a single tie "
                "only the p(1 − p) one"
            )
        issues.append(
            FitIssue(
                "degenerate",
                tuple(models[weak]),
                f"{int(weak.sum())} model(s) have a record whose outcomes never vary, so it cannot show how "
                "uncertain their Elo is: " + "; ".join(parts),
            )
        )
    return issues, comps, well_defined


def _gauge_issue(c: Comparisons, comps: np.ndarray, anchors: np.ndarray) -> FitIssue | None:
    """Name the models left out of their component's reference mean, if any."""
    if not len(comps):
        return None
    models = np.array(c.models, dtype=object)
    n_anchor = np.bincount(comps, weights=anchors.astype(float))
    shown = ~anchors & (n_anchor[comps] > 0)
    if not shown.any():
        return None
    return FitIssue(
        "gauge",
        tuple(models[shown]),
        "1500 is the mean Elo of the well-identified models of each component (at least 2 battles, with wins "
        f"and losses, not ties only); {int(shown.sum())} model(s) are left out of that mean so that their "
        f"uncertainty does not spread to the others: {_names(models[shown])}",
    )
