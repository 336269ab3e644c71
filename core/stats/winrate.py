"""AlpacaEval-style win rates against one baseline, raw and length-controlled.

Every model is judged against the same baseline on a shared set of
instructions; ``p`` is the judge's probability that the model's answer beats
the baseline's (1 = model better, 0 = baseline better, 0.5 = tie, soft values
allowed).  Raw statistics follow AlpacaEval 2 exactly, so that the published
leaderboard numbers are reproduced:

* ``win_rate = 100·mean(p)``, ``standard_error = 100·sd(p, ddof=1)/√n``;
* ``discrete_win_rate = 100·mean(1[p > ½] + ½·1[p = ½])``.

Length-controlled (LC) win rate, Dubois et al. 2024 ("Length-Controlled
AlpacaEval: A Simple Way to Debias Automatic Evaluators").  LLM judges favour
longer answers, so a raw win rate mixes quality with verbosity.  The paper fits,
for model m against baseline b on instruction x, the GLM

    P(m ≻ b | x) = σ(θ_m + φ_m·tanh(Δlen_x / sd_m(Δlen)) + ψ_m·γ_x)

with ``Δlen_x = len(m's answer) − len(b's answer)``, ``sd_m`` the standard
deviation of Δlen over m's instructions and ``γ_x`` a per-instruction
difficulty, and reports the counterfactual win rate with no length
difference, ``LC = 100·mean_x σ(θ_m + ψ_m·γ_x)``.  Because tanh is bounded the
length term can move the prediction only so far, which is what makes the
correction hard to game by padding answers.

AlpacaEval's own design (``fixed_difficulty``): every model's GLM is fitted alone, with its own length slope
φ_m under a normal prior (the judge's known taste for length, ``slope_prior``), against difficulties γ fixed in
advance, so a model's LC does not depend on the other models being scored; ``lc_standard_error`` is then as
AlpacaEval defines it, ``100·sd_x(σ(θ + ψγ_x))/√n``, and ``lc_standard_error_glm`` the sandwich SE below.  The
app uses it wherever the shipped estimate of AlpacaEval's γ covers the instructions
(``core.stats.lc_reference``); otherwise γ is fitted over the frame's models as follows.

Implementation (written from the paper's description; numpy/scipy only).  By default
(``length_slope="shared"``) the length slope is ONE φ for every model, fitted jointly with the
difficulties (``fit_difficulty_shared_slope``, penalty ``SHARED_DIFFICULTY_LAMBDA = 1``), and
each model's GLM holds it fixed: the judge's taste for length is the judge's, and a per-model
φ_m is nearly collinear with θ_m for a model whose answers are all far from the baseline's
length (``gpt4_gamed``: LC 27.7 with φ_m, 12.5 shared, AlpacaEval publishes 12.2).  AlpacaEval
pins its slope the same way in spirit, by regularising every model's fit towards annotations of
length-gamed copies of the baseline.  Over the 15 models of ``alpaca_eval_2`` and
``alpaca_eval_more`` the mean |Δ| to the published LC falls from 4.96 to 1.89 points (max 15.5
→ 4.4, Spearman 0.904 → 0.971; ``benchmarks/bench_lc_agreement.py``).  ``lc_caveat`` names the
models whose LC moves by more than ``SPEC_SENSITIVITY`` points between the two forms.  The
per-model form below (``length_slope="model"``) is kept for that comparison:

1. *Difficulty, fitted jointly on the data at hand.*  AlpacaEval downloads a
   γ fitted once over its whole public leaderboard; here there is no such
   reference, so γ is fitted over all the models in the frame by maximising
   the soft-label likelihood of ``σ(θ_m + φ_m·tanh(Δlen_x/sd_m) + γ_x)`` with
   an L2 penalty ``DIFFICULTY_LAMBDA/2·‖γ‖²`` (which identifies γ against the
   θ's and keeps the γ of an instruction every model lost or won finite), then
   centring γ; γ is then held fixed.  The per-model length term is in this fit
   on purpose: the baseline's answer length is shared by every model on an
   instruction, so with a handful of models that are all shorter than the
   baseline a length-blind ``σ(θ_m + γ_x)`` makes "the baseline wrote a long
   answer here" look like "this instruction is hard", and the second stage
   then finds little length effect left to remove (on AlpacaEval 2's data the
   length-blind variant recovers well under half of the published LC
   correction).  With few models, all much weaker (or stronger) than the
   baseline, γ is still noisier than AlpacaEval's leaderboard-wide one, so LC
   values agree with the published ones only approximately (about 1.3 points
   on average for five models, see the tests); raw values agree exactly.
2. *Per-model GLM.*  (θ_m, φ_m, ψ_m) minimise the soft-label cross-entropy
   plus ``LC_LAMBDA/2·‖(θ, φ, ψ)‖²``: an L2 penalty towards the baseline,
   whose parameters are 0 (the baseline against itself is a coin toss, LC
   50), so that a model with little or degenerate data is pulled towards "as
   good as the baseline" rather than towards an extreme.  Both fits use
   L-BFGS-B with analytic gradients.
3. *LC standard error* (``lc_standard_error_glm``; ``lc_standard_error`` is AlpacaEval's)
   by the delta method on the influence function of the LC estimator, treating
   instructions as the sampling unit: instruction x
   contributes ``(h_x − h̄)/n − ∇LCᵀ H⁻¹ s_x`` where ``h_x = σ(θ + ψγ_x)``,
   ``s_x`` its score and ``H`` the Hessian of the penalised negative
   log-likelihood (a sandwich, so soft labels whose spread is smaller than
   Bernoulli's are not over-penalised).  With only an intercept it reduces to
   the raw ``standard_error`` formula, up to the penalty (with ``n/(n−1)`` as in ``ddof=1``).
   The uncertainty of γ itself is not propagated (γ is treated as given, as
   AlpacaEval treats its downloaded difficulty), so the SE is somewhat
   optimistic: over 40 simulated data sets (4 models × 600 instructions,
   planted length effect) the mean SE was 0.77–1.13× the Monte-Carlo spread of
   the LC estimates.  A bootstrap over instructions refitting γ would be
   closer but costs a joint fit per replicate.

Choice of the regularisation strengths: the paper only says the GLM is L2
regularised towards the baseline.  ``LC_LAMBDA = 1`` is the unit-weight ridge
on a summed log-likelihood (a N(0, 1) prior on each coefficient in logit
units): negligible against hundreds of instructions, decisive for a handful.
``DIFFICULTY_LAMBDA = 0.1`` (a prior of variance 10 on γ, i.e. light) was chosen on
AlpacaEval 2's published ``weighted_alpaca_eval_gpt4_turbo`` annotations of
five models (``tests/test_winrate_stats.py``) from a grid: the mean absolute
gap to the published LC is 1.26–1.4 points for any ``LC_LAMBDA`` in [0.5, 2]
and ``DIFFICULTY_LAMBDA`` in [0.03, 0.2], rising to ≈2.3 at ``DIFFICULTY_LAMBDA = 1`` and
≈3.4 at 3 (``LC_LAMBDA = 1``), so the choice is not a knife edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

REQUIRED_COLUMNS: tuple[str, ...] = ("instruction", "model", "p", "length", "baseline_length")
COLUMNS: tuple[str, ...] = (
    "model",
    "win_rate",
    "standard_error",
    "discrete_win_rate",
    "lc_win_rate",
    "lc_standard_error",
    "lc_standard_error_glm",
    "avg_length",
    "n",
    "lc_caveat",
)
COEFFICIENT_COLUMNS: tuple[str, ...] = ("model", "theta", "phi", "psi", "sd_delta_length", "n")

# Per-model L2 penalty on (θ, φ, ψ) towards the baseline's zeros: a prior of sd 1/√λ on each
# coefficient in logit units, negligible against 805 instructions, decisive for a handful.
LC_LAMBDA = 1.0
# L2 penalty on the instruction difficulties γ in the joint fit with a slope per model (length_slope="model"):
# light, but enough to keep the γ of an instruction that every model lost (or won) finite and to identify γ.
DIFFICULTY_LAMBDA = 0.1
# The same penalty in the default fit with one length slope for every model (length_slope="shared").  A heavier
# one (1.0) agrees better still with AlpacaEval's published LC on the 15 real models (mean |Δ| 1.00 against
# 1.89) but attenuates the slope on simulated data with a known length effect (the planted-effect tests leave
# a 5–9 point long/short gap): agreement with a published column is not the truth, so the light one stays.
SHARED_DIFFICULTY_LAMBDA = DIFFICULTY_LAMBDA
# AlpacaEval's own warning that an LC win rate may be a failure of the GLM (its get_is_extreme_changes): the LC
# moved from the raw win rate by more than max(10 points, a quarter of the room) in either direction.
EXTREME_ABS, EXTREME_REL = 10.0, 4.0
# L-BFGS-B settings: the objectives are smooth and convex; tight tolerances make the fitted
# point (and the Hessian-based SE at it) reproducible to many digits.
_OPTIONS = {"maxiter": 10_000, "gtol": 1e-9, "ftol": 1e-15}


@dataclass(frozen=True)
class LCFit:
    """One model's length-controlled GLM: coefficients, LC win rate and its SE (percentages)."""

    theta: float
    phi: float
    psi: float
    lc_win_rate: float
    lc_standard_error: float
    converged: bool
    lc_spread_standard_error: float = math.nan  # AlpacaEval's: 100·sd(counterfactual predictions)/√n


@dataclass(frozen=True)
class WinRates:
    """Win rates of every model against ``baseline``.

    ``rows`` has exactly :data:`COLUMNS` (percentages 0–100), one row per model plus the
    baseline's own row (50 by definition), sorted by ``lc_win_rate`` descending, NaN last.
    ``coefficients`` holds the fitted GLM per model (:data:`COEFFICIENT_COLUMNS`), for
    inspection.  ``n_difficulty_instructions`` is the number of instructions in the joint
    difficulty fit; ``n_dropped`` the rows dropped for a missing ``p``.  ``notes`` says why
    anything is undefined or was handled specially.
    """

    rows: pd.DataFrame
    baseline: str
    n_difficulty_instructions: int
    n_dropped: int
    notes: tuple[str, ...]
    coefficients: pd.DataFrame
    # "fixed": every model fitted alone against given difficulties (its LC ignores the other models);
    # "joint": difficulties fitted over the models in the frame (an LC moves when models are added)
    difficulty_source: str = "joint"


# --------------------------------------------------------------------------------------------- raw


def discrete_preference(p: np.ndarray) -> np.ndarray:
    """AlpacaEval's discrete outcome: 1 for a win (p > ½), ½ for an exact tie, 0 for a loss."""
    return np.where(p > 0.5, 1.0, np.where(p == 0.5, 0.5, 0.0))


def mean_and_standard_error(p: np.ndarray) -> tuple[float, float]:
    """100·mean and 100·sd(ddof=1)/√n; the SE is NaN below two rows (undefined, not zero)."""
    n = len(p)
    if n == 0:
        return math.nan, math.nan
    mean = 100.0 * float(np.mean(p))
    se = 100.0 * float(np.std(p, ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
    return mean, se


# ------------------------------------------------------------------------------------- difficulty


def _softplus(eta: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, eta)


def fit_difficulty(
    model_index: np.ndarray,
    instruction_index: np.ndarray,
    p: np.ndarray,
    n_models: int,
    n_instructions: int,
    lam: float = DIFFICULTY_LAMBDA,
    length_term: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Joint soft-label fit of ``σ(θ_m + φ_m·length_term + γ_x)``; returns (θ, centred γ, converged).

    Minimises ``Σ [softplus(η) − p·η] + lam/2·‖γ‖²`` (soft-target cross-entropy, the
    likelihood of splitting each soft preference into a win of weight p and a loss of
    weight 1 − p).  θ and φ are unpenalised so neither a model's overall strength nor its
    verbosity leaks into γ; the caller must leave out models with a perfect record (their
    θ is infinite and their rows carry no information on γ in the limit).  Without
    ``length_term`` the fit is the length-blind ``σ(θ_m + γ_x)``.
    """
    if lam <= 0:
        raise ValueError(f"the difficulty penalty must be positive (it identifies γ), got {lam}")

    term = np.zeros(len(p)) if length_term is None else np.asarray(length_term, float)
    split = (n_models, n_models + n_instructions)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, gamma, phi = np.split(x, split)
        eta = theta[model_index] + phi[model_index] * term + gamma[instruction_index]
        loss = float(np.sum(_softplus(eta) - p * eta)) + 0.5 * lam * float(gamma @ gamma)
        r = expit(eta) - p
        grad = np.concatenate(
            [
                np.bincount(model_index, r, minlength=n_models),
                np.bincount(instruction_index, r, minlength=n_instructions) + lam * gamma,
                np.bincount(model_index, r * term, minlength=n_models),
            ]
        )
        return loss, grad

    # Start θ at each model's logit win rate: the optimum when every γ is 0.
    sums = np.bincount(model_index, p, minlength=n_models)
    counts = np.bincount(model_index, minlength=n_models)
    start_rate = np.clip(sums / np.maximum(counts, 1), 1e-3, 1 - 1e-3)
    x0 = np.concatenate([np.log(start_rate / (1 - start_rate)), np.zeros(n_instructions + n_models)])
    res = minimize(objective, x0, jac=True, method="L-BFGS-B", options=_OPTIONS)
    theta, gamma, _ = np.split(res.x, split)
    return theta, gamma - gamma.mean(), bool(res.success)


def fit_difficulty_shared_slope(
    model_index: np.ndarray,
    instruction_index: np.ndarray,
    p: np.ndarray,
    n_models: int,
    n_instructions: int,
    length_term: np.ndarray,
    lam: float = SHARED_DIFFICULTY_LAMBDA,
) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Joint soft-label fit of ``σ(θ_m + φ·length_term + γ_x)`` with ONE length slope φ for every model.

    Returns (θ, centred γ, φ, converged).  The judge's preference for longer answers is a
    property of the judge, not of the model being judged: one slope is identified by every
    model's length differences at once, where a per-model φ_m is nearly collinear with θ_m
    for a model whose answers are all much shorter than the baseline's (``gpt4_gamed``'s
    68-character answers: its tanh term sits near −1 on most instructions).
    """
    if lam <= 0:
        raise ValueError(f"the difficulty penalty must be positive (it identifies γ), got {lam}")
    term = np.asarray(length_term, float)
    split = (n_models, n_models + n_instructions)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, gamma, phi = np.split(x, split)
        eta = theta[model_index] + phi[0] * term + gamma[instruction_index]
        loss = float(np.sum(_softplus(eta) - p * eta)) + 0.5 * lam * float(gamma @ gamma)
        r = expit(eta) - p
        grad = np.concatenate(
            [
                np.bincount(model_index, r, minlength=n_models),
                np.bincount(instruction_index, r, minlength=n_instructions) + lam * gamma,
                [float(r @ term)],
            ]
        )
        return loss, grad

    sums = np.bincount(model_index, p, minlength=n_models)
    counts = np.bincount(model_index, minlength=n_models)
    start_rate = np.clip(sums / np.maximum(counts, 1), 1e-3, 1 - 1e-3)
    x0 = np.concatenate([np.log(start_rate / (1 - start_rate)), np.zeros(n_instructions + 1)])
    res = minimize(objective, x0, jac=True, method="L-BFGS-B", options=_OPTIONS)
    theta, gamma, phi = np.split(res.x, split)
    return theta, gamma - gamma.mean(), float(phi[0]), bool(res.success)


# ------------------------------------------------------------------------------------------ LC GLM


def length_feature(delta_length: np.ndarray) -> tuple[np.ndarray, float]:
    """``tanh(Δlen / sd(Δlen))`` and the sd (ddof=1); all zeros when the sd is 0 or undefined.

    Standardising by the model's own spread makes φ comparable across models; the
    bounded tanh caps how much any length difference can explain.
    """
    if len(delta_length) < 2:
        return np.zeros(len(delta_length)), math.nan
    sd = float(np.std(delta_length, ddof=1))
    if not sd > 0:
        return np.zeros(len(delta_length)), sd
    return np.tanh(delta_length / sd), sd


def fit_length_controlled(
    p: np.ndarray,
    length_term: np.ndarray,
    gamma: np.ndarray,
    lam: float = LC_LAMBDA,
    phi: float | None = None,
    *,
    prior_mean: tuple[float, float, float] | None = None,
    prior_precision: tuple[float, float, float] | None = None,
) -> LCFit:
    """Penalised soft-label GLM ``σ(θ + φ·length_term + ψ·γ)`` of one model vs the baseline.

    ``length_term`` is the already-transformed ``tanh(Δlen/sd)``.  The penalty
    ``lam/2·‖(θ, φ, ψ)‖²`` pulls towards the baseline (all zeros).  ``phi`` given: the
    length slope is held at that value (the shared slope of :func:`fit_difficulty_shared_slope`)
    and only (θ, ψ) are fitted and penalised.  ``prior_mean``/``prior_precision`` (for
    (θ, φ, ψ), with ``phi`` None) replace the penalty by ``½·Σ precision·(β − mean)²``: a
    normal prior, e.g. on the length slope of a judge whose taste for length is known.
    Returns the LC win rate ``100·mean σ(θ + ψγ)``, its influence-function (sandwich
    delta-method) SE, both in percent (φ and γ treated as given), and AlpacaEval's
    ``lc_standard_error``: the standard error of the mean of the counterfactual predictions
    over instructions, which leaves out the GLM's own estimation error.
    """
    n = len(p)
    if n < 2:
        raise ValueError(f"the LC GLM needs at least two comparisons, got {n}")
    if lam < 0:
        raise ValueError(f"the LC penalty must be non-negative, got {lam}")
    if phi is None:
        X = np.column_stack([np.ones(n), length_term, gamma])
        offset = np.zeros(n)
    else:  # the slope is given: (θ, ψ) only, the length term an offset
        X = np.column_stack([np.ones(n), gamma])
        offset = phi * np.asarray(length_term, float)
    k = X.shape[1]
    if (prior_mean is None) != (prior_precision is None) or (prior_mean is not None and phi is not None):
        raise ValueError("a prior needs both its mean and its precision, and the slope free (phi None)")
    centre = np.zeros(k) if prior_mean is None else np.asarray(prior_mean, float)
    precision = np.full(k, float(lam)) if prior_precision is None else np.asarray(prior_precision, float)
    if np.any(precision < 0):
        raise ValueError(f"prior precisions must be non-negative, got {precision.tolist()}")

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = X @ beta + offset
        away = beta - centre
        loss = float(np.sum(_softplus(eta) - p * eta)) + 0.5 * float(precision @ (away * away))
        return loss, X.T @ (expit(eta) - p) + precision * away

    res = minimize(objective, centre.copy(), jac=True, method="L-BFGS-B", options=_OPTIONS)
    beta = res.x
    mu = expit(X @ beta + offset)
    hessian = (X * (mu * (1 - mu))[:, None]).T @ X + np.diag(precision)
    scores = X * (mu - p)[:, None]

    counterfactual = X.copy()
    if phi is None:
        counterfactual[:, 1] = 0.0  # no length difference
    h = expit(counterfactual @ beta)
    grad_lc = (counterfactual * (h * (1 - h))[:, None]).mean(axis=0)
    try:
        direction = np.linalg.solve(hessian, grad_lc)
    except np.linalg.LinAlgError:  # only possible with lam = 0 and collinear features
        direction = np.linalg.lstsq(hessian, grad_lc, rcond=None)[0]
    influence = (h - h.mean()) / n - scores @ direction
    se = math.sqrt(float(influence @ influence) * n / (n - 1))
    return LCFit(
        theta=float(beta[0]),
        phi=float(beta[1]) if phi is None else float(phi),
        psi=float(beta[2]) if phi is None else float(beta[1]),
        lc_win_rate=100.0 * float(h.mean()),
        lc_standard_error=100.0 * se,
        converged=bool(res.success),
        lc_spread_standard_error=100.0 * float(np.std(h, ddof=1)) / math.sqrt(n),
    )


# ------------------------------------------------------------------------------------- validation


def _numeric(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column]
    if values.dtype == bool or not (pd.api.types.is_numeric_dtype(values) or values.dtype == object):
        raise ValueError(f"column {column!r} must be numeric, got dtype {values.dtype}")
    try:
        return pd.to_numeric(values, errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {column!r} must be numeric: {exc}") from exc


def _validated(frame: pd.DataFrame, baseline: str) -> tuple[pd.DataFrame, int]:
    """Checked copy of the comparisons with NaN-p rows dropped, and the number dropped."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"comparisons must be a pandas DataFrame, got {type(frame).__name__}")
    if not isinstance(baseline, str) or not baseline:
        raise ValueError(f"the baseline must be a non-empty model name, got {baseline!r}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"comparisons are missing column(s) {missing}; required: {list(REQUIRED_COLUMNS)}")
    if frame.empty:
        raise ValueError("no comparisons: the frame is empty")
    df = frame.loc[:, list(REQUIRED_COLUMNS)].copy()
    bad_model = df["model"].map(lambda m: not isinstance(m, str) or not m)
    if bad_model.any():
        raise ValueError(f"column 'model' must hold non-empty strings; e.g. row {df.index[bad_model.to_numpy()][0]!r}")
    if df["instruction"].isna().any():
        raise ValueError(f"column 'instruction' has missing values; e.g. row {df.index[df['instruction'].isna()][0]!r}")
    try:
        duplicated = df.duplicated(["model", "instruction"])
    except TypeError as exc:
        raise ValueError(f"column 'instruction' must hold hashable keys: {exc}") from exc
    if duplicated.any():
        first = df.loc[duplicated].iloc[0]
        raise ValueError(
            f"model {first['model']!r} is compared more than once on instruction {first['instruction']!r}; "
            "expected one row per (instruction, model)"
        )
    for column in ("p", "length", "baseline_length"):
        df[column] = _numeric(df, column)
    keep = ~np.isnan(df["p"].to_numpy())
    n_dropped = int((~keep).sum())
    df = df.loc[keep]
    if df.empty:
        raise ValueError("no comparisons left: every p is missing")
    p = df["p"].to_numpy()
    out = (p < 0) | (p > 1)
    if out.any():
        raise ValueError(f"p must be in [0, 1]; got {p[out][0]!r} for model {df['model'].to_numpy()[out][0]!r}")
    for column in ("length", "baseline_length"):
        x = df[column].to_numpy()
        bad = ~np.isfinite(x) | (x < 0)
        if bad.any():
            raise ValueError(
                f"column {column!r} must be a finite length ≥ 0 wherever p is present; got {x[bad][0]!r} "
                f"for model {df['model'].to_numpy()[bad][0]!r}"
            )
    return df, n_dropped


# The LC of a model rests on the length term's specification when one slope for all models and one slope per
# model give LCs further apart than this many points (or twice the LC's standard error, if larger).
SPEC_SENSITIVITY = 3.0


def lc_caveat(win_rate: float, lc: float, lc_se: float = math.nan, lc_per_model: float = math.nan) -> str:
    """Why an LC win rate should be read with care ('' when nothing to say).

    Two rules, each stated where it fires:

    * the LC depends on how the length term is specified: with one slope per model
      (the paper's GLM) the model's LC differs from the shared-slope LC by more than
      ``max(SPEC_SENSITIVITY, 2·SE)`` points, so the number is the fitted length term's as
      much as the model's (a model whose answers are all far shorter or longer than the
      baseline's, where a per-model slope is nearly collinear with its strength);
    * AlpacaEval's own warning: the LC moved from the win rate by more than ``max(10
      points, a quarter of the room towards 0 or 100)`` (its ``get_is_extreme_changes``).
    """
    if not (math.isfinite(win_rate) and math.isfinite(lc)):
        return ""
    if math.isfinite(lc_per_model):
        bound = max(SPEC_SENSITIVITY, 2 * lc_se if math.isfinite(lc_se) else 0.0)
        if abs(lc - lc_per_model) > bound:
            return (
                f"LC depends on the length term's form: {lc_per_model:.1f} with a length slope per model, "
                f"{lc:.1f} with one slope for all (answers far from the baseline's length)"
            )
    low = min(win_rate - win_rate / EXTREME_REL, win_rate - EXTREME_ABS)
    high = max(win_rate + (100 - win_rate) / EXTREME_REL, win_rate + EXTREME_ABS)
    if lc < low or lc > high:
        return (
            f"LC moved {lc - win_rate:+.1f} points from the win rate: it rests on the fitted length and "
            "difficulty terms more than on the model's own wins (AlpacaEval's warning threshold)"
        )
    return ""


# ------------------------------------------------------------------------------------------- table


def _model_record(
    name: str, p: np.ndarray, length: np.ndarray, fit: LCFit | None, sd: float
) -> tuple[dict[str, object], dict[str, object]]:
    """A model's row of :data:`COLUMNS` and of :data:`COEFFICIENT_COLUMNS` (LC undefined without a fit)."""
    wr, se = mean_and_standard_error(p)
    lc = fit.lc_win_rate if fit else math.nan
    record = {
        "model": name,
        "win_rate": wr,
        "standard_error": se,
        "discrete_win_rate": 100.0 * float(np.mean(discrete_preference(p))),
        "lc_win_rate": lc,
        "lc_standard_error": fit.lc_spread_standard_error if fit else math.nan,
        "lc_standard_error_glm": fit.lc_standard_error if fit else math.nan,
        "avg_length": float(np.mean(length)),
        "n": len(p),
        "lc_caveat": lc_caveat(wr, lc),
    }
    theta, phi, psi = (fit.theta, fit.phi, fit.psi) if fit else (math.nan, math.nan, math.nan)
    return record, {"model": name, "theta": theta, "phi": phi, "psi": psi, "sd_delta_length": sd, "n": len(p)}


def _baseline_record(baseline: str, avg_length: float, n: int) -> tuple[dict[str, object], dict[str, object]]:
    """The baseline's own row: 50 against itself by definition, every coefficient 0."""
    record = {
        "model": baseline,
        "win_rate": 50.0,
        "standard_error": 0.0,
        "discrete_win_rate": 50.0,
        "lc_win_rate": 50.0,
        "lc_standard_error": 0.0,
        "lc_standard_error_glm": 0.0,
        "avg_length": avg_length,
        "n": n,
        "lc_caveat": "",
    }
    return record, {"model": baseline, "theta": 0.0, "phi": 0.0, "psi": 0.0, "sd_delta_length": 0.0, "n": n}


def _sorted_table(records: list[dict[str, object]]) -> pd.DataFrame:
    table = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    table = table.sort_values(
        ["lc_win_rate", "win_rate", "model"], ascending=[False, False, True], na_position="last", kind="stable"
    ).reset_index(drop=True)
    table["n"] = table["n"].astype(int)
    return table


# ------------------------------------------------------------------------------------------- entry


def win_rates(
    comparisons: pd.DataFrame,
    baseline: str,
    *,
    lc_lambda: float = LC_LAMBDA,
    difficulty_lambda: float | None = None,
    length_slope: str = "shared",
    fixed_difficulty: pd.Series | None = None,
    slope_prior: tuple[float, float] | None = None,
) -> WinRates:
    """Raw, discrete and length-controlled win rates of every model against ``baseline``.

    ``comparisons`` has one row per (instruction, model) with columns ``instruction``,
    ``model``, ``p`` (probability the model beats the baseline), ``length`` and
    ``baseline_length`` (answer lengths, e.g. in characters).  Rows with a missing ``p``
    are dropped and counted; rows of the baseline against itself are ignored (its row is
    50 by definition).  ``length_slope``: "shared" (default) fits one length slope for every
    model with the difficulties, "model" one slope per model (the paper's per-model GLM);
    ``difficulty_lambda`` defaults to the one measured best for that choice.  ``lc_caveat``
    says where the LC moved from the raw win rate by more than AlpacaEval's own warning
    threshold (its ``get_is_extreme_changes``).

    ``fixed_difficulty`` (a γ for every instruction, indexed by the ``instruction`` values) is
    AlpacaEval's own design: each model is fitted alone, with its own length slope, against
    difficulties fixed in advance, so a model's LC does not depend on the other models in the
    frame; ``slope_prior`` = (mean, precision) is then a normal prior on that slope (the
    judge's known taste for length), else the slope gets the ``lc_lambda`` ridge.  Raises
    ValueError on malformed input.
    """
    if length_slope not in ("shared", "model"):
        raise ValueError(f"length_slope must be 'shared' or 'model', got {length_slope!r}")
    if difficulty_lambda is None:
        difficulty_lambda = SHARED_DIFFICULTY_LAMBDA if length_slope == "shared" else DIFFICULTY_LAMBDA
    df, n_dropped = _validated(comparisons, baseline)
    notes: list[str] = []
    if n_dropped:
        notes.append(f"{n_dropped} comparison(s) with a missing p were dropped")
    own = (df["model"] == baseline).to_numpy()
    if own.any():
        notes.append(f"{int(own.sum())} row(s) of the baseline {baseline!r} against itself were ignored")
        df = df.loc[~own]
    if df.empty:
        raise ValueError(f"no comparisons of any model other than the baseline {baseline!r}")
    if fixed_difficulty is not None:
        return _fixed_difficulty_rates(df, baseline, fixed_difficulty, slope_prior, lc_lambda, n_dropped, notes)

    model_codes, models = pd.factorize(df["model"], sort=True)
    instr_codes, instructions = pd.factorize(df["instruction"], sort=False)
    p = df["p"].to_numpy(dtype=float)
    length = df["length"].to_numpy(dtype=float)
    base_length = df["baseline_length"].to_numpy(dtype=float)
    n_models, n_instr = len(models), len(instructions)

    # Baseline lengths should agree across models answering the same instruction; average if not.
    per_instr = pd.Series(base_length).groupby(instr_codes)
    spread = (per_instr.max() - per_instr.min()).to_numpy()
    if np.any(spread > 0):
        notes.append(
            f"baseline_length differs between models on {int(np.sum(spread > 0))} instruction(s); "
            "the baseline's avg_length uses their per-instruction mean"
        )
    baseline_avg_length = float(per_instr.mean().mean())

    # Joint difficulty: every model except those with a perfect record (θ = ±∞, no information on γ).
    sums = np.bincount(model_codes, p, minlength=n_models)
    counts = np.bincount(model_codes, minlength=n_models)
    perfect = (sums == 0) | (sums == counts)
    in_fit = ~perfect[model_codes]
    for k in np.flatnonzero(perfect):
        notes.append(
            f"{models[k]}: every comparison is a {'loss' if sums[k] == 0 else 'win'}; "
            "left out of the difficulty fit, its LC comes from the regularised GLM alone"
        )
    order = np.argsort(model_codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    length_term = np.zeros(len(p))
    sds = np.full(n_models, math.nan)
    for m in range(n_models):
        rows = order[bounds[m] : bounds[m + 1]]
        length_term[rows], sds[m] = length_feature(length[rows] - base_length[rows])
    gamma = np.zeros(n_instr)
    shared_phi: float | None = 0.0 if length_slope == "shared" else None
    fitted_instr = np.unique(instr_codes[in_fit])
    if len(fitted_instr):
        fit_models, fit_model_codes = np.unique(model_codes[in_fit], return_inverse=True)
        local_instr = np.searchsorted(fitted_instr, instr_codes[in_fit])
        if length_slope == "shared":
            _, g, shared_phi, ok = fit_difficulty_shared_slope(
                fit_model_codes,
                local_instr,
                p[in_fit],
                len(fit_models),
                len(fitted_instr),
                length_term[in_fit],
                difficulty_lambda,
            )
        else:
            _, g, ok = fit_difficulty(
                fit_model_codes,
                local_instr,
                p[in_fit],
                len(fit_models),
                len(fitted_instr),
                difficulty_lambda,
                length_term[in_fit],
            )
        gamma[fitted_instr] = g
        if not ok:
            notes.append("the joint difficulty fit did not fully converge")
    if len(fitted_instr) < n_instr:
        notes.append(
            f"{n_instr - len(fitted_instr)} instruction(s) are answered only by models with a perfect record; "
            "their difficulty is set to the average (0)"
        )

    records: list[dict[str, object]] = []
    coefficients: list[dict[str, object]] = []
    for m, name in enumerate(models):
        rows = order[bounds[m] : bounds[m + 1]]
        pm = p[rows]
        n = len(rows)
        if n < 2:
            notes.append(f"{name}: only {n} comparison, standard errors and the LC win rate are undefined")
        fit: LCFit | None = None
        term, sd = length_term[rows], float(sds[m])
        if n >= 2:
            if not sd > 0:
                notes.append(f"{name}: no variation in the length difference (sd = 0), so the length term is 0")
            if np.ptp(pm) == 0:
                notes.append(
                    f"{name}: every p equals {pm[0]:g}; length and difficulty effects are unidentified "
                    "and the LC win rate is the regularised GLM's"
                )
            fit = fit_length_controlled(pm, term, gamma[instr_codes[rows]], lc_lambda, phi=shared_phi)
            if not fit.converged:
                notes.append(f"{name}: the LC GLM fit did not fully converge")
        record, coefficient = _model_record(str(name), pm, length[rows], fit, sd)
        records.append(record)
        coefficients.append(coefficient)
    record, coefficient = _baseline_record(baseline, baseline_avg_length, n_instr)
    records.append(record)
    coefficients.append(coefficient)
    if length_slope == "shared" and len(models) > 0:
        # the same data under a slope per model: where the two LCs disagree, the caveat says so
        alternative = win_rates(comparisons, baseline, lc_lambda=lc_lambda, length_slope="model").rows.set_index(
            "model"
        )["lc_win_rate"]
        for rec in records:
            other = float(alternative.get(str(rec["model"]), math.nan))
            if rec["model"] != baseline and not rec["lc_caveat"]:
                wr, lc, lc_se = (float(rec[c]) for c in ("win_rate", "lc_win_rate", "lc_standard_error_glm"))  # type: ignore[arg-type]
                rec["lc_caveat"] = lc_caveat(wr, lc, lc_se, other)
    return WinRates(
        rows=_sorted_table(records),
        baseline=baseline,
        n_difficulty_instructions=len(fitted_instr),
        n_dropped=n_dropped,
        notes=tuple(notes),
        coefficients=pd.DataFrame.from_records(coefficients, columns=list(COEFFICIENT_COLUMNS)),
    )


def _fixed_difficulty_rates(
    df: pd.DataFrame,
    baseline: str,
    fixed_difficulty: pd.Series,
    slope_prior: tuple[float, float] | None,
    lc_lambda: float,
    n_dropped: int,
    notes: list[str],
) -> WinRates:
    """:func:`win_rates` with the difficulties given: every model's GLM alone, as AlpacaEval fits it."""
    gamma_of = pd.Series(fixed_difficulty, dtype=float)
    gamma_all = gamma_of.reindex(df["instruction"]).to_numpy()
    if np.isnan(gamma_all).any():
        missing = df["instruction"][np.isnan(gamma_all)].iloc[0]
        raise ValueError(f"fixed_difficulty has no value for instruction {missing!r}")
    df = df.assign(gamma=gamma_all)
    if slope_prior is None:
        prior_mean, prior_precision = (0.0, 0.0, 0.0), (lc_lambda, lc_lambda, lc_lambda)
    else:
        prior_mean, prior_precision = (0.0, slope_prior[0], 0.0), (lc_lambda, slope_prior[1], lc_lambda)
    records: list[dict[str, object]] = []
    coefficients: list[dict[str, object]] = []
    for name, part in df.groupby("model", sort=True):
        pm = part["p"].to_numpy(float)
        length, base_length = part["length"].to_numpy(float), part["baseline_length"].to_numpy(float)
        n = len(pm)
        term, sd = length_feature(length - base_length)
        fit: LCFit | None = None
        if n < 2:
            notes.append(f"{name}: only {n} comparison, standard errors and the LC win rate are undefined")
        else:
            if not sd > 0:
                notes.append(f"{name}: no variation in the length difference (sd = 0), so the length term is 0")
            fit = fit_length_controlled(
                pm, term, part["gamma"].to_numpy(float), prior_mean=prior_mean, prior_precision=prior_precision
            )
            if not fit.converged:
                notes.append(f"{name}: the LC GLM fit did not fully converge")
        record, coefficient = _model_record(str(name), pm, length, fit, sd)
        records.append(record)
        coefficients.append(coefficient)
    per_instruction = df.groupby("instruction")["baseline_length"].mean()
    n_instr = len(per_instruction)
    record, coefficient = _baseline_record(baseline, float(per_instruction.mean()), n_instr)
    records.append(record)
    coefficients.append(coefficient)
    return WinRates(
        rows=_sorted_table(records),
        baseline=baseline,
        n_difficulty_instructions=n_instr,
        n_dropped=n_dropped,
        notes=tuple(notes),
        coefficients=pd.DataFrame.from_records(coefficients, columns=list(COEFFICIENT_COLUMNS)),
        difficulty_source="fixed",
    )
