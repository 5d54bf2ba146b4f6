"""The compare report: one summary row per run and the op-level diff, as text, Markdown, CSV and JSON
(`trntui compare`), and the cells the compare view shows (trntui/tui/screens/compare.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from trntui.analysis.compare import METRICS, TIME_METRICS, headline_metric, ratio
from trntui.report.format import csv_text, fitted_table, fold, format_time, markdown_safe, markdown_table, text_table  # noqa: F401
from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:  # pragma: no cover
    from trntui.analysis.compare import ComparedRun, OpDiff, RuleResult


def fmt_time(us: float | None) -> str:
    return "-" if us is None else format_time(us)


def fmt_delta_time(us: float) -> str:
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


def summary_columns(runs: Sequence["ComparedRun"]) -> list[tuple[str, str]]:
    """(header, key) for the run summary; keys are metric names plus `name` and `ratio`."""
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


def summary_cells(runs: Sequence["ComparedRun"]) -> list[list[str]]:
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


def _text_table(headers: list[str], cells: list[list[str]], left: int = 1, width: int | None = None,
                give_way: Sequence[int] = ()) -> list[str]:
    """The first `left` columns left-aligned; the last of them (the name) shortened so that the table fits
    `width` cells (`format.short_names`: what tells long kernel names apart is kept), the `give_way` columns
    left out first where that is not enough; None: everything in full."""
    return fitted_table(headers, cells, left - 1, width, align="l" * left, give_way=give_way)


SUMMARY_GIVE_WAY = ("idle", "busy", "span", "host_ops", "dispatches", "self_cpu")
"""The run summary's columns in the order they give way on a narrow terminal."""


def diff_give_way(diff: "OpDiff", sort: str | None) -> list[int]:
    """The op diff's columns in the order they give way on a narrow terminal: the per-run values of the metrics
    not sorted by, their deltas, then the per-run values of the sorted metric; the name, the sorted delta and the
    status stay."""
    sort = sort or diff.default_sort
    cols = diff_columns(diff)
    values = [j for j, (_, f, _) in enumerate(cols) if f in ("calls", "self_cpu", "self_device") and f != sort]
    deltas = [j for j, (_, f, _) in enumerate(cols) if f.startswith("d_") and f[2:] != sort]
    shapes = [j for j, (_, f, _) in enumerate(cols) if f == "input_shapes"]
    mine = [j for j, (_, f, _) in enumerate(cols) if f == sort and sort != "name"]
    return values[::-1] + deltas[::-1] + shapes + mine[::-1]


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


def critical_path_summaries(runs: Sequence["ComparedRun"]) -> list[dict[str, Any] | None]:
    """Per run, the critical path of its longest step (trntui.analysis.critical_path): step, path and step µs,
    bound_by, breakdown_pct; None where the run has no step (the reason in `error`)."""
    from trntui.analysis.critical_path import step_path
    from trntui.errors import TrntuiError

    out: list[dict[str, Any] | None] = []
    for r in runs:
        try:
            cp = step_path(r.profile)
        except TrntuiError as exc:
            out.append({"run": safe_text(r.name), "error": safe_text(exc)})
            continue
        d = cp.to_dict(top=5)
        out.append({"run": safe_text(r.name), "step": d["step"], "step_us": d["step_us"], "path_us": d["path_us"],
                    "bound_by": d["bound_by"], "breakdown_pct": d["breakdown_pct"],
                    "top_events": [{k: t[k] for k in ("name", "on_path_us", "bound")} for t in d["top_events"]]})
    return out


def critical_path_lines(summaries: list[dict[str, Any] | None], markdown: bool = False,
                        width: int | None = None) -> list[str]:
    """The critical-path breakdown per run: one row per run, one column per bound type that has time in any."""
    ok = [s for s in summaries if s and "error" not in s]
    bounds: list[str] = []
    for s in ok:
        bounds += [b for b, v in s["breakdown_pct"].items() if v and b not in bounds]
    head = ["run", "bound by", "step", "path (us)", *[f"{b} %" for b in bounds]]
    cells = []
    for s in summaries:
        if not s:
            continue
        if "error" in s:
            cells.append([s["run"], s["error"], "—", "—", *["" for _ in bounds]])
            continue
        cells.append([s["run"], s["bound_by"] or "—", str(s["step"]), f"{s['path_us']:,.1f}",
                      *[f"{s['breakdown_pct'].get(b, 0.0):.1f}" for b in bounds]])
    title = "Critical path per run (longest step; docs/overview.md)"
    if markdown:
        return [f"### {title}", "", *markdown_table(head, cells), ""]
    give_way = list(range(len(head) - 1, 3, -1))  # the smaller bound shares give way first, `bound by` stays
    return [title, *_text_table(head, cells, left=2, width=width, give_way=give_way), ""]


def render_text(runs: Sequence["ComparedRun"], diff: "OpDiff", *, sort=None, pattern=None, limit=40, changed=False,
                only=None, markdown=False, critical: list[dict[str, Any] | None] | None = None,
                width: int | None = None) -> str:
    """The compare report as text (or Markdown); `width`: the cells the text tables fit (None: full names)."""
    out: list[str] = []
    base = safe_text(runs[0].name)
    if only in (None, "summary"):
        cols = summary_columns(runs)
        cells = summary_cells(runs)
        title = f"Runs (baseline: {base})"
        if markdown:
            out += [f"### {title}", "", *markdown_table([h for h, _ in cols], cells), ""]
        else:
            give_way = [j for key in SUMMARY_GIVE_WAY for j, (_, k) in enumerate(cols) if k == key]
            out += [title, *_text_table([h for h, _ in cols], cells, left=2, width=width, give_way=give_way), ""]
        notes = _summary_notes(runs)
        if width is not None and not markdown:
            import textwrap

            notes = [line for note in notes for line in textwrap.wrap(note, max(width, 40), subsequent_indent="  ")]
        out += notes + ([""] if notes else [])
        if critical:
            out += critical_path_lines(critical, markdown, width)
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
            out += [f"### {title}", "", legend, "", *markdown_table([h for h, _, _ in cols], cells)]
        else:
            out += [title, legend, *_text_table([h for h, _, _ in cols], cells, width=width,
                                                give_way=diff_give_way(diff, sort))]
    if width is not None and not markdown:
        out = [folded for line in out for folded in fold(line, width)]
    text = "\n".join(out).rstrip("\n") + "\n"
    return markdown_safe(text) if markdown else text


def _summary_notes(runs: Sequence["ComparedRun"]) -> list[str]:
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


def summary_records(runs: Sequence["ComparedRun"]) -> list[dict[str, Any]]:
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


def render_csv(runs: Sequence["ComparedRun"], diff: "OpDiff", *, sort=None, pattern=None, limit=None, changed=False,
               only=None) -> str:
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
    # blocks one empty line apart; text cells (op and run names, shapes) are guarded against formula injection
    return "\n".join(csv_text(list(recs[0]), [list(r.values()) for r in recs]) if recs else "" for recs in blocks)


def json_document(runs: Sequence["ComparedRun"], diff: "OpDiff", *, sort=None, pattern=None, limit=None, changed=False,
                  results: Sequence["RuleResult"] = (), critical: list[dict[str, Any] | None] | None = None
                  ) -> dict[str, Any]:
    rows = _diff_rows(diff, sort, pattern, limit, changed)
    return {
        "baseline": safe_text(runs[0].name),
        "runs": summary_records(runs),
        "critical_path": critical if critical is not None else critical_path_summaries(runs),
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
