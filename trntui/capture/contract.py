"""The `Workload` contract that `trntui profile` runs: `Variant`, `Workload`, `CaptureContext` and `Factory`.

A leaf: the built-ins (`trntui.capture.builtins`, which also hold their registry) and the resolver of user
workloads (`trntui.capture.workloads`) both build on it. torch is never imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Variant:
    """One implementation to profile: `fn(*args, **kwargs)` is called once per profiler step."""

    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    inference: bool = False
    """Run under `torch.inference_mode()` (built-ins that only infer); False: the grad mode the code chose."""


@dataclass
class Workload:
    """Named variants of one computation. `meta` is copied into every variant's manifest."""

    name: str
    variants: dict[str, Variant]
    description: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaptureContext:
    """What a workload factory gets to build its inputs for the chosen device.

    `device` is the torch device string ("cpu", "cuda", "neuron"); `dtype` a `torch.dtype`; `shape` the
    `--shape` option as a tuple (built-ins use it; user workloads may ignore it); `compile(fn, **kw)` wraps
    `fn` with `torch.compile` using the device's backend ("neuron" on Neuron, "inductor" otherwise).
    """

    device: str
    device_kind: str
    dtype: Any
    dtype_name: str
    shape: tuple[int, ...]
    compile_backend: str
    compile: Callable[..., Callable[..., Any]]


Factory = Callable[[CaptureContext], Workload]
