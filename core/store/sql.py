"""SQL fragments built from the label rules of :mod:`core.domain`.

Every SQL expression that turns stored votes, verdicts and rubric scores into
fitting targets is generated here from the domain's constants, so a rule
changes in one place; ``tests/test_store.py`` checks each against its Python
twin in ``core.domain`` on the same rows.
"""

from __future__ import annotations

from core.domain import BATTLE_SLICE_KEYS, CRITERIA, OUTCOME_Y, PROMPT_SLICE_KEYS, SOFT_CLIP, TIE_Y, Slice


def outcome_y_expr(column: str) -> str:
    """``OUTCOME_Y`` as a CASE over an outcome column (unknown codes → NULL)."""
    whens = " ".join(f"WHEN '{code}' THEN {y!r}" for code, y in OUTCOME_Y.items())
    return f"(CASE {column} {whens} END)"


def rubric_gap_expr(prefix: str = "") -> str:
    """Mean over criteria present for both sides of (a_c − b_c) (``core.domain.rubric_gap``)."""
    diffs = [f"({prefix}a_{c} - {prefix}b_{c})" for c in CRITERIA]
    total = " + ".join(f"coalesce({d}, 0)" for d in diffs)
    count = " + ".join(f"CAST({d} IS NOT NULL AS INTEGER)" for d in diffs)
    return f"(({total}) / nullif({count}, 0))"


def _sign_label(x: str) -> str:
    return f"(sign({x}) * 0.5 + 0.5)"


def hard_label_expr(
    verdict_avg: str = "verdict_avg",
    gap_avg: str = "gap_avg",
    gap_ab: str = "gap_ab",
    gap_ba: str = "gap_ba",
    gap_mean: str = "gap_mean",
    verdict_mean: str = "verdict_mean",
) -> str:
    """The judge's hard label (``core.domain.hard_label``), first rule that applies."""
    return f"""(CASE
            WHEN {verdict_avg} IS NOT NULL THEN {outcome_y_expr(verdict_avg)}
            WHEN {gap_avg} IS NOT NULL THEN {_sign_label(gap_avg)}
            WHEN {gap_ab} IS NOT NULL AND {gap_ba} IS NOT NULL AND sign({gap_ab}) * sign({gap_ba}) < 0 THEN {TIE_Y!r}
            WHEN {gap_mean} IS NOT NULL THEN {_sign_label(gap_mean)}
            WHEN {verdict_mean} IS NOT NULL THEN {_sign_label(f"{verdict_mean} - 0.5")}
        END)"""


def battle_gap_expr(gap_avg: str = "gap_avg", gap_mean: str = "gap_mean") -> str:
    """A battle's score gap: an order-averaged judgment's gap, else the mean of the order gaps."""
    return f"(CASE WHEN {gap_avg} IS NOT NULL THEN {gap_avg} ELSE {gap_mean} END)"


def soft_target_expr(gap: str, tau: str) -> str:
    """σ(τ·gap) clipped to [SOFT_CLIP, 1 − SOFT_CLIP]; a missing gap stays NULL.

    ``least``/``greatest`` skip NULLs in DuckDB, hence the explicit CASE.
    """
    return (
        f"(CASE WHEN {gap} IS NOT NULL THEN least(greatest(1.0 / (1.0 + exp(-({tau}) * {gap})), "
        f"{SOFT_CLIP!r}), {1 - SOFT_CLIP!r}) END)"
    )


def where(*clauses: str | None) -> str:
    """A WHERE clause of the given conditions joined by AND (None entries skipped; none at all → '')."""
    kept = [c for c in clauses if c]
    return f"WHERE {' AND '.join(kept)}" if kept else ""


def slice_condition(where: Slice, battle: str = "b") -> tuple[str, dict[str, str]]:
    """The battles of a slice as a condition on the battles row ``battle`` and its named parameters.

    Each term is one AND-ed condition (:data:`core.domain.Slice`); '' (and no parameters) for no slice.
    """
    parts: list[str] = []
    params: dict[str, str] = {}
    for i, (key, value) in enumerate(where):
        params[f"slice_v{i}"] = value
        if key in BATTLE_SLICE_KEYS:  # column names from the domain's fixed tuple, never from the caller
            parts.append(f"CAST({battle}.{key} AS VARCHAR) = $slice_v{i}")
        elif key in PROMPT_SLICE_KEYS:
            parts.append(
                f"EXISTS (SELECT 1 FROM prompts sp WHERE sp.prompt_id = {battle}.prompt_id AND sp.{key} = $slice_v{i})"
            )
        else:
            params[f"slice_k{i}"] = key
            parts.append(
                f"EXISTS (SELECT 1 FROM prompt_attributes sa WHERE sa.prompt_id = {battle}.prompt_id "
                f"AND sa.key = $slice_k{i} AND sa.value = $slice_v{i})"
            )
    return " AND ".join(parts), params
