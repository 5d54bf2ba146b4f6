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

The package by job (every public name is importable from `trntui.analysis.critical_path`):

- `graph`: edge kinds, bound types, `Graph` and `Path`, the builder the two formats share (chains, cross edges,
  device streams with the queue-length rule, DataLoader time);
- `kineto`: the graph of a Kineto step (host, streams, `cuda_sync` edges); `neuron`: the graph of a Neuron step
  (framework op -> `nrta_execute_schedule` -> `nc_exec_running`);
- `longest`: the vectorised longest path and its breakdown;
- `result`: `CriticalPath` (breakdown, top events, stretches, JSON) and the what-if re-runs;
- `steps`: the windows (a step, joined steps, HTA's annotation window) and the longest step's path, once per
  profile.
"""

from __future__ import annotations

from trntui.analysis.critical_path.graph import (
    BLOCKING_CALLS,
    BOUND_HELP,
    CUDA_BOUNDS,
    DEP,
    DEVICE_CATS,
    DEVICE_WAITS,
    DISPATCH,
    Graph,
    HOST_CATS,
    KIND_NAMES,
    KK,
    LAUNCH,
    NEURON_BOUNDS,
    NEURON_DEVICE_NAMES,
    NEURON_WAITS,
    OP,
    OVERHEAD_BOUNDS,
    Path,
    SYNC,
)
from trntui.analysis.critical_path.result import (
    CriticalPath,
    Stretch,
    TopEvent,
    WhatIf,
    apply_what_if,
    cw_of,
    parse_what_if,
)
from trntui.analysis.critical_path.steps import (
    annotation_window,
    build_graph,
    cached_step_path,
    critical_path,
    critical_paths,
    path_events,
    step_path,
)

__all__ = [
    "BLOCKING_CALLS", "BOUND_HELP", "CUDA_BOUNDS", "DEP", "DEVICE_CATS", "DEVICE_WAITS", "DISPATCH", "Graph",
    "HOST_CATS", "KIND_NAMES", "KK", "LAUNCH", "NEURON_BOUNDS", "NEURON_DEVICE_NAMES", "NEURON_WAITS", "OP",
    "OVERHEAD_BOUNDS", "Path", "SYNC", "CriticalPath", "Stretch", "TopEvent", "WhatIf", "apply_what_if", "cw_of",
    "parse_what_if", "annotation_window", "build_graph", "cached_step_path", "critical_path", "critical_paths",
    "path_events", "step_path"
]
