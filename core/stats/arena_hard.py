"""The Arena-Hard score: the predicted win rate against the baseline, as Arena-Hard-Auto computes it (METHODS §10).

Input: one row per *game* of a model against the baseline (Arena-Hard judges every
question twice, once with each answer shown first), with ``grade`` in the model's
terms: 2 = the model much better (``A>>B`` with the model as A), 1 = better,
0 = a tie, −1 / −2 the baseline (much) better, missing = the judge gave no
verdict.  The procedure, written from the description of Arena-Hard v0.1's
``show_result.py``:

1. A game without a grade is dropped (game by game, not the record).
2. A decisive game becomes an outcome ``y`` of 1 (model wins) or 0; a tie 0.5.
   A strong verdict (|grade| = 2) counts ``weight`` times (default 3), the
   others once.  Arena-Hard duplicates every row and writes a tie as one win
   plus one loss; the likelihood of that table is twice the likelihood of
   these rows with ``y = 0.5`` for a tie, so the fits below are the same.
3. Bradley–Terry as a logistic regression without intercept:
   ``P(model beats baseline) = σ(β_model)`` (the baseline's β is 0), plain
   maximum likelihood; Elo = 1000 + 400·β/ln 10 (base 10, scale 400, the
   baseline anchored at 1000).  The score is ``100·σ(β)``, the predicted win
   rate against the baseline.  Every game involves the baseline (a star), so
   the maximum-likelihood win rate is the weighted share of wins (a tie half)
   of the model's games; the fit is still the general one (on the weight of each
   model's win, tie and loss cells, which is all the likelihood depends on).
4. 95% interval: ``n_rounds`` (Arena-Hard's default 100) bootstrap resamples
   of the weighted rows — a strong verdict's ``weight`` copies are separate
   rows, as in Arena-Hard's resampling of its expanded battle table — refitted,
   the 2.5% and 97.5% percentiles of the score.  Seeded: the same seed gives
   the same interval.  Arena-Hard's own script prints another interval against
   a baseline other than gpt-4-0314 (its replicates are not anchored at the
   baseline); :func:`script_interval` reproduces it from the same replicates.

Style control (Arena-Hard's ``--style-control``): four features per game — answer
length and the counts of markdown headers, list items and bold spans — each as
``(model − baseline)/(model + baseline + 1)``, standardised over the weighted rows
(population standard deviation), enter the logistic regression next to the model
terms; the score is ``100·σ(β_model)`` from the model coefficient alone (the
win rate at equal style).  As in Arena-Hard's fit of that variant the regression
is L2-regularised with strength 1 on every coefficient (scikit-learn's default
``C = 1``), on the duplicated table (so each row's log-likelihood counts twice),
with a coefficient for the baseline as well as for each model; the features are
standardised once on all rows and the bootstrap resamples the standardised rows.

``style_version="v2"`` builds the features as Arena-Hard v2.0's ``--control-features
length markdown`` does instead: length as (m − b)/(m + b), each markdown count as a
density count/(length + 1) before the ratio, standard deviations with ddof 1, and an
unpenalised fit without a baseline column.  The score and interval stay as above
(v2.0's script reports the bootstrap median with 5% and 95% quantiles instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

DEFAULT_WEIGHT = 3  # Arena-Hard's --weight: a strong verdict (A>>B) counts three times
DEFAULT_ROUNDS = 100  # Arena-Hard's --num-rounds
ELO_SCALE, ELO_BASE, ELO_ANCHOR = 400.0, 10.0, 1000.0
STYLE_FEATURES: tuple[str, ...] = ("length", "headers", "lists", "bold")
STYLE_RIDGE = 1.0  # L2 strength of the style-controlled fit: scikit-learn's LogisticRegression default (C = 1)
# "v0.1": show_result.py's --style-control (Sept. 2024); "v2": the v2.0 script's --control-features length markdown
STYLE_VERSIONS: tuple[str, ...] = ("v0.1", "v2")
QUANTILES = (2.5, 97.5)
ROW_COLUMNS: tuple[str, ...] = (
    "model",
    "score",
    "lower",
    "upper",
    "script_lower",
    "script_upper",
    "elo",
    "n_games",
    "n_rows",
    "wins",
    "ties",
    "losses",
)
_MAX_ITER, _TOL = 100, 1e-10  # Newton iterations and step tolerance
# The model Arena-Hard's compute_mle_elo anchors at 1000 unless told otherwise: its bootstrap never tells it
SCRIPT_ANCHOR = "gpt-4-0314"


@dataclass(frozen=True)
class ArenaHardScore:
    """Arena-Hard scores against ``baseline``.

    ``rows`` has :data:`ROW_COLUMNS`, one row per model plus the baseline's (50 by definition),
    best score first: ``score`` the predicted win rate against the baseline in percent, ``lower`` and
    ``upper`` its 95% bootstrap interval (absolute percentages; Arena-Hard prints them as the offsets
    ``score − lower`` and ``upper − score``), ``script_lower``/``script_upper`` the interval as Arena-Hard's
    own script computes it from the same replicates (:func:`script_interval`), ``elo`` on Arena-Hard's scale,
    ``n_games`` the graded games, ``n_rows`` the rows after weighting, ``wins``/``ties``/``losses`` the
    model's graded games.
    ``coefficients`` (style control only): feature, coef (logit per standard deviation, in the model's
    favour).  ``n_dropped``: games without a grade.
    """

    baseline: str
    rows: pd.DataFrame
    weight: int
    style_control: bool
    n_rounds: int
    seed: int
    n_games: int
    n_dropped: int
    coefficients: pd.DataFrame | None
    notes: tuple[str, ...] = ()
    style_version: str | None = None  # whose style control (STYLE_VERSIONS); None without it
    # whether Arena-Hard's own script would print another interval (script_lower/script_upper differ)
    script_interval_differs: bool = False

    def score_of(self, model: str) -> float:
        return float(self.rows.set_index("model").loc[model, "score"])


@dataclass(frozen=True)
class _Design:
    """The weighted rows: one per graded game, ``mult`` its number of copies (``weight`` for a strong verdict)."""

    model_index: np.ndarray  # index into ``models`` per row
    y: np.ndarray  # 1 model wins, 0 baseline wins, 0.5 tie
    mult: np.ndarray  # copies of the row
    features: np.ndarray  # (rows, k) standardised style features, k = 0 without style control
    models: tuple[str, ...]


def outcomes(grade: np.ndarray, weight: int) -> tuple[np.ndarray, np.ndarray]:
    """A graded game's outcome for the model (1, ½, 0) and its number of copies (``weight`` when |grade| = 2)."""
    g = np.asarray(grade, dtype=float)
    y = np.where(g > 0, 1.0, np.where(g < 0, 0.0, 0.5))
    mult = np.where(np.abs(g) >= 2, weight, 1).astype(np.int64)
    return y, mult


def style_ratio(model_count: np.ndarray, baseline_count: np.ndarray) -> np.ndarray:
    """Arena-Hard's normalised style difference of one feature: (model − baseline)/(model + baseline + 1)."""
    m, b = np.asarray(model_count, dtype=float), np.asarray(baseline_count, dtype=float)
    return (m - b) / (m + b + 1.0)


def standardise(x: np.ndarray, mult: np.ndarray, ddof: int = 0) -> np.ndarray:
    """Columns of ``x`` centred and divided by their standard deviation over the weighted rows (``ddof`` 0: the
    population's; a constant column becomes 0: it carries no information)."""
    n = float(mult.sum())
    mean = (mult / n) @ x
    sd = np.sqrt(mult @ (x - mean) ** 2 / max(n - ddof, 1.0))
    return np.divide(x - mean, sd, out=np.zeros_like(x), where=sd > 0)


def style_features(games: pd.DataFrame, version: str) -> np.ndarray:
    """The raw style features of each game (columns in :data:`STYLE_FEATURES` order), as Arena-Hard builds them.

    ``v0.1``: every count as :func:`style_ratio`.  ``v2``: length as (m − b)/(m + b) (0 when both are empty),
    each markdown count first as a density per unit of length, count/(length + 1), then as :func:`style_ratio`
    of the two densities."""
    if version == "v0.1":
        return np.column_stack([style_ratio(games[f], games[f"baseline_{f}"]) for f in STYLE_FEATURES])
    m_len = games["length"].to_numpy(dtype=float)
    b_len = games["baseline_length"].to_numpy(dtype=float)
    total = m_len + b_len
    length = np.divide(m_len - b_len, total, out=np.zeros_like(total), where=total > 0)
    dens = [
        style_ratio(
            games[f].to_numpy(dtype=float) / (m_len + 1), games[f"baseline_{f}"].to_numpy(dtype=float) / (b_len + 1)
        )
        for f in STYLE_FEATURES[1:]
    ]
    return np.column_stack([np.where(np.isnan(total), np.nan, length), *dens])


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """Coefficients maximising Σ wᵢ[yᵢ log σ(xᵢβ) + (1 − yᵢ) log(1 − σ(xᵢβ))] − ridge/2·‖β‖² (soft y allowed),
    by Newton's method with step halving.  Without a ridge the caller removes separated columns.  NaN
    coefficients when it did not converge in ``_MAX_ITER`` steps (a separated feature column)."""
    beta = np.zeros(x.shape[1])

    def objective(b: np.ndarray) -> float:
        z = x @ b
        ll = w @ (y * -np.logaddexp(0.0, -z) + (1 - y) * -np.logaddexp(0.0, z))
        return float(-ll + 0.5 * ridge * b @ b)

    current = objective(beta)
    for _ in range(_MAX_ITER):
        p = expit(x @ beta)
        grad = x.T @ (w * (p - y)) + ridge * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        t = 1.0
        while t > 1e-8:
            candidate = beta - t * step
            value = objective(candidate)
            if value <= current + 1e-12:
                break
            t /= 2
        beta, previous, current = candidate, current, value
        if np.max(np.abs(t * step)) < _TOL or previous - current < 1e-14 * max(1.0, abs(current)):
            break
    else:  # METHODS §10: a fit that did not converge gives no number (NaN: the score is said to be undefined)
        return np.full(x.shape[1], np.nan)
    return beta


def _strengths(design: _Design, counts: np.ndarray, ridge: float) -> np.ndarray:
    """β per model (logit of beating the baseline) from rows weighted by ``counts`` copies; NaN for a model
    with no row, ±inf for a model that won or lost all of them (plain fit only)."""
    k = len(design.models)
    used = counts > 0
    mi, y, w = design.model_index[used], design.y[used], counts[used].astype(float)
    present = np.bincount(mi, weights=w, minlength=k) > 0
    beta = np.full(k, np.nan)
    if design.features.shape[1] == 0:  # plain BT: unpenalised, each model's column is its own
        wins = np.bincount(mi, weights=w * y, minlength=k)
        total = np.bincount(mi, weights=w, minlength=k)
        beta[present & (wins <= 0)] = -np.inf
        beta[present & (wins >= total)] = np.inf
        free = present & (wins > 0) & (wins < total)
        if free.any():
            # the likelihood depends on the rows only through the weight of each (model, outcome) cell
            cols = np.flatnonzero(free)
            keep = free[mi]
            cell = np.unique(mi[keep] * 3 + np.rint(2 * y[keep]).astype(np.int64), return_inverse=True)
            keys, weights = cell[0], np.bincount(cell[1], weights=w[keep])
            x = ((keys // 3)[:, None] == cols[None, :]).astype(float)
            beta[cols] = fit_logistic(x, (keys % 3) / 2.0, weights)
        return beta
    cols = np.flatnonzero(present)
    ln10 = math.log(ELO_BASE)
    if ridge == 0:  # v2: unpenalised, a column per model (the baseline's strength is 0), the features
        x = np.column_stack([ln10 * (mi[:, None] == cols[None, :]), design.features[used]])
        coef = fit_logistic(x, y, w)
        beta[cols] = ln10 * coef[: len(cols)]
        return np.concatenate([beta, coef[len(cols) :]])
    # v0.1, as Arena-Hard fits it: a coefficient per model *and* the baseline on columns of ±ln 10 (every row has
    # the baseline on the other side), the features, an L2 penalty on all, the rows doubled
    x = np.column_stack([ln10 * (mi[:, None] == cols[None, :]), np.full(len(mi), -ln10), design.features[used]])
    coef = fit_logistic(x, y, 2.0 * w, ridge=ridge)
    beta[cols] = ln10 * (coef[: len(cols)] - coef[len(cols)])
    return np.concatenate([beta, coef[len(cols) + 1 :]])


def script_interval(
    boot_beta: np.ndarray, models: tuple[str, ...], baseline_coef: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The 95% interval of each model's score as Arena-Hard's ``show_result.py`` computes it from bootstrap
    replicates ``boot_beta`` (rounds × models: the logit of beating the baseline), for a baseline other than
    :data:`SCRIPT_ANCHOR`.

    Its bootstrap refits every replicate without passing the baseline on (it tests whether the baseline's
    *name* is a parameter of the fit), so each replicate's Elo is anchored at gpt-4-0314 when that model is
    in the table and otherwise set by the fit alone.  There the baseline's own file (the baseline judged
    against itself) decides it: its rows put +ln 10 and then −ln 10 in the same column of the design matrix,
    so they act on the baseline's coefficient alone, as games of the baseline against a fixed opponent, and
    ``baseline_coef`` is that coefficient in each replicate (:func:`self_game_coefficient`).  Without such
    rows scikit-learn's L-BFGS started at 0 keeps the coefficients summing to 0 over every model and the
    baseline, the Elos averaging 1000.  It then takes the
    2.5% and 97.5% percentiles of each model's Elo and of the baseline's separately and converts the pair of
    percentiles to a win rate: ``σ(ln 10·(q_model − q_baseline)/400)``.  A percentile of a difference is not
    the difference of percentiles, so the interval narrows (and skews) by as much as the baseline's own Elo
    wanders in the replicates; with the baseline anchored (its Elo 1000 in every replicate) it is the plain
    percentile interval.  Returns (lower, upper) in percent; NaN where a replicate's fit is infinite.
    """
    ln10 = math.log(ELO_BASE)
    coef = np.asarray(boot_beta, dtype=float) / ln10  # log10 odds against the baseline, per replicate
    if SCRIPT_ANCHOR in models:
        baseline = -coef[:, models.index(SCRIPT_ANCHOR)]  # the anchor's coefficient is 0
    elif baseline_coef is not None:
        baseline = np.asarray(baseline_coef, dtype=float)
    else:  # Σ over the models and the baseline of (coef_m − coef_b) + K·coef_b = 0
        baseline = -coef.sum(axis=1) / (len(models) + 1)
    with np.errstate(invalid="ignore"):
        own = ELO_ANCHOR + ELO_SCALE * (coef + baseline[:, None])
        base = ELO_ANCHOR + ELO_SCALE * baseline
    if not len(own):
        nan = np.full(len(models), np.nan)
        return nan, nan
    q_own = np.percentile(own, QUANTILES, axis=0)
    q_base = np.percentile(base, QUANTILES)
    lower = 100.0 * expit(ln10 * (q_own[0] - q_base[0]) / ELO_SCALE)
    upper = 100.0 * expit(ln10 * (q_own[1] - q_base[1]) / ELO_SCALE)
    return lower, upper


def self_game_coefficient(y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The baseline's coefficient (log10 units) that its self-judgment rows alone give in Arena-Hard's fit, per
    replicate: rows of outcome ``y`` (1 the first-listed side won, ½ a tie, 0 lost) weighted by ``counts``
    (replicates × rows), each row read as ``P(y = 1) = σ(−ln 10·c)``.  ±inf where every row went one way."""
    counts = np.atleast_2d(np.asarray(counts, dtype=float))
    total = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (counts @ np.asarray(y, dtype=float)) / total
        return -np.log(share / (1.0 - share)) / math.log(ELO_BASE)


def score(beta: np.ndarray) -> np.ndarray:
    """The predicted win rate against the baseline, in percent."""
    return 100.0 * expit(beta)


def elo(beta: np.ndarray) -> np.ndarray:
    """Arena-Hard's Elo: base 10, scale 400, the baseline at 1000."""
    return ELO_ANCHOR + ELO_SCALE * beta / math.log(ELO_BASE)


def arena_hard_score(
    games: pd.DataFrame,
    baseline: str,
    *,
    weight: int = DEFAULT_WEIGHT,
    style_control: bool = False,
    style_version: str = "v0.1",
    n_rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
    baseline_self_grades: np.ndarray | None = None,
) -> ArenaHardScore:
    """Arena-Hard scores of every model in ``games`` against ``baseline``.

    ``games``: one row per game, columns ``model`` (never the baseline) and ``grade`` (−2…2 in the model's
    terms, NaN when the game has no verdict); with ``style_control`` also, for each feature f of
    :data:`STYLE_FEATURES`, the model's count ``f`` and the baseline's ``baseline_f`` on that question.
    ``style_version`` (:data:`STYLE_VERSIONS`): whose style control, v0.1's (the default) or v2.0's.
    ``baseline_self_grades``: the grades of the baseline's games against itself (−2…2, positive = the side
    shown first in game 1 won), which make no score but enter Arena-Hard's own interval (``script_lower``).
    """
    if style_version not in STYLE_VERSIONS:
        raise ValueError(f"style control is {' or '.join(STYLE_VERSIONS)}, not {style_version!r}")
    if weight < 1:
        raise ValueError(f"the weight of a strong verdict must be a positive integer, got {weight}")
    if n_rounds < 0:
        raise ValueError(f"the number of bootstrap rounds must be ≥ 0, got {n_rounds}")
    missing = [c for c in ("model", "grade") if c not in games]
    if style_control:
        missing += [c for f in STYLE_FEATURES for c in (f, f"baseline_{f}") if c not in games]
    if missing:
        raise ValueError(f"games lack the columns {', '.join(missing)}")
    if (games["model"] == baseline).any():
        raise ValueError(f"a game of the baseline {baseline!r} against itself")
    grade = pd.to_numeric(games["grade"], errors="coerce").to_numpy(dtype=float)
    graded = ~np.isnan(grade)
    if np.any(np.abs(grade[graded]) > 2) or np.any(grade[graded] != np.round(grade[graded])):
        raise ValueError("a grade outside −2…2 (2 = the model much better)")
    n_dropped = int((~graded).sum())
    kept = games.loc[graded].reset_index(drop=True)
    if kept.empty:
        raise ValueError("no game has a grade: there is no score")
    models = tuple(sorted(map(str, kept["model"].unique())))
    model_index = pd.Categorical(kept["model"].astype(str), categories=list(models)).codes.astype(np.int64)
    y, mult = outcomes(grade[graded], weight)
    notes: list[str] = []
    if style_control:
        raw = style_features(kept, style_version)
        if np.isnan(raw).any():
            raise ValueError("a game lacks the style counts of an answer: style control needs both answers' text")
        features = standardise(raw, mult, ddof=1 if style_version == "v2" else 0)
    else:
        features = np.zeros((len(kept), 0))
    design = _Design(model_index, y, mult, features, models)
    ridge = STYLE_RIDGE if style_control and style_version == "v0.1" else 0.0
    k = len(models)
    fitted = _strengths(design, mult, ridge)
    beta = fitted[:k]
    # bootstrap over the weighted rows: each of a strong verdict's copies is a row of its own
    unit = np.repeat(np.arange(len(kept)), mult)
    rng = np.random.default_rng(seed)
    boot_beta = np.full((n_rounds, k), np.nan)
    for r in range(n_rounds):
        counts = np.bincount(unit[rng.integers(0, len(unit), len(unit))], minlength=len(kept))
        boot_beta[r] = _strengths(design, counts, ridge)[:k]
    boot = score(boot_beta)
    point = score(beta)
    if n_rounds:
        with np.errstate(invalid="ignore"):
            lower, upper = np.nanpercentile(boot, QUANTILES, axis=0) if np.isfinite(boot).any() else (point, point)
    else:
        lower = upper = np.full(k, np.nan)
        notes.append("no bootstrap rounds: no interval")
    # The script's plain bootstrap anchors gpt-4-0314, not the baseline (script_interval); its style-controlled
    # one anchors the baseline, as this one does, so there the two intervals are the same.
    anchored = style_control or baseline == SCRIPT_ANCHOR
    script_lower, script_upper = lower, upper
    if not anchored:
        script_lower = script_upper = np.full(k, np.nan)
        baseline_coef = None
        if baseline_self_grades is not None and len(baseline_self_grades):
            # resampled after the rounds above (their draws, and so the interval beside, stay as they were)
            y_self, mult_self = outcomes(np.asarray(baseline_self_grades, dtype=float), weight)
            self_unit = np.repeat(np.arange(len(y_self)), mult_self)
            draws = [
                np.bincount(self_unit[rng.integers(0, len(self_unit), len(self_unit))], minlength=len(y_self))
                for _ in range(n_rounds)
            ]
            baseline_coef = self_game_coefficient(y_self, np.array(draws))
        finite = np.isfinite(boot_beta).all(axis=1)  # a replicate with a perfect record has no finite gauge
        if baseline_coef is not None:
            finite &= np.isfinite(baseline_coef)
        if finite.any():
            script_lower, script_upper = script_interval(
                boot_beta[finite], models, None if baseline_coef is None else baseline_coef[finite]
            )
    total = np.bincount(model_index, minlength=k)
    rows = pd.DataFrame(
        {
            "model": list(models),
            "score": point,
            "lower": lower,
            "upper": upper,
            "script_lower": script_lower,
            "script_upper": script_upper,
            "elo": elo(beta),
            "n_games": total,
            "n_rows": np.bincount(model_index, weights=mult, minlength=k).astype(np.int64),
            "wins": np.bincount(model_index, weights=(y == 1), minlength=k).astype(np.int64),
            "ties": np.bincount(model_index, weights=(y == 0.5), minlength=k).astype(np.int64),
            "losses": np.bincount(model_index, weights=(y == 0), minlength=k).astype(np.int64),
        }
    )
    base = pd.DataFrame(
        [
            {
                "model": baseline,
                "score": 50.0,
                "lower": 50.0,
                "upper": 50.0,
                "script_lower": 50.0,
                "script_upper": 50.0,
                "elo": ELO_ANCHOR,
                "n_games": int(total.sum()),
                "n_rows": int(mult.sum()),
                "wins": int(rows["losses"].sum()),
                "ties": int(rows["ties"].sum()),
                "losses": int(rows["wins"].sum()),
            }
        ]
    )
    rows = pd.concat([rows, base], ignore_index=True)
    rows = rows.sort_values(["score", "model"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    if n_dropped:
        notes.append(f"{n_dropped:,} games without a verdict are dropped, as Arena-Hard drops them")
    extremes = [m for m, b in zip(models, beta) if np.isinf(b)]
    if extremes:
        notes.append(f"{', '.join(extremes)} won or lost every graded game: a score of 100 or 0 (an infinite Elo)")
    coefficients = None
    if style_control:
        coefficients = pd.DataFrame({"feature": list(STYLE_FEATURES), "coef": fitted[k:]})
    return ArenaHardScore(
        baseline=baseline,
        rows=rows[list(ROW_COLUMNS)],
        weight=weight,
        style_control=style_control,
        style_version=style_version if style_control else None,
        n_rounds=n_rounds,
        seed=seed,
        n_games=int(len(kept)),
        n_dropped=n_dropped,
        coefficients=coefficients,
        notes=tuple(notes),
        script_interval_differs=not anchored,
    )


def interval_text(score: float, lower: float, upper: float, decimals: int = 1) -> str:
    """The interval as Arena-Hard prints it: ``(−a, +b)`` offsets from the score."""
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return "—"
    return f"(−{score - lower:.{decimals}f}, +{upper - score:.{decimals}f})"
