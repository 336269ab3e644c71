"""Pages stay thin: widgets, one ``core.app`` call per view, then charts and tables (docs/architecture.md).

What a page shows — its sentences, rows, counts and the decision of what to draw — is composed by
``core.app`` functions that tests can call without Streamlit; a page module that grows past these bounds
has started composing views itself again.  The bounds are the ones issue #44 set: at most 200 lines per
registered page, and at most 80 lines of statements run at module level (the page's body; imports,
definitions, constants and the docstring do not count).
"""

from __future__ import annotations

import ast

import pytest

from app_pages import _registry
from tests.conftest import ROOT

MAX_LINES = 200
MAX_BODY_LINES = 80


def _body_lines(tree: ast.Module) -> int:
    """Lines spanned by the module's top-level statements that run the page (not its definitions)."""
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    total = 0
    for i, node in enumerate(tree.body):
        if isinstance(node, definitions):
            continue
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, ast.Assign | ast.AnnAssign) and all(
            isinstance(t, ast.Name) and t.id.isupper() for t in targets
        ):
            continue  # a named constant
        total += (node.end_lineno or node.lineno) - node.lineno + 1
    return total


def test_the_body_count_counts_what_runs_and_not_what_is_defined():
    source = (
        '"""Doc."""\nimport os\nLIMIT = 3\n\ndef f():\n    return 1\n\n\nx = f()\nwith open(os.devnull):\n    pass\n'
    )
    assert _body_lines(ast.parse(source)) == 3


@pytest.mark.parametrize("page", _registry.PAGES, ids=lambda p: p.key)
def test_every_registered_page_is_thin(page):
    path = ROOT / page.path
    source = path.read_text(encoding="utf-8")
    n_lines = len(source.splitlines())
    assert n_lines <= MAX_LINES, f"{page.path} has {n_lines} lines (at most {MAX_LINES})"
    body = _body_lines(ast.parse(source, filename=str(path)))
    assert body <= MAX_BODY_LINES, f"{page.path} runs {body} lines at module level (at most {MAX_BODY_LINES})"
