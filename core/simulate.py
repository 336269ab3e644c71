"""The demo arena: a seeded simulation with known ground truth.

Everything the dashboard shows can be checked against the truth stored
here: each model's true human Elo, each annotator's true ability, and each
judge's bias parameters and calibrated τ.

The truth is the estimand.  A model's ``true_elo`` is the human Bradley–Terry
Elo an unlimited crowd of the simulated annotators would give on the simulated
battles (:func:`human_estimand`): what the human fit estimates, so that its
95% intervals cover it at their stated rate.  The latent strength that
generates answer quality is kept apart (meta ``latent_elo``); it is about
twice as spread, since humans vote on noisy answers and a share of them are
ties, flips or coin tosses.  A judge's ``tau_star`` is the τ the same crowd
would fit to its score gaps (:func:`judge_tau_star`).

Generative story
----------------
* Models have a latent strength ``θ`` (logits; Elo = 1500 + 400/ln10·θ) spread
  over ~400 Elo, a family, a writing style (length, markdown propensity) and,
  for a few, a habit of *echoing* (repeating phrases or new Q/A pairs after the
  final answer).
* Each answer's quality is its model's θ plus noise.  Humans vote by
  Bradley–Terry on the two answers' quality through their own ability
  ``κ_k``: ``P(a) = σ(κ_k·(q_a − q_b))`` after a tie with probability
  ``TIE_SHARE``; honest annotators have κ in [0.6, 1.4], flippers κ < 0, and
  random voters κ = 0 (a coin toss); about 10% anomalous in all.
* A judge perceives each answer's quality with noise and scores six rubric
  criteria on 1–10.  The score gap (a − b) is ``(q_a − q_b + noise)/0.8`` plus
  the judge's biases, so ``σ(τ·gap)`` tracks the human win probability for a
  suitable τ (Soft-Elo's premise) while the sign alone (the hard label) throws
  the strength of preference away and stretches the Hard-Elo scale.
* Judges see each battle in both orders; first-token A/B probabilities come
  from the same perception, shifted by the judge's position bias.

The three judges:

``judge-strong``   calibrated, little noise, no position bias, mild echo penalty.
``judge-position`` favours whichever answer is shown first (+0.9 points per
                   criterion, +1.0 logit on the A/B token), noisier.
``judge-verbose``  rewards longer answers and markdown, prefers its own family
                   ("atlas"), and penalises echo strongly (the paper's finding).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from core.domain import CRITERIA, ELO_PER_LOGIT, OUTCOME_Y, DatasetTables, rubric_gap, sigmoid, theta_to_elo
from core.stats import bt
from core.stats.calibration import tau_mle
from core.text import style_counts

TIE_SHARE = 0.15
BOTH_BAD_SHARE_OF_TIES = 0.3
GAP_SCALE = 0.8  # a judge's rubric gap is its perceived quality difference divided by this (logits per point)
# Each answer's own quality varies around its model's strength; humans and
# judges both see it, which is why they agree more than strengths alone imply.
ANSWER_QUALITY_SD = 0.9

FAMILIES = ("atlas", "borealis", "cirrus", "dynamo", "ember", "fjord", "granite", "helix")
SIZES = ("1b", "3b", "7b", "13b", "34b", "70b")
LANGUAGES = ("en", "zh", "ru", "de", "fr", "es")
LANGUAGE_WEIGHTS = (0.50, 0.15, 0.11, 0.10, 0.08, 0.06)
CATEGORIES = ("coding", "writing", "math", "factual", "reasoning")
VERIFIABLE = ("math", "factual")
ECHO_MODELS_PER_ARENA = 4

TOPICS = (
    "binary search",
    "photosynthesis",
    "the French revolution",
    "compound interest",
    "TCP handshakes",
    "sourdough baking",
    "prime numbers",
    "climate feedback loops",
    "the Fourier transform",
    "haiku writing",
    "vaccine trials",
    "supply and demand",
    "garbage collection",
    "plate tectonics",
    "chess openings",
    "the Krebs cycle",
    "SQL joins",
    "Roman aqueducts",
    "the water cycle",
    "recursion",
)


@dataclass(frozen=True)
class DemoConfig:
    n_models: int = 48
    n_prompts: int = 600
    n_battles: int = 30_000
    n_annotators: int = 80
    n_flippers: int = 4
    n_random: int = 4
    elo_spread: float = 400.0
    verifiable_share: float = 0.35

    @classmethod
    def small(cls) -> DemoConfig:
        """A quick arena for tests: 12 models, 120 prompts, 4,000 battles."""
        return cls(n_models=12, n_prompts=120, n_battles=4_000, n_annotators=40, n_flippers=2, n_random=2)


@dataclass(frozen=True)
class JudgeProfile:
    name: str
    family: str
    description: str
    noise: float  # per-side perception noise (logits)
    order_noise: float  # extra noise per presentation order (logits)
    position_bonus: float  # rubric points added to the first-shown answer
    position_logit: float  # logit added to the first-shown answer's A/B token
    length_weight: float  # logits per unit of log length difference
    markdown_weight: float  # logits per markdown element difference (capped)
    self_family_bonus: float  # logits for answers from the judge's family
    echo_penalty: float  # logits subtracted from an echoing answer
    tie_band: float  # |gap| below this (points) gives a tie verdict


JUDGES = (
    JudgeProfile(
        "judge-strong",
        "orion",
        "strong and well calibrated: low noise, no position bias",
        noise=0.4,
        order_noise=0.15,
        position_bonus=0.0,
        position_logit=0.0,
        length_weight=0.0,
        markdown_weight=0.0,
        self_family_bonus=0.0,
        echo_penalty=0.25,
        tie_band=0.1,
    ),
    JudgeProfile(
        "judge-position",
        "cirrus",
        "position-biased: favours the answer shown first",
        noise=0.55,
        order_noise=0.3,
        position_bonus=0.9,
        position_logit=1.0,
        length_weight=0.0,
        markdown_weight=0.0,
        self_family_bonus=0.0,
        echo_penalty=0.25,
        tie_band=0.1,
    ),
    JudgeProfile(
        "judge-verbose",
        "atlas",
        "verbose and self-preferring: rewards length and markdown, prefers its own family (atlas), punishes echo",
        noise=0.5,
        order_noise=0.2,
        position_bonus=0.15,
        position_logit=0.15,
        length_weight=0.6,
        markdown_weight=0.06,
        self_family_bonus=0.45,
        echo_penalty=0.8,
        tie_band=0.1,
    ),
)


# ----------------------------------------------------------------- models
def _models(cfg: DemoConfig, rng: np.random.Generator) -> pd.DataFrame:
    n = cfg.n_models
    fam = [FAMILIES[k % len(FAMILIES)] for k in range(n)]
    names = []
    seen: dict[str, int] = {}
    for k in range(n):
        size = SIZES[(k // len(FAMILIES)) % len(SIZES)]
        base = f"{fam[k]}-{size}"
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}-v{seen[base]}")
    # Strength grows with size within a family, plus a family effect and noise.
    size_rank = np.array([(k // len(FAMILIES)) % len(SIZES) for k in range(n)], float)
    fam_effect = rng.normal(0, 0.35, len(FAMILIES))
    raw = 0.45 * size_rank + fam_effect[[FAMILIES.index(f) for f in fam]] + rng.normal(0, 0.3, n)
    raw = (raw - raw.mean()) / (raw.max() - raw.min()) * (cfg.elo_spread / ELO_PER_LOGIT)
    verbosity = rng.lognormal(0.0, 0.35, n)
    markdown = rng.beta(2, 3, n)
    echo_models = rng.choice(n, size=min(ECHO_MODELS_PER_ARENA, n // 3), replace=False)
    echo_rate = np.zeros(n)
    echo_rate[echo_models] = rng.uniform(0.5, 0.8, len(echo_models))
    return pd.DataFrame(
        {
            "model": names,
            "family": fam,
            "theta": raw,
            "latent_elo": theta_to_elo(raw, centre=False),
            "verbosity": verbosity,
            "markdown": markdown,
            "echo_rate": echo_rate,
        }
    )


# ---------------------------------------------------------------- prompts
def _prompts(cfg: DemoConfig, rng: np.random.Generator) -> pd.DataFrame:
    n = cfg.n_prompts
    lang = rng.choice(LANGUAGES, n, p=np.array(LANGUAGE_WEIGHTS) / sum(LANGUAGE_WEIGHTS))
    cat = rng.choice(CATEGORIES, n, p=[0.25, 0.2, 0.2, 0.2, 0.15])
    verifiable = np.isin(cat, VERIFIABLE) & (rng.random(n) < cfg.verifiable_share / 0.4)
    topic = rng.choice(TOPICS, n)
    x, y = rng.integers(12, 99, n), rng.integers(3, 40, n)
    texts: list[str] = []
    refs: list[str | None] = []
    for k in range(n):
        if verifiable[k] and cat[k] == "math":
            texts.append(f"What is {x[k]} times {y[k]}? Explain your steps briefly.")
            refs.append(str(int(x[k] * y[k])))
        elif verifiable[k]:
            texts.append(f"In one sentence, what is the key idea behind {topic[k]}?")
            refs.append(f"key idea of {topic[k]}")
        else:
            texts.append(
                {
                    "coding": f"Write a short function that demonstrates {topic[k]}.",
                    "writing": f"Write a short paragraph for a newsletter about {topic[k]}.",
                    "math": f"Give an intuitive explanation of {topic[k]} with a small example.",
                    "factual": f"Summarise what is known about {topic[k]}.",
                    "reasoning": f"What are the trade-offs involved in {topic[k]}?",
                }[cat[k]]
            )
            refs.append(None)
    return pd.DataFrame(
        {
            "prompt_key": np.arange(n, dtype=np.int64),
            "external_id": [f"demo-{k:04d}" for k in range(n)],
            "text": texts,
            "language": lang,
            "category": cat,
            "reference": refs,
            "verifiable": verifiable,
            "difficulty": rng.normal(0, 1, n),
            "topic": topic,
        }
    )


# ------------------------------------------------------------ completions
_SENTENCES = (
    "The core idea of {t} is easier to see with a concrete case.",
    "A common misconception about {t} is that it is harder than it looks.",
    "In practice, {t} comes down to a few simple rules.",
    "Most explanations of {t} skip the intuition, so let us start there.",
    "One useful way to think about {t} is as a sequence of small steps.",
    "Experts usually describe {t} in terms of inputs and outputs.",
    "The history of {t} explains many of its conventions.",
    "It helps to check each step of {t} against a simple example.",
)


def _completion_text(
    rng: np.random.Generator,
    topic: str,
    n_sent: int,
    headers: int,
    bold: int,
    items: int,
    answer: str | None,
    echo_kind: str | None,
    prompt_text: str,
) -> str:
    parts = []
    for h in range(headers):
        parts.append(f"## {'Overview' if h == 0 else 'Details'} of {topic}")
        break
    sents = [_SENTENCES[(rng.integers(len(_SENTENCES)) + k) % len(_SENTENCES)].format(t=topic) for k in range(n_sent)]
    for k in range(min(bold, len(sents))):
        sents[k] = sents[k].replace(topic, f"**{topic}**", 1)
    parts.append(" ".join(sents))
    if items:
        parts.append("\n".join(f"- Point {k + 1} about {topic}" for k in range(items)))
    if headers > 1:
        parts.append(f"## Summary of {topic}")
    final = f"The answer is {answer}." if answer is not None else f"In short, {topic} rewards careful thought."
    parts.append(final)
    if echo_kind == "repeat":
        parts.append(" ".join([final] * int(rng.integers(2, 5))))
    elif echo_kind == "qa":
        parts.append("\n".join(f"Question: {prompt_text}\nAnswer: {final}" for _ in range(int(rng.integers(2, 4)))))
    return "\n\n".join(parts)


def _completions(models: pd.DataFrame, prompts: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    n_m, n_p = len(models), len(prompts)
    pk = np.repeat(prompts["prompt_key"].to_numpy(), n_m)
    mi = np.tile(np.arange(n_m), n_p)
    pi = np.repeat(np.arange(n_p), n_m)
    theta = models["theta"].to_numpy()[mi]
    z = (theta - models["theta"].mean()) / models["theta"].std()
    verifiable = prompts["verifiable"].to_numpy()[pi]
    difficulty = prompts["difficulty"].to_numpy()[pi]
    p_correct = sigmoid(1.3 * z - difficulty + 0.3)
    correct = np.where(verifiable, rng.random(len(pk)) < p_correct, False)
    quality = theta + rng.normal(0, ANSWER_QUALITY_SD, len(pk))
    echo = rng.random(len(pk)) < models["echo_rate"].to_numpy()[mi]
    echo_kind = np.where(rng.random(len(pk)) < 0.5, "repeat", "qa")
    n_sent = np.clip(np.round(models["verbosity"].to_numpy()[mi] * rng.uniform(2, 6, len(pk))), 1, 14).astype(int)
    md = models["markdown"].to_numpy()[mi]
    headers = rng.binomial(2, md)
    bold = rng.binomial(3, md)
    items = rng.binomial(5, md * 0.8)
    refs = prompts["reference"].to_numpy()[pi]
    texts = []
    ptexts = prompts["text"].to_numpy()[pi]
    topics = prompts["topic"].to_numpy()[pi]
    for k in range(len(pk)):
        answer = None
        if verifiable[k]:
            answer = refs[k] if correct[k] else f"not {refs[k]}"
        texts.append(
            _completion_text(
                rng,
                topics[k],
                n_sent[k],
                headers[k],
                bold[k],
                items[k],
                answer,
                echo_kind[k] if echo[k] else None,
                ptexts[k],
            )
        )
    counts = [style_counts(t) for t in texts]
    # The simulated direct judge grades single answers, noisily.
    u = rng.random(len(pk))
    direct = np.where(
        correct,
        np.where(u < 0.85, "correct", np.where(u < 0.95, "incorrect", "not_attempted")),
        np.where(u < 0.6, "incorrect", np.where(u < 0.9, "correct", "not_attempted")),
    )
    return pd.DataFrame(
        {
            "prompt_key": pk,
            "model": models["model"].to_numpy()[mi],
            "text": texts,
            "length": [c.length for c in counts],
            "n_headers": [c.n_headers for c in counts],
            "n_bold": [c.n_bold for c in counts],
            "n_list_items": [c.n_list_items for c in counts],
            "correct": pd.Series(correct, dtype="boolean").where(verifiable),
            "echo": echo,
            "direct_label": pd.Series(direct, dtype=object).where(verifiable, None),
            "quality": quality,
        }
    )


# ---------------------------------------------------------------- battles
def _battles(cfg: DemoConfig, models: pd.DataFrame, prompts: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    n_m = len(models)
    popularity = rng.uniform(0.5, 1.5, n_m) * (1 + 0.5 * (models["theta"] - models["theta"].min()).to_numpy())
    popularity /= popularity.sum()
    a = rng.choice(n_m, cfg.n_battles, p=popularity)
    b = rng.choice(n_m, cfg.n_battles, p=popularity)
    clash = a == b
    while clash.any():
        b[clash] = rng.choice(n_m, clash.sum(), p=popularity)
        clash = a == b
    p = rng.integers(0, len(prompts), cfg.n_battles)
    return pd.DataFrame(
        {
            "battle_key": np.arange(cfg.n_battles, dtype=np.int64),
            "ia": a,
            "ib": b,
            "ip": p,
            "model_a": models["model"].to_numpy()[a],
            "model_b": models["model"].to_numpy()[b],
            "prompt_key": prompts["prompt_key"].to_numpy()[p],
            "language": prompts["language"].to_numpy()[p],
        }
    )


def _annotators(cfg: DemoConfig, rng: np.random.Generator) -> pd.DataFrame:
    n = cfg.n_annotators
    kind = np.array(["honest"] * n, dtype=object)
    idx = rng.permutation(n)
    kind[idx[: cfg.n_flippers]] = "flipper"
    kind[idx[cfg.n_flippers : cfg.n_flippers + cfg.n_random]] = "random"
    # 'random' voters ignore the answers (see _votes): their true ability is 0.
    ability = np.where(
        kind == "honest", rng.uniform(0.6, 1.4, n), np.where(kind == "flipper", -rng.uniform(0.5, 1.0, n), 0.0)
    )
    return pd.DataFrame({"annotator": [f"annotator-{k:03d}" for k in range(n)], "kind": kind, "true_ability": ability})


def _votes(
    battles: pd.DataFrame,
    models: pd.DataFrame,
    completions: pd.DataFrame,
    annotators: pd.DataFrame,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """One vote per battle.  Honest annotators and flippers vote by σ(κ·Δθ);
    'random' annotators have κ = 0: a tie as often as anyone, else a fair coin
    between the sides (their votes carry no information)."""
    n = len(battles)
    who = rng.integers(0, len(annotators), n)
    kappa = annotators["true_ability"].to_numpy()[who]  # 0 for random voters: σ(0) is a fair coin
    tie = rng.random(n) < TIE_SHARE
    a_wins = rng.random(n) < sigmoid(kappa * _quality_gap(battles, models, completions))
    both_bad = rng.random(n) < BOTH_BAD_SHARE_OF_TIES
    winner = np.where(tie, np.where(both_bad, "both_bad", "tie"), np.where(a_wins, "a", "b"))
    return pd.DataFrame(
        {
            "battle_key": battles["battle_key"].to_numpy(),
            "winner": winner,
            "annotator": annotators["annotator"].to_numpy()[who],
        }
    )


# ----------------------------------------------------------------- judges
@dataclass(frozen=True)
class SideFeatures:
    """What a simulated judge perceives of each side of a set of battles."""

    theta_a: np.ndarray  # perceived answer quality (model strength + answer variation)
    theta_b: np.ndarray
    len_a: np.ndarray
    len_b: np.ndarray
    md_a: np.ndarray
    md_b: np.ndarray
    family_a: np.ndarray
    family_b: np.ndarray
    echo_a: np.ndarray
    echo_b: np.ndarray


class SimulatedJudge:
    """A judge of the demo arena: rubric scores, verdicts and A/B probabilities."""

    def __init__(self, profile: JudgeProfile):
        self.profile = profile

    def bias_logits(self, f: SideFeatures) -> np.ndarray:
        """Preference for a over b (logits) from everything but true quality and position."""
        pr = self.profile
        md = np.clip(f.md_a - f.md_b, -10, 10)
        return (
            pr.length_weight * (np.log1p(f.len_a) - np.log1p(f.len_b))
            + pr.markdown_weight * md
            + pr.self_family_bonus * ((f.family_a == pr.family).astype(float) - (f.family_b == pr.family))
            - pr.echo_penalty * (f.echo_a.astype(float) - f.echo_b.astype(float))
        )

    def judge(self, f: SideFeatures, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Both presentation orders of every battle; results in battle terms."""
        pr = self.profile
        n = len(f.theta_a)
        shared = rng.normal(0, pr.noise, (2, n))  # per-side perception, shared by both orders
        perceived = f.theta_a - f.theta_b + shared[0] - shared[1] + self.bias_logits(f)
        out: dict[str, np.ndarray] = {}
        for order in ("ab", "ba"):
            logit = perceived + rng.normal(0, pr.order_noise, n)
            first_is_a = order == "ab"
            # Mean score gap (points) a − b, position bonus to whoever is shown first.
            gap = logit / GAP_SCALE + (pr.position_bonus if first_is_a else -pr.position_bonus)
            centre = 7.0 + rng.normal(0, 0.6, n)
            crit_noise = rng.normal(0, 0.5, (len(CRITERIA), n))
            scores_a = np.clip(np.round(2 * (centre + gap / 2 + crit_noise)) / 2, 1, 10)
            scores_b = np.clip(np.round(2 * (centre - gap / 2 - crit_noise[::-1])) / 2, 1, 10)
            realised = (scores_a - scores_b).mean(axis=0)
            verdict = np.where(np.abs(realised) < pr.tie_band, "tie", np.where(realised > 0, "a", "b"))
            first_logit = (logit if first_is_a else -logit) + pr.position_logit + rng.normal(0, 0.15, n)
            p_first = sigmoid(first_logit)
            out[f"p_a_{order}"] = p_first if first_is_a else 1 - p_first
            out[f"verdict_{order}"] = verdict
            for k, c in enumerate(CRITERIA):
                out[f"a_{c}_{order}"] = scores_a[k]
                out[f"b_{c}_{order}"] = scores_b[k]
        return out


def _side_features(
    battles: pd.DataFrame,
    models: pd.DataFrame,
    completions: pd.DataFrame,
    echo_override: tuple[str, np.ndarray] | None = None,
) -> SideFeatures:
    n_m = len(models)
    key_a = battles["prompt_key"].to_numpy() * n_m + battles["ia"].to_numpy()
    key_b = battles["prompt_key"].to_numpy() * n_m + battles["ib"].to_numpy()
    md = (completions["n_headers"] + completions["n_bold"] + completions["n_list_items"]).to_numpy(float)
    ln = completions["length"].to_numpy(float)
    echo = completions["echo"].to_numpy(bool)
    fam = models["family"].to_numpy()
    q = completions["quality"].to_numpy()
    ea, eb = echo[key_a].copy(), echo[key_b].copy()
    la, lb = ln[key_a].copy(), ln[key_b].copy()
    if echo_override is not None:
        side, extra = echo_override
        if side == "a":
            ea[:] = True
            la += extra
        else:
            eb[:] = True
            lb += extra
    return SideFeatures(
        q[key_a], q[key_b], la, lb, md[key_a], md[key_b], fam[battles["ia"]], fam[battles["ib"]], ea, eb
    )


def _judgments(
    battles: pd.DataFrame, models: pd.DataFrame, completions: pd.DataFrame, rng: np.random.Generator
) -> pd.DataFrame:
    feats = _side_features(battles, models, completions)
    frames = []
    for profile in JUDGES:
        res = SimulatedJudge(profile).judge(feats, rng)
        for order in ("ab", "ba"):
            n = len(battles)
            df = pd.DataFrame(
                {
                    "battle_key": battles["battle_key"].to_numpy(),
                    "judge": profile.name,
                    "order": order,
                    "prompt_version": "sim-v1",
                    "verdict": res[f"verdict_{order}"],
                    "p_a": res[f"p_a_{order}"],
                }
            )
            for c in CRITERIA:
                df[f"a_{c}"] = res[f"a_{c}_{order}"]
                df[f"b_{c}"] = res[f"b_{c}_{order}"]
            df["latency_ms"] = rng.lognormal(6.5, 0.4, n)
            df["prompt_tokens"] = rng.integers(400, 1600, n)
            df["completion_tokens"] = rng.integers(60, 140, n)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------- main
def _world(seed: int, cfg: DemoConfig) -> tuple:
    """Models, prompts, completions and battles, and the generator positioned after them.

    Shared by the arena and the echo intervention so that both see the same answers.
    """
    rng = np.random.default_rng(seed)
    models = _models(cfg, rng)
    prompts = _prompts(cfg, rng)
    completions = _completions(models, prompts, rng)
    battles = _battles(cfg, models, prompts, rng)
    return rng, models, prompts, completions, battles


def _quality_gap(battles: pd.DataFrame, models: pd.DataFrame, completions: pd.DataFrame) -> np.ndarray:
    """Answer quality of a minus that of b in each battle (what a voter with κ = 1 judges by)."""
    n_m = len(models)
    q = completions["quality"].to_numpy()
    pk = battles["prompt_key"].to_numpy()
    return q[pk * n_m + battles["ia"].to_numpy()] - q[pk * n_m + battles["ib"].to_numpy()]


def expected_vote(
    battles: pd.DataFrame, models: pd.DataFrame, completions: pd.DataFrame, annotators: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """Per battle, what an unlimited crowd of the simulated annotators says about it.

    Returns (the expected target y, ties counting one half; the probability that
    a decisive vote prefers a), averaged over the annotators, each equally
    likely to cast a battle's vote (as in :func:`_votes`).
    """
    dq = _quality_gap(battles, models, completions)
    kappa = annotators["true_ability"].to_numpy()
    decisive_a = sigmoid(kappa[None, :] * dq[:, None]).mean(axis=1)
    return TIE_SHARE * OUTCOME_Y["tie"] + (1 - TIE_SHARE) * decisive_a, decisive_a


def human_estimand(battles: pd.DataFrame, models: pd.DataFrame, expected_y: np.ndarray) -> np.ndarray:
    """The Elo the human Bradley–Terry fit estimates: the fit on the expected votes of these battles.

    With one vote per battle the likelihood's expectation over the voters is
    the likelihood of the expected targets, so this is exactly the Elo an
    unlimited crowd of the simulated annotators would produce on these battles.
    """
    names = models["model"].to_numpy(dtype=object)
    comps = bt.comparisons_from_battles(
        names[battles["ia"].to_numpy()], names[battles["ib"].to_numpy()], expected_y, models=list(names)
    )
    return np.asarray(bt.fit_bt(comps).elo)


def judge_tau_star(judgments: pd.DataFrame, battles: pd.DataFrame, decisive_a: np.ndarray) -> dict[str, float]:
    """Per judge, the τ an unlimited crowd of humans would fit to its score gaps (METHODS §2 on expected votes)."""
    out = {}
    key = pd.Series(np.arange(len(battles)), index=battles["battle_key"].to_numpy())
    for judge, j in judgments.groupby("judge"):
        gap = rubric_gap(
            j[[f"a_{c}" for c in CRITERIA]].to_numpy(float), j[[f"b_{c}" for c in CRITERIA]].to_numpy(float)
        )
        per_battle = pd.Series(gap).groupby(j["battle_key"].to_numpy()).mean()
        rows = key.reindex(per_battle.index).to_numpy()
        out[str(judge)] = float(tau_mle(per_battle.to_numpy(float), decisive_a[rows]))
    return out


def simulate_arena(seed: int = 0, config: DemoConfig | None = None) -> DatasetTables:
    """Build the demo arena (deterministic for a given seed and config).

    Each model's ``true_elo`` is the estimand of the human fit (what an
    unlimited crowd of the simulated annotators would give on these battles);
    the latent strength that generates answer quality is kept apart in the
    dataset's meta (``latent_elo``), and ``tau_star`` holds each judge's τ on
    the same footing.
    """
    cfg = config or DemoConfig()
    rng, models, prompts, completions, battles = _world(seed, cfg)
    annotators = _annotators(cfg, rng)
    votes = _votes(battles, models, completions, annotators, rng)
    judgments = _judgments(battles, models, completions, rng)
    expected_y, decisive_a = expected_vote(battles, models, completions, annotators)
    models["true_elo"] = human_estimand(battles, models, expected_y)
    tau_star = judge_tau_star(judgments, battles, decisive_a)
    # Store only the completions that battles use.
    used = set(zip(battles["prompt_key"], battles["model_a"])) | set(zip(battles["prompt_key"], battles["model_b"]))
    keep = [(p, m) in used for p, m in zip(completions["prompt_key"], completions["model"])]
    judges = pd.DataFrame(
        {
            "judge": [j.name for j in JUDGES],
            "family": [j.family for j in JUDGES],
            "model": [f"sim/{j.name}" for j in JUDGES],
            "template": "rubric",
            "prompt_version": "sim-v1",
            "profile": [j.description for j in JUDGES],
            "params_json": [json.dumps({**asdict(j), "tau_star": tau_star[j.name]}) for j in JUDGES],
        }
    )
    meta = {
        "seed": seed,
        "config": asdict(cfg),
        "tau_star": tau_star,
        "latent_elo": dict(zip(models["model"], models["latent_elo"].round(3))),
        "truth": "true_elo = the human Bradley–Terry Elo of an unlimited crowd of the simulated annotators on these "
        "battles (the human fit's estimand); latent_elo = the strength that generates answer quality",
        "tie_share": TIE_SHARE,
        "echo_models": models.loc[models["echo_rate"] > 0, "model"].tolist(),
        "description": "seeded demo arena with stored ground truth (core/simulate.py)",
    }
    return DatasetTables(
        name="demo",
        source="simulated",
        models=models[["model", "family", "true_elo"]],
        prompts=prompts[["prompt_key", "external_id", "text", "language", "category", "reference", "verifiable"]],
        prompt_attributes=pd.DataFrame(
            {"prompt_key": prompts["prompt_key"], "key": "topic", "value": prompts["topic"]}
        ),
        completions=completions[np.array(keep)].reset_index(drop=True),
        battles=battles[["battle_key", "model_a", "model_b", "prompt_key", "language"]],
        votes=votes,
        annotators=annotators,
        judges=judges,
        judgments=judgments,
        meta=meta,
    )


def rejudge_with_echo(
    seed: int,
    judge: str,
    sample_size: int = 300,
    config: DemoConfig | None = None,
) -> pd.DataFrame:
    """The echo intervention on the simulated judge (``correct-looks-better.txt`` §5.4).

    Re-judges a sample of battles three ways: original, with the question–answer
    text appended three times to side a (echo on a: the answer gains the echo
    flag and that text's length), and the same on side b.  Returns
    battle_key, variant ('original', 'echo_a', 'echo_b'), order, p_a, verdict.
    """
    cfg = config or DemoConfig()
    _, models, prompts, completions, battles = _world(seed, cfg)
    profile = next((j for j in JUDGES if j.name == judge), None)
    if profile is None:
        raise ValueError(f"unknown simulated judge {judge!r}; expected one of {[j.name for j in JUDGES]}")
    sample_rng = np.random.default_rng(seed + 1)
    pick = np.sort(sample_rng.choice(len(battles), min(sample_size, len(battles)), replace=False))
    sample = battles.iloc[pick].reset_index(drop=True)
    extra = 3 * (prompts["text"].str.len().to_numpy()[sample["ip"]] + 40)
    frames = []
    for variant, override in (("original", None), ("echo_a", ("a", extra)), ("echo_b", ("b", extra))):
        feats = _side_features(sample, models, completions, echo_override=override)
        res = SimulatedJudge(profile).judge(feats, np.random.default_rng(seed + 2))
        for order in ("ab", "ba"):
            frames.append(
                pd.DataFrame(
                    {
                        "battle_key": sample["battle_key"].to_numpy(),
                        "variant": variant,
                        "order": order,
                        "p_a": res[f"p_a_{order}"],
                        "verdict": res[f"verdict_{order}"],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)
