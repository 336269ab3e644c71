"""Imported text is shown as text: no Markdown image, HTML, formula or formatting from a prompt, an answer or a name.

The escaping is checked against a CommonMark renderer (markdown-it, with GFM tables and strikethrough and raw
HTML on: the worst case); the pages through AppTest on a dataset whose model names, answers, prompts and judge
descriptions carry images pointing at an outside server, HTML and ``$…$``.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from core.app import voting
from core.app.safe_text import escape_markdown, neutralise_markdown
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
HOSTILE = "$x$ ![i](http://127.0.0.1:9/x.png) <b>b</b>"
IMAGE = "![tracker](http://127.0.0.1:9/pixel.png)"
_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_FORMATTING = re.compile(r"<(?!/?p>|br />)[a-z/][^>]*>")  # any tag but paragraphs and line breaks


def _html(markdown: str) -> str:
    return _MD.render(markdown)


def _text(markdown: str) -> str:
    """What a reader sees of rendered Markdown: the text without tags, entities decoded, whitespace collapsed."""
    spaced = re.sub(r"<(?:br|/?p)\b[^>]*>", " ", _html(markdown))  # a line or paragraph break reads as a space
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", spaced)).replace("\u00a0", " ").split())


def _unescaped(markdown: str, token: str) -> bool:
    """Whether ``token`` occurs in ``markdown`` without a backslash escaping its first character."""
    return re.search(r"(?<!\\)(?:\\\\)*" + re.escape(token), markdown) is not None


# ------------------------------------------------------------------ escaping, against a CommonMark renderer
@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\u2028\u2029") | st.just("\n")))
def test_escaped_text_renders_as_exactly_its_characters(text):
    md = escape_markdown(text)
    rendered = _html(md)
    assert not _FORMATTING.search(rendered), (text, md, rendered)
    assert _text(md) == " ".join(text.replace("\u00a0", " ").split())
    assert not _unescaped(md, "$") and not _unescaped(md, "![") and not _unescaped(md, "<")


@pytest.mark.parametrize(
    "text",
    [
        HOSTILE,
        "# heading\n- item\n1. first\n> quote\n    indented code\n---\n| a | b |\n|---|---|\n| 1 | 2 |",
        "**bold** _em_ `code` ~~gone~~ [link](http://x) <http://y> &amp; :red[colour] :material/home:",
        "a\\$b\\$ \\![x](y) trailing backslash \\",
        "![ref][r]\n\n[r]: http://127.0.0.1:9/r.png",
    ],
)
def test_markdown_metacharacters_are_shown_literally(text):
    md = escape_markdown(text)
    assert "<img" not in _html(md) and "<a " not in _html(md)
    assert not _FORMATTING.search(_html(md))
    assert _text(md) == " ".join(text.split())
    if ":red[" in text:
        assert "\\:red\\[" in md  # a directive never starts


def test_line_breaks_and_indentation_survive():
    md = escape_markdown("line one\nline two\n\n    four spaces")
    assert _html(md) == "<p>line one<br />\nline two</p>\n<p>\u00a0\u00a0\u00a0\u00a0four spaces</p>\n"


# ------------------------------------------------------------------ answers rendered at the reader's request
def test_rendered_answers_keep_formatting_but_load_no_image_and_no_html():
    answer = (
        "**Bold** and `code ![not](an-image)`.\n\n"
        f"{IMAGE}\n\n"
        '![titled](http://127.0.0.1:9/t.png "title") and ![ref][r] and <img src="http://127.0.0.1:9/raw.png">\n\n'
        "[r]: http://127.0.0.1:9/r.png\n\n"
        "```\n![fenced](http://127.0.0.1:9/f.png) <b>kept as code</b>\n```\n"
    )
    md = neutralise_markdown(answer)
    rendered = _html(md)
    assert "<img" not in rendered
    assert "<strong>Bold</strong>" in rendered  # formatting stays
    assert "<code>code ![not](an-image)</code>" in rendered  # a code span is left as it is
    assert "![fenced](http://127.0.0.1:9/f.png) &lt;b&gt;kept as code&lt;/b&gt;" in rendered  # so is a fenced block
    assert "image not loaded: tracker &lt;http://127.0.0.1:9/pixel.png&gt;" in rendered
    assert "&lt;img src=" in rendered  # raw HTML shown as text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "![",
                "]",
                "(",
                ")",
                "[",
                "<",
                ">",
                "img",
                " src=",
                "http://127.0.0.1:9/x.png",
                "\\",
                "`",
                "```",
                "\n",
                "a",
                " ",
            ]
        ),
        max_size=40,
    )
)
def test_no_arrangement_of_image_syntax_loads_an_image(parts):
    assert "<img" not in _html(neutralise_markdown("".join(parts)))


# ------------------------------------------------------------------ the pages, on a hostile dataset
def _hostile_arena():
    t = simulate_arena(0, DemoConfig.small())
    names = {m: f"{HOSTILE} {k}" for k, m in enumerate(t.models["model"])}
    t.models["model"] = t.models["model"].map(names)
    for col in ("model_a", "model_b"):
        t.battles[col] = t.battles[col].map(names)
    assert t.completions is not None and t.prompts is not None and t.judges is not None
    t.completions["model"] = t.completions["model"].map(names)
    t.completions["text"] = t.completions["text"] + f"\n\n{IMAGE} <img src=http://127.0.0.1:9/raw.png>"
    t.prompts["text"] = t.prompts["text"] + f" {IMAGE} $y$"
    t.judges["profile"] = "a judge $z$ ![j](http://127.0.0.1:9/j.png)"
    t.meta = {k: v for k, v in t.meta.items() if k not in ("latent_elo", "echo_models")}
    return t, names


@pytest.fixture()
def hostile(tmp_path):
    db = tmp_path / "hostile.duckdb"
    tables, names = _hostile_arena()
    with Store.open(db) as s:
        s.write_dataset(tables)
    return str(db), names


def _shown(at: AppTest) -> list[str]:
    """Every string the page handed Streamlit's Markdown renderer."""
    kinds = ("markdown", "caption", "success", "info", "warning", "error", "title", "header", "subheader", "toast")
    return [str(e.value) for kind in kinds for e in getattr(at, kind)] + [
        str(w.label) for w in (*at.toggle, *at.button, *at.radio, *at.checkbox)
    ]


def _assert_no_markup(at: AppTest) -> None:
    for value in _shown(at):
        assert not _unescaped(value, "![") and not _unescaped(value, "<img"), value
        assert "<img" not in _html(value), value


@pytest.mark.integration
def test_the_vote_page_shows_imported_text_as_text(hostile, monkeypatch):
    db, names = hostile
    monkeypatch.setenv("ARENA_DB", db)
    monkeypatch.delenv("ARENA_VOTE_TOKENS", raising=False)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(dataset="demo", judge="judge-strong", annotator="alice", queue="random")
    at.run()
    at.switch_page("app_pages/vote.py")
    at.run()
    assert not at.exception, at.exception
    battle = next(int(m.group(1)) for v in _shown(at) if (m := re.match(r"#### Battle (\d+)", v)))
    with Store.open(db, read_only=True) as s:
        row = s.battle_texts("demo", battle)
    _assert_no_markup(at)
    markdown = [m.value for m in at.markdown]
    prompt = next(v for v in markdown if "pixel" in v and "raw.png" not in _text(v))
    assert _text(prompt).endswith(f"{IMAGE} $y$")  # the prompt, literally
    answers = [v for v in markdown if "raw.png" in _text(v)]
    assert len(answers) == 2 and all(
        _text(v).endswith(f"{IMAGE} <img src=http://127.0.0.1:9/raw.png>") for v in answers
    )
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "a judge $z$ ![j](http://127.0.0.1:9/j.png)" in _text(sidebar)  # the judge's description, literally

    # the reader asks for Markdown: formatting, but the image becomes a note and the HTML text
    next(t for t in at.toggle if t.label == "Render answers as Markdown").set_value(True).run()
    assert not at.exception, at.exception
    _assert_no_markup(at)
    answers = [m.value for m in at.markdown if "raw.png" in _text(m.value)]
    assert len(answers) == 2
    assert all("image not loaded: tracker" in _text(v) and "<img" not in _html(v) for v in answers)

    next(b for b in at.button if b.label == "Left is better").click().run()
    assert not at.exception, at.exception
    _assert_no_markup(at)
    told = " ".join(t.value for t in at.toast)
    shown = voting.shown_order("alice", battle)
    left, right = (row["model_a"], row["model_b"]) if shown == "ab" else (row["model_b"], row["model_a"])
    assert left in names.values() and HOSTILE in left
    # the confirmation names both models literally: no formula, no image, no bold from the names
    assert f"you chose left ({left}). Left was {left}, right {right}." in _text(told)
    assert re.findall(r"<strong>(.*?)</strong>", _html(told)) == [
        html.escape(left, quote=False),
        html.escape(right, quote=False),
    ]


@pytest.mark.integration
def test_the_leaderboard_names_models_as_text(hostile, monkeypatch):
    db, names = hostile
    monkeypatch.setenv("ARENA_DB", db)
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(dataset="demo", judge="judge-strong")
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    assert not at.exception, at.exception
    _assert_no_markup(at)
    headline = next(m.value for m in at.markdown if m.value.startswith("### "))
    top = re.match(r"#1 (.*?) — ", _text(headline[4:]))
    assert top is not None and top.group(1) in names.values()
