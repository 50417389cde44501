"""Plain-text tables for the terminal: tabulate's "simple" layout of values formatted here."""
from __future__ import annotations

import inspect

import tabulate as tabulate_module
from tabulate import tabulate

#: tabulate >= 0.10 takes preserve_whitespace=; 0.9 reads a module-level flag instead
_KEYWORD = "preserve_whitespace" in inspect.signature(tabulate).parameters


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def _numeric(rows: list[dict], column: str) -> bool:
    values = [r.get(column) for r in rows if r.get(column) is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def format_table(rows: list[dict], columns: list[str], headers: list[str] | None = None) -> str:
    """`rows` as a table of `columns` titled `headers` (default: the column names).

    Values are formatted here (None as "-", floats to 4 significant digits, large ones without
    decimals) and tabulate only lays them out; columns of numbers align right, leading spaces
    (the indentation of `evo archive lineage`) are kept."""
    headers = list(headers or columns)
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    align = ["right" if _numeric(rows, c) else "left" for c in columns]
    options = {"headers": headers, "tablefmt": "simple", "disable_numparse": True, "colalign": align}
    if _KEYWORD:
        return tabulate(cells, preserve_whitespace=True, **options)
    saved, tabulate_module.PRESERVE_WHITESPACE = tabulate_module.PRESERVE_WHITESPACE, True
    try:
        return tabulate(cells, **options)
    finally:
        tabulate_module.PRESERVE_WHITESPACE = saved
