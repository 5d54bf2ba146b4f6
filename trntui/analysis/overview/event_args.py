"""Batch decoding of a few `args` keys for many events (kernel launch figures, `[memory]` records).

`Profile.args(i)` parses one event's args into a dict; the overview needs a handful of keys for every kernel
(hundreds of thousands on a big trace), so the raw args of all of them are joined into one JSON array and
decoded in one msgspec call into a typed struct that skips every other key. A batch that does not decode
(a malformed args object) falls back to one event at a time, so one bad event costs only itself.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trntui.model.args import raw_many
from trntui.model.profile import Profile


DEVICE_MAX = 32767
REGISTERS_MAX = 1 << 16
SHARED_MEMORY_MAX = 1 << 40
"""Largest device index, registers per thread and shared memory a kernel record may give; a larger value is not a
real launch's and reads as unknown (the default), never an OverflowError nor a wrapped figure."""


class KernelArgs(msgspec.Struct):
    """The kernel args the plugin reads (kineto-traces.md §7). Typed, so decoding makes no Python objects for
    the numbers; an event whose values have other types is decoded alone with `LooseKernelArgs`."""

    device: int = -1
    blocks_per_sm: float = msgspec.field(default=float("nan"), name="blocks per SM")
    occupancy: float = msgspec.field(default=float("nan"), name="est. achieved occupancy %")
    grid: msgspec.Raw = msgspec.Raw(b"null")
    """Kept as its JSON text (decoding a tuple per kernel tripled the decode time); parsed per distinct value."""
    block: msgspec.Raw = msgspec.Raw(b"null")
    registers: int = msgspec.field(default=0, name="registers per thread")
    shared_memory: int = msgspec.field(default=0, name="shared memory")


class LooseKernelArgs(msgspec.Struct):
    device: Any = None
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")

    def tightened(self) -> KernelArgs:
        """The same values in the typed struct's types (defaults where a value is not usable)."""

        def num(v: Any, default: float) -> float:
            if isinstance(v, bool) or v is None:
                return default
            try:
                return float(v)
            except (TypeError, ValueError):
                return default

        def dim3(v: Any) -> msgspec.Raw:
            if isinstance(v, (list, tuple)) and len(v) == 3 and all(isinstance(x, int) for x in v):
                return msgspec.Raw(msgspec.json.encode(list(v)))
            return msgspec.Raw(b"null")

        def whole(v: Any, top: int, default: int, low: int = 0) -> int:
            x = num(v, default)  # (nan, inf, 1e30: the default, never an OverflowError)
            return int(x) if low <= x <= top else default

        nan = float("nan")
        return KernelArgs(
            whole(self.device, DEVICE_MAX, -1, -1),
            num(self.blocks_per_sm, nan),
            num(self.occupancy, nan),
            dim3(self.grid),
            dim3(self.block),
            whole(self.registers, REGISTERS_MAX, 0),
            whole(self.shared_memory, SHARED_MEMORY_MAX, 0),
        )


def raw_args(profile: Profile, idx: np.ndarray) -> list[Any]:
    """The raw args bytes (memoryviews, no copies) of events `idx`, `{}` where an event has none."""
    return raw_many(profile.args_raw, idx)


def decode_many(profile: Profile, idx: np.ndarray, struct: type, loose: type | None = None) -> list[Any]:
    """One `struct` per event of `idx` (defaults where an event's args lack a key or cannot be read). With
    `loose`, an event whose values do not have `struct`'s types is decoded as `loose` and `.tightened()`."""
    idx = np.asarray(idx, np.int64)
    if not len(idx):
        return []
    raws = raw_args(profile, idx)
    many = msgspec.json.Decoder(list[struct])
    one = msgspec.json.Decoder(struct)
    out: list[Any] = []
    chunk = 65536
    for a in range(0, len(raws), chunk):
        part = raws[a : a + chunk]
        try:
            out.extend(many.decode(b"[" + b",".join(part) + b"]"))
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
            lone = msgspec.json.Decoder(loose) if loose is not None else None
            for r in part:
                try:
                    out.append(one.decode(r))
                except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
                    try:
                        out.append(lone.decode(r).tightened() if lone is not None else struct())
                    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, AttributeError):
                        out.append(struct())
    return out
