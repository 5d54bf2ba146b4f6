"""`trntui summary PATH`: torch's key_averages table, read from saved traces."""

from __future__ import annotations

import argparse
import sys

from trntui.commands import options
from trntui.commands.options import (
    add_format_option,
    add_memory_budget_option,
    add_merge_option,
    add_no_cache_option,
    add_part_options,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "summary",
        help="print the key_averages table of a trace or profile directory",
        description="Print torch's key_averages table rebuilt from a trace.json(.gz) or a profile directory "
        "(every run in it, one table each).",
    )
    p.add_argument("path", help="trace file or profile directory")
    p.add_argument(
        "--sort",
        default="self_device_time_total",
        type=options.sort_key,
        help="sort key as torch names it: self_cpu_time_total, cpu_time_total, self_device_time_total "
        "(aliases self_cuda_time_total, self_privateuse1_time_total), device_time_total, cpu_time, count, "
        "cpu_memory_usage, self_cpu_memory_usage, device_memory_usage, self_device_memory_usage (memory: "
        "profile_memory traces; cuda_memory_usage etc. are aliases), name "
        "(default: self_device_time_total, or self_cpu_time_total when there is no device time)",
    )
    p.add_argument("--limit", type=int, default=100, help="rows per table (default 100; -1 for all)")
    add_format_option(p)
    p.add_argument("--group-by-input-shapes", action="store_true", help="one row per (name, input shapes)")
    p.add_argument(
        "--gaps",
        action="store_true",
        help="also print, per hardware lane, busy and idle time and the largest gaps between executions",
    )
    add_part_options(p)
    add_merge_option(p)
    add_no_cache_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trntui.analysis.sort_keys import normalize_sort_key
    from trntui.errors import LoadError, TrntuiError
    from trntui.commands.options import load_options as options_of
    from trntui.session import find_runs, load_run
    from trntui.progress import finished

    try:
        sort = normalize_sort_key(args.sort)
    except ValueError as exc:
        raise TrntuiError(str(exc)) from None
    limit = None if args.limit is not None and args.limit < 0 else args.limit
    options = options_of(args)
    runs = find_runs(Path(args.path), merge=getattr(args, "merge", False))
    many = len(runs) > 1
    docs = []
    failures = 0

    failed: list[str] = []

    def skip(exc: TrntuiError, prefix: str = "") -> None:
        """One run of several failed: remembered, and said on stderr at the end (one line per run, or one line for
        all when none could be read)."""
        nonlocal failures
        if not many:
            raise exc
        from trntui.textsafe import safe_text

        finished()
        failures += 1
        failed.append(f"{safe_text(prefix)}{safe_text(exc)}")

    for run in runs:
        try:
            profile = load_run(run, options)
        except LoadError as exc:
            skip(exc)
            continue
        subset = None
        if getattr(args, "steps", None) or getattr(args, "window", None):
            from trntui.analysis.select import select_events

            try:
                subset = select_events(profile, steps_spec=args.steps, window_spec=args.window)
            except TrntuiError as exc:
                skip(exc, f"{run.name}: ")
                continue
        from trntui.analysis.key_averages import key_averages
        from trntui.report.summary import json_document, render

        table = key_averages(profile, group_by_input_shapes=args.group_by_input_shapes, events=subset)
        finished()  # the progress line (on a terminal) is erased before anything is printed
        run_sort = sort
        if sort.startswith(("self_device", "device")) and not table.has_device:
            run_sort = "self_cpu_time_total" if sort.startswith("self") else "cpu_time_total"
        title = run.name if many else None
        gaps = getattr(args, "gaps", False)
        if args.format == "json" and (many or gaps):
            doc = json_document(profile, table, run_sort, limit, title)
            if gaps:
                from trntui.analysis.gaps import gap_report

                doc["gaps"] = gap_report(profile).to_dict()
            if many:
                docs.append(doc)
            else:
                import json

                sys.stdout.write(json.dumps(doc, indent=1) + "\n")
            continue
        out = render(profile, table, args.format, run_sort, limit, args.group_by_input_shapes, title)
        if gaps:
            from trntui.analysis.gaps import gap_report
            from trntui.report.gaps import render_gaps

            out += "\n" + render_gaps(gap_report(profile), args.format)
        sys.stdout.write(out)
        if many and args.format in ("table", "markdown"):
            sys.stdout.write("\n")
    if docs:
        import json

        sys.stdout.write(json.dumps({"runs": docs}, indent=1) + "\n")
    if failures and failures == len(runs):
        from trntui.textsafe import safe_text

        raise TrntuiError(f"{safe_text(args.path)}: none of its {len(runs)} runs could be read: " + "; ".join(failed))
    for line in failed:
        print(f"trntui: error: {line}", file=sys.stderr)
    from trntui.loaders.discover import unreadable_warning
    from trntui.textsafe import safe_text

    warning = unreadable_warning(Path(args.path))
    if warning:
        print(f"trntui: warning: {safe_text(warning)}", file=sys.stderr)
    return 0
