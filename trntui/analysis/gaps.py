"""Gap analysis: how busy the hardware was, and where it sat idle between executions.

For every hardware lane (`Tier.HARDWARE`: CUDA/ROCm streams, Neuron `neuron_hw/NC<l>:<p>` physical cores) the
executions are merged into busy intervals (overlaps and nesting counted once); the active window runs from the
first execution's start to the last one's end (optionally clipped to a caller's window, e.g. the profiled
step), and everything in it that is not busy is idle. The gaps between consecutive busy intervals are what
operator fusion removes: eager mode dispatches each op separately (framework → runtime → hardware), so the
device waits for the host between ops; a fused kernel or a compiled graph runs as one execution.

`device` (the "all hardware" row) is the union over every hardware lane, so per-physical-core duplicates of
one Neuron execution (LNC=2) and concurrent streams count once.

Also here: `device_dispatches`, the number of operator executions that reached the device (kernels,
`nc_exec_running`), with LNC per-core duplicates merged. Pure numpy; no Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.model.profile import EventKind, Profile, Tier

DISPATCH_CATS = frozenset({"kernel", "Kernel"})
"""Kineto categories of device executions that an operator launched (memcpy/memset/syncs are not dispatches)."""
DISPATCH_NAMES = frozenset({"nc_exec_running"})
"""Neuron hardware event names of one NEFF execution on a NeuronCore."""

_PHYSICAL_CORE = re.compile(r"^NC(\d+):(\d+)$")
"""Neuron hardware lane identifier `NC<logical>:<physical>` (Explorer's label)."""


@dataclass
class Gap:
    """Idle time on a lane between two executions (absolute ns)."""

    start: int
    end: int
    before: int = -1
    """Event index of the execution that ended when the gap began (-1 if unknown)."""
    after: int = -1
    """Event index of the execution that started when the gap ended (-1 if unknown)."""

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass
class LaneGaps:
    """Busy/idle accounting for one hardware lane (or the union of all: `lane_id == -1`)."""

    lane_id: int
    label: str
    executions: int
    window: tuple[int, int]
    busy_ns: int
    gaps: list[Gap] = field(default_factory=list)
    """Largest first (ties by start)."""
    gap_count: int = 0
    """Number of gaps (all of them; `gaps` may be cut to the largest few)."""

    @property
    def span_ns(self) -> int:
        return max(0, self.window[1] - self.window[0])

    @property
    def idle_ns(self) -> int:
        return max(0, self.span_ns - self.busy_ns)

    @property
    def busy_fraction(self) -> float:
        return self.busy_ns / self.span_ns if self.span_ns > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        from trntui.textsafe import safe_text

        return {
            "lane": safe_text(self.label),
            "executions": self.executions,
            "window_us": [self.window[0] / 1000.0, self.window[1] / 1000.0],
            "span_us": self.span_ns / 1000.0,
            "busy_us": self.busy_ns / 1000.0,
            "idle_us": self.idle_ns / 1000.0,
            "busy_percent": 100.0 * self.busy_fraction,
            "gap_count": self.gap_count,
            "largest_gaps_us": [
                {"start_us": g.start / 1000.0, "duration_us": g.duration / 1000.0} for g in self.gaps
            ],
        }


@dataclass
class GapReport:
    """Per-lane gap accounting plus the union over all hardware lanes (`device`, None without hardware)."""

    lanes: list[LaneGaps]
    device: LaneGaps | None
    origin_ns: int = 0
    """The profile's first timestamp, for printing gap starts relative to the trace."""

    @property
    def has_hardware(self) -> bool:
        return self.device is not None

    def to_dict(self) -> dict[str, Any]:
        out = {"device": self.device.to_dict() if self.device else None, "lanes": [l.to_dict() for l in self.lanes]}
        for item in [out["device"], *out["lanes"]]:
            if item:
                item["window_us"] = [w - self.origin_ns / 1000.0 for w in item["window_us"]]
                for g in item["largest_gaps_us"]:
                    g["start_us"] -= self.origin_ns / 1000.0
        return out


def hardware_events(profile: Profile, lane_ids: list[int] | None = None) -> np.ndarray:
    """Indexes of interval events on hardware lanes (optionally only on `lane_ids`)."""
    if len(profile) == 0 or not profile.lanes:
        return np.empty(0, np.int64)
    hw = np.array([l.tier == Tier.HARDWARE for l in profile.lanes], bool)
    if lane_ids is not None:
        sel = np.zeros(len(profile.lanes), bool)
        sel[lane_ids] = True
        hw &= sel
    mask = hw[profile.lane] & (profile.kind == EventKind.COMPLETE) & (profile.end > profile.start)
    return np.nonzero(mask)[0]


def merge_intervals(
    starts: np.ndarray, ends: np.ndarray, *, join_touching: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals: (merged starts, merged ends, index of the first / last input interval of each).

    `first`/`last` index into the inputs (the interval that opened a busy block and the one that closed it).
    With `join_touching=False`, intervals that only touch (one ends where the next starts) stay separate.
    """
    n = len(starts)
    if n == 0:
        e = np.empty(0, np.int64)
        return e, e.copy(), e.copy(), e.copy()
    order = np.lexsort((-ends, starts))
    s = starts[order]
    e = ends[order]
    run_end = np.maximum.accumulate(e)
    # a new block starts where the start is beyond everything seen so far
    new_block = np.ones(n, bool)
    new_block[1:] = (s[1:] > run_end[:-1]) if join_touching else (s[1:] >= run_end[:-1])
    heads = np.nonzero(new_block)[0]
    tails = np.r_[heads[1:] - 1, n - 1]
    m_start = s[heads]
    m_end = run_end[tails]
    # which input interval reached the block's end: per block, the first position holding the largest end
    block = np.cumsum(new_block) - 1
    by_end = np.lexsort((np.arange(n), -e, block))
    last = order[by_end[heads]]
    return m_start.astype(np.int64), m_end.astype(np.int64), order[heads].astype(np.int64), last


def _lane_gaps(
    profile: Profile, events: np.ndarray, lane_id: int, label: str, window: tuple[int, int] | None, top: int | None
) -> LaneGaps | None:
    if len(events) == 0:
        return None
    starts = profile.start[events]
    ends = profile.end[events]
    if window is not None:
        w0, w1 = window
        keep = (ends > w0) & (starts < w1)
        events, starts, ends = events[keep], np.maximum(starts[keep], w0), np.minimum(ends[keep], w1)
        if len(events) == 0:
            return None
    ms, me, first, last = merge_intervals(starts, ends)
    win = (int(ms[0]), int(me[-1])) if window is None else (int(window[0]), int(window[1]))
    busy = int((me - ms).sum())
    # gaps between busy blocks (and, with a window, at its edges), as columns; objects only for the top ones
    g_start = me[:-1]
    g_end = ms[1:]
    g_before = events[last[:-1]]
    g_after = events[first[1:]]
    if window is not None:
        none = np.array([-1], np.int64)
        if ms[0] > win[0]:
            g_start = np.r_[win[0], g_start]
            g_end = np.r_[ms[0], g_end]
            g_before = np.r_[none, g_before]
            g_after = np.r_[events[first[0]], g_after]
        if me[-1] < win[1]:
            g_start = np.r_[g_start, me[-1]]
            g_end = np.r_[g_end, win[1]]
            g_before = np.r_[g_before, events[last[-1]]]
            g_after = np.r_[g_after, none]
    gap_count = int(len(g_start))
    order = np.lexsort((g_start, -(g_end - g_start)))
    if top is not None:
        order = order[:top]
    gaps = [
        Gap(int(g_start[k]), int(g_end[k]), int(g_before[k]), int(g_after[k])) for k in order.tolist()
    ]
    return LaneGaps(lane_id, label, int(len(events)), win, busy, gaps, gap_count)


def gap_report(profile: Profile, *, window: tuple[int, int] | None = None, top: int | None = 5) -> GapReport:
    """Busy, idle and the `top` largest gaps per hardware lane and over all hardware lanes together.

    Without `window`, each lane's active window is its first execution's start to its last one's end (the
    union row: over all lanes). With `window` (absolute ns), executions are clipped to it and idle time at its
    edges counts as gaps too.
    """
    key = ("gap_report", window, top)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    all_hw = hardware_events(profile)
    lanes: list[LaneGaps] = []
    if len(all_hw):
        lane_of = profile.lane[all_hw]
        for lane in profile.lanes_by_tier():
            if lane.tier != Tier.HARDWARE:
                continue
            ev = all_hw[lane_of == lane.id]
            lg = _lane_gaps(profile, ev, lane.id, lane.label, window, top)
            if lg is not None:
                lanes.append(lg)
    device = _lane_gaps(profile, all_hw, -1, "all hardware lanes", window, top) if len(all_hw) else None
    if device is not None:
        inside = all_hw
        if window is not None:
            inside = all_hw[(profile.end[all_hw] > window[0]) & (profile.start[all_hw] < window[1])]
        device.executions = merged_count(profile, inside)  # LNC per-core copies once
    report = GapReport(lanes, device, profile.span[0])
    profile.cache[key] = report
    return report


def dispatch_events(profile: Profile) -> np.ndarray:
    """Hardware executions that an operator dispatched: kernels and `nc_exec_running` (all copies)."""
    hw = hardware_events(profile)
    if len(hw) == 0:
        return hw
    cat_ids = [profile.cat_id(c) for c in DISPATCH_CATS]
    name_ids = [profile.name_id(n) for n in DISPATCH_NAMES]
    mask = np.zeros(len(hw), bool)
    cat_ids = [c for c in cat_ids if c >= 0]
    name_ids = [c for c in name_ids if c >= 0]
    if cat_ids:
        mask |= np.isin(profile.cat[hw], cat_ids)
    if name_ids:
        mask |= np.isin(profile.name[hw], name_ids)
    return hw[mask]


def device_dispatches(profile: Profile) -> int:
    """Operator executions that reached the device, with LNC per-physical-core duplicates merged.

    Kernels count one each. A Neuron execution shows up once per physical core of its logical core (lanes
    `NC<l>:<p>` with the same `l`, neuron-formats.md §11): per logical core and event name, the count of the
    physical core with the most executions is the number of executions.
    """
    return merged_count(profile, dispatch_events(profile))


def merged_count(profile: Profile, ev: np.ndarray) -> int:
    """Number of executions among hardware events `ev`, per-physical-core copies (LNC) counted once."""
    if len(ev) == 0:
        return 0
    logical: dict[int, tuple[str, str]] = {}
    for lane in profile.lanes:
        m = _PHYSICAL_CORE.match(lane.ident or "")
        if m and lane.tier == Tier.HARDWARE:
            logical[lane.id] = (f"{lane.instance}/{lane.pid}/{lane.subsystem}", m.group(1))
    if not logical:
        return int(len(ev))
    count = 0
    per_core: dict[tuple, dict[int, int]] = {}
    for i, ln in zip(ev.tolist(), profile.lane[ev].tolist()):
        lk = logical.get(int(ln))
        if lk is None:
            count += 1
            continue
        cores = per_core.setdefault((lk, int(profile.name[i])), {})
        cores[int(ln)] = cores.get(int(ln), 0) + 1
    # every execution of a logical core runs on each of its physical cores: the busiest core's count is the
    # number of executions (robust to clock skew between cores and to a copy dropped on one core)
    for cores in per_core.values():
        count += max(cores.values())
    return count
