"""Echo detector: the paper's definitions and examples (Appendix G.2), real answers, simulated truth."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.simulate import DemoConfig, simulate_arena
from core.text import detect_echo, make_echo_variant
from tests.conftest import shared_path

ECHO = [
    # pattern echo: new question–answer pairs after the answer (G.2 example 2)
    ("What is 2+2?", "4. Q: What is 3+3? A: 6. Q: What is 4+4? A: 8.", "pattern"),
    ("What is 2+2?", "A: 4\nQ: What is 5+5?\nA: 10", "pattern"),
    # phrase / token echo (G.2 description)
    ("What is 6*7?", "6*7 = 42. The answer is 42. The answer is 42. The answer is 42. The answer", "phrase"),
    ("Compute (4+5).", "The result is 9 (4+5))))))))))", "token"),
    ("Name a prime.", "Seven is prime. seven is prime seven is prime seven is prime seven is prime", "phrase"),
]
NO_ECHO = [
    ("What is the capital of France?", "Paris."),  # G.2 example 1
    ("What is 12+30?", "12+30=42. The final answer is 42."),  # rephrased final answer
    ("How many legs?", "Let me check: is it 6? No, spiders have 8. So the answer is 8."),  # trial and error
    ("Explain TCP.", "TCP is a transport protocol. " * 2 + "It guarantees ordered delivery."),  # verbose, stops
    ("Solve it.", "First, what is x? We know x = 3. Then y = 2x, so y = 6. The answer is 6."),  # sub-questions
    ("Write Lisp.", "```lisp\n(defun f (x) (if (> x 0) (g (h (i x))) nil))))))))))\n```\nDone."),  # code
]


@pytest.mark.parametrize("question,text,kind", ECHO)
def test_echo_examples(question, text, kind):
    r = detect_echo(text, question)
    assert r.is_echo and r.kind == kind and r.evidence


@pytest.mark.parametrize("question,text", NO_ECHO)
def test_no_echo_examples(question, text):
    assert not detect_echo(text, question).is_echo


def test_intervention_text_is_detected():
    q, a = "Which is larger, 7 or 9?", "9 is larger."
    echoed = make_echo_variant(q, a, times=3)
    assert echoed.count("Question: " + q) == 3 and echoed.startswith(a)
    assert detect_echo(echoed, q).is_echo


def test_real_arena_hard_answers_are_not_flagged():
    root = shared_path("arena_hard_v0.1")
    texts = []
    for f in sorted((root / "model_answer").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            texts.append(json.loads(line)["messages"][-1]["content"]["answer"])
    assert len(texts) == 1500
    flagged = sum(detect_echo(t).is_echo for t in texts)
    assert flagged / len(texts) <= 0.02


def test_precision_and_recall_against_the_simulator():
    c = simulate_arena(3, DemoConfig.small()).completions
    pred = np.array([detect_echo(t).is_echo for t in c["text"]])
    truth = c["echo"].to_numpy(bool)
    tp = (pred & truth).sum()
    assert tp / pred.sum() >= 0.9 and tp / truth.sum() >= 0.9
