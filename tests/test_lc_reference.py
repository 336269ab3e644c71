"""The shipped AlpacaEval instruction difficulties (core/stats/reference/alpaca_eval_lc.json).

Two checks against what AlpacaEval published, independent of the project's own fits: its LC formula with its
own per-model coefficients and these difficulties gives its published LC for every model it publishes both
for; and the file is exactly what ``scripts/fit_alpaca_eval_difficulty.py`` makes from the shared data.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from core.stats.lc_reference import OUTPUT, alpaca_eval_reference, instruction_digest
from tests.conftest import shared_path

pytestmark = pytest.mark.shared
ROOT = Path(__file__).resolve().parents[1]


def test_alpaca_evals_own_coefficients_give_its_published_lc_with_these_difficulties():
    reference = alpaca_eval_reference()
    weights = pd.read_csv(shared_path("alpaca_eval_2") / "length_controlled_glm_weights.csv", index_col=0)
    weights.columns = ["w_len", "w_diff", "w_ng"]
    board = pd.read_csv(shared_path("alpaca_eval_2") / "leaderboard.csv", index_col=0)
    annotations = json.loads(
        (shared_path("alpaca_eval_2") / "results/phi-2/weighted_alpaca_eval_gpt4_turbo/annotations.json").read_text()
    )
    gamma = np.array([reference.gamma(r["instruction"]) for r in annotations])
    assert len(reference.difficulty) == 805 and not np.isnan(gamma.astype(float)).any()
    texts = [r["instruction"] for r in annotations]
    assert reference.covers("gpt4_1106_preview", texts) and not reference.covers("text_davinci_003", texts)
    rated = [m for m in weights.index if m in board.index and m != reference.baseline]
    assert len(rated) >= 190
    # AlpacaEval's predict_winrate: mean over its 805 instructions of σ(intercept + w_diff·γ), no length difference
    gamma = np.array(list(reference.difficulty.values()))
    ours = 100 * expit(weights.loc[rated, "w_ng"].to_numpy()[:, None] + np.outer(weights.loc[rated, "w_diff"], gamma))
    gap = np.abs(ours.mean(axis=1) - board.loc[rated, "length_controlled_winrate"].to_numpy())
    assert gap.mean() <= 0.1 and gap.max() <= 0.4, (gap.mean(), gap.max())
    # the slope prior is the length-gamed baselines' published slope, in the model-minus-baseline orientation
    gamed = -weights.loc[["gpt4_1106_preview_verbose", "gpt4_1106_preview_concise"], "w_len"].mean()
    assert reference.slope_mean == pytest.approx(gamed, abs=1e-6)


@pytest.mark.slow
def test_the_file_is_what_the_script_makes(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("fit_difficulty", ROOT / "scripts" / "fit_alpaca_eval_difficulty.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "ref.json"
    monkeypatch.setattr(script, "OUTPUT", out)
    script.main(shared_path("alpaca_eval_2").parent)
    made, shipped = json.loads(out.read_text()), json.loads(OUTPUT.read_text())
    # the same numbers to the file's rounding (another machine's last bits may round the 6th decimal the other way)
    assert made["difficulty"].keys() == shipped["difficulty"].keys()
    for key, value in shipped["difficulty"].items():
        assert made["difficulty"][key] == pytest.approx(value, abs=2e-6), key
    for part in ("difficulty_prior", "slope_prior", "validation"):
        assert made[part] == pytest.approx(shipped[part], abs=2e-4), part
    assert {k: made[k] for k in ("about", "judge", "baseline")} == {
        k: shipped[k] for k in ("about", "judge", "baseline")
    }
    assert "held-out LC mean |Δ|" in capsys.readouterr().out


def test_instructions_are_keyed_by_their_text():
    assert instruction_digest("What is 2+2?") == instruction_digest("What is 2+2?")
    assert instruction_digest("What is 2+2?") != instruction_digest("What is 2+3?")
    assert len(instruction_digest("x")) == 16
    assert not alpaca_eval_reference().covers("gpt4_1106_preview", ["an instruction AlpacaEval never asked"])
