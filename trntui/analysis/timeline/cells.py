"""One timeline row drawn into cells: the busy fraction of each cell (two binary searches per cell), its
shade glyph, the highlighted cells of selected events, and the names drawn inside bars wide enough."""

from __future__ import annotations

import math

import numpy as np

from trntui.analysis.timeline.axis import cell_bounds
from trntui.analysis.timeline.rows import Intervals, TimelineRow

GLYPHS = " ░▒▓█"
"""Cell shades by busy fraction: empty, ≤ 1/3, ≤ 2/3, < 1, full."""

_LEVELS = np.array([0.0, 1 / 3, 2 / 3, 0.999])
_TRANSLATE = {k: g for k, g in enumerate(GLYPHS)}


LABEL_MIN_CELLS = 3
"""A name is drawn inside a bar that has at least this many whole cells (two characters and `…`)."""


def _long_events(row: TimelineRow, min_ns: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row's events lasting at least 4**k <= `min_ns` ns, sorted by start, with the running max of their
    ends (a superset of those lasting `min_ns`; cached per level k, so a frame never scans the whole row)."""
    level = max(int(math.log(max(min_ns, 1.0), 4)), 0)
    cached = row.long_events.get(level)
    if cached is None:
        pos = np.nonzero(row.ends - row.starts >= 4**level)[0]
        ends = row.ends[pos]
        cached = (pos, row.starts[pos], np.maximum.accumulate(ends) if len(ends) else ends)
        row.long_events[level] = cached
    return cached


def bar_labels(row: TimelineRow, bounds: np.ndarray, min_cells: int = LABEL_MIN_CELLS) -> list[tuple[int, int, int]]:
    """(first cell, end cell, event) of each event of `row` that covers at least `min_cells` whole cells of the
    window whose cell boundaries are `bounds` (`cell_bounds`), in start order. A bar that begins left of the
    window gets its label at the first cell (the name stays readable while panning)."""
    cells = len(bounds) - 1
    if cells < min_cells or len(row.events) == 0:
        return []
    lo, hi = int(bounds[0]), int(bounds[-1])
    ns_per_cell = (hi - lo) / cells
    pos, starts, run_end = _long_events(row, ns_per_cell * min_cells)
    a = int(np.searchsorted(run_end, lo, side="right"))
    b = int(np.searchsorted(starts, hi, side="left"))
    if b <= a:
        return []
    cand = pos[a:b]
    s = row.starts[cand]
    e = row.ends[cand]
    keep = (e - s) >= ns_per_cell * (min_cells - 1)
    cand, s, e = cand[keep], s[keep], e[keep]
    first = np.searchsorted(bounds, s, side="left")
    last = np.searchsorted(bounds, e, side="right") - 1
    first = np.clip(first, 0, cells)
    last = np.clip(last, 0, cells)
    ok = last - first >= min_cells
    return [(int(f), int(l), int(row.events[c])) for f, l, c in zip(first[ok], last[ok], cand[ok])]


def busy_fraction(busy: Intervals, lo: int, hi: int) -> float:
    """Fraction of [lo, hi) covered by `busy`."""
    if hi <= lo or len(busy) == 0:
        return 0.0
    f = busy.busy_before(np.array([lo, hi], np.int64))
    return float(f[1] - f[0]) / (hi - lo)


def busy_fractions(
    busy: Intervals, t0: int, ns_per_cell: float, cells: int, bounds: np.ndarray | None = None
) -> np.ndarray:
    """Fraction (0..1) of each cell covered by `busy` (`bounds`: precomputed `cell_bounds`, shared by rows)."""
    if len(busy) == 0 or cells <= 0:
        return np.zeros(max(cells, 0))
    if bounds is None:
        bounds = cell_bounds(t0, ns_per_cell, cells)
    f = busy.busy_before(bounds)
    widths = bounds[1:] - bounds[:-1]
    return (f[1:] - f[:-1]) / np.maximum(widths, 1)


def shade(fractions: np.ndarray) -> str:
    """Cells as glyphs from `GLYPHS`: any busy time shows at least the lightest shade."""
    level = np.searchsorted(_LEVELS, fractions, side="left").astype(np.uint8)
    return level.tobytes().decode("latin-1").translate(_TRANSLATE)


def row_cells(
    row: TimelineRow,
    t0: int,
    ns_per_cell: float,
    cells: int,
    selected: Intervals | None = None,
    bounds: np.ndarray | None = None,
) -> tuple[str, np.ndarray | None]:
    """(glyphs, highlighted mask or None when nothing is highlighted) for one row over `cells` cells from `t0`."""
    if bounds is None:
        bounds = cell_bounds(t0, ns_per_cell, cells)
    text = shade(busy_fractions(row.busy, t0, ns_per_cell, cells, bounds))
    if selected is None or len(selected) == 0:
        return text, None
    return text, selected.touches(bounds[:-1], bounds[1:])


def selected_intervals(rows: list[TimelineRow], selected: np.ndarray) -> list[Intervals | None]:
    """Per row: the union of its events that are in `selected` (None where there are none)."""
    out: list[Intervals | None] = []
    if len(selected) == 0:
        return [None] * len(rows)
    sel = np.unique(np.asarray(selected, np.int64))
    for row in rows:
        mask = np.isin(row.events, sel, assume_unique=False)
        out.append(Intervals.union(row.starts[mask], row.ends[mask]) if mask.any() else None)
    return out
