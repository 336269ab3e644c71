"""The layering rules of the code base, checked on the source (AST), and the one home of each label rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PY_FILES = sorted(
    p
    for d in ("core", "app_pages", "tests", "benchmarks", "scripts")
    for p in (ROOT / d).rglob("*.py")
    if ".venv" not in p.parts
) + [ROOT / "app.py"]


def _imports(path: Path) -> list[str]:
    """Every module a file imports (absolute names; ``from x import y`` counts as x.y when y is a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def _project(imports: list[str]) -> set[str]:
    return {m for m in imports if m.split(".")[0] in ("core", "app_pages")}


# core.redact: the one redaction step, applied where text leaves for the browser
PAGE_ALLOWED = ("core.app", "core.charts", "core.methods", "core.domain", "core.redact", "app_pages._shared")


def _allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("path", sorted((ROOT / "app_pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_import_only_the_use_cases_charts_registries_domain_and_shared(path):
    bad = {
        m
        for m in _project(_imports(path))
        if not _allowed(m, PAGE_ALLOWED)
        # ``from core import charts`` is the charts module itself
        and m not in ("core", "app_pages")
    }
    assert not bad, f"{path.name} imports {sorted(bad)}; pages may import only {PAGE_ALLOWED}"


@pytest.mark.parametrize("path", sorted((ROOT / "core" / "stats").glob("*.py")), ids=lambda p: p.name)
def test_statistics_never_reach_the_store_or_the_use_cases(path):
    bad = {
        m for m in _project(_imports(path)) if _allowed(m, ("core.store", "core.app", "core.ingest", "core.judging"))
    }
    assert not bad, f"core/stats/{path.name} imports {sorted(bad)}"


def test_core_never_imports_streamlit_and_only_the_store_speaks_sql():
    for path in (ROOT / "core").rglob("*.py"):
        mods = _imports(path)
        assert not any(m.split(".")[0] == "streamlit" for m in mods), path
        if "store" not in path.relative_to(ROOT / "core").parts:
            assert not any(m.split(".")[0] == "duckdb" for m in mods), f"{path} imports duckdb"


def test_the_import_rule_test_catches_a_violation(tmp_path):
    """The rule above is not vacuous: a page importing the store is found."""
    bad = tmp_path / "bad_page.py"
    bad.write_text("from core.store import Store\nfrom core.app import leaderboard\nfrom core import charts\n")
    assert {m for m in _project(_imports(bad)) if not _allowed(m, PAGE_ALLOWED) and m not in ("core", "app_pages")} == {
        "core.store",
        "core.store.Store",
    }


def _definitions(kind: type, name: str) -> list[str]:
    """Files defining ``name`` at any level, as a function (FunctionDef) or a constant (Assign target)."""
    hits = []
    for path in PY_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if kind is ast.FunctionDef and isinstance(node, ast.FunctionDef) and node.name == name:
                hits.append(str(path.relative_to(ROOT)))
            elif kind is ast.Assign and isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    hits.append(str(path.relative_to(ROOT)))
    return hits


@pytest.mark.parametrize(
    "kind, name",
    [
        (ast.FunctionDef, "soft_target"),
        (ast.Assign, "SOFT_CLIP"),
        (ast.FunctionDef, "wilson"),
        (ast.Assign, "Z95"),
        (ast.Assign, "OUTCOME_Y"),
        (ast.FunctionDef, "theta_to_elo"),
        (ast.Assign, "ELO_PER_LOGIT"),
        (ast.FunctionDef, "hard_label"),
        (ast.FunctionDef, "preference_to_target"),
    ],
)
def test_each_label_rule_and_constant_is_defined_once_in_the_domain(kind, name):
    assert _definitions(kind, name) == ["core/domain.py"]


def test_no_other_module_writes_the_rules_as_literals():
    """The numbers and mappings of the rules appear only in core/domain.py."""
    literals = (
        "1.959963984540054",
        "1.959964",
        "400.0 / math.log",
        "400 / math.log",
        "1e-6, 1 - 1e-6",
        '{"a": 1.0, "b": 0.0',
        "WHEN 'a' THEN 1.0",
    )
    # tests write the formulas out on purpose (independent references), so they are not checked
    offenders = [
        (str(p.relative_to(ROOT)), lit)
        for p in PY_FILES
        if p.parts[-2:] != ("core", "domain.py") and "tests" not in p.relative_to(ROOT).parts
        for lit in literals
        if lit in p.read_text()
    ]
    assert not offenders, offenders
