"""Load torch.profiler / Kineto chrome traces (`trace.json`, `.json.gz`) into a `Profile`.

One typed msgspec pass decodes the events with `args` kept raw; the few args keys needed for linking
(External id, correlation) are decoded in one batch; the rest are parsed per event on demand.
Handles the object and bare-array forms, `X`/`B`/`E`/`i`/`s`/`f`/`M` phases, the three timestamp regimes
(`baseTimeNanoseconds` relative µs, epoch float µs, epoch int µs), legacy categories and flow names, and
string pids. Partial overlaps are kept; unpaired flow halves are counted, not fatal.
"""

from __future__ import annotations

import gc
import mmap
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import compress, repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trntui.errors import LoadError
from trntui.loaders.jsonutil import read_bytes, repair_json
from trntui.model import categories as C
from trntui.model.args import ArgsStore
from trntui.model.builder import ProfileBuilder
from trntui.model.intervals import walk_back
from trntui.model.profile import NO_ID, EventKind, Flows, Profile, ProfileMeta, Tier
from trntui.progress import report, silence


class Ev(msgspec.Struct, omit_defaults=True, gc=False):  # no cycles possible: untracked is faster
    """One chrome trace event, as written by Kineto; `args` stays raw until someone asks."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | str = 0
    tid: int | str = 0
    id: int | str | None = None
    bp: str | None = None
    s: str | None = None
    args: msgspec.Raw = None  # type: ignore[assignment]  # None when absent; `Raw | None` fails to decode objects in msgspec 0.23


class Trace(msgspec.Struct):
    """The object form's top level. Unknown keys are ignored (they are user metadata)."""

    traceEvents: list[Ev] | None = None
    baseTimeNanoseconds: int | None = None
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    trace_id: Any = None
    record_shapes: Any = None
    with_stack: Any = None
    profile_memory: Any = None
    host_name: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None


_ABSENT = -(2**63) + 7
"""Default of absent link keys (an int, so whole columns convert with one `np.fromiter`)."""


class LinkArgs(msgspec.Struct, gc=False):
    """The args keys needed to link ops, runtime calls and device rows."""

    ext: int | float | str | None = msgspec.field(name="External id", default=_ABSENT)
    ext_legacy: int | float | str | None = msgspec.field(name="external id", default=_ABSENT)
    corr: int | float | str | None = msgspec.field(name="correlation", default=_ABSENT)


class _TraceTop(Trace):
    """The object form's top level with the event array kept raw (decoded in chunks)."""

    traceEvents: msgspec.Raw = None  # type: ignore[assignment]


_trace_decoder = msgspec.json.Decoder(Trace)
_top_raw_decoder = msgspec.json.Decoder(_TraceTop)
_raw_value_decoder = msgspec.json.Decoder(msgspec.Raw)
_list_decoder = msgspec.json.Decoder(list[Ev])
_ev_decoder = msgspec.json.Decoder(Ev)
_raw_list_decoder = msgspec.json.Decoder(list[msgspec.Raw])
_raw_dict_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_link_decoder = msgspec.json.Decoder(list[LinkArgs])
_link_one_decoder = msgspec.json.Decoder(LinkArgs)
_any_decoder = msgspec.json.Decoder()


# ----------------------------------------------------------------------------------------------------
# decoding
# ----------------------------------------------------------------------------------------------------
def decode_trace(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Events and top-level metadata from trace bytes, with a fallback chain for damaged files."""
    if data[:3] == b"\xef\xbb\xbf":  # UTF-8 byte order mark (editors on Windows)
        data = data[3:]
    stripped = data.lstrip()
    if not stripped:
        raise LoadError(path, "empty file")
    first = stripped[:1]
    if first not in (b"{", b"["):
        raise LoadError(path, "not a chrome trace (expected a JSON object or array)")
    problem = ""
    try:
        if first == b"[":
            return _list_decoder.decode(data), {}
        top = _trace_decoder.decode(data)
        if top.traceEvents is None:
            raise LoadError(path, "no 'traceEvents' key: not a chrome trace")
        return top.traceEvents, _top_meta(top)
    except msgspec.ValidationError:
        try:
            return _decode_tolerant(data, path, meta)
        except (msgspec.DecodeError, RecursionError) as exc:
            problem = str(exc)
    except (msgspec.DecodeError, RecursionError) as exc:
        problem = str(exc)
    # invalid JSON: control characters, bare N/A, invalid UTF-8 (repairable), or truncated / damaged events
    if "truncated" not in problem:
        try:
            value, notes = repair_json(data)
            fixed = msgspec.json.encode(value)
        except (ValueError, TypeError, OverflowError, RecursionError):
            pass
        else:
            meta.notes.extend(f"repaired: {n}" for n in notes)
            return _decode_tolerant(fixed, path, meta)
    return _recover(data, path, meta)


_CHUNK_BYTES = 16 << 20
"""Event-array text decoded per chunk: only one chunk of `Ev` objects is alive at a time."""
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
"""A candidate boundary between two events (may also match inside a string or nested args: a chunk cut
there is not valid JSON, since it ends inside a string or an open object, and is retried longer)."""


_PARALLEL_MIN_BYTES = 64 << 20
"""Event arrays this large are decoded by two processes (a forked child takes pieces from the back)."""


def _parallel_ok(size: int) -> bool:
    if size < _PARALLEL_MIN_BYTES or not hasattr(os, "fork") or threading.active_count() != 1:
        return False  # forking a process with other threads is unsafe
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2


class _NotChunkable(Exception):
    """The event array cannot be decoded in chunks; the caller takes the whole-file path."""


def _decode_chunk(inner: memoryview, pos: int) -> tuple[list[Ev] | None, int]:
    """(events, next position) for the chunk of `inner` starting at event boundary `pos`, cut at the first
    candidate boundary ~_CHUNK_BYTES further (a cut inside a string or nested object is extended to the next
    candidate). (None, len(inner)) when the decode fails through to the end of `inner`."""
    size = len(inner)
    end = nxt = size
    if pos + _CHUNK_BYTES < size:
        m = _BOUNDARY.search(inner, pos + _CHUNK_BYTES)
        if m is not None:
            end, nxt = m.start() + 1, m.end() - 1
    for _attempt in range(4):
        try:
            return _list_decoder.decode(b"[" + inner[pos:end] + b"]"), nxt
        except msgspec.DecodeError:
            if end == size:
                return None, size
            m = _BOUNDARY.search(inner, nxt)
            end, nxt = (m.start() + 1, m.end() - 1) if m is not None else (size, size)
        except (msgspec.ValidationError, RecursionError):
            raise _NotChunkable from None
    raise _NotChunkable


_PAR_CHUNK = 4 << 20
"""Chunk size of the two-process decode: small enough that the two processes finish close together."""


def _cut_points(inner: memoryview, step: int) -> list[tuple[int, int]]:
    """(start, end) of ~`step`-byte pieces of the event array, cut at candidate event boundaries."""
    pieces = []
    a = 0
    while a < len(inner):
        m = _BOUNDARY.search(inner, a + step) if a + step < len(inner) else None
        if m is None:
            pieces.append((a, len(inner)))
            break
        pieces.append((a, m.start() + 1))
        a = m.end() - 1
    return pieces


class _Claims:
    """Which pieces are taken, shared by the parent (from the front) and the child (from the back) through an
    anonymous shared map; a one-byte token in a pipe is the lock."""

    OVER_BUDGET = 2
    """`failed` value: a streamed load's projection went over the budget (`needed` holds the bytes)."""

    def __init__(self, count: int) -> None:
        self.mem = mmap.mmap(-1, 56)
        # front, back, failed, events, consumed bytes, needed bytes, projected events (the last four: streamed)
        self.view = np.frombuffer(self.mem, np.int64)
        self.view[:] = (0, count, 0, 0, 0, 0, 0)
        self.r, self.w = os.pipe()
        os.write(self.w, b"x")

    @contextmanager
    def locked(self) -> Iterator[None]:
        os.read(self.r, 1)
        try:
            yield
        finally:
            os.write(self.w, b"x")

    def take(self, from_back: bool) -> int:
        """The next piece's index for this side, or -1 when none is left (or the other side failed)."""
        with self.locked():
            front, back, failed = self.view[:3].tolist()
            if failed or front >= back:
                return -1
            if from_back:
                self.view[1] = back - 1
                return back - 1
            self.view[0] = front + 1
            return front

    def fail(self, why: int = 1) -> None:
        if not self.view[2]:
            self.view[2] = why

    def close(self) -> None:
        os.close(self.r)
        os.close(self.w)


def _decode_pieces(inner: memoryview, pieces: list[tuple[int, int]], claims: _Claims, from_back: bool,
                   progress: tuple[int, int] | None = None, sink: Any = None,
                   stream: _Stream | None = None, offset: int = 0) -> dict[int, _Part] | None:
    """Decode the pieces this side claims; None when one is not valid on its own (the caller then decodes
    serially, where a cut inside a string is extended to the next candidate). `sink(k, part)` takes each
    piece at once instead of the returned dict (the child writes it out, so it never holds them all).
    `stream` (a streamed load): each piece's args are spilled and its pages dropped as soon as it is decoded."""
    done: dict[int, _Part] = {}
    while (k := claims.take(from_back)) >= 0:
        a, e = pieces[k]
        try:
            events = _list_decoder.decode(b"[" + inner[a:e] + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            claims.fail()
            return None
        part = _part_of(events)
        del events
        if stream is not None:
            stream.after_piece(part, offset + a, offset + e, claims)
        if sink is not None:
            sink(k, part)
        else:
            done[k] = part
        del part
        if progress is not None:
            front, back = claims.view[:2].tolist()
            share = (front + len(pieces) - back) / len(pieces)
            report("decoding", progress[0] + int(share * len(inner)), progress[1])
    return done


def _decode_parallel(inner: memoryview, offset: int, total: int, stream: _Stream | None = None) -> list[_Part] | None:
    """Decode the event array in ~4 MB pieces with two processes: this one takes pieces from the front, a
    forked child from the back, until they meet (so both finish together whatever the content). The child's
    columns come back as msgpack in a temporary file. None when a piece is not valid or the child fails."""
    pieces = _cut_points(inner, _PAR_CHUNK)
    if len(pieces) < 2:
        return None
    try:  # the child writes its columns here (RAM-backed when /dev/shm exists): it never waits for a reader
        out = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    except OSError:
        return None
    claims = _Claims(len(pieces))
    with out:
        fd = out.fileno()
        pid = os.fork()
        if pid == 0:  # child: never returns into the caller's code
            code = 1
            try:
                silence()  # progress is drawn by the parent

                def write_frame(k: int, part: _Part) -> None:  # length + msgpack [index, columns]
                    frame = msgspec.msgpack.encode([k, _pack_part(part)])
                    payload = memoryview(len(frame).to_bytes(8, "little") + frame)
                    del frame
                    while payload:
                        payload = payload[os.write(fd, payload) :]

                if _decode_pieces(inner, pieces, claims, True, sink=write_frame, stream=stream, offset=offset) is not None:
                    code = 0
            finally:
                os._exit(code)
        done = False
        mine: dict[int, _Part] | None = None
        try:
            mine = _decode_pieces(inner, pieces, claims, False, (offset, total), stream=stream, offset=offset)
            done = True
        finally:
            if not done or mine is None:
                claims.fail()
            _, status = os.waitpid(pid, 0)
            claims.close()
        if stream is not None and claims.view[2] == _Claims.OVER_BUDGET:  # the child's projection said so
            raise stream.over(int(claims.view[5]), int(claims.view[6]))
        if mine is None or status != 0:
            return None
        size = os.fstat(fd).st_size
        if not size:
            return None
        theirs: dict[int, _Part] = {}
        try:  # frame by frame: only one piece's packed bytes at a time in this process
            pos = 0
            while pos < size:
                length = int.from_bytes(os.pread(fd, 8, pos), "little")
                k, packed = msgspec.msgpack.decode(os.pread(fd, length, pos + 8))
                theirs[k] = _unpack_part(packed, None if stream is None else stream.spill)
                pos += 8 + length
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, IndexError, OSError):
            return None
    both = {**mine, **theirs}
    if sorted(both) != list(range(len(pieces))):
        return None
    return [both[k] for k in range(len(pieces))]


# the child's columns travel as msgpack (plain data: arrays as dtype + bytes, kept events as JSON)
def _arr(a: np.ndarray) -> list[Any]:
    return [a.dtype.str, a.tobytes()]


def _unarr(t: list[Any]) -> np.ndarray:
    return np.frombuffer(t[1], np.dtype(t[0]))


def _ids_enc(v: Any) -> list[Any]:
    return [_arr(v)] if isinstance(v, np.ndarray) else [v[0], _arr(v[1])]


def _ids_dec(t: list[Any]) -> Any:
    return _unarr(t[0]) if len(t) == 1 else (t[0], _unarr(t[1]))


def _pack_part(p: _Part) -> list[Any]:
    """One piece's columns as plain msgpack data (arrays as dtype + bytes, kept events as JSON)."""
    x, f = p.x, p.flows
    xs = [x.m, _arr(x.ts), _arr(x.dur), _arr(x.kinds), _ids_enc(x.pid), _ids_enc(x.tid), _ids_enc(x.cat),
          _ids_enc(x.name), [x.args.blob if isinstance(x.args.blob, bytes) else None, _arr(x.args.starts), _arr(x.args.ends)],
          None if x.links is None else [_arr(x.links[0]), _arr(x.links[1])]]
    fs = None if f is None else [f.n, _arr(f.ts), _ids_enc(f.pid), _ids_enc(f.tid), _arr(f.keys), _ids_enc(f.cat), _arr(f.ph)]
    return [p.n, p.n_m, p.n_x, p.n_be, p.n_sft, msgspec.json.encode(p.m_events), msgspec.json.encode(p.be_events), xs, fs]


def _unpack_part(packed: list[Any], spill: Any = None) -> _Part:
    """A piece's columns from `_pack_part`; args without a blob are in the streamed load's shared `spill`."""
    n, n_m, n_x, n_be, n_sft, m_ev, be_ev, xs, fs = packed
    p = _Part()
    p.n, p.n_m, p.n_x, p.n_be, p.n_sft = n, n_m, n_x, n_be, n_sft
    p.m_events, p.be_events = _list_decoder.decode(m_ev), _list_decoder.decode(be_ev)
    x = p.x = _XCols()
    x.m, x.ts, x.dur, x.kinds = xs[0], _unarr(xs[1]), _unarr(xs[2]), _unarr(xs[3])
    x.pid, x.tid, x.cat, x.name = _ids_dec(xs[4]), _ids_dec(xs[5]), _ids_dec(xs[6]), _ids_dec(xs[7])
    blob, starts, ends = xs[8]
    x.args = ArgsStore(spill if blob is None else blob, _unarr(starts), _unarr(ends))
    x.links = None if xs[9] is None else (_unarr(xs[9][0]), _unarr(xs[9][1]))
    if fs is None:
        p.flows = None
    else:
        f = p.flows = _FCols()
        f.n, f.ts, f.pid, f.tid, f.keys, f.cat, f.ph = (
            fs[0], _unarr(fs[1]), _ids_dec(fs[2]), _ids_dec(fs[3]), _unarr(fs[4]), _ids_dec(fs[5]), _unarr(fs[6]))
    return p


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENTS_NAME = re.compile(rb'"traceEvents"')


_CLOSE_LOOKAHEAD = 64
_ARRAY_CLOSE = re.compile(rb"[}\[]\s*\]\s*[,}]")


def _last_non_space(data: Any, e: int, lo: int) -> int:
    """Position of the last non-whitespace byte before `e` (not before `lo`)."""
    k = e - 1
    while k > lo and data[k] in b" \t\r\n":
        k -= 1
    return k


def _array_ends(data: Any, a: int, lo: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Candidate ends `e` (the `]`) of the event array opened at `data[a]` in the object form, last first,
    with the top-level metadata: `head + [] + tail` must decode with nothing else called traceEvents.

    A `]` inside the event array never gives a valid tail (the array's and its events' closers would
    follow), so a wrong candidate can only be one inside the tail's own values; the chunk decode of the
    event array then fails at its end and the next candidate is tried."""
    head = data[lo:a]
    hi = len(data)
    tries = 0
    for _ in range(100_000):  # `]` in the tail's strings (e.g. Kineto's log lines) are skipped cheaply
        e = data.rfind(b"]", a, hi)
        if e < 0:
            return
        hi = e
        if not _ARRAY_CLOSE.match(data, _last_non_space(data, e, a), e + 1 + _CLOSE_LOOKAHEAD):
            continue  # the array's `]` follows its last event's `}` (or its `[`) and precedes `,` or `}`
        tries += 1
        if tries > 8:
            return
        tail = data[e + 1 :]
        if _EVENTS_NAME.search(tail):
            continue
        try:
            top = _top_raw_decoder.decode(head + b"[]" + tail)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        if top.traceEvents is None or bytes(top.traceEvents) != b"[]":
            continue
        yield e, _top_meta(top)


def _decode_chunked(data: Any, stream: _Stream | None = None) -> tuple[list[_Part], dict[str, Any]] | None:
    """Decode a valid trace chunk by chunk into columns; None when anything is unusual (the caller then
    takes the whole-file path with its fallbacks for damaged input, which gives the same result).

    The document is split as head + event array + tail without parsing it whole: the head and tail are
    decoded together (with an empty array in between), the array in chunks cut at candidate event
    boundaries; every byte is decoded once and all of it must be valid, so the split is the JSON parse.
    `data`: bytes, or a memory map when `stream` is given (a streamed load: see `_Stream`)."""
    n = len(data)
    lo = a = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    while a < n and data[a] in b" \t\r\n":
        a += 1
    first = data[a : a + 1]
    if first == b"[":
        e = n - 1
        while e > a and data[e] in b" \t\r\n":
            e -= 1
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
    view = memoryview(data)
    if _parallel_ok(e - a - 1):
        halves = _decode_parallel(view[a + 1 : e], a + 1, n, stream)
        if halves is not None:
            report("decoding", n, n)
            return halves, top_meta
    parts: list[_Part] = []
    pos = 0
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
                continue
            parts.append(_part_of(events))
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


def _recover(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Read what can be read from a truncated or damaged file, and say what was lost (recover.py)."""
    from trntui.loaders.recover import recover_events

    try:
        rec = recover_events(data)
    except RecursionError:
        rec = None
    if rec is None or not rec.raws:
        lost = f" ({rec.damaged + rec.cut} damaged or incomplete)" if rec is not None and rec.damaged + rec.cut else ""
        raise LoadError(path, f"not valid JSON and no complete events could be recovered{lost}") from None
    blob = b"[" + b",".join(rec.raws) + b"]"
    try:
        events = _list_decoder.decode(blob)
    except (msgspec.ValidationError, msgspec.DecodeError):
        events, _ = _decode_tolerant(blob, path, meta)
    if rec.closed:
        meta.notes.append(f"file is damaged: read {len(events)} events; ignored what follows the event array")
    else:
        meta.notes.append(f"file is truncated: recovered {len(events)} complete events before the cut")
        if "baseTimeNanoseconds" not in rec.top:
            meta.notes.append("no baseTimeNanoseconds before the cut: timestamps kept as written")
    if rec.repaired:
        meta.notes.append(f"repaired: {rec.repaired} event(s) read by the lenient parser (control characters, N/A)")
    meta.skip("incomplete event at the cut (file truncated)", rec.cut)
    meta.skip("damaged events (invalid JSON)", rec.damaged)
    return events, rec.top


def _top_meta(top: Trace) -> dict[str, Any]:
    out = {}
    for field in top.__struct_fields__:
        if field == "traceEvents":
            continue
        value = getattr(top, field)
        if value is not None:
            out[field] = value
    return out


def _decode_tolerant(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Decode event by event, coercing what can be coerced and counting what must be skipped."""
    try:
        if data.lstrip()[:1] == b"[":
            raw_events = _raw_list_decoder.decode(data)
            top_meta: dict[str, Any] = {}
        else:
            top = _raw_dict_decoder.decode(data)
            raw = top.get("traceEvents")
            if raw is None:
                raise LoadError(path, "no 'traceEvents' key: not a chrome trace")
            raw_events = _raw_list_decoder.decode(raw)
            top_meta = {}
            for key in ("baseTimeNanoseconds", "deviceProperties", "distributedInfo", "schemaVersion"):
                if key in top:
                    try:
                        top_meta[key] = _any_decoder.decode(top[key])
                    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                        pass
            base = top_meta.get("baseTimeNanoseconds")
            if base is not None and not isinstance(base, int):
                try:
                    top_meta["baseTimeNanoseconds"] = int(base)
                except (TypeError, ValueError, OverflowError):
                    meta.notes.append("baseTimeNanoseconds is not an integer; ignored")
                    del top_meta["baseTimeNanoseconds"]
    except msgspec.ValidationError as exc:
        raise LoadError(path, f"unexpected structure: {exc}") from None
    events: list[Ev] = []
    bad = 0
    for raw in raw_events:
        try:
            events.append(_ev_decoder.decode(raw))
            continue
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass
        ev = _coerce_event(raw)
        if ev is None:
            bad += 1
        else:
            events.append(ev)
    if bad:
        meta.skip("events with unusable fields", bad)
    return events, top_meta


def _coerce_event(raw: Any) -> Ev | None:
    """Best effort for an event with mistyped fields (numbers as strings, names as numbers)."""
    try:
        obj = _any_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # e.g. 1e400: number out of range
        return None
    if not isinstance(obj, dict):
        return None
    try:
        ts = float(obj.get("ts", 0.0))
        dur = float(obj.get("dur", 0.0) or 0.0)
    except (TypeError, ValueError, OverflowError):
        return None
    if not (np.isfinite(ts) and np.isfinite(dur)):
        return None
    pid = obj.get("pid", 0)
    tid = obj.get("tid", 0)
    pid = pid if isinstance(pid, (int, str)) and not isinstance(pid, bool) else str(pid)
    tid = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else str(tid)
    fid = obj.get("id")
    fid = fid if isinstance(fid, (int, str)) or fid is None else str(fid)
    args = obj.get("args")
    return Ev(
        ph=str(obj.get("ph", "")),
        name=str(obj.get("name", "")),
        cat=str(obj.get("cat", "")),
        ts=ts,
        dur=dur,
        pid=pid,
        tid=tid,
        id=fid,
        bp=None if obj.get("bp") is None else str(obj.get("bp")),
        s=None if obj.get("s") is None else str(obj.get("s")),
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else None,
    )


# ----------------------------------------------------------------------------------------------------
# conversion helpers
# ----------------------------------------------------------------------------------------------------
_MAX_NS = 2**62
"""Timestamps (absolute ns) beyond this are corrupted values, not clocks (year 2116); such events are skipped."""


_SUSPECT_SPAN_NS = 86_400 * 10**9
"""A trace longer than a day mixes clocks or holds corrupted timestamps (the TensorBoard plugin drops a Record
Window End more than 24 h after the start for the same reason)."""


def to_ns(values: np.ndarray) -> np.ndarray:
    """µs floats → int64 ns, exact for integral µs (epoch ints) and rounded to the ns otherwise."""
    whole = np.floor(values)
    return whole.astype(np.int64) * 1000 + np.rint((values - whole) * 1000.0).astype(np.int64)


class _IdMap:
    """Maps int-or-string pids/tids to ints: strings get stable negative ids."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}

    def __call__(self, values: list[Any]) -> np.ndarray:
        try:
            return np.fromiter(values, np.int64, count=len(values))
        except (TypeError, ValueError, OverflowError):
            # few distinct pids/tids: convert each distinct value once, then C-level lookups per event
            # (dict.fromkeys keeps first-occurrence order, so string ids are numbered as before)
            table = {v: self.one(v) for v in dict.fromkeys(values)}
            return np.fromiter(map(table.__getitem__, values), np.int64, count=len(values))

    def one(self, v: Any) -> int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v if -(2**62) < v < 2**62 else hash(v) % (2**62)
        s = str(v)
        try:
            return int(s)
        except ValueError:
            pass
        k = self.strings.get(s)
        if k is None:
            k = self.strings[s] = -1000 - len(self.strings)
        return k

    def label(self, v: int) -> str | None:
        for s, k in self.strings.items():
            if k == v:
                return s
        return None


def _to_id(v: Any) -> int:
    if v is None or isinstance(v, bool):
        return NO_ID
    if isinstance(v, int):
        return v if -(2**62) < v < 2**62 else NO_ID
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return NO_ID
    if not np.isfinite(f) or abs(f) >= 2**62:
        return NO_ID
    return int(f)


def _link_columns(args: list[Any], meta: ProfileMeta | None, *, fast_only: bool = False) -> Any:
    """External id and correlation per event, decoded from the raw args.

    Decoded in chunks (one decode call per event, cheaper than joining them into one array) so that only a
    chunk of decoded objects is alive at a time; the rare files with non-int ids take the exact per-value path.
    """
    n = len(args)
    ext = np.full(n, NO_ID, np.int64)
    corr = np.full(n, NO_ID, np.int64)
    mask = list(map(is_not, args, repeat(None)))
    present = list(compress(range(n), mask))
    if not present:
        return ext, corr
    idx = np.asarray(present, np.int64)
    m = len(idx)
    raws = list(compress(args, mask))
    e_out = np.empty(m, np.int64)
    c_out = np.empty(m, np.int64)
    fast_e = fast_c = True
    try:
        for a in range(0, m, _LINK_CHUNK):
            part = list(map(_link_one_decoder.decode, raws[a : a + _LINK_CHUNK]))
            k = len(part)
            if fast_e:
                try:  # every value an int (or absent)
                    e = np.fromiter(map(attrgetter("ext"), part), np.int64, count=k)
                    legacy = np.fromiter(map(attrgetter("ext_legacy"), part), np.int64, count=k)
                    e = np.where(e == _ABSENT, legacy, e)
                    e[e == _ABSENT] = NO_ID
                    e_out[a : a + k] = e
                except (TypeError, ValueError, OverflowError):
                    fast_e = False
            if fast_c:
                try:
                    c = np.fromiter(map(attrgetter("corr"), part), np.int64, count=k)
                    c[c == _ABSENT] = NO_ID
                    c_out[a : a + k] = c
                except (TypeError, ValueError, OverflowError):
                    fast_c = False
            if not fast_e and not fast_c:
                break
    except (msgspec.ValidationError, msgspec.DecodeError):
        fast_e = fast_c = False
    if fast_only and not (fast_e and fast_c):
        return None  # the caller applies the exact rules to the whole column
    decoded: list[LinkArgs] = []
    if not (fast_e and fast_c):
        try:
            decoded = list(map(_link_one_decoder.decode, raws))
        except (msgspec.ValidationError, msgspec.DecodeError):
            for r in raws:
                try:
                    decoded.append(_link_one_decoder.decode(r))
                except (msgspec.ValidationError, msgspec.DecodeError):
                    decoded.append(LinkArgs())
    del raws
    if fast_e:
        ext[idx] = e_out
    else:  # a value that is not an int somewhere: the exact per-value rules, for the whole column
        ext_vals = [d.ext if d.ext is not None and not _is_absent(d.ext) else d.ext_legacy for d in decoded]
        ext[idx] = _exact_ids(ext_vals)
    if fast_c:
        corr[idx] = c_out
    else:
        corr[idx] = _exact_ids(list(map(attrgetter("corr"), decoded)))
    return ext, corr


def _exact_ids(values: list[Any]) -> np.ndarray:
    """Absent/null → -1; all ints (or int-like) → as is; otherwise every value through `_to_id`."""
    try:
        return np.fromiter((NO_ID if v is None or _is_absent(v) else v for v in values), np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return np.asarray([NO_ID if v is None or _is_absent(v) else _to_id(v) for v in values], np.int64)


_LINK_CHUNK = 65536


def _is_absent(v: Any) -> bool:
    return type(v) is int and v == _ABSENT


# ----------------------------------------------------------------------------------------------------
# the loader
# ----------------------------------------------------------------------------------------------------
def load_kineto(path: str | Path, *, instance: str = "") -> Profile:
    """Load one chrome trace file into a new `Profile`."""
    builder = ProfileBuilder(ProfileMeta())
    load_kineto_into(path, builder, instance=instance)
    return builder.finish()


def load_kineto_into(path: str | Path, builder: ProfileBuilder, *, instance: str = "", budget: int | None = None) -> None:
    """Add one chrome trace file's events, lanes and flows to `builder` (to merge it with other sources).

    `budget` (bytes; None: no limit): the file is loaded in memory when that fits, else streamed with its
    args on disk, else refused before most of it is read (trntui/memory.py)."""
    path = Path(path)
    meta = builder.meta
    if budget is not None:
        from trntui.memory import FULL_LOAD_FACTOR, json_size

        try:
            size = json_size(path)
        except OSError:
            size = 0  # read_bytes says what is wrong with the file
        if size * FULL_LOAD_FACTOR > budget:
            _load_streamed(path, builder, instance=instance, budget=budget, size=size)
            return
    if _mappable(path) and _load_mapped(path, builder, instance=instance):
        return
    report("reading", 0, 0)
    data, notes = read_bytes(path)
    meta.notes.extend(f"{path.name}: {n}" for n in notes)
    meta.sources.append(str(path))
    with _decoding():
        chunked = _decode_chunked(data)
        if chunked is not None:
            del data
            parts, top_meta = chunked
            del chunked
            _add_parts(parts, top_meta, builder, path=path, instance=instance)
            return
        events, top_meta = decode_trace(data, path, meta)
        del data
        if not events:
            raise LoadError(path, "no events in the trace" + _skipped_detail(meta))
        add_events(events, top_meta, builder, path=path, instance=instance)


@contextmanager
def _decoding(mapped: Any = None) -> Iterator[None]:
    """Around a decode and merge: the cyclic GC off (millions of small objects, none cyclic: it would rescan
    them on every collection it triggers; measured: a 2M-event load took 2-3x longer), and the memory map of
    the file, if any, closed at the end."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()
        if mapped is not None:
            try:
                mapped.close()
            except BufferError:  # a view is still alive (an exception's frame): the map closes when it goes
                pass


_MAP_MIN_BYTES = 32 << 20
"""Plain (not gzip) traces this big are decoded straight from a memory map of the file (`_load_mapped`)."""


def _mappable(path: Path) -> bool:
    try:
        if path.stat().st_size < _MAP_MIN_BYTES:
            return False
        with open(path, "rb") as f:
            return f.read(2) != b"\x1f\x8b"
    except OSError:
        return False  # read_bytes says what is wrong with the file


def _load_mapped(path: Path, builder: ProfileBuilder, *, instance: str) -> bool:
    """Decode a big plain trace from a read-only memory map: the file is never copied into memory, and the
    pages of decoded pieces are given back as the decode goes (measured on the 2M trace: ~10% faster and
    ~100 MB less than reading it into memory first). False when the file needs the whole-file path (damaged or
    unusual JSON), which the caller then takes."""
    from trntui.loaders.bigfile import map_trace

    report("reading", 0, 0)
    data, _notes = map_trace(path)
    with _decoding(data):
        chunked = _decode_chunked(data, _Stream(path, data))
        if chunked is None:
            return False
        builder.meta.sources.append(str(path))
        parts, top_meta = chunked
        del chunked
        _add_parts(parts, top_meta, builder, path=path, instance=instance)
        return True


class _Stream:
    """A load decoding a memory-mapped file: drops the decoded pages of the map and, for a streamed load under
    a budget, spills each chunk's args and stops as soon as the projected memory exceeds the budget."""

    def __init__(self, path: Path, data: Any, spill: Any = None, budget: int | None = None) -> None:
        self.path, self.data, self.spill, self.budget = path, data, spill, budget
        self.events = 0
        self.needed = 0
        self.projected = 0

    def after_chunk(self, part: _Part, consumed: int) -> None:
        """One process: the chunk ending at byte `consumed` is decoded."""
        if self.spill is not None:
            part.x.args = self.spill.put(part.x.args)
        self.events += part.n
        self._drop(0, consumed)
        self._check(self.events, consumed)

    def after_piece(self, part: _Part, a: int, e: int, claims: _Claims) -> None:
        """Two processes: the piece [a, e) is decoded; spill space and the counters are shared via `claims`."""
        if self.spill is not None:
            part.x.args = self.spill.put(part.x.args, claims.locked)
        self._drop(a, e)
        if self.budget is None:
            return
        with claims.locked():
            claims.view[3] += part.n
            claims.view[4] += e - a
            events, consumed = claims.view[3:5].tolist()
        try:
            self._check(events, consumed)
        except LoadError:
            claims.view[5], claims.view[6] = self.needed, self.projected
            claims.fail(_Claims.OVER_BUDGET)
            raise

    def _drop(self, a: int, e: int) -> None:
        """Give back the pages of [a, e) of the mapped file (they are re-read from disk if ever touched)."""
        page = mmap.PAGESIZE
        a = -(-a // page) * page
        e -= e % page
        if e > a and isinstance(self.data, mmap.mmap) and hasattr(self.data, "madvise"):
            self.data.madvise(mmap.MADV_DONTNEED, a, e - a)

    def _check(self, events: int, consumed: int, final: bool = False) -> None:
        """Refuse the load when its projected peak exceeds the budget: during the decode only when clearly over
        (the bytes per event differ along a trace, so an early projection can be off by a few %), at the end,
        when the count is exact, as soon as it is over (the peak, at the merge, is still ahead)."""
        from trntui.memory import STREAMED_BYTES_PER_EVENT, STREAMED_FIXED_BYTES

        if self.budget is None:
            return
        # the peak is the merge after the decode, in this process alone (a forked decoder has exited by then;
        # during the decode both hold less: ~100 bytes per event decoded so far, plus one piece in the child)
        self.projected = int(events * len(self.data) / max(consumed, 1))
        self.needed = int(STREAMED_FIXED_BYTES + self.projected * STREAMED_BYTES_PER_EVENT)
        if self.needed > self.budget * (1.0 if final else 1.25):
            raise self.over(self.needed, self.projected)

    def finish(self, events: int) -> None:
        """The decode is done: the exact check (see `_check`)."""
        self._check(events, len(self.data), final=True)

    def over(self, needed: int, events: int) -> LoadError:
        from trntui.memory import over_budget

        return over_budget(self.path, needed, self.budget, f"even streamed, this trace (about {events / 1e6:,.1f}M events)")


def _load_streamed(path: Path, builder: ProfileBuilder, *, instance: str, budget: int, size: int) -> None:
    """Load `path` mapped and chunk by chunk, args spilled to disk (see trntui/memory.py)."""
    from trntui.loaders.bigfile import ArgsSpill, map_trace
    from trntui.memory import FULL_LOAD_FACTOR, fmt, over_budget

    meta = builder.meta
    report("reading", 0, 0)
    data, notes = map_trace(path)
    meta.notes.extend(f"{path.name}: {n}" for n in notes)
    meta.sources.append(str(path))
    meta.notes.append(f"{path.name}: streamed to stay within the memory budget of {fmt(budget)} (args read from disk)")
    spill = ArgsSpill()
    with _decoding(data):
        stream = _Stream(path, data, spill, budget)
        chunked = _decode_chunked(data, stream)
        if chunked is None:
            why = "repairing this damaged file (not plain valid JSON, so it cannot be streamed)"
            raise over_budget(path, int(size * FULL_LOAD_FACTOR), budget, why)
        stream.finish(sum(p.n for p in chunked[0]))
        parts, top_meta = chunked
        del chunked
        _add_parts(parts, top_meta, builder, path=path, instance=instance, spill=spill)


def _skipped_detail(meta: ProfileMeta) -> str:
    if not meta.skipped:
        return ""
    return " (skipped: " + ", ".join(f"{v} {k}" for k, v in meta.skipped.items()) + ")"


def add_events(
    events: list[Ev], top_meta: dict[str, Any], builder: ProfileBuilder, *, path: Path, instance: str = ""
) -> None:
    """Convert decoded chrome events into builder batches (events, lanes, flows) and fill the metadata."""
    _add_parts([_part_of(events)], top_meta, builder, path=path, instance=instance)


class _Part:
    """Columns of one chunk of decoded events (no builder state touched: interning happens at merge time).

    String columns are kept as (first-occurrence uniques, local codes), pid/tid as int64 arrays or, when a
    value is not an int, the plain values; merging the parts in order reproduces exactly what one pass over
    all events gives (same interning order, same whole-column conversion rules)."""

    __slots__ = ("be_events", "flows", "m_events", "n", "n_be", "n_m", "n_sft", "n_x", "x")


class _XCols:
    __slots__ = ("args", "cat", "dur", "kinds", "links", "m", "name", "pid", "tid", "ts")


class _FCols:
    __slots__ = ("cat", "keys", "n", "ph", "pid", "tid", "ts")


def _ids_part(values: list[Any]) -> Any:
    """int64 array, or (first-occurrence uniques, codes) when some value is not an int."""
    try:
        return np.fromiter(values, np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return _strings_part(values)


def _strings_part(values: list[str]) -> tuple[list[str], np.ndarray]:
    table = {v: k for k, v in enumerate(dict.fromkeys(values))}
    return list(table), np.fromiter(map(table.__getitem__, values), np.int32, count=len(values))


def _own_args(evs: list[Ev]) -> list[Ev]:
    """Events kept past their chunk: their raw args copied out of the chunk's buffer."""
    for ev in evs:
        if ev.args is not None:
            ev.args = msgspec.Raw(bytes(ev.args))
    return evs


def _x_cols(sel: list[Ev], sel_ph: np.ndarray) -> _XCols:
    m = len(sel)
    x = _XCols()
    x.m = m
    x.ts = np.fromiter(map(attrgetter("ts"), sel), np.float64, count=m)
    x.dur = np.fromiter(map(attrgetter("dur"), sel), np.float64, count=m)
    x.kinds = np.zeros(m, np.int8)
    x.kinds[(sel_ph == _PH["i"]) | (sel_ph == _PH["I"])] = EventKind.INSTANT
    x.pid = _ids_part(list(map(attrgetter("pid"), sel)))
    x.tid = _ids_part(list(map(attrgetter("tid"), sel)))
    x.cat = _strings_part(list(map(attrgetter("cat"), sel)))
    x.name = _strings_part(list(map(attrgetter("name"), sel)))
    args = list(map(attrgetter("args"), sel))
    x.links = _link_columns(args, None, fast_only=True)
    x.args = ArgsStore.from_raw(args)
    return x


def _f_cols(flows: list[Ev], fph: np.ndarray) -> _FCols:
    nf = len(flows)
    f = _FCols()
    f.n = nf
    f.ts = np.fromiter(map(attrgetter("ts"), flows), np.float64, count=nf)
    f.pid = _ids_part(list(map(attrgetter("pid"), flows)))
    f.tid = _ids_part(list(map(attrgetter("tid"), flows)))
    ids = list(map(attrgetter("id"), flows))
    try:  # fast path: int ids (what _to_id gives for them, vectorised; per value, so per chunk is exact)
        keys = np.fromiter(ids, np.int64, count=nf)
        keys[(keys <= -(2**62)) | (keys >= 2**62)] = NO_ID
    except (TypeError, ValueError, OverflowError):
        id_table = {v: _to_id(v) for v in dict.fromkeys(ids)}
        keys = np.fromiter(map(id_table.__getitem__, ids), np.int64, count=nf)
    f.keys = keys
    f.cat = _strings_part(list(map(attrgetter("cat"), flows)))
    f.ph = fph
    return f


def _part_of(events: list[Ev]) -> _Part:
    n = len(events)
    ph = np.fromiter(map(_PH.__getitem__, map(attrgetter("ph"), events)), np.int8, count=n)
    p = _Part()
    p.n = n
    is_m = ph == _PH["M"]
    p.m_events = _own_args([events[k] for k in np.nonzero(is_m)[0].tolist()])
    p.n_m = len(p.m_events)
    keep = np.nonzero((ph == _PH["X"]) | (ph == _PH["i"]) | (ph == _PH["I"]))[0]
    p.n_x = len(keep)
    sel = events if len(keep) == n else [events[k] for k in keep.tolist()]
    p.x = _x_cols(sel, ph[keep])
    del sel
    p.be_events = _own_args([events[k] for k in np.nonzero((ph == _PH["B"]) | (ph == _PH["E"]))[0].tolist()])
    p.n_be = len(p.be_events)
    p.n_sft = int(((ph == _PH["s"]) | (ph == _PH["f"]) | (ph == _PH["t"])).sum())
    flow_idx = np.nonzero((ph == _PH["s"]) | (ph == _PH["f"]))[0]
    p.flows = _f_cols([events[k] for k in flow_idx.tolist()], ph[flow_idx]) if len(flow_idx) else None
    return p


def _merge_ids(parts: list[Any], keep: np.ndarray | None, idmap: _IdMap) -> np.ndarray:
    """One pid/tid column from per-part values, as `idmap` over the whole (kept) column would give it:
    all ints as they are, else every distinct value through `idmap.one` in first-occurrence order."""
    if all(isinstance(v, np.ndarray) for v in parts):
        col = np.concatenate(parts) if parts else np.empty(0, np.int64)
        return col if keep is None else col[keep]
    if keep is not None:
        values: list[Any] = []
        for v in parts:
            values.extend(v.tolist() if isinstance(v, np.ndarray) else map(v[0].__getitem__, v[1].tolist()))
        return idmap(list(compress(values, keep.tolist())))
    table: dict[Any, int] = {}
    out = []
    for v in parts:
        if isinstance(v, np.ndarray):
            u, first, inv = np.unique(v, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")
            rank = np.empty(len(u), np.int64)
            rank[order] = np.arange(len(u))
            uniq, codes = u[order].tolist(), rank[inv.reshape(-1)]
        else:
            uniq, codes = v
        for x in uniq:
            if x not in table:
                table[x] = idmap.one(x)
        out.append(np.fromiter(map(table.__getitem__, uniq), np.int64, count=len(uniq))[codes])
    return np.concatenate(out) if out else np.empty(0, np.int64)


def _merge_strings(parts: list[tuple[list[str], np.ndarray]], keep: np.ndarray | None, intern: Any, dtype: Any) -> np.ndarray:
    """Interned ids of a string column from per-part (uniques, codes), interned in first-occurrence order."""
    if keep is None:
        out = [np.fromiter(map(intern, uniq), dtype, count=len(uniq))[codes] for uniq, codes in parts]
        return np.concatenate(out) if out else np.empty(0, dtype)
    values: list[str] = []
    for uniq, codes in parts:
        values.extend(map(uniq.__getitem__, codes.tolist()))
    return _intern_column(list(compress(values, keep.tolist())), intern, dtype)


def _add_parts(
    parts: list[_Part], top_meta: dict[str, Any], builder: ProfileBuilder, *, path: Path, instance: str = "", spill: Any = None
) -> None:
    """Convert the columns of decoded chrome events into builder batches (events, lanes, flows).
    `spill` (a streamed load): the parts' args are in this `ArgsSpill`, and so will the profile's be."""
    report("merging", 0, 0)
    meta = builder.meta
    meta.trace_meta.update({k: v for k, v in top_meta.items() if k != "traceEvents"})
    base = top_meta.get("baseTimeNanoseconds") or 0
    if not isinstance(base, int) or not 0 <= base < _MAX_NS:
        meta.notes.append("baseTimeNanoseconds is not a usable clock offset; ignored")
        base = 0
    meta.base_ns = base
    if not instance:
        host = top_meta.get("host_name")
        instance = str(host) if isinstance(host, str) else ""

    n = sum(p.n for p in parts)
    idmap = _IdMap()

    # --- metadata (M) events: process/thread names and sort order --------------------------------
    process_names: dict[int, str] = {}
    process_labels: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    process_sort: dict[int, int] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    interesting = {"process_name", "thread_name", "process_labels", "process_sort_index", "thread_sort_index"}
    for ev in (ev for p in parts for ev in p.m_events):
        if ev.name not in interesting or ev.args is None:
            continue
        try:
            a = _any_decoder.decode(ev.args)
        except msgspec.DecodeError:
            continue
        if not isinstance(a, dict):
            continue
        pid = idmap.one(ev.pid)
        if ev.name == "process_name":
            process_names[pid] = str(a.get("name", ""))
        elif ev.name == "process_labels":
            process_labels[pid] = str(a.get("labels", ""))
        elif ev.name == "thread_name":
            thread_names[(pid, idmap.one(ev.tid))] = str(a.get("name", ""))
        elif ev.name == "process_sort_index":
            process_sort[pid] = _to_id(a.get("sort_index"))
        elif ev.name == "thread_sort_index":
            thread_sort[(pid, idmap.one(ev.tid))] = _to_id(a.get("sort_index"))

    # --- interval events: X, i, and B/E pairs -----------------------------------------------------
    xs = [p.x for p in parts]
    be_events = [ev for p in parts for ev in p.be_events]
    if be_events:
        paired = _pair_begin_end(be_events, meta)
        xs.append(_x_cols(paired, np.full(len(paired), _PH["X"], np.int8)))
        del paired
    del be_events
    n_x = sum(p.n_x for p in parts)
    other = n - sum(p.n_m for p in parts) - n_x - sum(p.n_be for p in parts) - sum(p.n_sft for p in parts)
    if other:
        meta.skip("events of unsupported phases (counters, async, ...)", other)

    m = sum(x.m for x in xs)
    ts = np.concatenate([x.ts for x in xs])
    dur = np.concatenate([x.dur for x in xs])
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isfinite(ts) | ~np.isfinite(dur)
        # out of the int64 ns clock (corrupted values like 1e300): would overflow the columns
        bad |= (np.abs(ts * 1000.0 + base) >= _MAX_NS) | (np.abs((ts + np.maximum(dur, 0.0)) * 1000.0 + base) >= _MAX_NS)
    neg = dur < 0
    if bad.any() or neg.any():
        meta.skip("events with non-finite or out-of-range timestamps", int(bad.sum()))
        if neg.any():
            meta.notes.append(f"{int(neg.sum())} events with negative duration shown as instants")
        dur = np.where(neg | bad, 0.0, dur)
        ts = np.where(bad, 0.0, ts)
    kinds = np.concatenate([x.kinds for x in xs])
    start = to_ns(ts) + base
    end = start + to_ns(dur)
    del ts, dur
    keep_ok: np.ndarray | None = None
    if bad.any():
        keep_ok = ~bad
        start, end, kinds = start[keep_ok], end[keep_ok], kinds[keep_ok]
        m = int(keep_ok.sum())
    if m and int(end.max()) - int(start.min()) > _SUSPECT_SPAN_NS:
        days = (int(end.max()) - int(start.min())) / 86_400e9
        meta.notes.append(f"events span {days:,.1f} days: timestamps from different clocks (mixed ts regimes) "
                          "or corrupted values (e.g. an absurd Record Window End)")
    pid = _merge_ids([x.pid for x in xs], keep_ok, idmap)
    tid = _merge_ids([x.tid for x in xs], keep_ok, idmap)
    cat_ids = _merge_strings([x.cat for x in xs], keep_ok, builder.intern_cat, np.int16)
    name_ids = _merge_strings([x.name for x in xs], keep_ok, builder.intern_name, np.int32)
    args = spill.concat([x.args for x in xs]) if spill is not None else ArgsStore.concat([x.args for x in xs])
    if keep_ok is not None:
        args = args.permuted(np.nonzero(keep_ok)[0])
    if all(x.links is not None for x in xs):
        ext = np.concatenate([x.links[0] for x in xs])
        corr = np.concatenate([x.links[1] for x in xs])
        if keep_ok is not None:
            ext, corr = ext[keep_ok], corr[keep_ok]
    else:  # a value that is not an int somewhere: the exact rules over the whole column
        ext, corr = _link_columns(list(args), meta)
    for x in xs:
        x.args = x.links = None
    del xs

    # --- lanes: one per (tier, pid, tid/stream) ----------------------------------------------------
    device_pids = {p for p, lab in process_labels.items() if lab and not lab.upper().startswith("CPU")}
    cat_kind = [C.lane_kind(c) for c in builder.cats]
    lane_ids = np.empty(m, np.int32)
    if m:
        # unique (cat, pid, tid) rows in lexicographic order, via ranks packed into one int64 key
        # (same order and ids as np.unique(axis=0), without its slow row-wise sort)
        up, pinv = np.unique(pid, return_inverse=True)
        ut, tinv = np.unique(tid, return_inverse=True)
        packed = (cat_ids.astype(np.int64) * len(up) + pinv.reshape(-1)) * len(ut) + tinv.reshape(-1)
        ukey, inverse = np.unique(packed, return_inverse=True)
        inverse = inverse.reshape(-1)
        uniq = np.stack([ukey // (len(up) * len(ut)), up[(ukey // len(ut)) % len(up)], ut[ukey % len(ut)]], axis=1)
        lane_for_combo = np.empty(len(uniq), np.int32)
        for j, (cid, p, t) in enumerate(uniq.tolist()):
            tier, subsystem, prefix = cat_kind[cid]
            ident = f"{prefix}:{t if t >= -999 else idmap.label(t)}"
            is_device_lane = tier in (Tier.HARDWARE, Tier.DEVICE) and builder.cats[cid] != C.PRIVATEUSE1_DRIVER
            owner_label = process_labels.get(p, "")
            if p < -999:
                subsystem, ident = "markers", str(idmap.label(p) or "")
            lane_for_combo[j] = builder.lane(
                tier,
                subsystem,
                ident,
                int(p),
                int(t),
                instance=instance,
                process_name=owner_label if is_device_lane and owner_label else process_names.get(p, ""),
                thread_name=thread_names.get((p, t), ""),
                sort_index=process_sort.get(p, 0) if p in process_sort else (1 << 24 if p in device_pids else 0),
            )
        lane_ids = lane_for_combo[inverse]

    # (start, longest first): the profile's final order, computed once for the builder and the flow binding
    time_order = np.lexsort((start - end, start)) if m else np.zeros(0, np.int64)
    first = builder.add_events(
        start=start, end=end, lane=lane_ids, name=name_ids, cat=cat_ids, kind=kinds, ext=ext, corr=corr, args_raw=args,
        time_order=time_order,
    )

    # --- flows: bind each s/f half to the slice it belongs to ---------------------------------------
    fparts = [p.flows for p in parts if p.flows is not None]
    if fparts:
        report("binding flows", 0, 0)
        _add_flows(fparts, start, end, pid, tid, kinds, first, builder, idmap, base, time_order)

    # --- device kind and backend label --------------------------------------------------------------
    _detect_device(builder, top_meta, meta)


class _Codes(dict):
    def __missing__(self, key: Any) -> int:
        return 0


_PH = _Codes({"X": 1, "i": 2, "I": 3, "B": 4, "E": 5, "M": 6, "s": 7, "f": 8, "t": 9})
"""Phase → small int code (0 for any other phase), so phase tests are numpy comparisons."""


def _intern_column(values: list[str], intern: Any, dtype: Any) -> np.ndarray:
    """Interned ids of a string column: `intern` runs once per distinct value, in first-occurrence order."""
    table = {v: intern(v) for v in dict.fromkeys(values)}
    return np.fromiter(map(table.__getitem__, values), dtype, count=len(values))


def _pair_begin_end(events: list[Ev], meta: ProfileMeta) -> list[Ev]:
    """Turn B/E pairs into X events per (pid, tid) with a stack; unmatched halves are counted."""
    out: list[Ev] = []
    stacks: dict[tuple[Any, Any], list[Ev]] = {}
    unmatched = 0
    for ev in sorted(events, key=lambda e: e.ts):
        key = (ev.pid, ev.tid)
        if ev.ph == "B":
            stacks.setdefault(key, []).append(ev)
        else:
            stack = stacks.get(key)
            if not stack:
                unmatched += 1
                continue
            b = stack.pop()
            out.append(
                Ev(ph="X", name=b.name or ev.name, cat=b.cat or ev.cat, ts=b.ts, dur=ev.ts - b.ts, pid=b.pid, tid=b.tid, args=b.args)
            )
    unmatched += sum(len(s) for s in stacks.values())
    if unmatched:
        meta.skip("B/E events without their other half", unmatched)
    return out


def _add_flows(
    fparts: list[_FCols],
    start: np.ndarray,
    end: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    kinds: np.ndarray,
    first: int,
    builder: ProfileBuilder,
    idmap: _IdMap,
    base: int,
    time_order: np.ndarray,
) -> None:
    """Attach flow halves to slices on the same thread: the slice starting at the flow's ts, else the
    innermost one containing it. Unpaired halves are kept in the table but reported."""
    meta = builder.meta
    nf = sum(f.n for f in fparts)
    fts_us = np.concatenate([f.ts for f in fparts])
    with np.errstate(invalid="ignore", over="ignore"):
        fbad = ~np.isfinite(fts_us) | (np.abs(fts_us * 1000.0 + base) >= _MAX_NS)
    fts = to_ns(np.where(fbad, 0.0, fts_us)) + base
    fpid = _merge_ids([f.pid for f in fparts], None, idmap)
    ftid = _merge_ids([f.tid for f in fparts], None, idmap)
    keys = np.concatenate([f.keys for f in fparts])
    fcat = _merge_strings([f.cat for f in fparts], None, lambda c: builder.intern_cat(C.FLOW_ALIASES.get(c, c or "flow")), np.int16)
    fph = np.concatenate([f.ph for f in fparts])
    role = np.where(fph == _PH["s"], Flows.START, Flows.FINISH).astype(np.int8)
    bound = np.full(nf, -1, np.int64)

    intervals = kinds == EventKind.COMPLETE
    thread_key = pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)
    f_thread = fpid.astype(np.int64) * (1 << 32) + (ftid.astype(np.int64) & 0xFFFFFFFF)
    ev_idx = time_order[intervals[time_order]]  # the slices, by (start, longest first)
    if len(ev_idx):
        order = ev_idx[np.argsort(thread_key[ev_idx], kind="stable")]  # ... by thread: one stable sort
        tk = thread_key[order]
        uniq, first_pos = np.unique(tk, return_index=True)
        bounds = list(first_pos.tolist()) + [len(order)]
        pos_of = {int(u): (bounds[j], bounds[j + 1]) for j, u in enumerate(uniq.tolist())}
        for t in np.unique(f_thread).tolist():
            span = pos_of.get(int(t))
            if span is None:
                continue
            a, b = span
            o = order[a:b]
            s = start[o]
            e = end[o]
            fi = np.nonzero(f_thread == t)[0]
            q = fts[fi]
            # the innermost slice with start <= ts < end (or starting exactly at ts): walk back from the
            # last slice starting at or before ts, at most 256 slices
            k = np.searchsorted(s, q, side="right") - 1
            pos = walk_back(k, lambda a, c: (s[c] == q[a]) | (e[c] > q[a]), 256)
            hit = pos >= 0
            bound[fi[hit]] = o[pos[hit]]
    bound[fbad] = -1
    ok = bound >= 0
    if (~ok).any():
        meta.skip("flow events not inside any slice", int((~ok).sum()))
    # pairing statistics
    orphans = _count_one_sided(fcat[ok], keys[ok], role[ok])
    if orphans:
        meta.notes.append(f"{orphans} flow(s) with only one half (ignored for linking, as torch and HTA do)")
    builder.add_flows(keys[ok], bound[ok] + first, fcat[ok], role[ok])


def _count_one_sided(fcat: np.ndarray, keys: np.ndarray, role: np.ndarray) -> int:
    """Number of (cat, key) flows whose bound halves all have the same role."""
    if not len(fcat):
        return 0
    o = np.lexsort((role, keys, fcat))
    fc, kk, rr = fcat[o], keys[o], role[o]
    new_pair = np.ones(len(fc), bool)
    new_pair[1:] = (fc[1:] != fc[:-1]) | (kk[1:] != kk[:-1])
    new_role = new_pair.copy()
    new_role[1:] |= rr[1:] != rr[:-1]
    group = np.cumsum(new_pair) - 1
    return int((np.bincount(group[new_role]) == 1).sum())


def _detect_device(builder: ProfileBuilder, top_meta: dict[str, Any], meta: ProfileMeta) -> None:
    cats = set(builder.cats)
    props = top_meta.get("deviceProperties") or []
    names = set(builder.names)
    rocm = any(isinstance(p, dict) and ("maxSharedMemoryPerMultiProcessor" in p or p.get("warpSize") == 64) for p in props)
    rocm = rocm or any(n.startswith("hip") for n in names if len(n) < 40)
    if cats & {C.PRIVATEUSE1_DISPATCH, C.PRIVATEUSE1_DRIVER}:
        kind, backend = "neuron", "NEURON"
    elif cats & {"mtia_runtime", "mtia_ccp_events", "mtia_insight"}:
        kind, backend = "mtia", "MTIA"
    elif cats & {"xpu_runtime", "xpu_driver", "xpu_scope_profiler"}:
        kind, backend = "xpu", "XPU"
    elif cats & (C.DEVICE_TYPED | {"cuda_runtime", "cuda_driver", "Runtime"}):
        kind, backend = ("rocm" if rocm else "cuda"), "CUDA"
    else:
        kind, backend = "cpu", ""
    if meta.device_kind in ("cpu", "") or kind != "cpu":
        meta.device_kind = kind
        meta.backend = meta.backend or backend


def iter_chrome_files(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if p.name.endswith((".json", ".json.gz"))]
