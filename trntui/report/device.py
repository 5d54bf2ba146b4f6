"""Text renderings of a device report (`trntui device`, and the tables of the app's Device screen).

Pure functions over `trntui.analysis.device.DeviceReport`: plain-text tables, CSV (one block per table, separated
by a blank line, first column `table`), JSON and Markdown. Names from the export pass through `safe_text`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trntui.analysis.roofline import MARKERS, ascii_plot, fmt_ai, fmt_x, si
from trntui.analysis.timeline import format_ns
from trntui.model.device import ENGINE_HW
from trntui.textsafe import csv_safe, safe_text, truncate

if TYPE_CHECKING:
    from trntui.analysis.device import DeviceReport
    from trntui.analysis.roofline import Point
    from trntui.model.device import DeviceExport

BAR = 24


@dataclass
class Table:
    """One report table: `key` (CSV/JSON name), title, headers, and rows of (display text, raw value) cells."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[tuple[str, Any]]]
    right: frozenset[int] = frozenset()
    """Column indexes aligned right (numbers)."""


def human_bytes(n: float) -> str:
    n = float(n)
    if not math.isfinite(n) or n < 0:
        return "-"
    return si(n, "B") if n else "0 B"


def pct(p: float) -> str:
    if p is None or not math.isfinite(p) or p < 0:
        return "-"
    return f"{p:.1f}%" if p >= 0.1 or p == 0 else f"{p:.2g}%"


def flops_cell(v: float) -> tuple[str, Any]:
    """(display, raw) of a FLOP count: `-`/null when unknown (no raw_flops), `0` when none."""
    v = float(v)
    if not math.isfinite(v):
        return "-", None
    return (si(v, "FLOP") if v else "0"), v


def raw(v: float) -> Any:
    """A float for JSON/CSV: None when NaN or infinite (unknown)."""
    return float(v) if v is not None and math.isfinite(float(v)) else None


DEFINITIONS = (
    "busy % = union of an engine's Instruction intervals ÷ the window, over the physical cores analysed (busy on any "
    "core; per-core % beside it); semaphore-wait instructions (EVENT_SEMAPHORE*) count as busy (\"no sem\" column "
    "without them)",
    "HBM = DMA bytes whose source or destination is not on-chip (anything but SB/SBUF/PSUM/STATE labels); "
    "intensity = FLOPs of every engine (raw_flops) ÷ HBM bytes (the matmul-only figure, the Summary's "
    "mm_arithmetic_intensity, beside it)",
)
"""The choices the schema leaves open, as the report names them (docs/neuron.md says why)."""


def bar(p: float, width: int = BAR) -> str:
    """A horizontal bar of `width` cells for a percentage (eighths of a cell)."""
    cells = max(min(p, 100.0), 0.0) / 100.0 * width
    full = int(cells)
    part = int(round((cells - full) * 8))
    if part == 8:
        full, part = full + 1, 0
    s = "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")
    return s.ljust(width, "·") if full < width else s[:width]


def plot_points(report: "DeviceReport") -> list[tuple[str, "Point"]]:
    """(marker, point) for the roofline plot: `E` for the execution, 1-9a-z for framework ops with data."""
    out: list[tuple[str, Point]] = []
    k = 0
    for p in report.points:
        if p.bound == "no data":
            continue
        out.append((MARKERS[k % len(MARKERS)], p))
        k += 1
    if report.execution is not None:
        out.append(("E", report.execution))  # drawn last: the execution's marker wins a shared cell
    return out


def header_lines(export: "DeviceExport", report: "DeviceReport") -> list[str]:
    ident = export.identity
    w = report.window
    parts = [f"schema {truncate(safe_text(export.version), 24)}" if export.version else "schema version unknown",
             report.instance_type or "instance type unknown"]
    if ident.nc is not None:
        parts.append(f"NC{ident.nc}")
    if ident.pid is not None:
        parts.append(f"PID {ident.pid}")
    parts.append("physical cores " + ",".join(str(p) for p in report.pcores) if report.pcores else "no instructions")
    lines = [f"Device profile {safe_text(export.name)}", "  " + " · ".join(parts)]
    lines += [f"  ! {safe_text(w_)}" for w_ in export.warnings]
    span = f"{format_ns(report.total_ns)}"
    what = "whole profile" if w.whole and w.index is None else safe_text(w.label)
    lines.append(f"Window: {what} · {span} · {report.instruction_count:,} instructions")
    if report.shift:
        lines.append(f"  (device clock placed on the system trace: {format_ns(report.shift)} shift)")
    return lines


def busy_heading(report: "DeviceReport", compact: bool = False) -> str:
    """The heading of the busy bars, naming which figure they are: with two physical cores, the union (busy on any
    core), not one core's own busy % (the engines table's `Core N %` columns and the timeline's lane labels)."""
    cores = report.pcores
    if len(cores) > 1:
        which = ",".join(str(c) for c in cores)
        return f"Busy · union of cores {which}" if compact else f"Engine busy · union of cores {which} (busy on any core)"
    return "Engine busy" if compact else "Engine busy (union of instruction intervals)"


PER_CORE_NOTE = "lane % = one core's busy share of the span shown"
"""What the busy % in a hardware lane's label is (the timeline widget's figure), beside the union bars."""


def engine_lines(report: "DeviceReport", width: int = BAR, compact: bool = False) -> list[str]:
    """Per-engine busy bars (and DMA), one line each (`compact`: without the count's unit)."""
    lines = []
    for e in report.engines:
        hw = ENGINE_HW.get(e.engine, "")
        name = f"{e.engine} ({hw})" if hw else truncate(safe_text(e.engine), 13)
        unit = "" if compact else " instr"
        p = e.percent if math.isfinite(e.percent) else 0.0
        lines.append(f"  {name:<13} {bar(p, width)} {pct(e.percent):>6} {e.instructions:>6,}{unit}")
    if report.dma is not None:
        d = report.dma
        unit = "" if compact else (" transfers" if d.transfers else " packets")
        p = d.percent if math.isfinite(d.percent) else 0.0
        lines.append(f"  {'DMA':<13} {bar(p, width)} {pct(d.percent):>6} {d.transfers or d.packets:>6,}{unit}")
    return lines


def roofline_lines(report: "DeviceReport", width: int = 72, height: int = 14, plot: bool = True) -> list[str]:
    if report.roof is None or report.execution is None:
        return [f"Roofline: {report.roof_note}"]
    r = report.roof
    te = report.tensor_engines
    lines = [
        f"Roofline: {safe_text(r.label)}: peak {si(r.flops, 'FLOP/s')}, HBM {si(r.bandwidth, 'B/s')}, "
        f"ridge {fmt_ai(r.ridge)} FLOP/B",
        f"  Verdict: {safe_text(report.execution.verdict())}",
        f"  FLOPs {flops_cell(report.flops)[0]} (raw_flops, all engines) · HBM {human_bytes(report.hbm_bytes)} "
        f"({report.hbm_source}) · MFU {pct(report.mfu)} (over {te} Tensor Engine{'s' if te != 1 else ''}) · "
        f"MBU {pct(report.mbu)}",
        f"  Matmul-only intensity (Tensor Engine FLOPs − transposes ÷ HBM bytes): {fmt_ai(report.matmul_intensity)} FLOP/B",
    ]
    sm = report.export_summary
    if sm:
        lines.append("  The export's Summary: " + ", ".join(f"{k} {fmt_ai(v)}" for k, v in sm.items())
                     + " (matmul FLOPs only; the schema's roof: Tensor Engine peak ÷ DRAM bandwidth)")
    if plot:
        lines += ["  " + x for x in ascii_plot(r, plot_points(report), width, height)]
    lines.append(f"  Peaks from: {r.source}")
    return lines


def tables(report: "DeviceReport", limit: int = 10) -> list[Table]:
    """The report's tables in display order."""
    out: list[Table] = []
    rows = []
    cores = report.pcores if len(report.pcores) > 1 else []
    r4 = lambda v: round(v, 4) if v is not None and math.isfinite(v) else None  # noqa: E731
    for e in report.engines:
        rows.append([(safe_text(e.engine), e.engine), (ENGINE_HW.get(e.engine, ""), ENGINE_HW.get(e.engine, "")),
                     (pct(e.percent), r4(e.percent)),
                     *[(pct(e.per_core.get(c, 0.0)), r4(e.per_core.get(c, 0.0))) for c in cores],
                     (pct(e.percent_no_semaphore), r4(e.percent_no_semaphore)),
                     (format_ns(e.busy_ns), e.busy_ns),
                     (f"{e.instructions:,}", e.instructions), (format_ns(e.instruction_ns), e.instruction_ns),
                     (pct(e.active_time_percent), r4(e.active_time_percent))])
    union = f"union over cores {','.join(str(c) for c in cores)}" if cores else "union of instruction intervals"
    heads = ["Engine", "HW", "Busy %" + (" (any core)" if cores else ""), *[f"Core {c} %" for c in cores],
             "Busy % no sem", "Busy", "Instructions", "Instr time", "ActiveTime %"]
    out.append(Table("engines", f"Engines (busy = {union} ÷ window; no sem = without semaphore waits)",
                     heads, rows, frozenset(range(2, len(heads)))))
    fw = report.framework
    rows = []
    for k, r in enumerate(fw.head(limit).itertuples(index=False)):
        p = report.points[k] if k < len(report.points) else None
        rows.append([
            (truncate(safe_text(r.framework_op), 40), str(r.framework_op)),
            (f"{int(r.count):,}" if r.count else "-", int(r.count)),
            (format_ns(r.last - r.first), int(r.last - r.first)), (format_ns(r.busy_ns), int(r.busy_ns)),
            (pct(r.percent), raw(r.percent)),
            (human_bytes(r.hbm_bytes), _int_or_none(r.hbm_bytes)), flops_cell(r.flops),
            (fmt_ai(p.intensity) if p else "-", raw(p.intensity) if p else None),
            (p.bound if p else "-", p.bound if p else None),
            (fmt_x(p.headroom) if p else "-", raw(p.headroom) if p else None),
        ])
    out.append(Table("framework_ops", "Framework ops (span = first to last instruction)",
                     ["Framework op", "Instr", "Span", "Busy", "Busy %", "HBM bytes", "FLOPs", "AI FLOP/B", "Bound",
                      "Headroom"], rows, frozenset({1, 2, 3, 4, 5, 6, 7, 9})))
    rows = []
    for r in report.opcodes.head(limit).itertuples(index=False):
        rows.append([(safe_text(r.engine), str(r.engine)), (truncate(safe_text(r.opcode), 28), str(r.opcode)),
                     (f"{int(r.count):,}", int(r.count)), (format_ns(r.time_ns), int(r.time_ns)),
                     (format_ns(r.busy_ns), int(r.busy_ns)), (pct(r.percent), round(float(r.percent), 4)),
                     (human_bytes(r.hbm_bytes), _int_or_none(r.hbm_bytes)), (human_bytes(r.sbuf_bytes), _int_or_none(r.sbuf_bytes)),
                     flops_cell(r.flops)])
    out.append(Table("opcodes", "Top opcodes by instruction time",
                     ["Engine", "Opcode", "Count", "Time", "Busy", "Busy %", "HBM bytes", "SBUF bytes", "FLOPs"], rows,
                     frozenset({2, 3, 4, 5, 6, 7, 8})))
    rows = []
    for r in report.hlo.head(limit).itertuples(index=False):
        rows.append([(truncate(safe_text(r.hlo), 32), str(r.hlo)), (f"{int(r.count):,}", int(r.count)),
                     (format_ns(r.time_ns), int(r.time_ns)) if r.count else ("-", None), (format_ns(r.busy_ns), int(r.busy_ns)),
                     (pct(r.percent), raw(r.percent)), (human_bytes(r.hbm_bytes), _int_or_none(r.hbm_bytes)),
                     flops_cell(r.flops)])
    out.append(Table("hlo", "Top HLO ops", ["HLO", "Count", "Time", "Busy", "Busy %", "HBM bytes", "FLOPs"], rows,
                     frozenset({1, 2, 3, 4, 5, 6})))
    rows = []
    for r in report.instructions.head(limit).itertuples(index=False):
        rows.append([(safe_text(r.engine), str(r.engine)), (str(int(r.pcore)), int(r.pcore)),
                     (truncate(safe_text(r.opcode), 24), str(r.opcode)), (truncate(safe_text(r.hlo), 18), str(r.hlo)),
                     (truncate(safe_text(r.framework_op), 24), str(r.framework_op)),
                     ("+" + format_ns(r.start_ns), int(r.start_ns)), (format_ns(r.duration_ns), int(r.duration_ns)),
                     (human_bytes(r.hbm_bytes), int(r.hbm_bytes)), (human_bytes(r.sbuf_bytes), int(r.sbuf_bytes)),
                     flops_cell(r.flops)])
    out.append(Table("instructions", "Top instructions by duration",
                     ["Engine", "Core", "Opcode", "HLO", "Framework op", "Start", "Duration", "HBM", "SBUF", "FLOPs"],
                     rows, frozenset({1, 5, 6, 7, 8, 9})))
    if report.dma is not None:
        d = report.dma
        rows = [[(safe_text(r.source), str(r.source)), (safe_text(r.dest), str(r.dest)),
                 (f"{int(r.transfers):,}", int(r.transfers)), (human_bytes(r.bytes), int(r.bytes)),
                 (format_ns(r.busy_ns), int(r.busy_ns)), (si(r.bandwidth, "B/s"), float(r.bandwidth))]
                for r in d.by_route.head(limit).itertuples(index=False)]
        out.append(Table("dma_routes", "DMA by source → destination",
                         ["Source", "Dest", "Transfers", "Bytes", "Busy", "Bandwidth"], rows, frozenset({2, 3, 4, 5})))
        rows = [[(truncate(safe_text(r.queue), 28), str(r.queue)), (safe_text(r.type), str(r.type)),
                 (f"{int(r.transfers):,}", int(r.transfers)), (human_bytes(r.bytes), int(r.bytes)),
                 (format_ns(r.busy_ns), int(r.busy_ns)), (si(r.bandwidth, "B/s"), float(r.bandwidth))]
                for r in d.by_queue.head(limit).itertuples(index=False)]
        out.append(Table("dma_queues", "DMA by queue", ["Queue", "Type", "Transfers", "Bytes", "Busy", "Bandwidth"],
                         rows, frozenset({2, 3, 4, 5})))
    if report.checks:
        rows = []
        for c in report.checks:
            fmt = (lambda v: f"{v:.4g}%") if c.unit == "%" else (lambda v: f"{v:,.0f}")
            rows.append([(c.metric, c.metric), (fmt(c.ours), c.ours), (fmt(c.export), c.export),
                         ("yes" if c.agrees else "NO", c.agrees)])
        out.append(Table("summary_check", "The export's own Summary next to trntui's figures",
                         ["Metric", "trntui", "Summary", "Agree"], rows, frozenset({1, 2})))
    return out


def _int_or_none(v: Any) -> Any:
    v = float(v)
    if not math.isfinite(v):
        return None
    return int(v) if abs(v) < 2.0**62 else v


def table_lines(t: Table, markdown: bool = False) -> list[str]:
    cells = [[c[0] for c in row] for row in t.rows]
    if markdown:
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        return [f"### {t.title}", "", "| " + " | ".join(t.headers) + " |",
                "|" + "|".join(" ---: " if k in t.right else " --- " for k in range(len(t.headers))) + "|",
                *["| " + " | ".join(esc(c) for c in r) + " |" for r in cells]]
    widths = [max([len(h)] + [len(r[k]) for r in cells]) for k, h in enumerate(t.headers)]
    fmt = lambda row: "  ".join(  # noqa: E731
        (c.rjust(widths[k]) if k in t.right else c.ljust(widths[k])) for k, c in enumerate(row)).rstrip()
    lines = [t.title, "  " + fmt(t.headers), "  " + "  ".join("-" * w for w in widths)]
    lines += ["  " + fmt(r) for r in cells] or ["  (none)"]
    return lines


def render_text(export: "DeviceExport", report: "DeviceReport", limit: int = 10, markdown: bool = False) -> str:
    lines = header_lines(export, report)
    if markdown:
        lines = [f"## {lines[0]}", ""] + [x.strip() for x in lines[1:]]
    lines.append("")
    if not markdown:
        lines.append(busy_heading(report))
        lines += engine_lines(report)
        if report.dma is not None:
            d = report.dma
            lines.append(f"  DMA: {human_bytes(d.bytes)} in {d.transfers:,} transfers, {si(d.bandwidth, 'B/s')} while "
                         f"active; HBM read {human_bytes(d.hbm_read)}, write {human_bytes(d.hbm_write)}")
        lines.append("")
    rl = roofline_lines(report, plot=not markdown)
    lines += ([f"### {rl[0]}", ""] + [x.strip() for x in rl[1:]]) if markdown else rl
    for t in tables(report, limit):
        lines.append("")
        lines += table_lines(t, markdown)
    notes = list(export.notes) + list(report.notes)
    if export.missing:
        notes.append("optional tables not in this export: " + ", ".join(export.missing))
    lines.append("")
    lines += [f"Definition: {d}" for d in DEFINITIONS]
    if notes:
        lines += [f"Note: {safe_text(n)}" for n in notes]
    text = "\n".join(lines) + "\n"
    if markdown:
        from trntui.report.format import markdown_safe

        return markdown_safe(text)
    return text


def document(export: "DeviceExport", report: "DeviceReport", limit: int = 10) -> dict[str, Any]:
    """The JSON document: profile, window, figures, roofline, and every table's raw values."""
    roof = report.roof
    doc: dict[str, Any] = {
        "profile": export.describe(),
        "window": {"label": report.window.label, "start_ns": report.window.start, "end_ns": report.window.end,
                   "duration_ns": report.total_ns, "execution_index": report.window.index,
                   "shift_ns": report.shift},
        "instruction_count": report.instruction_count,
        "flops": raw(report.flops),
        "tensor_flops": raw(report.tensor_flops),
        "matmul_intensity": raw(report.matmul_intensity),
        "tensor_engines": report.tensor_engines,
        "hbm_bytes": report.hbm_bytes,
        "hbm_bytes_source": report.hbm_source,
        "mfu_percent": raw(report.mfu),
        "mbu_percent": raw(report.mbu),
        "dma": None if report.dma is None else {
            "active_ns": report.dma.active_ns, "active_percent": report.dma.percent, "transfers": report.dma.transfers,
            "packets": report.dma.packets, "bytes": report.dma.bytes, "hbm_read_bytes": report.dma.hbm_read,
            "hbm_write_bytes": report.dma.hbm_write, "bandwidth_bytes_per_s": report.dma.bandwidth,
            "active_time_from": report.dma.source_table},
        "roofline": None if roof is None or report.execution is None else {
            "roof": roof.label, "peak_flops_per_s": roof.flops, "peak_hbm_bytes_per_s": roof.bandwidth,
            "ridge_flop_per_byte": roof.ridge, "source": roof.source,
            "points": [_point(p) for p in [report.execution, *report.points]],
            "verdict": report.execution.verdict(),
        },
        "roofline_note": report.roof_note or None,
        "notes": list(export.notes) + list(report.notes),
        "definitions": list(DEFINITIONS),
    }
    for t in tables(report, limit):
        doc[t.key] = [{h: c[1] for h, c in zip(t.headers, row)} for row in t.rows]
    return doc


def _point(p: "Point") -> dict[str, Any]:
    fin = lambda v: v if math.isfinite(v) else None  # noqa: E731
    return {"name": p.name, "flops": fin(p.flops), "hbm_bytes": fin(p.hbm_bytes), "seconds": p.seconds,
            "intensity": fin(p.intensity), "achieved_flops_per_s": fin(p.achieved_flops),
            "achieved_bytes_per_s": fin(p.achieved_bandwidth), "attainable_flops_per_s": fin(p.attainable),
            "bound": p.bound, "headroom": fin(p.headroom)}


def render_csv(report: "DeviceReport", limit: int = 10) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for k, t in enumerate(tables(report, limit)):
        if k:
            buf.write("\n")
        writer.writerow(["table"] + t.headers)
        for row in t.rows:
            writer.writerow([t.key] + [csv_safe(v) if isinstance(v, str) else ("" if v is None else v) for _, v in row])
    return buf.getvalue()


def render(export: "DeviceExport", report: "DeviceReport", fmt: str, limit: int = 10) -> str:
    if fmt == "json":
        return json.dumps(document(export, report, limit), indent=1, default=str) + "\n"
    if fmt == "csv":
        return render_csv(report, limit)
    return render_text(export, report, limit, markdown=fmt == "markdown")


def info_lines(entries: list[dict[str, Any]]) -> list[str]:
    """`trntui info` lines for the device profiles found (from `describe_device`)."""
    out: list[str] = []
    for d in entries:
        facts = [f"schema {truncate(safe_text(d['profile_schema_version']), 40)}" if d.get("profile_schema_version") else "no schema version"]
        if d.get("instance_type"):
            facts.append(str(d["instance_type"]))
        if d.get("pid") is not None:
            facts.append(f"pid {d['pid']}")
        if d.get("nc") is not None:
            facts.append(f"NC{d['nc']}")
        out.append(f"device profile {safe_text(d['name'])}  [{safe_text(d['path'])}]")
        out.append("  " + ", ".join(safe_text(f) for f in facts))
        tabs = ", ".join(f"{safe_text(t)} {v['rows']:,}" + (f" ({len(v['files'])} files)" if len(v["files"]) > 1 else "")
                         for t, v in d["tables"].items())
        out.append(f"  tables (rows): {tabs}")
        if d["missing_optional_tables"]:
            out.append("  missing optional tables: " + ", ".join(d["missing_optional_tables"]))
        for t, v in d["tables"].items():
            if v["absent_optional_columns"]:
                out.append(f"  {t}: no {', '.join(v['absent_optional_columns'])} column(s)")
        for n in d.get("schema_notes") or []:
            out.append(f"  schema: {safe_text(n)}")
        for p in d["problems"]:
            out.append(f"  problem: {safe_text(p)}")
        out.append(f"  open: trntui device {safe_text(d['path'])}")
    return out
