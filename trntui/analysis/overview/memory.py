"""Memory curve per device from `[memory]` records (tb-plugin-analyses.md §8), as a `profile_memory=True`
capture writes them: allocated and reserved bytes over time, the peak, and the op that allocated at the peak.

Records come from the instants named `[memory]` (args `Device Type`, `Device Id`, `Addr`, `Bytes`,
`Total Allocated`, `Total Reserved`). The curve keeps records with an address and both totals, as the plugin
did; the peak the memory rule compares with the device's memory is over every record. Devices are named as
the plugin named them (`CPU`, `GPU0`); other device types (the plugin mapped them to None, which broke its
view) are named after the backend, e.g. `NEURON0`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import numpy as np

from trntui.analysis.overview.event_args import as_float, decode_many
from trntui.model.profile import Profile

MEMORY_EVENT = "[memory]"


class MemoryArgs(msgspec.Struct):
    device_type: object = msgspec.field(default=None, name="Device Type")
    device_id: object = msgspec.field(default=None, name="Device Id")
    addr: object = msgspec.field(default=None, name="Addr")
    bytes: object = msgspec.field(default=None, name="Bytes")
    allocated: object = msgspec.field(default=None, name="Total Allocated")
    reserved: object = msgspec.field(default=None, name="Total Reserved")


@dataclass
class MemoryCurve:
    device: str
    device_type: int
    device_id: int
    t: np.ndarray
    """Absolute ns of each record (time order)."""
    allocated: np.ndarray
    reserved: np.ndarray
    peak_allocated: int
    peak_reserved: int
    peak_t: int
    peak_event: int
    """The `[memory]` record at the peak (event index)."""
    peak_op: str = ""
    """The op that allocated at the peak (`parent (aten::empty…)` as the plugin wrote allocation helpers)."""
    peak_op_event: int = -1
    records: int = 0
    peak_all_records: int = 0
    """Peak `Total Allocated` over every record, also those without an address (the memory rule's figure)."""

    def downsample(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At most `n` points (per time bucket the record with the most allocated, so the peak survives)."""
        m = len(self.t)
        if m <= n:
            return self.t, self.allocated, self.reserved
        b = (np.arange(m) * n) // m
        o = np.lexsort((-self.allocated, b))
        first = np.ones(m, bool)
        first[1:] = b[o][1:] != b[o][:-1]
        keep = np.sort(o[first])
        return self.t[keep], self.allocated[keep], self.reserved[keep]


@dataclass
class MemoryReport:
    curves: list[MemoryCurve] = field(default_factory=list)

    def by_device(self, name: str) -> MemoryCurve | None:
        return next((c for c in self.curves if c.device == name), None)


_TYPE_NAMES = {0: "CPU", 1: "GPU"}


def device_name(dtype: int, did: int, backend: str) -> str:
    if dtype == 0:
        return "CPU"
    if dtype == 1:
        return f"GPU{did}"
    return f"{backend or 'DEVICE'}{did}"


def memory_curves(profile: Profile) -> MemoryReport:
    cached = profile.cache.get("overview_memory")
    if cached is not None:
        return cached
    nid = profile.name_id(MEMORY_EVENT)
    report = MemoryReport()
    if nid < 0:
        profile.cache["overview_memory"] = report
        return report
    idx = np.nonzero(profile.name == nid)[0]
    args = decode_many(profile, idx, MemoryArgs)
    dtype = as_float([a.device_type for a in args], -1).astype(np.int64)
    did = as_float([a.device_id for a in args], -1).astype(np.int64)
    alloc = as_float([a.allocated for a in args])
    resv = as_float([a.reserved for a in args])
    has_addr = np.fromiter((a.addr is not None for a in args), bool, count=len(args))
    t = profile.start[idx]
    curve_ok = has_addr & np.isfinite(alloc) & np.isfinite(resv)
    keys = sorted({(int(a), int(b)) for a, b in zip(dtype.tolist(), did.tolist())})
    for dt, di in keys:
        on = (dtype == dt) & (did == di)
        sel = on & curve_ok
        all_alloc = alloc[on & np.isfinite(alloc)]
        if not sel.any():
            continue
        o = np.argsort(t[sel], kind="stable")
        ev = idx[sel][o]
        a = alloc[sel][o].astype(np.int64)
        r = resv[sel][o].astype(np.int64)
        k = int(np.argmax(a))
        curve = MemoryCurve(
            device_name(dt, di, profile.meta.backend), dt, di, t[sel][o], a, r,
            int(a[k]), int(r.max()), int(t[sel][o][k]), int(ev[k]), records=int(sel.sum()),
            peak_all_records=int(all_alloc.max()) if len(all_alloc) else int(a[k]),
        )
        curve.peak_op, curve.peak_op_event = _op_at(profile, int(ev[k]))
        report.curves.append(curve)
    report.curves.sort(key=lambda c: (c.device_type != 1, c.device_type, c.device_id))
    profile.cache["overview_memory"] = report
    return report


def _op_at(profile: Profile, record: int) -> tuple[str, int]:
    """The innermost operator on the record's thread whose interval holds it; `parent (aten::empty…)` for
    allocation helpers, as the plugin's memory table names them."""
    from trntui.analysis.links import innermost_containing, thread_keys
    from trntui.analysis.overview.device import operator_node_mask

    ops = np.nonzero(operator_node_mask(profile))[0]
    if not len(ops):
        return "", -1
    keys = thread_keys(profile)
    q = np.array([record], np.int64)
    op = int(innermost_containing(profile, q, ops, keys)[0])
    if op < 0:
        return "", -1
    name = profile.name_of(op)
    if name.startswith("aten::empty"):
        parent = int(innermost_containing(profile, np.array([op], np.int64), ops, keys)[0])
        if parent >= 0:
            return f"{profile.name_of(parent)} ({name})", op
    return name, op
