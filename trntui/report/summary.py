"""torch's key_averages table as text for the CLI and CI (`trntui summary`): torch-style table, CSV, JSON, Markdown.

Pure functions (no Textual); trace names pass through `safe_text` so they cannot drive the terminal.
"""

from __future__ import annotations

import json
from typing import Any

from trntui.analysis.key_averages import ROW_FIELDS, OpTable
from trntui.model.profile import Profile
from trntui.report.format import csv_text, format_pct, format_time, markdown_safe, markdown_table  # noqa: F401 - re-exported
from trntui.textsafe import safe_text

FORMATS = ("table", "csv", "json", "markdown")


def format_share(value: float, total: float) -> str:
    """torch's `_format_time_share`: a percentage of `total`, or `NaN` when the total is 0."""
    if total == 0:
        return "NaN"
    return f"{value * 100.0 / total:.2f}%"


def format_memory(nbytes: int) -> str:
    """torch's `_format_memory`: bytes as B, KB, MB or GB (powers of 1024, 2 decimals)."""
    kb, mb, gb = 1024, 1024**2, 1024**3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


def table_columns(table: OpTable, with_shapes: bool = False) -> list[tuple[str, str]]:
    """(header, field) pairs in torch's order: device columns only when some row has device time, memory columns
    when the trace recorded memory (device memory only when some row has self device memory), Input Shapes when
    grouped by shapes and some row has shapes."""
    cols = [
        ("Name", "name"),
        ("Self CPU %", "self_cpu_percent"),
        ("Self CPU", "self_cpu_time_total"),
        ("CPU total %", "cpu_total_percent"),
        ("CPU total", "cpu_time_total"),
        ("CPU time avg", "cpu_time"),
    ]
    dev = table.backend
    if table.has_device:
        cols += [
            (f"Self {dev}", "self_device_time_total"),
            (f"Self {dev} %", "self_device_percent"),
            (f"{dev} total", "device_time_total"),
            (f"{dev} time avg", "device_time"),
        ]
    if table.profile_memory:
        cols += [("CPU Mem", "cpu_memory_usage"), ("Self CPU Mem", "self_cpu_memory_usage")]
        if table.has_device_memory:
            cols += [(f"{dev} Mem", "device_memory_usage"), (f"Self {dev} Mem", "self_device_memory_usage")]
    cols.append(("# of Calls", "count"))
    if with_shapes and table.has_input_shapes:
        cols.append(("Input Shapes", "input_shapes"))
    return cols


_MEMORY_FIELDS = frozenset({"cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage"})


def _cell(table: OpTable, field: str, k: int, totals: tuple[float, float] | None = None) -> str:
    if field == "name":
        return safe_text(table.name[k])
    if field == "input_shapes":
        return safe_text(table.input_shapes[k])
    if field == "count":
        return str(int(table.count[k]))
    if field in _MEMORY_FIELDS:
        return format_memory(int(getattr(table, field)[k]))
    if field.endswith("percent"):
        cpu, dev = totals if totals is not None else (table.sum_self_cpu, table.sum_self_device)
        value = {
            "self_cpu_percent": table.self_cpu_time_total,
            "cpu_total_percent": table.cpu_time_total,
            "self_device_percent": table.self_device_time_total,
        }[field][k]
        return format_share(float(value), dev if field == "self_device_percent" else cpu)
    return format_time(float(getattr(table, field)[k]))


def _ordered(table: OpTable, sort_by: str | None, limit: int | None) -> list[int]:
    return _shown_rows(table.order(sort_by), limit)


def _shown_rows(order: Any, limit: int | None) -> list[int]:
    """The first `limit` rows of a sort order (None or negative: all)."""
    rows = order.tolist()
    return rows[:limit] if limit is not None and limit >= 0 else rows


def _selection(table: OpTable, sort_by: str | None, limit: int | None) -> tuple[list[int], tuple[float, float]]:
    """The rows torch's table shows and the totals of its footer (over every row of the sort, not only those
    shown)."""
    order = table.order(sort_by)
    return _shown_rows(order, limit), table.totals(order)


def _footer(table: OpTable, totals: tuple[float, float]) -> list[str]:
    """torch's footer: the self CPU total, and the device's when the trace has one."""
    out = [f"Self CPU time total: {format_time(totals[0])}"]
    if table.has_device:
        out.append(f"Self {table.backend} time total: {format_time(totals[1])}")
    return out


TORCH_COLUMN_WIDTH = 12
"""torch's `DEFAULT_COLUMN_WIDTH`; cells wider than it simply widen their row, as in torch."""
TORCH_SPACING = 2


def render_table(
    table: OpTable,
    sort_by: str | None = None,
    limit: int | None = 100,
    with_shapes: bool = False,
    name_width: int = 55,
    shapes_width: int = 80,
) -> str:
    """The table laid out exactly like `prof.key_averages().table(...)` (torch's `_build_table`: every column
    right-aligned, the name column as wide as the longest name + 4 up to 55, Input Shapes as wide as the longest
    shapes + 4 up to 80 with each cell cut to it, the others 12, two spaces after each), plus torch's footer.
    An empty table is "", as torch prints it."""
    if not len(table):
        return ""
    cols = table_columns(table, with_shapes)
    rows, totals = _selection(table, sort_by, limit)
    names = [safe_text(n) for n in table.name]
    widths = [min(max((len(n) for n in names), default=0) + 4, name_width)]
    widths += [TORCH_COLUMN_WIDTH] * (len(cols) - 1)
    shapes = [safe_text(x) for x in table.input_shapes]
    shapes_col = min(max((len(x) for x in shapes), default=0) + 4, shapes_width)
    if cols[-1][1] == "input_shapes":
        widths[-1] = shapes_col
    spacing = " " * TORCH_SPACING

    def fmt(values: list[str]) -> str:
        return "".join(f"{v:>{w}}{spacing}" for v, w in zip(values, widths))

    def name_cell(k: int) -> str:
        name = names[k]
        return name[: name_width - 3] + "..." if len(name) >= name_width - 3 else name

    def cell(field: str, k: int) -> str:
        if field == "input_shapes":
            return shapes[k][:shapes_col]
        return _cell(table, field, k, totals)

    line = "".join("-" * w + spacing for w in widths)
    out = [line, fmt([h for h, _ in cols]), line]
    out += [fmt([name_cell(k)] + [cell(f, k) for _, f in cols[1:]]) for k in rows]
    out.append(line)
    out += _footer(table, totals)
    return "\n".join(out) + "\n"


def table_records(table: OpTable, sort_by: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows for CSV/JSON, with torch's attribute names (µs) and our device-backend label."""
    out = []
    for k in _ordered(table, sort_by, limit):
        row = table.row(k)
        row["name"] = safe_text(row["name"])
        row["input_shapes"] = safe_text(row["input_shapes"])
        out.append(row)
    return out


def render_csv(table: OpTable, sort_by: str | None = None, limit: int | None = None) -> str:
    records = table_records(table, sort_by, limit)
    fields = list(records[0]) if records else list(table.row(0)) if len(table) else list(ROW_FIELDS)
    # text cells (names, shapes) are guarded against formula injection; numbers stay numbers
    return csv_text(fields, [[r[f] for f in fields] for r in records])


def render_markdown(table: OpTable, sort_by: str | None = None, limit: int | None = None, with_shapes: bool = False) -> str:
    """torch's table as Markdown: the same columns and cells (shapes uncut), the same footer; "" when there are
    no rows (as torch's table)."""
    if not len(table):
        return ""
    cols = table_columns(table, with_shapes)
    rows, totals = _selection(table, sort_by, limit)
    out = markdown_table([h for h, _ in cols], [[_cell(table, f, k, totals) for _, f in cols] for k in rows])
    out.append("")
    out += _footer(table, totals)
    return "\n".join(out) + "\n"


def profile_facts(profile: Profile) -> dict[str, Any]:
    """What was loaded: sources, device, events, lanes, span, steps, skipped counts and notes."""
    t0, t1 = profile.span
    return {
        "sources": [safe_text(s) for s in profile.meta.sources],
        "device": profile.meta.device_kind,
        "backend": profile.meta.backend,
        "events": len(profile),
        "lanes": len(profile.lanes),
        "span_us": (t1 - t0) / 1000.0,
        "steps": profile.step_names(),
        "skipped": dict(profile.meta.skipped),
        "notes": [safe_text(n) for n in profile.meta.notes],
    }


EMPTY_TABLE_NOTE = "no events that key_averages lists (torch's table() prints nothing for such a profile)"
"""Said under an empty table (which is "", as torch prints it), so an empty result is not mistaken for a failure."""


INPUT_NOTE_WORDS = ("truncated", "repaired", "skipped", "negative duration")
"""The load notes that bear on every figure of a report (what was skipped, repaired or read as an instant):
the reports other than `summary` (which prints every note) print these (`input_lines`)."""


def input_notes(profile: Profile) -> list[str]:
    """The load notes (`profile.meta.notes`) of `INPUT_NOTE_WORDS`, terminal-safe."""
    return [safe_text(n) for n in profile.meta.notes if any(w in n for w in INPUT_NOTE_WORDS)]


def skipped_line(profile: Profile) -> "str | None":
    """`Skipped N input record(s): ...` when the load skipped any, else None."""
    if not profile.meta.skipped:
        return None
    parts = ", ".join(f"{v} {k}" for k, v in profile.meta.skipped.items())
    return f"Skipped {profile.meta.skipped_total} input record(s): {parts}"


def input_lines(profile: Profile) -> list[str]:
    """What a report other than `summary` says under its figures about its input: the skipped records and the
    load notes of `INPUT_NOTE_WORDS`."""
    line = skipped_line(profile)
    return ([line] if line else []) + [f"Note: {n}" for n in input_notes(profile)]


def footer_lines(profile: Profile, table: OpTable) -> list[str]:
    """trntui's own notes under torch's footer: where device time came from, link rules, what was skipped."""
    lines = []
    if not len(table):
        lines.append(f"Note: {EMPTY_TABLE_NOTE}")
    if table.has_device:
        src = table.device_time_source or "trace.json device rows"
        lines.append(f"Device time from: {src}")
    if table.link_counts:
        parts = ", ".join(f"{k} {v}" for k, v in table.link_counts.items())
        lines.append(f"Device rows linked by: {parts}")
    if (line := skipped_line(profile)) is not None:
        lines.append(line)
    from trntui.analysis.surprises import surprises

    explained = [s.note for s in surprises(profile, table)]
    for note in [*profile.meta.notes, *explained]:
        if note.startswith("negative Self CPU, as torch prints it") and note not in explained:
            continue  # said by a profile cached before the note moved here (analysis/surprises.py)
        lines.append(f"Note: {safe_text(note)}")
    return lines


def render(
    profile: Profile,
    table: OpTable,
    fmt: str = "table",
    sort_by: str | None = None,
    limit: int | None = 100,
    with_shapes: bool = False,
    title: str | None = None,
) -> str:
    if fmt == "table":
        head = f"== {safe_text(title)} ==\n" if title else ""
        body = render_table(table, sort_by, limit, with_shapes)
        extra = footer_lines(profile, table)
        return head + body + ("\n".join(extra) + "\n" if extra else "")
    if fmt == "markdown":
        head = f"### {safe_text(title)}\n\n" if title else ""
        extra = footer_lines(profile, table)
        return markdown_safe(head + render_markdown(table, sort_by, limit, with_shapes) + ("\n".join(extra) + "\n" if extra else ""))
    if fmt == "csv":
        return render_csv(table, sort_by, limit)
    if fmt == "json":
        return json.dumps(json_document(profile, table, sort_by, limit, title), indent=1) + "\n"
    raise ValueError(f"unknown format {fmt!r}")


def json_document(
    profile: Profile, table: OpTable, sort_by: str | None = None, limit: int | None = None, title: str | None = None
) -> dict[str, Any]:
    return {
        "run": safe_text(title) if title else None,
        "profile": profile_facts(profile),
        "device_label": table.backend if table.has_device else None,
        "totals": {
            "self_cpu_time_total": table.sum_self_cpu,
            "self_device_time_total": table.sum_self_device if table.has_device else 0.0,
        },
        "device_time_source": table.device_time_source or None,
        "link_counts": table.link_counts,
        "rows": table_records(table, sort_by, limit),
    }


