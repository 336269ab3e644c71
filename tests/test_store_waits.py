"""Every store open names its kind of access (core.store.waits): no wait is a number of its own (issue 35)."""

from __future__ import annotations

import ast

from core.store import waits
from tests.conftest import ROOT

SOURCES = sorted(p for d in ("core", "app_pages") for p in (ROOT / d).rglob("*.py") if p.name != "waits.py") + [
    ROOT / "app.py",
    ROOT / "serve.py",
]


def _named_wait(node: ast.expr) -> bool:
    """``waits.X.seconds`` (through any module alias), a parameter or a constant defined from one."""
    if isinstance(node, ast.Attribute) and node.attr == "seconds":
        inner = node.value
        return isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "waits"
    return isinstance(node, (ast.Name, ast.Attribute))  # a parameter or a named constant (checked below)


def test_no_store_open_waits_a_number_of_its_own():
    offenders = []
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "wait_s" and not _named_wait(kw.value):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            # a module constant of a wait (…WAIT_S = …) is one of the named waits, not a number
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith("WAIT_S") for t in node.targets
            ):
                value = node.value
                if not (isinstance(value, ast.Attribute) and value.attr == "seconds"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} (a wait constant)")
            # a default value of a wait_s parameter
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                named = args.args[len(args.args) - len(args.defaults) :] + args.kwonlyargs
                defaults = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
                for arg, default in zip(named, defaults):
                    if (
                        arg.arg == "wait_s"
                        and isinstance(default, ast.Constant)
                        and default.value not in (0, 0.0, None)
                    ):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} (default of {node.name})")
    assert not offenders, offenders


def test_each_named_wait_is_used_and_has_one_name():
    names = [w.name for w in waits.ALL]
    assert len(set(names)) == len(names)
    assert {w for w in vars(waits).values() if isinstance(w, waits.Wait)} == set(waits.ALL)
    text = "\n".join(p.read_text() for p in SOURCES)
    constant = {id(w): k for k, w in vars(waits).items() if isinstance(w, waits.Wait)}
    unused = [constant[id(w)] for w in waits.ALL if f"waits.{constant[id(w)]}." not in text]
    assert not unused, unused
