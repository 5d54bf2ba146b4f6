"""Chunk scanning: decode a valid trace's event array chunk by chunk, never the whole document at once.

The document is split as head + event array + tail: the array's end is found from the back (pieces.py),
the array is cut at candidate event boundaries (`BOUNDARY`) and each chunk decoded on its own, in this one
process: by the compiled builder where it is in use (compiled.py), else by msgspec (a piece the builder leaves
takes msgspec's decode too). Anything unusual returns None, and the caller takes the whole-file
path with its fallbacks for damaged input (tolerant.py)."""

from __future__ import annotations

import mmap
import os
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from trntui.loaders.kineto.parser import _scan, enabled
from trntui.loaders.kineto.pieces import BOUNDARY, PIECES, array_start
from trntui.loaders.scan import drop_pages
from trntui.progress import report

if TYPE_CHECKING:
    from trntui.loaders.kineto.columns import Part
    from trntui.loaders.kineto.schema import Ev
    from trntui.loaders.kineto.streaming import Stream


def part_of(events: list[Ev], links: bool = False, base: int = 0) -> Part:
    """columns.part_of (imported on first use: this module imports no numpy, so a load can begin its scans
    before numpy is imported, early.py)."""
    from trntui.loaders.kineto.columns import part_of as columns_part

    return columns_part(events, links, base)


def compiled_part(got: Any, piece: Any, links: bool = False, base: int = 0, args: Any = None, at: int = 0) -> Part | None:
    """compiled.part_of_scan (imported on first use, as `part_of`)."""
    from trntui.loaders.kineto.compiled import part_of_scan

    return part_of_scan(got, piece, links, base, args, at)


def scan_text(piece: Any, copy: bool = True) -> Any:
    """The compiled pass over a piece's text (`_scan.scan`: no Python object per event, the GIL released, so
    pieces are scanned on other threads); `compiled_part` turns its result into the `Part`. `copy`: the args
    bytes are copied out of the piece (else only their ranges of it are kept: `Opened.copy`)."""
    return _scan.scan(piece, copy)


_CHUNK_BYTES = 16 << 20
"""Event-array text decoded per chunk: only one chunk of `Ev` objects is alive at a time."""


class _NotChunkable(Exception):
    """The event array cannot be decoded in chunks; the caller takes the whole-file path."""


def _first_cut(inner: memoryview, pos: int) -> tuple[int, int]:
    """(end, next start) of the chunk starting at `pos`: cut at the first candidate boundary ~_CHUNK_BYTES on
    (found by the compiled `_scan.boundary` where it is built: the same match as `BOUNDARY`, read under its SIGBUS
    guard, as the scans are, since the cut is looked for far ahead in a memory map of the file)."""
    size = len(inner)
    if pos + _CHUNK_BYTES < size:
        if _scan is not None:
            found = _scan.boundary(inner, pos + _CHUNK_BYTES)
            if found is not None:
                return found[0] + 1, found[1] - 1
        else:
            m = BOUNDARY.search(inner, pos + _CHUNK_BYTES)
            if m is not None:
                return m.start() + 1, m.end() - 1
    return size, size


_THREADS = 2
"""Scans running at once at most (one per core, two at most: this thread turns their results into `Part`s)."""

_AHEAD_PIECES = 64
"""Pieces scanned ahead of the one being turned into its `Part`, at most (a streamed load: `_AHEAD_STREAMED`).
Their columns are kept anyway (every `Part` is), and each scan gives back the pages of its piece of a memory map
as it ends, so ahead only costs what the scans hold while they run; it lets them run on while this thread does
something else (imports numpy: early.py)."""

_AHEAD_STREAMED = 2
"""Pieces ahead in a load streamed under a memory budget (each chunk's args go to disk as it is taken)."""


def _threads() -> int:
    try:
        return min(_THREADS, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return min(_THREADS, os.cpu_count() or 1)


class _Scan(threading.Thread):
    """One piece's compiled scan on its own thread (`scan_text` releases the GIL while it reads); when it ends, it
    gives back its piece's pages and starts the scans of the next pieces (`_ScanAhead.ended`)."""

    def __init__(self, owner: _ScanAhead, piece: memoryview, at: int) -> None:
        super().__init__(name="trntui-scan", daemon=True)
        self.owner = owner
        self.piece: memoryview | None = piece
        self.at = at
        self.got: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.got = scan_text(self.piece, self.owner.copy)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that asked (MemoryError)
            self.error = exc
        finally:
            n = len(self.piece) if self.piece is not None else 0
            self.piece = None
            self.owner.ended(self.at, n)

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.got


class _ScanAhead:
    """The compiled scans of the next pieces, on threads: `take(inner, pos)` gives (end, next start, scan result)
    of the piece at `pos`, as `_first_cut` and `scan_text` would give them here. Up to `_threads()` scans run at
    once; each one, as it ends, starts the next pieces' (up to `ahead` pieces not yet taken), so the scans go on
    while this thread is busy elsewhere. The pieces and their order are the sequential loop's: a result is used
    only for the very piece (`inner`, `pos`) it was scanned for, so a piece the builder leaves (the loop then goes
    its own way from there) only discards what was scanned ahead. One core: no threads.

    `drop(a, e)`: gives back the pages of bytes [a, e) of the inside of the array (`inner`) once scanned (a memory
    map: the `Part` needs only the few M/B/E events' text of its piece after the scan, re-read if dropped)."""

    def __init__(self, ahead: int = _AHEAD_PIECES, drop: Any = None, copy: bool = True) -> None:
        self.copy = copy
        self.threads = _threads()
        self.threaded = self.threads > 1
        self.ahead = max(1, ahead)
        self.drop = drop
        self.lock = threading.Lock()
        self.queue: deque[tuple[memoryview, int, int, int, _Scan]] = deque()
        self.inner: memoryview | None = None
        self.next_pos = 0
        self.running = 0
        self.stopped = False
        self.error: BaseException | None = None
        """What starting the next scans raised on a scan's thread (a cut looked for in a file truncated meanwhile):
        raised by `take` on the loading thread."""

    def take(self, inner: memoryview, pos: int) -> tuple[int, int, Any]:
        if not self.threaded:
            end, nxt = _first_cut(inner, pos)
            return end, nxt, scan_text(inner[pos:end], self.copy)
        with self.lock:
            here = bool(self.queue) and self.queue[0][0] is inner and self.queue[0][1] == pos
        if not here:
            self.close()
            self.prime(inner, pos)
        with self.lock:
            _, _, end, nxt, scan = self.queue.popleft()
            self._fill()
        got = scan.result()
        if self.error is not None:
            raise self.error
        return end, nxt, got

    def prime(self, inner: memoryview, pos: int) -> None:
        """Start the scans of the piece at `pos` and the ones after it now (early.py: before numpy is imported)."""
        if not self.threaded:
            return
        with self.lock:
            if self.queue:
                return
            self.stopped = False
            self.inner, self.next_pos = inner, pos
            self._fill()

    def _fill(self) -> None:
        """Start scans while fewer than `threads` run and fewer than `ahead` pieces wait (the lock held)."""
        inner = self.inner
        while (not self.stopped and inner is not None and self.running < self.threads
               and len(self.queue) < self.ahead and self.next_pos < len(inner)):
            pos = self.next_pos
            end, nxt = _first_cut(inner, pos)
            self.running += 1
            self.queue.append((inner, pos, end, nxt, _Scan(self, inner[pos:end], pos)))
            self.next_pos = nxt

    def ended(self, at: int, n: int) -> None:
        """A scan (of the `n` bytes at `at`) ended: its pages given back, the next scans started."""
        if self.drop is not None and n:
            self.drop(at, at + n)  # (advice: scan.drop_pages ignores a refusal)
        with self.lock:
            self.running -= 1
            try:
                self._fill()
            except BaseException as exc:  # noqa: BLE001 - for the loading thread (`take`)
                self.error = exc
                self.stopped = True

    def close(self) -> None:
        """Stop starting scans and wait for the ones running (none may outlive the load: they read its data)."""
        with self.lock:
            self.stopped = True
            scans = [q[4] for q in self.queue]
            self.queue.clear()
        for scan in scans:
            scan.join()


def _decode_chunk(inner: memoryview, pos: int) -> tuple[list[Ev] | None, int]:
    """(events, next position) for the chunk of `inner` starting at event boundary `pos`, cut at the first
    candidate boundary ~_CHUNK_BYTES further (a cut inside a string or nested object is extended to the next
    candidate). (None, len(inner)) when the decode fails through to the end of `inner`."""
    import msgspec

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


class Opened:
    """A document split as head + event array + tail (`open_array`): the array's `[` at `a`, its first candidate
    end `e` (`]`) with the top-level metadata (`top_meta`: None until `accepted`), the later candidates (`ends`), a
    view of the data and of the array's inside, and the compiled scans of its pieces (`ahead`; None on the Python
    path). The end is first the one found from the text alone, so the scans can start before anything is decoded
    (msgspec is not imported yet: early.py); `accepted` then decodes the top level, which usually confirms it.
    `copy`: the scans copy the args bytes out of the data; False: they keep only each event's args range of the
    data, which is the trace file itself (a memory map of it), and the load reads them from the file when asked
    (model/args.py `FileBlob`)."""

    __slots__ = ("a", "ends", "e", "top_meta", "data", "view", "inner", "ahead", "copy", "views")

    def __init__(self, data: Any, a: int, ends: Any, e: int, scan: bool, ahead: int, copy: bool) -> None:
        self.a, self.ends, self.e = a, ends, e
        self.top_meta: dict[str, Any] | None = None
        self.data = data if isinstance(data, mmap.mmap) and hasattr(data, "madvise") else None  # (else: no drops)
        self.view = memoryview(data)
        self.inner = self.view[a + 1 : max(e, a + 1)]
        self.views = [self.inner]
        self.copy = copy
        self.ahead = _ScanAhead(ahead, self._drop if self.data is not None else None, copy) if scan else None

    def accepted(self) -> bool:
        """The first candidate end the top-level decode accepts, with its metadata (`e`, `top_meta`; the array's
        inside `inner` follows it, and the scans begun for another are discarded by `_ScanAhead.take`); False when
        none does."""
        if self.top_meta is not None:
            return True
        first = next(self.ends, None)
        if first is None:
            return False
        e, self.top_meta = first
        if e != self.e:
            self.e = e
            self.inner = self.view[self.a + 1 : e]
            self.views.append(self.inner)
        return True

    def _drop(self, a: int, e: int) -> None:
        """Give back the pages of bytes [a, e) of the array's inside (re-read from the file if touched again)."""
        drop_pages(self.data, self.a + 1 + a, self.a + 1 + e)

    def close(self) -> None:
        """Wait for the scans still running (they read the data)."""
        if self.ahead is not None:
            self.ahead.close()

    def release(self) -> None:
        """Close, and let go of the views of the data (so a memory map can be closed)."""
        self.close()
        for view in (*self.views, self.view):
            try:
                view.release()
            except BufferError:  # (a slice of it is still alive elsewhere)
                pass


def open_array(data: Any, scan: bool, ahead: int = _AHEAD_PIECES, copy: bool = True) -> Opened | None:
    """`data` split as head + event array + tail (pieces.py), the scans not started yet; None when the document
    is neither form. `scan`: the compiled builder reads the pieces, up to `ahead` of them scanned ahead; `copy`:
    see `Opened`."""
    found = array_start(data)
    if found is None:
        return None
    a, e, ends = found
    return Opened(data, a, ends, e, scan, ahead, copy)


def decode_chunked(
    data: Any, stream: Stream | None = None, opened: Opened | None = None, args: Any = None,
) -> tuple[list[Part], dict[str, Any]] | None:
    """Decode a valid trace chunk by chunk into columns; None when anything is unusual (the caller then
    takes the whole-file path with its fallbacks for damaged input, which gives the same result).

    The document is split as head + event array + tail without parsing it whole: the head and tail are
    decoded together (with an empty array in between), the array in chunks cut at candidate event
    boundaries; every byte is decoded once and all of it must be valid, so the split is the JSON parse.
    `data`: bytes, or a memory map when `stream` is given (a streamed load: see `Stream`). `opened`: the split
    of `data` made already, its first scans begun (early.py), else it is made here. `args`: `data` is a map of
    the trace file and `args` a `FileBlob` over the same file: the compiled builder's pieces keep their events'
    args as ranges of it (`Opened.copy`) rather than copying them."""
    n = len(data)
    if opened is None:
        streamed = stream is not None and stream.budget is not None
        opened = open_array(data, enabled(), _AHEAD_STREAMED if streamed else _AHEAD_PIECES, copy=args is None)
        if opened is None:
            return None
    if opened.copy:
        args = None  # (the scans copy the args: nothing is read from the file)
    elif args is None:
        raise ValueError("the scans keep the args in the file, but no file to read them from was given")
    from trntui.loaders.kineto.schema import clock_base

    if not opened.accepted():
        opened.release()
        return None
    a, ends, e, top_meta = opened.a, opened.ends, opened.e, opened.top_meta
    assert top_meta is not None
    base, _ = clock_base(top_meta)  # pieces put their times on the trace's ns clock as they are decoded
    ahead = opened.ahead
    fast = compiled_part if ahead is not None else None
    parts: list[Part] = []
    pos = 0
    linking = False  # once a row that links is seen, every later piece parses its link ids at once
    view, inner, inner_e = opened.view, opened.inner, e
    try:
        while True:
            if e != inner_e:  # (the array ends earlier than first thought)
                inner, inner_e = view[a + 1 : e], e
            if pos >= len(inner):
                break
            if fast is not None and ahead is not None:  # compiled; a piece it leaves (None) takes msgspec's below
                end, nxt, got = ahead.take(inner, pos)
                part = fast(got, inner[pos:end], linking, base, args, a + 1 + pos)
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
        opened.close()
    if not sum(p.n for p in parts):
        return None
    report("decoding", n, n)
    return parts, top_meta
