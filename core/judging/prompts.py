"""Judge prompts, written after the papers' protocols (their structure and criteria, our wording).

* rubric     — Soft-Elo Appendix A: six criteria scored 1–10 for each answer, JSON first.
* ab-logprob — SCOPE B.3: answer with a single label, A or B; the first token's
               log-probabilities give P(A).
* two-stage  — consistency proxy A.1: reason briefly, then give the preference.
* echo       — correct-looks-better G.2: classify one response as ECHO / NO_ECHO.
"""

from __future__ import annotations

from core.domain import CRITERIA

TEMPLATE_VERSIONS = {"rubric": "v1", "ab-logprob": "v1", "two-stage": "v1", "echo": "v1"}

RUBRIC_SYSTEM = (
    "You are an impartial judge of two assistant answers to the same user request. Score EACH answer on six "
    "criteria from 1 (very poor) to 10 (excellent), independently of the order in which they are shown:\n"
    "- adherence: follows the instructions and constraints of the request\n"
    "- helpfulness: actually solves the user's problem\n"
    "- factuality: statements are correct and not invented\n"
    "- completeness: covers what the request needs, without omissions\n"
    "- clarity: well organised and easy to follow\n"
    "- fluency: natural, readable language and formatting\n"
    "Reply with a JSON object first, exactly of the form "
    '{"A": {"adherence": n, "helpfulness": n, "factuality": n, "completeness": n, "clarity": n, "fluency": n}, '
    '"B": {...}}. An explanation may follow the JSON, but is not required.'
)

AB_SYSTEM = (
    "You compare two assistant answers to the same user request and decide which one is better overall "
    "(helpful, correct, clear). Ignore the order in which they appear and their length. Reply with a single "
    "letter: A if Answer A is better, B if Answer B is better. Output nothing else."
)

TWO_STAGE_SYSTEM = (
    "You compare two assistant answers to the same user request. First reason briefly about their strengths and "
    "weaknesses. Then give your final decision on the last line exactly as [[A]] if Answer A is better, [[B]] if "
    "Answer B is better, or [[C]] for a tie."
)

ECHO_SYSTEM = (
    "You will see a question and a model response. Decide whether the response shows ECHO: after giving its final "
    "answer, the model fails to stop and repeats the same phrase or token many times, or generates new "
    "question-answer pairs in the style of the original (even one new pair counts). It is NOT echo when the model "
    "stops after its answer, rephrases the final answer once, reasons with sub-questions without writing a new "
    "question-answer pair, is simply verbose, or runs out of tokens mid-reasoning. Reply with ECHO or NO_ECHO only."
)


def _pair_message(prompt: str, first: str, second: str) -> str:
    return (
        f"[User request]\n{prompt}\n\n[Answer A]\n{first}\n[End of Answer A]\n\n[Answer B]\n{second}\n[End of Answer B]"
    )


def render(template: str, prompt: str, text_a: str, text_b: str, order: str) -> list[dict]:
    """Chat messages for one call; ``order`` 'ab' shows the battle's a first, 'ba' shows b first."""
    first, second = (text_a, text_b) if order == "ab" else (text_b, text_a)
    if template == "rubric":
        return [
            {"role": "system", "content": RUBRIC_SYSTEM},
            {"role": "user", "content": _pair_message(prompt, first, second)},
        ]
    if template == "ab-logprob":
        return [
            {"role": "system", "content": AB_SYSTEM},
            {
                "role": "user",
                "content": _pair_message(prompt, first, second) + "\n\nWhich answer is better? Reply A or B.",
            },
        ]
    if template == "two-stage":
        return [
            {"role": "system", "content": TWO_STAGE_SYSTEM},
            {"role": "user", "content": _pair_message(prompt, first, second)},
        ]
    if template == "echo":
        return [
            {"role": "system", "content": ECHO_SYSTEM},
            {"role": "user", "content": f"[Question]\n{prompt}\n\n[Response]\n{text_a}"},
        ]
    raise ValueError(f"unknown template {template!r}")


__all__ = ["render", "TEMPLATE_VERSIONS", "CRITERIA"]
