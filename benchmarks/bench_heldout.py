"""Held-out protocol timing: paper-scale file and the real 1,000-row sample.

    python benchmarks/bench_heldout.py

Full protocol = leave-one-model-out (τ + human/hard/soft BT fits per fold,
1-D target solves, 20 bootstrap resamples) + 5 conformal splits.  Baseline in
the same run: the same protocol with the bootstrap resamples solved one at a
time (a plain loop) instead of batched.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.app.files import softelo_frame  # noqa: E402
from core.datahome import shared_file  # noqa: E402
from core.stats import heldout  # noqa: E402
from core.stats.conformal import evaluate_splits  # noqa: E402
from core.stats.heldout import Predictor, leave_one_model_out  # noqa: E402

HARD_SOFT = (Predictor("hard", "hard"), Predictor("soft", "soft"))


def protocol(frame):
    t0 = time.perf_counter()
    res = leave_one_model_out(frame, HARD_SOFT)
    for m in ("hard", "soft"):
        evaluate_splits(res.table[f"{m}_resid"], res.table[f"{m}_se"], 0.1, n_splits=5, seed=42)
    return time.perf_counter() - t0, res


def unbatched(frame):
    original = heldout.solve_target

    def one_at_a_time(ta, y, **kw):
        ta, y = np.atleast_2d(ta), np.atleast_2d(y)
        return np.array([original(ta[r], y[r], **kw)[0] for r in range(ta.shape[0])])

    heldout.solve_target = one_at_a_time
    try:
        return protocol(frame)[0]
    finally:
        heldout.solve_target = original


def main() -> None:
    big = ROOT / "benchmarks/out/softelo_25k.csv"
    if not big.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks/make_softelo_file.py"), "--out", str(big)], check=True)
    files = [("paper-scale synthetic (25,000 battles, 55 models)", big)]
    sample = shared_file("softelo_sample_annotations.csv")
    if sample is not None:
        files.append(("real SoftElo sample (1,000 battles, 14 models)", sample))
    for label, path in files:
        frame = softelo_frame(path)
        protocol(frame)  # warm-up (imports, caches)
        secs, res = min((protocol(frame) for _ in range(3)), key=lambda r: r[0])
        base = unbatched(frame)
        s = res.summary().set_index("method")
        print(
            f"{label}: full protocol {secs:.3f} s (best of 3); unbatched bootstrap baseline {base:.3f} s "
            f"({base / secs:.1f}x); MAE hard {s.loc['hard', 'mae']:.1f} soft {s.loc['soft', 'mae']:.1f}; "
            f"τ {res.tau_full:.3f}"
        )


if __name__ == "__main__":
    main()
