"""`trntui overview PATH`: why the step is slow — step-time breakdown, device metrics, kernels, memory,
recommendations (trntui.analysis.overview; docs/overview.md)."""

from __future__ import annotations

import argparse
import json
import sys

from trntui.commands import options
from trntui.commands.options import add_format_option, add_memory_budget_option, add_no_cache_option


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "overview",
        help="print the step-time breakdown, device metrics, kernels and recommendations of a trace",
        description="The TensorBoard profiler plugin's overview, from a trace.json(.gz) or a profile directory "
        "(every run in it): step time by category (Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, "
        "CPU Exec, Other; NeuronCore, Runtime, Framework, ... on Neuron), GPU utilization / est. SM efficiency / "
        "est. achieved occupancy / Tensor Core share (NeuronCore busy), the kernel table, computation/communication "
        "overlap, memory peaks and recommendations. --format json is a stable interface (docs/overview.md); csv "
        "is the step breakdown.",
    )
    p.add_argument("path", help="trace file or profile directory")
    add_format_option(p)
    p.add_argument("--steps", metavar="N-M", type=options.steps_spec, help="only these ProfilerStep#N steps, e.g. 3-5 or 3,7-9 (breakdown, "
                   "averages, metrics and kernels over them)")
    p.add_argument("--what-if", metavar="SPEC", action="append", default=[],
                   help="recompute the critical path with events scaled: 'aten::mul=0.5x' (a name or glob: the op, "
                   "what it calls and the device work it launched), 'aten::mul=100us' (each such event takes that "
                   "long), 'kernels=0.8x' (every device row), 'path=0.5x' (every event on the path); repeatable, "
                   "all applied together")
    p.add_argument("--join-steps", action="store_true",
                   help="one critical path over all the --steps together (HTA's advice for pipelined training: two "
                   "iterations at once) instead of one per step")
    p.add_argument("--path-annotation", metavar="NAME", default=None,
                   help="HTA's window for the critical path instead of a step: the rows whose name contains NAME "
                   "(e.g. ProfilerStep, or a record_function label)")
    p.add_argument("--path-instance", metavar="N|A:B", default=None,
                   help="with --path-annotation: which of its rows in time order (0-based; A:B a range; default all)")
    p.add_argument("--no-critical-path", action="store_true", help="leave the critical-path section out")
    p.add_argument("--wide", action="store_true", help="full kernel names (default: shortened to fit the terminal)")
    add_no_cache_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


CRITICAL_PATHS_SHOWN = 8
"""At most this many steps get a critical path of their own (the longest of the selection; a note says so)."""


def critical_path_part(profile, args: argparse.Namespace):
    """(paths, their what-ifs, an error line) for the overview's critical-path section."""
    from trntui.analysis.critical_path import critical_paths
    from trntui.errors import TrntuiError

    if getattr(args, "no_critical_path", False):
        return [], [], None
    specs = list(getattr(args, "what_if", None) or [])
    try:
        cps = critical_paths(profile, args.steps, join=getattr(args, "join_steps", False),
                             annotation=getattr(args, "path_annotation", None),
                             instance=getattr(args, "path_instance", None), limit=CRITICAL_PATHS_SHOWN)
    except TrntuiError as exc:
        if getattr(args, "path_annotation", None):
            raise TrntuiError(f"--path-annotation/--path-instance: {exc}") from None  # asked for: exit 2
        return [], [], f"no critical path: {exc}"
    what_ifs = [[cp.what_if(specs)] if specs else [] for cp in cps]
    return cps, what_ifs, None


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trntui.analysis.overview import overview
    from trntui.errors import LoadError, TrntuiError
    from trntui.progress import finished
    from trntui.commands.options import load_options
    from trntui.session import find_runs, load_run
    from trntui.report.critical_path import overview_section as cp_text
    from trntui.report.overview import json_document, render
    from trntui.textsafe import safe_text

    from trntui.analysis.critical_path import parse_what_if

    for spec in args.what_if or []:
        parse_what_if(spec)  # a malformed spec is the user's error: one line, exit 2, before any loading
    options = load_options(args)
    runs = find_runs(Path(args.path))
    many = len(runs) > 1
    docs = []
    failures = 0
    for k, run_ in enumerate(runs):
        try:
            profile = load_run(run_, options)
            ov = overview(profile, args.steps)
            cps, what_ifs, cp_error = critical_path_part(profile, args)
        except (LoadError, TrntuiError) as exc:
            if not many:
                raise
            finished()
            failures += 1
            print(f"trntui: error: {safe_text(run_.name)}: {safe_text(exc)}", file=sys.stderr)
            continue
        finished()
        title = run_.name if many else None
        from trntui.report.summary import input_lines, input_notes

        if args.format == "json":
            doc = json_document(ov, title)
            doc["input_skipped"] = dict(profile.meta.skipped)  # what the load skipped, as summary's "skipped"
            doc["input_notes"] = input_notes(profile)
            if not args.no_critical_path:
                doc["critical_path"] = [cp.to_dict(what_ifs=w) for cp, w in zip(cps, what_ifs)]
                if cp_error:
                    doc["critical_path_error"] = cp_error
            docs.append(doc)
            continue
        from trntui.report.format import terminal_width

        out = render(ov, args.format, title, width=None if args.wide else terminal_width())
        if args.format in ("table", "markdown") and not args.no_critical_path:
            width = None if args.wide else terminal_width()
            cp = cp_text(cps, what_ifs, cp_error, args.format == "markdown", width=width)
            if args.format == "table" and width is not None:
                from trntui.report.format import fold

                cp = "".join(f + "\n" for line in cp.splitlines() for f in fold(line, width))
            out += cp
        if args.format in ("table", "markdown"):
            said = input_lines(profile)  # what the load skipped or repaired: every figure above is without it
            if said:
                width = None if args.wide or args.format == "markdown" else terminal_width()
                from trntui.report.format import fold

                out += "\n" + "".join(f + "\n" for line in said for f in (fold(line, width) if width else [line]))
        if args.format == "csv" and k > 0 and docs is not None and out:
            out = out.split("\n", 1)[1]  # one header for all runs
        sys.stdout.write(out)
        if many and args.format in ("table", "markdown") and k < len(runs) - 1:
            sys.stdout.write("\n")
    if args.format == "json" and docs:
        doc = {"runs": docs} if many else docs[0]
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return 2 if failures and failures == len(runs) else 0
