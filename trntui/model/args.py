"""Raw per-event `args` JSON kept compactly: one byte blob plus start/end offsets per event.

A fresh load holds each event's args as a `msgspec.Raw` slice of the whole file buffer, which keeps the
file's bytes (and one Python object per event) alive for the profile's lifetime. `ArgsStore` copies just the
args bytes into one blob (a fraction of the file), so the file buffer can be freed; the parsed-profile cache
stores the same blob. A big plain trace's compiled load copies nothing: its blob is the file itself (`FileBlob`,
read with `pread` when asked). `store[i]` is the event's args bytes, or None when it has none.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from trntui.errors import LoadError

_decoders: list[Any] = []
"""msgspec's JSON decoder, made on first use: a cached summary never parses args, and importing msgspec (with
its decimal/uuid/socket imports) was ~6% of that whole process."""


def decode_args(raw: Any) -> dict[str, Any]:
    """Parse one event's raw `args` (kept as raw JSON bytes at load time) into a dict; {} if unreadable."""
    if not _decoders:
        import msgspec

        _decoders.append(msgspec.json.Decoder())
    try:
        value = _decoders[0].decode(raw)
    except (ValueError, TypeError, RecursionError):  # msgspec.DecodeError is a ValueError
        try:
            value = json.loads(bytes(raw).decode("utf-8", "replace"), strict=False)
        except (ValueError, TypeError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {"value": value}


class Blobs:
    """Several byte blobs addressed as one (global offsets), so joining chunks' args never copies them all.

    Every event's args lie inside one blob; `blobs[a:b]` finds it by binary search."""

    def __init__(self, blobs: Sequence[Any]) -> None:
        self.blobs = [b for b in blobs if len(b)]
        self.bounds = np.zeros(len(self.blobs) + 1, np.int64)
        np.cumsum([len(b) for b in self.blobs], out=self.bounds[1:])

    def __len__(self) -> int:
        return int(self.bounds[-1])

    def __getitem__(self, s: slice) -> Any:
        k = int(np.searchsorted(self.bounds, s.start, side="right")) - 1
        base = int(self.bounds[k])
        return self.blobs[k][s.start - base : s.stop - base]

    def write_to(self, out: Any) -> None:
        """Copy the bytes, in order, into a writable buffer of `len(self)` bytes (e.g. a memory-mapped array)."""
        for k, b in enumerate(self.blobs):
            a = int(self.bounds[k])
            out[a : a + len(b)] = np.frombuffer(b, np.uint8) if not isinstance(b, np.ndarray) else b


class FileBlob:
    """Args bytes left in the trace file they are part of: a big plain trace's compiled load records each event's
    args as its byte range of the file and copies nothing (kineto/load.py). `blob[a:b]` reads the range with
    `pread` from a descriptor held open, not from a memory map, so a file truncated or rewritten meanwhile gives
    a `LoadError` naming it, never SIGBUS; each read first checks that the file is still the one loaded (size and
    modification time: a file replaced under its name is still read from the descriptor, unchanged)."""

    def __init__(self, path: Any, fd: int) -> None:
        """Takes `fd` (a descriptor open on the trace for reading): closed when the blob goes."""
        self._closer = weakref.finalize(self, os.close, fd)
        st = os.fstat(fd)
        self.path = str(path)
        self.fd = fd
        self.size = int(st.st_size)
        self.identity = (st.st_size, st.st_mtime_ns)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, s: slice) -> bytes:
        return self.read(int(s.start), int(s.stop))

    def check(self) -> None:
        """A `LoadError` (`changed`) when the file is no longer the one loaded (size, modification time)."""
        try:
            st = os.fstat(self.fd)
        except OSError as exc:
            raise LoadError(self.path, f"cannot read its events' args: {exc.strerror or exc}") from None
        if (st.st_size, st.st_mtime_ns) != self.identity:
            raise self.changed()

    def _check_range(self, e: int) -> None:
        """`check`, and bytes up to `e` within the file as loaded."""
        self.check()
        if e > self.size:
            raise self.changed()

    def changed(self) -> LoadError:
        return LoadError(self.path, "changed on disk since it was loaded (its events' args are read from it "
                                    "when they are shown): load it again")

    def read(self, a: int, e: int) -> bytes:
        """Bytes [a, e) of the file (a LoadError when the file is no longer the one loaded)."""
        if e <= a:
            return b""
        self._check_range(e)
        try:
            got = os.pread(self.fd, e - a, a)
            while len(got) < e - a:  # (a regular file gives the whole range at once unless it shrank)
                more = os.pread(self.fd, e - a - len(got), a + len(got))
                if not more:
                    raise self.changed()
                got += more
        except OSError as exc:
            raise LoadError(self.path, f"cannot read its events' args: {exc.strerror or exc}") from None
        return got

    def read_into(self, buf: bytearray, a: int, e: int, at: int = 0) -> memoryview:
        """`read(a, e)` into `buf` from its offset `at` (grown when too small; no new buffer per read): a view of
        those e - a bytes of it."""
        n = e - a
        if len(buf) < at + n:
            buf.extend(bytes(at + n - len(buf)))
        view = memoryview(buf)[at : at + n]
        self._check_range(e)
        try:
            got = 0
            while got < n:
                k = os.preadv(self.fd, [view[got:]], a + got)
                if k <= 0:
                    raise self.changed()
                got += k
        except OSError as exc:
            raise LoadError(self.path, f"cannot read its events' args: {exc.strerror or exc}") from None
        return view

    def __reduce__(self) -> Any:  # (a store over the file pickles its args in memory: ArgsStore.__reduce__)
        raise TypeError("a FileBlob is not pickled on its own (ArgsStore.in_memory)")


_WINDOW = 16 << 20
"""Bytes of the file read at once when many events' args are read from it (`_windows`)."""

_GAP = 64 << 10
"""Bytes between two events' args past which they are read separately (sparse events: no reading between)."""


def _spans(s: np.ndarray, e: np.ndarray) -> Iterator[tuple[int, int, int, int]]:
    """For ranges [s[k], e[k]) sorted by start: (i, j, base, end) per read of the file, [base, end) covering ranges
    i..j-1 (ranges close together read at once, at most ~`_WINDOW` bytes a read unless one range is longer)."""
    m = len(s)
    if not m:
        return
    reach = np.maximum.accumulate(e)
    breaks = np.flatnonzero(s[1:] - reach[:-1] > _GAP) + 1
    bounds = [0, *breaks.tolist(), m]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        i = lo
        while i < hi:
            j = int(np.searchsorted(reach[i:hi], int(s[i]) + _WINDOW, side="right")) + i
            j = min(max(j, i + 1), hi)
            yield i, j, int(s[i]), int(reach[j - 1])
            i = j


def _windows(blob: FileBlob, s: np.ndarray, e: np.ndarray) -> Iterator[tuple[int, int, int, memoryview]]:
    """`_spans` with the bytes of each read: (i, j, base, bytes from `base`)."""
    for i, j, base, end in _spans(s, e):
        yield i, j, base, memoryview(blob.read(base, end))


_IOV = 1024
"""Buffers per `writev` (the usual IOV_MAX)."""


def _writev_all(fd: int, views: list[memoryview]) -> None:
    """Write every byte of `views`, in order, with `writev` (a short write continued where it stopped)."""
    k = 0
    while k < len(views):
        n = os.writev(fd, views[k:] if k else views)
        while k < len(views) and n >= len(views[k]):
            n -= len(views[k])
            k += 1
        if n:
            views[k] = views[k][n:]


def _in_order(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The positions of the ranges that hold args, in the order of their starts (the file's order)."""
    has = np.flatnonzero(ends > starts)
    return has[np.argsort(starts[has], kind="stable")]


def _slices(mv: memoryview, s: np.ndarray, e: np.ndarray, base: int) -> list[memoryview]:
    """Views of `mv` (bytes from offset `base`) for the ranges [s[k], e[k])."""
    return [mv[a:b] for a, b in zip((s - base).tolist(), (e - base).tolist())]


def _file_ranges(store: "ArgsStore", idx: np.ndarray, scratch: bytearray | None = None) -> list[Any]:
    """The args of events `idx` of a store over a FileBlob, read a window at a time (`_spans`): a bytes-like
    object per event, b"" where it has none. `scratch`: the windows are read into it (grown as needed) instead of
    new buffers; the views then point into it, and are the caller's to drop before it is used again."""
    starts, ends = store.starts[idx], store.ends[idx]
    order = _in_order(starts, ends)
    s, e = starts[order], ends[order]
    views: list[Any] = []
    spans = list(_spans(s, e))
    if scratch is not None:  # room for every window first (a bytearray with views into it cannot grow)
        need = sum(end - base for _, _, base, end in spans)
        if len(scratch) < need:
            try:
                scratch.extend(bytes(need - len(scratch)))
            except BufferError:  # (the caller still holds views of its last batch: a buffer of this call's own)
                scratch = bytearray(need)
    at = 0
    for i, j, base, end in spans:
        if scratch is None:
            mv = memoryview(store.blob.read(base, end))
        else:
            mv = store.blob.read_into(scratch, base, end, at)
            at += end - base
        views.extend(_slices(mv, s[i:j], e[i:j], base))
    out = np.full(len(idx), _EMPTY, dtype=object)
    if views:
        out[order] = np.fromiter(views, dtype=object, count=len(views))  # (each view to its event's place, in C)
    return out.tolist()


_EMPTY = b""


class ArgsStore(Sequence):
    """Per-event raw args: `blob[starts[i]:ends[i]]` (empty: the event has no args)."""

    def __init__(self, blob: Any, starts: np.ndarray, ends: np.ndarray) -> None:
        self.blob = blob
        """bytes, a uint8 array (possibly memory-mapped from the cache), or `Blobs`."""
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        a, b = int(self.starts[i]), int(self.ends[i])
        if a == b:
            return None
        chunk = self.blob[a:b]
        return chunk.tobytes() if isinstance(chunk, np.ndarray) else bytes(chunk)

    def permuted(self, order: np.ndarray) -> "ArgsStore":
        """The same args in a new event order (`new[k] = old[order[k]]`), sharing the blob."""
        return ArgsStore(self.blob, self.starts[order], self.ends[order])

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (args left in their file hold none)."""
        held = 0 if isinstance(self.blob, FileBlob) else len(self.blob)
        return held + self.starts.nbytes + self.ends.nbytes

    def compacted(self) -> tuple[Iterator[Any], int, np.ndarray, np.ndarray]:
        """The args packed into one blob in memory or on disk without holding it whole: (pieces of the blob, in
        order, its length, the events' new starts and ends). Events with args are packed in the order of their
        ranges (for a store over a FileBlob: the file's order, read a window at a time)."""
        order, total, new_starts, new_ends = self._packing()
        s, e = self.starts[order], self.ends[order]
        blob = self.blob

        def pieces() -> Iterator[Any]:
            if isinstance(blob, FileBlob):
                for i, j, base, mv in _windows(blob, s, e):
                    yield b"".join(_slices(mv, s[i:j], e[i:j], base))
                return
            raws = raw_many(ArgsStore(blob, s, e), np.arange(len(s)))
            for k in range(0, len(raws), 1 << 16):
                yield b"".join(raws[k : k + (1 << 16)])

        return pieces(), total, new_starts, new_ends

    def _packing(self) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """(the events with args in the order of their ranges, the packed length, their new starts and ends)."""
        starts, ends = self.starts, self.ends
        order = _in_order(starts, ends)
        lengths = (ends[order] - starts[order]).astype(np.int64)
        offsets = np.cumsum(lengths)
        new_starts = np.zeros(len(starts), np.int64)
        new_ends = np.zeros(len(starts), np.int64)
        new_ends[order] = offsets
        new_starts[order] = offsets - lengths
        return order, int(offsets[-1]) if len(offsets) else 0, new_starts, new_ends

    def packed_length(self) -> int:
        """The length `compacted` and `write_packed` pack the args into."""
        d = self.ends - self.starts
        return int(d[d > 0].sum())

    def write_packed(self, f: Any) -> tuple[int, np.ndarray, np.ndarray]:
        """Write the args packed as `compacted` packs them to the binary file `f` (after what it holds): (their
        length, the events' new starts and ends). Args left in their file are read a window at a time into one
        reused buffer and written from it with `writev`, never joined in memory (the cache's `args_blob.npy`)."""
        if not isinstance(self.blob, FileBlob):
            pieces, total, new_starts, new_ends = self.compacted()
            for piece in pieces:
                f.write(piece)
            return total, new_starts, new_ends
        order, total, new_starts, new_ends = self._packing()
        f.flush()
        fd = f.fileno()
        s, e = self.starts[order], self.ends[order]
        from trntui.model.kernels import kernel

        k = kernel()
        if k is not None and hasattr(k, "gather_ranges"):  # (the same bytes, gathered in C: tests/test_args_in_file)
            blob = self.blob
            blob.check()
            try:
                written = k.gather_ranges(blob.fd, np.ascontiguousarray(s, np.int64), np.ascontiguousarray(e, np.int64), fd)
            except EOFError:
                raise blob.changed() from None
            blob.check()  # (not rewritten while it was read)
            return written, new_starts, new_ends
        buf = bytearray()
        for i, j, base, end in _spans(s, e):
            mv = self.blob.read_into(buf, base, end)
            views = _slices(mv, s[i:j], e[i:j], base)
            for k in range(0, len(views), _IOV):
                _writev_all(fd, views[k : k + _IOV])
            del views, mv
        return total, new_starts, new_ends

    def in_memory(self) -> "ArgsStore":
        """This store with its blob in memory: itself, or (args left in their file) the args read into one blob."""
        if not isinstance(self.blob, FileBlob):
            return self
        pieces, _total, starts, ends = self.compacted()
        return ArgsStore(b"".join(pieces), starts, ends)

    def __reduce__(self) -> Any:
        store = self.in_memory()
        return ArgsStore, (store.blob, store.starts, store.ends)

    @classmethod
    def from_raw(cls, raws: Sequence[Any]) -> "ArgsStore":
        """Pack raw args (bytes-like or None per event) into one blob."""
        if isinstance(raws, ArgsStore):
            return raws
        try:  # every event has args (the usual case): no list of substitutes
            present = raws
            lengths = np.fromiter(map(len, present), np.int64, count=len(present))
        except TypeError:  # None for events without args
            present = [r if r is not None else b"" for r in raws]
            lengths = np.fromiter(map(len, present), np.int64, count=len(present))
        offsets = np.zeros(len(present) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(b"".join(present), offsets[:-1], offsets[1:])

    @classmethod
    def concat(cls, parts: Sequence[Any]) -> "ArgsStore":
        """One store from several (stores or raw lists), in order; the blobs are shared, not copied."""
        stores = [cls.from_raw(p) for p in parts]
        if len(stores) == 1:
            return stores[0]
        if not stores:
            z = np.zeros(0, np.int64)
            return cls(b"", z, z.copy())
        files = {id(st.blob) for st in stores if isinstance(st.blob, FileBlob)}
        if len(files) == 1 and all(isinstance(st.blob, FileBlob) for st in stores):  # one file: its offsets as they are
            return cls(stores[0].blob, np.concatenate([st.starts for st in stores]),
                       np.concatenate([st.ends for st in stores]))
        if files:  # (a piece the compiled builder left, or several files: the file's args read into memory)
            stores = [st.in_memory() for st in stores]
        blobs: list[Any] = []
        total = sum(len(st) for st in stores)
        dtype = np.result_type(*(st.starts.dtype for st in stores), *(st.ends.dtype for st in stores))
        starts, ends = np.empty(total, dtype), np.empty(total, dtype)
        at = shift = 0
        for st in stores:  # offsets shifted straight into the joined columns (no shifted copy per store)
            inner = st.blob.blobs if isinstance(st.blob, Blobs) else [st.blob]
            blobs.extend(inner)
            k = len(st)
            np.add(st.starts, shift, out=starts[at : at + k])
            np.add(st.ends, shift, out=ends[at : at + k])
            at += k
            shift += len(st.blob)
        return cls(Blobs(blobs), starts, ends)


_EMPTY_ARGS = b"{}"

_BATCH = 8192
"""Events whose args `decoded_batches` reads and decodes at once."""


def decoded_batches(store: ArgsStore, idx: np.ndarray, decoder: Any) -> Iterator[tuple[list[Any], Any]]:
    """The raw args of the events `idx` (an `ArgsStore`'s), a batch at a time (`raw_many`: a window of the file at
    a time where they were left in it), each with `decoder`'s decode of the batch joined into one JSON array (one
    msgspec call), or None when the batch does not decode as a whole (an event's args damaged: the caller then
    decodes that batch event by event)."""
    for k in range(0, len(idx), _BATCH):
        raws = raw_many(store, idx[k : k + _BATCH])
        try:
            values = decoder.decode(b"[" + b",".join(raws) + b"]")
        except (ValueError, TypeError, RecursionError):  # (DecodeError and ValidationError are ValueErrors)
            values = None
        yield raws, values


def decoded_many(store: Any, idx: np.ndarray) -> Iterator[dict[str, Any]]:
    """`Profile.args(i)` for each event of `idx`, in order, a batch at a time: the batch's raw args read at once
    (`raw_many`: a window of the file at a time where they were left in it) and decoded in one msgspec call; a
    batch that does not decode as a whole is decoded event by event (`decode_args`), so each dict is the one
    `Profile.args` gives."""
    idx = np.asarray(idx, np.int64)
    if not isinstance(store, ArgsStore):
        for i in idx.tolist():
            raw = store[i] if i < len(store) else None
            yield {} if raw is None else raw if isinstance(raw, dict) else decode_args(raw)
        return
    decode_args(b"{}")  # (the decoder, made)
    for raws, values in decoded_batches(store, idx, _decoders[0]):
        for v in values if values is not None else map(decode_args, raws):
            yield v if isinstance(v, dict) else {"value": v}


def raw_many(store: Any, idx: np.ndarray, scratch: bytearray | None = None) -> list[Any]:
    """The raw args of events `idx` as bytes-like objects (memoryviews into the store's blob, no copies), `{}`
    where an event has none: ready to be joined into one JSON array and decoded in a single msgspec call.
    `store` is a profile's `args_raw` (an `ArgsStore`, or a list of raw bytes / parsed dicts). `scratch`: for args
    left in their file, the buffer they are read into (`_file_ranges`: reused by a caller that reads in batches)."""
    if isinstance(store, ArgsStore) and isinstance(store.blob, FileBlob):
        return [g if len(g) else _EMPTY_ARGS for g in _file_ranges(store, np.asarray(idx), scratch)]
    if isinstance(store, ArgsStore):
        a = store.starts[idx].tolist()
        b = store.ends[idx].tolist()
        blob = store.blob
        if isinstance(blob, Blobs):
            k = (np.searchsorted(blob.bounds, store.starts[idx], side="right") - 1).tolist()
            base = blob.bounds.tolist()
            views = [memoryview(x) if not isinstance(x, np.ndarray) else memoryview(x).cast("B") for x in blob.blobs]
            return [views[j][s - base[j] : e - base[j]] if e > s else _EMPTY_ARGS for j, s, e in zip(k, a, b)]
        mv = memoryview(blob) if not isinstance(blob, np.ndarray) else memoryview(np.ascontiguousarray(blob)).cast("B")
        return [mv[s:e] if e > s else _EMPTY_ARGS for s, e in zip(a, b)]
    out: list[Any] = []
    for i in np.asarray(idx).tolist():
        raw = store[i] if i < len(store) else None
        if raw is None:
            out.append(_EMPTY_ARGS)
        elif isinstance(raw, dict):
            import msgspec

            out.append(msgspec.json.encode(raw))
        else:
            out.append(raw)
    return out
