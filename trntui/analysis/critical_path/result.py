"""A computed critical path as a result: `CriticalPath` (breakdown, bound, top events, the longest waiting
stretches, the JSON of `trntui overview`) and its what-if re-runs (`--what-if`: events scaled or set, the path
recomputed, `WhatIf`)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.critical_path.graph import DISPATCH, OP, OVERHEAD_BOUNDS, _US, Graph, Path
from trntui.analysis.critical_path.longest import _breakdown, _longest, _reconstruct
from trntui.errors import TrntuiError
from trntui.model.profile import Profile


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
# what-if

_SPEC_RX = re.compile(r"^\s*(.+?)\s*=\s*([0-9]*\.?[0-9]+)\s*(x|ns|us|µs|ms|s)\s*$")
MAX_WHAT_IF_FACTOR = 1e6
"""The largest what-if factor (a million times longer: the path's weights stay far inside int64 ns)."""
MAX_WHAT_IF_NS = 10**15
"""The longest what-if time, ns (11.6 days for one event)."""
_UNIT_NS = {"ns": 1, "us": 1000, "µs": 1000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_what_if(spec: str) -> tuple[str, float, bool]:
    """`NAME=0.5x` → (NAME, 0.5, relative); `NAME=100us` → (NAME, 100000.0, absolute ns)."""
    m = _SPEC_RX.match(spec or "")
    if not m:
        raise TrntuiError(f"--what-if {spec!r}: expected NAME=FACTORx or NAME=TIME (e.g. 'aten::mul=0.5x', "
                          "'aten::mul=100us', 'kernels=0.8x', 'path=0.5x')")
    name, num, unit = m.group(1), float(m.group(2)), m.group(3)
    if unit == "x":
        if num > MAX_WHAT_IF_FACTOR:  # (a 40-digit factor wrapped the int64 weights: "saves 100% of the step")
            raise TrntuiError(f"--what-if {spec[:80]!r}: the factor must be at most {MAX_WHAT_IF_FACTOR:,.0f}x")
        return name, num, True
    ns = num * _UNIT_NS[unit]
    if ns > MAX_WHAT_IF_NS:
        raise TrntuiError(f"--what-if {spec[:80]!r}: the time must be at most {MAX_WHAT_IF_NS // 10**9:,} s")
    return name, ns, False


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
