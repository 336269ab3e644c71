"""Markdown style counts of a completion (the style-control features).

Counted per line so that code blocks do not inflate them: a header is a line
starting with 1–6 ``#`` and a space, a list item a line starting with ``-``,
``*``, ``+`` or ``N.`` / ``N)`` followed by a space, bold a ``**…**`` or
``__…__`` span.  Lines inside fenced code blocks are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
