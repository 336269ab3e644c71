"""Issue 45: walk every page a signed-out viewer can open, on three datasets, at 1440×900 in a real browser.

One server over one store holding the demo, the real PandaLM test set and an AlpacaEval results tree (the
dataset is chosen by ``?dataset=`` in the URL, as a shared link chooses it).  On every page of the live page
registry (``app_pages/_registry.py``) the walk reads what the page shows and fails on

- a ``None`` / ``nan`` / ``NaN`` / ``<NA>`` printed as text (a missing value leaking through a formatter);
- a pair of statements that cannot both be true (:data:`CONTRADICTIONS`), and the same alert shown twice;
- a chart title under the chart's toolbar (the modebar, shown on hover);
- in presentation mode (``&present=1``), a chart wider or taller than the 1440×900 viewport.

What the walk cannot read: the interactive tables (``st.dataframe``) are drawn on a canvas (glide-data-grid),
so their cells are no DOM text; presentation mode draws every table as a static ``st.table`` instead, so the
presentation walk reads the same cells as text.  Hover labels of charts exist only while hovered and are not
read; a chart's axis, legend and title text (SVG) is.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, viewer_pages, wait_until
from tests.test_browser import _start_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "walk"
VIEWPORT = {"width": 1440, "height": 900}
AE_ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
DATASETS = ("demo", "pandalm", "ae")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]

# A value printed where a number or a name should be: whole words only ("nano", "Nonetheless", "NaNs" pass).
MISSING = re.compile(r"(?<![\w<])(None|nan|NaN|<NA>)(?![\w>])")

# Pairs of statements that cannot both be true of one dataset and judge: both on one page is a contradiction.
CONTRADICTIONS: list[tuple[str, str, str]] = [
    # the verbosity section either measures the length effect or says it cannot: never both
    (
        r"longer answer wins (decisive verdicts|near-ties)\s*\n\s*\d",
        r"No completion lengths|verbosity needs both|No near-tie battles",
        "a measured length effect next to a sentence saying it cannot be measured",
    ),
    # the echo notice says the store has no echo flags; echo rates or an echo chart say it has them
    (
        r"No echo information",
        r"Does the judge prefer the echoing answer|How often .* answers echo|No model's answers echo|Echo intervention",
        "echo results next to a notice that there is no echo information",
    ),
    # the flip rate exists only when some battle was judged in both orders
    (
        r"No flip rate",
        r"verdict flips when the order is swapped\s*\n\s*\d",
        "a flip rate next to the sentence that there is none",
    ),
    # the first-shown win rate is a share of decisive verdicts: a number and "no decisive verdicts" exclude each other
    (
        r"No decisive verdicts",
        r"first-shown answer wins\s*\n\s*\d",
        "a first-position win rate next to the sentence that it is undefined",
    ),
    # style control either moves no model or lists the models it moves
    (
        r"No model changes rank once style is controlled for",
        r"models? whose rank changes once style is controlled for",
        "no model moves, and some models move",
    ),
    # self-preference is either measured or said to have no own-family answers
    (
        r"no answers from the judge's own family",
        r"Self-preference: the judge",
        "a self-preference result next to the sentence that there is nothing to measure it on",
    ),
]


@pytest.fixture(scope="module")
def walk_db(walk_store) -> Path:
    """One store, three datasets: the small demo, the real PandaLM test set and a real AlpacaEval tree."""
    return walk_store


@pytest.fixture(scope="module")
def app_url(walk_db):
    proc, url = _start_app(walk_db)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield b
        b.close()


@pytest.fixture
def pg(browser):
    context = browser.new_context(viewport=VIEWPORT)
    yield context.new_page()
    context.close()


_SETTLED_JS = """() => {
    const app = document.querySelector("[data-testid='stApp']");
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !!document.querySelector("[data-testid='stMain'] h1")
        && !document.querySelector("[data-testid='stStatusWidget'], [data-testid='stSpinner'], "
            + "[data-testid='stSkeleton']");
}"""


def _open(pg, url: str) -> None:
    """Go to ``url`` and wait until its script has run to the end (settled on two polls in a row)."""
    pg.goto(url)
    calm = [0]

    def settled() -> bool:
        calm[0] = calm[0] + 1 if pg.evaluate(_SETTLED_JS) else 0
        return calm[0] >= 3

    wait_until(settled, timeout=240, what=f"{url} rendered", poll=0.25)


def _main_text(pg) -> str:
    """The main block's visible text, and the text of every chart (axes, legend, title: SVG)."""
    text = pg.inner_text("[data-testid='stMain']")
    svg = pg.evaluate(
        """() => [...document.querySelectorAll("[data-testid='stMain'] .js-plotly-plot svg text")]
            .map(t => t.textContent).join('\\n')"""
    )
    return f"{text}\n{svg}"


def _problems_in_text(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if MISSING.search(line):
            out.append(f"missing value printed: {line.strip()[:200]!r}")
    for first, second, why in CONTRADICTIONS:
        a, b = re.search(first, text), re.search(second, text)
        if a and b:
            out.append(f"contradiction ({why}): {a.group(0)!r} and {b.group(0)!r}")
    return out


def _repeated_alerts(pg) -> list[str]:
    texts = [t.strip() for t in pg.locator("[data-testid='stMain'] [data-testid='stAlert']").all_inner_texts()]
    seen: set[str] = set()
    out = []
    for t in texts:
        if t in seen:
            out.append(f"the same alert twice: {t[:200]!r}")
        seen.add(t)
    return out


_BOXES_JS = """(chart) => {
    const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
        return r.width && r.height ? {x: r.x, y: r.y, w: r.width, h: r.height} : null; };
    const bar = chart.querySelector('.modebar');
    return {title: box(chart.querySelector('.gtitle')), modebar: box(bar),
            opacity: bar ? Number(getComputedStyle(bar).opacity) : null,
            text: (chart.querySelector('.gtitle') || {}).textContent || ''};
}"""


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]
    )


def _titles_under_the_toolbar(pg) -> list[str]:
    """Hover each chart (its modebar shows on hover) and check the title's box misses the modebar's."""
    out = []
    charts = pg.locator("[data-testid='stMain'] .js-plotly-plot")
    for k in range(charts.count()):
        chart = charts.nth(k)
        chart.scroll_into_view_if_needed()
        chart.hover(position={"x": 20, "y": 20})
        handle = chart.element_handle()
        boxes = pg.evaluate(_BOXES_JS, handle)
        if boxes["modebar"] is None or boxes["title"] is None:
            continue  # no toolbar (presentation mode) or no title
        wait_until(lambda h=handle: pg.evaluate(_BOXES_JS, h)["opacity"] > 0.9, timeout=10, what="the modebar shown")
        boxes = pg.evaluate(_BOXES_JS, handle)
        if _overlap(boxes["title"], boxes["modebar"]):
            out.append(f"chart title under the toolbar: {boxes['text'][:120]!r} {boxes['title']} {boxes['modebar']}")
    return out


def _oversize_charts(pg) -> list[str]:
    sizes = pg.evaluate(
        """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stPlotlyChart']")].map(c => {
            const r = c.getBoundingClientRect(); const t = c.querySelector('.gtitle');
            return {w: r.width, h: r.height, title: t ? t.textContent : ''}; })"""
    )
    return [
        f"chart {s['title'][:80]!r} is {s['w']:.0f}×{s['h']:.0f}, larger than the viewport"
        for s in sizes
        if s["w"] > VIEWPORT["width"] or s["h"] > VIEWPORT["height"]
    ]


def _page_problems(pg, url: str, shot: str, present: bool) -> list[str]:
    _open(pg, url)
    pg.screenshot(path=str(ARTIFACTS / f"{shot}.png"), full_page=True)
    out = []
    if pg.get_by_text("Page not found").count():
        out.append("page not found")
    out += [f"exception: {e[:300]}" for e in pg.locator("[data-testid='stException']").all_inner_texts()]
    out += _problems_in_text(_main_text(pg))
    out += _repeated_alerts(pg)
    out += _oversize_charts(pg) if present else _titles_under_the_toolbar(pg)
    return out


@pytest.mark.parametrize("present", [False, True], ids=["interactive", "presentation"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_every_page_reads_cleanly(pg, app_url, dataset, present):
    """Every viewer page on this dataset: no missing value as text, no contradiction, no alert twice, no title
    under the toolbar, and in presentation mode no chart larger than the screen."""
    found: dict[str, list[str]] = {}
    for key in list(viewer_pages()):
        query = f"dataset={dataset}" + ("&present=1" if present else "")
        shot = f"{dataset}-{key}" + ("-present" if present else "")
        problems = _page_problems(pg, f"{app_url}/{key}?{query}", shot, present)
        if problems:
            found[key] = problems
    assert not found, "\n".join(f"{key}: {p}" for key, ps in found.items() for p in ps)


def test_the_contradiction_list_catches_what_it_names():
    """Each pair fires on a page showing both statements and stays quiet on either alone."""
    both = "first-shown answer wins\n55.0%\nNo decisive verdicts: the first-position win rate is undefined."
    assert any("contradiction" in p for p in _problems_in_text(both))
    assert not _problems_in_text("first-shown answer wins\n—\nNo decisive verdicts: undefined.")
    assert _problems_in_text("Elo None") and _problems_in_text("ci <NA>") and _problems_in_text("x nan y")
    assert not _problems_in_text("gpt-4o-nano, Nonetheless, NaNs, none of them")
