"""Judge variance: a seeded sample re-judged k times; the flip rate and the leaderboard's spread.

Known answers from the fake endpoint: a deterministic judge never flips and its leaderboard does not move;
a judge that swaps the two answers' scores with probability p flips a (battle, order) over k + 1 judgments
with probability 1 − (1 − p)^(k+1) − p^(k+1) (ties, which a swap leaves alone, pull it slightly lower).
"""

from __future__ import annotations

import pytest

from core.app.judging import judge_variance_of
from core.store import Store
from tests.cli import CliResult, run_cli
from tests.conftest import ROOT
from tests.fake_openai_server import FakeJudge, FakeServer
from tests.test_judging import _config, _store

# multi-process or Streamlit AppTest throughout: the integration tier (pytest.ini)
pytestmark = pytest.mark.integration


def _judge(db, cfg, *extra: str) -> CliResult:
    cmd = ["judge", "--db", str(db), "--config", str(cfg), "--dataset", "ah", *extra]
    return run_cli(*cmd, cwd=ROOT)


@pytest.mark.parametrize(("noise", "lo", "hi"), [(0.0, 0.0, 0.0), (0.3, 0.40, 0.80)])
def test_flip_rate_and_spread_match_the_judges_noise(tmp_path, noise, lo, hi):
    db = _store(tmp_path, n_prompts=12)  # 36 battles
    with FakeServer(FakeJudge(latency_ms=2, noise=noise, seed=3)) as srv:
        cfg = _config(tmp_path, srv.url, name="wobbly")
        out = _judge(db, cfg, "--repeats", "2", "--repeat-sample", "30")
        assert out.returncode == 0, out.stderr
        again = _judge(db, cfg, "--repeats", "2", "--repeat-sample", "30")
        assert again.returncode == 0 and "nothing to do" in again.stderr  # resumable, never judged twice
    with Store.open(db, read_only=True) as s:
        v = judge_variance_of(s, "ah", "wobbly")
        j = s.judgments_frame("ah", "wobbly", variant=None)
    assert v is not None and v.repeats == 2 and v.n_units == 60
    assert set(j["variant"]) == {"original", "repeat-1", "repeat-2"}
    assert not j.duplicated(["battle_id", "order", "variant"]).any()
    print(v.statement())
    assert lo <= v.flip_rate <= hi, v.flip_rate
    if noise == 0:
        assert v.median_sd == 0.0
    else:
        assert v.median_sd > 5.0  # a judge this noisy moves a 30-battle leaderboard visibly
    assert f"changed in {v.flip_rate:.1%}" in out.stdout
