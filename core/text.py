"""Features of an answer's text: markdown style counts and echo detection.

Style counts (the style-control features) are counted per line so that code
blocks do not inflate them: a header is a line starting with 1–6 ``#`` and a
space, a list item a line starting with ``-``, ``*``, ``+`` or ``N.`` / ``N)``
followed by a space, bold a ``**…**`` or ``__…__`` span.  Lines inside fenced
code blocks are skipped.

Echo detection follows ``correct-looks-better.txt`` Appendix F and G.2.

Echo: after its final answer the model fails to stop and repeats itself.
Two kinds, following the paper's definitions:

* phrase / token echo: the response ends in a run of the same phrase or token
  ("The answer is 42. The answer is 42. The answer", "(4+5))))))))))");
* pattern echo: new question–answer pairs after the answer, often repeating
  the original template ("Q: What is 3+3? A: 6. Q: What is 4+4? A: 8.").

Not echo: rephrasing the final answer once ("… 42. The final answer is 42."),
verbose answers that stop, reasoning with sub-questions but no new Q/A pair,
and truncated reasoning.  Fenced code is ignored: closing brackets or
repeated lines in code are not echo.

The echo thresholds are module constants chosen from the definitions: a
phrase seen three times in a row or a character run of ten is not how answers
end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import overload

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_LIST = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class StyleCounts:
    length: int
    n_headers: int
    n_bold: int
    n_list_items: int


@overload
def style_counts(text: str) -> StyleCounts: ...
@overload
def style_counts(text: None) -> None: ...
def style_counts(text: str | None) -> StyleCounts | None:
    """Length in characters and markdown counts; ``None`` for missing text."""
    if text is None:
        return None
    headers = bold = lists = 0
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        if _HEADER.match(line):
            headers += 1
        elif _LIST.match(line):
            lists += 1
        bold += len(_BOLD.findall(line))
    return StyleCounts(len(text), headers, bold, lists)


# ------------------------------------------------------------------ echo

MIN_PHRASE_REPEATS = 3  # the same trailing sentence/phrase, consecutively
MIN_SENTENCE_CHARS = 8  # shorter fragments ("Yes.") are not counted as phrases
MIN_TOKEN_RUN = 10  # the same non-space character repeated at the very end
MIN_QA_PAIRS = 2  # question–answer markers: the original pair plus at least one new one
TAIL_CHARS = 1500  # only the end of a long answer is inspected for phrase echo

_FENCED_CODE = re.compile(r"```.*?(```|$)", re.S)
_Q = re.compile(r"(?:^|\n|\s)(?:Q|Question)\s*\d*\s*[:：]", re.I)
_A = re.compile(r"(?:^|\n|\s)(?:A|Answer)\s*\d*\s*[:：]", re.I)
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class EchoResult:
    is_echo: bool
    kind: str | None  # 'token', 'phrase', 'pattern' or None
    evidence: str | None


def _strip_code(text: str) -> str:
    return _FENCED_CODE.sub(" ", text)


def _token_echo(t: str) -> str | None:
    m = re.search(rf"(\S)\1{{{MIN_TOKEN_RUN - 1},}}\s*$", t)
    return m.group(0).strip()[:40] if m else None


def _phrase_echo(t: str) -> str | None:
    tail = t[-TAIL_CHARS:]
    parts = [p.strip() for p in _SENT.split(tail) if p.strip()]
    if len(parts) >= MIN_PHRASE_REPEATS:
        # A truncated final fragment that starts the repeated sentence still counts.
        last = parts[-1]
        truncated = len(parts) >= 2 and parts[-2].startswith(last) and last != parts[-2]
        phrase = parts[-2] if truncated else last
        run = int(truncated)
        for p in reversed(parts[:-1] if truncated else parts):
            if p != phrase:
                break
            run += 1
        if run >= MIN_PHRASE_REPEATS and len(phrase) >= MIN_SENTENCE_CHARS:
            return phrase[:80]
    # a word n-gram (3–12 words) repeated back to back at the very end
    words = tail.split()
    for n in range(3, 13):
        if len(words) < n * MIN_PHRASE_REPEATS:
            break
        gram = words[-n:]
        reps = 1
        while len(words) >= n * (reps + 1) and words[-n * (reps + 1) : -n * reps] == gram:
            reps += 1
        if reps >= MIN_PHRASE_REPEATS and len(" ".join(gram)) >= MIN_SENTENCE_CHARS:
            return " ".join(gram)[:80]
    return None


def _pattern_echo(t: str, question: str | None) -> str | None:
    qs = [m.start() for m in _Q.finditer(t)]
    ans = [m.start() for m in _A.finditer(t)]
    # a question marker after an answer marker starts a new Q/A pair
    if ans and qs:
        first_answer = ans[0]
        new_q = [q for q in qs if q > first_answer]
        if new_q and any(a > new_q[0] for a in ans):
            pairs = 1 + len(new_q)
            if pairs >= MIN_QA_PAIRS:
                return t[new_q[0] : new_q[0] + 80].strip()
    if question:
        q = question.strip()
        if len(q) >= 20 and t.count(q[:120]) >= 2:
            return q[:80]
    return None


def detect_echo(text: str | None, question: str | None = None) -> EchoResult:
    """Classify one response as echo or not; ``question`` enables template matching."""
    if not text:
        return EchoResult(False, None, None)
    t = _strip_code(text).rstrip()
    for kind, fn in (("token", _token_echo), ("phrase", _phrase_echo)):
        ev = fn(t)
        if ev:
            return EchoResult(True, kind, ev)
    ev = _pattern_echo(t, question)
    if ev:
        return EchoResult(True, "pattern", ev)
    return EchoResult(False, None, None)


def make_echo_variant(question: str, answer: str, times: int = 3) -> str:
    """The paper's intervention: append the question–answer text ``times`` times."""
    block = f"Question: {question.strip()}\nAnswer: {answer.strip()}"
    return answer.rstrip() + "\n\n" + "\n\n".join([block] * times)


def json_lines(text: str) -> list[tuple[int, str]]:
    """The lines of a JSON Lines text with their 1-based line numbers, split on "\n" only (a "\r" before it
    is dropped).  ``str.splitlines`` also breaks at U+2028/U+2029, U+0085 and other separators that JSON
    strings may hold unescaped (Arena-Hard v2.0's question.jsonl has one), which would cut a valid record in two.
    """
    return [(i, line.removesuffix("\r")) for i, line in enumerate(text.split("\n"), start=1)]
