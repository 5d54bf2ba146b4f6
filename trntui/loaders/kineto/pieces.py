"""The event array and its pieces, without numpy: where the array is in the document, candidate event boundaries,
the buffer a piece is decoded from, and the claims the two decoding processes make on the array.

numpy-free because the early decoder child (early.py) uses all of it: it is forked before numpy is imported and
never imports it."""

from __future__ import annotations

import mmap
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from trntui.loaders.kineto.schema import Ev, list_decoder, top_level_meta, top_raw_decoder
from trntui.loaders.scan import first_non_space, last_non_space
from trntui.progress import report
from trntui.threads import threads_alive

BOUNDARY = re.compile(rb"\}\s*,\s*\{")
"""A candidate boundary between two events (may also match inside a string or nested args: a chunk cut
there is not valid JSON, since it ends inside a string or an open object, and is retried longer)."""


class PieceBuffer(threading.local):
    """One reusable buffer per thread for the `[` + piece + `]` text msgspec decodes: concatenating bytes made two
    fresh 4-16 MB copies per piece (new pages, each faulted in): measured 290 -> 200 ms for the 69 MB CPU trace.
    The decoded events' raw args point into the buffer, so a piece's args are copied out (`part_of` joins them,
    kept M/B/E events own theirs) before the thread decodes its next piece (threads each have their own buffer:
    several loads may run at once, e.g. on a Dask worker's threads)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def decode(self, piece: Any) -> list[Ev]:
        n = len(piece)
        if len(self.buf) < n + 2:
            self.buf = bytearray(n + 2 + (n >> 3))
        buf = self.buf
        buf[0] = 0x5B  # [
        buf[1 : n + 1] = piece
        buf[n + 1] = 0x5D  # ]
        return list_decoder.decode(memoryview(buf)[: n + 2])


PIECES = PieceBuffer()


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


_EVENTS_NAME = re.compile(rb'"traceEvents"')


_CLOSE_LOOKAHEAD = 64


_ARRAY_CLOSE = re.compile(rb"[}\[]\s*\]\s*[,}]")


def _array_ends(data: Any, a: int, lo: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Candidate ends `e` (the `]`) of the event array opened at `data[a]` in the object form, last first,
    with the top-level metadata: `head + [] + tail` must decode with nothing else called traceEvents.

    A `]` inside the event array never gives a valid tail (the array's and its events' closers would
    follow), so a wrong candidate can only be one inside the tail's own values; the chunk decode of the
    event array then fails at its end and the next candidate is tried."""
    head = data[lo:a]
    hi = len(data)
    end = last_non_space(data, hi, a) + 1  # the tail is cut after its last non-whitespace byte
    tries = 0
    for k in range(100_000):  # `]` in the tail's strings (e.g. Kineto's log lines) are skipped cheaply
        e = data.rfind(b"]", a, min(hi, end))
        if e < 0:
            return
        hi = e
        if k % 1024 == 1023:
            report("finding the event array", 0, 0)  # (cancellable)
        if not _ARRAY_CLOSE.match(data, last_non_space(data, e, a), e + 1 + _CLOSE_LOOKAHEAD):
            continue  # the array's `]` follows its last event's `}` (or its `[`) and precedes `,` or `}`
        tries += 1
        if tries > 8:
            return
        tail = data[e + 1 : end]
        if _EVENTS_NAME.search(tail):
            continue
        try:
            top = top_raw_decoder.decode(head + b"[]" + tail)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        if top.traceEvents is None or bytes(top.traceEvents) != b"[]":
            continue
        yield e, top_level_meta(top)


def array_span(data: Any) -> tuple[int, Iterator[tuple[int, dict[str, Any]]]] | None:
    """Where the event array is: the position of its `[` and its candidate ends with the top-level metadata
    (`_array_ends`; the bare-array form has one, with none); None when the document is neither form."""
    n = len(data)
    lo = a = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    a = first_non_space(data, a, n)
    first = data[a : a + 1]
    if first == b"[":
        e = last_non_space(data, n, a)
        if e <= a or data[e] != ord("]"):
            return None
        return a, iter([(e, {})])
    if first == b"{":
        m = _EVENTS_KEY.search(data, a)
        if m is None:
            return None
        a = m.end() - 1
        return a, _array_ends(data, a, lo)
    return None


_PARALLEL_MIN_BYTES = 64 << 20
"""Event arrays this large are decoded by two processes (a forked child takes pieces from the back)."""


def parallel_ok(size: int) -> bool:
    if size < _PARALLEL_MIN_BYTES or not hasattr(os, "fork") or threads_alive():
        return False  # forking a process with other threads is unsafe
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2


_PAR_CHUNK = 4 << 20
"""Largest piece of the two-process decode."""

_PAR_MIN = 512 << 10
"""Smallest piece (unless `_PAR_CHUNK` is smaller): pieces shrink to a quarter of what is left, down to this, so
that the two processes finish within a few ms of each other (with 4 MB pieces to the end, the one that finished
first waited ~0-30 ms for the other's last piece on the 69 MB CPU trace)."""


class Claims:
    """Which bytes of the event array are taken, shared by the parent (from the front) and the child (from the
    back) through an anonymous shared map; a one-byte token in a pipe is the lock. Each side cuts its next piece
    where the part left is claimed (`take`)."""

    OVER_BUDGET = 2
    """`failed` value: a streamed load's projection went over the budget (`needed` holds the bytes)."""

    LINKING = 7
    """`view` slot: a row that links was seen (from then on both sides parse link ids at once: `part_of`)."""

    TAKEN = 8
    """`view` slot: how many pieces were claimed (every one must come back)."""

    def __init__(self, inner: memoryview) -> None:
        self.inner = inner
        self.mem = mmap.mmap(-1, 128)
        # front, back (what is left: inner[front:back]), failed, events, consumed bytes, needed bytes, projected
        # events (those four: streamed), linking seen, pieces taken (the map starts zeroed)
        self.view = memoryview(self.mem).cast("q")
        self.view[1] = len(inner)
        self.r, self.w = os.pipe()
        os.write(self.w, b"x")

    @contextmanager
    def locked(self) -> Iterator[None]:
        os.read(self.r, 1)
        try:
            yield
        finally:
            os.write(self.w, b"x")

    def take(self, from_back: bool) -> tuple[int, int] | None:
        """The next piece (start, end) for this side, cut at a candidate event boundary ~a quarter of what is left
        (between `_PAR_MIN` and `_PAR_CHUNK` bytes) from this side's end of it; None when nothing is left (or the
        other side failed)."""
        with self.locked():
            front, back, failed = self.view[:3].tolist()
            if failed or front >= back:
                return None
            size = max(min(_PAR_CHUNK, (back - front) >> 2), min(_PAR_CHUNK, _PAR_MIN))
            a, e = front, back  # the rest, when no boundary is left to cut at
            if from_back:
                m = BOUNDARY.search(self.inner, back - size, back) if back - size > front else None
                if m is not None:
                    a = m.end() - 1
                self.view[1] = m.start() + 1 if m is not None else front
            else:
                m = BOUNDARY.search(self.inner, front + size, back) if front + size < back else None
                if m is not None:
                    e = m.start() + 1
                self.view[0] = m.end() - 1 if m is not None else back
            self.view[Claims.TAKEN] += 1
            return a, e

    def fail(self, why: int = 1) -> None:
        if not self.view[2]:
            self.view[2] = why

    def close(self) -> None:
        os.close(self.r)
        os.close(self.w)


def write_all(fd: int, buffers: list[Any]) -> None:
    """Write every buffer, in order (a vectored write, continued after a partial one)."""
    views = [memoryview(b).cast("B") for b in buffers if len(b)]
    while views:
        written = os.writev(fd, views[:512])
        while written:
            if written >= len(views[0]):
                written -= len(views.pop(0))
            else:
                views[0] = views[0][written:]
                written = 0
