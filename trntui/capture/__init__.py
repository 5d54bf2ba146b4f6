"""Capture: run a workload under `torch.profiler` on Neuron, CUDA or CPU into a self-describing directory.

Pure core (never imports Textual; imports torch only when a capture runs). `trntui profile` is the CLI over it:

    source = resolve_source("rmsnorm")              # or "path/to/file.py:make_workload", "module:func"
    setup = resolve_device("auto")                  # DeviceSetup: neuron / cuda / cpu
    workload = build_workload(source, context_for(setup, dtype="bf16", shape=(4, 512)))
    result = capture(CaptureRequest(workload, ["naive", "fused"], Path("out")), setup)
"""

from __future__ import annotations

from trntui.capture.devices import (
    DeviceSetup,
    NeuronOptions,
    ProfilerPlan,
    ScheduleSpec,
    build_profiler_plan,
    make_neuron_config,
    resolve_device,
)
from trntui.capture.runner import CaptureRequest, CaptureResult, capture, default_out_dir, find_trace
from trntui.capture.workloads import (
    BUILTINS,
    CaptureContext,
    Variant,
    Workload,
    build_workload,
    builtin_names,
    resolve_source,
)

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def context_for(setup: DeviceSetup, dtype: str = "bf16", shape: tuple[int, ...] = (4, 512)) -> CaptureContext:
    """The `CaptureContext` a workload factory receives for this device/dtype/shape."""
    import torch

    name = DTYPES.get(dtype, dtype)
    return CaptureContext(
        device=setup.device,
        device_kind=setup.kind,
        dtype=getattr(torch, name),
        dtype_name=name,
        shape=tuple(shape),
        compile_backend=setup.compile_backend,
        compile=setup.compile,
    )


__all__ = [
    "BUILTINS", "CaptureContext", "CaptureRequest", "CaptureResult", "DTYPES", "DeviceSetup", "NeuronOptions",
    "ProfilerPlan", "ScheduleSpec", "Variant", "Workload", "build_profiler_plan", "build_workload",
    "builtin_names", "capture", "context_for", "default_out_dir", "find_trace", "make_neuron_config",
    "resolve_device", "resolve_source",
]
