"""Judge prompts, written after the papers' protocols (their structure and criteria, our wording).

* rubric     — Soft-Elo Appendix A: six criteria scored 1–10 for each answer, JSON first.
* ab-logprob — SCOPE B.3: answer with a single label, A or B; the first token's
               log-probabilities give P(A).
* two-stage  — consistency proxy A.1: reason briefly, then give the preference.
* echo       — correct-looks-better G.2: classify one response as ECHO / NO_ECHO.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.domain import CRITERIA

# a multi-turn conversation: the user's turns, side a's answers, side b's answers (battle terms)
Turns = tuple[Sequence[str | None], Sequence[str | None], Sequence[str | None]]

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


def _conversation_message(
    asked: Sequence[str | None], first: Sequence[str | None], second: Sequence[str | None]
) -> str:
    """Both conversations, turn by turn: the user's turns are the same on both sides, the answers differ."""

    def transcript(label: str, answers: Sequence[str | None]) -> str:
        lines = [f"[Conversation with Assistant {label}]"]
        for k, question in enumerate(asked):
            answer = answers[k] if k < len(answers) else None
            lines.append(f"[User, turn {k + 1}]\n{question or ''}")
            lines.append(f"[Assistant {label}, turn {k + 1}]\n{answer or ''}")
        lines.append(f"[End of conversation with Assistant {label}]")
        return "\n\n".join(lines)

    return (
        "Judge the assistants' answers over the whole conversation, the last turn included.\n\n"
        + transcript("A", first)
        + "\n\n"
        + transcript("B", second)
    )


def render(template: str, prompt: str, text_a: str, text_b: str, order: str, turns: Turns | None = None) -> list[dict]:
    """Chat messages for one call; ``order`` 'ab' shows the battle's a first, 'ba' shows b first.

    ``turns`` (the user's turns and each side's answers) shows a multi-turn conversation whole;
    without it, or with a single turn, the prompt and the two answers are shown as they are.
    """
    first, second = (text_a, text_b) if order == "ab" else (text_b, text_a)
    pair = _pair_message(prompt, first, second)
    if turns is not None and len(turns[0]) > 1:
        asked, turns_a, turns_b = turns
        pair = _conversation_message(asked, *((turns_a, turns_b) if order == "ab" else (turns_b, turns_a)))
    if template == "rubric":
        return [
            {"role": "system", "content": RUBRIC_SYSTEM},
            {"role": "user", "content": pair},
        ]
    if template == "ab-logprob":
        return [
            {"role": "system", "content": AB_SYSTEM},
            {"role": "user", "content": pair + "\n\nWhich answer is better? Reply A or B."},
        ]
    if template == "two-stage":
        return [
            {"role": "system", "content": TWO_STAGE_SYSTEM},
            {"role": "user", "content": pair},
        ]
    if template == "echo":
        return [
            {"role": "system", "content": ECHO_SYSTEM},
            {"role": "user", "content": f"[Question]\n{prompt}\n\n[Response]\n{text_a}"},
        ]
    raise ValueError(f"unknown template {template!r}")


__all__ = ["render", "TEMPLATE_VERSIONS", "CRITERIA", "Turns"]
