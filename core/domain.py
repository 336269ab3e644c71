"""The contract every layer shares: outcomes, label rules, the Elo scale and the battle frame.

Read this module first.  It defines, once:

* the rubric criteria and the outcome codes of votes and verdicts;
* the label rules of METHODS §1–2: outcome → fitting target ``y``, the judge's
  hard label, the score gap, the soft target σ(τ·gap) and its clip, label
  smoothing, the SoftElo preference mapping;
* the Elo scale (θ on the logit scale → Elo) and the normal quantile ``Z95``;
* the Wilson interval for a binomial share;
* the per-battle frame (:data:`BATTLE_FRAME`: name → dtype kind → meaning)
  that the store produces and the statistics read, with :func:`validate`;
* :class:`DatasetTables`, the shape of one dataset on its way into the store.

``core.store`` builds its SQL for targets and labels from the constants here,
so a rule changes in one place.  Nothing in this module touches a store, a
file or the network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

# pandas costs ~0.3 s to import and only the frame helpers below need it; the
# constants and scale functions are imported by `python -m core bt FILE`, which
# never builds a frame.
if TYPE_CHECKING:
    import pandas as pd

# ============================================================ rubric, outcomes
CRITERIA: tuple[str, ...] = (
    "adherence",
    "helpfulness",
    "factuality",
    "completeness",
    "clarity",
    "fluency",
)
SCORE_COLUMNS: tuple[str, ...] = tuple(f"{side}_{c}" for side in ("a", "b") for c in CRITERIA)

# Presentation order of a judgment: 'avg' = both orders already merged; 'unknown' = shown in one order that the
# source did not record (no position statement can be made from it).
ORDERS = ("ab", "ba", "avg", "unknown")
HUMAN_WINNERS = ("a", "b", "tie", "both_bad")
VERDICTS = ("a", "b", "tie")

# Outcome → fitting target y = P(a beats b) (METHODS §1): every tie kind counts
# half a win for each side.  Human winners and judge verdicts share the rule.
OUTCOME_Y: dict[str, float] = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}

# The winner values of LMArena-style battle files and the outcome code each means.
ARENA_WINNERS: dict[str, str] = {
    "model_a": "a",
    "model_b": "b",
    "tie": "tie",
    "tie (bothbad)": "both_bad",
    "both_bad": "both_bad",
}


def outcome_y(outcomes: pd.Series | np.ndarray | list) -> np.ndarray:
    """Fitting targets of outcome codes ('a', 'b', 'tie', 'both_bad'); anything else → NaN."""
    import pandas as pd

    return pd.Series(outcomes, dtype=object).map(OUTCOME_Y).to_numpy(dtype=float)


def outcome_of_target(y: np.ndarray) -> np.ndarray:
    """The outcome code of a hard target: 1 → 'a', 0 → 'b', anything else → 'tie'."""
    y = np.asarray(y, dtype=float)
    return np.where(y == 1.0, "a", np.where(y == 0.0, "b", "tie"))


# ================================================================= Elo scale
ELO_BASE = 1500.0
ELO_PER_LOGIT = 400.0 / math.log(10.0)
Z95 = 1.959963984540054  # the 97.5% standard normal quantile: 95% two-sided intervals


def theta_to_elo(theta: np.ndarray | float, centre: bool = True) -> np.ndarray:
    """Logit strengths on the Elo scale, ``1500 + (400 / ln 10)·θ``, after centring θ to mean 0.

    ``centre=False`` converts θ as given: for a strength already placed
    against centred anchors (the held-out protocol).
    """
    theta = np.asarray(theta, dtype=float)
    if centre and theta.size:
        theta = theta - theta.mean()
    return np.asarray(ELO_BASE + ELO_PER_LOGIT * theta)


def elo_units(logits: np.ndarray | float) -> np.ndarray:
    """A logit difference or standard error in Elo points (no offset: differences only)."""
    return ELO_PER_LOGIT * np.asarray(logits, dtype=float)


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    """σ(x) = 1 / (1 + e^{-x}) without overflow warnings; NaN stays NaN."""
    with np.errstate(over="ignore"):  # e^{-x} overflows to inf for x ≪ 0, and 1/inf = 0 is right
        return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


def wilson(k: np.ndarray | float, n: np.ndarray | float, z: float = Z95) -> tuple[Any, Any]:
    """Wilson score interval of a binomial share k/n (95% by default); NaN where n ≤ 0.

    Scalars in, floats out; arrays in, arrays out.
    """
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = centre - half, centre + half
    bad = ~(n > 0)
    lo, hi = np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)
    return (float(lo), float(hi)) if scalar else (lo, hi)


# =============================================================== label rules
SOFT_CLIP = 1e-6  # soft targets are clipped to [SOFT_CLIP, 1 − SOFT_CLIP] before fitting (METHODS §2)
TIE_Y = OUTCOME_Y["tie"]
PREFERENCE_TIE_BAND = 0.05  # SoftElo preference p with |p − 0.5| ≤ this is a tie
LABEL_SMOOTHING_Q: tuple[float, ...] = (0.55, 0.65, 0.75, 0.85, 0.95)


def soft_target(gap: np.ndarray | float, tau: float) -> np.ndarray:
    """The Soft-Elo target σ(τ·gap), clipped to [1e-6, 1 − 1e-6]; a missing gap stays NaN."""
    y = sigmoid(float(tau) * np.asarray(gap, dtype=float))
    return np.clip(y, SOFT_CLIP, 1 - SOFT_CLIP)


def smoothed_target(hard: np.ndarray, q: float) -> np.ndarray:
    """Label smoothing: decisive hard labels become q / 1 − q, ties stay 0.5, anything else NaN."""
    h = np.asarray(hard, dtype=float)
    return np.where(h == 1.0, q, np.where(h == 0.0, 1 - q, np.where(h == TIE_Y, TIE_Y, np.nan)))


def preference_to_target(p: np.ndarray) -> np.ndarray:
    """SoftElo preference (0 = a wins, 1 = b wins, 0.5 = tie) → P(a wins) (METHODS §2)."""
    p = np.asarray(p, dtype=float)
    # the band is inclusive in decimal terms: 0.55 − 0.5 is 0.05000000000000004 in binary floating point
    tie = np.abs(p - 0.5) <= PREFERENCE_TIE_BAND + 1e-12
    return np.where(tie, TIE_Y, np.where(p < 0.5, 1.0, 0.0))


def rubric_gap(scores_a: np.ndarray, scores_b: np.ndarray) -> np.ndarray:
    """Score gap Δ: the mean over criteria present for both sides of (a − b); NaN when none is.

    ``scores_a`` and ``scores_b`` are (battles × criteria) arrays with NaN for
    a missing score.
    """
    d = np.asarray(scores_a, dtype=float) - np.asarray(scores_b, dtype=float)
    present = np.isfinite(d)
    count = present.sum(axis=-1)
    total = np.where(present, d, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _sign_label(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * 0.5 + 0.5


def hard_label(
    verdict_avg: np.ndarray,
    gap_avg: np.ndarray,
    gap_ab: np.ndarray,
    gap_ba: np.ndarray,
    gap_mean: np.ndarray,
    verdict_mean: np.ndarray,
) -> np.ndarray:
    """The judge's hard label of a battle (METHODS §2), first rule that applies:

    1. an imported verdict on an order-averaged judgment (``verdict_avg``, an outcome code);
    2. the sign of the order-averaged rubric gap ``gap_avg``;
    3. forward and reversed gaps of opposite signs → tie;
    4. the sign of the mean of the order gaps ``gap_mean``;
    5. the sign of the mean verdict target minus 0.5 (verdict-only judges).

    NaN when nothing applies.  ``core.store`` computes the same rule in SQL.
    """
    va = outcome_y(verdict_avg)
    g_avg, g_ab, g_ba = (np.asarray(x, dtype=float) for x in (gap_avg, gap_ab, gap_ba))
    g_mean, v_mean = np.asarray(gap_mean, dtype=float), np.asarray(verdict_mean, dtype=float)
    disagree = np.isfinite(g_ab) & np.isfinite(g_ba) & (np.sign(g_ab) * np.sign(g_ba) < 0)
    return np.select(
        [np.isfinite(va), np.isfinite(g_avg), disagree, np.isfinite(g_mean), np.isfinite(v_mean)],
        [va, _sign_label(g_avg), np.full(va.shape, TIE_Y), _sign_label(g_mean), _sign_label(v_mean - 0.5)],
        default=np.nan,
    )


# ============================================================= battle frame
Kind = Literal["int", "float", "text", "bool"]


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    meaning: str


# One row per battle: what every fit and diagnostic reads.  The store produces
# it (``Store.battle_frame``); a SoftElo file produces it too
# (``core.ingest.softelo.battle_frame``).  Judge columns are missing (NaN) when
# no judge is selected.  Sides are always the battle's a / b: a judgment shown
# in the order (b, a) is mapped back to battle terms.
BATTLE_FRAME: tuple[Column, ...] = (
    Column("battle_id", "int", "store id of the battle"),
    Column("battle_key", "int", "the battle's key within its dataset"),
    Column("external_id", "text", "the battle's id in its source file"),
    Column("model_a", "text", "model on side a"),
    Column("model_b", "text", "model on side b"),
    Column("prompt_id", "int", "store id of the prompt"),
    Column("language", "text", "prompt language"),
    Column("turn", "int", "conversation turn the battle compares"),
    Column("tstamp", "float", "time of the battle (Unix seconds)"),
    Column("human_y", "float", "mean human target over the battle's votes (OUTCOME_Y)"),
    Column("n_votes", "int", "human votes on the battle"),
    Column("completion_a", "int", "store id of a's completion"),
    Column("completion_b", "int", "store id of b's completion"),
    Column("gap_ab", "float", "rubric gap a − b when a was shown first"),
    Column("gap_ba", "float", "rubric gap a − b when b was shown first"),
    Column("gap_avg", "float", "rubric gap of an order-averaged judgment"),
    Column("p_ab", "float", "P(a ≻ b) from A/B logprobs, a shown first"),
    Column("p_ba", "float", "P(a ≻ b) from A/B logprobs, b shown first"),
    Column("verdict_ab", "text", "judge verdict (battle terms), a shown first"),
    Column("verdict_ba", "text", "judge verdict (battle terms), b shown first"),
    Column("verdict_avg", "text", "judge verdict of an order-averaged judgment"),
    Column("verdict_mean", "float", "mean verdict target over the judge's judgments"),
    Column("conf_ab", "float", "the judge's stated confidence, a shown first"),
    Column("conf_ba", "float", "the judge's stated confidence, b shown first"),
    Column("n_judgments", "int", "the judge's parsed judgments of the battle"),
    Column("judge_hard", "float", "the judge's hard label (hard_label)"),
    Column("gap", "float", "the battle's score gap Δ (orders averaged)"),
    Column("len_a", "int", "characters in a's answer"),
    Column("len_b", "int", "characters in b's answer"),
    Column("headers_a", "int", "markdown headers in a's answer"),
    Column("headers_b", "int", "markdown headers in b's answer"),
    Column("bold_a", "int", "bold spans in a's answer"),
    Column("bold_b", "int", "bold spans in b's answer"),
    Column("lists_a", "int", "list items in a's answer"),
    Column("lists_b", "int", "list items in b's answer"),
    Column("correct_a", "bool", "a's answer is correct (verifiable prompts)"),
    Column("correct_b", "bool", "b's answer is correct (verifiable prompts)"),
    Column("echo_a", "bool", "a's answer echoes"),
    Column("echo_b", "bool", "b's answer echoes"),
    Column("family_a", "text", "family / organisation of model a"),
    Column("family_b", "text", "family / organisation of model b"),
)
BATTLE_COLUMNS: tuple[str, ...] = tuple(c.name for c in BATTLE_FRAME)
SOFT_Y = Column("soft_y", "float", "soft target σ(τ·gap), present when a τ was given")

_EMPTY_DTYPE: dict[Kind, str] = {"int": "Int64", "text": "object", "bool": "boolean"}


def _missing(n: int, kind: Kind) -> pd.Series:
    import pandas as pd

    if kind == "float":
        return pd.Series(np.full(n, np.nan))
    return pd.Series([pd.NA] * n, dtype=_EMPTY_DTYPE[kind])


def _kind_ok(s: pd.Series, kind: Kind) -> bool:
    import pandas as pd

    if s.isna().all():
        return True
    api = pd.api.types
    if kind == "int":
        return bool(api.is_integer_dtype(s))
    if kind == "float":
        return bool(api.is_numeric_dtype(s) and not api.is_bool_dtype(s))
    if kind == "bool":
        return bool(api.is_bool_dtype(s))
    return bool(api.is_string_dtype(s) or api.is_object_dtype(s))


def validate(frame: pd.DataFrame, source: str = "battle frame") -> pd.DataFrame:
    """Check that ``frame`` has every battle-frame column with a value of its kind; return it.

    Raises ``ValueError`` naming the first missing or mistyped column.
    """
    missing = [c for c in BATTLE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{source} lacks the column(s) {missing}")
    for col in (*BATTLE_FRAME, SOFT_Y):
        if col.name in frame.columns and not _kind_ok(frame[col.name], col.kind):
            raise ValueError(
                f"{source}: column {col.name!r} should hold {col.kind} values, has dtype {frame[col.name].dtype}"
            )
    return frame


def battle_frame(columns: dict[str, object]) -> pd.DataFrame:
    """A battle frame from the columns a source has; every other column is missing (NA of its kind).

    Raises ``ValueError`` for a name that is not a battle-frame column.
    """
    import pandas as pd

    unknown = sorted(set(columns) - set(BATTLE_COLUMNS) - {SOFT_Y.name})
    if unknown:
        raise ValueError(f"not battle-frame columns: {unknown}")
    given = pd.DataFrame(columns)
    out = pd.DataFrame(
        {c.name: given[c.name] if c.name in given else _missing(len(given), c.kind) for c in BATTLE_FRAME}
    )
    if SOFT_Y.name in given:
        out[SOFT_Y.name] = given[SOFT_Y.name]
    return validate(out)


# ================================================================= ratings
RATING_COLUMNS: tuple[str, ...] = ("model", "elo", "lower", "upper", "se", "rank", "n_battles")
# Carried into every export when a method has them: votes beside battles, why an Elo (``elo_note``: the
# maximum-likelihood Elo does not exist) or an interval is undefined, and
# online Elo's spread over replay orders (which is not an interval).
OPTIONAL_RATING_COLUMNS: tuple[str, ...] = (
    "position",  # the ordinal position by Elo (``rank`` is METHODS §10's, with ties on the intervals)
    "n_votes",
    "elo_note",
    "interval_note",
    "order_lower",
    "order_upper",
    "order_sd",
)


@dataclass(frozen=True)
class Ratings:
    """A leaderboard under one rating method: the same ``frame`` columns for every method.

    ``frame``: :data:`RATING_COLUMNS` first (``lower``/``upper`` the 95%
    interval, NaN without one), then method-specific columns; best first.
    ``issues``: reasons to read the fit with care (disconnected graph, a
    perfect record, ...), never silently fixed.  ``n_battles`` counts battles;
    a leaderboard of human votes also counts its votes (``n_votes``, and a
    per-model ``n_votes`` column), since one battle may carry several.
    """

    method: str
    frame: pd.DataFrame
    n_battles: int
    converged: bool = True
    iterations: int = 0
    tau: float | None = None
    ci: str | None = None
    issues: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    n_votes: int | None = None  # human votes behind a human leaderboard (several may fall on one battle)

    def to_json(self) -> dict:
        columns = [*RATING_COLUMNS, *(c for c in OPTIONAL_RATING_COLUMNS if c in self.frame)]
        return {
            "method": self.method,
            "n_battles": self.n_battles,
            "n_votes": self.n_votes,
            "converged": self.converged,
            "iterations": self.iterations,
            "tau": self.tau,
            "ci": self.ci,
            "issues": list(self.issues),
            "models": self.frame[columns].to_dict("records"),
        }


def ratings_problem(frame: pd.DataFrame) -> str | None:
    """What breaks the contract every rating method's frame keeps, or None (arena-rank's ``RatingSystem`` idea:
    the dispatcher checks what any method returns before anything draws or prints it).

    The contract: every :data:`RATING_COLUMNS` column; one row per model; ``lower ≤ elo ≤ upper`` wherever
    all three are finite (an interval that does not hold its own point is a bug, printed as
    ``1593.8 [1595.2, 1593.0]``); no infinite Elo or bound; a rank of at least 1 where there is one.
    """
    missing = [c for c in RATING_COLUMNS if c not in frame.columns]
    if missing:
        return f"missing column(s) {', '.join(missing)}"
    if frame["model"].duplicated().any():
        return f"model {str(frame.loc[frame['model'].duplicated(), 'model'].iloc[0])[:100]!r} has two rows"
    elo, lo, hi = (pd_numeric(frame[c]) for c in ("elo", "lower", "upper"))
    for name, col in (("elo", elo), ("lower", lo), ("upper", hi)):
        if np.isinf(col).any():
            return f"model {str(frame['model'].iloc[int(np.flatnonzero(np.isinf(col))[0])])[:100]!r}: {name} is ±∞"
    with np.errstate(invalid="ignore"):
        bad = np.isfinite(elo) & np.isfinite(lo) & np.isfinite(hi) & ((lo > elo + 1e-6) | (elo > hi + 1e-6))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        return (
            f"model {str(frame['model'].iloc[k])[:100]!r}: its interval [{lo[k]:.1f}, {hi[k]:.1f}] does not "
            f"hold its Elo {elo[k]:.1f}"
        )
    rank = pd_numeric(frame["rank"])
    if (np.isfinite(rank) & (rank < 1)).any():
        return "a rank below 1"
    return None


def pd_numeric(col: Any) -> np.ndarray:
    """A column as floats, missing values (None, pd.NA) as NaN."""
    import pandas as pd

    return np.asarray(pd.to_numeric(col, errors="coerce"), dtype=float)


def with_vote_counts(frame: pd.DataFrame, votes: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per model) with ``n_battles`` (battles voted on) and ``n_votes`` from a votes frame
    (battle_id, model_a, model_b; one row per vote)."""
    import pandas as pd

    per_vote = pd.concat([votes["model_a"], votes["model_b"]])
    battles = votes.drop_duplicates("battle_id") if "battle_id" in votes else votes
    per_battle = pd.concat([battles["model_a"], battles["model_b"]])
    out = frame.copy()
    out["n_battles"] = out["model"].map(per_battle.value_counts()).fillna(0).astype(int)
    out["n_votes"] = out["model"].map(per_vote.value_counts()).fillna(0).astype(int)
    return out


def rank_with_ties(lower: Any, upper: Any) -> np.ndarray:
    """LMArena's rank: 1 + the number of models whose interval lies entirely above this one's (METHODS §10).

    Without an interval (NaN bounds) a model is compared by its bounds as
    given; NaN comparisons count as "not above", so such a model ranks high
    and its rank should be read with its missing interval.
    """
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    with np.errstate(invalid="ignore"):
        above = lo[None, :] > hi[:, None]
    return 1 + above.sum(axis=1)


def ranked(frame: pd.DataFrame) -> pd.DataFrame:
    """A rating table sorted best first, with ranks and every :data:`RATING_COLUMNS` column.

    ``rank`` is the rank METHODS §10 defines (with ties, on the 95% intervals)
    wherever the table has intervals, and the position by Elo where it has
    none; ``position`` is always the ordinal position by Elo (equal Elo share one).
    """
    out = frame.sort_values("elo", ascending=False, kind="stable").reset_index(drop=True)
    out["position"] = out["elo"].rank(ascending=False, method="min").astype(int)
    has_interval = "lower" in out and "upper" in out and bool((out["lower"].notna() & out["upper"].notna()).any())
    out["rank"] = rank_with_ties(out["lower"], out["upper"]) if has_interval else out["position"]
    for c in RATING_COLUMNS:
        if c not in out:
            out[c] = np.nan
    out["n_battles"] = out["n_battles"].round().astype(int)
    return out[[*RATING_COLUMNS, *(c for c in out.columns if c not in RATING_COLUMNS)]]


# ============================================================ slices
# A slice of a dataset: the battles whose prompt has every (key, value) given (an AND of terms).  ``language``
# and ``turn`` are read from the battle, ``category`` from its prompt, any other key from the prompt's
# attributes (``prompt_attributes``).  Terms are kept sorted, so one slice has one spelling (and one cache key).
Slice = tuple[tuple[str, str], ...]
BATTLE_SLICE_KEYS: tuple[str, ...] = ("language", "turn")
PROMPT_SLICE_KEYS: tuple[str, ...] = ("category",)
# Below this many battles carrying the fitted target, a slice's leaderboard says "too few" instead of a number.
MIN_SLICE_BATTLES = 20


def parse_slice(terms: Sequence[str] | None) -> Slice:
    """``["KEY=VALUE", …]`` → a :data:`Slice`; raises ``ValueError`` naming the malformed term."""
    out: dict[str, str] = {}
    for term in terms or ():
        key, sep, value = str(term).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ValueError(f"a slice is KEY=VALUE (e.g. language=en), got {term!r}")
        if key in out and out[key] != value:
            raise ValueError(f"slice key {key!r} given twice ({out[key]!r} and {value!r}): no battle has both")
        out[key] = value
    return tuple(sorted(out.items()))


def slice_label(where: Slice) -> str:
    """How a slice reads on screen and in files: ``category = coding, language = en`` ('' for all battles)."""
    return ", ".join(f"{k} = {v}" for k, v in where)


# ============================================================ dataset tables
# Required and optional columns of each table a dataset writes.  Keys are local
# to the dataset (``prompt_key``, ``battle_key``): the store assigns global ids.
# Human winners are HUMAN_WINNERS, verdicts VERDICTS, always in battle terms;
# missing values are NaN / None / NA, never a sentinel number.
TABLE_SPEC: dict[str, dict[str, tuple[str, ...]]] = {
    "models": {
        "required": ("model",),
        "optional": ("family", "true_elo", "notes"),
    },
    "prompts": {
        "required": ("prompt_key",),
        "optional": ("external_id", "text", "language", "category", "reference", "verifiable", "turns"),
    },
    # what a layout says about a prompt beyond its text (Arena-Hard's cluster, LMArena's tags, the demo's
    # topic): one row per (prompt, key), the value as text; the slices of a leaderboard (``Slice``)
    "prompt_attributes": {
        "required": ("prompt_key", "key", "value"),
        "optional": (),
    },
    "completions": {
        "required": ("prompt_key", "model"),
        "optional": (
            "text",
            "length",
            "n_headers",
            "n_bold",
            "n_list_items",
            "correct",
            "echo",
            "direct_label",
            "turns",
            "n_tokens",
        ),
    },
    "battles": {
        "required": ("battle_key", "model_a", "model_b"),
        "optional": ("prompt_key", "external_id", "language", "turn", "tstamp"),
    },
    "votes": {
        "required": ("battle_key", "winner"),
        "optional": ("annotator", "shown_order", "voted_at", "source"),
    },
    "annotators": {
        "required": ("annotator",),
        "optional": ("kind", "true_ability"),
    },
    "judges": {
        "required": ("judge",),
        "optional": ("family", "model", "base_url", "template", "prompt_version", "profile", "params_json"),
    },
    "judgments": {
        "required": ("battle_key", "judge", "order"),
        "optional": (
            "prompt_version",
            "verdict",
            *SCORE_COLUMNS,
            "p_a",
            "confidence",
            "raw_output",
            "parse_error",
            "latency_ms",
            "prompt_tokens",
            "completion_tokens",
            "variant",
            "grade",
        ),
    },
    # single-answer grades (FastChat's MT-Bench ``--mode single``): one judge's grade of one model's answer to a
    # prompt (a question at a turn); ``score`` missing when the judge's grade could not be read, ``run`` 1 for the
    # first grade of that answer by that judge, 2, 3, … for the grades of runs appended later
    "grades": {
        "required": ("prompt_key", "model", "judge"),
        "optional": ("prompt_version", "turn", "run", "score", "raw_output", "parse_error"),
    },
}


@dataclass
class DatasetTables:
    """One dataset's rows, ready for :meth:`core.store.Store.write_dataset`.

    Importers and the demo simulator produce it.  ``meta`` holds free-form
    facts about the dataset (source, seed, ground-truth parameters), stored as
    JSON.
    """

    name: str
    source: str
    models: pd.DataFrame
    battles: pd.DataFrame
    prompts: pd.DataFrame | None = None
    prompt_attributes: pd.DataFrame | None = None
    completions: pd.DataFrame | None = None
    votes: pd.DataFrame | None = None
    annotators: pd.DataFrame | None = None
    judges: pd.DataFrame | None = None
    judgments: pd.DataFrame | None = None
    grades: pd.DataFrame | None = None
    meta: dict = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables present, by name (absent optional tables are left out)."""
        out = {}
        for name in TABLE_SPEC:
            df = getattr(self, name)
            if df is not None:
                out[name] = df
        return out


# ============================================================ dataset names
MAX_DATASET_NAME = 100


def dataset_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a dataset (None when it can).

    A dataset name comes from a file's or folder's name, a bundle's manifest or ``--dataset``; it is shown on
    every page, put in the URL and in export file names, so it is a line of printable text of at most
    ``MAX_DATASET_NAME`` characters without path separators (a manifest naming ``../../etc/passwd`` or a
    5,000-character name is refused like any bad field).
    """
    if not isinstance(name, str):
        return f"expected text, got {type(name).__name__}"
    if not name.strip():
        return "empty"
    if len(name) > MAX_DATASET_NAME:
        return f"{len(name):,} characters (at most {MAX_DATASET_NAME})"
    if name != name.strip():
        return "leading or trailing spaces"
    if any(ch in name for ch in "/\\") or name in (".", ".."):
        return "a path, not a name (no '/' or '\\', not '.' or '..')"
    if any(not ch.isprintable() for ch in name):
        return "a control character"
    return None
