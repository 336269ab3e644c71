"""What changed since last time: two snapshots of a dataset (bundles, or two datasets of one store) compared.

A snapshot is a :class:`DatasetTables`.  Its units are the human votes (one per vote) or, with a judge,
the judge's hard label of each battle.  A unit is identified across snapshots by its battle's identity
(the battle's ``external_id``; without one, its prompt — external id, else text, else key — its two
models and its turn), plus the annotator and winner of a vote (the label of a judgment), plus its
occurrence number among equal keys.  Units with the same identity in both snapshots are shared and
enter both fits; the statistics are in :mod:`core.stats.diff`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.domain import DatasetTables, hard_label, outcome_y, rubric_gap
from core.stats.diff import MOVED_DOWN, MOVED_UP, UNCHANGED, UNDETERMINED, Diff, snapshot_diff
from core.store import Store

METHOD_TEXT = (
    "Bradley–Terry Elo of each snapshot ({what}), both anchored on the mean of the models well identified in "
    "both that did not move (movers found one at a time, largest |z| first; the others' Δ on the votes without "
    "the movers' battles); Δ = Elo_new − Elo_old with a 95% interval from the stacked cluster-robust sandwich "
    "of the two fits "
    "(units shared by both snapshots, matched by battle identity, enter both fits; clusters are battles); "
    "verdicts from Holm-adjusted two-sided p-values at α = {alpha}"
)


def load_snapshot(path: str | Path) -> DatasetTables:
    """A bundle written by ``export --bundle`` (raises ``core.ingest.IngestError`` on a bad file)."""
    from core.ingest import load

    return load(path, "bundle")


def _battle_identity(t: DatasetTables) -> pd.Series:
    """Per battle row of ``t`` (positionally): a string identifying the battle across snapshots."""
    bt = t.battles.reset_index(drop=True)
    n = len(bt)

    def values(frame: pd.DataFrame, name: str) -> list:
        if name not in frame:
            return [None] * len(frame)
        return [None if pd.isna(v) else v for v in frame[name].tolist()]

    a, b = bt["model_a"].astype(str).tolist(), bt["model_b"].astype(str).tolist()
    prompt_keys = values(bt, "prompt_key")
    prompt_of: dict = {}
    if t.prompts is not None and len(t.prompts):
        texts, exts = values(t.prompts, "text"), values(t.prompts, "external_id")
        for key, text, ext in zip(t.prompts["prompt_key"].tolist(), texts, exts, strict=True):
            if ext is not None:
                prompt_of[key] = f"p:{ext}"
            elif text is not None:
                prompt_of[key] = f"t:{text}"
    turns, exts = values(bt, "turn"), values(bt, "external_id")
    out = []
    for k in range(n):
        if exts[k] is not None:
            out.append(f"e:{exts[k]}\x1f{a[k]}\x1f{b[k]}")
        elif prompt_keys[k] is not None:
            prompt = prompt_of.get(prompt_keys[k], f"k:{prompt_keys[k]}")
            out.append(f"{prompt}\x1f{a[k]}\x1f{b[k]}\x1f{turns[k]}")
        else:  # nothing names the battle: its position, so that a snapshot that appends votes keeps its first ones
            out.append(f"r:{k}\x1f{a[k]}\x1f{b[k]}\x1f{turns[k]}")
    return pd.Series(out, index=range(n), dtype=object)


def _text(column: pd.Series) -> pd.Series:
    """A column as plain Python strings, a missing value as the empty string."""
    return column.astype(object).where(column.notna(), "").astype(str)


def _human_units(t: DatasetTables) -> pd.DataFrame:
    bt = t.battles.reset_index(drop=True)
    ids = _battle_identity(t)
    base = pd.DataFrame(
        {"battle_key": bt["battle_key"], "model_a": bt["model_a"], "model_b": bt["model_b"], "cluster": ids}
    )
    votes = t.votes if t.votes is not None else pd.DataFrame({"battle_key": [], "winner": []})
    v = votes.merge(base, on="battle_key", how="inner")
    v = v.assign(y=outcome_y(v["winner"].to_numpy()))
    v = v[np.isfinite(v["y"].to_numpy(dtype=float))]
    annot = _text(v["annotator"]) if "annotator" in v else pd.Series("", index=v.index)
    # plain strings: a missing annotator in a nullable string column made every key NA, and NA keys merge with
    # each other (3,000 votes against 6,000 became 18,000,000 "shared" units, all "no change")
    key = _text(v["cluster"]) + "\x1e" + annot + "\x1e" + _text(v["winner"])
    return pd.DataFrame(
        {"model_a": v["model_a"], "model_b": v["model_b"], "y": v["y"], "cluster": v["cluster"], "key": key}
    )


def _judge_units(t: DatasetTables, judge: str) -> pd.DataFrame:
    """One unit per battle the judge labelled: its hard label (``core.domain.hard_label``)."""
    g = t.judgments
    if g is None or not len(g) or judge not in set(g["judge"]):
        return pd.DataFrame(columns=["model_a", "model_b", "y", "cluster", "key"])
    g = g[g["judge"] == judge]
    if "variant" in g:
        g = g[g["variant"].isna() | (g["variant"] == "original")]
    if "parse_error" in g:
        g = g[g["parse_error"].isna()]
    a_cols = [c for c in g.columns if c.startswith("a_")]
    b_cols = ["b_" + c[2:] for c in a_cols]
    if a_cols and all(c in g for c in b_cols):
        gap = rubric_gap(g[a_cols].to_numpy(dtype=float), g[b_cols].to_numpy(dtype=float))
    else:
        gap = np.full(len(g), np.nan)
    vy = outcome_y(g["verdict"].to_numpy()) if "verdict" in g else np.full(len(g), np.nan)
    rows = pd.DataFrame(
        {
            "battle_key": g["battle_key"].to_numpy(),
            "order": g["order"].to_numpy(),
            "gap": gap,
            "vy": vy,
            "verdict": g["verdict"].to_numpy() if "verdict" in g else None,
        }
    )

    def by_order(frame: pd.DataFrame, value: str, order: str) -> pd.Series:
        return frame[frame["order"] == order].groupby("battle_key")[value].max()

    keys = pd.Index(rows["battle_key"].unique(), name="battle_key")
    per = pd.DataFrame(index=keys)
    per["gap_ab"] = by_order(rows, "gap", "ab")
    per["gap_ba"] = by_order(rows, "gap", "ba")
    per["gap_avg"] = by_order(rows, "gap", "avg")
    per["gap_mean"] = rows.groupby("battle_key")["gap"].mean()
    per["verdict_mean"] = rows.groupby("battle_key")["vy"].mean()
    avg = rows[rows["order"] == "avg"].dropna(subset=["verdict"]).groupby("battle_key")["verdict"].max()
    per["verdict_avg"] = avg.reindex(keys).astype(object)
    per["y"] = hard_label(
        per["verdict_avg"].to_numpy(dtype=object),
        per["gap_avg"].to_numpy(dtype=float),
        per["gap_ab"].to_numpy(dtype=float),
        per["gap_ba"].to_numpy(dtype=float),
        per["gap_mean"].to_numpy(dtype=float),
        per["verdict_mean"].to_numpy(dtype=float),
    )
    bt = t.battles.reset_index(drop=True)
    base = pd.DataFrame(
        {
            "battle_key": bt["battle_key"],
            "model_a": bt["model_a"],
            "model_b": bt["model_b"],
            "cluster": _battle_identity(t),
        }
    )
    u = base.merge(per[["y"]].reset_index(), on="battle_key", how="inner")
    u = u[np.isfinite(u["y"].to_numpy(dtype=float))]
    key = u["cluster"].astype(str) + "\x1e" + u["y"].astype(str)
    return pd.DataFrame(
        {"model_a": u["model_a"], "model_b": u["model_b"], "y": u["y"], "cluster": u["cluster"], "key": key}
    )


def units(t: DatasetTables, judge: str | None = None) -> pd.DataFrame:
    """The snapshot's units: model_a, model_b, y, cluster (battle identity), key (unit identity, unique)."""
    u = _human_units(t) if judge is None else _judge_units(t, judge)
    u = u.reset_index(drop=True)
    # Equal keys (two identical votes) are told apart by their occurrence number.
    u["key"] = u["key"].astype(str) + "\x1d" + u.groupby("key").cumcount().astype(str)
    return u


def diff_tables(old: DatasetTables, new: DatasetTables, alpha: float = 0.05, judge: str | None = None) -> Diff:
    """Compare two snapshots (see the module docstring).  ``ValueError`` when a snapshot has nothing to fit."""
    what = "human votes" if judge is None else f"hard labels of judge {judge!r}"
    uo, un = units(old, judge), units(new, judge)
    for name, u in (("old", uo), ("new", un)):
        if u.empty:
            raise ValueError(f"the {name} snapshot ({old.name if name == 'old' else new.name}) has no {what}")
    union = uo.merge(un, on="key", how="outer", suffixes=("_o", "_n"), indicator=True)
    in_old = union["_merge"].isin(["left_only", "both"]).to_numpy()
    in_new = union["_merge"].isin(["right_only", "both"]).to_numpy()

    def pick(col: str) -> np.ndarray:
        return union[f"{col}_o"].where(union[f"{col}_o"].notna(), union[f"{col}_n"]).to_numpy()

    return snapshot_diff(
        pick("model_a"), pick("model_b"), pick("y").astype(float), pick("cluster"), in_old, in_new, alpha=alpha
    )


def diff_json(result: Diff, judge: str | None = None) -> dict:
    """The ``diff --json`` document."""
    what = "human votes" if judge is None else f"hard labels of judge {judge!r}"
    return {
        "rows": [asdict(r) for r in result.rows],
        "added": list(result.added),
        "removed": list(result.removed),
        "alpha": result.alpha,
        "method": METHOD_TEXT.format(what=what, alpha=result.alpha),
        "n_votes_old": result.n_old,
        "n_votes_new": result.n_new,
        "n_shared": result.n_shared,
        "anchors": list(result.anchors),
    }


DIFF_ALPHA = 0.05  # the family-wise error level of the verdicts where a view does not choose one (CLI default)


@dataclass(frozen=True)
class Comparison:
    """One comparison of two snapshots, as a page or the report shows it: the rows and what they mean."""

    old_name: str
    new_name: str
    what: str  # "human votes" or "hard labels of judge 'x'"
    result: Diff

    def table(self) -> pd.DataFrame:
        """Per model in both snapshots: Elo and rank in each, Δ with its 95% interval, the verdict."""
        rows = [
            {
                "model": r.model,
                f"Elo in {self.old_name}": round(r.elo_old, 1),
                "rank then": r.rank_old,
                f"Elo in {self.new_name}": round(r.elo_new, 1),
                "rank now": r.rank_new,
                "Δ Elo (95% CI)": f"{r.delta:+.1f} [{r.delta_lower:+.1f}, {r.delta_upper:+.1f}]",
                "verdict": r.verdict,
                **({"note": r.note} if any(x.note for x in self.result.rows) else {}),
            }
            for r in sorted(self.result.rows, key=lambda r: r.rank_new)
        ]
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """One sentence on what moved, in the verdicts' own terms."""
        rows = self.result.rows
        moved = [r for r in rows if r.verdict in (MOVED_UP, MOVED_DOWN)]
        up = sum(r.verdict == MOVED_UP for r in moved)
        unknown = sum(r.verdict == UNDETERMINED for r in rows)
        if rows and all(r.verdict == UNCHANGED for r in rows):
            text = f"no change: both snapshots hold the same evidence on all {len(rows)} models"
        elif moved:
            text = f"{len(moved)} of {len(rows)} models moved significantly ({up} up, {len(moved) - up} down)"
        else:
            text = f"none of the {len(rows)} models moved significantly"
        if unknown:
            text += f" ({unknown} undetermined: no Elo in one of the snapshots)"
        text += f" at a family-wise error of {self.result.alpha:g} (Holm), on the {self.what}"
        if self.result.added:
            text += f"; added: {', '.join(self.result.added)}"
        if self.result.removed:
            text += f"; removed: {', '.join(self.result.removed)}"
        return text + "."

    def method(self) -> str:
        return METHOD_TEXT.format(what=self.what, alpha=self.result.alpha)


def compare_snapshots(
    old: DatasetTables, new: DatasetTables, judge: str | None = None, alpha: float = DIFF_ALPHA
) -> Comparison:
    """:func:`diff_tables` named for display (``ValueError`` when a snapshot has nothing to fit)."""
    what = "human votes" if judge is None else f"hard labels of judge {judge!r}"
    return Comparison(old.name, new.name, what, diff_tables(old, new, alpha=alpha, judge=judge))


def compare_datasets(
    store: Store, old: str, new: str, judge: str | None = None, alpha: float = DIFF_ALPHA
) -> Comparison:
    """Two datasets of one store (e.g. last month's import and this month's)."""
    judges = None if judge is None else [judge]
    return compare_snapshots(
        store.dataset_tables(old, judges=judges), store.dataset_tables(new, judges=judges), judge, alpha
    )


def compare_with_bundle(
    store: Store, bundle: str | Path, dataset: str, judge: str | None = None, alpha: float = DIFF_ALPHA
) -> Comparison:
    """A bundle written earlier (the old snapshot) against the dataset as it is now."""
    old = load_snapshot(bundle)
    old = DatasetTables(**{**old.__dict__, "name": Path(bundle).name})
    new = store.dataset_tables(dataset, judges=None if judge is None else [judge])
    return compare_snapshots(old, new, judge, alpha)


def comparison_or_why(store: Store, old: str, new: str, judge: str | None) -> Comparison | str:
    """:func:`compare_datasets` for the Leaderboard, or why the two cannot be compared."""
    try:
        return compare_datasets(store, old, new, judge)
    except ValueError as exc:
        return str(exc)


def upload_comparison_or_why(store: Store, dataset: str, judge: str | None, data: bytes, name: str) -> Comparison | str:
    """:func:`compare_with_bundle` of an uploaded bundle's bytes (``name``: the uploaded file's name, shown as
    the old snapshot's), or why they cannot be compared."""
    import tempfile

    from core.ingest import IngestError

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        try:
            return compare_with_bundle(store, path, dataset, judge)
        except (ValueError, IngestError) as exc:
            return str(exc)
