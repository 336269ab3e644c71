"""AlpacaEval's fixed instruction difficulties, estimated once (scripts/fit_alpaca_eval_difficulty.py).

AlpacaEval fits each model's length-controlled GLM alone, against per-instruction difficulties fitted once over
its leaderboard, so a model's LC does not depend on which other models are being scored.  Those difficulties
are downloaded by AlpacaEval at run time and are not available offline; the file read here holds an estimate
on AlpacaEval's own scale (how it was made, and how well it reproduces the published LCs, is in the script and
in docs/benchmarks.md).  Instructions are matched by the SHA-256 of their text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent / "reference" / "alpaca_eval_lc.json"


def instruction_digest(text: str) -> str:
    """The key of an instruction in the reference: the first 16 hex digits of its UTF-8 SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class LCReference:
    """Fixed difficulties γ (by instruction digest) for comparisons of ``judge``'s against ``baseline``.

    ``difficulty_mean`` is the prior mean of γ, used for an instruction the reference does not hold;
    ``slope_mean``/``slope_precision`` the normal prior on the length slope of ``judge`` (in the
    model-minus-baseline orientation of :func:`core.stats.winrate.length_feature`).
    """

    judge: str
    baseline: str
    difficulty: dict[str, float]
    difficulty_mean: float
    slope_mean: float
    slope_precision: float

    def covers(self, baseline: str, instructions: list[str]) -> bool:
        """Whether the reference is for this baseline and holds most of these instructions."""
        if baseline != self.baseline or not instructions:
            return False
        known = sum(instruction_digest(x) in self.difficulty for x in instructions)
        return known >= 0.9 * len(instructions)

    def gamma(self, instruction: str) -> float | None:
        return self.difficulty.get(instruction_digest(instruction))


@lru_cache(maxsize=1)
def alpaca_eval_reference() -> LCReference:
    data = json.loads(OUTPUT.read_text())
    return LCReference(
        judge=str(data["judge"]),
        baseline=str(data["baseline"]),
        difficulty={str(k): float(v) for k, v in data["difficulty"].items()},
        difficulty_mean=float(data["difficulty_prior"]["mean"]),
        slope_mean=float(data["slope_prior"]["mean"]),
        slope_precision=float(data["slope_prior"]["precision"]),
    )
