"""The hardware gap report (`trntui.analysis.gaps.GapReport`) as text: `trntui summary --gaps` and the compare
view's gaps screen. JSON callers use `GapReport.to_dict()`."""

from __future__ import annotations

from trntui.analysis.gaps import GapReport
from trntui.report.format import csv_text, format_time, markdown_safe, markdown_table, text_table
from trntui.textsafe import safe_text

TITLE = "Hardware gaps (busy vs idle between the first and last execution of each lane)"
HEADERS = ["Lane", "Executions", "Active window", "Busy", "Idle", "Busy %", "Gaps", "Largest gaps (start +offset)"]


def render_gaps(report: GapReport, fmt: str = "table") -> str:
    """The gap report as text (`table` / `markdown`) or CSV."""
    rows = ([report.device] if report.device else []) + list(report.lanes)
    if fmt == "csv":
        return csv_text(
            ["lane", "executions", "span_us", "busy_us", "idle_us", "busy_percent", "gaps", "largest_gaps_us"],
            [
                [
                    safe_text(r.label), r.executions, r.span_ns / 1000.0, r.busy_ns / 1000.0, r.idle_ns / 1000.0,
                    round(100.0 * r.busy_fraction, 3), r.gap_count, " ".join(f"{g.duration / 1000.0:g}" for g in r.gaps),
                ]
                for r in rows
            ],
        )
    if not rows:
        return "Hardware gaps: no hardware lanes in this profile (CPU-only trace).\n"
    cells = []
    for r in rows:
        largest = ", ".join(
            f"{format_time(g.duration / 1000.0)} @+{format_time((g.start - report.origin_ns) / 1000.0)}" for g in r.gaps
        )
        cells.append([
            safe_text(r.label), str(r.executions), format_time(r.span_ns / 1000.0), format_time(r.busy_ns / 1000.0),
            format_time(r.idle_ns / 1000.0), f"{100.0 * r.busy_fraction:.1f}%", str(r.gap_count), largest or "-",
        ])
    if fmt == "markdown":
        return markdown_safe("\n".join([f"#### {TITLE}", "", *markdown_table(HEADERS, cells)]) + "\n")
    return "\n".join([TITLE, *text_table(HEADERS, cells, align="lrrrrrrl")]) + "\n"
