"""The Neuron profiler setup for both torch-neuronx API generations, chosen by introspection.

- **documented** (Neuron docs, "Native PyTorch profiling"; the reference walkthrough):
  `torch_neuronx.profiling.NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=...,
  capture_enabled_for_nc=..., neff_cache_dir=...)` as `experimental_config` of `torch.profiler.profile`, and
  `NeuronProfiler(config).export_trace` as `on_trace_ready` (it writes `trace.json` beside the runtime files).
- **unified** (public torch-neuronx source, 2026: `NeuronProfiler(pytorch_activities=None, record_shapes=False,
  pytorch_trace_file=None, neuron_output_dir="./output", event_filters=None)`, a context manager that runs the NRT
  capture and `torch.profiler.profile` itself and writes `pytorch_trace.json` and `framework_mapping_*.json`
  into `neuron_output_dir`; no `NeuronConfig`/`ProfileMode`). It takes no schedule: the wait/warm-up steps run
  before it, and each recorded step is a `ProfilerStep#N` `record_function`, as `prof.step()` names it.
- **kineto** (the same source's profiler README: `import torch_neuronx` registers a Kineto profiler; options go
  through `torch.profiler._ExperimentalConfig(custom_profiler_config="key:value;...")` with the keys
  `profile_output_dir`, `capture_enabled_for_nc`, `max_events_per_nc`, `host_memory`): when `torch_neuronx`
  has neither of the above.

Which one is used is decided from what the installed module has (`hasattr`, `inspect.signature`) and recorded
in the manifest (`profiler.neuron_api`). NEFFs land in the profile: `neff_cache_dir` (documented generation)
and `TORCH_NEURONX_NEFF_CACHE_DIR` point the NEFF cache at `<variant>/neff_cache` during the capture (unless the
user set the variable: then theirs is kept), and NRT copies the cached NEFFs into the profile when it stops.

Tested with stand-in modules for all three shapes only; no Trainium hardware was available.
"""

from __future__ import annotations

import inspect
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from trntui.errors import TrntuiError

DOCUMENTED = "documented"
UNIFIED = "unified"
KINETO = "kineto"
API_LABELS = {
    DOCUMENTED: "NeuronConfig + NeuronProfiler(config).export_trace (documented API)",
    UNIFIED: "NeuronProfiler(pytorch_activities=..., neuron_output_dir=...) context manager",
    KINETO: "torch.profiler + _ExperimentalConfig(custom_profiler_config=...)",
}
NEFF_ENV = "TORCH_NEURONX_NEFF_CACHE_DIR"
NEFF_DIR = "neff_cache"
UNIFIED_TRACE = "pytorch_trace.json"


def activity_name(activity: Any) -> str:
    """A `torch.profiler.ProfilerActivity` (or a Neuron profiling mode) by its short name: `CPU`, `PrivateUse1`."""
    return str(getattr(activity, "name", activity)).rsplit(".", 1)[-1]


def _params(obj: Any) -> set[str]:
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return set()


def profiling_module() -> Any | None:
    try:
        from torch_neuronx import profiling
    except ImportError:
        return None
    return profiling


def experimental_config_class() -> Any | None:
    """torch's `_ExperimentalConfig` when it takes `custom_profiler_config`, else None."""
    try:
        from torch._C._profiler import _ExperimentalConfig
    except ImportError:
        try:
            from torch.profiler import _ExperimentalConfig  # type: ignore[attr-defined]
        except ImportError:
            return None
    doc = getattr(_ExperimentalConfig.__init__, "__doc__", "") or getattr(_ExperimentalConfig, "__doc__", "") or ""
    if "custom_profiler_config" in _params(_ExperimentalConfig) or "custom_profiler_config" in doc:
        return _ExperimentalConfig
    return None


def detect_api() -> str:
    """Which profiling API the installed torch-neuronx has (see the module docstring)."""
    profiling = profiling_module()
    if profiling is not None:
        if all(hasattr(profiling, n) for n in ("NeuronConfig", "ProfileMode", "NeuronProfiler")):
            return DOCUMENTED
        profiler = getattr(profiling, "NeuronProfiler", None)
        if profiler is not None and {"pytorch_activities", "neuron_output_dir"} & _params(profiler):
            return UNIFIED
    if experimental_config_class() is not None:
        return KINETO
    found = sorted(n for n in dir(profiling) if not n.startswith("_")) if profiling is not None else []
    raise TrntuiError(
        "this torch_neuronx has no profiling API trntui knows: neither torch_neuronx.profiling.NeuronConfig/"
        "ProfileMode/NeuronProfiler, nor NeuronProfiler(pytorch_activities=, neuron_output_dir=), nor torch's "
        "_ExperimentalConfig(custom_profiler_config=)" + (f" (torch_neuronx.profiling has: {', '.join(found)})" if found else "")
    )


def neff_cache_dir(vdir: Path) -> Path:
    return vdir / NEFF_DIR


@contextmanager
def neff_cache_env(vdir: Path, record: dict[str, Any]) -> Iterator[None]:
    """Point torch-neuronx's NEFF cache at `<vdir>/neff_cache` for the variant (warm-up compiles into it, NRT
    copies from it into the profile on stop), unless the user set the variable; restore it afterwards. What was
    done goes into `record` (the manifest's profiler section)."""
    user = os.environ.get(NEFF_ENV)
    if user:
        record["neff_cache_dir"] = user
        record["neff_cache_source"] = f"${NEFF_ENV} (set by the user)"
        yield
        return
    target = neff_cache_dir(vdir)
    target.mkdir(parents=True, exist_ok=True)
    os.environ[NEFF_ENV] = str(target)
    record["neff_cache_dir"] = NEFF_DIR  # relative to the variant directory (the capture is renamed when done)
    record["neff_cache_source"] = f"${NEFF_ENV} set by trntui for the capture"
    try:
        yield
    finally:
        os.environ.pop(NEFF_ENV, None)


def _nc_list(spec: str | None) -> list[str]:
    return [p.strip() for p in (spec or "").split(",") if p.strip()]


def custom_config(values: dict[str, Any]) -> str:
    """`key:value;key:value` as torch-neuronx's NConfigParser reads it (`:` splits key and value, `;` pairs)."""
    return ";".join(f"{k}:{'true' if v is True else 'false' if v is False else v}" for k, v in values.items())


def unified_plan(options: Any, out_dir: Path, record_shapes: bool, desc: dict[str, Any]) -> tuple[Callable[[], Any], list[str], list[str]]:
    """(session factory, dropped options, warnings) for the unified `NeuronProfiler` context manager."""
    from torch.profiler import ProfilerActivity

    profiler = profiling_module().NeuronProfiler
    params = _params(profiler)
    kwargs: dict[str, Any] = {"pytorch_activities": [ProfilerActivity.CPU], "neuron_output_dir": str(out_dir)}
    if "record_shapes" in params:
        kwargs["record_shapes"] = record_shapes
    dropped: list[str] = []
    cores = _nc_list(options.capture_enabled_for_nc)
    if cores:
        if "event_filters" in params:
            kwargs["event_filters"] = {"nc": cores}
        else:
            dropped.append("capture_enabled_for_nc")
    if options.max_events_per_nc is not None:
        dropped.append("max_events_per_nc")
    if options.correlate_device_time:
        dropped.append("correlate_device_time")
    warnings = [f"this torch-neuronx's NeuronProfiler has no {name} option; capturing without it" for name in dropped]
    if tuple(options.modes) != ("DEVICE", "RUNTIME"):
        warnings.append("this torch-neuronx's NeuronProfiler has no modes: the runtime's defaults are captured")
        dropped.append("modes")
    desc["activities"] = [activity_name(a) for a in kwargs["pytorch_activities"]]
    desc["neuron_profiler"] = {k: ([activity_name(a) for a in v] if k == "pytorch_activities" else v)
                               for k, v in kwargs.items()}
    desc["trace_file"] = UNIFIED_TRACE
    return (lambda: profiler(**kwargs)), dropped, warnings


def kineto_plan(options: Any, out_dir: Path, desc: dict[str, Any]) -> tuple[Any, list[str], list[str]]:
    """(experimental_config, dropped options, warnings) for the Kineto-registered profiler."""
    config_class = experimental_config_class()
    if ":" in str(out_dir) or ";" in str(out_dir):
        raise TrntuiError(f"--out {out_dir}: torch-neuronx's custom profiler config cannot carry a path with ':' or ';'")
    values: dict[str, Any] = {"profile_output_dir": str(out_dir)}
    if options.capture_enabled_for_nc:
        values["capture_enabled_for_nc"] = options.capture_enabled_for_nc
    if options.max_events_per_nc is not None:
        values["max_events_per_nc"] = options.max_events_per_nc
    modes = {m.upper() for m in options.modes}
    if {"CPU_UTIL", "HOST_MEMORY"} & modes:
        values["host_memory"] = True
    dropped = ["correlate_device_time"] if options.correlate_device_time else []
    warnings = [f"torch-neuronx's custom profiler config has no {n}; capturing without it" for n in dropped]
    text = custom_config(values)
    desc["custom_profiler_config"] = text
    return config_class(custom_profiler_config=text), dropped, warnings
