"""Table export: CSV, Markdown and LaTeX text from a DataFrame, each carrying its context.

Written here rather than with ``DataFrame.to_markdown`` / ``to_latex``: the
first needs the optional ``tabulate`` package, the second ``jinja2``, and
both format numbers their own way.  Floats get a fixed number of digits,
integer-valued columns (ranks, counts) print without decimals, and a missing
value prints as an empty cell (Markdown, CSV) or ``--`` (LaTeX).

``context`` (dataset, judge, τ, α, date, ...) travels with every export: as a
list above a Markdown table, in a LaTeX caption, and beside a CSV in a sidecar
JSON file (:func:`provenance_json`, ``<name>.json`` next to ``<name>.csv``): the
CSV itself is a plain table, header then rows, which a spreadsheet opens
without stray comment rows.  Round a table to the precision its intervals
support before exporting it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from core.redact import redact

_LATEX_SPECIAL = (
    ("\\", r"\textbackslash{}"),
    ("&", r"\&"),
    ("%", r"\%"),
    ("$", r"\$"),
    ("#", r"\#"),
    ("_", r"\_"),
    ("{", r"\{"),
    ("}", r"\}"),
    ("~", r"\textasciitilde{}"),
    ("^", r"\textasciicircum{}"),
)


def _is_missing(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and not math.isfinite(float(v))


def _integer_columns(df: pd.DataFrame) -> set[str]:
    """Columns whose every present value is a whole number (ranks, counts): printed without decimals."""
    out = set()
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            continue
        v = pd.to_numeric(s, errors="coerce").to_numpy(float)
        v = v[np.isfinite(v)]
        if pd.api.types.is_integer_dtype(s) or (len(v) and np.all(v == np.round(v))):
            out.add(c)
    return out


def _cells(df: pd.DataFrame, digits: int, missing: str, text: Callable[[str], str]) -> list[list[str]]:
    ints = _integer_columns(df)
    rows = []
    for row in df.itertuples(index=False):
        cells = []
        for col, v in zip(df.columns, row):
            if _is_missing(v):
                cells.append(missing)
            elif isinstance(v, (bool, np.bool_)):
                cells.append("yes" if v else "no")
            elif col in ints and isinstance(v, (int, float, np.integer, np.floating)):
                cells.append(f"{int(round(float(v)))}")
            elif isinstance(v, (float, np.floating)):
                cells.append(f"{float(v):.{digits}f}")
            else:
                cells.append(text(str(v)))
        rows.append(cells)
    return rows


Context = dict[str, Any]


def context_lines(context: Context | None) -> list[str]:
    return [f"{k}: {v}" for k, v in (context or {}).items()]


def to_csv(df: pd.DataFrame) -> str:
    """CSV of the values as given (a spreadsheet re-reads them exactly): the header, then one line a row, nothing
    else; its context goes to a sidecar (:func:`provenance_json`)."""
    return redact(df.to_csv(index=False))


def provenance_json(context: Context | None, df: pd.DataFrame | None = None, file: str | None = None) -> str:
    """The sidecar of a CSV export: the file it describes, its context (dataset, judge, τ, α, code version,
    date, ...) and the table's columns and row count (``df``; its header alone will do, with ``rows`` in the
    context)."""
    out: dict[str, object] = {}
    if file is not None:
        out["file"] = file
    out |= dict(context or {})
    if df is not None:
        out["columns"] = [str(c) for c in df.columns]
        out.setdefault("rows", len(df))
    return redact(json.dumps(out, ensure_ascii=False, indent=1, default=str) + "\n")


def to_markdown(df: pd.DataFrame, digits: int = 1, context: Context | None = None) -> str:
    """A GitHub-flavoured Markdown table; numeric columns right-aligned; the context as a list above it."""
    esc = lambda s: s.replace("|", r"\|").replace("\n", " ")
    cols = [esc(str(c)) for c in df.columns]
    align = [
        "---:" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) else ":---"
        for c in df.columns
    ]
    lines = [f"- {esc(line)}" for line in context_lines(context)]
    if lines:
        lines.append("")
    lines += ["| " + " | ".join(cols) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in _cells(df, digits, "", esc)]
    return redact("\n".join(lines) + "\n")


def latex_escape(s: str) -> str:
    out = []
    for ch in s:
        out.append(next((rep for c, rep in _LATEX_SPECIAL if c == ch), ch))
    return "".join(out)


def to_latex(
    df: pd.DataFrame, digits: int = 1, caption: str = "", label: str = "", context: Context | None = None
) -> str:
    """A booktabs ``table`` environment (needs ``\\usepackage{booktabs}``); the context ends the caption."""
    caption = "; ".join([caption, *context_lines(context)]) if context else caption
    spec = "".join(
        "r" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) else "l"
        for c in df.columns
    )
    out = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{" + spec + "}",
        r"\toprule",
        " & ".join(latex_escape(str(c)) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    out += [" & ".join(r) + r" \\" for r in _cells(df, digits, "--", latex_escape)]
    out += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        out.append(r"\caption{" + latex_escape(caption) + "}")
    if label:
        out.append(r"\label{" + label + "}")
    out.append(r"\end{table}")
    return redact("\n".join(out) + "\n")
