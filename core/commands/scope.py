"""``python -m core scope``: SCOPE coverage–risk curves with baselines and LTT."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store


def register(sub) -> None:
    p = sub.add_parser("scope", help="selective judging: SCOPE / LTT / baselines over α (METHODS §6)")
    p.add_argument("file", nargs="?", help="CSV with p_fwd, p_rev, human (a|b), or a SoftElo-format CSV")
    p.add_argument("--db")
    p.add_argument("--dataset")
    p.add_argument("--judge")
    p.add_argument("--source", choices=["logprob", "rubric", "verbal", "single"], default=None,
                   help="where P(a ≻ b) comes from (store default: logprob if present, else rubric)")
    p.add_argument("--alpha", default="0.05,0.1,0.15,0.2,0.25")
    p.add_argument("--splits", type=int, default=1000)
    p.add_argument("--delta", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _alphas(text: str) -> tuple[float, ...]:
    try:
        alphas = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"--alpha must be numbers separated by commas, got {text!r}") from None
    if not alphas or any(not 0 < a < 1 for a in alphas):
        raise UserError(f"every --alpha must be in (0, 1), got {text!r}")
    return alphas


def _from_file(path: Path, source: str | None):
    """Returns (forward probabilities, reverse probabilities, human prefers a)."""
    from core.calibration import fit_tau
    from core.ingest import IngestError, read_softelo_frame

    if not path.exists():
        raise UserError(f"{path}: file does not exist")
    try:
        header = pd.read_csv(path, nrows=0).columns.tolist()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable CSV ({exc})") from None
    if {"p_fwd", "p_rev", "human"} <= set(header):
        df = pd.read_csv(path, dtype={"human": str})
        for col in ("p_fwd", "p_rev"):
            v = pd.to_numeric(df[col], errors="coerce")
            bad = np.flatnonzero(~np.isfinite(v.to_numpy(float)) | (v < 0) | (v > 1))
            if len(bad):
                raise UserError(f"{path}, row {bad[0] + 1}, field '{col}': expected a probability in [0, 1], "
                                f"got {df[col].iloc[bad[0]]!r}")
        h = df["human"].astype(str).str.strip().str.lower()
        bad = np.flatnonzero(~h.isin(["a", "b"]).to_numpy())
        if len(bad):
            raise UserError(f"{path}, row {bad[0] + 1}, field 'human': expected 'a' or 'b', got {df['human'].iloc[bad[0]]!r}")
        p_fwd = df["p_fwd"].to_numpy(float)
        p_rev = p_fwd if source == "single" else df["p_rev"].to_numpy(float)
        return p_fwd, p_rev, (h == "a").to_numpy(), None
    try:
        f = read_softelo_frame(path)
    except IngestError as exc:
        raise UserError(str(exc)) from None
    t = fit_tau(f["gap"], f["human_y"])
    if t.tau is None:
        raise UserError(f"{path}: τ cannot be fitted ({t.reason})")
    # Instances: human and judge both decisive; one order only (the file averages them).
    f = f[f["human_y"].isin([0.0, 1.0]) & f["judge_hard"].isin([0.0, 1.0]) & f["gap"].notna()]
    p = 1 / (1 + np.exp(-t.tau * f["gap"].to_numpy(float)))
    return p, p, (f["human_y"] == 1.0).to_numpy(), t.tau


def run(args) -> int:
    from core import selective
    from core.store import StoreError

    alphas = _alphas(args.alpha)
    if args.splits < 1:
        raise UserError("--splits must be at least 1")
    if not 0 < args.delta < 1:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    t0 = time.perf_counter()
    tau = None
    if args.file:
        p_fwd, p_rev, human_a, tau = _from_file(Path(args.file), args.source)
    else:
        if not (args.db and args.dataset and args.judge):
            raise UserError("give a FILE, or --db, --dataset and --judge")
        with open_store(args.db, read_only=True) as store:
            try:
                bf = store.battle_frame(args.dataset, args.judge)
            except StoreError as exc:
                raise UserError(str(exc)) from None
        source = args.source or ("logprob" if bf["p_ab"].notna().any() else "rubric")
        inst = selective.instances_from_battles(bf, source)
        if inst.reason:
            raise UserError(f"source {source!r}: {inst.reason}")
        tau = inst.tau
        p_fwd, p_rev, human_a = inst.frame["p_fwd"].to_numpy(), inst.frame["p_rev"].to_numpy(), inst.frame["human_a"].to_numpy()
    if len(p_fwd) < 4:
        raise UserError(f"only {len(p_fwd)} instances with a decisive human vote: too few to split")
    u = selective.bpe(p_fwd, p_rev, human_a)
    single = selective.single_order(p_fwd, human_a)
    curves = selective.evaluate(u, alphas, n_splits=args.splits, delta=args.delta, seed=args.seed)
    out = {"alphas": list(alphas), "n_instances": int(len(p_fwd)), "n_splits": args.splits, "delta": args.delta,
           "tau": tau, "methods": curves.method_lists(),
           "uncertainty": {"bpe": selective.quality(u).as_dict(), "single_order": selective.quality(single).as_dict()},
           "method_seconds": curves.seconds, "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(clean_json(out))
        return 0
    for m, d in out["methods"].items():
        print(m, " ".join(f"α={a:.2f}: risk {r if r is None else round(r, 3)} cov {c:.2f}"
                          for a, r, c in zip(alphas, d["risk_mean"], d["coverage_mean"])))
    return 0
