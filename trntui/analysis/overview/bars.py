"""Widths of the parts of a stacked bar (plain data for the app's and the CLI's bar charts)."""

from __future__ import annotations

from collections.abc import Sequence


def stack_cells(values: Sequence[float], width: int, scale: float | None = None) -> list[int]:
    """Cells per part so the parts fill `width * sum(values) / scale` cells (all of `width` when `scale` is
    None), rounded by largest remainder: the cells add up exactly and no part is off by more than one."""
    total = float(sum(max(v, 0.0) for v in values))
    scale = total if scale is None else float(scale)
    if width <= 0 or scale <= 0 or total <= 0:
        return [0] * len(values)
    target = min(width, round(width * total / scale))
    exact = [max(v, 0.0) * target / total for v in values]
    cells = [int(x) for x in exact]
    rest = target - sum(cells)
    order = sorted(range(len(values)), key=lambda k: exact[k] - cells[k], reverse=True)
    for k in order[:rest]:
        cells[k] += 1
    return cells
