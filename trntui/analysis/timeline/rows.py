"""The timeline's rows: per (lane, nesting depth) the events sorted by start and the union of their intervals
with a running sum of busy time (`Intervals`, `TimelineRow`), built once per profile, flattened to arrays for
the cache and back, in display order."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trntui.model.profile import Profile


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
