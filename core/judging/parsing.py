"""Judge output → a judgment in battle terms, or a stored parse error.

Unparseable output is never dropped and never counted as a verdict: the
caller stores the raw text with ``parse_error`` set.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from core.domain import CRITERIA


@dataclass
class Parsed:
    verdict: str | None = None  # battle terms: 'a', 'b', 'tie'
    scores: dict = field(default_factory=dict)  # a_<crit>, b_<crit> in battle terms
    p_a: float | None = None  # P(battle's a wins) from first-token A/B probabilities
    confidence: float | None = None
    parse_error: str | None = None
    extra: dict = field(default_factory=dict)


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def _first_json_object(text: str) -> dict | None:
    """The first balanced {...} that parses as JSON (fenced or bare, prose around it)."""
    m = _FENCED.search(text)
    if m:
        try:
            return json.loads(m.group(1))
        except json.JSONDecodeError:
            pass
    start = text.find("{")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for k in range(start, len(text)):
            ch = text[k]
            if in_str:
                esc = (ch == "\\") and not esc
                if ch == '"' and not esc:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[start : k + 1])
                        if isinstance(obj, dict):
                            return obj
                    except json.JSONDecodeError:
                        break
                    break
        start = text.find("{", start + 1)
    return None


def _to_battle_side(label: str, order: str) -> str:
    """Position label A/B → battle side a/b."""
    return {("A", "ab"): "a", ("B", "ab"): "b", ("A", "ba"): "b", ("B", "ba"): "a"}[(label, order)]


def parse_rubric(text: str | None, order: str) -> Parsed:
    if not text or not text.strip():
        return Parsed(parse_error="empty output")
    obj = _first_json_object(text)
    if obj is None:
        return Parsed(parse_error="no JSON object found in the output")
    keys = {k.strip().upper(): v for k, v in obj.items()}
    out = Parsed()
    for label in ("A", "B"):
        side = keys.get(label) or keys.get(f"ANSWER {label}") or keys.get(f"ANSWER_{label}")
        if not isinstance(side, dict):
            return Parsed(parse_error=f"scores for answer {label} missing")
        norm = {str(k).strip().lower(): v for k, v in side.items()}
        for c in CRITERIA:
            v = norm.get(c)
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    return Parsed(parse_error=f"answer {label}: criterion {c!r} is not a number ({v!r})")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                return Parsed(parse_error=f"answer {label}: criterion {c!r} missing or not a number")
            if not 1 <= v <= 10:
                return Parsed(parse_error=f"answer {label}: criterion {c!r} = {v} outside 1–10")
            out.scores[f"{_to_battle_side(label, order)}_{c}"] = float(v)
    gap = sum(out.scores[f"a_{c}"] - out.scores[f"b_{c}"] for c in CRITERIA) / len(CRITERIA)
    out.verdict = "a" if gap > 0 else ("b" if gap < 0 else "tie")
    return out


def ab_probability(top_logprobs: list[dict] | None) -> float | None:
    """P(A) by a softmax over the 'A' and 'B' first-token log-probabilities; None when absent."""
    if not top_logprobs:
        return None
    best: dict[str, float] = {}
    for item in top_logprobs:
        tok = str(item.get("token", "")).strip().strip("[]()*.:").upper()
        lp = item.get("logprob")
        if tok in ("A", "B") and isinstance(lp, (int, float)) and math.isfinite(lp):
            best[tok] = max(best.get(tok, -math.inf), float(lp))
    if not best:
        return None
    la, lb = best.get("A", -math.inf), best.get("B", -math.inf)
    m = max(la, lb)
    ea, eb = math.exp(la - m), math.exp(lb - m)
    return ea / (ea + eb)


def parse_ab(text: str | None, order: str, top_logprobs: list[dict] | None) -> Parsed:
    p_first = ab_probability(top_logprobs)
    label = None
    if text:
        m = re.match(r"\s*\[*\(?\s*([AB])\b", text.strip(), re.I)
        if m:
            label = m.group(1).upper()
    if label is None and p_first is None:
        return Parsed(parse_error="output is neither A nor B and no A/B log-probabilities came back")
    out = Parsed()
    if p_first is not None:
        out.p_a = p_first if order == "ab" else 1 - p_first
    if label is None:
        assert p_first is not None  # checked above
        label = "A" if p_first >= 0.5 else "B"
    out.verdict = _to_battle_side(label, order)
    return out


def parse_two_stage(text: str | None, order: str) -> Parsed:
    if not text:
        return Parsed(parse_error="empty output")
    found = re.findall(r"\[\[\s*([ABC])\s*\]\]", text, re.I)
    if not found:
        return Parsed(parse_error="no final decision [[A]], [[B]] or [[C]] found")
    label = found[-1].upper()
    return Parsed(verdict="tie" if label == "C" else _to_battle_side(label, order))


def parse_echo(text: str | None) -> Parsed:
    if not text:
        return Parsed(parse_error="empty output")
    t = text.strip().upper()
    if re.search(r"\bNO[_ ]ECHO\b", t):
        return Parsed(extra={"echo": False})
    if re.search(r"\bECHO\b", t):
        return Parsed(extra={"echo": True})
    return Parsed(parse_error="neither ECHO nor NO_ECHO in the output")


def parse(template: str, text: str | None, order: str, top_logprobs: list[dict] | None = None) -> Parsed:
    if template == "rubric":
        return parse_rubric(text, order)
    if template == "ab-logprob":
        return parse_ab(text, order, top_logprobs)
    if template == "two-stage":
        return parse_two_stage(text, order)
    if template == "echo":
        return parse_echo(text)
    raise ValueError(f"unknown template {template!r}")
