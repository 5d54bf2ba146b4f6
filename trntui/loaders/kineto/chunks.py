"""Chunk scanning: decode a valid trace's event array chunk by chunk, never the whole document at once.

The document is split as head + event array + tail: the array's end is found from the back (`_array_ends`),
the array is cut at candidate event boundaries (`BOUNDARY`) and each chunk decoded on its own; big arrays go
to the two-process decoder (parallel.py). Anything unusual returns None, and the caller takes the whole-file
path with its fallbacks for damaged input (tolerant.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from trntui.loaders.kineto.columns import Part, clock_base, part_of
from trntui.loaders.kineto.schema import Ev, list_decoder, top_level_meta, top_raw_decoder
from trntui.loaders.scan import first_non_space, last_non_space
from trntui.progress import report

if TYPE_CHECKING:
    from trntui.loaders.kineto.streaming import Stream


_CHUNK_BYTES = 16 << 20
"""Event-array text decoded per chunk: only one chunk of `Ev` objects is alive at a time."""


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


class _NotChunkable(Exception):
    """The event array cannot be decoded in chunks; the caller takes the whole-file path."""


def _decode_chunk(inner: memoryview, pos: int) -> tuple[list[Ev] | None, int]:
    """(events, next position) for the chunk of `inner` starting at event boundary `pos`, cut at the first
    candidate boundary ~_CHUNK_BYTES further (a cut inside a string or nested object is extended to the next
    candidate). (None, len(inner)) when the decode fails through to the end of `inner`."""
    size = len(inner)
    end = nxt = size
    if pos + _CHUNK_BYTES < size:
        m = BOUNDARY.search(inner, pos + _CHUNK_BYTES)
        if m is not None:
            end, nxt = m.start() + 1, m.end() - 1
    for _attempt in range(4):
        try:
            return PIECES.decode(inner[pos:end]), nxt
        except msgspec.DecodeError:
            if end == size:
                return None, size
            m = BOUNDARY.search(inner, nxt)
            end, nxt = (m.start() + 1, m.end() - 1) if m is not None else (size, size)
        except (msgspec.ValidationError, RecursionError):
            raise _NotChunkable from None
    raise _NotChunkable


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


_EVENTS_NAME = re.compile(rb'"traceEvents"')


_CLOSE_LOOKAHEAD = 64


_ARRAY_CLOSE = re.compile(rb"[}\[]\s*\]\s*[,}]")


def _last_non_space(data: Any, e: int, lo: int) -> int:
    """Position of the last non-whitespace byte before `e` (not before `lo`): vectorised and cancellable."""
    return last_non_space(data, e, lo)


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
        if not _ARRAY_CLOSE.match(data, _last_non_space(data, e, a), e + 1 + _CLOSE_LOOKAHEAD):
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


def decode_chunked(data: Any, stream: Stream | None = None) -> tuple[list[Part], dict[str, Any]] | None:
    """Decode a valid trace chunk by chunk into columns; None when anything is unusual (the caller then
    takes the whole-file path with its fallbacks for damaged input, which gives the same result).

    The document is split as head + event array + tail without parsing it whole: the head and tail are
    decoded together (with an empty array in between), the array in chunks cut at candidate event
    boundaries; every byte is decoded once and all of it must be valid, so the split is the JSON parse.
    `data`: bytes, or a memory map when `stream` is given (a streamed load: see `Stream`)."""
    n = len(data)
    lo = a = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    a = first_non_space(data, a, n)
    first = data[a : a + 1]
    if first == b"[":
        e = last_non_space(data, n, a)
        if e <= a or data[e] != ord("]"):
            return None
        ends: Iterator[tuple[int, dict[str, Any]]] = iter([(e, {})])
    elif first == b"{":
        m = _EVENTS_KEY.search(data, a)
        if m is None:
            return None
        a = m.end() - 1
        ends = _array_ends(data, a, lo)
    else:
        return None
    nxt_end = next(ends, None)
    if nxt_end is None:
        return None
    e, top_meta = nxt_end
    base, _ = clock_base(top_meta)  # pieces put their times on the trace's ns clock as they are decoded
    view = memoryview(data)
    from trntui.loaders.kineto import parallel  # imports this module: imported here, not at the top

    if parallel.parallel_ok(e - a - 1):
        halves = parallel.decode_parallel(view[a + 1 : e], a + 1, n, stream, base)
        if halves is not None:
            report("decoding", n, n)
            return halves, top_meta
    parts: list[Part] = []
    pos = 0
    linking = False  # once a row that links is seen, every later piece parses its link ids at once
    try:
        while True:
            inner = view[a + 1 : e]
            if pos >= len(inner):
                break
            events, nxt = _decode_chunk(inner, pos)
            if events is None:
                nxt_end = next(ends, None)  # the array may end earlier (a `]` in the tail's values)
                if nxt_end is None or nxt_end[0] <= a + pos:
                    return None
                e, top_meta = nxt_end
                if clock_base(top_meta)[0] != base:  # pieces so far were put on another clock: start over
                    return None
                continue
            parts.append(part_of(events, linking, base))
            linking = linking or parts[-1].linking
            del events
            pos = nxt
            if stream is not None:
                stream.after_chunk(parts[-1], a + 1 + pos)
            report("decoding", a + 1 + pos, n)
    except _NotChunkable:
        return None
    if not sum(p.n for p in parts):
        return None
    report("decoding", n, n)
    return parts, top_meta
