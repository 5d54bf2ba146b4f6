"""Memory curve per device from `[memory]` records (tb-plugin-analyses.md §8), as a `profile_memory=True`
capture writes them: allocated and reserved bytes over time, the peak, and the op that allocated at the peak.

Records come from `Profile.memory_events()` (the `[memory]` instants' `Device Type`, `Device Id`, `Addr`,
`Bytes`, `Total Allocated`, `Total Reserved`). The curve keeps records with an address, as the plugin did; the
peak the memory rule compares with the device's memory is over every record. Devices are named as the plugin
named them (`CPU`, `GPU0`); other device types (the plugin mapped them to None, which broke its view) are named
after the backend, e.g. `NEURON0`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trntui.model.profile import Profile

MEMORY_EVENT = "[memory]"


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
    skipped: int = 0
    """Memory records dropped because a value was out of range (model/memory_events.py `BYTES_MAX`)."""

    def by_device(self, name: str) -> MemoryCurve | None:
        return next((c for c in self.curves if c.device == name), None)


def device_name(dtype: int, did: int, backend: str) -> str:
    """`CPU`, `GPU0` (CUDA and HIP, as the plugin named them), else the backend: `NEURON0`, `MTIA0`, `XPU0`."""
    from trntui.model import memory_events as M

    if dtype in M.CPU_MEMORY_TYPES:
        return "CPU"
    if dtype in (M.CUDA, M.HIP):
        return f"GPU{did}"
    if dtype == M.MTIA:
        return f"MTIA{did}"
    if dtype == M.XPU:
        return f"XPU{did}"
    return f"{backend or 'DEVICE'}{did}"


def memory_curves(profile: Profile) -> MemoryReport:
    """Per device: the curve of its `[memory]` records with an address (the plugin's), the peak over every
    record, and the op at the peak. Records come from `Profile.memory_events()` (decoded once, shared with
    key_averages' memory columns)."""
    cached = profile.cache.get("overview_memory")
    if cached is not None:
        return cached
    report = MemoryReport()
    if profile.name_id(MEMORY_EVENT) < 0:
        profile.cache["overview_memory"] = report
        return report
    mem = profile.memory_events()
    report.skipped = mem.skipped
    mem = mem.take(~mem.oom)
    names = np.array([device_name(int(t), int(i), profile.meta.backend)
                      for t, i in zip(mem.device_type.tolist(), mem.device_id.tolist())], dtype=object)
    for name in sorted(set(names.tolist()), key=lambda n: (not n.startswith("GPU"), n != "CPU", n)):
        on = names == name
        sel = on & (mem.addr != 0)
        if not sel.any():
            continue
        ev = mem.event[sel]
        t = mem.ts[sel]
        a = mem.total_allocated[sel].astype(np.int64)
        r = mem.total_reserved[sel].astype(np.int64)
        k = int(np.argmax(a))
        first = np.nonzero(on)[0][0]
        curve = MemoryCurve(
            name, int(mem.device_type[first]), int(mem.device_id[first]), t, a, r,
            int(a[k]), int(r.max()), int(t[k]), int(ev[k]), records=int(sel.sum()),
            peak_all_records=int(mem.total_allocated[on].max()),
        )
        curve.peak_op, curve.peak_op_event = _op_at(profile, int(ev[k]))
        report.curves.append(curve)
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
