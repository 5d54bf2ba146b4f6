"""Event subsets for big traces: by `ProfilerStep#N` windows (`--steps 3-5`) or by a time window
(`--window 100ms:250ms`). Pure functions over a `Profile`; `key_averages(profile, events=...)` takes the result.

Rule: a host event belongs to a window when it starts inside it ([t0, t1)); a device row follows the op that
launched it (a kernel of step 3 that runs after step 3's CPU window still counts for step 3); a device row
with no known launcher counts by its own start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from trntui.errors import TrntuiError
from trntui.model.profile import Profile

_STEP_RX = re.compile(r"ProfilerStep#(\d{1,18})\Z")  # (a 40-digit step number is a name, not a step: roles.py alike)
_TIME_RX = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*\Z")
_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


@dataclass(frozen=True)
class Step:
    number: int
    start: int
    end: int
    event: int


def steps(profile: Profile) -> list[Step]:
    """The `ProfilerStep#N` scopes of the profile, by start (one per number: the longest if repeated)."""
    ids = {k: int(m.group(1)) for k, n in enumerate(profile.names) if (m := _STEP_RX.match(n))}
    if not ids:
        return []
    idx = np.nonzero(np.isin(profile.name, np.fromiter(ids, np.int64, count=len(ids))))[0]
    best: dict[int, Step] = {}
    for i in idx.tolist():
        num = ids[int(profile.name[i])]
        s, e = int(profile.start[i]), int(profile.end[i])
        old = best.get(num)
        if old is None or e - s > old.end - old.start:
            best[num] = Step(num, s, e, i)
    return sorted(best.values(), key=lambda st: (st.start, st.number))


def parse_steps(spec: str) -> list[tuple[int, int]]:
    """`3`, `3-5`, `3-5,8,10-` → inclusive ranges (an open end is unbounded)."""
    out: list[tuple[int, int]] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d{0,18})-(\d{0,18})|(\d{1,18})", part)
        if not m:
            shown = spec if len(spec) <= 40 else spec[:37] + "..."
            raise TrntuiError(f"bad --steps {shown!r}: use N, N-M, N- or -M, comma-separated (numbers of at most 18 digits)")
        if m.group(3) is not None:
            a = b = int(m.group(3))
        else:
            a = int(m.group(1)) if m.group(1) else 0
            b = int(m.group(2)) if m.group(2) else 2**62
        if a > b:
            raise TrntuiError(f"bad --steps {spec!r}: {a} > {b}")
        out.append((a, b))
    if not out:
        raise TrntuiError(f"bad --steps {spec!r}: empty")
    return out


MAX_TIME_NS = 1 << 62
"""Times past this (146 years) are not a time in a trace: `1e400ms` is refused, not turned into an overflow."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def parse_time(text: str) -> int:
    """`250ms`, `1.5s`, `300us`, `1200ns`, bare number = ms → ns."""
    m = _TIME_RX.match(text) if len(text) <= 64 else None
    if not m:
        raise TrntuiError(f"bad time {_shown(text)}: use a number with ns, us, ms or s (default ms)")
    ns = float(m.group(1)) * _UNIT_NS[m.group(2) or "ms"]
    if not ns < MAX_TIME_NS:  # (inf for 1e400)
        raise TrntuiError(f"bad time {_shown(text)}: too large")
    return int(round(ns))


def parse_window_spec(spec: str) -> tuple[int | None, int | None]:
    """`T0:T1` → (t0, t1) in ns relative to the timeline's +0 (None for an open side), checked without a
    profile (so a command refuses a bad window once, before it loads anything)."""
    if ":" not in spec:
        raise TrntuiError(f"bad --window {_shown(spec)}: use T0:T1, e.g. 100ms:250ms or :2s")
    a, b = spec.split(":", 1)
    t0 = parse_time(a) if a.strip() else None
    t1 = parse_time(b) if b.strip() else None
    if t0 is not None and t1 is not None and t1 <= t0:
        raise TrntuiError(f"bad --window {_shown(spec)}: empty interval")
    return t0, t1


def parse_window(spec: str, profile: Profile) -> tuple[int, int]:
    """`T0:T1` relative to the timeline's +0 (either side may be empty) → absolute ns [t0, t1).

    +0 is the first event outside the marker lanes (the profiler's own `Trace` span can start well before
    the recorded work), as in the timeline.
    """
    a, b = parse_window_spec(spec)
    from trntui.analysis.timeline import display_span, format_ns

    origin, last = display_span(profile)
    t0 = origin + a if a is not None else origin
    t1 = origin + b if b is not None else last + 1
    if t0 >= last:  # like --steps out of range: a clear error, not an empty table
        raise TrntuiError(f"--window {spec}: starts after the end of this trace (its timeline spans "
                          f"0 to {format_ns(last - origin)})")
    if t1 <= t0:
        raise TrntuiError(f"bad --window {_shown(spec)}: empty interval")
    return t0, t1


def windows_for_steps(profile: Profile, spec: str) -> list[tuple[int, int]]:
    """Time windows of the selected steps; error if none of them is in the profile."""
    ranges = parse_steps(spec)
    all_steps = steps(profile)
    if not all_steps:
        raise TrntuiError("--steps: this profile has no ProfilerStep#N scopes (use --window)")
    chosen = [st for st in all_steps if any(a <= st.number <= b for a, b in ranges)]
    if not chosen:
        nums = [st.number for st in all_steps]
        raise TrntuiError(f"--steps {spec}: no such step (this profile has steps {min(nums)}-{max(nums)})")
    return [(st.start, st.end) for st in chosen]


def events_in_windows(profile: Profile, windows: list[tuple[int, int]]) -> np.ndarray:
    """Indexes of the events that belong to any window (see the module rule), sorted."""
    n = len(profile)
    if not n or not windows:
        return np.zeros(0, np.int64)
    w = np.asarray(sorted(windows), np.int64).reshape(-1, 2)
    start = profile.start
    # a start is inside some window iff the last window starting at or before it has not ended yet
    k = np.searchsorted(w[:, 0], start, side="right") - 1
    ends = np.maximum.accumulate(w[:, 1])
    inside = (k >= 0) & (start < ends[np.maximum(k, 0)])
    from trntui.analysis.links import build_links

    links = build_links(profile)
    dev = links.device
    launched = dev & (links.op_of >= 0)
    sel = inside.copy()
    sel[launched] = inside[links.op_of[launched]]
    return np.nonzero(sel)[0]


def select_events(profile: Profile, *, steps_spec: str | None = None, window_spec: str | None = None) -> np.ndarray | None:
    """The event subset for `--steps` and/or `--window` (both: the intersection); None when neither is given."""
    if not steps_spec and not window_spec:
        return None
    sel: np.ndarray | None = None
    if steps_spec:
        sel = events_in_windows(profile, windows_for_steps(profile, steps_spec))
    if window_spec:
        win = events_in_windows(profile, [parse_window(window_spec, profile)])
        sel = win if sel is None else np.intersect1d(sel, win, assume_unique=True)
    return sel
