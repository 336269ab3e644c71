"""The Bradley–Terry point estimate: ``BTFit`` and the damped Newton fit ``fit_bt``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.domain import theta_to_elo
from core.stats import bt as _bt
from core.stats.bt.data import Comparisons
from core.stats.bt.diagnostics import DEFAULT_MIN_BATTLES, FitIssue, _components, _gauge_issue, diagnose
from core.stats.bt.gauge import _centre, _gauge, _gauge_weights
from core.stats.bt.likelihood import gradient, information, loglik
from core.stats.bt.linalg import _solve_spd
from core.stats.bt.records import _records

if TYPE_CHECKING:
    import pandas as pd

FALLBACK_LAM = 0.01


@dataclass(frozen=True)
class BTFit:
    """A Bradley–Terry fit: θ (per component), Elo, feature coefficients, diagnostics.

    ``lam`` is the penalty actually used: when the unpenalised MLE does not
    exist it is the fallback ridge and ``well_defined`` is False.  ``anchors``
    marks the models whose mean θ is 0 in each component (over all members
    where a component has none): the well-identified ones for λ = 0, all of
    them for a requested ridge; None means all.
    ``loglik`` is the objective at the per-component centred θ (with λ > 0 the
    penalty is not invariant to the shift to the anchors' mean).
    """

    models: tuple
    theta: np.ndarray
    coef: np.ndarray
    feature_names: tuple[str, ...]
    converged: bool
    iterations: int
    grad_norm: float
    lam: float
    n_battles: np.ndarray
    issues: tuple[FitIssue, ...]
    well_defined: bool
    loglik: float
    components: np.ndarray  # component label per model (0 = largest)
    solver: str = "dense"  # how the Newton steps were solved: 'dense' or 'sparse'
    anchors: np.ndarray | None = None  # bool per model: the well-identified models that fix the gauge

    def gauge_weights(self) -> np.ndarray:
        """Per model, its weight in its component's reference mean (sums to 1 per component)."""
        anchors = np.ones(len(self.models), bool) if self.anchors is None else self.anchors
        return _gauge_weights(self.components, anchors)

    @property
    def elo(self) -> np.ndarray:
        return theta_to_elo(self.theta, centre=False)  # θ is gauge-fixed by the fit

    @property
    def beta(self) -> np.ndarray:
        """All parameters: θ then feature coefficients."""
        return np.concatenate([self.theta, self.coef])

    def frame(self) -> pd.DataFrame:
        """model, elo, rank, n_battles, theta; best first."""
        import pandas as pd

        df = pd.DataFrame(
            {"model": list(self.models), "elo": self.elo, "n_battles": self.n_battles, "theta": self.theta}
        )
        df["rank"] = df["elo"].rank(ascending=False, method="min").astype(int)
        return df.sort_values("elo", ascending=False, kind="stable").reset_index(drop=True)


def fit_bt(
    c: Comparisons,
    lam: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
    theta0: np.ndarray | None = None,
    fallback_lam: float = FALLBACK_LAM,
    min_battles: int = DEFAULT_MIN_BATTLES,
    solver: str = "auto",
    diagnostics: bool = True,
) -> BTFit:
    """Maximum-likelihood (or L2-penalised) Bradley–Terry fit by damped Newton.

    Converged when the largest gradient entry per unit of battle weight is
    below ``tol`` (or the step vanishes).  When ``lam == 0`` and the MLE does
    not exist (perfect records), the fit is made with ``fallback_lam``
    instead and says so (``well_defined=False``, ``lam`` = the penalty used,
    an issue naming the models): finite numbers, never a silent ±∞.  A
    disconnected graph is fitted per component.

    Gauge: with ``lam == 0`` (the MLE, or its fallback ridge) θ is shifted per
    component so that its well-identified models (module docstring) have
    mean 0 — the point estimates equal the per-component centred ones minus
    that mean — and a 'gauge' issue names the models left out.  With a
    requested ``lam > 0`` the penalty fixes the location (the optimum is
    centred per component) and θ is that optimum.

    ``solver``: 'dense' solves each Newton step with a Cholesky of the full
    information matrix (O(m³) time, O(m²) memory); 'sparse' with
    Jacobi-preconditioned conjugate gradients on the sparse information
    (O(cells) per CG iteration), which is what makes 100,000 models
    possible; 'auto' picks sparse above ``SPARSE_MIN_MODELS`` models.  Both
    solve the same Newton equations to round-off, so they give the same fit.

    ``diagnostics=False`` (only with ``lam > 0``) skips the existence and
    thin-model checks and reports no issues: for many penalised refits of
    one design where only θ is read (the leave-one-model-out folds).
    """
    if lam < 0:
        raise ValueError("lam must be >= 0")
    if solver not in ("auto", "dense", "sparse"):
        raise ValueError(f"unknown solver {solver!r}: expected 'auto', 'dense' or 'sparse'")
    m, k = c.n_models, c.n_features
    use_sparse = solver == "sparse" or (solver == "auto" and m > _bt.SPARSE_MIN_MODELS)
    if diagnostics:
        issues, comps, well_defined = diagnose(c, min_battles=min_battles)
    elif lam > 0:
        # Many penalised refits of one design (leave-one-model-out folds) need θ only: the penalised optimum
        # always exists, so the existence and thin-model checks are skipped, not their components.
        issues, comps, well_defined = [], (_components(c) if m else np.zeros(0, int)), True
    else:
        raise ValueError("diagnostics=False needs lam > 0: without a penalty the checks decide the fit")
    eff_lam = lam
    if lam == 0 and not well_defined:
        eff_lam = fallback_lam
        issues.append(
            FitIssue(
                "regularised",
                (),
                f"shown: a ridge-regularised fit (λ = {fallback_lam}) so that every model gets a "
                "finite Elo; read the positions of the models above as bounds, not estimates",
            )
        )
    if use_sparse:
        from core.stats.bt.sparse_linalg import _sparse_newton  # scipy: loaded on this path only

        newton_step = _sparse_newton(c, comps, eff_lam)
    else:
        newton_step = _dense_newton(c, comps, eff_lam)
    beta = np.zeros(m + k)
    if theta0 is not None:
        beta[:m] = _centre(np.asarray(theta0, dtype=float), comps)
    total = max(float(c.n.sum()), 1.0)
    obj = loglik(c, beta, eff_lam)
    converged = False
    it = 0
    gnorm = float("inf")
    while True:
        g = gradient(c, beta, eff_lam)
        gnorm = float(np.max(np.abs(g))) / total if len(g) else 0.0
        if gnorm < tol:
            converged = True
            break
        if it >= max_iter:
            break
        step = newton_step(beta, g)
        # Backtracking keeps the ascent monotone far from the optimum (large
        # steps on nearly separated data); near it the full step is taken.
        t = 1.0
        for _ in range(40):
            new = beta + t * step
            new_obj = loglik(c, new, eff_lam)
            if new_obj >= obj - 1e-12 * abs(obj):
                break
            t *= 0.5
        beta, obj = new, new_obj
        it += 1
        if np.max(np.abs(t * step)) < 1e-13:
            converged = True
            break
    # Report in the anchored gauge (module docstring); iterates stayed centred.
    # A requested ridge is not shift-invariant: its optimum, centred per
    # component, is the estimate, so there is no gauge to choose.
    anchors = _records(c).anchors if lam == 0 else np.ones(m, bool)
    beta[:m] = _centre(beta[:m], comps, anchors)
    gauge_issue = _gauge_issue(c, comps, anchors)
    if gauge_issue is not None:
        issues.append(gauge_issue)
    if not converged:
        issues.append(
            FitIssue(
                "not_converged",
                (),
                f"Newton did not converge in {max_iter} iterations (gradient {gnorm:.2e} per battle)",
            )
        )
    return BTFit(
        models=c.models,
        theta=beta[:m],
        coef=beta[m:],
        feature_names=c.feature_names,
        converged=converged,
        iterations=it,
        grad_norm=gnorm,
        lam=eff_lam,
        n_battles=c.battles_per_model(),
        issues=tuple(issues),
        well_defined=well_defined,
        loglik=obj,
        components=comps,
        solver="sparse" if use_sparse else "dense",
        anchors=anchors,
    )


NewtonStep = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dense_newton(c: Comparisons, comps: np.ndarray, lam: float) -> NewtonStep:
    """Newton step (β, gradient) → H⁻¹g on the centred subspace, by Cholesky of the dense information."""
    # Adding the gauge projector leaves Newton steps on the centred subspace
    # unchanged (1 is an eigenvector of the information with eigenvalue λ and
    # the gradient has no component along it) and makes the matrix definite.
    gauge = _gauge(comps, c.n_models, c.n_features)
    return lambda beta, g: _solve_spd(information(c, beta, lam) + gauge, g)
