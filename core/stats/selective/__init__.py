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

Modules, in the order of the method: ``uncertainty`` (per-instance scores and their quality), ``rules``
(the thresholds), ``evaluation`` (calibration/test splits), ``honesty`` (risk against a known population),
``battles`` (a store's battles as instances) and ``leaderboard`` (selective leaderboards).  Every name stays
importable from ``core.stats.selective``.
"""

from __future__ import annotations

from core.stats.selective.battles import SOURCES as SOURCES
from core.stats.selective.battles import BattleProbabilities as BattleProbabilities
from core.stats.selective.battles import Instances as Instances
from core.stats.selective.battles import battle_probabilities as battle_probabilities
from core.stats.selective.battles import instances_from_battles as instances_from_battles
from core.stats.selective.evaluation import DEFAULT_ALPHAS as DEFAULT_ALPHAS
from core.stats.selective.evaluation import CurveResult as CurveResult
from core.stats.selective.evaluation import calibration_masks as calibration_masks
from core.stats.selective.evaluation import evaluate as evaluate
from core.stats.selective.honesty import simulate_judge as simulate_judge
from core.stats.selective.honesty import simulated_violation_rates as simulated_violation_rates
from core.stats.selective.honesty import violation_rates as violation_rates
from core.stats.selective.leaderboard import LEADERBOARDS as LEADERBOARDS
from core.stats.selective.leaderboard import LeaderboardPart as LeaderboardPart
from core.stats.selective.leaderboard import SelectiveLeaderboard as SelectiveLeaderboard
from core.stats.selective.leaderboard import fit_selective_leaderboard as fit_selective_leaderboard
from core.stats.selective.leaderboard import selective_leaderboards as selective_leaderboards
from core.stats.selective.rules import METHODS as METHODS
from core.stats.selective.rules import THRESHOLD_METHODS as THRESHOLD_METHODS
from core.stats.selective.rules import Threshold as Threshold
from core.stats.selective.rules import accept as accept
from core.stats.selective.rules import fit_threshold as fit_threshold
from core.stats.selective.rules import ltt_min_accepted as ltt_min_accepted
from core.stats.selective.rules import thresholds as thresholds
from core.stats.selective.uncertainty import Quality as Quality
from core.stats.selective.uncertainty import Uncertainty as Uncertainty
from core.stats.selective.uncertainty import auroc as auroc
from core.stats.selective.uncertainty import average_precision as average_precision
from core.stats.selective.uncertainty import binary_entropy as binary_entropy
from core.stats.selective.uncertainty import bpe as bpe
from core.stats.selective.uncertainty import from_probabilities as from_probabilities
from core.stats.selective.uncertainty import quality as quality
from core.stats.selective.uncertainty import single_order as single_order
