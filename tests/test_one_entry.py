"""One entry is enough: a format, a page and a rating method, each added only through its registry
(``tests/extension_plugin.py``), keep the tests that read the registries green and join every sweep.

The tests run in a pytest of their own with the plugin loaded, so the entries exist from collection on, as
they would for a newcomer who added them to the registries' source.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration  # pytest sessions of their own

# The fast tier's tests that read a registry, and the sweeps over pages, formats and methods.
REGISTRY_TESTS = (
    "tests/test_registries.py",
    "tests/test_method_registry.py",
    "tests/test_results_registry.py",
    "tests/test_layout.py",
    "tests/test_docs.py",
    "tests/test_detect_format.py",
)


def _pytest(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.extension_plugin", "-p", "no:cacheprovider", "-q"]
        + ["--basetemp", str(tmp_path / "inner"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )


def test_the_three_entries_join_every_sweep(tmp_path):
    run = _pytest(
        tmp_path,
        "--collect-only",
        "tests/test_app.py",
        "tests/test_precompute.py",
        "tests/test_browser.py",
        "tests/test_method_registry.py",
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ids = run.stdout.splitlines()
    page = "tests/extension_page.py"
    assert sum(page in i and "test_every_page_renders" in i for i in ids) == 5  # every store of the AppTest sweep
    assert any(page in i and "test_after_precompute_a_page_computes_nothing" in i for i in ids)
    assert any(i.endswith("test_every_page_opens_without_an_exception[extension]") for i in ids)
    assert any(i.endswith("test_every_registered_method_is_in_the_view_and_the_cli[winshare]") for i in ids)


def test_the_registry_tests_stay_green_with_the_three_entries(tmp_path):
    run = _pytest(tmp_path, "-m", "not slow and not browser", *REGISTRY_TESTS)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_the_new_page_and_method_run_in_the_sweeps_and_the_format_imports(tmp_path):
    """The AppTest sweep opens the page on the demo, the method's sweep draws and prints it, and a file of the
    new format imports through the CLI and adds to its dataset by the ids the entry declares."""
    run = _pytest(
        tmp_path,
        "tests/test_app.py::test_every_page_renders",
        "tests/test_method_registry.py::test_every_registered_method_is_in_the_view_and_the_cli",
        "-k",
        "(demo_db and extension_page) or winshare",
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout
    code = """
import sys
sys.path.insert(0, ".")
import tests.extension_plugin as ext
ext.pytest_configure(None)
from core.cli import main
db, first, more = sys.argv[1:]
assert main(["import", "--db", db, first, "--dataset", "s"]) == 0  # --format auto finds the new format
assert main(["import", "--db", db, more, "--dataset", "s"]) == 0
assert main(["leaderboard", "--db", db, "--dataset", "s", "--method", ext.METHOD, "--json"]) == 0
"""
    first, more = tmp_path / "a.semi", tmp_path / "b.semi"
    first.write_text("1;x;y;model_a\n2;y;z;tie\n3;x;z;model_b\n")
    more.write_text("2;y;z;tie\n4;y;x;model_a\n")
    db = tmp_path / "s.duckdb"
    out = subprocess.run(
        [sys.executable, "-c", code, str(db), str(first), str(more)], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert '"method": "winshare"' in out.stdout.replace("'", '"')
    from core.store import Store

    with Store.open(db, read_only=True) as s:
        assert [(d["name"], d["source"], d["n_battles"]) for d in s.info()["datasets"]] == [("s", "semicolons", 4)]
