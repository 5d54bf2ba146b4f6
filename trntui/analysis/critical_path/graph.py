"""The critical-path graph and the pieces both builders share: edge kinds, bound types, `Graph` (chains of
nodes joined by cross edges), `Path`, the `_Builder` that lays chains and cross edges out as one `Graph`, the
device-stream chains with HTA's queue-length launch rule, and the DataLoader attribution."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from trntui.model.profile import NO_ID, EventKind, Profile, stack_nesting

# edge kinds
OP, DEP, LAUNCH, KK, SYNC, DISPATCH = range(6)
KIND_NAMES = ("operator", "dependency", "launch delay", "kernel-kernel delay", "sync", "dispatch")

CUDA_BOUNDS = (
    "cpu_bound",
    "data_loading",
    "gpu_compute_bound",
    "gpu_communication_bound",
    "gpu_kernel_kernel_overhead",
    "gpu_kernel_launch_overhead",
)
"""HTA's bound types (its `bound_by`), plus `data_loading` for host time under a DataLoader scope."""
NEURON_BOUNDS = (
    "framework_cpu",
    "data_loading",
    "dispatch_overhead",
    "runtime_overhead",
    "runtime_queue_delay",
    "neuroncore_compute",
    "neuroncore_communication",
    "neuroncore_idle",
)
"""The Neuron counterparts: host framework time, framework → runtime dispatch, time in Neuron runtime rows,
schedule → execution on an idle core, executions, collectives, gaps between executions on a core."""

BOUND_HELP = {
    "cpu_bound": "host op time (the CPU is what the step waits for)",
    "data_loading": "host time under a DataLoader scope",
    "gpu_compute_bound": "kernel, memcpy and memset time",
    "gpu_communication_bound": "collective kernels (nccl/rccl)",
    "gpu_kernel_kernel_overhead": "gaps between kernels on a stream that had work queued",
    "gpu_kernel_launch_overhead": "runtime call to kernel start on an empty stream",
    "framework_cpu": "framework (host) op time",
    "dispatch_overhead": "framework call to nrta_execute_schedule",
    "runtime_overhead": "time in Neuron runtime rows",
    "runtime_queue_delay": "nrta_execute_schedule to nc_exec_running on an idle NeuronCore",
    "neuroncore_compute": "nc_exec_running time",
    "neuroncore_communication": "collectives on the NeuronCores (cc_running, cc_exec_barrier)",
    "neuroncore_idle": "gaps between executions on a NeuronCore that had work scheduled",
}

OVERHEAD_BOUNDS = frozenset({"gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead", "dispatch_overhead",
                             "runtime_queue_delay", "neuroncore_idle"})
"""Bound types that are waiting, not work: the 'longest stretches' report joins runs of them."""

BLOCKING_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize", "cudaMemcpy",
    "cudaMemcpyAsync",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventQuery", "hipEventSynchronize", "hipMemcpy",
    "hipMemcpyAsync",
})
"""Calls whose own duration weighs 0 (HTA's BLOCKING_SYNC_CALLS, and the same hip* names)."""
DEVICE_WAITS = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize", "cudaStreamSynchronize", "hipStreamSynchronize"})
"""Blocking calls whose wait trntui infers from the device rows when the trace has no cuda_sync row for them."""
NEURON_WAITS = frozenset({"kbl_exec_wait", "nrt_tensor_read", "dmem_buf_copyout"})
"""Neuron runtime rows that wait for the device (neuron-formats.md §9)."""

HOST_CATS = frozenset({"cpu_op", "Operator", "cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime",
                       "glow_runtime", "xpu_runtime", "xpu_driver", "privateuse1_runtime"})
"""Host rows that are nodes (HTA: cpu_op, cuda_runtime, cuda_driver; the other backends' runtime rows too)."""
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"})
NEURON_DEVICE_NAMES = ("nc_exec_running", "cc_running", "cc_exec_barrier")
_COMM_RX = re.compile(r"^(nccl|rccl)", re.I)
_DATALOADER_RX = re.compile(r"^enumerate\(Data(Loader|Pipe)\)#")
_US = 1000


@dataclass
class Graph:
    """Nodes in chain order (host threads, runtime lanes, streams, one after the other), chain edges into
    node i from node i-1 (unless `seg_first[i]`), and cross edges between chains. Plain arrays; the weights
    are int64 ns."""

    node_event: np.ndarray
    node_start: np.ndarray
    node_ts: np.ndarray
    seg_first: np.ndarray
    chain_w: np.ndarray
    chain_kind: np.ndarray
    chain_event: np.ndarray
    chain_bound: np.ndarray
    x_src: np.ndarray
    x_dst: np.ndarray
    x_w: np.ndarray
    x_kind: np.ndarray
    x_event: np.ndarray
    x_bound: np.ndarray
    bounds: tuple[str, ...]
    host_events: np.ndarray
    """Host (and Neuron runtime) events in the graph."""
    device_events: np.ndarray
    launcher_of: dict[int, int]
    """Device event → the runtime call (CUDA) or nrta_execute_schedule (Neuron) that launched it."""
    start_node: dict[int, int] = field(default_factory=dict)
    end_node: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return len(self.node_ts)

    @property
    def edges(self) -> int:
        return int((~self.seg_first).sum()) + len(self.x_src)


@dataclass
class Path:
    """The longest path: its edges from first to last (arrays), and its length."""

    kind: np.ndarray
    weight: np.ndarray
    event: np.ndarray
    bound: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    length: int


# -------------------------------------------------------------------------------------------------------------
# building the graph


def _blocking_names(profile: Profile, names: frozenset[str]) -> np.ndarray:
    table = np.zeros(max(len(profile.names), 1), bool)
    for nm in names:
        k = profile.name_id(nm)
        if k >= 0:
            table[k] = True
    return table


def _cat_table(profile: Profile, cats) -> np.ndarray:
    t = np.zeros(max(len(profile.cats), 1), bool)
    for c in cats:
        k = profile.cat_id(c)
        if k >= 0:
            t[k] = True
    return t


class _Builder:
    """Collects chains and cross edges, then lays them out as one `Graph`."""

    def __init__(self, profile: Profile, bounds: tuple[str, ...]) -> None:
        self.p = profile
        self.bounds = bounds
        self.b = {x: k for k, x in enumerate(bounds)}
        self.chains: list[dict[str, np.ndarray]] = []
        self.cross: list[tuple[np.ndarray, ...]] = []  # (src event, src is start, dst event, dst is start, w, kind, event, bound)
        self.notes: list[str] = []

    def chain(self, ev, is_start, ts, seg_first, w, kind, attr, bound) -> None:
        if len(ev):
            self.chains.append(dict(ev=ev, st=is_start, ts=ts, seg=seg_first, w=w, kind=kind, attr=attr, bound=bound))

    def add_cross(self, src_ev, src_start, dst_ev, dst_start, w, kind, attr, bound) -> None:
        n = len(src_ev)
        if n:
            bc = lambda x, dt: np.broadcast_to(np.asarray(x, dt), (n,)).copy()  # noqa: E731
            self.cross.append((np.asarray(src_ev, np.int64), bc(src_start, bool), np.asarray(dst_ev, np.int64),
                               bc(dst_start, bool), bc(w, np.int64), bc(kind, np.int8), bc(attr, np.int64),
                               bc(bound, np.int16)))

    def host_chains(self, events: np.ndarray, keys: np.ndarray, cpu_bound: int, blocking: np.ndarray) -> None:
        """Chains over nested events, one per key (thread / runtime lane), in call-stack order."""
        p = self.p
        if not len(events):
            return
        s, e = p.start[events], p.end[events]
        o = np.lexsort((-(e - s), s, keys[events]))
        ev = events[o]
        k = keys[ev]
        s, e = p.start[ev], p.end[ev]
        ppos, depth = stack_nesting(s, e, k)
        parent = np.where(ppos >= 0, ev[np.maximum(ppos, 0)], NO_ID)
        m = len(ev)
        # nodes: starts (outer first at equal times) and ends (inner first), ends before starts at equal times
        n_ev = np.concatenate([ev, ev])
        n_st = np.concatenate([np.ones(m, bool), np.zeros(m, bool)])
        n_ts = np.concatenate([s, e])
        n_key = np.concatenate([k, k])
        d = depth.astype(np.int64)
        n_tie = np.concatenate([d, -d])
        n_par = np.concatenate([parent, parent])
        o = np.lexsort((n_tie, n_st, n_ts, n_key))
        n_ev, n_st, n_ts, n_key, n_par = n_ev[o], n_st[o], n_ts[o], n_key[o], n_par[o]
        seg = np.ones(2 * m, bool)
        seg[1:] = n_key[1:] != n_key[:-1]
        w = np.zeros(2 * m, np.int64)
        w[1:] = np.maximum(n_ts[1:] - n_ts[:-1], 0)
        kind = np.full(2 * m, OP, np.int8)
        attr = np.full(2 * m, NO_ID, np.int64)
        us_, vs_ = n_st[:-1], n_st[1:]
        ue, ve = n_ev[:-1], n_ev[1:]
        a = np.where(us_, ue, np.where(~vs_, ve, n_par[:-1]))
        attr[1:] = a
        dep = np.zeros(2 * m, bool)
        dep[1:] = ~us_ & vs_ & (n_par[:-1] < 0)
        kind[dep] = DEP
        w[dep] = 0
        attr[dep] = NO_ID
        block = np.zeros(2 * m, bool)
        block[1:] = ~vs_ & blocking[p.name[ve]]
        w[block] = 0
        w[seg] = 0
        kind[seg] = DEP
        attr[seg] = NO_ID
        bound = np.where(attr >= 0, cpu_bound, -1).astype(np.int16)
        self.chain(n_ev, n_st, n_ts, seg, w, kind, attr, bound)

    def build(self) -> Graph:
        ch = self.chains
        cat = lambda key, dt: np.concatenate([c[key] for c in ch]).astype(dt, copy=False) if ch else np.zeros(0, dt)  # noqa: E731
        node_event = cat("ev", np.int64)
        node_start = cat("st", bool)
        node_ts = cat("ts", np.int64)
        seg_first = cat("seg", bool)
        chain_w = cat("w", np.int64)
        chain_kind = cat("kind", np.int8)
        chain_event = cat("attr", np.int64)
        chain_bound = cat("bound", np.int16)
        n = len(node_event)
        start_node: dict[int, int] = {}
        end_node: dict[int, int] = {}
        if n:
            sel = np.nonzero(node_start)[0]
            start_node = dict(zip(node_event[sel].tolist(), sel.tolist()))
            sel = np.nonzero(~node_start)[0]
            end_node = dict(zip(node_event[sel].tolist(), sel.tolist()))
        # node lookup for the cross edges: (event, is_start) -> position, vectorised through a sorted key
        keys = node_event * 2 + node_start.astype(np.int64)
        korder = np.argsort(keys, kind="stable")
        sk = keys[korder]

        def pos(ev: np.ndarray, st: np.ndarray) -> np.ndarray:
            q = ev * 2 + st.astype(np.int64)
            if not len(sk):
                return np.full(len(q), -1, np.int64)
            j = np.minimum(np.searchsorted(sk, q), len(sk) - 1)
            return np.where(sk[j] == q, korder[j], -1)

        parts = [tuple(x) for x in self.cross]
        if parts:
            cols = [np.concatenate([c[i] for c in parts]) for i in range(8)]
            src = pos(cols[0], cols[1])
            dst = pos(cols[2], cols[3])
            ok = (src >= 0) & (dst >= 0) & (src != dst)
            # an edge backwards in time (clock skew, broken ids) would make a cycle: left out, counted
            back = ok & (node_ts[np.maximum(src, 0)] > node_ts[np.maximum(dst, 0)])
            if back.any():
                self.notes.append(f"{int(back.sum())} dependency edge(s) pointed backwards in time and were left out")
            ok &= ~back
            x = [src[ok], dst[ok]] + [c[ok] for c in cols[4:]]
        else:
            x = [np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8),
                 np.zeros(0, np.int64), np.zeros(0, np.int16)]
        return Graph(node_event, node_start, node_ts, seg_first, chain_w, chain_kind, chain_event, chain_bound,
                     x[0], x[1], x[2], x[3].astype(np.int8), x[4], x[5].astype(np.int16), self.bounds,
                     np.zeros(0, np.int64), np.zeros(0, np.int64), {}, start_node, end_node, list(self.notes))


def _device_chains(bld: _Builder, dev: np.ndarray, launcher: np.ndarray, keys: np.ndarray, op_bound: np.ndarray,
                   kk_bound: int, launch_bound: int, launch_rule, sync_src: dict[int, int]) -> None:
    """Chains over device rows per stream/core: durations, kernel-kernel gaps or launch delays (`launch_rule`
    decides per row), zero-weight causal launch edges otherwise, and stream-wait sync edges."""
    p = bld.p
    if not len(dev):
        return
    o = np.lexsort((p.start[dev], keys[dev]))
    dev, launcher, op_bound = dev[o], launcher[o], op_bound[o]
    k = keys[dev]
    s, e = p.start[dev], p.end[dev]
    m = len(dev)
    has_prev = np.zeros(m, bool)
    has_prev[1:] = k[1:] == k[:-1]
    prev_end = np.full(m, np.iinfo(np.int64).min, np.int64)
    prev_end[1:] = e[:-1]
    r_ts = p.start[launcher]
    sync_end = np.full(m, np.iinfo(np.int64).min, np.int64)
    has_sync = np.zeros(m, bool)
    if sync_src:
        for j, d in enumerate(dev.tolist()):
            src = sync_src.get(d)
            if src is not None:
                has_sync[j] = True
                sync_end[j] = int(p.end[src])
    launch = launch_rule(dev, launcher, k) & (~has_prev | (prev_end < r_ts)) & (~has_sync | (sync_end < r_ts))
    kk = ~launch & has_prev & (~has_sync | (sync_end < prev_end))
    # nodes s0 e0 s1 e1 ...
    n_ev = np.repeat(dev, 2)
    n_st = np.tile(np.array([True, False]), m)
    n_ts = np.empty(2 * m, np.int64)
    n_ts[0::2], n_ts[1::2] = s, e
    seg = np.zeros(2 * m, bool)
    seg[0::2] = ~kk
    w = np.zeros(2 * m, np.int64)
    w[1::2] = np.maximum(e - s, 0)
    w[0::2] = np.where(kk, np.maximum(s - prev_end, 0), 0)
    kind = np.full(2 * m, OP, np.int8)
    kind[0::2] = np.where(kk, KK, DEP)
    attr = np.full(2 * m, NO_ID, np.int64)
    attr[1::2] = dev
    prev_ev = np.full(m, NO_ID, np.int64)
    prev_ev[1:] = dev[:-1]
    attr[0::2] = np.where(kk, prev_ev, NO_ID)
    bound = np.full(2 * m, -1, np.int16)
    bound[1::2] = op_bound
    bound[0::2] = np.where(kk, kk_bound, -1)
    bld.chain(n_ev, n_st, n_ts, seg, w, kind, attr, bound)
    # launch edges: the delay where the rule holds, a zero-weight causal edge elsewhere
    ok = launcher >= 0
    bld.add_cross(launcher[ok], True, dev[ok], True, np.where(launch[ok], np.maximum(s[ok] - r_ts[ok], 0), 0),
                  LAUNCH, np.where(launch[ok], launcher[ok], NO_ID), np.where(launch[ok], launch_bound, -1))
    if sync_src:
        srcs = np.array([sync_src.get(d, -1) for d in dev.tolist()], np.int64)
        ok = srcs >= 0
        bld.add_cross(srcs[ok], False, dev[ok], True, 0, SYNC, NO_ID, -1)


def _queue_rule(profile: Profile, all_dev: np.ndarray, all_launcher: np.ndarray, keys: np.ndarray):
    """HTA's queue-length test: the stream had nothing outstanding when the launch enqueued this row (queue
    length 1 after it) and nothing was enqueued behind it before it started (queue length 0 after its start).
    Counted over the whole trace, as HTA does."""
    ok = all_launcher >= 0
    dv, ln = all_dev[ok], all_launcher[ok]
    dk = keys[dv]
    per: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for key in np.unique(dk).tolist():
        sel = dk == key
        per[key] = (np.sort(profile.start[ln[sel]]), np.sort(profile.start[dv[sel]]))

    def rule(dev: np.ndarray, launcher: np.ndarray, k: np.ndarray) -> np.ndarray:
        out = np.zeros(len(dev), bool)
        for key in np.unique(k).tolist():
            sel = np.nonzero((k == key) & (launcher >= 0))[0]
            if key not in per or not len(sel):
                continue
            L, K = per[key]
            rt = profile.start[launcher[sel]]
            kt = profile.start[dev[sel]]
            q_rt = np.searchsorted(L, rt, "right") - np.searchsorted(K, rt, "right")
            q_k = np.searchsorted(L, kt, "right") - np.searchsorted(K, kt, "right")
            out[sel] = (q_rt == 1) & (q_k == 0)
        return out

    return rule


def _idle_core_rule(dev: np.ndarray, launcher: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Neuron: no queue-length data; the schedule counts as the delay whenever the core was idle at it (the
    caller's previous-row test), i.e. the rule itself always holds."""
    return launcher >= 0


def _window_host(profile: Profile, t0: int, t1: int, cats: np.ndarray, tier_ok: np.ndarray | None = None) -> np.ndarray:
    s, e = profile.start, profile.end
    m = cats[profile.cat] & (profile.kind == EventKind.COMPLETE) & (s >= t0) & (s <= t1) & (e > s)
    if tier_ok is not None:
        m &= tier_ok[profile.lane]
    return np.nonzero(m)[0]


def _args(profile: Profile, i: int) -> dict:
    try:
        return profile.args(int(i))
    except Exception:  # noqa: BLE001 - a damaged args blob is no sync information
        return {}


def _data_loading(profile: Profile, g: Graph, t0: int, t1: int, keys: np.ndarray) -> None:
    """Host edges under a DataLoader scope (user_annotation `enumerate(DataLoader)#...`) count as data_loading."""
    ids = [k for k, nm in enumerate(profile.names) if _DATALOADER_RX.match(nm)]
    if not ids or "data_loading" not in g.bounds:
        return
    rows = np.nonzero(np.isin(profile.name, ids) & (profile.end >= t0) & (profile.start <= t1))[0]
    if not len(rows):
        return
    cpu = g.bounds.index("cpu_bound") if "cpu_bound" in g.bounds else g.bounds.index("framework_cpu")
    dl = g.bounds.index("data_loading")
    sel = np.nonzero(g.chain_bound == cpu)[0]
    if not len(sel):
        return
    ts_prev = g.node_ts[sel - 1]
    ts_here = g.node_ts[sel]
    k_here = keys[g.node_event[sel]]
    hit = np.zeros(len(sel), bool)
    for r in rows.tolist():
        hit |= (k_here == keys[r]) & (ts_prev >= profile.start[r]) & (ts_here <= profile.end[r])
    g.chain_bound[sel[hit]] = dl
