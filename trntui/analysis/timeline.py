"""Timeline occupancy: per (lane, sub-row) interval indexes and per-cell busy fractions (pure numpy).

The TUI draws one text row per (lane, nesting depth) and one character per time cell. Each row keeps its
events sorted by start plus the union of their intervals with a running sum of busy time, so the busy time of
any cell is two binary searches: a frame costs O(rows × cells × log n) whatever the number of events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trntui.model.profile import Profile

GLYPHS = " ░▒▓█"
"""Cell shades by busy fraction: empty, ≤ 1/3, ≤ 2/3, < 1, full."""

_LEVELS = np.array([0.0, 1 / 3, 2 / 3, 0.999])
_TRANSLATE = {k: g for k, g in enumerate(GLYPHS)}


@dataclass
class Intervals:
    """Disjoint sorted intervals with the busy time before each one (`cum[k]` = total length of the first k)."""

    starts: np.ndarray
    ends: np.ndarray
    cum: np.ndarray

    @classmethod
    def union(cls, starts: np.ndarray, ends: np.ndarray) -> "Intervals":
        """The union of intervals given sorted by start; zero-length intervals count as 1 ns so they show."""
        if len(starts) == 0:
            z = np.empty(0, np.int64)
            return cls(z, z.copy(), np.zeros(1, np.int64))
        ends = np.maximum(ends, starts + 1)
        run_max = np.maximum.accumulate(ends)
        new = np.empty(len(starts), bool)
        new[0] = True
        new[1:] = starts[1:] > run_max[:-1]
        first = np.nonzero(new)[0]
        u_starts = starts[first]
        last = np.empty_like(first)
        last[:-1] = first[1:] - 1
        last[-1] = len(starts) - 1
        u_ends = run_max[last]
        cum = np.zeros(len(first) + 1, np.int64)
        np.cumsum(u_ends - u_starts, out=cum[1:])
        return cls(u_starts, u_ends, cum)

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def busy_before(self, x: np.ndarray) -> np.ndarray:
        """Busy ns in (-inf, x) for each int64 boundary `x` (exact integer arithmetic)."""
        k = np.searchsorted(self.starts, x, side="right")
        prev_end = self.ends[np.maximum(k - 1, 0)]
        return self.cum[k] - np.where(k > 0, np.maximum(prev_end - x, 0), 0)

    def touches(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """For each cell [lo, hi): does any interval overlap it?"""
        if len(self) == 0:
            return np.zeros(len(lo), bool)
        return np.searchsorted(self.starts, hi, side="left") > np.searchsorted(self.ends, lo, side="right")


@dataclass
class TimelineRow:
    """One drawn row: the events of one lane at one nesting depth (the last sub-row holds all deeper ones)."""

    lane: int
    depth: int
    events: np.ndarray
    """Event indexes sorted by start."""
    starts: np.ndarray
    ends: np.ndarray
    busy: Intervals


def build_rows(profile: Profile, max_depth: int = 4) -> list[TimelineRow]:
    """Rows in display order (lanes by tier, then depth); lanes without events are left out. Cached."""
    key = ("timeline_rows", max_depth)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    _, depth = profile.nesting()
    clipped = np.minimum(depth.astype(np.int64), max_depth - 1)
    order = np.lexsort((profile.start, clipped, profile.lane.astype(np.int64)))
    lane_sorted = profile.lane[order].astype(np.int64)
    depth_sorted = clipped[order]
    group_key = lane_sorted * max_depth + depth_sorted
    bounds = np.nonzero(np.diff(group_key))[0] + 1 if len(order) else np.empty(0, np.int64)
    firsts = np.concatenate([[0], bounds]).astype(np.int64) if len(order) else np.empty(0, np.int64)
    lasts = np.concatenate([bounds, [len(order)]]).astype(np.int64) if len(order) else np.empty(0, np.int64)
    by_key: dict[tuple[int, int], TimelineRow] = {}
    for a, b in zip(firsts.tolist(), lasts.tolist()):
        ev = order[a:b]
        s = profile.start[ev]
        e = profile.end[ev]
        lane, d = int(lane_sorted[a]), int(depth_sorted[a])
        by_key[(lane, d)] = TimelineRow(lane, d, ev, s, e, Intervals.union(s, e))
    rows: list[TimelineRow] = []
    lanes = profile.lanes_by_tier()
    # trace-window markers (profiler span, iteration starts) go last in their tier: the real lanes come first
    lanes = sorted(lanes, key=lambda l: (int(l.tier), l.subsystem == "markers"))
    for lane in lanes:
        for d in range(max_depth):
            row = by_key.get((lane.id, d))
            if row is not None:
                rows.append(row)
    profile.cache[key] = rows
    return rows


def display_span(profile: Profile) -> tuple[int, int]:
    """The time span to fit: all events outside marker lanes (trace-window markers can lie far away)."""
    if len(profile) == 0:
        return (0, 1)
    cached = profile.cache.get("display_span")
    if cached is not None:
        return cached
    marker = np.array([l.subsystem == "markers" for l in profile.lanes] or [False])
    keep = ~marker[profile.lane]
    if not keep.any():
        keep = np.ones(len(profile), bool)
    t0 = int(profile.start[keep].min())
    t1 = int(profile.end[keep].max())
    span = (t0, max(t1, t0 + 1))
    profile.cache["display_span"] = span
    return span


def cell_bounds(t0: int, ns_per_cell: float, cells: int) -> np.ndarray:
    """The `cells + 1` boundaries (int64 ns) of the cells starting at absolute time `t0`.

    Integer arithmetic: absolute ns (~1.7e18) do not fit a float64 mantissa to the nanosecond.
    """
    return np.int64(t0) + np.floor(np.arange(cells + 1, dtype=np.float64) * ns_per_cell).astype(np.int64)


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


def event_at(row: TimelineRow, lo: float, hi: float) -> int:
    """The event of `row` covering most of [lo, hi), or -1."""
    if len(row.events) == 0:
        return -1
    a = int(np.searchsorted(row.starts, hi, side="left"))
    if a == 0:
        return -1
    k0 = max(0, a - 256)
    s = row.starts[k0:a]
    e = np.maximum(row.ends[k0:a], s + 1)
    overlap = np.minimum(e, hi) - np.maximum(s, lo)
    best = int(np.argmax(overlap))
    if overlap[best] <= 0:
        return -1
    return int(row.events[k0 + best])


def next_event(row: TimelineRow, t: int, current: int = -1, forward: bool = True) -> int:
    """The event of `row` starting after (`forward`) or before time `t`; `current` breaks ties at `t`."""
    n = len(row.events)
    if n == 0:
        return -1
    if forward:
        k = _after(row, t, current)
        return int(row.events[k]) if k < n else -1
    k = _before(row, t, current)
    return int(row.events[k]) if k >= 0 else -1


def _position(row: TimelineRow, t: int, current: int) -> int:
    """Index of `current` in the row when it starts at `t`, else -1."""
    if current < 0:
        return -1
    a = int(np.searchsorted(row.starts, t, side="left"))
    b = int(np.searchsorted(row.starts, t, side="right"))
    hits = np.nonzero(row.events[a:b] == current)[0]
    return a + int(hits[0]) if len(hits) else -1


def _after(row: TimelineRow, t: int, current: int) -> int:
    pos = _position(row, t, current)
    if pos >= 0:
        return pos + 1
    return int(np.searchsorted(row.starts, t, side="right"))


def _before(row: TimelineRow, t: int, current: int) -> int:
    pos = _position(row, t, current)
    if pos >= 0:
        return pos - 1
    return int(np.searchsorted(row.starts, t, side="left")) - 1


def format_ns(ns: float) -> str:
    """A short duration: `850ns`, `12.3µs`, `1.25ms`, `3.40s`."""
    a = abs(ns)
    sign = "-" if ns < 0 else ""
    if a < 1e3:
        return f"{sign}{a:.0f}ns"
    if a < 1e6:
        return f"{sign}{a / 1e3:.3g}µs" if a < 1e5 else f"{sign}{a / 1e3:.0f}µs"
    if a < 1e9:
        return f"{sign}{a / 1e6:.3g}ms" if a < 1e8 else f"{sign}{a / 1e6:.0f}ms"
    return f"{sign}{a / 1e9:.3g}s"


def format_offset(ns: float) -> str:
    """A time offset precise enough to tell events apart: `+850ns`, `+12.3µs`, `+19619.474ms`."""
    a = abs(ns)
    sign = "-" if ns < 0 else "+"
    if a < 1e3:
        return f"{sign}{a:.0f}ns"
    if a < 1e6:
        return f"{sign}{a / 1e3:.1f}µs"
    return f"{sign}{a / 1e6:.3f}ms"
