"""Per-run metrics of `trntui compare`: the side-by-side summary (one row per run) and the runs it compares.

Metrics per run (µs for times), as shown by `trntui compare` and usable in `--fail-if` rules:

- `device_time`: torch's "Self <DEV> time total" (Σ self device time over device rows, key_averages footer);
  when the trace has hardware executions but no device rows in the table, the summed LNC-merged execution
  time. None for a CPU-only run.
- `self_cpu`: torch's "Self CPU time total" (Σ self CPU over all rows, key_averages footer).
- `dispatches`: operator executions that reached the device (kernels, `nc_exec_running`; Neuron LNC
  per-physical-core duplicates merged). None for a CPU-only run.
- `host_ops`: top-level operator calls: `cpu_op` events (plus compiled-graph calls, `Torch-Compiled Region*`)
  that have no other such operator call around them on their thread, inside the profiled step(s).
  Dynamo's guard check (`TorchDynamo Cache Lookup`) is bookkeeping, not an operator call.
  `ProfilerStep#N` and other `record_function` scopes are transparent wrappers: ops inside them still count as
  top level; ops nested in another op (aten::mean → aten::sum) do not. Naive RMSNorm = 6 (mul, mean, add,
  rsqrt, mul, mul); `torch.rms_norm` = 1; the compiled function = 1 (its region).
- `span`: wall time of the profiled step(s): first `ProfilerStep#N` start to last step end (the whole trace's
  span when it has no steps).
- `busy` / `idle`: time the hardware was executing / waiting inside its active window (first execution start
  to last execution end, union over all hardware lanes). None without hardware lanes.

Ops are matched across runs by (name, CPU-or-device row[, input shapes]); the op diff carries, per run,
# Calls, Self CPU and Self device, and per non-baseline run the deltas against the baseline (the first run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from trntui.analysis.gaps import GapReport, device_dispatches, dispatch_events, gap_report, merge_intervals
from trntui.analysis.key_averages import FILTERED_NAMES, OpTable, key_averages
from trntui.model.profile import NO_ID, Profile

METRICS = ("device_time", "self_cpu", "dispatches", "host_ops", "span", "busy", "idle")
"""Names usable in `--fail-if` rules and the keys of `RunMetrics.values()`."""
TIME_METRICS = frozenset({"device_time", "self_cpu", "span", "busy", "idle"})
METRIC_TITLES = {
    "device_time": "Device time",
    "self_cpu": "Self CPU",
    "dispatches": "Dispatches",
    "host_ops": "Host ops",
    "span": "Step span",
    "busy": "Busy",
    "idle": "Idle",
}

COMPILED_REGION_PREFIX = "Torch-Compiled Region"
"""torch records each call of a `torch.compile`d graph as a `record_function` with this name."""
OP_CATS = ("cpu_op", "Operator")
NOT_OPERATOR_CALLS = ("TorchDynamo Cache Lookup",)
"""torch.compile bookkeeping recorded as `cpu_op` (guard evaluation before each compiled call): not an operator
call of the workload (transparent, like a record_function scope)."""


# -- host-side operator calls -------------------------------------------------------------------------------


def step_windows(profile: Profile) -> list[tuple[int, int]]:
    """(start, end) of every `ProfilerStep#N` scope, in time order."""
    ids = [k for k, n in enumerate(profile.names) if n.startswith("ProfilerStep#")]
    if not ids or len(profile) == 0:
        return []
    idx = np.nonzero(np.isin(profile.name, ids))[0]
    return sorted((int(profile.start[i]), int(profile.end[i])) for i in idx.tolist())


def host_op_calls(profile: Profile) -> np.ndarray:
    """Event indexes of the top-level operator calls (see the module docstring for the definition)."""
    cached = profile.cache.get("host_op_calls")
    if cached is not None:
        return cached
    n = len(profile)
    if n == 0:
        return np.empty(0, np.int64)
    cand = profile.cat_mask(OP_CATS)
    region_ids = [k for k, nm in enumerate(profile.names) if nm.startswith(COMPILED_REGION_PREFIX)]
    if region_ids:
        cand |= profile.cat_mask(("user_annotation",)) & np.isin(profile.name, region_ids)
    filtered = [profile.name_id(x) for x in FILTERED_NAMES]
    filtered += [k for k, nm in enumerate(profile.names) if nm.startswith(NOT_OPERATOR_CALLS)]
    filtered = [x for x in filtered if x >= 0]
    if filtered:
        cand &= ~np.isin(profile.name, filtered)
    cand &= profile.end >= profile.start
    steps = step_windows(profile)
    if steps:
        inside = np.zeros(n, bool)
        for s, e in steps:
            inside |= (profile.start >= s) & (profile.end <= e)
        cand &= inside
    idx = np.nonzero(cand)[0]
    if len(idx) == 0:
        profile.cache["host_op_calls"] = idx
        return idx
    parent, _ = profile.nesting()
    parent = parent.astype(np.int64)
    # climb every candidate's ancestors together until each reaches another candidate or the root
    anc = parent[idx]
    for _ in range(100_000):
        climbing = (anc != NO_ID) & ~cand[np.maximum(anc, 0)]
        if not climbing.any():
            break
        anc[climbing] = parent[anc[climbing]]
    out = idx[anc == NO_ID].astype(np.int64)
    profile.cache["host_op_calls"] = out
    return out


# -- per-run metrics ----------------------------------------------------------------------------------------


@dataclass
class RunMetrics:
    """One row of the side-by-side summary."""

    name: str
    backend: str
    device_time: float | None
    self_cpu: float
    dispatches: int | None
    host_ops: int
    span: float
    busy: float | None
    idle: float | None
    steps: int
    device_time_source: str = ""

    def values(self) -> dict[str, float | None]:
        return {m: (None if getattr(self, m) is None else float(getattr(self, m))) for m in METRICS}

    @property
    def has_device(self) -> bool:
        return self.device_time is not None


@dataclass
class ComparedRun:
    """A loaded run ready to compare: its name, profile, op table and metrics (a run on disk, before loading, is
    `trntui.loaders.discover.Run`)."""

    name: str
    profile: Profile
    table: OpTable
    metrics: RunMetrics
    gaps: GapReport
    source: str = ""


def run_metrics(name: str, profile: Profile, table: OpTable | None = None) -> RunMetrics:
    """The summary metrics of one run (see the module docstring for definitions)."""
    table = table if table is not None else key_averages(profile)
    gaps = gap_report(profile)
    dispatch_ev = dispatch_events(profile)
    device_time: float | None = None
    source = ""
    if table.has_device:
        device_time = float(table.sum_self_device)
        source = table.device_time_source or "trace.json device rows"
    elif len(dispatch_ev):
        ms, me, _, _ = merge_intervals(profile.start[dispatch_ev], profile.end[dispatch_ev])
        device_time = float((me - ms).sum()) / 1000.0
        source = "hardware executions (merged)"
    has_hw = gaps.device is not None
    steps = step_windows(profile)
    if steps:
        span_ns = max(e for _, e in steps) - min(s for s, _ in steps)
    else:
        t0, t1 = profile.span
        span_ns = t1 - t0
    return RunMetrics(
        name=name,
        backend=table.backend if table.has_device else ("" if not has_hw else (profile.meta.backend or "device")),
        device_time=device_time,
        self_cpu=float(table.sum_self_cpu),
        dispatches=device_dispatches(profile) if (has_hw or table.has_device) else None,
        host_ops=int(len(host_op_calls(profile))),
        span=span_ns / 1000.0,
        busy=gaps.device.busy_ns / 1000.0 if gaps.device else None,
        idle=gaps.device.idle_ns / 1000.0 if gaps.device else None,
        steps=len(steps),
        device_time_source=source,
    )


def make_run(name: str, profile: Profile, *, group_by_input_shapes: bool = False, source: str = "") -> ComparedRun:
    table = key_averages(profile, group_by_input_shapes=group_by_input_shapes)
    base_table = table if not group_by_input_shapes else key_averages(profile)
    return ComparedRun(name, profile, table, run_metrics(name, profile, base_table), gap_report(profile), source)


def ratio(value: float | None, base: float | None) -> float | None:
    """value / base, None when either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return value / base


def headline_metric(runs: Sequence[ComparedRun]) -> str:
    """The metric the "vs baseline" column uses: device time when every run has it, else Self CPU."""
    return "device_time" if runs and all(r.metrics.device_time is not None for r in runs) else "self_cpu"
