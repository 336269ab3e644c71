"""The documentation stays true to the repository: a short README, links that resolve, citations of the
statistical contract that name a section of docs/METHODS.md, and a layer table that matches tests/test_layout.py.

Each check is a function of text (``_broken_links``, ``_cited_sections``, ``_layer_table``…), so the tests
below also feed it a broken input and see it fail.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT
from tests.test_layout import LAYERS

README_MAX_LINES = 300
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = [
    *sorted((ROOT / "core").rglob("*.py")),
    *sorted((ROOT / "app_pages").rglob("*.py")),
    ROOT / "app.py",
    ROOT / "serve.py",
]

# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# "METHODS §6", "METHODS.md §3", "METHODS §1–2", "METHODS.md §2 and §5"
CITATION = re.compile(r"METHODS(?:\.md)?\s*§\s*(\d+)(?:\s*[–-]\s*(\d+))?((?:\s*(?:,|and)\s*§\s*\d+)*)")
SECTION = re.compile(r"^##\s+(\d+)\.\s", re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _outside_code(text), re.M)}


def _outside_code(text: str) -> str:
    """The text with fenced code blocks blanked (a `# comment` in a bash block is no heading, nor a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _broken_links(doc: Path, text: str) -> list[str]:
    """Relative links and images of ``doc`` whose file (or heading anchor, for a Markdown file) does not exist."""
    bad = []
    for target in LINK.findall(_outside_code(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        missing_anchor = dest.exists() and anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text())
        if not dest.exists() or missing_anchor:
            bad.append(target)
    return bad


def _cited_sections(text: str) -> set[int]:
    out: set[int] = set()
    for first, last, more in CITATION.findall(text):
        out.update(range(int(first), int(last or first) + 1))
        out.update(int(n) for n in re.findall(r"§\s*(\d+)", more))
    return out


def _sections(methods_text: str) -> set[int]:
    return {int(n) for n in SECTION.findall(methods_text)}


def _layer_table(architecture_text: str) -> list[str]:
    """The packages (first column, in backticks) of the table under the '## Layers' heading."""
    section = architecture_text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\|\s*`([^`]+)`\s*\|", section, re.M)


def _points_outside(text: str) -> bool:
    """Whether code refers to the upstream documents beside the repository instead of its own docs/."""
    return "shared/docs" in text


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


# ------------------------------------------------------------------------------------------------- the checks
def test_the_readme_is_a_front_door():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; move detail into docs/ (at most {README_MAX_LINES})"


def test_every_relative_link_and_image_resolves():
    assert len(DOCS) >= 9  # README, CONTRIBUTING and the seven docs
    bad = {_rel(d): b for d in DOCS if (b := _broken_links(d, d.read_text()))}
    assert not bad, f"links to files or headings that do not exist: {bad}"


def test_the_readme_links_every_document():
    text = (ROOT / "README.md").read_text()
    targets = {t.partition("#")[0] for t in LINK.findall(text)}
    missing = [_rel(d) for d in DOCS[1:] if _rel(d) not in targets]
    assert not missing, f"README.md's 'Where to read more' should link {missing}"


def test_code_points_inside_the_repository_for_its_documentation():
    outside = [_rel(p) for p in CODE if p.exists() and _points_outside(p.read_text())]
    assert not outside, f"cite docs/METHODS.md (as METHODS §N), not ../shared/docs: {outside}"


def test_every_methods_citation_names_a_section_of_docs_methods():
    sections = _sections((ROOT / "docs" / "METHODS.md").read_text())
    cited = {_rel(p): _cited_sections(p.read_text()) for p in CODE if p.exists()}
    assert set().union(*cited.values()) >= {1, 2, 6, 10}  # the citations are found at all
    bad = {f: sorted(s - sections) for f, s in cited.items() if s - sections}
    assert not bad, f"METHODS sections cited in the code but missing from docs/METHODS.md: {bad}"
    assert sections == set(range(1, 11)), f"docs/METHODS.md's numbered sections are {sorted(sections)}, not §1–§10"


def test_the_architecture_layer_table_is_the_layout_tests_table():
    listed = _layer_table((ROOT / "docs" / "architecture.md").read_text())
    assert len(listed) == len(set(listed)), f"a package is listed twice: {listed}"
    assert set(listed) == set(LAYERS), (
        f"docs/architecture.md's layer table and tests/test_layout.py's LAYERS differ: "
        f"only in the doc {sorted(set(listed) - set(LAYERS))}, only in LAYERS {sorted(set(LAYERS) - set(listed))}"
    )


# ---------------------------------------------------------------------------- the checks can fail
def test_the_checks_catch_what_they_look_for(tmp_path):
    doc = tmp_path / "doc.md"
    (tmp_path / "there.md").write_text("# Title\n\n## A section, with `code`\n")
    (tmp_path / "img.png").write_bytes(b"")
    text = (
        "[ok](there.md) [ok](there.md#a-section-with-code) ![ok](img.png) [web](https://example.org/x)\n"
        "[gone](missing.md) ![gone](tour/none.png) [bad anchor](there.md#no-such-heading) [self](#nowhere)\n"
        "```bash\n[not a link](in-code.md)\n```\n"
    )
    assert _broken_links(doc, text) == ["missing.md", "tour/none.png", "there.md#no-such-heading", "#nowhere"]

    code = 'x = 1  # METHODS §6\n"""(METHODS.md §2 and §5), METHODS §1–2, METHODS §11"""\nDEFAULT_METHODS = ()\n'
    assert _cited_sections(code) == {1, 2, 5, 6, 11}
    assert _cited_sections(code) - _sections("## 1. A\n## 2. B\n## 5. C\n## 6. D\n") == {11}

    arch = "## Layout\n| `core.x` | no |\n## Layers\n\n| package | what |\n|---|---|\n| `core.domain` | a |\n"
    arch += "## Caching\n| `core.y` | no |\n"
    assert _layer_table(arch) == ["core.domain"]

    assert _points_outside("see ../shared/docs/METHODS.md §4") and not _points_outside("see docs/METHODS.md §4")

    long_readme = "line\n" * (README_MAX_LINES + 1)
    assert len(long_readme.splitlines()) > README_MAX_LINES
