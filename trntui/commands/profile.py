"""`trntui profile WORKLOAD`: capture a workload with torch.profiler on Neuron, CUDA or CPU, then show it.

torch is imported only inside the handler; without it the command says how to install it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from trntui.commands import options

DEFAULT_SORT = "self_device_time_total"


def _shape(text: str) -> tuple[int, ...]:
    bad = f"{options.shown(text)} is not a shape like 4x512"
    parts = text.lower().replace("*", "x").split("x")
    if not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(bad)
    if len(parts) > 8 or any(len(p.strip()) > 12 for p in parts):
        raise argparse.ArgumentTypeError(bad + " (at most 8 sizes of at most 12 digits)")
    dims = tuple(int(p) for p in parts)
    if any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError(bad + " (every size must be >= 1)")
    return dims


def _positive(text: str) -> int:
    value = options.whole_number(text)  # bounded: 5,000 digits are refused, not converted
    if value < 1:
        raise argparse.ArgumentTypeError(f"{options.shown(text)} must be at least 1")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="capture a workload with torch.profiler (Neuron, CUDA or CPU) and open it",
        description="Run a workload under torch.profiler with the right setup for the device and write one "
        "profile directory per variant (trace + trntui.json manifest). WORKLOAD is a built-in (rmsnorm) or "
        "your code: path/to/file.py:function or module:function (see docs/capture.md).",
    )
    p.add_argument("workload", nargs="?", help="built-in name (rmsnorm), path/to/file.py[:function] or module:function")
    p.add_argument("--list", action="store_true", help="list the built-in workloads and exit")
    p.add_argument("--device", choices=("auto", "neuron", "cuda", "cpu"), default="auto",
                   help="auto: Neuron if torch_neuronx and a Neuron device are present, else CUDA, else CPU")
    p.add_argument("--variant", default="all",
                   help="variant(s) to capture, comma-separated, or all (rmsnorm: naive, fused, compiled; default all)")
    p.add_argument("--shape", type=_shape, default=(4, 512), help="input shape for built-ins (default 4x512)")
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16", help="input dtype (default bf16)")
    p.add_argument("--steps", type=_positive, default=4, help="prof.step() calls (default 4)")
    p.add_argument("--active", type=_positive, default=1, help="recorded steps at the end (default 1)")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default ./trntui_profiles/<workload>-<timestamp>/)")
    p.add_argument("--force", action="store_true", help="replace --out if it holds an earlier capture")
    p.add_argument("--no-tui", action="store_true", help="print the summary tables instead of opening the app")
    p.add_argument("--record-shapes", action="store_true", help="record input shapes (torch record_shapes)")
    p.add_argument("--with-stack", action="store_true",
                   help="record Python stacks (torch with_stack; trntui's own capture frames are cut)")
    p.add_argument("--profile-memory", action="store_true",
                   help="record tensor allocations (torch profile_memory): the CPU Mem / device Mem columns")
    p.add_argument("--with-flops", action="store_true", help="estimate FLOPs of matmul/conv ops (torch with_flops)")
    p.add_argument("--with-modules", action="store_true",
                   help="record the nn.Module hierarchy of each op (torch with_modules)")
    p.add_argument("--sort", default=DEFAULT_SORT, type=options.sort_key,
                   help="sort key for the printed tables (as trntui summary)")
    p.add_argument("--limit", type=int, default=100, help="rows per printed table (default 100; -1 for all)")
    g = p.add_argument_group("Neuron (torch_neuronx.profiling.NeuronConfig)")
    g.add_argument("--neuron-modes", default="device,runtime",
                   help="ProfileMode names, comma-separated (default device,runtime; also cpu_util, host_memory)")
    g.add_argument("--neuron-cores", default="0", help="capture_enabled_for_nc, e.g. 0 or 0,1,2-5 (default 0)")
    g.add_argument("--max-events-per-nc", type=_positive, default=None, help="ring size per NeuronCore")
    g.add_argument("--no-correlate-device-time", action="store_true",
                   help="do not ask for correlate_device_time=True (undocumented; dropped anyway if unsupported)")
    from trntui.commands.options import add_memory_budget_option

    add_memory_budget_option(p)
    p.set_defaults(func=run)


def _command_line(args: argparse.Namespace, out: Path, variants: list[str]) -> str:
    """The effective command line (every option explicit), recorded in the manifest."""
    argv = ["trntui", "profile", args.workload, "--device", args.device_kind, "--variant", ",".join(variants)]
    if getattr(args, "builtin", True):  # --shape/--dtype shape the built-ins' inputs; a user's code chooses its own
        argv += ["--shape", "x".join(str(d) for d in args.shape), "--dtype", args.dtype]
    argv += ["--steps", str(args.steps), "--active", str(args.active), "--out", str(out)]
    if args.record_shapes:
        argv.append("--record-shapes")
    for flag in ("with_stack", "profile_memory", "with_flops", "with_modules"):
        if getattr(args, flag, False):
            argv.append("--" + flag.replace("_", "-"))
    if args.device_kind == "neuron":
        argv += ["--neuron-modes", args.neuron_modes, "--neuron-cores", args.neuron_cores]
        if args.max_events_per_nc:
            argv += ["--max-events-per-nc", str(args.max_events_per_nc)]
        if args.no_correlate_device_time:
            argv.append("--no-correlate-device-time")
    if args.no_tui:
        argv.append("--no-tui")
    return shlex.join(argv)


def _check_sort(key: str) -> str:
    from trntui.analysis.sort_keys import normalize_sort_key
    from trntui.errors import TrntuiError

    try:
        return normalize_sort_key(key)
    except ValueError as exc:
        raise TrntuiError(f"--sort: {exc}") from None


def _pick_variants(requested: str, available: list[str], workload: str) -> list[str]:
    wanted = [v.strip() for v in requested.split(",") if v.strip()]
    if not wanted or "all" in wanted:
        return list(available)
    unknown = [v for v in wanted if v not in available]
    if unknown:
        raise_error(f"{workload} has no variant {unknown[0]!r} (variants: {', '.join(available)}, all)")
    return list(dict.fromkeys(wanted))


def raise_error(message: str) -> None:
    from trntui.errors import TrntuiError

    raise TrntuiError(message)


def run(args: argparse.Namespace) -> int:
    from trntui.capture.child import channel

    child = channel()
    if child is not None:
        _child_run(args, child)  # never returns: os._exit
    from trntui.capture.workloads import BUILTINS, builtin_names

    if args.list:
        for name in builtin_names():
            info = BUILTINS[name]
            sys.stdout.write(f"{name}  (variants: {', '.join(info.variants)})  {info.help}\n")
        return 0
    if not args.workload:
        raise_error("profile: give a WORKLOAD (a built-in such as rmsnorm, path/to/file.py:function or module:function)")
    _check_sort(args.sort)  # every argument is checked before any workload runs
    return supervise(args)


def _checked(args: argparse.Namespace) -> tuple[Any, Any]:
    from trntui.capture.devices import NeuronOptions, ScheduleSpec

    schedule = ScheduleSpec(steps=args.steps, active=args.active)
    schedule.validate()
    neuron = NeuronOptions(
        modes=tuple(m.strip().upper() for m in args.neuron_modes.split(",") if m.strip()),
        capture_enabled_for_nc=args.neuron_cores or None,
        max_events_per_nc=args.max_events_per_nc,
        correlate_device_time=not args.no_correlate_device_time,
    )
    if not neuron.modes:
        raise_error("--neuron-modes: give at least one mode (device, runtime, cpu_util, host_memory)")
    return schedule, neuron


def _child_argv(args: argparse.Namespace, out: Path) -> list[str]:
    argv = ["profile", args.workload, "--device", args.device, "--variant", args.variant,
            "--shape", "x".join(str(d) for d in args.shape), "--dtype", args.dtype,
            "--steps", str(args.steps), "--active", str(args.active), "--out", str(out),
            "--neuron-modes", args.neuron_modes, "--neuron-cores", args.neuron_cores]
    for flag in ("force", "no_tui", "record_shapes", "with_stack", "profile_memory", "with_flops", "with_modules",
                 "no_correlate_device_time"):
        if getattr(args, flag, False):
            argv.append("--" + flag.replace("_", "-"))
    if args.max_events_per_nc:
        argv += ["--max-events-per-nc", str(args.max_events_per_nc)]
    return argv


def supervise(args: argparse.Namespace) -> int:
    """The parent: check everything, resolve `--out` once (absolute), run the capture in a child process
    (trntui/capture/child.py), then show the result."""
    import os

    from trntui.capture.child import run_child
    from trntui.capture.devices import require_torch_installed
    from trntui.capture.runner import CaptureResult, VariantResult, _partial, check_out_dir, default_out_dir, stderr_progress
    from trntui.capture.workloads import BUILTINS, source_name
    from trntui.commands.options import load_options

    options = load_options(args)  # a bad size fails now
    out = Path(os.path.abspath(args.out)) if args.out is not None else Path(os.path.abspath(default_out_dir(source_name(args.workload))))
    check_out_dir(out, args.force)  # fail before anything runs
    require_torch_installed()
    spec = args.workload.strip()
    if spec in BUILTINS:  # check built-in variants before paying for device setup
        _pick_variants(args.variant, list(BUILTINS[spec].variants), spec)
    _checked(args)
    done = run_child(_child_argv(args, out), _partial(out), stderr_progress)
    result = CaptureResult(out=Path(done["out"]),
                           variants=[VariantResult(v, Path(d), Path(t), {}) for v, d, t in done["variants"]],
                           warnings=list(done.get("warnings", [])))
    return show(args, result, options)


def _child_run(args: argparse.Namespace, chan: Any) -> None:
    """The capture child: everything that runs the user's code; reports on `chan` and ends with os._exit."""
    import os

    from trntui.capture.devices import require_torch, resolve_device
    from trntui.capture.workloads import build_workload, resolve_source
    from trntui.errors import TrntuiError

    code = 2
    try:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        chan.send(phase=f"importing {args.workload}")
        require_torch()
        source = resolve_source(args.workload)
        if source.builtin is not None:
            _pick_variants(args.variant, list(source.builtin.variants), source.name)
        schedule, neuron = _checked(args)
        chan.send(phase=f"setting up --device {args.device}")
        setup = resolve_device(args.device, neuron)
        args.device_kind = setup.kind
        chan.send(phase="building the workload")
        result = _capture(args, source, setup, schedule, build_workload, lambda m: chan.send(progress=m))
        chan.send(done={"out": str(result.out), "warnings": result.warnings,
                        "variants": [[v.variant, str(v.directory), str(v.trace)] for v in result.variants]})
        code = 0
    except TrntuiError as exc:
        chan.send(error=str(exc))
    except KeyboardInterrupt:
        chan.send(interrupted=True)
        code = 130
    except BaseException as exc:  # noqa: BLE001 - one line, never a traceback
        from trntui.capture.workloads import exc_line

        if isinstance(exc, OSError) and exc.filename:  # the workload removed or closed what the capture writes
            chan.send(error=f"capture failed: {exc.filename}: {exc.strerror or exc} (did the workload remove, "
                            "move or close it?)")
        else:
            chan.send(error=f"capture failed: {exc_line(exc)}")
    finally:
        os._exit(code)


def _capture(args: argparse.Namespace, source: Any, setup: Any, schedule: Any, build_workload: Any,
             progress: Any) -> Any:
    from trntui.capture import context_for
    from trntui.capture.runner import CaptureRequest, capture, check_out_dir

    out = args.out
    check_out_dir(out, args.force)
    workload = build_workload(source, context_for(setup, args.dtype, args.shape))
    variants = _pick_variants(args.variant, list(workload.variants), workload.name)
    args.builtin = source.builtin is not None
    request = CaptureRequest(
        workload=workload,
        variants=variants,
        out=out,
        schedule=schedule,
        record_shapes=args.record_shapes,
        with_stack=args.with_stack,
        profile_memory=args.profile_memory,
        with_flops=args.with_flops,
        with_modules=args.with_modules,
        command=_command_line(args, out, variants),
        dtype=context_for(setup, args.dtype, args.shape).dtype_name if source.builtin is not None else None,
        shape=list(args.shape) if source.builtin is not None else None,
        force=args.force,
    )
    return capture(request, setup, progress=progress)


def show(args: argparse.Namespace, result: Any, options: Any) -> int:
    for warning in result.warnings:
        print(f"trntui: warning: {warning} (recorded in the manifest)", file=sys.stderr)
    print(f"trntui: wrote {result.out}", file=sys.stderr, flush=True)
    if not args.no_tui and sys.stdout.isatty() and sys.stdin.isatty():  # the app needs keys and a screen
        launch = _tui_launcher(several=len(result.variants) > 1)
        if launch is not None:
            explicit = {"options": options} if getattr(args, "memory_budget", None) or getattr(args, "convert_timeout", None) else {}  # else: the defaults
            return int(launch(result.out, **explicit) or 0)
        print("trntui: the TUI is not available in this build; printing the summaries", file=sys.stderr)
    return print_summaries(result, args.sort, args.limit, options)


def _tui_launcher(several: bool = False) -> Any:
    """The app to open after a capture: the compare view when several variants were captured (the
    walkthrough's side-by-side, Enter opens an op in its run's timeline), else the explorer."""
    import importlib
    import importlib.util

    name, attr = ("trntui.commands.compare", "launch_compare") if several else ("trntui.commands.open", "launch")
    if importlib.util.find_spec(name) is None:
        return None
    return getattr(importlib.import_module(name), attr, None)


def print_summaries(result: Any, sort_key: str, limit: int | None, options: Any = None) -> int:
    """One key_averages table per variant (as `trntui summary`), then a side-by-side line per variant."""
    from trntui.analysis.key_averages import key_averages
    from trntui.analysis.sort_keys import normalize_sort_key
    from trntui.errors import TrntuiError
    from trntui.session import find_runs, load_run
    from trntui.report.summary import format_time, render
    from trntui.textsafe import safe_text

    try:
        sort = normalize_sort_key(sort_key)
    except ValueError as exc:
        raise TrntuiError(str(exc)) from None
    limit = None if limit is not None and limit < 0 else limit
    rows = []
    for vr in result.variants:
        runs = find_runs(vr.directory)
        for run in runs:
            profile = load_run(run, options)
            table = key_averages(profile)
            run_sort = sort
            if sort.startswith(("self_device", "device")) and not table.has_device:
                run_sort = "self_cpu_time_total" if sort.startswith("self") else "cpu_time_total"
            title = vr.variant if len(runs) == 1 else f"{vr.variant}/{run.name}"
            sys.stdout.write(render(profile, table, "table", run_sort, limit, False, title))
            sys.stdout.write("\n")
            step = [k for k in range(len(table)) if table.name[k].startswith("ProfilerStep")]
            step_us = float(sum(table.cpu_time_total[k] for k in step))
            dev = f"{format_time(table.sum_self_device)} {table.backend}" if table.has_device else "-"
            rows.append((safe_text(title), format_time(step_us) if step else "-", format_time(table.sum_self_cpu), dev))
    if len(rows) > 1:
        headers = ("Variant", "Step (CPU total)", "Self CPU total", "Self device total")
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        fmt = "  ".join(["{:<%d}" % widths[0]] + ["{:>%d}" % w for w in widths[1:]])
        sys.stdout.write(fmt.format(*headers) + "\n")
        for r in rows:
            sys.stdout.write(fmt.format(*r) + "\n")
    return 0
