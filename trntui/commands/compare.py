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
from typing import TYPE_CHECKING, Any, Sequence

from trntui.commands.options import add_format_option, add_memory_budget_option, add_merge_option

if TYPE_CHECKING:  # pragma: no cover
    from trntui.analysis.compare import OpDiff, Run, RuleResult

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
    add_format_option(p, default=None, help="report format (implies --no-tui; default table)")
    p.add_argument("--only", choices=("summary", "ops"), default=None,
                   help="print only the run summary or only the op diff (CSV prints both blocks otherwise, "
                   "separated by an empty line)")
    p.add_argument("--by-shapes", "--group-by-input-shapes", dest="by_shapes", action="store_true",
                   help="match ops by name and input shapes")
    p.add_argument("--sort", choices=DIFF_SORTS, default=None,
                   help="op diff order: largest |delta| of self_device (default when there is device time), "
                   "self_cpu (default otherwise), calls; or name")
    p.add_argument("--filter", default=None, metavar="PATTERN", help="only ops whose name matches (regex, case-insensitive)")
    p.add_argument("--limit", type=int, default=None,
                   help="op diff rows (default 40 for table/markdown, all for csv/json; -1 for all)")
    p.add_argument("--changed", action="store_true", help="leave out ops that are the same in every run")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="name or 1-based position of the baseline run (default: the first)")
    p.add_argument("--fail-if", dest="fail_if", action="append", default=[], metavar="RULE",
                   help="regression rule, repeatable; exit 1 when any run breaks one (implies --no-tui)")
    add_merge_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


# -- loading ----------------------------------------------------------------------------------------------------


def discover(paths: Sequence[str | Path], merge: bool = False) -> list[tuple[str, Any]]:
    """(display name, loader Run) for every run under `paths`, in order; raises TrntuiError for < 2 runs."""
    from trntui.errors import TrntuiError
    from trntui.session import find_runs
    from trntui.loaders.discover import capture_order, manifest_position

    found: list[tuple[str, Any]] = []
    for p in paths:
        runs = find_runs(Path(p), merge=merge)
        if len(runs) > 1 and all(manifest_position(r) is not None for r in runs):
            runs = sorted(runs, key=capture_order)  # (find_runs' Neuron layouts come sorted by name)
        elif len(runs) > 1:
            orders = _builtin_order(runs)
            if all(o is not None for o in orders):
                runs = [r for _, r in sorted(zip(orders, runs), key=lambda x: x[0])]
        variants = [_variant(r) for r in runs]
        use_variants = len(runs) > 1 and all(variants) and len(set(variants)) == len(variants)
        for r, v in zip(runs, variants):
            short = v if use_variants else r.name
            if len(paths) == 1 or len(runs) == 1:
                name = short if len(runs) > 1 else _path_name(Path(p), r)
            else:
                name = f"{Path(p).name}/{short}"
            found.append((name, r))
    if len(found) < 2:
        where = ", ".join(str(p) for p in paths)
        raise TrntuiError(f"compare needs at least two runs; {where} holds {len(found)}")
    # unique names
    seen: dict[str, int] = {}
    out = []
    for name, r in found:
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        out.append((name, r))
    return out


def _variant(run: Any) -> str:
    """The manifest's variant name (`trntui profile` and the bundled samples write one), or ``."""
    v = (getattr(run, "manifest", None) or {}).get("variant")
    return v if isinstance(v, str) and v else ""


def _builtin_order(runs: Sequence[Any]) -> list[float | None]:
    """Order variants of a built-in workload as the workload lists them (naive, fused, compiled) when the
    manifests name variants but carry no order."""
    variants = [_variant(r) for r in runs]
    if not all(variants):
        return [None] * len(runs)
    try:
        import trntui.capture.builtins  # noqa: F401 - registers the built-ins (no torch import)
        from trntui.capture.workloads import BUILTINS
    except Exception:  # noqa: BLE001 - ordering is a nicety
        return [None] * len(runs)
    for info in BUILTINS.values():
        known = list(getattr(info, "variants", ()))
        if set(variants) <= set(known):
            return [float(known.index(v)) for v in variants]
    return [None] * len(runs)


def _path_name(path: Path, run: Any) -> str:
    """A short name for a single-run path: the directory (or file) name, without trace suffixes."""
    name = path.name or str(path)
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            if name.endswith(".pt.trace"):
                name = name[: -len(".pt.trace")]
            break
    if name in ("trace", "") and path.parent.name:
        name = path.parent.name
    return name or run.name


def load_runs(
    paths: Sequence[str | Path], *, by_shapes: bool = False, baseline: str | None = None, options: Any = None,
    merge: bool = False,
) -> list["Run"]:
    """Load every run under `paths` for comparison (baseline first); `options`: `LoadOptions` (None: the
    defaults, trntui/settings.py)."""
    from trntui.analysis.compare import make_run
    from trntui.session import load_run

    from trntui.progress import finished

    found = discover(paths, merge)
    found = _with_baseline_first(found, baseline)
    runs = [make_run(name, load_run(r, options), group_by_input_shapes=by_shapes, source=str(r.root)) for name, r in found]
    finished()  # the progress line (on a terminal) is erased before anything is printed
    return runs


def _with_baseline_first(found: list[tuple[str, Any]], baseline: str | None) -> list[tuple[str, Any]]:
    from trntui.errors import TrntuiError

    if baseline is None:
        return found
    names = [n for n, _ in found]
    if baseline in names:
        k = names.index(baseline)
    elif baseline.isdigit() and 1 <= int(baseline) <= len(found):
        k = int(baseline) - 1
    else:
        raise TrntuiError(f"--baseline {baseline!r}: no such run (runs: {', '.join(names)})")
    return [found[k]] + found[:k] + found[k + 1 :]


# -- the command ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from trntui.analysis.compare import check_rules, diff_ops, parse_rule
    from trntui.report.compare import json_document, render_csv, render_text

    from trntui.session import LoadOptions

    rules = [parse_rule(t) for t in args.fail_if]  # bad rules fail (exit 2) before any loading
    options = LoadOptions.from_env(memory_budget=args.memory_budget, convert_timeout=args.convert_timeout)
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
    if fmt == "json":
        import json

        doc = json_document(runs, diff, results=results, **kw)
        if args.only == "summary":
            doc.pop("ops")
        elif args.only == "ops":
            doc.pop("runs")
        out = json.dumps(doc, indent=1) + "\n"
    elif fmt == "csv":
        out = render_csv(runs, diff, only=args.only, **kw)
    else:
        out = render_text(runs, diff, only=args.only, markdown=fmt == "markdown", **kw)
    sys.stdout.write(out)
    sys.stdout.flush()
    failed = [r for r in results if r.failed]
    for res in results:
        if res.failed or res.missing:
            print(f"trntui: {res.message()}", file=sys.stderr)
    if rules:
        checked = sum(1 for r in results if not r.missing)
        verdict = f"{len(failed)} regression(s)" if failed else "no regression"
        print(f"trntui: compare: {len(rules)} rule(s), {checked} check(s): {verdict}", file=sys.stderr)
    return EXIT_REGRESSION if failed else EXIT_OK


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
    runs = load_runs(paths, by_shapes=by_shapes, baseline=baseline, options=options, merge=merge)
    from trntui.tui.compare import run_compare_app

    return run_compare_app(runs, paths=[str(p) for p in paths], by_shapes=by_shapes)
