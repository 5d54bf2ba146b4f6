"""Finding a document's edges past whitespace, fast and cancellable, on bytes or a memory map.

A trace may carry any amount of whitespace before, inside or after its JSON (a 200 MB run took 35 s walked a
byte at a time in Python, and could not be cancelled). These scans look at 1 MiB at a time with numpy, report
progress after each piece (so `LoadOptions.cancelled` stops them: trntui/progress.py), and give back the pages
of a memory map once scanned (a streamed load must not hold the file in memory because it was scanned). numpy
is imported only past the first bytes.
"""

from __future__ import annotations

import mmap
from functools import cache
from typing import Any

from trntui.progress import report

WHITESPACE = b" \t\r\n"
_STEP = 1 << 20
_QUICK = 64
"""Bytes looked at one by one first: a normal file has a newline or two at its edges, no more."""


def drop_pages(data: Any, a: int, e: int) -> None:
    """Give back the whole pages inside bytes [a, e) of a memory map (re-read from the file if touched again);
    nothing for other data."""
    if isinstance(data, mmap.mmap) and hasattr(data, "madvise"):
        page = mmap.PAGESIZE
        a = -(-a // page) * page
        e -= e % page
        if e > a:
            try:
                data.madvise(mmap.MADV_DONTNEED, a, e - a)
            except (OSError, ValueError):
                pass


@cache
def _is_space() -> Any:
    """numpy's table of the JSON whitespace bytes (built on first use)."""
    import numpy as np

    table = np.zeros(256, bool)
    table[list(WHITESPACE)] = True
    return table


def _non_space(data: Any, a: int, e: int) -> Any:
    """Positions (from `a`) of the bytes of `data[a:e]` that are not whitespace, with numpy."""
    import numpy as np

    return np.flatnonzero(~_is_space()[np.frombuffer(data, np.uint8, e - a, a)])


def first_non_space(data: Any, start: int = 0, end: int | None = None) -> int:
    """Position of the first byte of `data[start:end]` that is not JSON whitespace (`end` when there is none)."""
    n = len(data) if end is None else end
    k = start
    quick = min(n, start + _QUICK)
    while k < quick:
        if data[k] not in WHITESPACE:
            return k
        k += 1
    while k < n:
        m = min(n, k + _STEP)
        found = _non_space(data, k, m)
        if len(found):
            return k + int(found[0])
        drop_pages(data, k, m)
        k = m
        report("skipping whitespace", k, n)
    return n


def last_non_space(data: Any, end: int | None = None, lo: int = 0) -> int:
    """Position of the last byte before `end` that is not JSON whitespace, not before `lo` (`lo` when every
    byte in between is whitespace, as the byte-by-byte loop it replaces answered)."""
    e = len(data) if end is None else end
    k = e - 1
    quick = max(lo, e - _QUICK)
    while k > quick:
        if data[k] not in WHITESPACE:
            return k
        k -= 1
    hi = k + 1  # data[hi:e] is whitespace
    while hi > lo + 1:
        a = max(lo + 1, hi - _STEP)
        found = _non_space(data, a, hi)
        if len(found):
            return a + int(found[-1])
        drop_pages(data, a, hi)
        hi = a
        report("skipping whitespace", len(data) - hi, len(data))
    return lo
