"""Sizes and durations for people, in one place for every layer (loaders' messages, the progress line, reports,
the app); a leaf module. The durations: `format_ns` (three significant digits and a unit: the timeline, the
chain, the call tree), `format_time` (torch's table format), `format_us` (the kernel table's cells) and
`format_ms` (the ranks' milliseconds). The reports' other shared formats are in trntui/report/format.py, which
re-exports these."""

from __future__ import annotations

import math
from typing import Any

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")
_DECIMAL = ("B", "KB", "MB", "GB", "TB")


def format_bytes(n: float, *, binary: bool = True, decimals: int | None = None) -> str:
    """A size for people: `512 B`, `800 MiB`, `1.40 GiB` (by default GiB and up with 2 decimals, smaller units
    whole; `decimals` fixes the decimals of every unit above bytes, e.g. 1 for a file listing: `1.3 KiB`).

    `binary` (default): powers of 1024 with IEC names, the units `--memory-budget` takes and `trntui info`
    lists; `binary=False`: powers of 1000 (`50 MB`), for progress through a file. torch's own memory columns
    use torch's format instead (`report.summary.format_memory`), so the table reads like torch's.
    """
    step = 1024.0 if binary else 1000.0
    units = _BINARY if binary else _DECIMAL
    size = float(n)
    k = 0
    while abs(size) >= step and k < len(units) - 1:
        size /= step
        k += 1
    if k == 0:
        return f"{size:.0f} B"
    places = decimals if decimals is not None else 2 if k >= 3 else 0
    return f"{size:.{places}f} {units[k]}"


DURATION_UNITS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))


def duration_unit(a: float) -> tuple[float, str]:
    """The largest unit that `a` ns is at least one of (ns below 1µs)."""
    for scale, name in reversed(DURATION_UNITS):
        if a >= scale:
            return scale, name
    return DURATION_UNITS[0]


def format_ns(ns: float) -> str:
    """A short duration with three significant digits and a unit: `850ns`, `12.3µs`, `1.25ms`, `3.40s`,
    `70145s` (never scientific notation)."""
    a = abs(ns)
    sign = "-" if ns < 0 else ""
    scale, unit = duration_unit(a)
    value = a / scale
    if unit == "ns" or value >= 100:
        text = f"{value:.0f}"
    else:
        text = f"{value:.{2 if value < 10 else 1}f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    return f"{sign}{text}{unit}"


def format_time(us: float) -> str:
    """torch's `_format_time`: µs with 3 decimals, switching to ms/s."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_us(ns: float) -> str:
    """A duration for a table cell: µs below 1 ms, else ms/s, three significant decimals at most."""
    us = ns / 1000.0
    if us < 1000:
        return f"{us:,.1f}us"
    if us < 1_000_000:
        return f"{us / 1000:,.2f}ms"
    return f"{us / 1_000_000:,.2f}s"


def format_ms(ns: Any) -> str:
    """Milliseconds with 3 decimals, no unit (`812.300`); `-` for no value (None, NaN)."""
    return "-" if ns is None or (isinstance(ns, float) and math.isnan(ns)) else f"{ns / 1e6:.3f}"
