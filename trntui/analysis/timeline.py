"""Timeline occupancy: per (lane, sub-row) interval indexes and per-cell busy fractions (pure numpy).

The TUI draws one text row per (lane, nesting depth) and one character per time cell. Each row keeps its
events sorted by start plus the union of their intervals with a running sum of busy time, so the busy time of
any cell is two binary searches: a frame costs O(rows × cells × log n) whatever the number of events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trntui.model.profile import Profile
from trntui.units import duration_unit, format_ns  # (format_ns: imported from here by the app)

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
    long_events: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    """Per duration level k: (positions, starts, running max of ends) of the events lasting >= 4**k ns (built
    on demand by `bar_labels`; at one zoom only one level is used)."""


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


def build_rows(profile: Profile, max_depth: int = 4) -> list[TimelineRow]:
    """Rows in display order (lanes by tier, then depth); lanes without events are left out. Cached.

    `max_depth=1` gives one row per lane with every nesting depth in it (from the profile's lane index)."""
    key = ("timeline_rows", max_depth)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    by_key: dict[tuple[int, int], TimelineRow] = {}
    if max_depth == 1:
        for lane in profile.lanes:
            ev = profile.lane_events(lane.id)
            if len(ev):
                s, e = profile.start[ev], profile.end[ev]
                by_key[(lane.id, 0)] = TimelineRow(lane.id, 0, ev, s, e, Intervals.union(s, e))
    else:
        _, depth = profile.nesting()
        clipped = np.minimum(depth.astype(np.int64), max_depth - 1)
        group_of = profile.lane.astype(np.int64) * max_depth + clipped
        order = profile.by_key_then_time(group_of)  # (lane, depth, start): one stable sort when time-sorted
        lane_sorted = profile.lane[order].astype(np.int64)
        depth_sorted = clipped[order]
        group_key = group_of[order]
        bounds = np.nonzero(np.diff(group_key))[0] + 1 if len(order) else np.empty(0, np.int64)
        firsts = np.concatenate([[0], bounds]).astype(np.int64) if len(order) else np.empty(0, np.int64)
        lasts = np.concatenate([bounds, [len(order)]]).astype(np.int64) if len(order) else np.empty(0, np.int64)
        for a, b in zip(firsts.tolist(), lasts.tolist()):
            ev = order[a:b]
            s = profile.start[ev]
            e = profile.end[ev]
            lane, d = int(lane_sorted[a]), int(depth_sorted[a])
            by_key[(lane, d)] = TimelineRow(lane, d, ev, s, e, Intervals.union(s, e))
    rows: list[TimelineRow] = []
    for lane in display_lanes(profile):
        for d in range(max_depth):
            row = by_key.get((lane.id, d))
            if row is not None:
                rows.append(row)
    profile.cache[key] = rows
    return rows


def rows_to_arrays(rows: list[TimelineRow]) -> dict[str, np.ndarray]:
    """`rows` as flat arrays (events, busy intervals, per-row lane/depth/offsets), to keep beside a cache entry."""
    counts = np.array([len(r.events) for r in rows], np.int64)
    busy = np.array([len(r.busy) for r in rows], np.int64)
    z = np.empty(0, np.int64)
    return {
        "lane": np.array([r.lane for r in rows], np.int64),
        "depth": np.array([r.depth for r in rows], np.int64),
        "events": np.concatenate([r.events for r in rows]).astype(np.int64) if rows else z,
        "event_offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        "busy_starts": np.concatenate([r.busy.starts for r in rows]).astype(np.int64) if rows else z,
        "busy_ends": np.concatenate([r.busy.ends for r in rows]).astype(np.int64) if rows else z,
        "busy_offsets": np.concatenate([[0], np.cumsum(busy)]).astype(np.int64),
    }


def rows_from_arrays(profile: Profile, arrays: dict[str, np.ndarray]) -> list[TimelineRow]:
    """The rows `rows_to_arrays` flattened, for `profile` (ValueError when they do not fit it)."""
    n = len(profile)
    events = arrays["events"]
    eo, bo = arrays["event_offsets"], arrays["busy_offsets"]
    if len(events) and (int(events.min()) < 0 or int(events.max()) >= n) or eo[-1] != len(events):
        raise ValueError("timeline rows do not fit the profile")
    starts, ends = profile.start[events], profile.end[events]
    rows = []
    for k, (lane, depth) in enumerate(zip(arrays["lane"].tolist(), arrays["depth"].tolist())):
        a, b = int(eo[k]), int(eo[k + 1])
        ba, bb = int(bo[k]), int(bo[k + 1])
        us, ue = arrays["busy_starts"][ba:bb], arrays["busy_ends"][ba:bb]
        cum = np.zeros(bb - ba + 1, np.int64)
        np.cumsum(ue - us, out=cum[1:])
        rows.append(TimelineRow(lane, depth, events[a:b], starts[a:b], ends[a:b], Intervals(us, ue, cum)))
    return rows


def display_lanes(profile: Profile) -> list:
    """Lanes in display order: by tier, trace-window markers (profiler span, iteration starts) last in their
    tier so the real lanes come first."""
    return sorted(profile.lanes_by_tier(), key=lambda l: (int(l.tier), l.subsystem == "markers"))


def merged_row(rows: list[TimelineRow]) -> TimelineRow:
    """One row holding the events of several rows (a summary of lanes that do not get a row of their own)."""
    if len(rows) == 1:
        return rows[0]
    ev = np.concatenate([r.events for r in rows])
    s = np.concatenate([r.starts for r in rows])
    e = np.concatenate([r.ends for r in rows])
    order = np.argsort(s, kind="stable")
    ev, s, e = ev[order], s[order], e[order]
    return TimelineRow(-1, 0, ev, s, e, Intervals.union(s, e))


@dataclass(frozen=True)
class LaneInfo:
    """What the row planner needs to know about one lane."""

    lane: int
    activity: int
    """Busy ns (the union of its events); -1 for trace-window marker lanes, which never get a row of their own
    when space is short."""
    depths: int
    """Nesting sub-rows it has (1 when every event is at depth 0)."""


@dataclass(frozen=True)
class PlannedRow:
    """A row of the timeline: a tier heading, one lane (one depth, or every depth when `depth` is None), or a
    summary of several lanes of a tier drawn as one row."""

    tier: int
    lanes: tuple[int, ...] = ()
    """Empty for a heading."""
    depth: int | None = None

    @property
    def is_heading(self) -> bool:
        return not self.lanes


def depths_ready(profile: Profile) -> bool:
    """Whether the nesting the timeline's sub-rows need is computed (a big profile gets it after the first
    frame, in the background)."""
    return "nesting" in profile.cache


def lane_groups(profile: Profile, max_depth: int = 4) -> list[tuple[int, list[LaneInfo]]]:
    """Lanes with events grouped by tier in display order, with their busy time and sub-row count (cached;
    builds the per-depth and one-per-lane rows, so a load worker can call it before the first frame). Before
    the nesting is computed (`depths_ready`), every lane counts one sub-row and no depth rows are built."""
    with_depths = depths_ready(profile)
    key = ("timeline_lane_groups", max_depth, with_depths)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    merged = {r.lane: r for r in build_rows(profile, 1)}
    depths: dict[int, int] = {}
    for r in build_rows(profile, max_depth) if with_depths else ():
        depths[r.lane] = depths.get(r.lane, 0) + 1
    groups: list[tuple[int, list[LaneInfo]]] = []
    for lane in display_lanes(profile):
        row = merged.get(lane.id)
        if row is None:
            continue
        activity = -1 if lane.subsystem == "markers" else int(row.busy.cum[-1])
        info = LaneInfo(lane.id, activity, depths.get(lane.id, 1))
        if groups and groups[-1][0] == int(lane.tier):
            groups[-1][1].append(info)
        else:
            groups.append((int(lane.tier), [info]))
    profile.cache[key] = groups
    return groups


FIT, LANES, ALL = "fit", "lanes", "all"
"""Row modes: fit the rows to the height (default), one row per lane, one row per lane and nesting depth."""


def plan_rows(
    groups: list[tuple[int, list[LaneInfo]]], budget: int, mode: str = FIT, pinned: tuple[int, ...] = ()
) -> list[PlannedRow]:
    """The rows to draw for lanes grouped by tier (in display order) in `budget` rows.

    `all` and `lanes` draw every lane under its tier heading (with or without nesting sub-rows). `fit` picks
    the fullest of these that fits; when even one row per lane does not fit, it drops the headings and gives
    every tier one row at least: its busiest lanes get rows of their own and the rest of the tier shares one
    summary row, so every tier that has events is on the first screen. `pinned` lanes (most wanted first: a
    jump target, the cursor's lane) come before the busiest; only the first may take a row past the budget.
    """
    pin = set(pinned)
    full = sum(1 + sum(l.depths for l in lanes) for _, lanes in groups)
    if mode == ALL or (mode == FIT and full <= budget):
        out: list[PlannedRow] = []
        for tier, lanes in groups:
            out.append(PlannedRow(tier))
            out += [PlannedRow(tier, (l.lane,), d) for l in lanes for d in range(l.depths)]
        return out
    per_lane = sum(1 + len(lanes) for _, lanes in groups)
    if mode == LANES or per_lane <= budget:
        expanded: set[int] = set()
        if mode == FIT:
            spare = budget - per_lane
            by_activity = sorted((l for _, lanes in groups for l in lanes), key=lambda l: (l.lane not in pin, -l.activity))
            for l in by_activity:
                if 0 < l.depths - 1 <= spare:
                    expanded.add(l.lane)
                    spare -= l.depths - 1
        out = []
        for tier, lanes in groups:
            out.append(PlannedRow(tier))
            for l in lanes:
                if l.lane in expanded:
                    out += [PlannedRow(tier, (l.lane,), d) for d in range(l.depths)]
                else:
                    out.append(PlannedRow(tier, (l.lane,), None))
        return out
    # compact: one row per tier to start with, then the busiest lanes get their own
    promoted: dict[int, set[int]] = {tier: set() for tier, _ in groups}
    used = len(groups)
    rank = {lane: k for k, lane in enumerate(pinned)}
    candidates = [(tier, l) for tier, lanes in groups for l in lanes if l.activity > 0 or l.lane in pin]
    candidates.sort(key=lambda tl: (rank.get(tl[1].lane, len(rank)), -tl[1].activity))
    size = {tier: len(lanes) for tier, lanes in groups}
    for tier, l in candidates:
        if len(promoted[tier]) >= size[tier] - 1:
            continue  # the tier's last lane is drawn as itself anyway
        if used >= budget and not (pinned and l.lane == pinned[0]):
            continue  # only the first pinned lane may push the rows past the pane
        promoted[tier].add(l.lane)
        used += 1
    out = []
    for tier, lanes in groups:
        rest = tuple(l.lane for l in lanes if l.lane not in promoted[tier])
        out += [PlannedRow(tier, (l.lane,), None) for l in lanes if l.lane in promoted[tier]]
        if rest:
            out.append(PlannedRow(tier, rest, None))
    return out


def matching_names(profile: Profile, pattern: str) -> np.ndarray:
    """Interned name ids whose name matches the regex `pattern` (case-insensitive; raises `re.error`)."""
    import re

    search = re.compile(pattern, re.IGNORECASE).search
    return np.fromiter((k for k, name in enumerate(profile.names) if search(name)), np.int64)


def search_events(profile: Profile, pattern: str) -> np.ndarray:
    """Events whose name matches the regex `pattern` (case-insensitive), sorted by start."""
    ids = matching_names(profile, pattern)
    if len(ids) == 0:
        return np.empty(0, np.int64)
    hit = np.zeros(len(profile.names) + 1, bool)
    hit[ids] = True
    events = np.nonzero(hit[profile.name])[0]
    return events[np.argsort(profile.start[events], kind="stable")]


def count_matches(profile: Profile, pattern: str) -> int:
    """How many events `search_events` would return (from per-name counts: cheap enough per keystroke)."""
    counts = profile.cache.get("name_counts")
    if counts is None:
        counts = profile.cache["name_counts"] = np.bincount(profile.name, minlength=len(profile.names))
    ids = matching_names(profile, pattern)
    return int(counts[ids].sum()) if len(ids) else 0


def event_span(profile: Profile, event: int, launched: np.ndarray | None = None) -> tuple[int, int]:
    """Absolute [start, end) of `event` together with the events it launched (`launched`), at least 1 ns."""
    a, b = int(profile.start[event]), int(profile.end[event])
    if launched is not None and len(launched):
        a = min(a, int(profile.start[launched].min()))
        b = max(b, int(profile.end[launched].max()))
    return a, max(b, a + 1)


@dataclass
class IdleGaps:
    """Idle gaps between executions on hardware lanes, in time order (absolute ns; `before`/`after`: the
    executions on either side)."""

    starts: np.ndarray
    ends: np.ndarray
    before: np.ndarray
    after: np.ndarray

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    @property
    def durations(self) -> np.ndarray:
        return self.ends - self.starts

    def ranked(self) -> np.ndarray:
        """Gap indexes, largest first (ties: earliest first)."""
        return np.lexsort((self.starts, -self.durations))


def idle_gaps(profile: Profile, lanes: tuple[int, ...] | None = None) -> IdleGaps:
    """Gaps when none of the hardware `lanes` (default: all hardware lanes) runs anything: the executions'
    union from `analysis.gaps` (overlaps and per-core copies count once), cached per lane set."""
    from trntui.analysis.gaps import hardware_events, merge_intervals

    key = ("idle_gaps", lanes)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    ev = hardware_events(profile, list(lanes) if lanes is not None else None)
    ms, me, first, last = merge_intervals(profile.start[ev], profile.end[ev])
    gaps = IdleGaps(me[:-1], ms[1:], ev[last[:-1]], ev[first[1:]])
    profile.cache[key] = gaps
    return gaps


def busy_fraction(busy: Intervals, lo: int, hi: int) -> float:
    """Fraction of [lo, hi) covered by `busy`."""
    if hi <= lo or len(busy) == 0:
        return 0.0
    f = busy.busy_before(np.array([lo, hi], np.int64))
    return float(f[1] - f[0]) / (hi - lo)


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


def _decimals(scale: float, resolution: float) -> int:
    """Decimals that show `resolution` ns in a unit of `scale` ns."""
    if resolution >= scale:
        return 0
    return min(max(math.ceil(math.log10(scale / resolution) - 1e-9), 0), 9)


def format_offset(ns: float, resolution: float | None = None, unit_of: float | None = None) -> str:
    """A time on the trace's relative clock: `+850ns`, `+12.3µs`, `+607.361ms`, `+3.368811s`.

    The unit follows the magnitude (of `unit_of` when given: a ruler uses one unit for all its marks); the
    decimals show `resolution` ns (default: 1µs at ms and s, 100ns at µs) — never scientific notation.
    """
    a = abs(ns)
    sign = "-" if ns < 0 and round(a) > 0 else "+"
    scale, unit = duration_unit(abs(unit_of) if unit_of is not None else a)
    if resolution is None:
        resolution = 100.0 if unit == "µs" else 1000.0
    return f"{sign}{a / scale:.{_decimals(scale, resolution)}f}{unit}"


def format_absolute(ns: int) -> str:
    """An absolute timestamp: the UTC date and time when the trace clock is the Unix epoch (as Kineto's is),
    else the raw trace-clock value."""
    import datetime

    if ns > 10**17:  # after 1973: an epoch clock
        whole, frac = divmod(int(ns), 10**9)
        stamp = datetime.datetime.fromtimestamp(whole, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        return f"{stamp}.{frac:09d} UTC"
    return f"{int(ns):,}ns on the trace clock"


_NICE = (1, 2, 5)


def nice_steps(minimum: float):
    """Round step sizes (1, 2, 5 × 10^k ns) from the first one >= `minimum`, ascending."""
    k = max(int(math.floor(math.log10(max(minimum, 1.0)))), 0)
    while True:
        for m in _NICE:
            step = m * 10**k
            if step >= minimum:
                yield float(step)
        k += 1


def ruler_marks(t0: float, ns_per_cell: float, cells: int, min_gap: int = 10) -> list[tuple[int, str]]:
    """(cell, text) of the ruler's marks over `cells` cells from `t0` ns after the origin: round times, all in
    one unit, spaced so the texts never touch."""
    end = t0 + cells * ns_per_cell
    for step in nice_steps(min_gap * ns_per_cell):
        first = math.ceil(t0 / step) * step
        ticks = []
        t = first
        while t < end and len(ticks) <= cells:
            ticks.append(t)
            t = first + len(ticks) * step
        if not ticks:
            return []
        biggest = max(abs(ticks[0]), abs(ticks[-1]))
        texts = [format_offset(t, step, unit_of=biggest if biggest else step) for t in ticks]
        if step / ns_per_cell >= max(len(x) for x in texts) + 2:
            return [(int(math.floor((t - t0) / ns_per_cell)), x) for t, x in zip(ticks, texts)]
    return []
