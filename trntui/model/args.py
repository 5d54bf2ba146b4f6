"""Raw per-event `args` JSON kept compactly: one byte blob plus start/end offsets per event.

A fresh load holds each event's args as a `msgspec.Raw` slice of the whole file buffer, which keeps the
file's bytes (and one Python object per event) alive for the profile's lifetime. `ArgsStore` copies just the
args bytes into one blob (a fraction of the file), so the file buffer can be freed; the parsed-profile cache
stores the same blob. `store[i]` is the event's args bytes, or None when it has none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

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
        return len(self.blob) + self.starts.nbytes + self.ends.nbytes

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


def raw_many(store: Any, idx: np.ndarray) -> list[Any]:
    """The raw args of events `idx` as bytes-like objects (memoryviews into the store's blob, no copies), `{}`
    where an event has none: ready to be joined into one JSON array and decoded in a single msgspec call.
    `store` is a profile's `args_raw` (an `ArgsStore`, or a list of raw bytes / parsed dicts)."""
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
