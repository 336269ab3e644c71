"""``python -m core scope``: SCOPE risk–coverage curves with LTT and the baselines (METHODS §6).

Input, one of:

* FILE with columns ``p_fwd``, ``p_rev``, ``human`` ('a' or 'b'): P(a ≻ b)
  from each presentation order and the human vote of each instance;
* FILE in the SoftElo format (model_a, model_b, human_pref, judge_pref,
  scores_a, scores_b): P(a ≻ b) = σ(τ·gap) from the rubric gap of the one
  (order-averaged) judgment, τ fitted by maximum likelihood on the
  human-decisive battles (METHODS §2); instances are the battles where both
  the human and the judge are decisive;
* ``--db PATH --dataset NAME --judge NAME``: a store's battle frame, with
  ``--source`` logprob (default when present), rubric, single or verbal.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from core.cli import UserError, clean_json, print_json
from core.commands._common import open_store

P_FILE_COLUMNS = ("p_fwd", "p_rev", "human")
SOFTELO_COLUMNS = ("model_a", "model_b", "human_pref", "judge_pref", "scores_a", "scores_b")


def register(sub) -> None:
    p = sub.add_parser("scope", help="selective judging: SCOPE / LTT / baselines over α (METHODS §6)")
    p.add_argument("file", nargs="?", help="CSV with p_fwd, p_rev, human (a|b), or a SoftElo-format CSV")
    p.add_argument("--db", help="DuckDB store (with --dataset and --judge)")
    p.add_argument("--dataset")
    p.add_argument("--judge")
    p.add_argument("--source", choices=["logprob", "rubric", "single", "verbal"], default=None,
                   help="where P(a ≻ b) comes from (store default: logprob if present, else rubric; "
                        "'single' uses the forward order only)")
    p.add_argument("--alpha", default="0.05,0.1,0.15,0.2,0.25", help="target error rates, comma-separated")
    p.add_argument("--splits", type=int, default=1000, help="random 50/50 calibration/test splits")
    p.add_argument("--delta", type=float, default=0.1, help="LTT: P(risk > α) ≤ δ")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _alphas(text: str) -> tuple[float, ...]:
    try:
        alphas = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"--alpha must be numbers separated by commas, got {text!r}") from None
    if not alphas or any(not 0 < a < 1 for a in alphas):
        raise UserError(f"every --alpha must be in (0, 1), got {text!r}")
    return alphas


def _read_p_file(path: Path, source: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.columns = [c.strip() for c in df.columns]
    if df.empty:
        raise UserError(f"{path}: the file has no rows")
    for col in ("p_fwd", "p_rev"):
        v = pd.to_numeric(df[col].str.strip(), errors="coerce").to_numpy(float)
        bad = np.flatnonzero(~np.isfinite(v) | (v < 0) | (v > 1))
        if len(bad):
            raise UserError(f"{path}, row {bad[0] + 1}, field '{col}': expected a probability in [0, 1], "
                            f"got {df[col].iloc[bad[0]]!r}")
    h = df["human"].str.strip().str.lower()
    bad = np.flatnonzero(~h.isin(["a", "b"]).to_numpy())
    if len(bad):
        raise UserError(f"{path}, row {bad[0] + 1}, field 'human': expected 'a' or 'b', "
                        f"got {df['human'].iloc[bad[0]]!r}")
    p_fwd = df["p_fwd"].astype(float).to_numpy()
    p_rev = p_fwd if source == "single" else df["p_rev"].astype(float).to_numpy()
    return p_fwd, p_rev, (h == "a").to_numpy()


def _read_softelo_file(path: Path, source: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from scipy.special import expit

    from core.calibration import fit_tau
    from core.ingest import IngestError, read_softelo_frame

    if source in ("logprob", "verbal"):
        raise UserError(f"{path}: a SoftElo file has rubric scores only (no {source} probabilities); "
                        "use --source rubric or single")
    try:
        f = read_softelo_frame(path)
    except IngestError as exc:
        raise UserError(str(exc).replace(" Nothing was imported.", "")) from None
    fit = fit_tau(f["gap"].to_numpy(float), f["human_y"].to_numpy(float), interval=False)
    if fit.tau is None:
        raise UserError(f"{path}: τ cannot be fitted ({fit.reason})")
    # The judge's verdict is the hard label in this format (METHODS §2); a judge tie made
    # no A/B call to accept or abstain on, like a human tie.
    keep = f["human_y"].isin([0.0, 1.0]) & f["judge_hard"].isin([0.0, 1.0]) & np.isfinite(f["gap"])
    p = expit(fit.tau * f.loc[keep, "gap"].to_numpy(float))
    return p, p, (f.loc[keep, "human_y"] == 1.0).to_numpy()


def _from_file(path: Path, source: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(forward probabilities, reverse probabilities, human prefers a) from a CSV."""
    if not path.exists():
        raise UserError(f"{path}: file does not exist")
    try:
        header = [c.strip() for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from None
    if set(P_FILE_COLUMNS) <= set(header):
        return _read_p_file(path, source)
    if set(SOFTELO_COLUMNS) <= set(header):
        return _read_softelo_file(path, source)
    raise UserError(f"{path}: expected columns {', '.join(P_FILE_COLUMNS)} or the SoftElo columns "
                    f"{', '.join(SOFTELO_COLUMNS)}; found {', '.join(header) or 'none'}")


def _from_store(args) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from core import selective
    from core.store import StoreError

    with open_store(args.db, read_only=True) as store:
        try:
            bf = store.battle_frame(args.dataset, args.judge)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    has_lp = bf["p_ab"].notna().any() and bf["p_ba"].notna().any()
    source = args.source or ("logprob" if has_lp else "rubric")
    inst = selective.instances_from_battles(bf, source)
    if inst.reason:
        raise UserError(f"judge {args.judge!r} on {args.dataset!r}, source {source!r}: {inst.reason}")
    f = inst.frame
    return f["p_fwd"].to_numpy(float), f["p_rev"].to_numpy(float), f["human_a"].to_numpy(bool)


def run(args) -> int:
    from core import selective

    alphas = _alphas(args.alpha)
    if args.splits < 1:
        raise UserError("--splits must be at least 1")
    if not 0 < args.delta < 1:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    t0 = time.perf_counter()
    if args.file:
        if args.db or args.dataset or args.judge:
            raise UserError("give either a FILE or --db/--dataset/--judge, not both")
        p_fwd, p_rev, human_a = _from_file(Path(args.file), args.source)
    else:
        if not (args.db and args.dataset and args.judge):
            raise UserError("give a FILE, or --db, --dataset and --judge")
        p_fwd, p_rev, human_a = _from_store(args)
    if len(p_fwd) < 4:
        raise UserError(f"only {len(p_fwd)} instances with a decisive human vote: at least 4 are needed to split")
    u = selective.bpe(p_fwd, p_rev, human_a)
    single = selective.single_order(p_fwd, human_a)
    curves = selective.evaluate(u, alphas, n_splits=args.splits, delta=args.delta, seed=args.seed)
    quality_keys = ("accuracy", "ece", "auroc", "auprc")
    out = {
        "alphas": list(alphas),
        "n_instances": int(len(u)),
        "methods": curves.method_lists(selective.METHODS),
        "uncertainty": {name: {k: getattr(selective.quality(x), k) for k in quality_keys}
                        for name, x in (("bpe", u), ("single_order", single))},
        "seconds": time.perf_counter() - t0,
    }
    if args.json:
        print_json(clean_json(out))
        return 0
    print(f"{out['n_instances']} instances, {args.splits} splits, δ = {args.delta}")
    for m, d in out["methods"].items():
        cells = []
        for a, r, c, e in zip(alphas, d["risk_mean"], d["coverage_mean"], d["empty_splits"]):
            risk = "—" if r is None or not np.isfinite(r) else f"{r:.3f}"
            cells.append(f"α={a:.2f}: risk {risk} cov {c:.2f}" + (f" ({e} empty)" if e else ""))
        print(f"{m:>9}  " + "  ".join(cells))
    for name, q in out["uncertainty"].items():
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in q.items()))
    return 0
