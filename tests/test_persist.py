"""Persisted results: every page's result survives the round trip through the store, is computed once per
data version, and loading a store never runs code (no pickle)."""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from core import codec
from core.app import analyses, bias, judges, overview, persist
from core.app import data as app_data
from core.app import leaderboard as lb
from core.simulate import DemoConfig, simulate_arena
from core.store import Store


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("persist") / "demo.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
        judge = str(s.judges_frame("demo")["judge"].iloc[0])
    return db, judge


def assert_same(a, b, path="value"):
    """Deep equality: frames and arrays exactly (NaN equal to NaN), dataclasses field by field."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, obj=path)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, obj=path)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        if a.dtype.kind in "biuf":
            np.testing.assert_array_equal(a, b, err_msg=path)
        else:
            for k, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same(x, y, f"{path}[{k}]")
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    else:
        assert a == b, path


def _page_results(store: Store, judge: str) -> dict:
    """What the pages persist, computed on the demo (the functions and arguments the pages use)."""
    return {
        "heldout": lb.heldout_of(store, "demo", judge, True),
        "heldout_at_tau": lb.heldout_of(store, "demo", judge, False, 1.2),
        "human": lb.human_ratings(store, "demo"),
        "judge_elo": lb.judge_elo_of(store, "demo", judge, "soft", 1.2),
        "default_judge": lb.default_judge(store, "demo"),
        "tau": app_data.tau_fit_of(store, "demo", judge),
        "overview": overview.overview(store, "demo"),
        "bias": bias.bias_report(store, "demo", judge),
        "judge_arena": judges.judge_arena_elo(store, "demo"),
        "amelo": judges.annotator_abilities(store, "demo", 20),
        "shuffles": judges.shuffle_study(store, "demo", 20),
        "alignment": analyses.alignment(store, "demo", judge, n_boot=10),
        "aggregation": analyses.aggregation(store, "demo", judge, n_shuffles=5),
        "languages": analyses.languages(store, "demo", judge),
    }


def test_every_persisted_page_result_round_trips_exactly(demo):
    db, judge = demo
    with Store.open(db, read_only=True) as s:
        results = _page_results(s, judge)
    for name, value in results.items():
        back = codec.decode(codec.encode(value))
        assert_same(value, back, name)


@pytest.mark.integration
def test_a_result_is_computed_once_per_data_version_and_read_back_by_another_process(demo, tmp_path):
    db, judge = demo
    calls = []

    def counted(store, dataset, judge, all_methods=False, tau=None, progress=None):
        calls.append((dataset, judge, all_methods, tau))
        return lb.heldout_of(store, dataset, judge, all_methods, tau)

    counted.__module__, counted.__qualname__ = "tests.test_persist", "counted"

    @contextmanager
    def reader():
        with Store.open(db, read_only=True) as s:
            yield s

    first = persist.persisted(db, reader, counted, ("demo", judge), "v1", dataset="demo", progress=lambda i, n: None)
    again = persist.persisted(db, reader, counted, ("demo", judge), "v1", dataset="demo")
    assert len(calls) == 1
    assert_same(first, again)
    persist.persisted(db, reader, counted, ("demo", judge), "v2", dataset="demo")  # new data: recomputed
    persist.persisted(db, reader, counted, ("demo", judge), "v2", dataset="demo", tau=1.1)  # other input
    assert len(calls) == 3
    with Store.open(db, read_only=True) as s:
        listed = s.results_frame()
    assert (listed["kind"] == "tests.test_persist.counted").sum() == 2  # v1 replaced by v2, plus the τ one
    # what another process sees: a fresh interpreter reads the payload the first one wrote
    import subprocess
    import sys

    code = (
        "from core.store import Store; from core.app import persist; from core import codec;"
        "import sys;"
        f"s = Store.open({str(db)!r}, read_only=True);"
        "k = s.results_frame();"
        "row = k[k['kind'] == 'tests.test_persist.counted'].iloc[0];"
        "v = codec.decode(s.get_result(row['key'], row['stamp'], row['code_version']));"
        "print(type(v).__name__, len(v.table))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "HeldoutResult" and int(out[1]) == len(first.table)


def test_results_of_a_deleted_dataset_go_with_it(demo, tmp_path):
    db = tmp_path / "d.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(1, DemoConfig.small()))
        s.put_result("k1", "kind", "demo", "v", "c", b"{}", 0.1)
        s.delete_dataset("demo")
        assert s.results_frame().empty


@pytest.mark.parametrize(
    "payload",
    [
        {"$dc": "os:system", "fields": {}},
        {"$dc": "subprocess:Popen", "fields": {"args": "true"}},
        {"$dc": "core.store.handle:Store", "fields": {}},  # a project class, but not a dataclass
    ],
)
def test_decoding_never_builds_anything_but_project_dataclasses(payload):
    with pytest.raises(ValueError, match="refusing"):
        codec.decode(json.dumps(payload).encode())


def test_values_the_codec_cannot_hold_are_refused_not_mangled():
    with pytest.raises(codec.NotEncodable):
        codec.encode({"f": lambda: 1})
    with pytest.raises(codec.NotEncodable):
        codec.encode(pd.DataFrame({"mixed": [1, "a", 2.5]}))
    value = {"nan": float("nan"), "inf": -float("inf"), 3: (1, "x"), "arr": np.arange(6.0).reshape(2, 3)}
    back = codec.decode(codec.encode(value))
    assert np.isnan(back["nan"]) and back["inf"] == -float("inf") and back[3] == (1, "x")
    np.testing.assert_array_equal(back["arr"], value["arr"])


def test_an_undecodable_payload_is_recomputed(demo, tmp_path):
    db, judge = demo
    at = persist.lookup(lb.human_ratings, ("demo",), {}, "vx")
    assert at is not None
    with Store.open(db) as s:
        s.put_result(at.key, at.kind, "demo", at.stamp, at.code, b'{"$dc": "os:system", "fields": {}}', 0.0)

    @contextmanager
    def reader():
        with Store.open(db, read_only=True) as s:
            yield s

    value = persist.persisted(db, reader, lb.human_ratings, ("demo",), "vx", dataset="demo")
    assert type(value).__name__ == "Ratings"


def test_result_payloads_are_stored_uncompressed_so_one_read_does_not_decompress_the_others(tmp_path):
    """A compressed payload column made each read decompress its whole segment (~100 ms at 500 results)."""
    import duckdb

    db = tmp_path / "r.duckdb"
    with Store.open(db) as s:
        for k in range(40):
            s.put_result(f"k{k}", "kind", None, "stamp", "code", bytes([k % 7]) * 50_000, 0.1)
        assert s.get_result("k3", "stamp", "code") == bytes([3]) * 50_000
        assert s.get_result("k3", "other stamp", "code") is None and s.get_result("k3", "stamp", "old") is None
    con = duckdb.connect(str(db), read_only=True)
    try:
        kinds = {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT compression FROM pragma_storage_info('results') "
                "WHERE column_name = 'payload' AND segment_type <> 'VALIDITY'"
            ).fetchall()
        }
    finally:
        con.close()
    assert kinds == {"Uncompressed"}, kinds


def test_votes_behind_tells_a_votes_only_change_from_any_other(tmp_path):
    from core.app import voting

    db = tmp_path / "lag.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(1, DemoConfig.small()))
        before = persist.Stamps.of(s)
        battle = int(s.battle_frame("demo")["battle_id"].iloc[0])
    voting.cast(db, "demo", battle, "zoe", "left", "ab")
    voting.cast(db, "demo", battle + 1, "zoe", "tie", "ab")
    with Store.open(db, read_only=True) as s:
        after = persist.Stamps.of(s)
    assert persist.votes_behind(before.votes(), after.votes()) == 2
    judge = next(iter(after.judges))[1]
    assert persist.votes_behind(before.judge("demo", judge), after.judge("demo", judge)) == 2
    voting.cast(db, "demo", battle, "zoe", "right", "ab")  # a changed mind: no new vote, still votes only
    with Store.open(db, read_only=True) as s:
        changed = persist.Stamps.of(s)
    assert changed.votes() != after.votes() and persist.votes_behind(after.votes(), changed.votes()) == 0
    other = dataclasses.replace(after, judges=dict.fromkeys(after.judges, "1:2:0"))  # new judgments
    assert persist.votes_behind(before.judge("demo", judge), other.judge("demo", judge)) is None
    with Store.open(db) as s:  # new battles: not a votes-only change either
        s.write_dataset(dataclasses.replace(simulate_arena(2, DemoConfig.small()), name="second"))
        grown = persist.Stamps.of(s)
    assert persist.votes_behind(after.votes(), grown.votes()) is None


def test_a_result_from_before_the_newest_votes_is_shown_while_the_current_one_is_computed_behind(tmp_path):
    from core.app import voting

    db = tmp_path / "lag.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(3, DemoConfig.small()))
        battles = s.battle_frame("demo")[["battle_id"]].head(30)["battle_id"].tolist()
    calls = []

    def human_votes(store, dataset):
        calls.append(dataset)
        return int(store.vote_totals(dataset)[0])

    human_votes.__module__, human_votes.__qualname__ = "tests.test_persist", "human_votes"

    @contextmanager
    def reader():
        with Store.open(db, read_only=True) as s:
            yield s

    def stamp():
        with Store.open(db, read_only=True) as s:
            return persist.Stamps.of(s).votes()

    refresh = persist.BackgroundRefresh()
    first = persist.persisted_or_lagged(db, reader, human_votes, ("demo",), stamp(), dataset="demo", refresh=refresh)
    assert first.current and len(calls) == 1  # nothing earlier to show: computed while the caller waits
    for b in battles[:5]:
        voting.cast(db, "demo", b, "yan", "left", "ab")
    now = stamp()
    lagged = persist.persisted_or_lagged(db, reader, human_votes, ("demo",), now, dataset="demo", refresh=refresh)
    assert not lagged.current and lagged.votes_behind == 5 and lagged.value == first.value  # at once, said so
    assert refresh.wait_idle(60)
    assert len(calls) == 2
    current = persist.persisted_or_lagged(db, reader, human_votes, ("demo",), now, dataset="demo", refresh=refresh)
    assert current.current and current.stamp == now and current.value == first.value + 5
    # persisted too: a new process (a fresh refresher) reads it without computing
    again = persist.persisted_or_lagged(
        db, reader, human_votes, ("demo",), now, dataset="demo", refresh=persist.BackgroundRefresh()
    )
    assert again.current and again.value == first.value + 5 and len(calls) == 2
    # anything but votes changed: never shown from before, computed at once
    with Store.open(db) as s:
        s.write_dataset(dataclasses.replace(simulate_arena(4, DemoConfig.small()), name="second"))
    grown = persist.persisted_or_lagged(db, reader, human_votes, ("demo",), stamp(), dataset="demo", refresh=refresh)
    assert grown.current and len(calls) == 3


def test_the_source_digest_follows_the_code_and_only_the_code(tmp_path):
    from core.version import source_digest

    pkg = tmp_path / "pkg"
    (pkg / "stats").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stats" / "fit.py").write_text("def fit():\n    return 1\n")
    first = source_digest(pkg)
    assert source_digest(pkg) == first
    (pkg / "NOTES.md").write_text("a document is not code")
    (tmp_path / "README.md").write_text("outside the package")
    assert source_digest(pkg) == first
    (pkg / "stats" / "fit.py").write_text("def fit():\n    return 2\n")  # an uncommitted edit
    edited = source_digest(pkg)
    assert edited != first
    (pkg / "stats" / "fit.py").rename(pkg / "stats" / "fit2.py")  # same bytes under another module name
    assert source_digest(pkg) not in (first, edited)


def test_a_result_persisted_by_other_code_is_not_served(demo, monkeypatch):
    db = demo[0]
    calls: list[int] = []

    def models(store: Store, dataset: str) -> pd.DataFrame:
        calls.append(1)
        return store.models_frame(dataset)

    @contextmanager
    def reader():
        with Store.open(db, read_only=True) as s:
            yield s

    persist.persisted(db, reader, models, ("demo",), "v1", dataset="demo")
    persist.persisted(db, reader, models, ("demo",), "v1", dataset="demo")
    assert len(calls) == 1
    monkeypatch.setattr(persist, "results_version", lambda: "0.0+src.edited")
    persist.persisted(db, reader, models, ("demo",), "v1", dataset="demo")
    assert len(calls) == 2
