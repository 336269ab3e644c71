"""Text from imported files, shown as text.

Prompts, answers, model, judge, dataset and annotator names come from files
anyone can write.  Streamlit renders every string it is given for
``st.markdown``, ``st.caption``, alerts and widget labels as Markdown with
LaTeX (``$…$``), colour and icon directives (``:red[…]``), so such text could
draw images from outside servers in every viewer's browser (``![x](http://…)``)
or garble a sentence (a ``$`` pair turns into a formula).

:func:`escape_markdown` makes any string render as exactly its characters:
every Markdown, LaTeX and directive metacharacter is backslash-escaped
(CommonMark lets any ASCII punctuation be escaped), line breaks stay line
breaks and leading spaces stay spaces (never an indented code block).

:func:`neutralise_markdown` is for the one place imported text may be
rendered as Markdown at a reader's request (answers on the Vote page): the
formatting stays, but images are never loaded (they become a plain-text note
with their address) and raw HTML is shown as text.  Code spans and fenced
code blocks are left as they are (nothing in them renders).
"""

from __future__ import annotations

import re

# ASCII punctuation that means something anywhere in a line to CommonMark (emphasis, code, links and images, HTML,
# entities), GFM (tables, strikethrough, www. and e-mail autolinks), remark-math ($) or remark-directive (:name);
# each is escaped with a backslash.  ("![" needs only its "[" escaped to be no image.)
MARKDOWN_SPECIALS = frozenset("\\`*_[]<>$~:&|.")
# What starts a block only at the start of a line (heading, list, quote, setext underline, thematic break).
_BLOCK_START = re.compile(r"^(?:[#+=>-]|\d{1,9}(?=[.)]))")
_NBSP = "&nbsp;"  # an entity, not the character: a renderer may strip a paragraph's leading U+00A0
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_INLINE_IMAGE = re.compile(r"(?<!\\)((?:\\\\)*)!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+[^)]*)?\)")
_IMAGE_START = re.compile(r"(?<!\\)((?:\\\\)*)!\[")
_HTML_START = re.compile(r"(?<!\\)((?:\\\\)*)<")


def escape_markdown(text: object, at_line_start: bool = True) -> str:
    """``text`` (any value, as ``str()``) escaped so that Markdown shows it literally.

    No emphasis, heading, list, link, image, HTML, table, formula or
    directive survives; line breaks become hard line breaks, and leading
    spaces and tabs become no-break spaces (``&nbsp;``: so indentation shows
    and never makes a code block).  ``at_line_start=False``: the text follows
    other text on its first line (``f"### {…}"``), where no block can start.
    """
    lines = _LINE_BREAK.split(str(text))
    out = []
    for k, line in enumerate(lines):
        body = line.lstrip(" \t")
        lead = line[: len(line) - len(body)].replace("\t", "    ").replace(" ", _NBSP)
        escaped = "".join("\\" + ch if ch in MARKDOWN_SPECIALS else ch for ch in body)
        m = _BLOCK_START.match(escaped) if (k or at_line_start) and not lead else None
        if m:  # "1." / "1)": the escaped "." already stops an ordered list; ")" needs its backslash
            escaped = "\\" + escaped if not m.group(0)[0].isdigit() else _escape_list_number(escaped, m.end())
        out.append(lead + escaped)
    return "  \n".join(out)


def _escape_list_number(escaped: str, end: int) -> str:
    return escaped if escaped[end : end + 1] != ")" else escaped[:end] + "\\" + escaped[end:]


def _neutralise_prose(text: str) -> str:
    """Images and raw HTML of a stretch of Markdown that holds no code."""

    def image(m: re.Match[str]) -> str:
        alt, url = m.group(2), m.group(3)
        note = f"[image not loaded: {alt.strip() or 'no description'}" + (f" <{url}>]" if url else "]")
        return m.group(1) + escape_markdown(note)

    text = _INLINE_IMAGE.sub(image, text)
    text = _IMAGE_START.sub(lambda m: m.group(1) + "\\![", text)  # reference-style images: a link, never loaded
    return _HTML_START.sub(lambda m: m.group(1) + "&lt;", text)


def _neutralise_inline(text: str) -> str:
    """Outside code spans only (a code span shows its characters as they are)."""
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_neutralise_prose(text[last : m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_neutralise_prose(text[last:]))
    return "".join(out)


def neutralise_markdown(text: object) -> str:
    """Markdown from an untrusted source, safe to render: images are not loaded, raw HTML shows as text.

    An inline image ``![alt](url)`` becomes the text ``[image not loaded: alt <url>]``; a
    reference-style image becomes a link to its target; ``<`` outside code becomes ``&lt;``
    (so no tag is ever parsed).  Fenced code blocks and code spans are unchanged.
    """
    lines = _LINE_BREAK.split(str(text))
    chunks: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if fence is None and m:
            if prose:
                chunks.append(_neutralise_inline("\n".join(prose)))
                prose = []
            fence = m.group(1)
            chunks.append(line)
        elif fence is not None:
            chunks.append(line)
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and not line.strip()[len(m.group(1)) :]
            ):
                fence = None
        else:
            prose.append(line)
    if prose:
        chunks.append(_neutralise_inline("\n".join(prose)))
    return "\n".join(chunks)
