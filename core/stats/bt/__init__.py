"""Bradley–Terry by Newton's method on pair-aggregated sufficient statistics.

Model (METHODS.md §1): ``P(a ≻ b) = σ(θ_a − θ_b + wᵀx)``; maximise
``Σ_rows [s·ln σ(η) + (n − s)·ln σ(−η)] − (λ/2)‖θ‖²`` where each row is a
*cell* of battles: an ordered pair (or a pair and feature vector, or a pair
and outcome) with ``n = Σ w`` and ``s = Σ w·y``.  The log-likelihood depends
on the battles only through these sums, for hard labels, ties and soft
targets alike, so a fit costs O(#cells) per iteration whatever the number of
battles.  Features are not penalised.

The Hessian of the θ block is a weighted graph Laplacian: singular along the
all-ones vector of each connected component (only differences are
identified).  Newton iterates are kept centred per component: the projector
onto those directions is added to the Hessian, which leaves the Newton step
unchanged on the centred subspace and makes the system positive definite, so
every solve is a Cholesky solve.  (Cholesky also keeps small solves fast on a
busy machine, where multithreaded LU factorisations stall.)

The reported gauge of a maximum-likelihood fit (λ = 0, or its fallback
ridge) is different: each component's 1500 is the mean of its
*well-identified* models only (see "Degenerate information" below), i.e. the
centred θ is shifted by minus the mean centred θ of those models.  A model
with one battle or a perfect record has a huge (or infinite) variance; with
plain centring it would pass Var(θ)/m² of it, and its covariances, to every
other model's interval.  A requested ridge (λ > 0) has no gauge freedom: its
penalty makes the per-component centred θ the unique optimum, which is kept.

Large tables (``SPARSE_MIN_MODELS``; thousands of models with a few battles
each, as in an arena's long tail) never form an m×m matrix: the information
is a sparse Laplacian (plus feature blocks), Newton steps are solved by
Jacobi-preconditioned conjugate gradients, which stay on the centred
subspace, and sandwich SEs by one sparse solve per model
(:func:`sandwich_variances`), so only a chosen subset gets SEs beyond
``SE_ALL_MAX_MODELS`` models.

Uncertainty
-----------
* Sandwich ``H⁺ G H⁺`` with ``G`` the sum of per-battle gradient outer
  products, exact from the cell sums (``n, s`` and ``ss = Σ w·y²`` or a
  homogeneous cell); without ``ss`` a cell whose battles may differ is used as
  a cluster (its summed gradient), which is still consistent but noisier.
* Battle bootstrap: resampling the N battles with replacement is a
  multinomial draw of cell counts over cells of identical battles; the
  per-battle Poisson(1) bootstrap draws Poisson cell counts.  All replicates
  share the pair structure, so they are solved together by a Newton iteration
  preconditioned with the point estimate's information matrix.

Degenerate information (METHODS §10)
------------------------------------
Per model, from its own battles (:func:`_records`):

* *well identified*: at least two battles, with both win mass and loss mass
  (ties count as half of each), and outcomes that vary (not a constant
  record, below).  Then its MLE is finite given the others, its information
  is bounded away from zero and its sandwich variance is estimated from its
  own residuals; these models define the gauge.  A ties-only record has win
  and loss mass but its variance is a stated bound, not an estimate: in the
  gauge it would pass that bound, Var/n², to every other model (two tie
  votes among ten models widened every interval by half).
  (A higher battle threshold such as ``DEFAULT_MIN_BATTLES`` would move the
  reference of long-tailed leaderboards, where most models have a handful of
  battles but finite, moderate variances; thin models are reported as
  ``few_battles`` instead.)  A component without such models is centred on
  all its members.
* *perfect record* (no win mass or no loss mass, e.g. a single win): the MLE
  is ±∞, the shown Elo is a ridge value, so both intervals are undefined
  (NaN) rather than a statement about the ridge.
* *constant record* (every battle has the same target in (0, 1): ties only,
  which includes a single tie): the MLE exists but the sandwich estimates the
  outcome variance by the squared residuals, which are (near) zero when the
  outcome never varied: zero-width intervals, or a copy of the single
  opponent's.  Their battles' meat is raised to the largest variance a target
  in [0, 1] with mean p can have, p(1 − p) (the binary-outcome variance):
  a stated, conservative interval.  Resampling a record that never varies
  cannot show its spread either, so their bootstrap interval is undefined.
* In a bootstrap, a replicate that lacks all of a model's battles says
  nothing about it (its value would be the ridge prior, 1500).  Such
  replicates are left out of that model's interval, and when they exceed
  ``BOOT_MAX_MISSING`` (2.5 %, one tail of a 95 % interval, so that they
  could not decide a bound) its interval is undefined.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The package is split one concept per module (data, likelihood, gauge, records, linalg, diagnostics, fit,
# sandwich, leaderboard; the scipy ones below).  It exports the public API; a private helper is imported
# (and, in a test, replaced) from its own module.
#
# The solver thresholds (SPARSE_MIN_MODELS, SE_ALL_MAX_MODELS, SE_TOP_MODELS, SPLU_MAX_MODELS, DENSE_SPEEDUP)
# are public knobs: the modules read them at call time as ``_bt.NAME`` through this package, so an assignment
# to ``core.stats.bt.NAME`` reaches every reader.
#
# pandas and scipy cost ~0.5 s to import, more than a whole dense fit of a 1M-battle file
# (`python -m core bt FILE`).  The dense path (fit and sandwich up to SPARSE_MIN_MODELS models) uses numpy
# only, and the modules it needs never import scipy.  The modules that do (the sparse solver and graph
# algorithms, the sparse sandwich, the batch fits and the bootstrap) import it at their top and are loaded
# from here on first use of one of their names (``__getattr__`` below).  pandas stays a function-level import
# of the few functions that build or return frames.
from core.stats.bt.data import CLUSTER_COLUMNS as CLUSTER_COLUMNS
from core.stats.bt.data import ArrayLike as ArrayLike
from core.stats.bt.data import Comparisons as Comparisons
from core.stats.bt.data import comparisons_from_battles as comparisons_from_battles
from core.stats.bt.data import comparisons_from_pair_table as comparisons_from_pair_table
from core.stats.bt.diagnostics import DEFAULT_MIN_BATTLES as DEFAULT_MIN_BATTLES
from core.stats.bt.diagnostics import FitIssue as FitIssue
from core.stats.bt.diagnostics import diagnose as diagnose
from core.stats.bt.diagnostics import separated_models as separated_models
from core.stats.bt.fit import FALLBACK_LAM as FALLBACK_LAM
from core.stats.bt.fit import BTFit as BTFit
from core.stats.bt.fit import NewtonStep as NewtonStep
from core.stats.bt.fit import fit_bt as fit_bt
from core.stats.bt.leaderboard import LeaderboardFit as LeaderboardFit
from core.stats.bt.leaderboard import fit_with_ci as fit_with_ci
from core.stats.bt.leaderboard import ratings_from_pairs as ratings_from_pairs
from core.stats.bt.leaderboard import set_apart as set_apart
from core.stats.bt.likelihood import gradient as gradient
from core.stats.bt.likelihood import information as information
from core.stats.bt.likelihood import loglik as loglik
from core.stats.bt.linalg import DENSE_SPEEDUP as DENSE_SPEEDUP
from core.stats.bt.linalg import SE_ALL_MAX_MODELS as SE_ALL_MAX_MODELS
from core.stats.bt.linalg import SE_TOP_MODELS as SE_TOP_MODELS
from core.stats.bt.linalg import SPARSE_MIN_MODELS as SPARSE_MIN_MODELS
from core.stats.bt.linalg import SPLU_MAX_MODELS as SPLU_MAX_MODELS
from core.stats.bt.sandwich import Intervals as Intervals
from core.stats.bt.sandwich import sandwich_cov as sandwich_cov
from core.stats.bt.sandwich import sandwich_intervals as sandwich_intervals

if TYPE_CHECKING:
    from core.stats.bt.batch import BatchFit as BatchFit
    from core.stats.bt.batch import fit_bt_batch as fit_bt_batch
    from core.stats.bt.resampling import BOOT_MAX_MISSING as BOOT_MAX_MISSING
    from core.stats.bt.resampling import bootstrap as bootstrap
    from core.stats.bt.sandwich_sparse import sandwich_variances as sandwich_variances
    from core.stats.bt.sparse_linalg import FILL_PROFILE_SHARE as FILL_PROFILE_SHARE
    from core.stats.bt.sparse_linalg import HUB_SHARE as HUB_SHARE

# Names of the scipy modules, loaded on first use.
_LAZY = {
    "batch": ("BatchFit", "fit_bt_batch"),
    "resampling": (
        "BOOT_MAX_MISSING",
        "bootstrap",
    ),
    "sandwich_sparse": ("sandwich_variances",),
    "sparse_linalg": (
        "FILL_PROFILE_SHARE",
        "HUB_SHARE",
    ),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    # Kept here: later reads skip this function, and a replacement assigned to the package (a test's
    # monkeypatch) is not overwritten by a second load.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "Comparisons",
    "comparisons_from_battles",
    "comparisons_from_pair_table",
    "BTFit",
    "FitIssue",
    "fit_bt",
    "fit_bt_batch",
    "BatchFit",
    "loglik",
    "gradient",
    "information",
    "sandwich_cov",
    "sandwich_intervals",
    "sandwich_variances",
    "SPARSE_MIN_MODELS",
    "SE_ALL_MAX_MODELS",
    "SE_TOP_MODELS",
    "bootstrap",
    "Intervals",
    "LeaderboardFit",
    "fit_with_ci",
    "diagnose",
    "ratings_from_pairs",
]
