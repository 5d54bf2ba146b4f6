"""Kineto categories: which tier and lane an event goes to, and how torch types it (CPU vs device).

Mirrors `deviceTypeFromActivity` in torch/csrc/profiler/kineto_shim.cpp and Neuron Explorer's lane rules.
"""

from __future__ import annotations

from trntui.model.profile import Tier

DEVICE_TYPED = frozenset(
    {
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "cuda_sync",
        "cuda_profiler_range",
        "cuda_event",
        "mtia_ccp_events",
        "mtia_insight",
        "mtia_counters",
        "xpu_scope_profiler",
        "hpu_op",
        # legacy (2020-2022) names
        "Kernel",
        "Memcpy",
        "Memset",
    }
)
"""Rows torch types as device events: they carry device time and attach to the op that launched them."""

RUNTIME = frozenset(
    {
        "cuda_runtime",
        "cuda_driver",
        "xpu_runtime",
        "xpu_driver",
        "mtia_runtime",
        "glow_runtime",
        "Runtime",
    }
)
"""Host-side runtime/driver calls (cudaLaunchKernel, hipLaunchKernel, ...): CPU-typed, children of their op."""

PRIVATEUSE1_DISPATCH = "privateuse1_runtime"
"""PrivateUse1 (Neuron) operator dispatch rows: CPU-typed, laned by thread like Explorer's framework/TID."""
PRIVATEUSE1_DRIVER = "privateuse1_driver"
"""PrivateUse1 (Neuron) device-interaction rows: CPU-typed, laned by stream like Explorer's framework/Stream."""

OPS = frozenset({"cpu_op", "user_annotation", "Operator"})
"""Framework ops and record_function scopes: the rows of key_averages and the roots of chains."""

PYTHON = "python_function"
USER_ANNOTATION = frozenset({"user_annotation", "gpu_user_annotation"})
NOT_EVENTS = frozenset({"Trace"})
"""Profiler bookkeeping spans (e.g. `PyTorch Profiler (0)`), kept on the timeline but out of the table."""

FLOW_ALIASES = {
    "ac2g": "ac2g",
    "async_cpu_to_gpu": "ac2g",
    "async_gpu": "ac2g",
    "fwdbwd": "fwdbwd",
    "forward_backward": "fwdbwd",
    "fwd_bwd": "fwdbwd",
}
"""Legacy flow category names → current ones."""

NEURON_SYSTEM = frozenset({"neuron_framework", "neuron_rt", "neuron_hw"})
"""Rows read from a Neuron system trace (Explorer export): not in trace.json, so never rows of key_averages."""

CPU_TREE_EXCLUDED = frozenset({"cpu_instant_event"}) | NOT_EVENTS | NEURON_SYSTEM
"""Categories that torch's key_averages leaves out (instants, profiler spans). `python_function` rows stay:
with `with_stack=True` torch lists them as rows and they parent the ops (verified against torch 2.13)."""


def is_device_typed(cat: str) -> bool:
    return cat in DEVICE_TYPED


def lane_kind(cat: str) -> tuple[Tier, str, str]:
    """(tier, subsystem, identifier prefix) for an event category."""
    if cat in DEVICE_TYPED:
        if cat == "gpu_user_annotation":
            return Tier.DEVICE, "annotation", "Stream"
        return Tier.HARDWARE, "device", "Stream"
    if cat in RUNTIME:
        return Tier.RUNTIME, "runtime", "TID"
    if cat == PRIVATEUSE1_DRIVER:
        return Tier.DEVICE, "framework", "Stream"
    if cat == PYTHON:
        return Tier.DISPATCH, "python", "TID"
    return Tier.DISPATCH, "framework", "TID"
