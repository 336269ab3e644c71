"""Judge runs through the OpenAI Batch API, against the fake endpoint's /v1/files and /v1/batches.

What must hold: the judgments equal those of an online run (same requests, same parsing); a process
killed after submitting is restarted and collects the batch it submitted, never a second one; a
process killed between the upload and the record of the batch id finds its batch by our key; what a
batch did not answer (5xx lines, an expired batch's rest) stays pending and the next run submits it;
a 4xx line is stored as a failed call with its reason.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from core.app.judging import run_shared
from core.judging.config import from_mapping, load_toml
from core.store import Store
from tests.conftest import ROOT, wait_until
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _config, _store

SCORES = ["verdict", "p_a", "a_adherence", "b_adherence", "a_clarity", "b_clarity", "parse_error"]


def _batch_config(tmp_path, url, name="batchy", timeout=2, **extra):
    path = _config(tmp_path, url, name=name, timeout=timeout)
    text = path.read_text() + 'mode = "batch"\nbatch_poll_s = 0.1\n'
    for key, value in extra.items():
        text += f"{key} = {value!r}\n"
    path.write_text(text)
    return path


def _judgments(db, judge):
    with Store.open(db, read_only=True) as s:
        j = s.judgments_frame("ah", judge, variant=None)
    assert not j.duplicated(["battle_id", "order"]).any()
    return j.sort_values(["battle_id", "order"]).reset_index(drop=True)


def _batch_ids_stored(db) -> int:
    """Batches whose provider id the store holds (a run killed after this collects them, not submits again)."""
    with Store.open(db, read_only=True, wait_s=30) as s:
        return int(s.batches_frame()["batch_id"].notna().sum())


def test_batch_run_stores_what_an_online_run_stores(tmp_path):
    db = _store(tmp_path, n_prompts=6)
    with FakeServer(FakeJudge()) as srv:
        online = run_shared(db, "ah", load_toml(_config(tmp_path, srv.url, name="online")))
        batch = run_shared(db, "ah", load_toml(_batch_config(tmp_path, srv.url)))
        assert srv.judge.batches.created == 1
    assert online.status == "done" and batch.status == "done", batch.stats.message
    a, b = _judgments(db, "online"), _judgments(db, "batchy")
    assert len(a) == len(b) == online.stats.planned > 0
    assert a[["battle_id", "order"]].equals(b[["battle_id", "order"]])
    for col in SCORES:
        assert a[col].equals(b[col]), col
    with Store.open(db, read_only=True) as s:
        batches = s.batches_frame(batch.run_id)
        runs = s.runs_frame("ah").set_index("run_id")
    assert list(batches["status"]) == ["collected"] and batches["batch_id"].iloc[0] == "batch_1"
    assert runs.loc[batch.run_id, "status"] == "done" and runs.loc[batch.run_id, "done"] == len(b)
    assert runs.loc[batch.run_id, "prompt_tokens"] > 0


def test_unanswered_requests_stay_pending_and_a_4xx_is_stored_as_failed(tmp_path):
    db = _store(tmp_path, n_prompts=5)  # 30 units
    with FakeServer(FakeJudge(faults={3: "500", 7: "400", 11: "429"})) as srv:
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        first = run_shared(db, "ah", cfg)
        assert first.status == "incomplete" and first.stats.deferred == 2  # the 500 and the 429
        assert first.stats.failed == 1 and first.stats.done == 27
        j = _judgments(db, "batchy")
        failed = j[j["parse_error"].fillna("").str.startswith("call failed: HTTP 400")]
        assert len(j) == 28 and len(failed) == 1
        second = run_shared(db, "ah", cfg)  # submits only the two pending requests
        assert second.status == "done" and second.stats.planned == 2
        assert srv.judge.batches.created == 2
        # the second batch holds only those two (its input file is deleted once collected)
        assert srv.judge.batches.batches["batch_2"]["request_counts"]["total"] == 2
    assert len(_judgments(db, "batchy")) == 30


def test_an_expired_batch_keeps_what_it_answered(tmp_path):
    db = _store(tmp_path, n_prompts=4)  # 24 units
    with FakeServer(FakeJudge()) as srv:
        srv.judge.batches.outcome = "expired"
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        first = run_shared(db, "ah", cfg)
        assert first.status == "incomplete" and first.stats.done == 12 and first.stats.deferred == 12
        srv.judge.batches.outcome = "completed"
        assert run_shared(db, "ah", cfg).status == "done"
    assert len(_judgments(db, "batchy")) == 24


def test_a_batch_still_in_progress_pauses_the_run_and_the_same_command_collects_it(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with FakeServer(FakeJudge()) as srv:
        srv.judge.batches.delay_s = 3600
        cfg = load_toml(_batch_config(tmp_path, srv.url, batch_wait_s=0.3))
        first = run_shared(db, "ah", cfg)
        assert first.status == "paused" and "batch batch_1 in_progress" in (first.stats.message or "")
        assert len(_judgments(db, "batchy")) == 0
        srv.judge.batches.delay_s = 0
        second = run_shared(db, "ah", cfg)
        assert second.status == "done" and srv.judge.batches.created == 1
    assert len(_judgments(db, "batchy")) == 24


def test_a_batch_whose_id_was_never_recorded_is_found_by_its_key(tmp_path, monkeypatch):
    """The kill between ``batches.create`` and the store's record of its id, played deterministically."""
    from core.store.judging import JudgingStore

    class Killed(Exception):
        pass

    real = JudgingStore.batch_update

    def dies_before_recording_the_id(self, key, **fields):
        if "batch_id" in fields:
            raise Killed
        return real(self, key, **fields)

    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        monkeypatch.setattr(JudgingStore, "batch_update", dies_before_recording_the_id)
        with pytest.raises(Killed):
            run_shared(db, "ah", cfg)
        monkeypatch.undo()
        with Store.open(db, read_only=True) as s:
            rows = s.batches_frame()
        assert list(rows["status"]) == ["submitting"] and rows["batch_id"].isna().all()
        assert srv.judge.batches.created == 1
        again = run_shared(db, "ah", cfg)
        assert again.status == "done" and srv.judge.batches.created == 1  # adopted, not submitted again
    with Store.open(db, read_only=True) as s:
        rows = s.batches_frame()
    assert list(rows["status"]) == ["collected"] and rows["batch_id"].iloc[0] == "batch_1"
    assert len(_judgments(db, "batchy")) == 18


def test_a_submitting_record_the_provider_never_saw_is_dropped_and_submitted(tmp_path, monkeypatch):
    """Killed after recording the units but before the upload: nothing to adopt, the units are submitted."""
    from core.judging import batch as batch_mod

    class Killed(Exception):
        pass

    def upload_dies(*a, **k):
        raise Killed

    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        real_client = batch_mod.make_client

        def client_without_upload(c):
            client = real_client(c)
            client.files.create = upload_dies
            return client

        monkeypatch.setattr(batch_mod, "make_client", client_without_upload)
        with pytest.raises(Killed):
            run_shared(db, "ah", cfg)
        monkeypatch.undo()
        assert srv.judge.batches.created == 0
        assert run_shared(db, "ah", cfg).status == "done" and srv.judge.batches.created == 1
    with Store.open(db, read_only=True) as s:
        assert list(s.batches_frame()["status"]) == ["collected"]
    assert len(_judgments(db, "batchy")) == 18


@pytest.mark.integration
def test_batch_run_killed_and_restarted_collects_its_batch_once(tmp_path):
    """The issue's test: a run submitted, the process killed (SIGKILL), restarted, the batch collected."""
    db = _store(tmp_path, n_prompts=5)
    with FakeServer(FakeJudge()) as srv:
        srv.judge.batches.delay_s = 3600  # the batch waits until the process is gone
        path = _batch_config(tmp_path, srv.url)
        cmd = [sys.executable, "-m", "core", "judge", "--db", str(db), "--config", str(path), "--dataset", "ah"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(lambda: srv.judge.batches.created > 0, timeout=120, poll=0.1, what="the batch's creation")
        assert srv.judge.batches.created == 1
        wait_until(lambda: _batch_ids_stored(db) == 1, 120, "the batch id in the store")
        proc.kill()
        proc.wait(30)
        assert len(_judgments(db, "batchy")) == 0
        srv.judge.batches.delay_s = 0
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert srv.judge.batches.created == 1 and srv.judge.batches.requests_answered == 30
    assert len(_judgments(db, "batchy")) == 30
    with Store.open(db, read_only=True) as s:
        runs = s.runs_frame("ah")
    assert set(runs["status"]) == {"interrupted", "done"}


def test_batch_mode_configuration_is_checked():
    base = {"name": "x", "base_url": "http://h/v1", "model": "m"}
    with pytest.raises(ValueError, match="mode"):
        from_mapping({**base, "mode": "bulk"})
    with pytest.raises(ValueError, match="replica_urls"):
        from_mapping({**base, "mode": "batch", "replica_urls": ["http://h2/v1"]})
    with pytest.raises(ValueError, match="batch_max_requests"):
        from_mapping({**base, "mode": "batch", "batch_max_requests": 50_001})
    assert from_mapping({**base, "mode": "batch"}).mode == "batch"


def test_a_batch_create_slower_than_the_timeout_makes_one_batch_not_two(tmp_path):
    db = _store(tmp_path, n_prompts=4)  # 24 units
    with FakeServer(FakeJudge()) as srv:
        srv.judge.batches.create_delay_s = 3.0  # the client's timeout_s is 2 (tests.test_judging.CONFIG)
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        assert cfg.timeout_s < srv.judge.batches.create_delay_s
        out = run_shared(db, "ah", cfg)
        # the create timed out; the batch was found by our key instead of being created (and paid for) again
        assert srv.judge.batches.created == 1, srv.judge.batches.created
    assert out.status == "done", out.stats.message
    assert len(_judgments(db, "batchy")) == 24


def test_duplicate_batches_left_by_lost_answers_are_cancelled_and_one_is_collected(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with FakeServer(FakeJudge()) as srv:
        batches = srv.judge.batches
        batches.create_delay_s = 3.0
        cfg = load_toml(_batch_config(tmp_path, srv.url, timeout=0.5))
        # an endpoint whose listing is slower to show a batch than the client waits: the create is tried again
        original = batches.listing
        hidden = {"until": time.monotonic() + 60.0}

        def late_listing(query: str):
            code, body = original(query)
            if time.monotonic() < hidden["until"] and batches.created < 2:
                body = {**body, "data": [], "has_more": False}
            return code, body

        batches.listing = late_listing
        out = run_shared(db, "ah", cfg)
        statuses = sorted(b["status"] for b in batches.batches.values())
    assert batches.created == 2 and statuses == ["cancelled", "completed"], statuses
    assert out.status == "done", out.stats.message
    assert len(_judgments(db, "batchy")) == 24


def test_a_collected_batch_leaves_no_input_file_at_the_provider(tmp_path):
    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        out = run_shared(db, "ah", load_toml(_batch_config(tmp_path, srv.url)))
        batches = srv.judge.batches
        assert out.status == "done" and batches.uploads == 1
        with Store.open(db, read_only=True) as s:
            input_file = s.batches_frame()["input_file_id"].iloc[0]
        assert batches.deleted == [input_file] and input_file not in batches.files


def test_killed_after_the_upload_the_batch_is_created_from_that_file(tmp_path, monkeypatch):
    """The kill between the upload and the create, played deterministically: the next run creates the batch
    from the file already uploaded (no second upload, one batch) and deletes it once collected."""
    from core.judging.batch import BatchRun

    class Killed(Exception):
        pass

    def dies_before_creating(self, key, input_file_id):
        raise Killed

    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        batches = srv.judge.batches
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        monkeypatch.setattr(BatchRun, "_create_once", dies_before_creating)
        with pytest.raises(Killed):
            run_shared(db, "ah", cfg)
        monkeypatch.undo()
        assert batches.uploads == 1 and batches.created == 0
        with Store.open(db, read_only=True) as s:
            rows = s.batches_frame()
        assert list(rows["status"]) == ["submitting"]
        uploaded = rows["input_file_id"].iloc[0]
        assert uploaded in batches.files
        again = run_shared(db, "ah", cfg)
        assert again.status == "done", again.stats.message
        assert batches.uploads == 1 and batches.created == 1  # the same file, one batch
        assert batches.deleted == [uploaded]
    assert len(_judgments(db, "batchy")) == 18


def test_an_upload_the_provider_lost_is_submitted_again(tmp_path, monkeypatch):
    """The recorded input file is gone at the provider (expired, deleted by hand): the record is dropped and
    its units are uploaded and submitted anew, once."""
    from core.judging.batch import BatchRun

    class Killed(Exception):
        pass

    def dies_before_creating(self, key, input_file_id):
        raise Killed

    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        batches = srv.judge.batches
        cfg = load_toml(_batch_config(tmp_path, srv.url))
        monkeypatch.setattr(BatchRun, "_create_once", dies_before_creating)
        with pytest.raises(Killed):
            run_shared(db, "ah", cfg)
        monkeypatch.undo()
        batches.files.clear()
        again = run_shared(db, "ah", cfg)
        assert again.status == "done", again.stats.message
        assert batches.uploads == 2 and batches.created == 1
    with Store.open(db, read_only=True) as s:
        assert list(s.batches_frame()["status"]) == ["collected"]
    assert len(_judgments(db, "batchy")) == 18
