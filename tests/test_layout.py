"""The layering rules of the code base, checked on the source (AST), and the one home of each label rule.

``LAYERS`` is the contract in one table: for each package, the project modules it may import (a module
matches an entry if it is the entry or inside it).  It states the README's "Layout" arrows and was derived
from what the code imports today; where today's code goes against the README, the import is allowed
explicitly, as an exception with its reason, so the contradiction stays visible and a new one fails.
Every file is parsed once (``_tree``) and the whole check takes a few seconds.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

PY_FILES = sorted(
    p
    for d in ("core", "app_pages", "tests", "benchmarks", "scripts")
    for p in (ROOT / d).rglob("*.py")
    if ".venv" not in p.parts
) + [ROOT / "app.py"]

# the shared contract every layer may use: the label rules and constants, and the registries
CONTRACT = ("core.domain", "core.methods")
# leaf helpers with no project imports of their own (text style counts, redaction, where the data lives)
LEAVES = (
    "core.text",
    "core.redact",
    "core.datahome",
    "core.codec",
    "core.version",
    "core.app.access",
    "core.app.safe_text",
)


@dataclass(frozen=True)
class Layer:
    allowed: tuple[str, ...]
    # imports the README's arrows do not allow but today's code makes: each with why (and which file) it stays
    exceptions: dict[str, str] = field(default_factory=dict)
    # third-party packages this layer may import that others may not (see THIRD_PARTY_HOMES)
    third_party: tuple[str, ...] = ()


LAYERS: dict[str, Layer] = {
    # the foundations: domain and methods import nothing of the project; the leaves next to nothing
    "core.domain": Layer(()),
    "core.methods": Layer(()),
    "core.text": Layer(()),
    "core.redact": Layer(()),
    "core.datahome": Layer(()),
    "core.codec": Layer(()),
    "core.app.access": Layer(()),
    "core.app.safe_text": Layer(()),
    "core.version": Layer(("core.__version__", "core.datahome")),
    "core": Layer(()),  # core/__init__.py
    # pure statistics: arrays/frames in, results out; never the store, the use cases, the importers or the client
    "core.stats": Layer(CONTRACT),
    "core.charts": Layer(CONTRACT),  # figure builders, pure functions of results
    "core.simulate": Layer((*CONTRACT, "core.text", "core.stats")),  # the demo arena draws with the stats' models
    # the only SQL
    "core.store": Layer((*CONTRACT, "core.datahome", "core.redact", "core.store.waits"), third_party=("duckdb",)),
    "core.store.waits": Layer(()),  # the named waits of every store open: a table read by every layer that opens
    # importers: parse a format into the domain's tables; the store receives them through core.app
    "core.ingest": Layer(
        (*CONTRACT, "core.text", "core.store.errors"),  # the store's error types, raised unchanged
        exceptions={
            "core.store.bulk": "lmarena.py and arena_judgments.py read large files straight into DuckDB (the SQL "
            "path of a bulk import); the row-by-row reader would cost minutes on the 55k/1M-row files",
        },
    ),
    # the judging client and run executor: prompts, parsing, calls; records results through the store's ledger
    "core.judging": Layer(
        (*CONTRACT, "core.text", "core.redact", "core.store.errors", "core.store.waits"),
        exceptions={
            "core.store.judging": "batch.py keeps a batch's provider ids and state in the store's judging tables "
            "while the run executes (the run, not a use case, owns the batch's life)",
        },
    ),
    # the use cases: the only code that takes a Store; everything below them
    "core.app": Layer(
        (
            *CONTRACT,
            *LEAVES,
            "core.charts",
            "core.simulate",
            "core.stats",
            "core.store",
            "core.ingest",
            "core.judging",
        )
    ),
    # `python -m core …`: parse, call core.app, print
    "core.__main__": Layer(("core.cli",)),
    "core.cli": Layer(("core.redact", "core.commands")),  # imports each command's module by name
    "core.commands": Layer(
        (*CONTRACT, "core.app", "core.cli", "core.datahome", "core.redact", "core.version"),
        exceptions={
            "core.store.filescan": "bt.py: the lean `bt` command fits a file without pandas or scipy "
            "(tests/test_bt_lean.py), so it reads the file with the store's scanner, not through core.app",
            "core.judging.config": "evaluate.py and generate.py catch the judge configuration's ConfigError "
            "to print it as a usage error",
        },
    ),
    # the pages: widgets → a core.app call → a core.charts figure
    "app_pages": Layer(
        (*CONTRACT, "core.app", "core.charts", "core.redact", "app_pages"),
        third_party=("streamlit",),
    ),
    "app": Layer(("app_pages",), third_party=("streamlit",)),  # app.py
}

# third-party packages only some layers may import (nothing in core imports Streamlit; only the store speaks SQL)
THIRD_PARTY_HOMES = {"streamlit", "duckdb"}


def _module_of(path: Path) -> str:
    if not path.is_relative_to(ROOT):  # a file written by a test
        return path.stem
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@functools.cache
def _imports(path: Path) -> tuple[str, ...]:
    """Every module a file imports, lazy ones included (``from x import y`` counts as x.y when y is a module)."""
    me = _module_of(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: list[str] = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                # ``from core import x``: the name is what is imported, module or not (core.__version__)
                out.append(sub if base in ("core", "app_pages") or _is_module(sub) else base)
    return tuple(out)


def _matches(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _layer_of(module: str) -> str | None:
    """The longest key of LAYERS the module is in (core.app.data → core.app; core → core)."""
    keys = [k for k in LAYERS if module == k or module.startswith(k + ".")]
    return max(keys, key=len) if keys else None


LAYERED = sorted(p for d in ("core", "app_pages") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]


def _violations(path: Path, layer: str) -> set[str]:
    rule = LAYERS[layer]
    bad = set()
    for m in _imports(path):
        top = m.split(".")[0]
        if top in ("core", "app_pages"):
            if _layer_of(m) == layer or _matches(m, rule.allowed) or _matches(m, rule.exceptions):
                continue
            bad.add(m)
        elif top in THIRD_PARTY_HOMES and top not in rule.third_party:
            bad.add(m)
    return bad


def test_every_file_belongs_to_a_layer_of_the_table():
    """A new top-level module or package is added to LAYERS on purpose, with its rule."""
    assert [str(p.relative_to(ROOT)) for p in LAYERED if _layer_of(_module_of(p)) is None] == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_what_the_table_allows(layer):
    bad = {
        str(p.relative_to(ROOT)): sorted(v)
        for p in LAYERED
        if _layer_of(_module_of(p)) == layer and (v := _violations(p, layer))
    }
    assert not bad, f"{layer} may import only {LAYERS[layer].allowed} (tests/test_layout.py LAYERS): {bad}"


@pytest.mark.parametrize(
    "layer, target", [(k, t) for k, rule in sorted(LAYERS.items()) for t in sorted(rule.exceptions)]
)
def test_each_exception_is_still_needed(layer, target):
    """An exception no file makes any more is removed from the table, so the table says what the code does."""
    assert any(_matches(m, (target,)) for p in LAYERED if _layer_of(_module_of(p)) == layer for m in _imports(p)), (
        f"no file of {layer} imports {target} any more: remove the exception"
    )


def test_the_table_catches_a_violation(tmp_path):
    """The check is not vacuous: a page importing the store, a statistic importing the use cases, core
    importing Streamlit and DuckDB outside the store are each found."""
    cases = {
        "app_pages": (
            "from core.store import Store\nfrom core.app import leaderboard\nfrom core import charts\n",
            {"core.store"},
        ),
        "core.stats": ("from core.app import data\nfrom core.domain import Z95\n", {"core.app.data"}),
        "core.charts": ("import streamlit as st\n", {"streamlit"}),
        "core.ingest": ("import duckdb\nfrom core.store.bulk import x\n", {"duckdb"}),
    }
    for i, (layer, (src, expected)) in enumerate(cases.items()):
        f = tmp_path / f"case{i}.py"
        f.write_text(src)
        assert _violations(f, layer) == expected, layer


@functools.cache
def _text(path: Path) -> str:
    return path.read_text()


@functools.cache
def _all_definitions() -> dict[tuple[type, str], list[str]]:
    """Every name defined at any level of the project, as a function (FunctionDef) or a constant (Assign
    target), with the files defining it: one walk of every tree for all the names asked about."""
    hits: dict[tuple[type, str], list[str]] = {}
    for path in PY_FILES:
        where = str(path.relative_to(ROOT))
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef):
                hits.setdefault((ast.FunctionDef, node.name), []).append(where)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        hits.setdefault((ast.Assign, t.id), []).append(where)
    return hits


def _definitions(kind: type, name: str) -> list[str]:
    """Files defining ``name`` at any level, as a function (FunctionDef) or a constant (Assign target)."""
    return _all_definitions().get((kind, name), [])


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
        if lit in _text(p)
    ]
    assert not offenders, offenders
