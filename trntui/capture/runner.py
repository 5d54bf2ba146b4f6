"""Run the capture: warm each variant, profile it with the device's setup, write a self-describing directory.

Layout (`out` is `--out`, default `./trntui_profiles/<workload>-<timestamp>/`):

    out/
      <variant>/            one per variant
        trntui.json         manifest; "complete": true is written last, only once the trace exists
        trace.json          cpu/cuda: the Kineto trace
        ...                 neuron: whatever torch-neuronx writes under profile_output_dir (its trace.json and
                            system traces, typically under <instance>_pid_<pid>/<timestamp>/)

Everything is written into `out.partial/` first and renamed to `out` only when every variant is complete, so
an interrupted or failed capture never looks complete: the `.partial` directory stays for inspection and its
manifests say `"complete": false` (with the error).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import socket
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trntui import __version__
from trntui.capture.devices import DeviceSetup, ScheduleSpec, build_profiler_plan, require_torch
from trntui.capture.neuron import neff_cache_env
from trntui.capture.workloads import Variant, Workload, exc_line, input_dtypes, input_shapes, user_error
from trntui.errors import TrntuiError

MANIFEST = "trntui.json"
MANIFEST_VERSION = 1
PARTIAL_SUFFIX = ".partial"
WARM_CALLS = 3
"""Calls of each variant before the profiler starts (the first one compiles), so the recorded step is warm."""

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"trntui: {message}", file=sys.stderr, flush=True)


@dataclass
class CaptureRequest:
    workload: Workload
    variants: list[str]
    out: Path
    schedule: ScheduleSpec = field(default_factory=ScheduleSpec)
    record_shapes: bool = False
    with_stack: bool = False
    profile_memory: bool = False
    with_flops: bool = False
    with_modules: bool = False
    command: str = ""
    dtype: str | None = None
    """The built-in's --dtype (None for a user's code: `input_dtypes` says what it used)."""
    shape: list[int] | None = None
    force: bool = False


@dataclass
class VariantResult:
    variant: str
    directory: Path
    trace: Path
    manifest: dict[str, Any]


@dataclass
class CaptureResult:
    out: Path
    variants: list[VariantResult]
    warnings: list[str] = field(default_factory=list)


def default_out_dir(workload_name: str, base: Path | None = None, now: _dt.datetime | None = None) -> Path:
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    root = (base or Path("trntui_profiles")) / f"{workload_name}-{stamp}"
    candidate, n = root, 2
    while candidate.exists() or _partial(candidate).exists():
        candidate = root.with_name(f"{root.name}-{n}")
        n += 1
    return candidate


def _partial(out: Path) -> Path:
    return out.with_name(out.name + PARTIAL_SUFFIX)


MIN_FREE_BYTES = 64 << 20
"""Free space `--out` needs before a workload runs (a capture's trace is tens of MB; Neuron ones more)."""


def check_writable(out: Path) -> None:
    """`--out` can be written: its nearest existing ancestor is a directory where a file can be created, with
    at least `MIN_FREE_BYTES` free; else one line, before any workload runs (not after it ran)."""
    import shutil
    import tempfile

    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise TrntuiError(f"--out {out}: {parent} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".trntui-probe-", dir=parent)
    except OSError as exc:
        raise TrntuiError(f"--out {out}: cannot write in {parent} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b"\0" * 4096)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise TrntuiError(f"--out {out}: cannot write in {parent} ({exc.strerror or exc})") from None
    finally:
        try:
            os.unlink(probe)
        except OSError:
            pass
    try:
        free = shutil.disk_usage(parent).free
    except OSError:
        return
    if free < MIN_FREE_BYTES:
        from trntui.memory import fmt

        raise TrntuiError(f"--out {out}: only {fmt(free)} free in {parent} (a capture needs at least "
                          f"{fmt(MIN_FREE_BYTES)})")


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse to overwrite anything that is not an earlier trntui capture; `--force` replaces one of those.
    Also refuse, before anything runs, a place that cannot be written or has no room (`check_writable`).

    Only what trntui itself created may ever be removed (`owned_problems`): its variant directories with their
    manifests and the files those manifests list (or trace files). An existing `out.partial` (an earlier
    capture that did not finish, or anything else of that name) is replaced only with `--force` and only when
    it is trntui's; a symbolic link is never followed or removed."""
    if out.is_symlink():
        raise TrntuiError(f"--out {out}: is a symbolic link (give the directory it points to)")
    if out.exists() and not out.is_dir():
        raise TrntuiError(f"--out {out}: exists and is not a directory")
    check_writable(out)
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise TrntuiError(f"--out {out}: directory exists and is not empty (pass --force to replace a capture)")
        _refuse_unless_owned(out, f"--out {out}: not a trntui capture directory; refusing to replace it even "
                                  "with --force")
    staging = _partial(out)
    if staging.is_symlink():
        raise TrntuiError(f"--out {out}: {staging} is a symbolic link; refusing to use or remove it")
    if staging.exists():
        if not staging.is_dir():
            raise TrntuiError(f"--out {out}: {staging} exists and is not a directory; move it away first")
        if not force:
            raise TrntuiError(f"--out {out}: {staging} exists (a capture that did not finish?); remove it, or pass "
                              "--force to replace it if it is trntui's")
        _refuse_unless_owned(staging, f"--out {out}: {staging} was not made by trntui; refusing to remove it even "
                                      "with --force")


def _refuse_unless_owned(path: Path, message: str) -> None:
    problems = owned_problems(path)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise TrntuiError(f"{message} ({problems[0]} is in the way{more})")


def _manifest_of(vdir: Path) -> dict[str, Any] | None:
    """The trntui manifest of a variant directory, or None when there is none that trntui wrote."""
    path = vdir / MANIFEST
    if path.is_symlink() or not path.is_file():
        return None
    try:
        if path.stat().st_size > 16 << 20:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("trntui_manifest"), int) or doc.get("variant") != vdir.name:
        return None
    return doc


def _owned_files(vdir: Path, manifest: dict[str, Any]) -> tuple[set[str], list[str]]:
    """(files trntui created in a variant directory, relative paths of everything else in it)."""
    listed = manifest.get("files")
    known = {MANIFEST, MANIFEST + ".tmp"}
    if isinstance(listed, list):
        known |= {f for f in listed if isinstance(f, str)}
    owned: set[str] = set()
    other: list[str] = []
    stack = [(vdir, "")]
    while stack:
        d, rel = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            other.append(rel or ".")
            continue
        for e in entries:
            r = f"{rel}{e.name}"
            if e.is_symlink():
                other.append(r)
            elif e.is_dir(follow_symlinks=False):
                stack.append((Path(e.path), r + "/"))
            elif e.is_file(follow_symlinks=False) and (
                    r in known or _trace_rank(e.name) is not None or r.startswith("neff_cache/")
                    or e.name.endswith((".json.tmp", ".trntui-tmp"))):  # (fsio's temporary files)
                owned.add(r)
            else:
                other.append(r)
    return owned, other


def owned_problems(path: Path) -> list[Path]:
    """What under a capture directory trntui did not create (empty: all of it is trntui's to remove)."""
    problems: list[Path] = []
    for entry in sorted(path.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            problems.append(entry)
            continue
        manifest = _manifest_of(entry)
        if manifest is None:
            problems.append(entry)
            continue
        _, other = _owned_files(entry, manifest)
        problems.extend(entry / r for r in other)
    return problems


def remove_owned(path: Path) -> None:
    """Remove a capture directory that `owned_problems` found to be all trntui's: its files, then its (now
    empty) directories; never a whole tree at once, so what appeared meanwhile stays and is named."""
    _refuse_unless_owned(path, f"{path}: not removed")
    for entry in sorted(path.iterdir()):
        manifest = _manifest_of(entry) or {}
        owned, _ = _owned_files(entry, manifest)
        for rel in sorted(owned, key=lambda r: (r == MANIFEST, r)):  # the manifest last: it says whose it is
            try:
                (entry / rel).unlink()
            except FileNotFoundError:
                pass
        for d in sorted((p for p in entry.rglob("*") if p.is_dir() and not p.is_symlink()),
                        key=lambda p: len(p.parts), reverse=True):
            try:
                d.rmdir()
            except OSError as exc:
                raise TrntuiError(f"{d}: not removed ({exc.strerror or exc})") from None
        try:
            entry.rmdir()
        except OSError as exc:
            raise TrntuiError(f"{entry}: not removed ({exc.strerror or exc})") from None
    path.rmdir()


def capture(
    request: CaptureRequest,
    setup: DeviceSetup,
    *,
    profile_factory: Callable[..., Any] | None = None,
    progress: Progress = stderr_progress,
) -> CaptureResult:
    """Capture every requested variant into `request.out`.

    `profile_factory` defaults to `torch.profiler.profile`; tests pass a stand-in to check how it is called.
    Raises `TrntuiError` (one line) when a variant fails; the partial directory is left, marked incomplete.
    """
    torch = require_torch()
    factory = profile_factory or torch.profiler.profile
    out = request.out
    check_out_dir(out, request.force)
    staging = _partial(out)
    if staging.exists():  # checked above: --force and all of it trntui's
        remove_owned(staging)
    staging.mkdir(parents=True)
    started = _now()
    results: list[VariantResult] = []
    warnings: list[str] = []
    total = len(request.variants)
    progress(f"profiling {request.workload.name} on {setup.kind} (torch {setup.versions.get('torch', '?')})"
             f" -> {out}")
    for index, name in enumerate(request.variants, 1):
        variant = request.workload.variants[name]
        vdir = staging / name
        vdir.mkdir()
        manifest = _manifest(request, setup, name, variant, started)
        _write_manifest(vdir, manifest, complete=False)
        tag = f"[{index}/{total}] {name}"
        try:
            trace, plan_desc, plan_warnings = _capture_variant(
                torch, request, setup, variant, vdir, factory, progress, tag
            )
        except BaseException as exc:
            manifest["error"] = exc_line(exc) if not isinstance(exc, TrntuiError) else str(exc)
            _write_manifest(vdir, manifest, complete=False)
            if isinstance(exc, TrntuiError):
                raise TrntuiError(f"{name}: {exc} (incomplete capture left in {staging})") from exc
            if isinstance(exc, Exception):
                raise TrntuiError(
                    f"{name}: capture failed: {exc_line(exc)} (incomplete capture left in {staging})"
                ) from exc
            raise
        warnings.extend(w for w in plan_warnings if w not in warnings)
        manifest["profiler"] = plan_desc
        manifest["trace"] = trace.relative_to(vdir).as_posix()
        manifest["finished"] = _now()
        manifest["files"] = sorted(str(p.relative_to(vdir).as_posix()) for p in vdir.rglob("*")
                                   if p.is_file() and not p.is_symlink() and p.name != MANIFEST)
        _write_manifest(vdir, manifest, complete=True)
        size = trace.stat().st_size
        progress(f"{tag}: wrote {name}/{manifest['trace']} ({_size(size)})")
        results.append(VariantResult(name, out / name, out / name / manifest["trace"], manifest))
    if out.exists() and any(out.iterdir()):  # --force, checked above to be an earlier capture
        remove_owned(out)
    elif out.exists():
        out.rmdir()
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, out)
    return CaptureResult(out=out, variants=results, warnings=warnings)


def _capture_variant(
    torch: Any,
    request: CaptureRequest,
    setup: DeviceSetup,
    variant: Variant,
    vdir: Path,
    factory: Callable[..., Any],
    progress: Progress,
    tag: str,
) -> tuple[Path, dict[str, Any], list[str]]:
    neff: dict[str, Any] = {}
    # Neuron: NEFFs compiled during the warm-up go to <variant>/neff_cache, from where NRT copies them into the
    # profile when it stops (trntui/capture/neuron.py)
    env = neff_cache_env(vdir, neff) if setup.kind == "neuron" else nullcontext()
    with env:
        progress(f"{tag}: warming up ({WARM_CALLS} calls; the first one compiles, if the variant is compiled)")
        t0 = time.perf_counter()
        for _ in range(WARM_CALLS):
            _call(variant, "warm-up")
            setup.synchronize()
        plan = build_profiler_plan(setup, vdir, request.schedule, record_shapes=request.record_shapes,
                                   with_stack=request.with_stack, profile_memory=request.profile_memory,
                                   with_flops=request.with_flops, with_modules=request.with_modules)
        plan.description.update(neff)
        for warning in plan.warnings:
            print(f"trntui: warning: {warning}", file=sys.stderr, flush=True)
        sched = request.schedule
        progress(f"{tag}: warm in {time.perf_counter() - t0:.1f}s; profiling {sched.steps} steps "
                 f"(wait={sched.wait}, warmup={sched.warmup}, active={sched.active})")
        if plan.session is not None:
            _run_session(torch, plan, sched, variant, setup)
        else:
            with factory(**plan.kwargs) as prof:
                for _ in range(sched.steps):
                    _call(variant, "profiled step")
                    setup.synchronize()
                    prof.step()
    trace = find_trace(vdir)
    if trace is None:
        raise TrntuiError(f"the profiler wrote no framework trace (trace.json / pytorch_trace.json) under {vdir}")
    if request.with_stack:
        from trntui.capture.stacks import cut_harness_frames

        plan.description["harness_frames_cut"] = cut_harness_frames(trace)
    return trace, plan.description, plan.warnings


def _run_session(torch: Any, plan: Any, sched: Any, variant: Variant, setup: Any) -> None:
    """A profiler that is a context manager without a schedule (torch-neuronx's unified NeuronProfiler): the
    wait and warm-up steps run before it, each recorded step is named `ProfilerStep#N` as prof.step() names it,
    and the device is synchronised inside the step."""
    first = sched.wait + sched.warmup
    for _ in range(first):
        _call(variant, "unrecorded step")
        setup.synchronize()
    with plan.session():
        for k in range(sched.active):
            with torch.profiler.record_function(f"ProfilerStep#{first + k}"):
                _call(variant, "profiled step")
                setup.synchronize()


def _call(variant: Variant, when: str) -> Any:
    """One call of the variant, in the grad mode the workload's own code chose: a user's training step
    (forward, backward, optimizer step) runs as it would without trntui; a built-in that only infers says so
    with `Variant.inference` and runs under `torch.inference_mode()`."""
    try:
        if variant.inference:
            import torch

            with torch.inference_mode():
                return variant.fn(*variant.args, **variant.kwargs)
        return variant.fn(*variant.args, **variant.kwargs)
    except BaseException as exc:  # noqa: BLE001 - user code: SystemExit and BaseException subclasses too
        err = user_error(exc, "the workload", when)
        if err is None or err is exc:
            raise
        raise err from exc


FRAMEWORK_TRACES = ("trace.json", "trace.json.gz", "neuron_framework_trace_rank_", "pytorch_trace.json",
                    "neuron_trace.json", ".pt.trace.json")
"""Framework-trace names the Neuron API generations write, most specific first (neuron-formats.md §3)."""


def _trace_rank(name: str) -> int | None:
    for k, pattern in enumerate(FRAMEWORK_TRACES):
        if pattern.endswith("_"):
            if name.startswith(pattern) and name.endswith((".json", ".json.gz")):
                return k
        elif pattern.startswith("."):
            if pattern in name:
                return k
        elif name == pattern:
            return k
    return None


def find_trace(vdir: Path) -> Path | None:
    """The framework trace of a variant: `trace.json` directly, else the one torch-neuronx wrote below
    (`trace.json`, `neuron_framework_trace_rank_<N>.json`, `pytorch_trace.json`, `neuron_trace.json`,
    `*.pt.trace.json`; by that preference, then the newest)."""
    direct = vdir / "trace.json"
    if direct.is_file():
        return direct
    found = [(r, p) for p in vdir.rglob("*") if p.is_file() and (r := _trace_rank(p.name)) is not None]
    if not found:
        return None
    best = min(r for r, _ in found)
    return max((p for r, p in found if r == best), key=lambda p: (p.stat().st_mtime, str(p)))


# ------------------------------------------------------------------------------------------------ manifest


def _manifest(request: CaptureRequest, setup: DeviceSetup, name: str, variant: Variant, started: str) -> dict:
    return {
        "trntui_manifest": MANIFEST_VERSION,
        "workload": request.workload.name,
        "variant": name,
        "variants": list(request.variants),
        "description": request.workload.description,
        "device": setup.kind,
        "torch_device": setup.device,
        "compile_backend": setup.compile_backend,
        "dtype": request.dtype,
        "shape": request.shape,
        "input_shapes": input_shapes(variant),
        "input_dtypes": input_dtypes(variant),
        "meta": request.workload.meta,
        "versions": {**setup.versions, "trntui": __version__, "python": platform.python_version()},
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "started": started,
        "command": request.command,
    }


def _write_manifest(vdir: Path, manifest: dict[str, Any], *, complete: bool) -> None:
    """Write atomically, with "complete" as the last key."""
    doc = {k: v for k, v in manifest.items() if k != "complete"}
    doc["complete"] = complete
    tmp = vdir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, vdir / MANIFEST)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"
