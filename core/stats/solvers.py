"""Globally convergent one-dimensional solves for concave objectives (METHODS §10).

Every placement in the project (a held-out model against fixed anchors, a new
model, a model re-placed on its own battles) and the τ MLE maximise a
strictly concave function of one variable.  Plain Newton from a fixed start
is not enough there: against anchors far from the start (a strong baseline at
θ ≈ 2.5, the star design of AlpacaEval and Arena-Hard) the first step lands in
the flat tail of the likelihood, where the curvature vanishes and the next
step throws the iterate to −10⁴ or beyond.

:func:`maximise_concave_1d` keeps a bracket [lo, hi] with g(lo) > 0 > g(hi)
(g the derivative, decreasing on a concave objective) and takes the Newton
step only when it stays inside the bracket and shrinks fast enough; otherwise
it bisects.  The bracket halves at least every other iteration, so the solve
converges from any start in O(log((hi − lo)/tol)) iterations, and Newton's
quadratic rate takes over near the root.  Many independent problems (rows)
are solved at once; each row reports whether it converged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

GradHess = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(x, rows) → (g, h): the derivative and minus the second derivative at x for the problems ``rows``."""


@dataclass(frozen=True)
class Solve1D:
    """The maximisers of many 1-D concave problems.

    ``x``: the maximiser per problem (NaN where ``converged`` is False);
    ``converged``: the bracket or the step fell below the tolerance;
    ``iterations``: the iterations the slowest problem took.
    """

    x: np.ndarray
    converged: np.ndarray
    iterations: int

    @property
    def all_converged(self) -> bool:
        return bool(np.all(self.converged))


def maximise_concave_1d(
    grad_hess: GradHess,
    lo: np.ndarray,
    hi: np.ndarray,
    x0: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 300,
) -> Solve1D:
    """Maximise concave functions of one variable on brackets [lo, hi] (safeguarded Newton).

    ``grad_hess(x, rows)`` returns the derivative g and the curvature h = −g′
    (≥ 0) at ``x`` for the problems indexed by ``rows``.  The caller
    guarantees g(lo) ≥ 0 ≥ g(hi) where the maximiser is interior; where g
    keeps one sign over the whole bracket the maximiser is the bracket's end
    and is returned as such (a clamp the caller chose, e.g. the τ search
    interval).  ``x0``: the start (default the bracket's middle), moved into
    the bracket.
    """
    lo = np.array(lo, dtype=float, copy=True)
    hi = np.array(hi, dtype=float, copy=True)
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("lo and hi must be 1-D arrays of one shape")
    if np.any(~np.isfinite(lo) | ~np.isfinite(hi) | (lo > hi)):
        raise ValueError("every bracket must be finite with lo <= hi")
    n = len(lo)
    x = 0.5 * (lo + hi) if x0 is None else np.clip(np.asarray(x0, dtype=float), lo, hi)
    x = np.where(np.isfinite(x), x, 0.5 * (lo + hi))
    converged = np.zeros(n, bool)
    # The step before the last (rtsafe's guard): a Newton step not shrinking faster than that is replaced
    # by a bisection, so the bracket keeps halving even where Newton would cycle.
    older = hi - lo
    last = hi - lo
    active = np.arange(n)
    it = 0
    for it in range(1, max_iter + 1):
        if not len(active):
            it -= 1
            break
        xa = x[active]
        g, h = grad_hess(xa, active)
        broken = ~np.isfinite(g)
        if broken.any():  # a NaN derivative: no bracket update is sound, the problem is reported unconverged
            g = np.where(broken, 0.0, g)
        la, ha = lo[active], hi[active]
        la = np.where(g > 0, xa, la)
        ha = np.where(g < 0, xa, ha)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = xa + g / h
        inside = (h > 0) & np.isfinite(newton) & (newton > la) & (newton < ha)
        fast = np.abs(newton - xa) <= 0.5 * np.abs(older[active])
        take = inside & fast
        new = np.where(take, newton, 0.5 * (la + ha))
        step = np.abs(new - xa)
        older[active] = last[active]
        last[active] = step
        lo[active], hi[active] = la, ha
        x[active] = new
        scale = tol * np.maximum(1.0, np.abs(new))
        done = (g == 0) | (step <= scale) | (ha - la <= scale)
        converged[active[done & ~broken]] = True
        active = active[~(done | broken)]
    return Solve1D(np.where(converged, x, np.nan), converged, it)


ValueGradHess = Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]]
"""x → (f, g, H): a concave objective, its gradient and its Hessian (negative semi-definite)."""


@dataclass(frozen=True)
class SolveND:
    """The maximiser of a concave objective of a few variables (``x`` NaN where it did not converge)."""

    x: np.ndarray
    value: float
    converged: bool
    iterations: int


def maximise_concave(
    value_grad_hess: ValueGradHess, x0: np.ndarray, tol: float = 1e-10, max_iter: int = 100
) -> SolveND:
    """Damped Newton with a backtracking line search on a concave objective (a few variables).

    Each step solves (−H + εI)·d = g and halves it until the objective does
    not fall, so the ascent is monotone from any start; converged when the
    largest gradient entry (scaled by max(1, |f|)) or the step falls below
    ``tol`` at a point of non-degenerate curvature.  An objective without a
    finite maximiser (separated data) drifts into a flat tail, where the
    curvature vanishes: it is reported unconverged.
    """
    x = np.array(x0, dtype=float, copy=True)
    f, g, h = value_grad_hess(x)
    for it in range(1, max_iter + 1):
        if not np.all(np.isfinite(g)) or not np.isfinite(f):
            return SolveND(np.full_like(x, np.nan), float("nan"), False, it)
        if np.max(np.abs(g)) <= tol * max(1.0, abs(f)):
            return SolveND(x, f, _curved(h), it - 1)
        neg = -h + 1e-12 * max(1.0, float(np.max(np.abs(np.diag(h))))) * np.eye(len(x))
        try:
            d = np.linalg.solve(neg, g)
        except np.linalg.LinAlgError:
            d = g  # a gradient step where the curvature is singular
        t = 1.0
        for _ in range(60):
            new = x + t * d
            f_new, g_new, h_new = value_grad_hess(new)
            if np.isfinite(f_new) and f_new >= f - 1e-12 * abs(f):
                break
            t *= 0.5
        else:
            return SolveND(x, f, False, it)
        step = float(np.max(np.abs(t * d)))
        x, f, g, h = new, f_new, g_new, h_new
        if step <= tol * max(1.0, float(np.max(np.abs(x)))):
            return SolveND(x, f, _curved(h), it)
    return SolveND(x, f, False, max_iter)


def _curved(h: np.ndarray) -> bool:
    """A maximum, not a flat tail: the curvature there is well conditioned.

    On separated data the gradient vanishes only at infinity, and an iterate
    far out in the tail passes any gradient test; its curvature has vanished
    too, which is what tells the two apart.
    """
    eig = np.linalg.eigvalsh(-0.5 * (h + h.T))
    return bool(eig.min() > 1e-10 * max(1.0, float(eig.max())) and eig.min() > 1e-12)
