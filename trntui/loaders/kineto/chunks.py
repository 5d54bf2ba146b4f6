"""Chunk scanning: decode a valid trace's event array chunk by chunk, never the whole document at once.

The document is split as head + event array + tail: the array's end is found from the back (pieces.py),
the array is cut at candidate event boundaries (`BOUNDARY`) and each chunk decoded on its own, in this one
process: by the compiled builder where it is in use (compiled.py), else by msgspec (a piece the builder leaves
takes msgspec's decode too). Anything unusual returns None, and the caller takes the whole-file
path with its fallbacks for damaged input (tolerant.py)."""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import msgspec

from trntui.loaders.kineto.columns import Part, clock_base, part_of
from trntui.loaders.kineto.compiled import part_of_scan as compiled_part
from trntui.loaders.kineto.compiled import scan_text
from trntui.loaders.kineto.parser import enabled
from trntui.loaders.kineto.pieces import BOUNDARY, PIECES, array_span
from trntui.loaders.kineto.schema import Ev
from trntui.progress import report

if TYPE_CHECKING:
    from trntui.loaders.kineto.streaming import Stream


_CHUNK_BYTES = 16 << 20
"""Event-array text decoded per chunk: only one chunk of `Ev` objects is alive at a time."""


class _NotChunkable(Exception):
    """The event array cannot be decoded in chunks; the caller takes the whole-file path."""


def _first_cut(inner: memoryview, pos: int) -> tuple[int, int]:
    """(end, next start) of the chunk starting at `pos`: cut at the first candidate boundary ~_CHUNK_BYTES on."""
    size = len(inner)
    if pos + _CHUNK_BYTES < size:
        m = BOUNDARY.search(inner, pos + _CHUNK_BYTES)
        if m is not None:
            return m.start() + 1, m.end() - 1
    return size, size


_AHEAD = 2
"""Pieces the compiled builder scans ahead, on threads (its scan releases the GIL), while this thread turns the
earlier ones into `Part`s in order."""


def _threads() -> int:
    try:
        return min(_AHEAD, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return min(_AHEAD, os.cpu_count() or 1)


class _Scan(threading.Thread):
    """One piece's compiled scan on its own thread (`scan_text` releases the GIL while it reads)."""

    def __init__(self, piece: memoryview) -> None:
        super().__init__(name="trntui-scan", daemon=True)
        self.piece: memoryview | None = piece
        self.got: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.got = scan_text(self.piece)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that asked (MemoryError)
            self.error = exc
        finally:
            self.piece = None

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.got


class _ScanAhead:
    """The compiled scans of the next pieces, started on threads before they are asked for: `take(inner, pos)`
    gives (end, next start, scan result) of the piece at `pos`, as `_first_cut` and `scan_text` would give them
    here, and starts the scans of the pieces after it. The pieces and their order are the sequential loop's: a
    result is used only for the very piece (`inner`, `pos`) it was scanned for, so a piece the builder leaves (the
    loop then goes its own way from there) only discards what was scanned ahead. One core: no threads.
    Measured (issue 32, bench/RESULTS.md): the 2M trace's load 0.4 s shorter on two cores, the same CPU."""

    def __init__(self) -> None:
        self.threaded = _threads() > 1
        self.queue: deque[tuple[memoryview, int, int, int, _Scan]] = deque()

    def take(self, inner: memoryview, pos: int) -> tuple[int, int, Any]:
        if not self.threaded:
            end, nxt = _first_cut(inner, pos)
            return end, nxt, scan_text(inner[pos:end])
        if self.queue and not (self.queue[0][0] is inner and self.queue[0][1] == pos):
            self.close()
        if not self.queue:
            self._start(inner, pos)
        while len(self.queue) < _AHEAD + 1 and self.queue[-1][3] < len(inner):
            self._start(inner, self.queue[-1][3])
        _, _, end, nxt, scan = self.queue.popleft()
        return end, nxt, scan.result()

    def _start(self, inner: memoryview, pos: int) -> None:
        end, nxt = _first_cut(inner, pos)
        self.queue.append((inner, pos, end, nxt, _Scan(inner[pos:end])))

    def close(self) -> None:
        """Wait for the scans still running (none may outlive the load: they read its memory map)."""
        for *_, scan in self.queue:
            scan.join()
        self.queue.clear()


def _decode_chunk(inner: memoryview, pos: int) -> tuple[list[Ev] | None, int]:
    """(events, next position) for the chunk of `inner` starting at event boundary `pos`, cut at the first
    candidate boundary ~_CHUNK_BYTES further (a cut inside a string or nested object is extended to the next
    candidate). (None, len(inner)) when the decode fails through to the end of `inner`."""
    size = len(inner)
    end, nxt = _first_cut(inner, pos)
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


def decode_chunked(data: Any, stream: Stream | None = None) -> tuple[list[Part], dict[str, Any]] | None:
    """Decode a valid trace chunk by chunk into columns; None when anything is unusual (the caller then
    takes the whole-file path with its fallbacks for damaged input, which gives the same result).

    The document is split as head + event array + tail without parsing it whole: the head and tail are
    decoded together (with an empty array in between), the array in chunks cut at candidate event
    boundaries; every byte is decoded once and all of it must be valid, so the split is the JSON parse.
    `data`: bytes, or a memory map when `stream` is given (a streamed load: see `Stream`)."""
    n = len(data)
    span = array_span(data)
    if span is None:
        return None
    a, ends = span
    nxt_end = next(ends, None)
    if nxt_end is None:
        return None
    e, top_meta = nxt_end
    base, _ = clock_base(top_meta)  # pieces put their times on the trace's ns clock as they are decoded
    view = memoryview(data)
    fast = compiled_part if enabled() else None
    ahead = _ScanAhead() if fast is not None else None
    parts: list[Part] = []
    pos = 0
    linking = False  # once a row that links is seen, every later piece parses its link ids at once
    inner, inner_e = view[a + 1 : e], e
    try:
        while True:
            if e != inner_e:  # (the array ends earlier than first thought)
                inner, inner_e = view[a + 1 : e], e
            if pos >= len(inner):
                break
            if fast is not None and ahead is not None:  # compiled; a piece it leaves (None) takes msgspec's below
                end, nxt, got = ahead.take(inner, pos)
                part = fast(got, inner[pos:end], linking, base)
                if part is not None:
                    parts.append(part)
                    linking = linking or part.linking
                    pos = nxt
                    if stream is not None:
                        stream.after_chunk(part, a + 1 + pos)
                    report("decoding", a + 1 + pos, n)
                    continue
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
    finally:
        if ahead is not None:
            ahead.close()
    if not sum(p.n for p in parts):
        return None
    report("decoding", n, n)
    return parts, top_meta
