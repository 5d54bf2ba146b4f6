"""Which part of a device profile to analyse: the whole profile, one execution (`ExecutionInfo`), or the
execution under a `nc_exec_running` selected on the system timeline (`Target`, `target_of`), with the shift
from the export's clock to the system trace's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from trntui.model.device import Window

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport
    from trntui.model.profile import Profile

# ----------------------------------------------------------------------------------------------------------
# windows
# ----------------------------------------------------------------------------------------------------------
def _span(export: "DeviceExport") -> tuple[int, int]:
    ins = export.instructions
    lo = int(ins["start_ts"].min()) if len(ins) else 0
    hi = int(ins["end_ts"].max()) if len(ins) else 0
    for t in ("DmaPacket", "DmaPacketAggregated"):
        f = export.table(t)
        if f is not None and len(f):
            lo, hi = min(lo, int(f["start_ts"].min())), max(hi, int(f["end_ts"].max()))
    return lo, hi


def _md_int(export: "DeviceExport", key: str) -> int | None:
    v = export.metadata.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v < (1 << 62):
        return None
    return int(v)


def whole(export: "DeviceExport") -> Window:
    """The whole profile: from the first to the last of the executions (`ExecutionInfo`), the trace's own extent
    (`Metadata.first_hw_timestamp` / `last_hw_timestamp`) and the events. `Summary.total_time` (the runtime's
    on-device execution time) is not the window: with several executions it need not equal their extent, and it
    is shown beside ours (`DeviceReport.notes`)."""
    lo, hi = _span(export)
    runs = executions(export)
    if runs:
        lo, hi = min(lo, min(w.start for w in runs)), max(hi, max(w.end for w in runs))
    first, last = _md_int(export, "first_hw_timestamp"), _md_int(export, "last_hw_timestamp")
    if first is not None and last is not None and first <= lo and last >= hi and last - first <= 4 * (hi - lo) + 1_000_000:
        lo, hi = first, last  # the trace's extent on the same clock (a few ns around the events)
    return Window(lo, hi, "whole profile", whole=True)


def executions(export: "DeviceExport") -> list[Window]:
    """One window per `ExecutionInfo` row (its times are relative to the start of the profile: placed at
    `Metadata.first_hw_timestamp`, or at the first instruction); [] when the table is missing or has no times."""
    f = export.table("ExecutionInfo")
    t = export.tables.get("ExecutionInfo")
    if f is None or not len(f) or not (t.has("execution_start_ts") and t.has("execution_end_ts")):
        return []
    lo, hi = _span(export)
    base = _md_int(export, "first_hw_timestamp") or lo
    rel_s = f["execution_start_ts"].to_numpy(np.int64)
    rel_e = f["execution_end_ts"].to_numpy(np.int64)
    starts, ends = rel_s + base, rel_e + base
    if not np.any((starts < hi) & (ends > lo)) and np.any((rel_s < hi) & (rel_e > lo)):
        starts, ends = rel_s, rel_e  # already absolute (the docs say relative; tolerate either)
    neff = f["neff_name"].astype(str).tolist()
    idx = f["execution_index"].to_numpy(np.int64)
    out = [
        Window(int(s), int(e), f"execution {int(k)}" + (f" ({n})" if n else ""), int(k), n)
        for s, e, k, n in zip(starts, ends, idx, neff) if e > s  # (an execution without a timeline: pre-v6 NTFF)
    ]
    return sorted(out, key=lambda w: w.start)


def window_for(export: "DeviceExport", *, execution: int | None = None, system: tuple[int, int] | None = None,
               rank: int | None = None) -> tuple[Window, int]:
    """The window to analyse and the shift (ns) from the export's clock to the system trace's.

    `execution`: an `ExecutionInfo.execution_index`. `system`: the [start, end) of a selected `nc_exec_running`
    and `rank` its position among that core's executions: the window is the system interval itself when the
    instructions lie on the same clock, else the rank-th execution of the profile (shifted onto the system
    event). Neither: the whole profile.
    """
    runs = executions(export)
    if execution is not None:
        for w in runs:
            if w.index == execution:
                return w, 0
        from trntui.errors import TrntuiError

        have = ", ".join(str(w.index) for w in runs) or "none (no ExecutionInfo table)"
        raise TrntuiError(f"{export.path}: no execution {execution} (executions: {have})")
    if system is not None:
        s, e = system
        if runs:
            # the execution that covers the selected interval (same clock), else the one of the same rank
            def overlap(w: Window) -> int:
                return max(min(w.end, e) - max(w.start, s), 0)

            best = max(runs, key=overlap)
            if overlap(best) >= 0.9 * max(min(best.ns, e - s), 1):
                return best, s - best.start
            if rank is not None and 0 <= rank < len(runs):
                return runs[rank], s - runs[rank].start
        else:
            st = export.instructions["start_ts"].to_numpy(np.int64)
            if np.any((st >= s) & (st < e)):
                return Window(s, e, "selected execution"), 0
            return whole(export), s - _span(export)[0]
    if len(runs) == 1:
        w = runs[0]
        if w.start <= _span(export)[0] and w.end >= _span(export)[1]:
            return Window(w.start, w.end, w.label, w.index, w.neff, whole=True), 0
    return whole(export), 0


# ----------------------------------------------------------------------------------------------------------
# from a system-trace event to its device profile
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A hardware execution selected on the system timeline: which process/NeuronCore, when, and its rank
    among that core lane's executions (matched to the device profile's executions when the clocks differ)."""

    instance: str
    pid: int
    nc: int | None
    pcore: int | None
    start: int
    end: int
    rank: int
    name: str


def target_of(profile: "Profile", event: int) -> Target | None:
    """The device-profile target of a system-trace event: an `nc_exec_running`-like row on a hardware lane
    (`neuron_hw/NC<l>:<p>`), else None."""
    import re

    from trntui.model.profile import Tier

    lane = profile.lane_of(event)
    if lane.tier != Tier.HARDWARE:
        return None
    m = re.fullmatch(r"NC(\d+)(?::(\d+))?", lane.ident)
    args = profile.args(event)
    nc = int(m.group(1)) if m else _int(args.get("nc_idx", args.get("lnc_idx")))
    pcore = int(m.group(2)) if m and m.group(2) is not None else None
    if nc is None and lane.subsystem != "neuron_hw":
        return None
    same = np.nonzero((profile.lane == profile.lane[event]) & (profile.name == profile.name[event]))[0]
    order = same[np.argsort(profile.start[same], kind="stable")]
    rank = int(np.nonzero(order == event)[0][0]) if len(order) else 0
    return Target(lane.instance, lane.pid, nc, pcore, int(profile.start[event]), int(profile.end[event]), rank,
                  profile.name_of(event))


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
