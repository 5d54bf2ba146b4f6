"""The early decoder child: the two-process decode's child (parallel.py), forked when `trntui summary` starts,
right after msgspec is imported, instead of when the load reaches the decode.

Why: before the load reaches the decode, the command imports numpy and most of trntui (~110 ms on a 2-core box,
numpy alone 224 M instructions), while the second core idles. Forked that early, the child decodes pieces from
the back of the event array meanwhile; it never imports numpy (that would cost the second core what it saves
the first): each piece's events become plain per-event arrays (`raw_piece`: `array.array` columns, the string
columns as first-occurrence tables and positions, the args joined), written as raw frames (wire.py), which the
parent turns into the same `Part`s with numpy (`columns.part_of_raw`), deciding there whatever depends on numpy's
conversions (string pids: `columns._raw_ids`). A piece msgpack cannot carry (ints beyond 64 bits) is decoded as
before, with numpy imported in the child (`part_of`), so results never depend on which process decoded what.

The load adopts the child (`adopt`) when it reaches the two-process decode of the same array of the same file;
anything else (a cache hit, another file, a streamed load, an error, Ctrl-C) stops it at once (`cancel`): the
child is killed and reaped, and its frame file was never linked into a directory."""

from __future__ import annotations

import gc
import mmap
import os
import stat
import sys
from array import array
from itertools import compress
from pathlib import Path
from typing import Any

import msgspec

from trntui.errors import TrntuiError
from trntui.loaders.kineto import pieces
from trntui.loaders.kineto.pieces import BOUNDARY, PIECES, Claims, array_span, write_all
from trntui.loaders.kineto.schema import PH, Ev, clock_base, phase_codes
from trntui.loaders.kineto.schema import args_of as _ARGS, cat_of as _CAT, dur_of as _DUR, id_of as _ID
from trntui.loaders.kineto.schema import name_of as _NAME, pid_of as _PID, tid_of as _TID, ts_of as _TS
from trntui.loaders.kineto.wire import pack_raw
from trntui.loaders.scan import _drop
from trntui.progress import silence

LAST: dict[str, bool] = {}
"""What the last early child came to: `adopted` (its pieces were used), `numpy` (it had to import numpy)."""


class EarlyChild:
    """A forked early decoder: what the load needs to adopt it, and what identifies the array it decodes."""

    def __init__(self, data: mmap.mmap, identity: tuple[int, ...], offset: int, size: int, base: int,
                 claims: Claims, out: Any, pid: int, verdict_r: int) -> None:
        self.data, self.identity, self.offset, self.size, self.base = data, identity, offset, size, base
        self.claims, self.out, self.pid, self.verdict_r = claims, out, pid, verdict_r

    def same(self, path: Path, offset: int, size: int, base: int) -> bool:
        """Whether the load's event array is this child's: the same file (device, inode, size, mtime), span and
        clock base."""
        try:
            return _identity(os.stat(path)) == self.identity and (offset, size, base) == (self.offset, self.size,
                                                                                           self.base)
        except OSError:
            return False

    def finished(self, verdict: bytes) -> None:
        """The adopting load has its verdict (the frame file and the claims are closed by it)."""
        LAST.update(adopted=True, numpy=verdict[1:2] == b"\x01")
        self._unmap()

    def cancel(self) -> None:
        import signal

        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.verdict_r)
        self.out.close()
        self.claims.close()
        LAST.update(adopted=False, numpy=False)
        self._unmap()

    def _unmap(self) -> None:
        self.claims.inner.release()
        try:
            self.data.close()
        except BufferError:  # a view still alive: the map goes with it
            pass


_CHILD: EarlyChild | None = None

_EARLY_MAX_BYTES = 128 << 20
"""Files larger than this get the load's own child, forked when it reaches the decode: the raw stage costs a little
more in all (`raw_piece` + `part_of_raw` against `part_of`: ~+3% CPU on the 401 MB 2M trace, +0.2 s wall in 22
paired rounds) and the head start is worth the same ~0.1 s whatever the size (the 69 MB CPU trace: -55 ms)."""


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def start(path: Path, budget: int | None) -> None:
    """Fork the early decoder for `path` when its load will be a two-process decode held in memory: a plain
    (not gzip) chrome trace whose event array is big enough (`pieces.parallel_ok`), not streamed under `budget`
    (bytes; the load's own test, load.py). Anything unusual: no child (the load decides as always)."""
    global _CHILD
    if _CHILD is not None:
        return
    from trntui.loaders.kineto.parser import ParserUnavailable, enabled

    try:
        if enabled():
            return  # the compiled builder decodes the pieces itself (its load forks no early child)
    except ParserUnavailable:
        return  # (the load says so)
    try:
        from trntui import fsio

        with fsio.open_regular(path) as f:  # (a FIFO must not block the command: refused, a LoadError)
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or not pieces._PARALLEL_MIN_BYTES <= st.st_size <= _EARLY_MAX_BYTES:
                return
            from trntui.memory import FULL_LOAD_FACTOR

            if budget is not None and st.st_size * FULL_LOAD_FACTOR > budget:
                return  # streamed (load.py), its args spilled: not this child's form
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        _CHILD = _fork(data, _identity(st))
    except (OSError, ValueError, msgspec.MsgspecError, TrntuiError):
        return


def _fork(data: mmap.mmap, identity: tuple[int, ...]) -> EarlyChild | None:
    """Locate the event array in the mapped file and fork the child that decodes it; None (the map closed) when
    the file is not this child's."""
    inner = out = claims = None
    pid = -1
    try:
        span = array_span(data) if data[:2] != b"\x1f\x8b" else None
        end = next(span[1], None) if span is not None else None
        if end is None:
            return None
        a, (e, top_meta) = span[0], end
        inner = memoryview(data)[a + 1 : e]
        if (not pieces.parallel_ok(len(inner)) or len(inner) <= pieces._PAR_CHUNK
                or BOUNDARY.search(inner, pieces._PAR_CHUNK) is None):
            return None
        out = _frame_file()
        claims = Claims(inner)
        verdict_r, verdict_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
    finally:
        if pid < 0:  # not forked: nothing kept
            for thing in (out, claims, inner, data):
                if thing is not None:
                    thing.close() if not isinstance(thing, memoryview) else thing.release()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(verdict_r)
            gc.disable()  # (as the load's decode: millions of small objects, none cyclic)
            silence()
            if _decode_from_back(data, a + 1, inner, claims, out.fileno(), clock_base(top_meta)[0], parent):
                code = 0
        finally:
            try:
                os.write(verdict_w, bytes([code, "numpy" in sys.modules]))
            finally:
                os._exit(code)
    os.close(verdict_w)
    return EarlyChild(data, identity, a + 1, len(inner), clock_base(top_meta)[0], claims, out, pid, verdict_r)


def _frame_file() -> Any:
    """The unlinked file the child writes its frames to, RAM-backed (/dev/shm) where possible (O_TMPFILE: without
    `tempfile`'s imports, ~4 ms)."""
    try:
        return open(os.open("/dev/shm", os.O_TMPFILE | os.O_RDWR, 0o600), "r+b", buffering=0)
    except (OSError, AttributeError):
        import tempfile

        return tempfile.TemporaryFile()


def adopt(stream: Any, offset: int, size: int, base: int) -> EarlyChild | None:
    """The early child, for the two-process decode of `stream`'s array at `offset` (`size` bytes, clock `base`)
    held in memory; None when there is none or it decodes something else (it is then stopped)."""
    global _CHILD
    child, _CHILD = _CHILD, None
    if child is None:
        return None
    if stream is None or stream.spill is not None or stream.budget is not None or not child.same(
            stream.path, offset, size, base):
        child.cancel()
        return None
    return child


def cancel() -> None:
    """Stop the early child unless a load adopted it."""
    global _CHILD
    child, _CHILD = _CHILD, None
    if child is not None:
        child.cancel()


def _decode_from_back(data: mmap.mmap, at: int, inner: memoryview, claims: Claims, fd: int, base: int,
                      parent: int) -> bool:
    """The child's work: claim pieces from the back, write each one's frame; False when a piece is not valid on
    its own (the load then decodes serially) or the parent is gone."""
    while (piece := claims.take(True)) is not None:
        if os.getppid() != parent:
            return False
        a, e = piece
        try:
            events = PIECES.decode(inner[a:e])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            claims.fail()
            return False
        try:
            frame = pack_raw(a, *raw_piece(events, base))
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # a value msgpack cannot carry
            frame = _ordinary(a, events, claims, base)
        write_all(fd, frame)
        del events, frame
        _drop(data, at + a, at + e)  # (its pages are read again by nobody)
    return True


def _ordinary(k: int, events: list[Ev], claims: Claims, base: int) -> list[Any]:
    """The frame of a piece `raw_piece` cannot carry (e.g. an int beyond 64 bits: msgpack has none): `part_of`, as
    the load's own child does (numpy imported)."""
    from trntui import settings

    settings.numpy_with_one_blas_thread()
    from trntui.loaders.kineto.columns import part_of
    from trntui.loaders.kineto.wire import pack_part

    part = part_of(events, bool(claims.view[Claims.LINKING]), base)
    if part.linking:
        claims.view[Claims.LINKING] = 1
    return pack_part(k, part)




def _marks(*phases: str) -> bytes:
    """A `bytes.translate` table over phase codes (`PH`): 1 for the phases given, 0 for every other code."""
    table = bytearray(256)
    for ph in phases:
        table[PH[ph]] = 1
    return bytes(table)


_INTERVAL, _META, _BEGIN_END, _FLOW = _marks("X", "i", "I"), _marks("M"), _marks("B", "E"), _marks("s", "f")

def _positions(values: Any, m: int) -> tuple[list[Any], array]:
    """A column as (first-occurrence uniques, each value's first position): `_strings_part` without its numpy
    step. (Arrays here are made from lists: ~25% faster than from iterators, which grow them as they go.)"""
    table: dict[Any, int] = {}
    pos = array("q", list(map(table.setdefault, values, range(m))))
    return list(table), pos


def _ids(events: list[Ev], get: Any) -> tuple[list[Any] | None, array]:
    """An int-or-string column: (None, int64 values) when every value is an int64, else `_positions`: the parent
    decides what numpy would have made of the values (`columns._raw_ids`)."""
    try:
        return None, array("q", list(map(get, events)))
    except (TypeError, OverflowError):
        return _positions(map(get, events), len(events))


def raw_piece(events: list[Ev], base: int) -> tuple[list[Any], list[tuple[str, Any]]]:
    """A piece's events as plain per-event arrays for `columns.part_of_raw` (fields, (dtype, buffer) arrays):

        fields: [n, base, M events (JSON), B/E events (JSON), [m, category, name, pid, tid uniques], flows]
                (pid/tid uniques: None when the column is int64 values, else the positions of `_ids`)
                flows: None, or [their count, their category, pid, tid, id uniques]
        arrays: phase codes, then of the m X/i/I events ts, dur, pid, tid, category and name positions, args
                blob, args lengths; then of the s/f flow events ts, pid, tid, id, category positions"""
    n = len(events)
    ph = phase_codes(events)
    keep = ph.translate(_INTERVAL)
    m = keep.count(1)
    sel = events if m == n else list(compress(events, keep))
    cat_u, cat_pos = _positions(map(_CAT, sel), m)
    name_u, name_pos = _positions(map(_NAME, sel), m)
    pid_u, pid = _ids(sel, _PID)
    tid_u, tid = _ids(sel, _TID)
    args = list(map(_ARGS, sel))
    arrays: list[tuple[str, Any]] = [
        ("|i1", ph), ("=f8", array("d", list(map(_TS, sel)))), ("=f8", array("d", list(map(_DUR, sel)))),
        ("=i8", pid), ("=i8", tid), ("=i8", cat_pos), ("=i8", name_pos), ("|u1", b"".join(args)),
        ("=i8", array("q", list(map(len, args)))),
    ]
    del sel, args
    flows = None
    if 1 in ph.translate(_FLOW):
        fev = list(compress(events, ph.translate(_FLOW)))
        nf = len(fev)
        fcat_u, fcat_pos = _positions(map(_CAT, fev), nf)
        fpid_u, fpid = _ids(fev, _PID)
        ftid_u, ftid = _ids(fev, _TID)
        fid_u, fid = _ids(fev, _ID)
        arrays += [("=f8", array("d", list(map(_TS, fev)))), ("=i8", fpid), ("=i8", ftid), ("=i8", fid),
                   ("=i8", fcat_pos)]
        flows = [nf, fcat_u, fpid_u, ftid_u, fid_u]
    m_events = list(compress(events, ph.translate(_META))) if PH["M"] in ph else []
    be_events = list(compress(events, ph.translate(_BEGIN_END))) if PH["B"] in ph or PH["E"] in ph else []
    fields = [n, base, msgspec.json.encode(m_events), msgspec.json.encode(be_events),
              [m, cat_u, name_u, pid_u, tid_u], flows]
    return fields, arrays
