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
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default=None,
                   help="report format (implies --no-tui; default table)")
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
    from trntui.cli import add_memory_budget_option, add_merge_option

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


# -- formatting helpers (shared with the compare view) -----------------------------------------------------------


def fmt_time(us: float | None) -> str:
    from trntui.report.summary import format_time

    return "-" if us is None else format_time(us)


def fmt_delta_time(us: float) -> str:
    from trntui.report.summary import format_time

    if abs(us) < 5e-4:
        return "0"
    return ("+" if us > 0 else "-") + format_time(abs(us))


def fmt_count(v: int | None) -> str:
    return "-" if v is None else str(int(v))


def fmt_delta_count(v: float) -> str:
    v = int(round(v))
    return "0" if v == 0 else f"{v:+d}"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def summary_columns(runs: Sequence["Run"]) -> list[tuple[str, str]]:
    """(header, key) for the run summary; keys are metric names plus `name` and `ratio`."""
    from trntui.analysis.compare import headline_metric

    backend = next((r.metrics.backend for r in runs if r.metrics.backend), "")
    dev = f"{backend} time" if backend else "Device time"
    head = headline_metric(runs)
    ratio_title = "vs baseline" + (" (device)" if head == "device_time" else " (Self CPU)")
    return [
        ("#", "index"),
        ("Run", "name"),
        (dev, "device_time"),
        ("Self CPU", "self_cpu"),
        ("Dispatches", "dispatches"),
        ("Host ops", "host_ops"),
        ("Step span", "span"),
        ("Busy", "busy"),
        ("Idle", "idle"),
        (ratio_title, "ratio"),
    ]


def summary_cells(runs: Sequence["Run"]) -> list[list[str]]:
    from trntui.analysis.compare import TIME_METRICS, headline_metric, ratio
    from trntui.textsafe import safe_text

    head = headline_metric(runs)
    base = runs[0].metrics.values()[head] if runs else None
    out = []
    for k, r in enumerate(runs):
        vals = r.metrics.values()
        row = []
        for _, key in summary_columns(runs):
            if key == "index":
                row.append(f"#{k + 1}")
            elif key == "name":
                row.append(safe_text(r.name))
            elif key == "ratio":
                row.append(fmt_ratio(ratio(vals[head], base)))
            elif key in TIME_METRICS:
                row.append(fmt_time(vals[key]))
            else:
                row.append(fmt_count(None if vals[key] is None else int(vals[key])))
        out.append(row)
    return out


def diff_columns(diff: "OpDiff", short: bool = True) -> list[tuple[str, str, int]]:
    """(header, field, run index) of the op diff: per run values then deltas vs the baseline, per metric.

    `short` labels runs by position (`#1` = baseline), as in the summary's `#` column, to keep tables narrow.
    """
    from trntui.textsafe import safe_text

    names = [f"#{k + 1}" for k in range(len(diff.run_names))] if short else [safe_text(n) for n in diff.run_names]
    dev = f"Self {diff.backend}" if diff.backend else "Self device"
    cols: list[tuple[str, str, int]] = [("Name", "name", -1)]
    groups = [("Calls", "calls"), ("Self CPU", "self_cpu")]
    if diff.has_device:
        groups.append((dev, "self_device"))
    for title, key in groups:
        for k, n in enumerate(names):
            cols.append((f"{title} {n}", key, k))
        for k in range(1, len(names)):
            suffix = "" if len(names) == 2 else f" {names[k]}"
            cols.append((f"Δ {title}{suffix}", "d_" + key, k))
    if diff.by_shapes:
        cols.append(("Input Shapes", "input_shapes", -1))
    cols.append(("Status", "status", -1))
    return cols


def diff_cell(row: Any, field: str, k: int) -> str:
    from trntui.textsafe import safe_text

    if field == "name":
        return safe_text(row.label)
    if field == "input_shapes":
        return safe_text(row.input_shapes)
    if field == "status":
        return row.status
    if field == "calls":
        return fmt_count(row.calls[k])
    if field in ("self_cpu", "self_device"):
        v = getattr(row, field)[k]
        return "-" if v is None else fmt_time(v)
    if field == "d_calls":
        return _marked(row, k, fmt_delta_count(row.delta("calls", k)))
    if field in ("d_self_cpu", "d_self_device"):
        return _marked(row, k, fmt_delta_time(row.delta(field[2:], k)))
    raise KeyError(field)


def _marked(row: Any, k: int, text: str) -> str:
    if row.calls[k] is None and row.calls[0] is None:
        return "-"
    m = row.marker(k)
    return {"+": f"{text} (new)", "-": f"{text} (gone)"}.get(m, text)


# -- renderers ------------------------------------------------------------------------------------------------


def _text_table(headers: list[str], cells: list[list[str]], left: int = 1, name_width: int = 60) -> list[str]:
    from trntui.textsafe import truncate

    cells = [[truncate(c, name_width) if j == left - 1 else c for j, c in enumerate(r)] for r in cells]
    widths = [max([len(h)] + [len(r[j]) for r in cells]) for j, h in enumerate(headers)]
    sep = "  "

    def fmt(vals: list[str]) -> str:
        return sep.join(v.ljust(w) if j < left else v.rjust(w) for j, (v, w) in enumerate(zip(vals, widths))).rstrip()

    line = "-" * (sum(widths) + len(sep) * (len(widths) - 1))
    return [line, fmt(headers), line, *[fmt(r) for r in cells], line]


def _diff_rows(diff: "OpDiff", sort: str | None, pattern: str | None, limit: int | None, changed: bool) -> list[Any]:
    rows = diff.sorted_rows(sort, pattern)
    if changed:
        rows = [r for r in rows if r.status != "same"]
    if limit is not None and limit >= 0:
        rows = rows[:limit]
    return rows


def _sort_title(diff: "OpDiff", sort: str | None) -> str:
    sort = sort or diff.default_sort
    dev = f"Self {diff.backend}" if diff.backend else "Self device"
    return {"self_device": f"|Δ {dev}|", "self_cpu": "|Δ Self CPU|", "calls": "|Δ Calls|", "name": "name"}[sort]


def render_text(runs: Sequence["Run"], diff: "OpDiff", *, sort=None, pattern=None, limit=40, changed=False,
                only=None, markdown=False) -> str:
    from trntui.textsafe import safe_text

    out: list[str] = []
    base = safe_text(runs[0].name)
    if only in (None, "summary"):
        cols = summary_columns(runs)
        cells = summary_cells(runs)
        title = f"Runs (baseline: {base})"
        if markdown:
            out += [f"### {title}", "", *_md_table([h for h, _ in cols], cells), ""]
        else:
            out += [title, *_text_table([h for h, _ in cols], cells, left=2), ""]
        notes = _summary_notes(runs)
        out += notes + ([""] if notes else [])
    if only in (None, "ops"):
        rows = _diff_rows(diff, sort, pattern, limit, changed)
        total = len(diff.sorted_rows(sort, pattern))
        cols = diff_columns(diff)
        cells = [[diff_cell(r, f, k) for _, f, k in cols] for r in rows]
        match = "name and input shapes" if diff.by_shapes else "name"
        title = f"Op diff vs {base} (matched by {match}; sorted by {_sort_title(diff, sort)}"
        title += f"; filter {safe_text(pattern)!r}" if pattern else ""
        title += f"; {len(rows)} of {total} ops)"
        legend = "Runs: " + ", ".join(f"#{k + 1} {safe_text(n)}" for k, n in enumerate(diff.run_names))
        if markdown:
            out += [f"### {title}", "", legend, "", *_md_table([h for h, _, _ in cols], cells)]
        else:
            out += [title, legend, *_text_table([h for h, _, _ in cols], cells)]
    return "\n".join(out).rstrip("\n") + "\n"


def _summary_notes(runs: Sequence["Run"]) -> list[str]:
    notes = [
        "Host ops: top-level operator calls in the profiled step (ops inside ProfilerStep/record_function "
        "scopes count, ops nested in other ops do not; a torch.compile region counts as one call).",
    ]
    steps = [r.metrics.steps for r in runs]
    if any(n > 1 for n in steps):
        per = ", ".join(f"#{k + 1}: {n}" for k, n in enumerate(steps))
        notes.append(f"Several profiled steps ({per}): counts and times are totals over all of them.")
    if any(r.metrics.dispatches is not None for r in runs):
        notes.append("Dispatches: kernels / nc_exec_running executions (Neuron LNC per-core copies merged). "
                     "Busy/Idle: hardware time in the active window (first to last execution).")
    return notes


def _md_table(headers: list[str], cells: list[list[str]]) -> list[str]:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    return [
        "| " + " | ".join(esc(h) for h in headers) + " |",
        "|" + "|".join(" --- " for _ in headers) + "|",
        *["| " + " | ".join(esc(c) for c in r) + " |" for r in cells],
    ]


def summary_records(runs: Sequence["Run"]) -> list[dict[str, Any]]:
    from trntui.analysis.compare import METRICS, ratio
    from trntui.textsafe import safe_text

    base = runs[0].metrics.values()
    out = []
    for k, r in enumerate(runs):
        vals = r.metrics.values()
        rec: dict[str, Any] = {"run": safe_text(r.name), "baseline": k == 0, "backend": r.metrics.backend or None}
        for m in METRICS:
            v = vals[m]
            rec[m + ("_us" if m in ("device_time", "self_cpu", "span", "busy", "idle") else "")] = (
                None if v is None else (int(v) if m in ("dispatches", "host_ops") else v)
            )
        rec["steps"] = r.metrics.steps
        rec["device_time_source"] = r.metrics.device_time_source or None
        rec["ratio_to_baseline"] = {m: ratio(vals[m], base[m]) for m in METRICS}
        out.append(rec)
    return out


def render_csv(runs: Sequence["Run"], diff: "OpDiff", *, sort=None, pattern=None, limit=None, changed=False,
               only=None) -> str:
    import csv
    import io

    buf = io.StringIO()
    blocks = []
    if only in (None, "summary"):
        recs = summary_records(runs)
        flat = []
        for rec in recs:
            r = {k: v for k, v in rec.items() if k != "ratio_to_baseline"}
            for m, v in rec["ratio_to_baseline"].items():
                r[f"ratio_{m}"] = v
            flat.append(r)
        blocks.append(flat)
    if only in (None, "ops"):
        rows = _diff_rows(diff, sort, pattern, limit, changed)
        recs = []
        for row in rows:
            rec: dict[str, Any] = {"name": diff_cell(row, "name", -1), "row": "device" if row.is_device else "CPU"}
            if diff.by_shapes:
                rec["input_shapes"] = diff_cell(row, "input_shapes", -1)
            rec["status"] = row.status
            for k, n in enumerate(diff.run_names):
                rec[f"calls[{n}]"] = row.calls[k] if row.calls[k] is not None else ""
                rec[f"self_cpu_us[{n}]"] = row.self_cpu[k] if row.self_cpu[k] is not None else ""
                rec[f"self_device_us[{n}]"] = row.self_device[k] if row.self_device[k] is not None else ""
            for k in range(1, len(diff.run_names)):
                n = diff.run_names[k]
                rec[f"delta_calls[{n}]"] = int(row.delta("calls", k))
                rec[f"delta_self_cpu_us[{n}]"] = round(row.delta("self_cpu", k), 6)
                rec[f"delta_self_device_us[{n}]"] = round(row.delta("self_device", k), 6)
                rec[f"marker[{n}]"] = {"+": "new", "-": "removed", "": ""}[row.marker(k)]
            recs.append(rec)
        blocks.append(recs)
    from trntui.textsafe import csv_safe, safe_text

    for b, recs in enumerate(blocks):
        if b:
            buf.write("\n")
        if not recs:
            continue
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([csv_safe(safe_text(f)) for f in recs[0]])
        for rec in recs:
            # text cells (op and run names, shapes) are guarded against formula injection; numbers stay numbers
            writer.writerow([csv_safe(v) if isinstance(v, str) else v for v in rec.values()])
    return buf.getvalue()


def json_document(runs: Sequence["Run"], diff: "OpDiff", *, sort=None, pattern=None, limit=None, changed=False,
                  results: Sequence["RuleResult"] = ()) -> dict[str, Any]:
    from trntui.textsafe import safe_text

    rows = _diff_rows(diff, sort, pattern, limit, changed)
    return {
        "baseline": safe_text(runs[0].name),
        "runs": summary_records(runs),
        "ops": {
            "matched_by": "name+input_shapes" if diff.by_shapes else "name",
            "sort": sort or diff.default_sort,
            "filter": pattern,
            "device_label": diff.backend or None,
            "rows": [r.to_dict(diff.run_names) for r in rows],
        },
        "gaps": {safe_text(r.name): r.gaps.to_dict() for r in runs},
        "rules": [
            {
                "rule": safe_text(res.rule.text),
                "run": safe_text(res.run),
                "failed": res.failed,
                "checked": not res.missing,
                "left": res.left,
                "right": res.right,
                "missing": res.missing or None,
            }
            for res in results
        ],
    }


# -- the command ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from trntui.analysis.compare import check_rules, diff_ops, parse_rule

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
