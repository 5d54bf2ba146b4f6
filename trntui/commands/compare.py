"""`trntui compare runA runB [runC ...]`: side-by-side run summary and op-level diff, in the app or headless.

    trntui compare runA/ runB/                      # the compare view (when stdout is a terminal)
    trntui compare sample_profiles/cpu              # one parent directory: compare the runs it holds
    trntui compare a b --no-tui --format table|csv|json|markdown
    trntui compare a b --fail-if 'device_time > 1.10*baseline' --fail-if 'host_ops > baseline'

Exit codes: 0 ok, 1 a `--fail-if` rule found a regression, 2 bad input (unreadable trace, bad rule/option).
Other commands (e.g. `trntui profile --variant all`) open the view through `launch_compare(paths)`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from trntui.commands import options
from trntui.commands.options import add_format_option, add_memory_budget_option, add_merge_option

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
DIFF_SORTS = ("self_device", "self_cpu", "calls", "name")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare runs side by side: summary per run and an op-level diff",
        description="Compare two or more runs (trace files or profile directories; one parent directory "
        "compares the runs it holds, e.g. the variants written by `trntui profile`). The first run is the "
        "baseline. Opens the compare view on a terminal; prints a report with --no-tui, --format or --fail-if "
        "(or when stdout is not a terminal).",
        epilog="Exit codes: 0 ok, 1 regression found by --fail-if, 2 bad input. "
        "Rule metrics (µs for times): device_time, self_cpu, dispatches, host_ops, span, busy, idle; "
        "compare them to `baseline` (the first run's value of the same metric), `baseline.<metric>`, or "
        "constants with optional units us/ms/s (e.g. 'span > 5ms', 'device_time > 1.10*baseline').",
    )
    p.add_argument("paths", nargs="+", metavar="RUN", help="trace files or profile directories (first = baseline)")
    p.add_argument("--no-tui", action="store_true", help="print the report instead of opening the compare view")
    p.add_argument("--wide", action="store_true",
                   help="full op names in the printed tables (default: shortened to fit the terminal)")
    add_format_option(p, default=None, help="report format (implies --no-tui; default table)")
    p.add_argument("--only", choices=("summary", "ops"), default=None,
                   help="print only the run summary or only the op diff (CSV prints both blocks otherwise, "
                   "separated by an empty line)")
    p.add_argument("--by-shapes", "--group-by-input-shapes", dest="by_shapes", action="store_true",
                   help="match ops by name and input shapes")
    p.add_argument("--sort", choices=DIFF_SORTS, default=None,
                   help="op diff order: largest |delta| of self_device (default when there is device time), "
                   "self_cpu (default otherwise), calls; or name")
    p.add_argument("--filter", default=None, metavar="PATTERN", type=options.pattern, help="only ops whose name matches (regex, case-insensitive)")
    p.add_argument("--limit", type=int, default=None,
                   help="op diff rows (default 40 for table/markdown, all for csv/json; -1 for all)")
    p.add_argument("--changed", action="store_true", help="leave out ops that are the same in every run")
    p.add_argument("--baseline", default=None, metavar="RUN", type=options.run_choice,
                   help="name or 1-based position of the baseline run (default: the first)")
    p.add_argument("--fail-if", dest="fail_if", action="append", default=[], metavar="RULE", type=options.rule,
                   help="regression rule, repeatable; exit 1 when any run breaks one (implies --no-tui)")
    add_merge_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


# -- the command ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from trntui.analysis.compare import check_rules, diff_ops, gate_verdict, parse_rule
    from trntui.report.compare import json_document, render_csv, render_text
    from trntui.compare_runs import load_runs

    from trntui.commands.options import load_options

    rules = [parse_rule(t) for t in args.fail_if]  # bad rules fail (exit 2) before any loading
    options = load_options(args)
    headless = args.no_tui or args.format is not None or bool(rules) or not _is_tty()
    if not headless:
        return launch_compare(args.paths, by_shapes=args.by_shapes, baseline=args.baseline, options=options,
                              merge=args.merge)
    runs = load_runs(args.paths, by_shapes=args.by_shapes, baseline=args.baseline, options=options, merge=args.merge)
    diff = diff_ops([r.table for r in runs], [r.name for r in runs], by_shapes=args.by_shapes)
    results = check_rules(rules, [r.metrics for r in runs])
    fmt = args.format or "table"
    limit = args.limit
    if limit is None:
        limit = 40 if fmt in ("table", "markdown") else None
    elif limit < 0:
        limit = None
    kw = dict(sort=args.sort, pattern=args.filter, limit=limit, changed=args.changed)
    critical = None
    if fmt in ("json", "table", "markdown") and args.only in (None, "summary"):
        from trntui.report.compare import critical_path_summaries

        critical = critical_path_summaries(runs)
    if fmt == "json":
        import json

        doc = json_document(runs, diff, results=results, critical=critical, **kw)
        if args.only == "summary":
            doc.pop("ops")
        elif args.only == "ops":
            doc.pop("runs")
        out = json.dumps(doc, indent=1) + "\n"
    elif fmt == "csv":
        out = render_csv(runs, diff, only=args.only, **kw)
    else:
        from trntui.report.format import terminal_width

        width = None if args.wide or fmt == "markdown" else terminal_width()
        out = render_text(runs, diff, only=args.only, markdown=fmt == "markdown", critical=critical, width=width,
                          **kw)
    sys.stdout.write(out)
    sys.stdout.flush()
    from trntui.loaders.discover import unreadable_warning
    from trntui.textsafe import safe_text

    for p in args.paths:
        warning = unreadable_warning(Path(p))
        if warning:
            print(f"trntui: warning: {safe_text(warning)}", file=sys.stderr)
    for res in results:
        if res.failed or res.missing or res.undefined:
            print(f"trntui: {res.message()}", file=sys.stderr)
    if not rules:
        return EXIT_OK
    code, verdict = gate_verdict(rules, results)
    print(f"trntui: compare: {verdict}", file=sys.stderr)
    return code


def _is_tty() -> bool:
    try:
        return sys.stdout.isatty() and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def launch_compare(
    paths: "Sequence[str | Path] | str | Path", *, by_shapes: bool = False, baseline: str | None = None, options: Any = None,
    merge: bool = False,
) -> int:
    """Open the compare view on `paths` (several run paths, or one parent directory of runs).

    Used by `trntui compare` and by `trntui profile --variant all`; a single path (str or Path) is accepted
    too. Returns the exit code.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    from trntui.compare_runs import load_runs

    runs = load_runs(paths, by_shapes=by_shapes, baseline=baseline, options=options, merge=merge)
    from trntui.tui.screens.compare import run_compare_app

    return run_compare_app(runs, paths=[str(p) for p in paths], by_shapes=by_shapes)
