"""Finding things on the timeline: events by name (regex search and per-keystroke counts), an event's span
with what it launched, the event under a cell, the next or previous event of a row, and the idle gaps between
executions on the hardware lanes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trntui.analysis.timeline.rows import TimelineRow
from trntui.model.profile import Profile


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
