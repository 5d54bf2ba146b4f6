"""The two-process decode: this process takes pieces of the event array (~4 MB, smaller where the two meet) from
the front, a forked child from the back, until they meet; the child's columns come back through a temporary file
(wire.py)."""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trntui.loaders.kineto.chunks import BOUNDARY, PIECES
from trntui.loaders.kineto.columns import Part, parse_links, part_of
from trntui.loaders.kineto.wire import frames, pack_part
from trntui.prefetch import import_wanted
from trntui.progress import report, silence

if TYPE_CHECKING:
    from trntui.loaders.kineto.streaming import Stream


_PARALLEL_MIN_BYTES = 64 << 20
"""Event arrays this large are decoded by two processes (a forked child takes pieces from the back)."""


def parallel_ok(size: int) -> bool:
    if size < _PARALLEL_MIN_BYTES or not hasattr(os, "fork") or threading.active_count() != 1:
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
        # events (those four: streamed), linking seen, pieces taken
        self.view = np.frombuffer(self.mem, np.int64)
        self.view[:9] = (0, len(inner), 0, 0, 0, 0, 0, 0, 0)
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


def _decode_pieces(inner: memoryview, claims: Claims, from_back: bool,
                   progress: tuple[int, int] | None = None, sink: Any = None,
                   stream: Stream | None = None, offset: int = 0, base: int = 0,
                   parent: int | None = None) -> dict[int, Part] | None:
    """Decode the pieces this side claims; None when one is not valid on its own (the caller then decodes
    serially, where a cut inside a string is extended to the next candidate); keyed by each piece's start.
    `sink(k, part)` takes each piece (k: its start) at once instead of the returned dict (the child writes it
    out, so it never holds them all).
    `stream` (a streamed load): each piece's args are spilled and its pages dropped as soon as it is decoded.
    `parent` (the forked child): the pid that forked it; when that process is gone (killed by SIGTERM, say) the
    child stops at its next piece instead of decoding on for nobody."""
    done: dict[int, Part] = {}
    while (piece := claims.take(from_back)) is not None:
        if parent is not None and os.getppid() != parent:
            return None
        a, e = piece
        k = a
        try:
            events = PIECES.decode(inner[a:e])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            claims.fail()
            return None
        part = part_of(events, bool(claims.view[Claims.LINKING]), base)
        if part.linking:
            claims.view[Claims.LINKING] = 1
        del events
        if stream is not None:
            stream.after_piece(part, offset + a, offset + e, claims)
        if sink is not None:
            sink(k, part)
        else:
            done[k] = part
            if claims.view[Claims.LINKING] and (stream is None or stream.spill is None):
                for q in done.values():  # pieces decoded before a row that links was seen: now, not at merge
                    parse_links(q.x)
        del part
        if progress is not None:
            front, back = claims.view[:2].tolist()
            report("decoding", progress[0] + front + len(inner) - back, progress[1])
    return done


_EXITING: list[int] = []
"""Forked decoders that reported their result and are exiting; reaped by `reap_decoders`."""


def reap_decoders() -> None:
    """Wait for the forked decoders that reported their result (by the end of a load they are gone: no wait)."""
    while _EXITING:
        try:
            os.waitpid(_EXITING[-1], 0)
        except ChildProcessError:
            pass
        _EXITING.pop()


def _write_all(fd: int, buffers: list[Any]) -> None:
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


def decode_parallel(
    inner: memoryview, offset: int, total: int, stream: Stream | None = None, base: int = 0
) -> list[Part] | None:
    """Decode the event array in pieces with two processes: this one takes pieces from the front, a forked child
    from the back, until they meet (so both finish together whatever the content; `Claims.take`). The child's
    columns come back as frames in a temporary file, read in place (wire.py). None when a piece is not valid or
    the child fails."""
    if len(inner) <= _PAR_CHUNK or BOUNDARY.search(inner, _PAR_CHUNK) is None:
        return None  # one piece: nothing to share
    try:  # the child writes its columns here (RAM-backed when /dev/shm exists): it never waits for a reader
        out = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    except OSError:
        return None
    reap_decoders()
    claims = Claims(inner)
    verdict_r, verdict_w = os.pipe()  # the child's result, written just before it exits
    with out:
        fd = out.fileno()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # child: never returns into the caller's code
            code = 1
            try:
                os.close(verdict_r)
                silence()  # progress is drawn by the parent

                def write_frame(k: int, part: Part) -> None:  # header + aligned array bytes (wire.py)
                    _write_all(fd, pack_part(k, part))

                if _decode_pieces(inner, claims, True, sink=write_frame, stream=stream, offset=offset,
                                  base=base, parent=parent) is not None:
                    code = 0
            finally:
                try:
                    os.write(verdict_w, bytes([code]))
                finally:
                    os._exit(code)
        os.close(verdict_w)
        done = False
        mine: dict[int, Part] | None = None
        try:
            import_wanted()  # what the command needs after the load, imported while the child already decodes
            mine = _decode_pieces(inner, claims, False, (offset, total), stream=stream, offset=offset, base=base)
            done = True
        finally:
            if not done or mine is None:
                claims.fail()
            try:
                verdict = os.read(verdict_r, 1)  # empty when the child died without one
            finally:
                os.close(verdict_r)
            if done and verdict == b"\x00":  # every frame written: its exit (tearing down its memory, ~50 ms on
                _EXITING.append(pid)  # the 2M trace) is not waited for here (`reap_decoders`)
                status = 0
            else:
                _, status = os.waitpid(pid, 0)
            claims.close()
        if stream is not None and claims.view[2] == Claims.OVER_BUDGET:  # the child's projection said so
            raise stream.over(int(claims.view[5]), int(claims.view[6]))
        if mine is None or status != 0:
            return None
        size = os.fstat(fd).st_size  # 0 when this process took every piece before the child took one
        theirs: dict[int, Part] = {}
        try:  # the child's arrays are read in place: views of the mapped file (it stays mapped while they live)
            if size:
                mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)
                theirs = frames(mapped, size, None if stream is None else stream.spill)
                del mapped
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, IndexError, OSError):
            return None
    both = {**mine, **theirs}
    if len(both) != claims.view[Claims.TAKEN]:  # a piece lost (or twice)
        return None
    return [both[k] for k in sorted(both)]
