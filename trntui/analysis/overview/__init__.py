"""The overview: why a step is slow and what to do about it (the TensorBoard profiler plugin's Overview,
Kernel and Memory views, rebuilt on the columnar `Profile`, for Kineto and Neuron profiles alike).

`overview(profile, steps_spec=None)` returns an `Overview` of plain data: the step-time breakdown per step and
averaged, device metrics, the kernel tables, the computation/communication overlap, the memory curves and the
recommendations. `Overview.to_dict()` is the stable JSON interface of `trntui overview --format json`.
Pure numpy; no Textual. How each figure is computed, and where trntui departs from the plugin: docs/overview.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.overview import ranges as R
from trntui.analysis.overview.breakdown import Breakdown, Communication, breakdown, communication
from trntui.analysis.overview.device import (
    DeviceSummary,
    dataparallel_devices,
    device_properties,
    gpu_metrics,
    neuron_core_metrics,
    tc_eligible_share,
    tensor_core_names_apply,
)
from trntui.analysis.overview.kernels import (
    KernelFacts,
    KernelTables,
    kernel_facts,
    kernel_tables,
    neuron_execution_tables,
)
from trntui.analysis.overview.memory import MemoryReport, memory_curves
from trntui.analysis.overview.recommend import Recommendation, recommend
from trntui.analysis.overview.roles import Roles, assign_roles, kernel_ops
from trntui.analysis.overview.steps import Step, StepTable, find_steps
from trntui.model.profile import Profile

__all__ = ["Overview", "overview", "step_rows", "Recommendation", "Step"]

GPU_CATEGORIES = ("Kernel", "Memcpy", "Memset", "Runtime")
"""Hidden for a trace without device work (the plugin's `show_gpu`)."""


@dataclass
class Overview:
    neuron: bool
    device_kind: str
    backend: str
    categories: tuple[str, ...]
    """All categories, in priority order."""
    visible: tuple[str, ...]
    """The categories shown (JSON keys): Communication only when the trace has collectives; Kernel, Memcpy,
    Memset and Runtime only when it has device work (always for Neuron)."""
    steps: list[Step]
    costs: np.ndarray
    """ns, (steps, categories)."""
    step_table: StepTable
    average_ns: dict[str, float]
    """Mean over the steps per category, and `Total` (the average step time)."""
    communication: Communication | None
    devices: DeviceSummary | None
    kernel_tables: KernelTables | None
    memory: MemoryReport
    recommendations: list[Recommendation] = field(default_factory=list)
    neuron_idle: dict[str, float] | None = None
    names_seen: frozenset[str] = frozenset()
    comm_libs: set[str] = field(default_factory=set)
    device_pids: int = 0
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    selected: str | None = None
    """The `--steps` selection, if any."""
    _tc_share: Any = None

    def tc_eligible_share(self) -> float:
        return float(self._tc_share()) if self._tc_share else 0.0

    @property
    def has_device(self) -> bool:
        return self.devices is not None and bool(self.devices.devices)

    def step_costs(self, k: int) -> dict[str, int]:
        return {c: int(self.costs[k, self.categories.index(c)]) for c in self.visible}

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON document (µs floats, percentages 0-100; names from the trace made terminal-safe)."""
        from trntui.textsafe import safe_text

        us = lambda ns: round(float(ns) / 1000.0, 3)  # noqa: E731
        pct = lambda x: None if x is None else round(100.0 * float(x), 2)  # noqa: E731
        steps = [
            {
                "step": s.number,
                "start_us": us(s.start),
                "total_us": us(s.duration),
                "breakdown_us": {c: us(v) for c, v in self.step_costs(k).items()},
            }
            for k, s in enumerate(self.steps)
        ]
        total = self.average_ns.get("Total", 0.0)
        average = {
            "total_us": us(total),
            "breakdown_us": {c: us(self.average_ns.get(c, 0.0)) for c in self.visible},
            "breakdown_pct": {c: round(100.0 * self.average_ns.get(c, 0.0) / total, 2) if total else 0.0 for c in self.visible},
        }
        gpu: dict[str, Any] = {
            "utilization_pct": None,
            "sm_efficiency_pct": None,
            "achieved_occupancy_pct": None,
            "tensor_core_pct": None,
            "devices": [],
        }
        if self.devices is not None:
            d = self.devices
            gpu.update(
                utilization_pct=pct(d.utilization),
                sm_efficiency_pct=pct(d.sm_efficiency),
                achieved_occupancy_pct=None if d.occupancy is None else round(d.occupancy, 2),
                tensor_core_pct=pct(d.tensor_core),
            )
            gpu["devices"] = [
                {
                    "id": m.id,
                    "label": safe_text(m.label),
                    "name": safe_text(m.name),
                    "memory_bytes": m.memory_bytes,
                    "compute_capability": m.compute_capability,
                    "kernels": m.kernels,
                    "busy_us": us(m.busy_ns),
                    "utilization_pct": pct(m.utilization),
                    "sm_efficiency_pct": pct(m.sm_efficiency),
                    "achieved_occupancy_pct": None if m.occupancy is None else round(m.occupancy, 2),
                    "tensor_core_pct": pct(m.tensor_core),
                }
                for m in d.devices
            ]
        kernels = []
        kernels_by_op = []
        if self.kernel_tables is not None:
            known = self.kernel_tables.tensor_cores_known
            for r in self.kernel_tables.by_name:
                kernels.append(_kernel_row(r, us, known))
            for r in self.kernel_tables.by_op:
                row = _kernel_row(r, us, known)
                row["op"] = safe_text(r.op)
                if r.launch:
                    row["grid"], row["block"], row["registers_per_thread"], row["shared_memory"] = r.launch
                    row["op_tc_eligible"] = r.op_tc_eligible
                kernels_by_op.append(row)
        comm = None
        if self.communication is not None:
            c = self.communication
            comm = {
                "steps": [
                    {
                        "step": s.number,
                        "computation_us": us(c.computation[k]),
                        "communication_us": us(c.communication[k]),
                        "overlap_us": us(c.overlap[k]),
                        "other_us": us(c.other[k]),
                    }
                    for k, s in enumerate(self.steps)
                ],
                "average": {
                    f"{key}_us": us(np.mean(getattr(c, key))) if len(self.steps) else 0.0
                    for key in ("computation", "communication", "overlap", "other")
                },
            }
        memory = []
        for cv in self.memory.curves:
            t, a, r = cv.downsample(512)
            memory.append(
                {
                    "device": safe_text(cv.device),
                    "records": cv.records,
                    "peak_allocated_bytes": cv.peak_allocated,
                    "peak_reserved_bytes": cv.peak_reserved,
                    "peak_time_us": us(cv.peak_t),
                    "peak_op": safe_text(cv.peak_op),
                    "curve": {"time_us": [us(x) for x in t.tolist()], "allocated_bytes": a.tolist(), "reserved_bytes": r.tolist()},
                }
            )
        return {
            "kind": "neuron" if self.neuron else "kineto",
            "device": self.backend or "CPU",
            "categories": list(self.visible),
            "selected_steps": self.selected,
            "steps": steps,
            "average": average,
            "gpu": gpu,
            "kernels": kernels,
            "kernels_by_op": kernels_by_op,
            "communication": comm,
            "memory": memory,
            "memory_records_skipped": self.memory.skipped,
            "recommendations": [
                {"rule": r.rule, "message": r.message, "value": r.value, "source": r.source} for r in self.recommendations
            ],
            "notes": self.notes(),
        }

    def notes(self) -> list[str]:
        out = []
        st = self.step_table
        if st.empty_steps:
            out.append(f"{st.empty_steps:,} ProfilerStep#N span{'s' if st.empty_steps != 1 else ''} of no duration "
                       "left out of the steps (a negative duration in the trace, read as an instant)")
        if st.synthetic:
            out.append(("no ProfilerStep#N of any duration" if st.empty_steps else "no ProfilerStep#N in the trace")
                       + ": one step spans the host ops")
        if st.dropped_tail:
            out.append(f"the last {st.dropped_tail} step(s) were left out: they launched too little device work "
                       "(probably cut off by the profiler)")
        if self.devices is not None and self.devices.device_from_lane:
            out.append("kernels carry no args.device: devices are the kernel lanes' pids")
        return out


def _kernel_row(r, us, tc_known: bool) -> dict[str, Any]:
    from trntui.textsafe import safe_text

    return {
        "name": safe_text(r.name),
        "calls": r.calls,
        "total_us": us(r.total_ns),
        "mean_us": round(r.mean_ns / 1000.0, 3),
        "max_us": us(r.max_ns),
        "min_us": us(r.min_ns),
        "blocks_per_sm": None if r.blocks_per_sm is None else round(r.blocks_per_sm, 2),
        "occupancy_pct": None if r.occupancy is None else round(r.occupancy, 2),
        "tensor_cores": r.tensor_cores if tc_known else None,
    }


def select_steps(table: StepTable, spec: str | None) -> list[Step]:
    if not spec:
        return list(table.steps)
    from trntui.analysis.select import parse_steps
    from trntui.errors import TrntuiError

    ranges = parse_steps(spec)
    if table.synthetic:
        raise TrntuiError("--steps: this profile has no ProfilerStep#N scopes")
    chosen = [s for s in table.steps if any(a <= s.number <= b for a, b in ranges)]
    if not chosen:
        nums = [s.number for s in table.steps]
        have = f"{min(nums)}-{max(nums)}" if nums else "none"
        raise TrntuiError(f"--steps {spec}: no such step (this profile's overview has steps {have})")
    return chosen


def overview(profile: Profile, steps_spec: str | None = None) -> Overview:
    """The overview of a profile (cached on it when no step selection is given)."""
    if not steps_spec and "overview" in profile.cache:
        return profile.cache["overview"]
    roles = assign_roles(profile)
    table = find_steps(profile, roles)
    chosen = select_steps(table, steps_spec)
    bd = breakdown(profile, roles, chosen)
    average = {c: float(bd.costs[:, k].mean()) if len(chosen) else 0.0 for k, c in enumerate(roles.categories)}
    average["Total"] = float(bd.totals.mean()) if len(chosen) else 0.0
    comm = communication(roles, bd, chosen)
    has_device = bool(len(roles.device)) or bool(len(bd.role_ranges[roles.index("Runtime")][0]))
    visible = tuple(
        c for c in roles.categories
        if not (c == "Communication" and comm is None) and not (not roles.neuron and c in GPU_CATEGORIES and not has_device)
    )
    span = (chosen[0].start, chosen[-1].end) if chosen else (0, 0)
    facts: KernelFacts | None = None
    ktables: KernelTables | None = None
    devices: DeviceSummary | None = None
    tc_share = None
    def in_steps(idx: np.ndarray) -> np.ndarray | None:
        """Kernels of the chosen steps (by start), or None for all of them (no selection)."""
        if not steps_spec:
            return None
        ks = profile.start[idx]
        s0 = np.array([s.start for s in chosen], np.int64)
        s1 = np.array([s.end for s in chosen], np.int64)
        k = np.searchsorted(s0, ks, side="right") - 1
        return (k >= 0) & (ks < s1[np.maximum(k, 0)])

    if roles.neuron:
        if len(roles.kernels):
            from trntui.analysis.links import build_links

            ktables = neuron_execution_tables(profile, build_links(profile), roles.kernels, in_steps(roles.kernels))
            devices = neuron_core_metrics(profile, roles.kernels, span, ktables.executions_per_core)
    elif len(roles.kernels):
        facts = kernel_facts(profile, roles.kernels)
        op_of = kernel_ops(profile, roles, facts.idx)
        ktables = kernel_tables(profile, facts, op_of, in_steps(facts.idx))
        ktables.tensor_cores_known = tensor_core_names_apply(profile)
        devices = gpu_metrics(profile, facts, op_of, span)
        f = facts
        tc_share = lambda: tc_eligible_share(profile, f, op_of)  # noqa: E731
    ov = Overview(
        neuron=roles.neuron,
        device_kind=profile.meta.device_kind,
        backend=profile.meta.backend,
        categories=roles.categories,
        visible=visible,
        steps=chosen,
        costs=bd.costs,
        step_table=table,
        average_ns=average,
        communication=comm,
        devices=devices,
        kernel_tables=ktables,
        memory=memory_curves(profile),
        names_seen=roles.names_seen,
        comm_libs=roles.comm_libs,
        device_pids=dataparallel_devices(profile) if "DataParallel.forward" in roles.names_seen else 0,
        device_properties=device_properties(profile),
        selected=steps_spec or None,
        _tc_share=tc_share,
    )
    if roles.neuron:
        ov.neuron_idle = _neuron_idle(bd, chosen)
    ov.recommendations = recommend(ov)
    if not steps_spec:
        profile.cache["overview"] = ov
    return ov


def step_rows(profile: Profile, steps_spec: str | None = None) -> list[dict[str, Any]]:
    """Per step (ns): `step`, `start_ns`, `end_ns`, `total_ns`, `breakdown_ns` {category: ns}, and the
    computation / communication / overlap / other split (zeros without collectives). Only the breakdown: no
    kernel args are read, so it is cheap (the per-rank figures of a multi-rank job are built from it)."""
    roles = assign_roles(profile)
    chosen = select_steps(find_steps(profile, roles), steps_spec)
    bd = breakdown(profile, roles, chosen)
    comm = communication(roles, bd, chosen)
    rows = []
    for k, s in enumerate(chosen):
        row: dict[str, Any] = {
            "step": s.number,
            "start_ns": s.start,
            "end_ns": s.end,
            "total_ns": s.duration,
            "breakdown_ns": {c: int(bd.costs[k, j]) for j, c in enumerate(roles.categories)},
        }
        for key in ("computation", "communication", "overlap", "other"):
            row[f"{key}_ns"] = int(getattr(comm, key)[k]) if comm is not None else (s.duration if key == "other" else 0)
        rows.append(row)
    return rows


def _neuron_idle(bd: Breakdown, steps: list[Step]) -> dict[str, float] | None:
    """Idle time of the NeuronCores between their executions inside each step (first start to last end),
    over all steps: share of that active span, and merged executions per step."""
    busy = bd.role_ranges[0]
    if not len(busy[0]) or not steps:
        return None
    s0 = np.array([s.start for s in steps], np.int64)
    s1 = np.array([s.end for s in steps], np.int64)
    pieces = R.intersect(busy, R.merge(s0, s1))
    if not len(pieces[0]):
        return None
    k = np.searchsorted(s0, pieces[0], side="right") - 1
    first = np.full(len(steps), np.iinfo(np.int64).max, np.int64)
    last = np.full(len(steps), np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, k, pieces[0])
    np.maximum.at(last, k, pieces[1])
    count = np.bincount(k, minlength=len(steps))
    has = count > 0
    active = (last - first)[has].sum()
    busy_ns = np.bincount(k, weights=(pieces[1] - pieces[0]), minlength=len(steps))[has].sum()
    if active <= 0:
        return None
    return {
        "idle_share": float((active - busy_ns) / active),
        "idle_ns": float(active - busy_ns),
        "active_ns": float(active),
        "executions_per_step": float(count[has].mean()),
    }
