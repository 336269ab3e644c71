"""The page registry and the format registry: each extension is one entry, and everything reads the entry.

Pages (``app_pages/_registry.py``): every page module is registered once, with a title and an icon, and a
page registered only there is in the navigation ``app.py`` builds, in the sidebar's titles, in access and in
the availability tables.  Formats (``core/ingest/formats.py``): a format registered only there is detected
by ``--format auto`` and read by ``core.ingest.load``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from app_pages import _registry
from core.app import availability
from core.app.access import ADMIN, VIEWER
from core.ingest import IngestError
from tests.conftest import ROOT

_FACTS = availability.DatasetFacts(
    n_votes=0,
    n_annotators=0,
    n_battles=0,
    judges=(),
    judge=None,
    judge_rubric=False,
    judge_both_orders=False,
    judge_order_known=False,
    judge_confidence=False,
    judge_template=None,
    judge_description=None,
    n_graded=0,
)


# ==================================================================== pages
def _page_modules() -> list[str]:
    return sorted(
        p.stem for p in (ROOT / "app_pages").glob("*.py") if not p.name.startswith("_") and p.stem != "registry"
    )


def test_every_page_module_is_registered_exactly_once():
    keys = [p.key for p in _registry.PAGES]
    assert len(keys) == len(set(keys)), keys
    files = [(ROOT / p.path).resolve() for p in _registry.PAGES]  # a page's script may live outside app_pages
    assert len(files) == len(set(files)) and all(f.is_file() for f in files), files
    for module in _page_modules():
        assert (ROOT / "app_pages" / f"{module}.py").resolve() in files, f"app_pages/{module}.py is not registered"


def test_every_page_has_a_title_an_icon_a_role_and_known_needs():
    for page in _registry.PAGES:
        assert page.title.strip(), page
        assert page.icon.startswith(":material/") and page.icon.endswith(":"), page
        assert page.role in (VIEWER, "annotator", ADMIN), page
        assert set(page.needs) <= set(availability.REQUIREMENTS), page


def test_the_navigation_lists_the_allowed_pages_in_order_with_the_first_as_default():
    nav = _registry.navigation(["admin", "overview", "bias"], blocked={"bias": "no judge"})
    # the default is served at "/"; its own pathname is a hidden alias, so "/overview" links work too
    assert [e["url_path"] for e in nav] == ["overview-home", "bias", "admin", "overview"]
    assert [e["default"] for e in nav] == [True, False, False, False]
    assert nav[3]["visibility"] == "hidden" and nav[3]["page"] == nav[0]["page"] == "app_pages/overview.py"
    assert nav[1]["icon"] == _registry.BLOCKED_ICON and nav[0]["icon"] == ":material/dashboard:"
    assert nav[2]["title"] == "Admin"


@pytest.fixture
def extra_page(tmp_path, monkeypatch):
    """A page added only through the registry, its script in a temporary folder."""
    script = tmp_path / "extra_page.py"
    script.write_text('import streamlit as st\n\nst.markdown("the extra page ran")\n')
    page = _registry.Page(
        "extra", "Extra page", ":material/extension:", role=ADMIN, needs=("battles", "judge"), file=script
    )
    monkeypatch.setattr(_registry, "PAGES", (*_registry.PAGES, page))
    return page


def test_a_page_registered_only_in_the_registry_is_in_the_navigation_sidebar_and_availability(extra_page):
    from app_pages._access import Access, allowed_pages
    from app_pages._registry import page_title

    every = [p.key for p in _registry.PAGES]
    nav = _registry.navigation(every, blocked={})
    entry = next(e for e in nav if e["url_path"] == "extra")
    assert entry == {
        "page": extra_page.file,
        "title": "Extra page",
        "icon": ":material/extension:",
        "url_path": "extra",
        "default": False,
    }
    assert page_title("extra") == "Extra page"  # the sidebar's and the page notice's name for it
    # access: open without sign-in, only to admins with it
    assert "extra" in allowed_pages(Access(sign_in=False))
    assert "extra" in allowed_pages(Access(sign_in=True, signed_in=True, role=ADMIN))
    assert "extra" not in allowed_pages(Access(sign_in=True, signed_in=True, role=VIEWER))
    # availability: its needs are checked in order, the first one failed is the reason
    needs = _registry.page_needs()
    assert availability.unavailable_pages(_FACTS, needs)["extra"] == "no battles"
    with_battles = dataclasses.replace(_FACTS, n_battles=10, n_votes=5)
    assert availability.unavailable_pages(with_battles, needs)["extra"] == "no judge has judged this dataset"
    assert "judge" in availability.remedies(with_battles, needs)["extra"]
    judged = dataclasses.replace(with_battles, judge="j", judges=("j",))
    assert "extra" not in availability.unavailable_pages(judged, needs)


@pytest.mark.integration
def test_app_py_navigates_to_a_page_registered_only_in_the_registry(extra_page, tmp_path, monkeypatch):
    """End to end: ``app.py`` builds its navigation from the registry, so the new page opens and runs."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ARENA_DB", str(tmp_path / "none.duckdb"))  # no store: the sidebar says so, pages still run
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page(str(extra_page.file))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.value == "the extra page ran" for m in at.markdown)


# ================================================================== formats
def test_every_format_is_registered_once_and_described():
    from core.ingest import formats

    names = [f.name for f in formats.FORMATS]
    assert len(names) == len(set(names)), names
    for f in formats.FORMATS:  # what `import --help` and the docs show, and auto-detection, for every format
        assert f.label and f.origin and f.recognise is not None, f.name
        assert f.adds_by in (None, "id", "pair"), f.name
    assert names[:2] == ["bundle", "pandalm"]  # auto tries the most specific first


def test_the_import_help_lists_every_registered_format(capsys):
    from core.cli import main
    from core.ingest.formats import names

    with pytest.raises(SystemExit):
        main(["import", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in names():
        assert name in text, name


def _read_pairs(path, dataset=None, judge=None):
    """The reader of the test's format: ``left;right;winner`` lines, read as the LMArena CSV they amount to."""
    from core.ingest import lmarena

    path = Path(path)
    rows = [line.split(";") for line in path.read_text().splitlines() if line.strip()]
    csv = path.with_suffix(".csv")
    csv.write_text("question_id,model_a,model_b,winner\n" + "".join(f"{i},{a},{b},{w}\n" for i, a, b, w in rows))
    return dataclasses.replace(lmarena.read(csv, dataset=dataset or path.stem, judge=judge), source="pairs")


@pytest.fixture
def pairs_format(monkeypatch):
    """A format registered only in the registry: ``*.pairs`` files (``id;left;right;winner`` lines), read by
    :func:`_read_pairs`, whose battles carry their own id."""
    from core.ingest import formats

    def recognise(path, fields):
        return None if path.suffix == ".pairs" else "a .pairs file"

    entry = formats.Format("pairs", "tests.test_registries:_read_pairs", recognise, label="pairs", adds_by="id")
    monkeypatch.setattr(formats, "FORMATS", (entry, *formats.FORMATS))
    return entry


def test_a_format_registered_only_in_the_registry_is_detected_and_loaded(pairs_format, tmp_path):
    from core.ingest import load
    from core.ingest.detect import detect

    path = tmp_path / "arena.pairs"
    path.write_text("1;x;y;model_a\n2;y;z;tie\n3;x;z;model_b\n")
    assert detect(path) == "pairs"
    tables = load(path, detect(path))
    assert len(tables.battles) == 3 and set(tables.models["model"]) == {"x", "y", "z"}
    # the other formats are still detected, and an unknown file names the new one among those tried
    other = tmp_path / "b.csv"
    other.write_text("model_a,model_b,winner\nx,y,tie\n")
    assert detect(other) == "lmarena"
    unknown = tmp_path / "u.csv"
    unknown.write_text("a,b\n1,2\n")
    with pytest.raises(IngestError, match=r"pairs \(needs a \.pairs file\)"):
        detect(unknown)
    with pytest.raises(IngestError, match="expected one of .*pairs"):
        load(path, "no-such-format")


def test_the_import_command_takes_a_format_registered_only_in_the_registry(pairs_format, tmp_path, capsys):
    """One entry makes a format: `python -m core import --format NAME` accepts it (run in this process, where
    the test registered it) and writes its battles; an unknown name exits 2 listing the registered ones."""
    from core.cli import main
    from core.store import Store

    path = tmp_path / "arena.pairs"
    path.write_text("1;x;y;model_a\n2;y;z;tie\n3;x;z;model_b\n")
    db = tmp_path / "s.duckdb"
    assert main(["import", "--db", str(db), "--format", "pairs", str(path), "--dataset", "p"]) == 0
    with Store.open(db, read_only=True) as s:
        assert {d["name"]: d["n_battles"] for d in s.info()["datasets"]} == {"p": 3}
    # a second file adds to the dataset by the battle ids its entry declares (adds_by="id"): battle 2's vote is
    # already stored and is skipped, battle 4 is new
    more = tmp_path / "more.pairs"
    more.write_text("2;y;z;tie\n4;y;x;model_a\n")
    assert main(["import", "--db", str(db), "--format", "pairs", str(more), "--dataset", "p"]) == 0
    with Store.open(db, read_only=True) as s:
        assert [(d["name"], d["source"], d["n_battles"], d["n_human_votes"]) for d in s.info()["datasets"]] == [
            ("p", "pairs", 4, 4)
        ]
    assert main(["import", "--db", str(db), "--format", "no-such", str(path), "--dataset", "q"]) == 2
    assert "pairs" in capsys.readouterr().err


def _read_with_a_bug(path, dataset=None, judge=None):
    """A reader with a bug of its own (a misspelt name), whatever the file holds."""
    return lmarena_reader(path, dataset=dataset, judge=judge)  # type: ignore[name-defined]  # noqa: F821


def _read_strictly(path, dataset=None, judge=None):
    """A reader that meets data it did not foresee: a value that is not a number."""
    return float(Path(path).read_text().split(";")[0])


@pytest.mark.parametrize("reader, bug", [("_read_with_a_bug", True), ("_read_strictly", False)])
def test_a_readers_own_bug_is_reported_as_a_bug_not_as_the_files_fault(reader, bug, tmp_path, monkeypatch):
    """Issue 44: every reader exception, a reader's own bug included, read "could not be read as FMT"."""
    from core.ingest import ReaderBug, formats, load

    entry = formats.Format("buggy", f"tests.test_registries:{reader}", None)
    monkeypatch.setattr(formats, "FORMATS", (entry, *formats.FORMATS))
    path = tmp_path / "a.txt"
    path.write_text("x;y;model_a\n")
    if bug:
        with pytest.raises(ReaderBug, match="bug in the reader, not a problem of the file") as caught:
            load(path, "buggy")
        assert isinstance(caught.value.__cause__, NameError)  # the traceback says where
    else:
        with pytest.raises(IngestError, match=r"a\.txt: could not be read as buggy \(ValueError"):
            load(path, "buggy")
