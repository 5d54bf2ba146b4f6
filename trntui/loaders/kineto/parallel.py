"""The two-process decode: this process takes pieces of the event array (~4 MB, smaller where the two meet) from
the front, a forked child from the back, until they meet (pieces.py: `Claims`); the child's columns come back
through a temporary file (wire.py). The child is forked here, or was forked when the command started, before
numpy was imported (early.py), and is adopted here."""

from __future__ import annotations

import mmap
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import msgspec

from trntui.loaders.kineto import pieces
from trntui.loaders.kineto.columns import Part, parse_links, part_of
from trntui.loaders.kineto.pieces import BOUNDARY, PIECES, Claims, write_all
from trntui.loaders.kineto.wire import frames, pack_part
from trntui.prefetch import import_wanted
from trntui.progress import report, silence

if TYPE_CHECKING:
    from trntui.loaders.kineto.streaming import Stream


def _decode_pieces(inner: memoryview, claims: Claims, from_back: bool,
                   progress: tuple[int, int] | None = None, sink: Any = None,
                   stream: Stream | None = None, offset: int = 0, base: int = 0,
                   parent: int | None = None, between: Any = None) -> dict[int, Part] | None:
    """Decode the pieces this side claims; None when one is not valid on its own (the caller then decodes
    serially, where a cut inside a string is extended to the next candidate); keyed by each piece's start.
    `sink(k, part)` takes each piece (k: its start) at once instead of the returned dict (the child writes it
    out, so it never holds them all). `between()` (the parent): called after each piece (reads the child's
    frames so far).
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
        del events
        if part.linking:
            claims.view[Claims.LINKING] = 1
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
        if between is not None:
            between()
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


def decode_parallel(
    inner: memoryview, offset: int, total: int, stream: Stream | None = None, base: int = 0
) -> list[Part] | None:
    """Decode the event array in pieces with two processes: this one takes pieces from the front, a forked child
    from the back, until they meet (so both finish together whatever the content; `Claims.take`). The child's
    columns come back as frames in a temporary file, read in place (wire.py). None when a piece is not valid or
    the child fails. An early decoder child started for this same array (early.py) is adopted instead of forking
    one (any other is stopped)."""
    if len(inner) <= pieces._PAR_CHUNK or BOUNDARY.search(inner, pieces._PAR_CHUNK) is None:
        return None  # one piece: nothing to share
    early = sys.modules.get("trntui.loaders.kineto.early")  # (imported where a command started one)
    child = early.adopt(stream, offset, len(inner), base) if early is not None else None
    if child is not None:
        claims, out, pid, verdict_r = child.claims, child.out, child.pid, child.verdict_r
    else:
        try:  # the child writes its columns here (RAM-backed when /dev/shm exists): it never waits for a reader
            out = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        except OSError:
            return None
        reap_decoders()
        claims = Claims(inner)
        pid, verdict_r = _fork(inner, claims, out.fileno(), stream, offset, base)
    with out:
        theirs = _Frames(out.fileno(), None if stream is None else stream.spill, claims)
        done = False
        mine: dict[int, Part] | None = None
        try:
            import_wanted()  # what the command needs after the load, imported while the child already decodes
            mine = _decode_pieces(inner, claims, False, (offset, total), stream=stream, offset=offset, base=base,
                                  between=theirs.read)
            done = True
        finally:
            if not done or mine is None:
                claims.fail()
            try:
                verdict = os.read(verdict_r, 2)  # empty when the child died without one
            finally:
                os.close(verdict_r)
            if done and verdict[:1] == b"\x00":  # every frame written: its exit (tearing down its memory, ~50 ms
                _EXITING.append(pid)  # on the 2M trace) is not waited for here (`reap_decoders`)
                status = 0
            else:
                _, status = os.waitpid(pid, 0)
            claims.close()
            if child is not None:
                child.finished(verdict)
        if stream is not None and claims.view[2] == Claims.OVER_BUDGET:  # the child's projection said so
            raise stream.over(int(claims.view[5]), int(claims.view[6]))
        if mine is None or status != 0:
            return None
        try:  # the child's arrays are read in place: views of the mapped file (it stays mapped while they live)
            theirs.read(written=True)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, IndexError, OSError):
            return None
    both = {**mine, **theirs.parts}
    if len(both) != claims.view[Claims.TAKEN]:  # a piece lost (or twice)
        return None
    return [both[k] for k in sorted(both)]


class _Frames:
    """The child's pieces, read from its frame file as they come: between this process's own pieces (so a raw
    frame's numpy stage, `columns.part_of_raw`, overlaps the child's decode and the sides stay balanced), the
    rest once the child is done (`written`: then a frame cut short is a damaged one). A frame that cannot be read
    stops both sides, and the final read raises (the decode then falls back, as for any damaged frame)."""

    def __init__(self, fd: int, spill: Any, claims: Claims) -> None:
        self.fd, self.spill, self.claims = fd, spill, claims
        self.pos = 0
        self.parts: dict[int, Part] = {}
        self.failed = False

    def read(self, written: bool = False) -> None:
        if self.failed:
            raise ValueError("damaged frame")
        size = os.fstat(self.fd).st_size  # 0 when this process took every piece before the child took one
        if size <= self.pos:
            return
        mapped = mmap.mmap(self.fd, size, prot=mmap.PROT_READ)
        try:
            self.pos = frames(mapped, size, self.parts, self.spill, bool(self.claims.view[Claims.LINKING]),
                              self.pos, written)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, IndexError):
            if written:
                raise
            self.failed = True
            self.claims.fail()


def _fork(inner: memoryview, claims: Claims, fd: int, stream: Stream | None, offset: int, base: int) -> tuple[int, int]:
    """Fork the child that decodes pieces from the back and writes their frames to `fd`: (its pid, the read end
    of the pipe its verdict comes through)."""
    verdict_r, verdict_w = os.pipe()  # the child's result, written just before it exits
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's code
        code = 1
        try:
            os.close(verdict_r)
            silence()  # progress is drawn by the parent

            def write_frame(k: int, part: Part) -> None:  # header + aligned array bytes (wire.py)
                write_all(fd, pack_part(k, part))

            if _decode_pieces(inner, claims, True, sink=write_frame, stream=stream, offset=offset,
                              base=base, parent=parent) is not None:
                code = 0
        finally:
            try:
                os.write(verdict_w, bytes([code]))
            finally:
                os._exit(code)
    os.close(verdict_w)
    return pid, verdict_r
