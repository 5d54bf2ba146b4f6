"""The profiler's memory records (`[memory]` and `[OutOfMemory]` instants) as columns, read on first use.

torch writes one `[memory]` instant (cat `cpu_instant_event`) per allocation or free when `profile_memory=True`,
with args `Device Type` (c10 `DeviceType` code), `Device Id`, `Addr`, `Bytes` (negative for a free),
`Total Allocated` and `Total Reserved`; an allocation that fails adds an `[OutOfMemory]` instant with the same
args. Loads never look at them: `memory_events(profile)` decodes just these events' args in one batch the first
time an analysis asks (key_averages' memory columns, the memory curve), and caches the columns on the profile. A
trace without memory records pays one name lookup.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from trntui.model.args import raw_many

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"

# c10::DeviceType codes (c10/core/DeviceType.h), as torch's profiler writes them in `Device Type`
CPU, CUDA, MKLDNN, IDEEP, HIP, XPU, MTIA, PRIVATEUSE1 = 0, 1, 2, 5, 6, 12, 19, 20
CPU_MEMORY_TYPES = (CPU, MKLDNN, IDEEP)
"""Device types whose bytes torch counts as CPU memory (`_cpu_memory_usage` in torch/autograd/profiler.py)."""
DEVICE_MEMORY_TYPES = (CUDA, PRIVATEUSE1, HIP, XPU)
"""Device types whose bytes torch counts as device memory (`_device_memory_usage`); others count in neither."""


@dataclass(frozen=True)
class MemoryEvents:
    """One row per memory record, in time order (ties in event order). Byte columns are int64."""

    event: np.ndarray
    """Index of the record's event in the profile (its time is `profile.start[event]`, its thread the lane)."""
    ts: np.ndarray
    """Time of the record, absolute ns."""
    oom: np.ndarray
    """True for an `[OutOfMemory]` record (a failed allocation of `nbytes`), False for `[memory]`."""
    nbytes: np.ndarray
    """Bytes allocated (> 0) or freed (< 0); for an OOM record, the size that could not be allocated."""
    device_type: np.ndarray
    """c10 DeviceType code (0 CPU, 1 CUDA, 20 PrivateUse1, ...); -1 when the record does not say."""
    device_id: np.ndarray
    """Device index (-1 for CPU)."""
    total_allocated: np.ndarray
    """The allocator's allocated bytes on that device after this record."""
    total_reserved: np.ndarray
    """The allocator's reserved bytes on that device after this record (0 where the allocator has no pool)."""
    addr: np.ndarray
    """Address of the block (0 where absent, e.g. OOM records)."""
    skipped: int = 0
    """`[memory]` records dropped because a value is out of range (`BYTES_MAX`, a device code outside int16): a hand-edited
    trace's 10^30 bytes is not wrapped into a negative figure."""

    def __len__(self) -> int:
        return int(self.event.shape[0])

    @property
    def cpu_bytes(self) -> np.ndarray:
        """What torch adds to `cpu_memory_usage` per record: the bytes of CPU-type `[memory]` records, else 0
        (an OOM record's `nbytes()` is 0 in torch)."""
        return np.where(np.isin(self.device_type, CPU_MEMORY_TYPES) & ~self.oom, self.nbytes, 0)

    @property
    def device_bytes(self) -> np.ndarray:
        """What torch adds to `device_memory_usage` per record (CUDA, PrivateUse1, HIP, XPU `[memory]` records)."""
        return np.where(np.isin(self.device_type, DEVICE_MEMORY_TYPES) & ~self.oom, self.nbytes, 0)

    def take(self, rows: np.ndarray) -> "MemoryEvents":
        """The records at positions `rows` (a boolean mask or indexes), same order."""
        return MemoryEvents(**{f: getattr(self, f)[rows] for f in _FIELDS})


_FIELDS = ("event", "ts", "oom", "nbytes", "device_type", "device_id", "total_allocated", "total_reserved", "addr")


@functools.cache
def _batch_decoder() -> Any:
    """The typed decoder of a list of memory records' args, made on first use: key_averages imports this module,
    and a cached summary (which decodes nothing) should not pay for importing msgspec."""
    import msgspec

    class _MemArgs(msgspec.Struct, gc=False):
        device_type: int = msgspec.field(name="Device Type", default=-1)
        device_id: int = msgspec.field(name="Device Id", default=-1)
        addr: int = msgspec.field(name="Addr", default=0)
        nbytes: int = msgspec.field(name="Bytes", default=0)
        total_allocated: int = msgspec.field(name="Total Allocated", default=0)
        total_reserved: int = msgspec.field(name="Total Reserved", default=0)

    return msgspec.json.Decoder(list[_MemArgs])


class EventSource(Protocol):
    """What these records are read from: the part of `trntui.model.profile.Profile` used here (named
    structurally, so that this module, a helper the profile calls, does not import the profile back)."""

    name: np.ndarray
    start: np.ndarray
    args_raw: list[Any]
    cache: dict[str, Any]

    def name_id(self, name: str) -> int: ...

    def args(self, i: int) -> dict[str, Any]: ...


_ARGS_KEYS = (
    ("device_type", "Device Type", -1),
    ("device_id", "Device Id", -1),
    ("addr", "Addr", 0),
    ("nbytes", "Bytes", 0),
    ("total_allocated", "Total Allocated", 0),
    ("total_reserved", "Total Reserved", 0),
)
_I64 = (-(2**63), 2**63 - 1)
BYTES_MAX = 1 << 50
"""Largest byte figure a memory record may carry (a pebibyte); a larger one (or a negative total) is not a real
allocator's, and the record is dropped and counted (`MemoryEvents.skipped`)."""
_FIELDS_OF = operator.attrgetter(*(f for f, _, _ in _ARGS_KEYS))


def _as_int(v: Any, default: int) -> int:
    """Tolerant int for a hand-edited or odd trace: numbers and numeric strings; anything else the default."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v if _I64[0] <= v <= _I64[1] else (v & (2**64 - 1)) - (2**64 if v & (1 << 63) else 0)
    if isinstance(v, float) and np.isfinite(v):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return default
    return default


def _decode_args(profile: EventSource, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The six args columns of events `idx`: one typed batch decode when every record is well formed,
    else record by record, tolerantly."""
    n = len(idx)
    cols = {f: np.empty(n, np.int64) for f, _, _ in _ARGS_KEYS}
    try:
        parsed = _batch_decoder().decode(b"[" + b",".join(raw_many(profile.args_raw, idx)) + b"]")
        table = np.array(list(map(_FIELDS_OF, parsed)), dtype=np.int64).reshape(n, len(_ARGS_KEYS))
        return {f: table[:, k] for k, (f, _, _) in enumerate(_ARGS_KEYS)}
    except (OverflowError, TypeError, ValueError):  # msgspec's DecodeError/ValidationError are ValueErrors
        pass  # an odd record somewhere: read them one by one
    for k, i in enumerate(idx.tolist()):
        args = profile.args(i)
        for f, key, default in _ARGS_KEYS:
            cols[f][k] = _as_int(args.get(key, default), default)
    return cols


def memory_events(profile: EventSource) -> MemoryEvents:
    """The profile's `[memory]` and `[OutOfMemory]` records as columns (cached on the profile)."""
    cached = profile.cache.get("memory_events")
    if cached is not None:
        return cached
    ids = [k for k in (profile.name_id(MEMORY_EVENT_NAME), profile.name_id(OUT_OF_MEMORY_EVENT_NAME)) if k >= 0]
    idx = np.nonzero(np.isin(profile.name, ids))[0] if ids else np.zeros(0, np.int64)
    idx = idx.astype(np.int64)
    ts = profile.start[idx]
    order = np.argsort(ts, kind="stable")
    idx, ts = idx[order], ts[order]
    cols = _decode_args(profile, idx) if len(idx) else {f: np.zeros(0, np.int64) for f, _, _ in _ARGS_KEYS}
    bad = ((np.abs(cols["nbytes"]) > BYTES_MAX) | (cols["total_allocated"] < 0) | (cols["total_allocated"] > BYTES_MAX)
           | (cols["total_reserved"] < 0) | (cols["total_reserved"] > BYTES_MAX)
           | (cols["device_type"] < -1) | (cols["device_type"] > 32767) | (cols["device_id"] < -1) | (cols["device_id"] > 32767))
    oom_id = profile.name_id(OUT_OF_MEMORY_EVENT_NAME)
    if oom_id >= 0:  # (an [OutOfMemory] record's size is what could not be allocated: any size; torch lists it)
        bad &= profile.name[idx] != oom_id
    skipped = int(bad.sum())
    if skipped:
        keep = ~bad
        idx, ts = idx[keep], ts[keep]
        cols = {f: v[keep] for f, v in cols.items()}
    out = MemoryEvents(
        event=idx,
        ts=ts,
        oom=(profile.name[idx] == oom_id) if oom_id >= 0 else np.zeros(len(idx), bool),
        nbytes=cols["nbytes"],
        device_type=cols["device_type"].astype(np.int16),
        device_id=cols["device_id"].astype(np.int16),
        total_allocated=cols["total_allocated"],
        total_reserved=cols["total_reserved"],
        addr=cols["addr"],
        skipped=skipped,
    )
    profile.cache["memory_events"] = out
    return out
