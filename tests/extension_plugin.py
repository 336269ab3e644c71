"""A pytest plugin that extends the house by one entry per registry, as CONTRIBUTING's recipes say: a file format
(``core.ingest.formats.FORMATS``), a page (``app_pages._registry.PAGES``) and a rating method
(``core.methods.RATING_METHODS``), and nothing else.

``tests/test_one_entry.py`` runs the registry-driven tests with ``-p tests.extension_plugin``: they must stay
green with the three entries added, and the sweeps over pages, formats and methods must pick them up.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from core.domain import Ratings

FORMAT = "semicolons"  # ``*.semi`` files: ``id;left;right;winner`` lines
PAGE = "extension"
METHOD = "winshare"
PAGE_FILE = Path(__file__).with_name("extension_page.py")


def read_semicolons(path, dataset=None, judge=None):  # the reader its Format entry names
    from core.ingest import lmarena

    path = Path(path)
    rows = [line.split(";") for line in path.read_text().splitlines() if line.strip()]
    csv = path.with_suffix(".csv")
    csv.write_text("question_id,model_a,model_b,winner\n" + "".join(f"{i},{a},{b},{w}\n" for i, a, b, w in rows))
    return dataclasses.replace(lmarena.read(csv, dataset=dataset or path.stem, judge=judge), source=FORMAT)


def winshare_fit(votes: pd.DataFrame, *, ci=None, n_boot=0, seed=0, progress=None) -> Ratings:
    from tests.test_method_registry import tiny_fit

    return dataclasses.replace(tiny_fit(votes, ci=ci, n_boot=n_boot, seed=seed, progress=progress), method=METHOD)


def pytest_configure(config) -> None:
    from app_pages import _registry
    from core.ingest import formats
    from core.methods import RATING_METHODS, RatingMethod

    def recognise(path: Path, fields) -> str | None:
        return None if path.suffix == ".semi" else "a .semi file"

    formats.FORMATS = (
        *formats.FORMATS,
        formats.Format(
            FORMAT,
            "tests.extension_plugin:read_semicolons",
            recognise,
            label="semicolon-separated battles",
            origin="id;left;right;winner lines (a test's format)",
            adds_by="id",
        ),
    )
    _registry.PAGES = (*_registry.PAGES, _registry.Page(PAGE, "Extension", ":material/extension:", file=PAGE_FILE))
    RATING_METHODS[METHOD] = RatingMethod(
        METHOD, "Win-share Elo", "#882255", "votes", "tests.extension_plugin:winshare_fit", "each model's win share"
    )
