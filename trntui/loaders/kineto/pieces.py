"""The event array and its pieces: where the array is in the document, candidate event boundaries, and the buffer
a piece is decoded from."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trntui.loaders.scan import first_non_space, last_non_space
from trntui.progress import report

if TYPE_CHECKING:  # (msgspec is imported when something is decoded: a load begins its scans without it, early.py)
    from trntui.loaders.kineto.schema import Ev

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
        from trntui.loaders.kineto.schema import list_decoder

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
    import msgspec

    from trntui.loaders.kineto.schema import top_level_meta, top_raw_decoder

    head = data[lo:a]
    end = last_non_space(data, len(data), a) + 1  # the tail is cut after its last non-whitespace byte
    for e in _close_candidates(data, a):
        try:
            top = top_raw_decoder.decode(head + b"[]" + data[e + 1 : end])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        if top.traceEvents is None or bytes(top.traceEvents) != b"[]":
            continue
        yield e, top_level_meta(top)


def _close_candidates(data: Any, a: int) -> Iterator[int]:
    """The `]`s that may close the event array opened at `data[a]` (`_array_ends`), last first, by the text
    around them alone (no decode: msgspec is not needed, early.py), at most 8."""
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
        if _EVENTS_NAME.search(data, e + 1, end):
            continue
        yield e


def array_span(data: Any) -> tuple[int, Iterator[tuple[int, dict[str, Any]]]] | None:
    """Where the event array is: the position of its `[` and its candidate ends with the top-level metadata
    (`_array_ends`; the bare-array form has one, with none); None when the document is neither form."""
    found = array_start(data)
    return None if found is None else (found[0], found[2])


def array_start(data: Any) -> tuple[int, int, Iterator[tuple[int, dict[str, Any]]]] | None:
    """`array_span`, and the end its first candidate would give, found without decoding anything (-1: none):
    (the `[`'s position, that end, the candidate ends with the top-level metadata). The scans of the array's
    first pieces can start at once (early.py); the first candidate the decode accepts is usually that one."""
    n = len(data)
    lo = a = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    a = first_non_space(data, a, n)
    first = data[a : a + 1]
    if first == b"[":
        e = last_non_space(data, n, a)
        if e <= a or data[e] != ord("]"):
            return None
        return a, e, iter([(e, {})])
    if first == b"{":
        m = _EVENTS_KEY.search(data, a)
        if m is None:
            return None
        a = m.end() - 1
        return a, next(_close_candidates(data, a), -1), _array_ends(data, a, lo)
    return None
