"""The timeline's time axis: the span to fit, the cell boundaries of a window, the ruler's marks and the time
labels (relative offsets, absolute timestamps)."""

from __future__ import annotations

import math

import numpy as np

from trntui.model.profile import Profile
from trntui.units import duration_unit


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
