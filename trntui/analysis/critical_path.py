"""The critical path of a step: what bounds it, what is on it, and what a change would buy.

The graph follows HTA's lightweight critical path analysis (hta/analyzers/critical_path_analysis.py in
facebookresearch/HolisticTraceAnalysis; docs/overview.md "Critical path" says where trntui departs):

- every host op (`cpu_op`) and runtime call of the step, and every device row they launched, is a start and an
  end node;
- on a host thread the nodes follow the call stack in time order: the edge from one node to the next carries
  the time between them, attributed to the op whose own time it is (start→start: the outer op, start→end: the
  op, end→end: the outer op, end→start: the parent of both); between two top-level ops the edge weighs 0
  (HTA's "dependency": the thread is idle, nothing bounds the step there); a blocking call
  (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`, `cudaEventQuery`, `cudaMemcpy`,
  `cudaMemcpyAsync`, their `hip*` twins) weighs 0 itself: what it waits for comes in through a sync edge;
- on a device stream: each kernel's duration, and from one kernel to the next either a kernel-kernel delay (the
  gap, attributed to the earlier kernel) or, when the stream was empty at the launch (HTA's queue-length rule:
  nothing else outstanding when the runtime call enqueued it, nothing enqueued behind it before it started,
  the previous kernel done before the launch), a launch delay from the runtime call's start to the kernel's
  start; otherwise a zero-weight launch edge keeps the causality;
- sync edges (weight 0) from the `cuda_sync` rows: Stream Sync (last kernel on the stream → end of the
  cudaStreamSynchronize), Context Sync (last kernel on every stream → end of cudaDeviceSynchronize), Event Sync
  (kernel before the cudaEventRecord on the recorded stream → end of cudaEventSynchronize), Stream Wait Event
  (that kernel → the next kernel launched from the same thread onto the waiting stream).

On Neuron (a system trace with `nc_exec_running`) the same idea over framework op → `nrta_execute_schedule` →
`nc_exec_running`: framework ops on the host threads, Neuron runtime rows on their runtime lanes, executions on
their NeuronCores; a dispatch edge from the host call that scheduled an execution to the
`nrta_execute_schedule`, a runtime queue delay from the schedule to the execution when the core was idle, the
gap between executions on a core otherwise (`neuroncore_idle`), and waits on the device (`kbl_exec_wait`,
`nrt_tensor_read`, `dmem_buf_copyout`) as sync edges from the execution they wait for.

Time order is a topological order (every edge goes forward in time), and the graph is a set of chains (host
threads, runtime lanes, streams/cores) joined by cross edges (launch, dispatch, sync). Along a chain the
longest path to each node is a prefix sum plus a running maximum of the cross edges coming in, so the longest
path is a few vectorised passes (one more per chain switch that improves a node), not a walk per event.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.links import build_links, thread_codes
from trntui.errors import TrntuiError
from trntui.model.profile import NO_ID, EventKind, Profile, Tier, _stack_nesting

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


@dataclass
class TopEvent:
    event: int
    name: str
    ns: int
    bound: str
    lane: str
    duration_ns: int


@dataclass
class Stretch:
    start: int
    end: int
    ns: int
    bounds: dict[str, int]
    edges: int


@dataclass
class WhatIf:
    specs: list[str]
    length_ns: int
    predicted_step_ns: int
    saved_ns: int
    breakdown_ns: dict[str, int]
    matched: int
    """Events the specs matched."""

    def to_dict(self, cp: "CriticalPath") -> dict[str, Any]:
        us = lambda ns: round(ns / _US, 3)  # noqa: E731
        total = sum(self.breakdown_ns.values())
        return {
            "specs": list(self.specs),
            "matched_events": self.matched,
            "path_us": us(self.length_ns),
            "predicted_step_us": us(self.predicted_step_ns),
            "saved_us": us(self.saved_ns),
            "saved_pct_of_step": round(100.0 * self.saved_ns / cp.span_ns, 2) if cp.span_ns else 0.0,
            "breakdown_pct": {b: round(100.0 * v / total, 2) if total else 0.0 for b, v in self.breakdown_ns.items()},
            "bound_after": max(self.breakdown_ns, key=self.breakdown_ns.get) if total else None,
        }


@dataclass
class CriticalPath:
    """The critical path of one step (or of several joined steps)."""

    step: int
    steps: list[int]
    start: int
    end: int
    host_start: int
    host_end: int
    neuron: bool
    graph: Graph
    path: Path
    breakdown_ns: dict[str, int]
    on_path: np.ndarray
    """Events with a node on the path (sorted)."""
    profile: Profile = field(repr=False)
    notes: list[str] = field(default_factory=list)

    @property
    def span_ns(self) -> int:
        return self.end - self.start

    @property
    def length_ns(self) -> int:
        return self.path.length

    @property
    def bounds(self) -> tuple[str, ...]:
        return self.graph.bounds

    @property
    def off_path_ns(self) -> int:
        """Step time the path does not cover (idle host time between top-level ops that bounds nothing)."""
        return max(self.span_ns - self.length_ns, 0)

    def breakdown_pct(self) -> dict[str, float]:
        total = sum(self.breakdown_ns.values())
        return {b: (100.0 * v / total if total else 0.0) for b, v in self.breakdown_ns.items()}

    @property
    def bound_by(self) -> str | None:
        total = sum(self.breakdown_ns.values())
        return max(self.breakdown_ns, key=self.breakdown_ns.get) if total else None

    def is_on_path(self, event: int) -> bool:
        k = int(np.searchsorted(self.on_path, event))
        return k < len(self.on_path) and int(self.on_path[k]) == int(event)

    def event_ns(self) -> dict[int, int]:
        """Event → ns of path edges attributed to it."""
        p = self.path
        sel = (p.event >= 0) & (p.weight > 0)
        if not sel.any():
            return {}
        ev, inv = np.unique(p.event[sel], return_inverse=True)
        sums = np.bincount(inv, weights=p.weight[sel]).astype(np.int64)
        return dict(zip(ev.tolist(), sums.tolist()))

    def top_events(self, n: int | None = 20) -> list[TopEvent]:
        """Events ranked by their time on the path (an op can be long and off the path)."""
        p = self.path
        sel = (p.event >= 0) & (p.weight > 0)
        if not sel.any():
            return []
        ev, inv = np.unique(p.event[sel], return_inverse=True)
        sums = np.bincount(inv, weights=p.weight[sel]).astype(np.int64)
        # each event's bound: the bound of most of its path time
        nb = len(self.bounds)
        per = np.zeros((len(ev), nb), np.int64)
        np.add.at(per, (inv, p.bound[sel]), p.weight[sel])
        order = np.lexsort((ev, -sums))
        if n is not None:
            order = order[:n]
        prof = self.profile
        out = []
        for k in order.tolist():
            e = int(ev[k])
            out.append(TopEvent(e, prof.name_of(e), int(sums[k]), self.bounds[int(per[k].argmax())],
                                prof.lane_of(e).label, int(prof.end[e] - prof.start[e])))
        return out

    def stretches(self, n: int = 5) -> list[Stretch]:
        """The longest runs of consecutive path edges that are waiting (launch overhead, kernel-kernel gaps,
        dispatch, queue delay, idle NeuronCore), joined across the zero-weight edges between them."""
        p = self.path
        if not len(p.weight):
            return []
        over = np.array([b in OVERHEAD_BOUNDS for b in self.bounds], bool)
        is_over = over[p.bound] & (p.weight > 0)
        zero = p.weight == 0
        ts = self.graph.node_ts
        runs: list[Stretch] = []
        cur: Stretch | None = None
        for k in range(len(p.weight)):
            if is_over[k]:
                b = self.bounds[int(p.bound[k])]
                w = int(p.weight[k])
                if cur is None:
                    cur = Stretch(int(ts[p.src[k]]), int(ts[p.dst[k]]), 0, {}, 0)
                cur.ns += w
                cur.end = int(ts[p.dst[k]])
                cur.bounds[b] = cur.bounds.get(b, 0) + w
                cur.edges += 1
            elif zero[k] and cur is not None:
                continue
            elif cur is not None:
                runs.append(cur)
                cur = None
        if cur is not None:
            runs.append(cur)
        runs.sort(key=lambda s: -s.ns)
        return runs[:n]

    def what_if(self, specs: list[str]) -> WhatIf:
        """The longest path with the events the specs name scaled (`NAME=0.5x`, `NAME=100us`, `kernels=0.8x`,
        `path=0.5x`): the predicted step is the step minus what the path saves."""
        cw, xw, matched = apply_what_if(self, specs)
        dist, B, P, val, M = _longest(self.graph, cw, xw)
        path = _reconstruct(self.graph, cw, xw, dist, B, P, val, M)
        bd = _breakdown(self.graph, path)
        saved = self.length_ns - path.length
        return WhatIf(list(specs), path.length, self.span_ns - saved, saved, bd, matched)

    def floor_ns(self) -> int:
        """The longest path with every event on the path at zero time: what no speed-up of the path's events can
        remove (the off-path work that then bounds the step). Scaling the path's events by f leaves a path no
        longer than f·length + (1-f)·floor."""
        cached = getattr(self, "_floor", None)
        if cached is None:
            cached = self.what_if(["path=0x"]).length_ns
            self._floor = cached
        return cached

    def to_dict(self, top: int = 20, what_ifs: list[WhatIf] | None = None) -> dict[str, Any]:
        from trntui.textsafe import safe_text

        us = lambda ns: round(ns / _US, 3)  # noqa: E731
        pct = self.breakdown_pct()
        g = self.graph
        return {
            "step": self.step,
            "steps": list(self.steps),
            "start_us": us(self.start),
            "step_us": us(self.span_ns),
            "path_us": us(self.length_ns),
            "path_share_of_step_pct": round(100.0 * self.length_ns / self.span_ns, 2) if self.span_ns else 0.0,
            "off_path_us": us(self.off_path_ns),
            "floor_us": us(self.floor_ns()),
            "bound_by": self.bound_by,
            "breakdown_us": {b: us(v) for b, v in self.breakdown_ns.items()},
            "breakdown_pct": {b: round(v, 2) for b, v in pct.items()},
            "graph": {"nodes": g.nodes, "edges": g.edges, "path_edges": len(self.path.weight),
                      "path_nodes": len(self.path.weight) + 1 if len(self.path.weight) else 0,
                      "events_on_path": int(len(self.on_path))},
            "top_events": [
                {"event": t.event, "name": safe_text(t.name), "on_path_us": us(t.ns), "duration_us": us(t.duration_ns),
                 "share_of_path_pct": round(100.0 * t.ns / self.length_ns, 2) if self.length_ns else 0.0,
                 "bound": t.bound, "lane": safe_text(t.lane)}
                for t in self.top_events(top)
            ],
            "stretches": [
                {"start_us": us(s.start), "end_us": us(s.end), "on_path_us": us(s.ns),
                 "bounds_us": {b: us(v) for b, v in s.bounds.items()}}
                for s in self.stretches()
            ],
            "what_if": [w.to_dict(self) for w in (what_ifs or [])],
            "notes": list(self.notes),
        }


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
        ppos, depth = _stack_nesting(s, e, k)
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


def build_graph(profile: Profile, t0: int, t1: int, t_end: int) -> Graph:
    """The critical-path graph of the window: host events starting in [t0, t1] (a step's host span), the device
    work they launched (which may run until `t_end`)."""
    from trntui.analysis.overview.roles import is_neuron

    if is_neuron(profile):
        return _build_neuron(profile, t0, t1, t_end)
    return _build_kineto(profile, t0, t1)


def _device_role(profile: Profile, dev: np.ndarray, bld: _Builder, compute: str, comm: str) -> np.ndarray:
    names = profile.names
    comm_name = np.array([bool(_COMM_RX.match(nm)) for nm in names] or [False])
    ext_comm = np.zeros(len(dev), bool)
    return np.where(comm_name[profile.name[dev]] | ext_comm, bld.b[comm], bld.b[compute]).astype(np.int16)


def _build_kineto(profile: Profile, t0: int, t1: int) -> Graph:
    bld = _Builder(profile, CUDA_BOUNDS)
    links = build_links(profile)
    _, tkeys = thread_codes(profile)
    keys = tkeys.astype(np.int64)
    host = _window_host(profile, t0, t1, _cat_table(profile, HOST_CATS))
    blocking = _blocking_names(profile, BLOCKING_CALLS)
    bld.host_chains(host, keys, bld.b["cpu_bound"], blocking)
    in_host = np.zeros(len(profile), bool)
    in_host[host] = True
    devcat = _cat_table(profile, DEVICE_CATS)
    all_dev = np.nonzero(devcat[profile.cat] & (profile.kind == EventKind.COMPLETE))[0]
    all_launcher = links.runtime_of[all_dev] if len(all_dev) else np.zeros(0, np.int64)
    sel = (all_launcher >= 0) & in_host[np.maximum(all_launcher, 0)]
    dev, launcher = all_dev[sel], all_launcher[sel]
    no_launcher = int(((all_launcher < 0) & (profile.start[all_dev] >= t0) & (profile.start[all_dev] <= t1)).sum())
    if no_launcher:
        bld.notes.append(f"{no_launcher} device row(s) in the step have no runtime call with their correlation id: "
                         "they are not in the graph (no launch edge can be built for them)")
    # sync rows
    sync_cat = profile.cat_id("cuda_sync")
    sync_src: dict[int, int] = {}
    cpu_sync: list[tuple[int, int]] = []  # (device row, runtime call whose end waits for it)
    synced_calls: set[int] = set()
    stats = {"Stream Sync": 0, "Context Sync": 0, "Event Sync": 0, "Stream Wait Event": 0}
    unlinked: dict[str, int] = {}
    in_dev = np.zeros(len(profile), bool)
    in_dev[dev] = True
    if sync_cat >= 0 and len(dev):
        rows = np.nonzero((profile.cat == sync_cat))[0]
        rt = links.runtime_of[rows]
        rows = rows[(rt >= 0) & in_host[np.maximum(rt, 0)]]
        dkeys = keys[dev]
        order = np.lexsort((profile.start[dev], dkeys))
        d_sorted, k_sorted, s_sorted = dev[order], dkeys[order], profile.start[dev][order]
        lane_key_of: dict[tuple[int, int], int] = {}
        for j in range(len(d_sorted)):
            ln = profile.lanes[int(profile.lane[d_sorted[j]])]
            lane_key_of.setdefault((ln.pid, ln.tid), int(k_sorted[j]))
        # launches per stream key (whole trace), for the event-record look-ups
        ok_all = all_launcher >= 0
        l_ev, l_dev = all_launcher[ok_all], all_dev[ok_all]
        l_key = keys[l_dev]

        def last_on(key: int, before: int) -> int:
            sel = np.nonzero(k_sorted == key)[0]
            if not len(sel):
                return -1
            j = int(np.searchsorted(s_sorted[sel], before, "left")) - 1
            return int(d_sorted[sel[j]]) if j >= 0 else -1

        def launch_before(key: int, t: int) -> int:
            sel = np.nonzero(l_key == key)[0]
            if not len(sel):
                return -1
            st = profile.start[l_ev[sel]]
            o = np.argsort(st, kind="stable")
            j = int(np.searchsorted(st[o], t, "right")) - 1
            return int(l_dev[sel[o[j]]]) if j >= 0 else -1

        corr_rt: dict[int, int] = {}
        for r in np.nonzero(links.runtime & (profile.corr > 0))[0].tolist():
            corr_rt.setdefault(int(profile.corr[r]), r)
        for row in rows.tolist():
            a = _args(profile, row)
            kind = str(a.get("cuda_sync_kind") or profile.name_of(row))
            call = int(links.runtime_of[row])
            ln = profile.lanes[int(profile.lane[row])]
            end = int(profile.end[row])
            if kind in ("Stream Sync", "Context Sync"):
                stats[kind] += 1
                keys_here = [lane_key_of.get((ln.pid, ln.tid))] if kind == "Stream Sync" else list(set(lane_key_of.values()))
                for key in keys_here:
                    if key is None:
                        continue
                    src = last_on(key, end)
                    if src >= 0:
                        cpu_sync.append((src, call))
                synced_calls.add(call)
                continue
            if kind not in ("Event Sync", "Stream Wait Event"):
                continue
            stats[kind] += 1
            try:
                rec_corr = int(a.get("wait_on_cuda_event_record_corr_id", -1))
                wait_stream = int(a.get("wait_on_stream", -1))
            except (TypeError, ValueError):
                rec_corr, wait_stream = -1, -1
            rec = corr_rt.get(rec_corr, -1)
            key = lane_key_of.get((ln.pid, wait_stream))
            if rec < 0 or key is None:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            src = launch_before(key, int(profile.start[rec]))
            if src < 0 or not in_dev[src]:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            if kind == "Event Sync":
                cpu_sync.append((src, call))
                synced_calls.add(call)
                continue
            # Stream Wait Event: the next kernel launched from the waiting call's thread onto this stream
            wkey = lane_key_of.get((ln.pid, ln.tid))
            if wkey is None:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            sel = np.nonzero((l_key == wkey) & (keys[l_ev] == keys[call]) & (profile.start[l_ev] >= profile.start[call]))[0]
            if not len(sel):
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            dest = int(l_dev[sel[np.argmin(profile.start[l_ev[sel]])]])
            if in_dev[dest]:
                sync_src[dest] = src
    elif len(dev):
        bld.notes.append("the trace has no CUDA synchronization events (cuda_sync): waits of the host on the device "
                         "are inferred from the device rows for cudaDeviceSynchronize / cudaStreamSynchronize only; "
                         "event waits (cudaEventSynchronize, cudaStreamWaitEvent) could not be linked. Record them "
                         "with torch.profiler's experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)")
    for kind, cnt in unlinked.items():
        bld.notes.append(f"{cnt} '{kind}' row(s) name no cudaEventRecord / kernel in the trace: no sync edge for them")
    # waits inferred where a blocking device-wide/stream call has no sync row (beyond HTA: it has no edge then)
    waits = _blocking_names(profile, DEVICE_WAITS)
    calls = host[waits[profile.name[host]]]
    inferred = 0
    if len(dev):
        de = profile.end[dev]
        o = np.argsort(de, kind="stable")
        de_sorted, dev_by_end = de[o], dev[o]
        for c in calls.tolist():
            if c in synced_calls:
                continue
            j = int(np.searchsorted(de_sorted, profile.end[c], "right")) - 1
            if j >= 0 and de_sorted[j] >= profile.start[c]:
                cpu_sync.append((int(dev_by_end[j]), c))
                inferred += 1
    if inferred:
        bld.notes.append(f"{inferred} host wait(s) (cudaDeviceSynchronize / cudaStreamSynchronize) had no cuda_sync "
                         "row: linked to the last device row that ended during the call")
    if cpu_sync:
        src = np.array([x for x, _ in cpu_sync], np.int64)
        dst = np.array([y for _, y in cpu_sync], np.int64)
        bld.add_cross(src, False, dst, False, 0, SYNC, NO_ID, -1)
    op_bound = _device_role(profile, dev, bld, "gpu_compute_bound", "gpu_communication_bound")
    rule = _queue_rule(profile, all_dev, all_launcher, keys)
    _device_chains(bld, dev, launcher, keys, op_bound, bld.b["gpu_kernel_kernel_overhead"],
                   bld.b["gpu_kernel_launch_overhead"], rule, sync_src)
    if not len(host):
        bld.notes.append("no host ops or runtime calls start in the step: the path has nothing to start from")
    if not len(all_dev):
        bld.notes.append("no device rows: the path is on the host threads only")
    g = bld.build()
    g.notes.extend(n for n in bld.notes if n not in g.notes)
    if sum(stats.values()):
        g.notes.append("sync rows used: " + ", ".join(f"{k} {v}" for k, v in stats.items() if v))
    g.host_events, g.device_events = host, dev
    g.launcher_of = dict(zip(dev.tolist(), launcher.tolist()))
    _data_loading(profile, g, t0, t1, keys)
    return g


def _build_neuron(profile: Profile, t0: int, t1: int, t_end: int) -> Graph:
    from trntui.analysis.overview.roles import assign_roles

    bld = _Builder(profile, NEURON_BOUNDS)
    links = build_links(profile)
    roles = assign_roles(profile)
    _, tkeys = thread_codes(profile)
    keys = tkeys.astype(np.int64)
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)
    host_tier = tiers == int(Tier.DISPATCH)
    host = _window_host(profile, t0, t1, _cat_table(profile, {"cpu_op", "Operator", "privateuse1_runtime"}), host_tier)
    blocking = _blocking_names(profile, NEURON_WAITS)
    bld.host_chains(host, keys, bld.b["framework_cpu"], blocking)
    # device executions and their schedules
    names = _blocking_names(profile, frozenset(NEURON_DEVICE_NAMES))
    hw_cat = profile.cat_id("neuron_hw")
    dev_all, launcher_all = roles.device, roles.launcher
    in_win = (profile.start[dev_all] >= t0) & (profile.start[dev_all] <= t_end) if len(dev_all) else np.zeros(0, bool)
    sel = in_win & (launcher_all >= 0)
    if len(dev_all):
        sel &= (profile.cat[dev_all] == hw_cat) & names[profile.name[dev_all]]
    dev, launcher = dev_all[sel], launcher_all[sel]
    # the launchers must be scheduled from this step's host work
    sched = np.unique(launcher)
    rt_cat = _cat_table(profile, {"neuron_rt"})
    rt_rows = np.nonzero(rt_cat[profile.cat] & (profile.kind == EventKind.COMPLETE) & (profile.start >= t0)
                         & (profile.start <= t_end) & (profile.end > profile.start)
                         & (tiers[profile.lane] == int(Tier.RUNTIME)))[0]
    rt_rows = np.union1d(rt_rows, sched)
    bld.host_chains(rt_rows, keys, bld.b["runtime_overhead"], blocking)
    # dispatch: host call containing the schedule's start (else the op above it) -> nrta_execute_schedule
    in_host = np.zeros(len(profile), bool)
    in_host[host] = True
    src_l: list[int] = []
    dst_l: list[int] = []
    h_sorted = host[np.lexsort((-(profile.end[host] - profile.start[host]), profile.start[host]))]
    hs = profile.start[h_sorted]
    undispatched = 0
    for r in sched.tolist():
        top = _frontend_above(links, r)
        t = int(profile.start[r])
        c = -1
        if top >= 0 and in_host[top]:
            k = int(np.searchsorted(hs, t, "right")) - 1
            steps = 0
            while k >= 0 and steps < 256:
                h = int(h_sorted[k])
                if keys[h] == keys[top] and profile.start[h] <= t < profile.end[h]:
                    c = h
                    break
                k -= 1
                steps += 1
            if c < 0:
                c = top
        if c < 0:
            undispatched += 1
            continue
        src_l.append(c)
        dst_l.append(r)
    if src_l:
        s_arr = np.array(src_l, np.int64)
        d_arr = np.array(dst_l, np.int64)
        w = np.maximum(profile.start[d_arr] - profile.start[s_arr], 0)
        bld.add_cross(s_arr, True, d_arr, True, w, DISPATCH, s_arr, bld.b["dispatch_overhead"])
    if undispatched:
        bld.notes.append(f"{undispatched} nrta_execute_schedule row(s) link to no framework op of the step: their "
                         "executions start the path on their own (no dispatch edge)")
    # waits on the device: the last execution on the same process that ended before the wait's end
    waits = rt_rows[blocking[profile.name[rt_rows]]]
    if len(waits) and len(dev):
        de = profile.end[dev]
        o = np.argsort(de, kind="stable")
        de_s, dv_s = de[o], dev[o]
        wsrc, wdst = [], []
        for wv in waits.tolist():
            j = int(np.searchsorted(de_s, profile.end[wv], "right")) - 1
            if j >= 0 and de_s[j] >= profile.start[wv]:
                wsrc.append(int(dv_s[j]))
                wdst.append(wv)
        if wsrc:
            bld.add_cross(np.array(wsrc), False, np.array(wdst), False, 0, SYNC, NO_ID, -1)
    comm = _blocking_names(profile, frozenset({"cc_running", "cc_exec_barrier"}))
    op_bound = np.where(comm[profile.name[dev]], bld.b["neuroncore_communication"], bld.b["neuroncore_compute"]).astype(np.int16)
    _device_chains(bld, dev, launcher, keys, op_bound, bld.b["neuroncore_idle"], bld.b["runtime_queue_delay"],
                   _idle_core_rule, {})
    if not len(dev):
        bld.notes.append("no nc_exec_running rows linked to a runtime schedule in the step: the path is on the host "
                         "and runtime rows only")
    g = bld.build()
    g.host_events, g.device_events = np.union1d(host, rt_rows), dev
    g.launcher_of = dict(zip(dev.tolist(), launcher.tolist()))
    _data_loading(profile, g, t0, t1, keys)
    return g


def _frontend_above(links, e: int) -> int:
    cur, seen = e, {e}
    for _ in range(16):
        preds = [q for q, _r in links.predecessors(cur) if q not in seen]
        if not preds:
            return -1
        cur = preds[0]
        seen.add(cur)
        if links.frontend[cur]:
            return cur
    return -1


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


# -------------------------------------------------------------------------------------------------------------
# the longest path


def _segcummax(val: np.ndarray, seg_id: np.ndarray) -> np.ndarray:
    """Running maximum of `val` within contiguous segments."""
    if not len(val):
        return val.copy()
    lo, hi = int(val.min()), int(val.max())
    big = hi - lo + 1
    nseg = int(seg_id[-1]) + 1
    if big * nseg < (1 << 62):
        shifted = (val - lo) + seg_id * big
        return np.maximum.accumulate(shifted) - seg_id * big + lo
    out = np.empty_like(val)  # (values too spread for one pass: per segment)
    starts = np.flatnonzero(np.r_[True, seg_id[1:] != seg_id[:-1]])
    ends = np.r_[starts[1:], len(val)]
    for a, b in zip(starts.tolist(), ends.tolist()):
        out[a:b] = np.maximum.accumulate(val[a:b])
    return out


def _seed_cross(g: Graph, xw: np.ndarray, P: np.ndarray, seg_id: np.ndarray) -> np.ndarray:
    """Best cross edge into each node, from the cross edges taken in the time order of their destinations: the
    longest distance to an edge's source is then known from the edges already taken (a running maximum of
    `best in − P` per chain, looked up by position). Equal timestamps can order two edges wrongly; the result is
    then a lower bound that the caller's relaxation finishes (usually in one pass)."""
    from bisect import bisect_right, insort

    order = np.lexsort((g.x_dst, g.node_ts[g.x_dst]))
    src, dst, w = g.x_src[order].tolist(), g.x_dst[order].tolist(), xw[order].tolist()
    Pl, segl = P.tolist(), seg_id.tolist()
    positions: dict[int, list[int]] = {}
    vals: dict[int, list[int]] = {}
    prefix: dict[int, list[int]] = {}
    best: dict[int, int] = {}
    for s, d, ww in zip(src, dst, w):
        sg = segl[s]
        ps = positions.get(sg)
        base = 0
        if ps:
            k = bisect_right(ps, s)
            if k:
                base = max(0, prefix[sg][k - 1])
        cand = Pl[s] + base + ww
        if cand <= best.get(d, 0):
            continue
        best[d] = cand
        v = cand - Pl[d]
        sd = segl[d]
        pl = positions.setdefault(sd, [])
        vl = vals.setdefault(sd, [])
        pm = prefix.setdefault(sd, [])
        if pl and pl[-1] == d:
            vl[-1] = max(vl[-1], v)
            pm[-1] = max(pm[-2], vl[-1]) if len(pm) > 1 else vl[-1]
        elif not pl or pl[-1] < d:
            pl.append(d)
            vl.append(v)
            pm.append(max(pm[-1], v) if pm else v)
        else:  # out of time order within the chain (equal timestamps): insert, redo the running maximum after it
            k = bisect_right(pl, d)
            if k and pl[k - 1] == d:
                vl[k - 1] = max(vl[k - 1], v)
                k -= 1
            else:
                insort(pl, d)
                vl.insert(k, v)
                pm.insert(k, 0)
            for j in range(k, len(pl)):
                pm[j] = max(pm[j - 1], vl[j]) if j else vl[j]
    B = np.zeros(len(P), np.int64)
    if best:
        B[np.fromiter(best.keys(), np.int64, len(best))] = np.fromiter(best.values(), np.int64, len(best))
    return B


def _longest(g: Graph, cw: np.ndarray, xw: np.ndarray):
    """Longest path to every node: dist = P + running max over the chain of (best cross edge in - P), repeated
    until no cross edge improves a node. Returns (dist, B, P, val, M)."""
    n = g.nodes
    seg_id = np.cumsum(g.seg_first) - 1 if n else np.zeros(0, np.int64)
    w = np.where(g.seg_first, 0, cw)
    P = np.cumsum(w)
    if n:
        first = np.flatnonzero(g.seg_first)
        P = P - P[first][seg_id]
    dist = P.copy()
    B = np.zeros(n, np.int64)
    val = -P
    M = _segcummax(val, seg_id)
    if len(g.x_src) and n:
        # seed with one pass over the cross edges in time order: the relaxation below needs one pass per
        # chain switch otherwise (a step that syncs after every op switches thousands of times)
        B0 = _seed_cross(g, xw, P, seg_id)
        dist = P + _segcummax(B0 - P, seg_id)
    for _ in range(len(g.x_src) + 2):
        B = np.zeros(n, np.int64)
        if len(g.x_src):
            np.maximum.at(B, g.x_dst, dist[g.x_src] + xw)
        val = B - P
        M = _segcummax(val, seg_id)
        new = P + M
        if np.array_equal(new, dist):
            break
        dist = new
    else:
        g.notes.append("the graph has a cycle (bad timestamps?): the path may be incomplete")
    return dist, B, P, val, M


def _reconstruct(g: Graph, cw: np.ndarray, xw: np.ndarray, dist, B, P, val, M) -> Path:
    n = g.nodes
    empty = np.zeros(0, np.int64)
    if not n:
        return Path(empty.astype(np.int8), empty, empty, empty.astype(np.int16), empty, empty, 0)
    entry = np.maximum.accumulate(np.where(val == M, np.arange(n), -1))
    xo = np.argsort(g.x_dst, kind="stable")
    xd = g.x_dst[xo]
    best = int(dist.max())
    v = int(np.flatnonzero(dist == best)[-1])
    kinds, weights, events, bounds, srcs, dsts = [], [], [], [], [], []
    seen = set()
    while True:
        if v in seen:
            break
        seen.add(v)
        e = int(entry[v])
        if v > e:
            r = np.arange(v, e, -1)
            kinds.append(g.chain_kind[r])
            weights.append(cw[r])
            events.append(g.chain_event[r])
            bounds.append(g.chain_bound[r])
            srcs.append(r - 1)
            dsts.append(r)
        if B[e] <= 0:
            break
        a, b = np.searchsorted(xd, e, "left"), np.searchsorted(xd, e, "right")
        cand = xo[a:b]
        hit = cand[dist[g.x_src[cand]] + xw[cand] == B[e]]
        if not len(hit):
            break
        x = int(hit[0])
        kinds.append(g.x_kind[x:x + 1])
        weights.append(xw[x:x + 1])
        events.append(g.x_event[x:x + 1])
        bounds.append(g.x_bound[x:x + 1])
        srcs.append(g.x_src[x:x + 1])
        dsts.append(g.x_dst[x:x + 1])
        v = int(g.x_src[x])
    if not kinds:
        return Path(empty.astype(np.int8), empty, empty, empty.astype(np.int16), empty, empty, 0)
    cat = lambda xs: np.concatenate(xs)[::-1]  # noqa: E731
    return Path(cat(kinds), cat(weights).astype(np.int64), cat(events), cat(bounds), cat(srcs), cat(dsts), best)


def _breakdown(g: Graph, path: Path) -> dict[str, int]:
    nb = len(g.bounds)
    sel = path.bound >= 0
    sums = np.bincount(path.bound[sel].astype(np.int64), weights=path.weight[sel], minlength=nb)
    return {b: int(round(sums[k])) for k, b in enumerate(g.bounds)}


# -------------------------------------------------------------------------------------------------------------
# what-if

_SPEC_RX = re.compile(r"^\s*(.+?)\s*=\s*([0-9]*\.?[0-9]+)\s*(x|ns|us|µs|ms|s)\s*$")
_UNIT_NS = {"ns": 1, "us": 1000, "µs": 1000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_what_if(spec: str) -> tuple[str, float, bool]:
    """`NAME=0.5x` → (NAME, 0.5, relative); `NAME=100us` → (NAME, 100000.0, absolute ns)."""
    m = _SPEC_RX.match(spec or "")
    if not m:
        raise TrntuiError(f"--what-if {spec!r}: expected NAME=FACTORx or NAME=TIME (e.g. 'aten::mul=0.5x', "
                          "'aten::mul=100us', 'kernels=0.8x', 'path=0.5x')")
    name, num, unit = m.group(1), float(m.group(2)), m.group(3)
    if unit == "x":
        return name, num, True
    return name, num * _UNIT_NS[unit], False


def apply_what_if(cp: CriticalPath, specs: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Chain and cross weights with the specs applied, and how many events they matched.

    - `kernels`: every device row (kernel, memcpy, memset; nc_exec_running) — its duration;
    - `path`: every event on the path — all edges attributed to it;
    - a name (glob with `*`, `?`): host ops of that name with everything they contain on their thread and the
      device rows they launched; device rows of that name. `=TIME` sets each matched event's duration."""
    g, p = cp.graph, cp.profile
    cf = np.ones(g.nodes, np.float64)
    xf = np.ones(len(g.x_src), np.float64)
    matched: set[int] = set()
    dev_set = np.zeros(len(p), bool)
    dev_set[g.device_events] = True
    is_dev_edge = np.zeros(g.nodes, bool)
    is_dev_edge[1:] = (g.chain_kind[1:] == OP) & dev_set[g.node_event[1:]] & ~g.node_start[1:]
    for spec in specs:
        name, num, rel = parse_what_if(spec)
        if name == "kernels":
            sel = np.nonzero(is_dev_edge)[0]
            matched.update(g.node_event[sel].tolist())
            cf[sel] = num if rel else num / np.maximum(cw_of(g, sel), 1)
            continue
        if name == "path":
            evs = np.unique(cp.path.event[cp.path.event >= 0])
            matched.update(evs.tolist())
            if not rel:
                raise TrntuiError(f"--what-if {spec!r}: 'path' takes a factor (e.g. path=0.5x)")
            on = np.zeros(len(p), bool)
            on[evs] = True
            ce = g.chain_event
            cf[(ce >= 0) & on[np.maximum(ce, 0)]] = num
            xe = g.x_event
            xf[(xe >= 0) & on[np.maximum(xe, 0)]] = num
            continue
        rx = re.compile(fnmatch.translate(name))
        ids = [k for k, nm in enumerate(p.names) if rx.match(nm)]
        if not ids:
            raise TrntuiError(f"--what-if {spec!r}: no event is named {name!r}")
        hit = np.isin(p.name[g.node_event], ids) & g.node_start
        starts = np.nonzero(hit)[0]
        # outer events last, so that they win over events of the same spec nested in them
        evs = g.node_event[starts]
        durs = p.end[evs] - p.start[evs]
        order = np.argsort(durs, kind="stable")
        for j in order.tolist():
            ev = int(evs[j])
            sp = int(starts[j])
            ep = g.end_node.get(ev)
            if ep is None:
                continue
            dur = max(int(durs[j]), 1)
            f = num if rel else num / dur
            matched.add(ev)
            if dev_set[ev]:
                cf[ep] = f
                continue
            cf[sp + 1: ep + 1] = f  # everything on its thread from its start to its end
            # its dispatch edges (Neuron: the op's time before nrta_execute_schedule is its own time)
            inner = g.node_event[sp: ep + 1]
            disp = (g.x_kind == DISPATCH) & np.isin(g.x_event, inner)
            xf[disp] = f
            # the device rows it (or a call inside it) launched, directly or through a schedule it dispatched
            if g.launcher_of:
                devs = np.fromiter(g.launcher_of.keys(), np.int64, count=len(g.launcher_of))
                lns = np.fromiter(g.launcher_of.values(), np.int64, count=len(g.launcher_of))
                scheds = g.node_event[g.x_dst[disp]] if disp.any() else np.zeros(0, np.int64)
                mine = devs[np.isin(lns, inner) | np.isin(lns, scheds)]
                for d in mine.tolist():
                    e2 = g.end_node.get(d)
                    if e2 is not None:
                        cf[e2] = f
    cw = np.round(g.chain_w * cf).astype(np.int64)
    xw = np.round(g.x_w * xf).astype(np.int64)
    return cw, xw, len(matched)


def cw_of(g: Graph, sel: np.ndarray) -> np.ndarray:
    return g.chain_w[sel].astype(np.float64)


# -------------------------------------------------------------------------------------------------------------
# per step


def _steps(profile: Profile):
    from trntui.analysis.overview.roles import assign_roles
    from trntui.analysis.overview.steps import find_steps

    return find_steps(profile, assign_roles(profile))


def annotation_window(profile: Profile, annotation: str, instance: str | int | None = None) -> tuple[int, int, str]:
    """HTA's window: the rows whose name contains `annotation`, in time order; `instance` N (0-based) or
    "A:B" (inclusive) picks some, none means all of them. Returns (start, end, label)."""
    ids = [k for k, nm in enumerate(profile.names) if annotation in nm]
    if not ids:
        raise TrntuiError(f"annotation {annotation!r}: no event name contains it")
    rows = np.nonzero(np.isin(profile.name, ids) & (profile.kind == EventKind.COMPLETE))[0]
    if not len(rows):
        raise TrntuiError(f"annotation {annotation!r}: no complete event has that name")
    rows = rows[np.argsort(profile.start[rows], kind="stable")]
    if instance is None or instance == "":
        a, b = 0, len(rows) - 1
    else:
        txt = str(instance)
        try:
            a, b = (int(x) for x in txt.split(":", 1)) if ":" in txt else (int(txt), int(txt))
        except ValueError:
            raise TrntuiError(f"instance {txt!r}: expected N or A:B") from None
        if not (0 <= a <= b < len(rows)):
            raise TrntuiError(f"instance {txt!r}: {annotation!r} has {len(rows)} instance(s) (0..{len(rows) - 1})")
    sel = rows[a: b + 1]
    label = f"{annotation!r} instance {a}" + (f"..{b}" if b != a else "")
    return int(profile.start[sel].min()), int(profile.end[sel].max()), label


def critical_paths(profile: Profile, steps_spec: str | None = None, *, join: bool = False,
                   annotation: str | None = None, instance: str | int | None = None,
                   limit: int | None = None) -> list[CriticalPath]:
    """The critical path of the longest step (no `steps_spec`), of each selected step, or of the selected steps
    as one window (`join`: HTA's advice for pipelined training, two iterations at once). `annotation` (with
    `instance`) takes HTA's window instead: the span of the named rows."""
    from trntui.analysis.overview import select_steps

    if annotation:
        t0, t1, label = annotation_window(profile, annotation, instance)
        cp = critical_path(profile, t0, t1, step=0, steps=[0])
        cp.notes.insert(0, f"window: {label}")
        return [cp]
    table = _steps(profile)
    if not table.steps:
        raise TrntuiError("the profile has no events to find a critical path in")
    if steps_spec:
        chosen = select_steps(table, steps_spec)
    else:
        chosen = [max(table.steps, key=lambda s: (s.duration, -s.start))]
    notes = []
    if table.synthetic:
        notes.append("no ProfilerStep#N in the trace: the path is over the whole trace")
    elif not steps_spec and len(table.steps) > 1:
        notes.append(f"the longest of {len(table.steps)} steps (--steps N picks another)")
    if limit is not None and not join and len(chosen) > limit:
        keep = sorted(sorted(chosen, key=lambda s: (-s.duration, s.start))[:limit], key=lambda s: s.start)
        notes.append(f"the {limit} longest of the {len(chosen)} selected steps (--join-steps: one path over all)")
        chosen = keep
    groups = [chosen] if join else [[s] for s in chosen]
    out = []
    for grp in groups:
        cp = critical_path(profile, grp[0].host_start, max(s.host_end for s in grp), grp[0].start,
                           max(s.end for s in grp), step=grp[0].number, steps=[s.number for s in grp])
        cp.notes[:0] = notes
        out.append(cp)
    return out


def critical_path(profile: Profile, host_start: int, host_end: int, start: int | None = None, end: int | None = None,
                  *, step: int = 0, steps: list[int] | None = None) -> CriticalPath:
    """The critical path of one window: host events starting in [host_start, host_end] and the device work
    they launched; the step's span is [start, end] (default: the host window)."""
    from trntui.analysis.overview.roles import is_neuron

    start = host_start if start is None else start
    end = host_end if end is None else end
    g = build_graph(profile, host_start, host_end, end)
    dist, B, P, val, M = _longest(g, g.chain_w, g.x_w)
    path = _reconstruct(g, g.chain_w, g.x_w, dist, B, P, val, M)
    bd = _breakdown(g, path)
    nodes = np.union1d(path.src, path.dst) if len(path.src) else np.zeros(0, np.int64)
    on_path = np.unique(g.node_event[nodes]) if len(nodes) else np.zeros(0, np.int64)
    # the path may start before the step's extended start (device rows of the previous step's launches)
    lo = min(start, int(g.node_ts[path.src[0]])) if len(path.src) else start
    hi = max(end, int(g.node_ts[path.dst[-1]])) if len(path.dst) else end
    return CriticalPath(step, steps or [step], lo, hi, host_start, host_end, is_neuron(profile), g, path, bd,
                        on_path, profile, list(g.notes))


def step_path(profile: Profile) -> CriticalPath:
    """The critical path of the longest step, computed once per profile (the app's screen, the timeline's marks
    and the chain pane share it). Raises TrntuiError when there is no step."""
    cached = profile.cache.get("critical_path")
    if cached is None:
        cached = critical_paths(profile)[0]
        profile.cache["critical_path"] = cached
    return cached


def cached_step_path(profile: Profile) -> CriticalPath | None:
    """`step_path` if it was computed already, else None (never computes)."""
    return profile.cache.get("critical_path")


def path_events(profile: Profile) -> np.ndarray:
    """Events on the critical path of the longest step (empty when the profile has no step)."""
    try:
        return step_path(profile).on_path
    except TrntuiError:
        return np.zeros(0, np.int64)
