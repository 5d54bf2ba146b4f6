"""Streaming under the memory budget (trntui/memory.py): memory-mapped input, args spilled to disk, projection.

`map_trace` gives the trace's JSON text as a read-only memory map (a gzip file is inflated into an unlinked
temporary file first, a piece at a time), so the decoder can drop the pages it has read. `ArgsSpill` writes
every event's raw args bytes to an unlinked temporary file and maps it back once the load is done: the
profile reads args from it lazily, as it does from the cache. Both files live in the load's scratch directory
(`LoadOptions.scratch_dir`, under the cache directory: /tmp is often RAM-backed) and disappear when the process
ends.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from trntui.errors import LoadError
from trntui.loaders.files import bounded, check_ratio, open_trace
from trntui.loaders.scan import drop_pages
from trntui.model.args import ArgsStore, Blobs
from trntui.progress import report

if TYPE_CHECKING:
    from trntui.loaders.kineto.columns import Part

_PIECE = 8 << 20


def _temp(directory: Path | None) -> BinaryIO:
    """An unlinked temporary file in `directory` (`LoadOptions.scratch_dir`), else the system's temporary dir."""
    import tempfile  # (here: a load that spills nothing does without it and its imports, ~2 ms)

    if directory is not None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            return tempfile.TemporaryFile(dir=directory)
        except OSError:  # unwritable cache dir: the system's temporary directory
            pass
    return tempfile.TemporaryFile()


def map_trace(path: Path, scratch_dir: Path | None = None, budget: int | None = None) -> tuple[mmap.mmap, list[str]]:
    """The trace's (inflated) bytes as a read-only memory map, and notes on anything recovered (a gzip file is
    inflated into an unlinked file in `scratch_dir`, checked as it goes: see `_SpillGuard`)."""
    notes: list[str] = []
    with open_trace(path) as f:
        gz = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if gz:
            src: BinaryIO = _temp(scratch_dir)
            try:
                if not _inflate(f, src, path, budget):
                    notes.append("gzip stream is truncated or corrupted; read what could be decompressed")
                src.flush()
            except BaseException:
                src.close()
                raise
        else:
            src = f
        try:
            if src.seek(0, 2) == 0:
                raise LoadError(path, "empty file" if not gz else "corrupted gzip stream (nothing could be decompressed)")
            return mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ), notes
        finally:
            if gz:
                src.close()


_IN_PIECE = 1 << 16
"""Compressed bytes per inflater call (`files.bounded` caps what one call makes at 8 MiB)."""


class _SpillGuard:
    """Checks the inflated stream BEFORE each piece is written to the spill file, so a bomb is refused after
    its first pieces, not after gigabytes were written:
    - the first byte that is not whitespace must open a JSON object or array (a file of NULs is refused at once);
    - the events seen so far (`"ph"` keys) must fit the budget streamed (the same projection as `Stream`, from
      below: the rest of the file can only add events);
    - the stream must not inflate like a bomb (`files.check_ratio`);
    - the spill must leave room on its file system (5% of it, at most 1 GiB)."""

    def __init__(self, path: Path, out: BinaryIO, budget: int | None) -> None:
        self.path, self.out, self.budget = path, out, budget
        self.started = False
        self.events = 0
        self.written = 0
        self.next_disk_check = 0

    def write(self, chunk: bytes, consumed: int) -> None:
        if not chunk:
            return
        if not self.started:
            head = chunk.lstrip(b" \t\r\n")
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:].lstrip(b" \t\r\n")
            if head:
                self.started = True
                if head[:1] not in (b"{", b"["):
                    raise LoadError(self.path, "not a chrome trace (expected a JSON object or array)")
        self.written += len(chunk)
        check_ratio(self.path, self.written, consumed)
        if self.budget is not None:
            from trntui.memory import STREAMED_BYTES_PER_EVENT, STREAMED_FIXED_BYTES, events_text, over_budget

            self.events += chunk.count(b'"ph"')
            needed = STREAMED_FIXED_BYTES + self.events * STREAMED_BYTES_PER_EVENT
            if needed > self.budget:
                raise over_budget(self.path, needed, self.budget,
                                  f"even streamed, this trace (at least {events_text(self.events)})")
        if self.written >= self.next_disk_check:
            self._check_disk(len(chunk))
            self.next_disk_check = self.written + (64 << 20)
        try:
            self.out.write(chunk)
        except OSError as exc:
            raise LoadError(self.path, f"cannot inflate it into a temporary file: {exc.strerror or exc}") from None

    def _check_disk(self, size: int) -> None:
        try:
            st = os.fstatvfs(self.out.fileno())
        except (OSError, AttributeError, ValueError):
            return
        free = st.f_bavail * st.f_frsize
        reserve = min(1 << 30, st.f_blocks * st.f_frsize // 20)
        if free - (64 << 20) - size < reserve:
            raise LoadError(self.path, f"not enough disk space to inflate it for a streamed load "
                                       f"({free >> 20:,} MiB free after {self.written >> 20:,} MiB)")


def _inflate(f: BinaryIO, out: BinaryIO, path: Path, budget: int | None = None) -> bool:
    """Inflate gzip members from `f` into `out` a piece at a time, every call bounded (`max_length`) and every
    piece checked before it is written (`_SpillGuard`); False when the stream is damaged."""
    total = f.seek(0, 2)
    f.seek(0)
    guard = _SpillGuard(path, out, budget)
    d = zlib.decompressobj(wbits=31)
    consumed = 0  # compressed bytes read from the file
    pending = b""  # compressed bytes after a member's end: the next member (or trailing zeros)
    while True:
        if pending:
            block, pending = pending, b""
        else:
            block = f.read(_PIECE)
            if not block:
                return d.eof
            consumed += len(block)
        if d.eof:  # after the last member: trailing zeros are ignored, anything else starts a member
            if not block.strip(b"\0"):
                continue
            d = zlib.decompressobj(wbits=31)
        view = memoryview(block)
        k = 0
        while k < len(view):
            piece = view[k : k + _IN_PIECE]
            k += len(piece)
            saved = d.copy()
            wrote = 0
            try:
                for chunk in bounded(d, piece):
                    guard.write(chunk, consumed)
                    wrote += len(chunk)
            except zlib.error:  # replay the piece byte by byte: keep what precedes the damage (a bad trailer)
                d = saved
                for q in range(len(piece)):
                    try:
                        for chunk in bounded(d, piece[q : q + 1]):
                            if wrote >= len(chunk):  # already written by the failed attempt
                                wrote -= len(chunk)
                                continue
                            guard.write(chunk[wrote:], consumed)
                            wrote = 0
                    except zlib.error:
                        break
                return False
            if d.eof:
                rest = d.unused_data + bytes(view[k:])
                if rest.strip(b"\0"):  # a concatenated member follows
                    pending = rest
                    d = zlib.decompressobj(wbits=31)
                break  # (trailing zeros: ignored)
        report("inflating", consumed, total)


class ArgsSpill:
    """Args bytes of a streamed load, on disk: `put` appends a chunk's blob, `concat` maps the file back.

    The write position lives in an anonymous map (shared with a forked decoder when there was one; one process
    appends now): space is reserved under the caller's lock, then written with `pwrite` at its own offset."""

    def __init__(self, scratch_dir: Path | None = None) -> None:
        self.file = _temp(scratch_dir)
        self._end = np.frombuffer(mmap.mmap(-1, 8), np.int64)

    @property
    def size(self) -> int:
        return int(self._end[0])

    def put(self, store: ArgsStore) -> ArgsStore:
        """Write `store`'s blob; the returned store's offsets point into the spill file."""
        blob = store.blob
        base = self.size
        self._end[0] = base + len(blob)
        at = base
        for piece in blob.blobs if isinstance(blob, Blobs) else [blob]:
            view = memoryview(piece).cast("B")
            while view:
                written = os.pwrite(self.file.fileno(), view, at)
                view, at = view[written:], at + written
        return ArgsStore(self, store.starts + base, store.ends + base)

    def concat(self, stores: Sequence[Any]) -> ArgsStore:
        """One store over the spill file from spilled stores (and in-memory ones, spilled now), in order."""
        starts, ends = [], []
        for st in stores:
            st = ArgsStore.from_raw(st)
            if st.blob is not self:
                st = self.put(st)
            starts.append(st.starts)
            ends.append(st.ends)
        self.file.flush()
        if self.size:
            blob: Any = np.frombuffer(mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
        else:
            blob = b""
        self.file.close()
        z = np.zeros(0, np.int64)
        return ArgsStore(blob, np.concatenate(starts) if starts else z, np.concatenate(ends) if ends else z.copy())


class Stream:
    """A load decoding a memory-mapped file: drops the decoded pages of the map and, for a streamed load under
    a budget, spills each chunk's args and stops as soon as the projected memory exceeds the budget."""

    def __init__(self, path: Path, data: Any, spill: Any = None, budget: int | None = None) -> None:
        self.path, self.data, self.spill, self.budget = path, data, spill, budget
        self.events = 0
        self.needed = 0
        self.projected = 0

    def after_chunk(self, part: Part, consumed: int) -> None:
        """The chunk ending at byte `consumed` is decoded."""
        if self.spill is not None:
            part.x.args = self.spill.put(part.x.args)
        self.events += part.n
        self._drop(0, consumed)
        self._check(self.events, consumed)

    def _drop(self, a: int, e: int) -> None:
        """Give back the pages of [a, e) of the mapped file (they are re-read from disk if ever touched)."""
        drop_pages(self.data, a, e)

    def _check(self, events: int, consumed: int, final: bool = False) -> None:
        """Refuse the load when its projected peak exceeds the budget: during the decode only when clearly over
        (the bytes per event differ along a trace, so an early projection can be off by a few %), at the end,
        when the count is exact, as soon as it is over (the peak, at the merge, is still ahead)."""
        from trntui.memory import STREAMED_BYTES_PER_EVENT, STREAMED_FIXED_BYTES

        if self.budget is None:
            return
        # the peak is the merge after the decode (during the decode: ~100 bytes per event decoded so far)
        self.projected = int(events * len(self.data) / max(consumed, 1))
        self.needed = int(STREAMED_FIXED_BYTES + self.projected * STREAMED_BYTES_PER_EVENT)
        if self.needed > self.budget * (1.0 if final else 1.25):
            raise self.over(self.needed, self.projected)

    def finish(self, events: int) -> None:
        """The decode is done: the exact check (see `_check`)."""
        self._check(events, len(self.data), final=True)

    def over(self, needed: int, events: int) -> LoadError:
        from trntui.memory import events_text, over_budget

        return over_budget(self.path, needed, self.budget, f"even streamed, this trace (about {events_text(events)})")
