"""A minimal check that text really repeats itself at the end (used to validate simulated echo)."""

from __future__ import annotations

import re


def has_trailing_repetition(text: str) -> bool:
    """True when the last paragraph repeats a sentence or a Question/Answer block."""
    tail = text.strip().split("\n\n")[-1]
    if len(re.findall(r"^Question:", tail, flags=re.M)) >= 2:
        return True
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", tail) if s.strip()]
    return len(sentences) >= 2 and len(set(sentences)) < len(sentences)
