"""Device choice and the per-device `torch.profiler.profile(...)` setup.

CPU and CUDA follow torch's documented profiler API and are exercised for real on CPU by the tests.

The Neuron path is written against the documented torch-neuronx API ("Native PyTorch profiling":
`torch_neuronx.profiling.NeuronConfig / ProfileMode / NeuronProfiler`, `ProfilerActivity.PrivateUse1`,
`torch.neuron.synchronize()`, `torch.compile(backend="neuron")`; see docs/reference/neuron-formats.md section 2 and the
reference walkthrough). It has been tested only with a stand-in `torch_neuronx` module, never on Trainium
hardware. Because that API is in beta and drifts, `NeuronConfig` options the installed version does not accept
are dropped with a warning (and recorded in the manifest) instead of failing the capture.

torch is imported inside functions only.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trntui.capture.neuron import activity_name
from trntui.errors import TrntuiError

DEVICES = ("auto", "neuron", "cuda", "cpu")
TORCH_MISSING = "torch is not installed: pip install 'trntui[profile]'"

NEURON_MODES_DEFAULT = ("DEVICE", "RUNTIME")
NEURON_CORES_DEFAULT = "0"

# NeuronConfig keyword arguments trntui may pass, least documented first: when the installed torch-neuronx
# rejects an option without naming it, the first one still present in this order is dropped.
NEURON_OPTIONAL_ORDER = ("correlate_device_time", "neff_cache_dir", "max_events_per_nc", "capture_enabled_for_nc")
NEURON_REQUIRED = ("modes", "profile_output_dir")


def require_torch_installed() -> None:
    """Raise the one-line install hint when torch is not installed, without importing it (the process that
    supervises a capture never needs torch itself: importing it cost ~1-2 s before the capture child started,
    and a Ctrl-C inside torch's import came out as "torch is not installed")."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise TrntuiError(TORCH_MISSING)


def require_torch() -> Any:
    """Import torch or raise the one-line install hint."""
    try:
        import torch
    except ImportError:
        raise TrntuiError(TORCH_MISSING) from None
    return torch


@dataclass
class NeuronOptions:
    """What `--neuron-*` options ask of `NeuronConfig`."""

    modes: tuple[str, ...] = NEURON_MODES_DEFAULT
    capture_enabled_for_nc: str | None = NEURON_CORES_DEFAULT
    max_events_per_nc: int | None = None
    correlate_device_time: bool = True
    """Undocumented option used by the reference walkthrough; dropped with a warning where unsupported."""


@dataclass
class DeviceSetup:
    """Everything device-specific about a capture."""

    kind: str  # "neuron" | "cuda" | "cpu"
    device: str  # torch device string the inputs live on
    compile_backend: str  # torch.compile backend
    synchronize: Callable[[], None]
    versions: dict[str, str] = field(default_factory=dict)
    neuron: NeuronOptions | None = None
    notes: list[str] = field(default_factory=list)

    def compile(self, fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
        """`torch.compile(fn, backend=<this device's backend>, **kwargs)` (lazy: compiles on first call)."""
        import torch

        return torch.compile(fn, backend=self.compile_backend, **kwargs)


# ------------------------------------------------------------------------------------------- detection


def _import_torch_neuronx() -> Any | None:
    try:
        import torch_neuronx
    except ImportError:
        return None
    except Exception as exc:  # noqa: BLE001 - a broken install is reported, not a traceback
        raise TrntuiError(f"torch_neuronx is installed but failed to import: {type(exc).__name__}: {exc}") from exc
    return torch_neuronx


def neuron_device_present(torch: Any, torch_neuronx: Any) -> bool:
    """A Neuron device is usable: ask the backend's device module, else look for /dev/neuron*."""
    for mod in (getattr(torch, "neuron", None), torch_neuronx):
        if mod is None:
            continue
        for attr in ("is_available", "device_count"):
            probe = getattr(mod, attr, None)
            if callable(probe):
                try:
                    return bool(probe())
                except Exception:  # noqa: BLE001
                    return False
    return bool(glob.glob("/dev/neuron[0-9]*"))


def resolve_device(name: str, neuron: NeuronOptions | None = None) -> DeviceSetup:
    """`--device auto|neuron|cuda|cpu` → a `DeviceSetup`, or a one-line `TrntuiError` when unavailable."""
    torch = require_torch()
    if name not in DEVICES:
        raise TrntuiError(f"unknown device {name!r} (choose from {', '.join(DEVICES)})")
    versions = {"torch": str(torch.__version__)}
    if name in ("auto", "neuron"):
        tnx = _import_torch_neuronx()
        if tnx is not None:
            versions["torch_neuronx"] = str(getattr(tnx, "__version__", "unknown"))
            if neuron_device_present(torch, tnx):
                return _neuron_setup(torch, tnx, versions, neuron or NeuronOptions())
            if name == "neuron":
                raise TrntuiError("--device neuron: torch_neuronx is installed but no Neuron device was found")
        elif name == "neuron":
            raise TrntuiError(
                "--device neuron: torch_neuronx is not installed (it needs the AWS Neuron SDK on a Trainium or "
                "Inferentia host); use --device cpu or cuda"
            )
    if name in ("auto", "cuda"):
        if torch.cuda.is_available():
            versions["cuda"] = str(torch.version.cuda)
            return DeviceSetup(kind="cuda", device="cuda", compile_backend="inductor",
                               synchronize=torch.cuda.synchronize, versions=versions)
        if name == "cuda":
            why = "torch was built without CUDA" if not torch.version.cuda else "no CUDA device is visible"
            raise TrntuiError(f"--device cuda: CUDA is not available ({why}); use --device cpu")
    return DeviceSetup(kind="cpu", device="cpu", compile_backend="inductor", synchronize=lambda: None,
                       versions=versions)


def _neuron_setup(torch: Any, tnx: Any, versions: dict[str, str], options: NeuronOptions) -> DeviceSetup:
    dev_mod = getattr(torch, "neuron", None)
    sync = getattr(dev_mod, "synchronize", None) or getattr(tnx, "synchronize", None)
    if not callable(sync):
        raise TrntuiError("--device neuron: neither torch.neuron.synchronize nor torch_neuronx.synchronize exists")
    return DeviceSetup(kind="neuron", device="neuron", compile_backend="neuron", synchronize=sync,
                       versions=versions, neuron=options)


# ------------------------------------------------------------------------------------- profile() kwargs


@dataclass
class ScheduleSpec:
    """torch.profiler.schedule(wait, warmup, active, repeat=1) over `steps` prof.step() calls."""

    steps: int = 4
    active: int = 1

    @property
    def warmup(self) -> int:
        return 1 if self.steps - self.active >= 1 else 0

    @property
    def wait(self) -> int:
        return self.steps - self.active - self.warmup

    def validate(self) -> None:
        if self.active < 1:
            raise TrntuiError(f"--active must be at least 1 (got {self.active})")
        if self.steps < self.active:
            raise TrntuiError(f"--steps ({self.steps}) must be at least --active ({self.active})")

    def as_dict(self) -> dict[str, int]:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active, "repeat": 1, "steps": self.steps}


@dataclass
class ProfilerPlan:
    """The kwargs for `torch.profiler.profile(**kwargs)` and what the manifest should say about them."""

    kwargs: dict[str, Any]
    description: dict[str, Any]
    dropped_options: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exporter: Any = None
    session: Callable[[], Any] | None = None
    """Set when the profiler is a context manager that runs `torch.profiler` itself (torch-neuronx's unified
    `NeuronProfiler`): the runner runs the wait/warm-up steps before it and marks each recorded step with a
    `ProfilerStep#N` record_function; `kwargs` is then unused."""


def build_profiler_plan(
    setup: DeviceSetup,
    out_dir: Path,
    schedule: ScheduleSpec,
    *,
    record_shapes: bool = False,
    with_stack: bool = False,
    profile_memory: bool = False,
    with_flops: bool = False,
    with_modules: bool = False,
) -> ProfilerPlan:
    """Build `torch.profiler.profile` kwargs for one variant whose files go to `out_dir`.

    cpu/cuda: `on_trace_ready` exports `out_dir/trace.json`. neuron: `NeuronConfig(profile_output_dir=out_dir)`
    as `experimental_config` and `NeuronProfiler(config).export_trace` as `on_trace_ready`; torch-neuronx
    decides where under `out_dir` the framework trace and system traces go.
    """
    torch = require_torch()
    from torch.profiler import ProfilerActivity

    sched = torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active, repeat=1)
    common: dict[str, Any] = {"schedule": sched, "record_shapes": record_shapes}
    switches = {"with_stack": with_stack, "profile_memory": profile_memory, "with_flops": with_flops,
                "with_modules": with_modules}
    common.update({k: True for k, on in switches.items() if on})  # torch.profiler.profile's own switches
    desc: dict[str, Any] = {"schedule": schedule.as_dict(), "record_shapes": record_shapes, **switches}
    if setup.kind == "neuron":
        return _neuron_plan(setup, out_dir, common, desc)
    activities = [ProfilerActivity.CPU]
    if setup.kind == "cuda":
        activities.append(ProfilerActivity.CUDA)
    trace_path = out_dir / "trace.json"

    def export(prof: Any) -> None:
        prof.export_chrome_trace(str(trace_path))

    desc["activities"] = [activity_name(a) for a in activities]
    return ProfilerPlan(kwargs={"activities": activities, "on_trace_ready": export, **common}, description=desc)


def _neuron_plan(setup: DeviceSetup, out_dir: Path, common: dict[str, Any], desc: dict[str, Any]) -> ProfilerPlan:
    """The plan for the installed torch-neuronx API generation (trntui/capture/neuron.py)."""
    from torch.profiler import ProfilerActivity

    from trntui.capture import neuron as nx

    options = setup.neuron or NeuronOptions()
    api = nx.detect_api()
    desc["neuron_api"] = api
    desc["neuron_api_label"] = nx.API_LABELS[api]
    if api == nx.UNIFIED:
        session, dropped, warnings = nx.unified_plan(options, out_dir, bool(common.get("record_shapes")), desc)
        desc["dropped_options"] = list(dropped)
        return ProfilerPlan(kwargs={}, description=desc, dropped_options=list(dropped), warnings=warnings,
                            session=session)
    activities = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
    desc["activities"] = [activity_name(a) for a in activities]
    if api == nx.KINETO:
        config, dropped, warnings = nx.kineto_plan(options, out_dir, desc)
        trace_path = out_dir / "trace.json"

        def export(prof: Any) -> None:
            prof.export_chrome_trace(str(trace_path))

        desc["dropped_options"] = list(dropped)
        kwargs = {"activities": activities, "experimental_config": config, "on_trace_ready": export, **common}
        return ProfilerPlan(kwargs=kwargs, description=desc, dropped_options=list(dropped), warnings=warnings)

    from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

    modes = []
    for mode in options.modes:
        value = getattr(ProfileMode, mode.upper(), None)
        if value is None:
            known = [m for m in dir(ProfileMode) if m.isupper()]
            raise TrntuiError(f"--neuron-modes: ProfileMode has no {mode.upper()} (has: {', '.join(known)})")
        modes.append(value)
    wanted: dict[str, Any] = {"modes": modes, "profile_output_dir": str(out_dir)}
    if options.capture_enabled_for_nc is not None:
        wanted["capture_enabled_for_nc"] = options.capture_enabled_for_nc
    if options.max_events_per_nc is not None:
        wanted["max_events_per_nc"] = options.max_events_per_nc
    if options.correlate_device_time:
        wanted["correlate_device_time"] = True
    wanted["neff_cache_dir"] = str(os.environ.get(nx.NEFF_ENV) or nx.neff_cache_dir(out_dir))
    config, used, dropped = make_neuron_config(NeuronConfig, wanted)
    exporter = NeuronProfiler(config)
    warnings = [
        f"this torch-neuronx's NeuronConfig does not accept {name}={wanted[name]!r}; capturing without it"
        + (f" (${nx.NEFF_ENV} still points the NEFF cache into the profile)" if name == "neff_cache_dir" else "")
        for name in dropped
    ]
    desc["neuron_config"] = {k: ([activity_name(m) for m in v] if k == "modes" else v) for k, v in used.items()}
    desc["dropped_options"] = list(dropped)
    kwargs = {
        "activities": activities,
        "experimental_config": config,
        "on_trace_ready": exporter.export_trace,
        **common,
    }
    return ProfilerPlan(kwargs=kwargs, description=desc, dropped_options=list(dropped), warnings=warnings,
                        exporter=exporter)


_KWARG_IN_MESSAGE = re.compile(r"['\"](\w+)['\"]")


def make_neuron_config(factory: Callable[..., Any], wanted: dict[str, Any]) -> tuple[Any, dict[str, Any], list[str]]:
    """Call `factory(**wanted)`, dropping optional kwargs it rejects with TypeError, one at a time.

    The kwarg named in the TypeError message is dropped if it is optional; a message naming none drops the least
    documented optional kwarg still present. Required ones (`modes`, `profile_output_dir`) are never dropped.
    Returns (config, kwargs used, names dropped).
    """
    kwargs = dict(wanted)
    dropped: list[str] = []
    while True:
        try:
            return factory(**kwargs), kwargs, dropped
        except TypeError as exc:
            message = str(exc)
            named = [n for n in _KWARG_IN_MESSAGE.findall(message) if n in kwargs]
            candidates = [n for n in named if n not in NEURON_REQUIRED]
            if not candidates and not named:
                candidates = [n for n in NEURON_OPTIONAL_ORDER if n in kwargs]
            if not candidates:
                raise TrntuiError(f"torch_neuronx.profiling.NeuronConfig rejected the profiler options: {message}") from None
            name = candidates[0]
            kwargs.pop(name)
            dropped.append(name)
