"""A judge's name is its identity: a run that would change what an existing judge is (another model, template,
prompt version or sampling) under the same name is refused unless the user says so (issue 33: a run named like
an existing judge moved its leaderboard from 4,000 battles at τ 0.477 to 997 at τ 0.001)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.app.data import import_path
from core.app.judging import PlanError, run_shared
from core.judging.config import load_toml
from core.store import Store
from tests.conftest import ROOT, admin_page
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _config, _store


def _variant(tmp_path, url, name: str, **change: str):
    path = _config(tmp_path, url, name=name)
    text = path.read_text()
    for key, value in change.items():
        lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
        text = "\n".join([*lines, f"{key} = {json.dumps(value)}"]) + "\n"
    out = tmp_path / f"{name}-{'-'.join(change) or 'same'}.toml"
    out.write_text(text)
    return out


def _state(db, judge: str) -> tuple[int, dict]:
    with Store.open(db, read_only=True) as s:
        n = s.judgment_count(judge)
        config = s.judge(judge)["config"]
    return n, config


def test_a_run_that_would_change_a_judge_is_refused_and_changes_nothing(tmp_path):
    db = _store(tmp_path, n_prompts=4)
    with FakeServer(FakeJudge()) as srv:
        first = run_shared(db, "ah", load_toml(_variant(tmp_path, srv.url, "j")), limit=8)
        assert first.status == "done"
        before = _state(db, "j")
        other_model = load_toml(_variant(tmp_path, srv.url, "j", model="another-model"))
        with pytest.raises(PlanError, match=r"model 'fake-judge' → 'another-model'.*--replace-judge"):
            run_shared(db, "ah", other_model)
        other_prompt = load_toml(_variant(tmp_path, srv.url, "j", prompt_version="rubric-v9"))
        with pytest.raises(PlanError, match="version"):
            run_shared(db, "ah", other_prompt)
        assert _state(db, "j") == before  # nothing stored, the judge's configuration kept
        # the same judge reached another way (another address, another budget) is the same judge
        moved = load_toml(_variant(tmp_path, srv.url.replace("127.0.0.1", "localhost"), "j"))
        assert run_shared(db, "ah", moved, limit=12).status == "done"
        # and asked for, the replacement happens
        replaced = run_shared(db, "ah", other_model, limit=16, replace_judge=True)
        assert replaced.status == "done"
    assert _state(db, "j")[1]["model"] == "another-model"


@pytest.mark.integration
def test_the_cli_refuses_with_exit_2_and_takes_replace_judge(tmp_path):
    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        base = [sys.executable, "-m", "core", "judge", "--db", str(db), "--dataset", "ah", "--limit", "4"]
        same = subprocess.run([*base, "--config", str(_variant(tmp_path, srv.url, "j"))], cwd=ROOT, text=True)
        assert same.returncode == 0
        cfg = str(_variant(tmp_path, srv.url, "j", template="ab-logprob"))
        refused = subprocess.run([*base, "--config", cfg], cwd=ROOT, capture_output=True, text=True)
        assert refused.returncode == 2 and "--replace-judge" in refused.stderr, refused.stderr
        taken = subprocess.run([*base, "--config", cfg, "--replace-judge"], cwd=ROOT, capture_output=True, text=True)
        assert taken.returncode == 0, taken.stderr


def test_a_run_named_like_an_imported_judge_is_refused(tmp_path):
    db = tmp_path / "s.duckdb"
    f = tmp_path / "run" / "annotations.json"
    f.parent.mkdir()
    recs = [
        {
            "instruction": f"q{k}",
            "output_1": f"a{k}",
            "generator_1": "base",
            "output_2": f"b{k}",
            "generator_2": "m",
            "annotator": "imported-judge",
            "preference": 1.7,
        }
        for k in range(4)
    ]
    f.write_text(json.dumps(recs))
    with Store.open(db) as s:
        import_path(s, f, "alpaca-eval", dataset="ae")
    with FakeServer(FakeJudge()) as srv, pytest.raises(PlanError, match="holds 4 imported judgments"):
        run_shared(db, "ae", load_toml(_variant(tmp_path, srv.url, "imported-judge")))
    assert _state(db, "imported-judge")[0] == 4


@pytest.mark.integration
def test_the_admin_form_asks_before_replacing_a_judge(tmp_path, monkeypatch):

    db = _store(tmp_path, n_prompts=3)
    with FakeServer(FakeJudge()) as srv:
        assert run_shared(db, "ah", load_toml(_variant(tmp_path, srv.url, "j")), limit=4).status == "done"
        at = admin_page(db, monkeypatch, token="admin-token-for-tests")
        next(t for t in at.text_input if t.label == "name").set_value("j")
        next(t for t in at.text_input if t.label == "base URL").set_value(srv.url)
        next(t for t in at.text_input if t.label == "model").set_value("another-model")
        next(r for r in at.radio if r.label == "action").set_value("start run")
        next(b for b in at.button if b.label == "Go").click().run()
        assert not at.exception, at.exception
        warned = " ".join(w.value for w in at.warning)
        assert "exists with another configuration" in warned and "another-model" in warned
        assert not any("Started a worker" in s.value for s in at.success)
    assert _state(db, "j")[1]["model"] == "fake-judge"  # nothing replaced
