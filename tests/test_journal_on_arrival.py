"""The durable path of paid work, in-process: a row is in the journal file the moment it is appended, the
journal of a process that is gone is merged by the next run, a live one's is left to its owner."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from core.store import Store
from core.store.errors import StoreLockedError
from core.store.journal import (
    GenerationJournal,
    RunJournal,
    pending_generation_journals,
    reconcile_generations,
)
from tests.conftest import ROOT
from tests.test_judging import _store

SETTINGS = {"model": "m", "system_prompt": None, "temperature": 0.0, "max_tokens": 8}


def _answer(prompt_id: int) -> dict:
    return {
        "prompt_id": prompt_id,
        "status": "ok",
        "text": f"answer {prompt_id}",
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "latency_ms": 1.0,
        "style": None,
        "reasoning": None,
        "turns": None,
    }


def _never_free(wait_s: float):
    raise StoreLockedError("held by the test: the journal keeps its rows")


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def test_an_appended_row_is_in_the_file_at_once(tmp_path):
    db = tmp_path / "s.duckdb"
    journal = RunJournal(db, 7, _never_free, merge_every_s=3600)
    try:
        journal.append([{"battle_id": 1, "order": "ab", "raw_output": "x"}])
        # read through another file description, as the next process would after a kill: no flush, no close
        assert _lines(journal.path) == [{"battle_id": 1, "order": "ab", "raw_output": "x"}]
        assert os.stat(journal.path).st_mode & 0o777 == 0o600
    finally:
        assert journal.close(0, {}) is False  # the store stayed held: the journal is kept for reconcile
    assert journal.path.exists()


def test_a_gone_owners_generation_journal_is_merged_once_and_a_live_ones_is_left(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with Store.open(db, read_only=True) as s:
        prompts = s.prompts_for_generation("ah")["prompt_id"].astype(int).tolist()
    live = GenerationJournal(db, _never_free, "ah", "newcomer", "k1", SETTINGS, merge_every_s=3600)
    live.append([_answer(prompts[0])])
    # a journal written by another process that then died (SIGKILL: no close, no merge)
    code = (
        "import sys; from core.store.journal import GenerationJournal\n"
        "def never(w): raise SystemExit(1)\n"
        f"j = GenerationJournal({str(db)!r}, never, 'ah', 'newcomer', 'k1', {SETTINGS!r}, merge_every_s=3600)\n"
        f"j.append([{_answer(prompts[1])!r}, {_answer(prompts[2])!r}])\n"
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert len(pending_generation_journals(db)) == 2
    for _ in range(2):  # a second reconciliation finds nothing left to merge
        with Store.open(db) as s:
            reconcile_generations(s, db)
    with Store.open(db, read_only=True) as s:
        gens = s.generations_frame("ah", "newcomer")
    assert sorted(gens["prompt_id"]) == sorted(prompts[1:3])  # the dead one's answers, once
    assert pending_generation_journals(db) == [live.path]  # the live owner's journal is its own to merge
    assert live.close(0, {}) is False
