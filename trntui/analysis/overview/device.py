"""Device metrics over the steps' span [S, E) (tb-plugin-analyses.md §7), per device and overall.

- GPU Utilization: merged kernel time on the device inside [S, E) / (E - S).
- Est. SM Efficiency: Σ over time of min(Σ blocks-per-SM of the running kernels, 1) / (E - S).
- Est. Achieved Occupancy: kernel-time-weighted mean of `est. achieved occupancy %` (kernels clipped to [S, E)).
- Kernel time using Tensor Cores: Tensor Core kernels' share of the kernel time launched by operators.

Kernels are keyed by `args.device` as the plugin did; when no kernel carries it (MTIA, old traces) the device
lane's pid is used instead (the plugin showed nothing then). Neuron: per logical NeuronCore, the busy share of
its `nc_exec_running` rows (the copies on the physical cores of one logical core merged, so counted once).
The overall figures: utilization and SM efficiency are the mean over devices, occupancy and Tensor Core share
are weighted by kernel time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.overview import ranges as R
from trntui.analysis.overview.cores import core_groups
from trntui.analysis.overview.kernels import TC_ELIGIBLE_OPS, KernelFacts
from trntui.model.profile import Profile



@dataclass
class DeviceMetrics:
    id: int
    label: str
    """`GPU 0`, `NC0` (a logical NeuronCore), ..."""
    kernels: int = 0
    busy_ns: int = 0
    utilization: float | None = None
    """Fraction of [S, E)."""
    sm_efficiency: float | None = None
    occupancy: float | None = None
    """Percent (0-100)."""
    tensor_core: float | None = None
    """Fraction of operator-launched kernel time."""
    name: str = ""
    memory_bytes: int | None = None
    compute_capability: str = ""
    lanes: list[str] = field(default_factory=list)
    """Neuron: the physical-core lanes merged into this logical core."""


@dataclass
class DeviceSummary:
    devices: list[DeviceMetrics]
    span: tuple[int, int]
    utilization: float | None = None
    sm_efficiency: float | None = None
    occupancy: float | None = None
    tensor_core: float | None = None
    device_from_lane: bool = False
    """Kernels had no `args.device`: devices are the kernel lanes' pids."""

    def by_id(self, i: int) -> DeviceMetrics | None:
        return next((d for d in self.devices if d.id == i), None)


def device_properties(profile: Profile) -> list[dict[str, Any]]:
    props = profile.meta.trace_meta.get("deviceProperties")
    return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []


def tensor_core_names_apply(profile: Profile) -> bool:
    """The plugin's Tensor Core name patterns are NVIDIA kernel names: on ROCm, MTIA, ... they say nothing
    (an AMD matrix-core kernel would read as "no Tensor Cores"), so the figure and the AMP rule are left out."""
    return profile.meta.device_kind == "cuda"


def operator_node_mask(profile: Profile) -> np.ndarray:
    """Per event: a plugin "operator node" (cpu_op, not DataParallel.forward /
    DistributedDataParallel.forward / Optimizer.*)."""
    cached = profile.cache.get("overview_operator_nodes")
    if cached is not None:
        return cached
    cat_ok = np.array([c.lower() in ("cpu_op", "operator") for c in profile.cats] or [False])
    name_ok = np.array([not (n in ("DataParallel.forward", "DistributedDataParallel.forward") or n.startswith("Optimizer."))
                        for n in profile.names] or [True])
    ops = cat_ok[profile.cat] & name_ok[profile.name] if len(profile) else np.zeros(0, bool)
    profile.cache["overview_operator_nodes"] = ops
    return ops


def gpu_metrics(profile: Profile, facts: KernelFacts, op_of: np.ndarray, span: tuple[int, int]) -> DeviceSummary:
    S, E = span
    width = max(E - S, 0)
    idx = facts.idx
    dev = facts.device
    from_lane = False
    if len(idx) and not (dev >= 0).any():
        pid = np.array([l.pid for l in profile.lanes] or [0], np.int64)
        dev = pid[profile.lane[idx]]
        from_lane = True
    props = device_properties(profile)
    is_op = operator_node_mask(profile)
    op_ok = (op_of >= 0)
    op_ok[op_ok] = is_op[op_of[op_ok]]
    if not tensor_core_names_apply(profile):
        op_ok[:] = False
    devices: list[DeviceMetrics] = []
    for g in sorted(set(dev[dev >= 0].tolist())):
        sel = dev == g
        k = idx[sel]
        s, e = profile.start[k], profile.end[k]
        label = f"GPU {g}" if profile.meta.backend in ("", "CUDA") else f"{profile.meta.backend} {g}"
        dm = DeviceMetrics(g, label, kernels=int(len(k)))
        if g < len(props) and not from_lane:
            p = props[g]
            dm.name = str(p.get("name", ""))
            mem = p.get("totalGlobalMem")
            dm.memory_bytes = int(mem) if isinstance(mem, (int, float)) else None
            if "computeMajor" in p:
                dm.compute_capability = f"{p.get('computeMajor')}.{p.get('computeMinor', 0)}"
        if width > 0:
            busy = R.merge(s, e)
            dm.busy_ns = int(R.covered(busy, np.array([S]), np.array([E]))[0])
            dm.utilization = dm.busy_ns / width
            bps = facts.blocks_per_sm[sel]
            pos = bps > 0
            if pos.any():
                dm.sm_efficiency = _sm_efficiency(s[pos], e[pos], bps[pos], S, E)
            occ = facts.occupancy[sel]
            ok = occ >= 0
            if ok.any():
                clipped = np.clip(e[ok], S, E) - np.clip(s[ok], S, E)
                w = clipped.sum()
                dm.occupancy = float((occ[ok] * clipped).sum() / w) if w > 0 else None
        tk = sel & op_ok
        if tk.any():
            kd = profile.end[idx[tk]] - profile.start[idx[tk]]
            tc = facts.tc_name[profile.name[idx[tk]]]
            all_ = float(kd.sum())
            dm.tensor_core = float(kd[tc].sum()) / all_ if all_ else 0.0
        devices.append(dm)
    if any(d.tensor_core is not None for d in devices):
        for d in devices:
            if d.tensor_core is None:
                d.tensor_core = 0.0
    summary = DeviceSummary(devices, (S, E), device_from_lane=from_lane)
    _overall(summary, profile, facts, dev, op_ok)
    return summary


def _overall(summary: DeviceSummary, profile: Profile, facts: KernelFacts, dev: np.ndarray, op_ok: np.ndarray) -> None:
    ds = summary.devices
    if not ds:
        return
    util = [d.utilization for d in ds if d.utilization is not None]
    summary.utilization = float(np.mean(util)) if util else None
    sm = [d.sm_efficiency for d in ds if d.sm_efficiency is not None]
    summary.sm_efficiency = float(np.mean(sm)) if sm else None
    S, E = summary.span
    idx = facts.idx
    occ = facts.occupancy
    ok = (occ >= 0) & (dev >= 0)
    if ok.any():
        clipped = np.clip(profile.end[idx[ok]], S, E) - np.clip(profile.start[idx[ok]], S, E)
        w = clipped.sum()
        summary.occupancy = float((occ[ok] * clipped).sum() / w) if w > 0 else None
    tk = op_ok & (dev >= 0)
    if tk.any():
        kd = profile.end[idx[tk]] - profile.start[idx[tk]]
        tc = facts.tc_name[profile.name[idx[tk]]]
        summary.tensor_core = float(kd[tc].sum()) / float(kd.sum()) if kd.sum() else 0.0


def _sm_efficiency(s: np.ndarray, e: np.ndarray, bps: np.ndarray, S: int, E: int) -> float | None:
    """Sweep the kernels' endpoints (starts before ends at equal times); between consecutive endpoints the
    value is min(Σ running bps, 1) while the sum is > 0; clip to [S, E); share of (E - S)."""
    t = np.concatenate([s, e])
    d = np.concatenate([bps, -bps])
    kind = np.concatenate([np.zeros(len(s), np.int8), np.ones(len(e), np.int8)])
    o = np.lexsort((kind, t))
    t, d = t[o], d[o]
    run = np.cumsum(d)
    a = t[:-1]
    b = t[1:]
    v = np.minimum(run[:-1], 1.0)
    live = (run[:-1] > 0) & (b > a)
    if not live.any():
        return None
    a, b, v = np.clip(a[live], S, E), np.clip(b[live], S, E), v[live]
    seg = b - a
    if not (seg > 0).any():
        return None
    return float((v * seg).sum() / (E - S))


# -- Neuron ------------------------------------------------------------------------------------------
def neuron_core_metrics(profile: Profile, executions: np.ndarray, span: tuple[int, int],
                        per_core: dict[int, int] | None = None) -> DeviceSummary:
    """Busy share per logical NeuronCore (instance, pid, NC<l>), its physical-core copies merged. `per_core`:
    logical executions per core (else the rows are counted)."""
    S, E = span
    width = max(E - S, 0)
    keys, of_lane = core_groups(profile)
    group = of_lane[profile.lane[executions]]
    processes = {(k[0], k[1]) for k in keys}
    devices = []
    for g in sorted(range(len(keys)), key=lambda g: keys[g]):
        inst, pid, lnc, ident = keys[g]
        k = executions[group == g]
        if not len(k):
            continue
        label = f"NC{lnc}" if lnc >= 0 else ident
        if len(processes) > 1:
            label = f"PID:{pid}/{label}"
        lanes = [l.label for l in profile.lanes if of_lane[l.id] == g]
        count = per_core.get(g, len(k)) if per_core is not None else len(k)
        dm = DeviceMetrics(lnc if lnc >= 0 else g, label, kernels=int(count), lanes=lanes)
        if width > 0:
            busy = R.merge(profile.start[k], profile.end[k])
            dm.busy_ns = int(R.covered(busy, np.array([S]), np.array([E]))[0])
            dm.utilization = dm.busy_ns / width
        devices.append(dm)
    summary = DeviceSummary(devices, span)
    util = [d.utilization for d in devices if d.utilization is not None]
    summary.utilization = float(np.mean(util)) if util else None
    return summary


def tc_eligible_share(profile: Profile, facts: KernelFacts, op_of: np.ndarray) -> float:
    """The AMP rule's input: kernel time launched by the deepest Tensor-Core-eligible ops (allowlisted ops
    with no allowlisted op below them) / kernel time launched by all operator nodes."""
    is_op = operator_node_mask(profile)
    ok = op_of >= 0
    ok[ok] = is_op[op_of[ok]]
    if not ok.any():
        return 0.0
    kd = (profile.end[facts.idx] - profile.start[facts.idx]).astype(np.float64)
    denom = float(kd[ok].sum())
    if denom <= 0:
        return 0.0
    allow = np.zeros(max(len(profile.names), 1), bool)
    for k, n in enumerate(profile.names):
        if n in TC_ELIGIBLE_OPS:
            allow[k] = True
    eligible_ev = np.nonzero(allow[profile.name] & is_op)[0]
    if not len(eligible_ev):
        return 0.0
    # an allowlisted op is "bottom" when no other allowlisted op of its thread lies inside it: with the ops of a
    # thread in (start, longest first) order, it is enough to look at the next few after it
    from trntui.analysis.links import thread_keys

    keys = thread_keys(profile)
    ev = profile.by_key_then_time(keys, eligible_ev)
    k, s, e = keys[ev], profile.start[ev], profile.end[ev]
    has_below = np.zeros(len(ev), bool)
    for step in range(1, 9):
        if step >= len(ev):
            break
        a_, b_ = slice(0, len(ev) - step), slice(step, len(ev))
        inside = (k[a_] == k[b_]) & (s[b_] >= s[a_]) & (e[b_] <= e[a_])
        has_below[a_] |= inside
    bottom = np.zeros(len(profile), bool)
    bottom[ev] = ~has_below
    num = float(kd[ok & bottom[np.maximum(op_of, 0)]].sum())
    return num / denom


def dataparallel_devices(profile: Profile) -> int:
    """Distinct device pids of kernel / memcpy / memset rows (the DataParallel rule)."""
    m = profile.cat_mask({"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
    if not m.any():
        return 0
    pid = np.array([l.pid for l in profile.lanes] or [0], np.int64)
    return int(len(np.unique(pid[profile.lane[m]])))

