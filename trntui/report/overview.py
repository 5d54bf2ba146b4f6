"""Text output of `trntui overview`: table (terminal), markdown, CSV (the step breakdown) and JSON.

JSON is `Overview.to_dict()` (the stable interface, docs/overview.md). Names from the trace are made
terminal-safe (`safe_text`); tables and CSV come from `trntui.report.format`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trntui.analysis.overview.bars import stack_cells
from trntui.report.format import csv_text, fitted_table, fold, fold_legend, markdown_table, short_names, text_table
from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:
    from trntui.analysis.overview import Overview

KERNEL_ROWS = 15
"""Kernel rows in the table and markdown output (the JSON has all of them)."""


def _us(ns: float) -> str:
    return f"{ns / 1000.0:,.1f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:.2f}%"


def breakdown_rows(ov: "Overview") -> tuple[list[str], list[list[str]]]:
    header = ["Step", "Total (us)", *[f"{c} (us)" for c in ov.visible]]
    rows = [[str(s.number), _us(s.duration), *[_us(ov.costs[k, ov.categories.index(c)]) for c in ov.visible]]
            for k, s in enumerate(ov.steps)]
    total = ov.average_ns.get("Total", 0.0)
    rows.append(["average", _us(total), *[_us(ov.average_ns.get(c, 0.0)) for c in ov.visible]])
    rows.append(["% of step", "100.00%" if total else "-",
                 *[f"{100 * ov.average_ns.get(c, 0.0) / total:.2f}%" if total else "-" for c in ov.visible]])
    return header, rows


def device_lines(ov: "Overview") -> list[str]:
    d = ov.devices
    if d is None or not d.devices:
        return ["No device work (CPU only)."]
    if ov.neuron:
        out = [f"NeuronCore busy: {_pct(d.utilization)}"]
        out += [f"  {safe_text(m.label)}: {_pct(m.utilization)} ({m.kernels} executions, {_us(m.busy_ns)} us)" for m in d.devices]
        return out
    out = [
        f"GPU utilization:                {_pct(d.utilization)}",
        f"Est. SM efficiency:             {_pct(d.sm_efficiency)}",
        f"Est. achieved occupancy:        {'-' if d.occupancy is None else f'{d.occupancy:.2f}%'}",
        f"Kernel time using Tensor Cores: {_pct(d.tensor_core)}",
    ]
    for m in d.devices:
        extra = ", ".join(x for x in (safe_text(m.name), f"{m.memory_bytes / 1024**3:.2f} GB" if m.memory_bytes else "",
                                      f"compute capability {m.compute_capability}" if m.compute_capability else "") if x)
        out.append(f"  {m.label}: utilization {_pct(m.utilization)}, SM efficiency {_pct(m.sm_efficiency)}, "
                   f"occupancy {'-' if m.occupancy is None else f'{m.occupancy:.2f}%'}" + (f" ({extra})" if extra else ""))
    return out


def kernel_rows(ov: "Overview", limit: int | None = KERNEL_ROWS, width: int | None = None) -> tuple[list[str], list[list[str]], int]:
    """The kernel table's header and rows (full names: the renderers fit them); `width`: names cut to it."""
    t = ov.kernel_tables
    if t is None or not t.by_name:
        return [], [], 0
    header = ["NEFF" if ov.neuron else "Kernel", "Calls", "Total (us)", "Mean (us)", "Max (us)", "Min (us)"]
    if t.has_blocks_per_sm:
        header.append("Blocks/SM")
    if t.has_occupancy:
        header.append("Occupancy %")
    if t.tensor_cores_known:
        header.append("Tensor Cores")
    rows = []
    shown = t.by_name[:limit] if limit else t.by_name
    names = [safe_text(r.name) for r in shown]
    if width is not None:
        names = short_names(names, width)
    for r, name in zip(shown, names):
        row = [name, f"{r.calls:,}", _us(r.total_ns), _us(r.mean_ns), _us(r.max_ns), _us(r.min_ns)]
        if t.has_blocks_per_sm:
            row.append(f"{r.blocks_per_sm:.2f}")
        if t.has_occupancy:
            row.append(f"{r.occupancy:.2f}")
        if t.tensor_cores_known:
            row.append("yes" if r.tensor_cores else "no")
        rows.append(row)
    return header, rows, len(t.by_name)


def communication_rows(ov: "Overview") -> tuple[list[str], list[list[str]]]:
    c = ov.communication
    if c is None:
        return [], []
    header = ["Step", "Computation (us)", "Communication (us)", "Overlap (us)", "Other (us)"]
    rows = [[str(s.number), _us(c.computation[k]), _us(c.communication[k]), _us(c.overlap[k]), _us(c.other[k])]
            for k, s in enumerate(ov.steps)]
    return header, rows


def memory_lines(ov: "Overview") -> list[str]:
    skipped = ([f"{ov.memory.skipped:,} memory record{'s' if ov.memory.skipped != 1 else ''} skipped: a byte figure "
                "out of range (over 1 PiB, or a negative total)"] if ov.memory.skipped else [])
    if not ov.memory.curves:
        return skipped
    origin = ov.steps[0].start if ov.steps else 0
    out = skipped
    for cv in ov.memory.curves:
        line = (f"{safe_text(cv.device)}: peak {cv.peak_allocated / 2**20:,.2f} MB allocated "
                f"(reserved up to {cv.peak_reserved / 2**20:,.2f} MB) at +{_us(cv.peak_t - origin)} us")
        if cv.peak_op:
            line += f" in {safe_text(cv.peak_op)}"
        out.append(line + f" ({cv.records:,} records)")
    return out


LETTERS = {"Kernel": "K", "Memcpy": "M", "Memset": "S", "Communication": "X", "Runtime": "R", "DataLoader": "D",
           "CPU Exec": "C", "NeuronCore": "N", "Framework": "F", "Other": "O"}


def bar_lines(ov: "Overview", width: int = 50) -> list[str]:
    """The average step as one bar of letters (one per category, `LETTERS`), then its key."""
    total = ov.average_ns.get("Total", 0.0)
    letters = {c: LETTERS.get(c, c[0]) for c in ov.visible}
    cells = stack_cells([ov.average_ns.get(c, 0.0) for c in ov.visible], width)
    bar = "".join(letters[c] * n for c, n in zip(ov.visible, cells))
    key = "  ".join(f"{letters[c]}={c}" for c in ov.visible)
    return [f"[{bar}]" if total else "[]", key]


def header_line(ov: "Overview", title: str | None) -> str:
    what = f"steps {ov.selected}" if ov.selected else f"{len(ov.steps)} step{'s' if len(ov.steps) != 1 else ''}"
    parts = ["Overview", safe_text(title) if title else "", ov.backend or "CPU", what,
             f"average step {_us(ov.average_ns.get('Total', 0.0))} us"]
    return " · ".join(p for p in parts if p)


def render_table(ov: "Overview", title: str | None = None, markdown: bool = False, width: int | None = None) -> str:
    """The overview as text; `width`: the kernel table's names are shortened to fit it (None: full names)."""
    grid = markdown_table if markdown else (lambda header, rows: text_table(header, rows, align="l"))
    h = (lambda s: f"## {s}") if markdown else (lambda s: s)
    out: list[str] = [("# " if markdown else "") + header_line(ov, title), ""]
    header, rows = breakdown_rows(ov)
    if markdown or width is None or len(text_table(header, rows)[0]) <= width:
        out += [h("Step time breakdown"), ""] + grid(header, rows)
    else:  # the unit in the title, then the categories with the least time give way
        header = [c.removesuffix(" (us)") for c in header]
        avg = [ov.average_ns.get(c, 0.0) for c in ov.visible]
        give_way = [2 + j for j in sorted(range(len(avg)), key=lambda j: (avg[j], -j))]
        out += ["Step time breakdown (us)", ""] + fitted_table(header, rows, 0, width, align="l", min_name=9,
                                                                 give_way=give_way)
    if not markdown:
        out += [""] + [part for line in bar_lines(ov) for part in fold_legend(f"  {line}", width)]
    out += ["", h("Device"), ""] + [("- " + line.strip() if markdown else line) for line in device_lines(ov)]
    kh, kr, n = kernel_rows(ov, width=60 if markdown else None)
    if kr:
        what = "NEFF executions" if ov.neuron else "Kernels"
        # on a narrow terminal Tensor Cores, Occupancy, Blocks/SM, Min, Max and Mean give way to the names
        give_way = [j for j in range(len(kh) - 1, 2, -1)]
        table = (fitted_table(kh, kr, 0, width, align="l", min_name=36, give_way=give_way) if not markdown
                 else grid(kh, kr))
        out += ["", h(f"{what} (top {len(kr)} of {n} by total time)" if n > len(kr) else what), ""] + table
    ch, cr = communication_rows(ov)
    if cr:
        out += ["", h("Computation / communication per step"), ""] + grid(ch, cr)
    mem = memory_lines(ov)
    if mem:
        out += ["", h("Memory"), ""] + [("- " if markdown else "") + line for line in mem]
    out += ["", h("Recommendations"), ""]
    if ov.recommendations:
        for r in ov.recommendations:
            out.append(f"- [{r.rule}] {safe_text(r.message)}")
    else:
        out.append("None: no rule fired on these figures.")
    notes = ov.notes()
    if notes:
        out += [""] + [f"Note: {n}" for n in notes]
    if width is not None and not markdown:
        out = [folded for line in out for folded in fold(line, width)]
    return "\n".join(out) + "\n"


def render_csv(ov: "Overview", title: str | None = None) -> str:
    """The step breakdown, one row per step (µs), plus the average row; a `run` column with several runs."""
    head = (["run"] if title else []) + ["step", "total_us", *[f"{c}_us" for c in ov.visible]]
    pre = [title] if title else []
    rows = [pre + [s.number, round(s.duration / 1000.0, 3),
                   *[round(float(ov.costs[k, ov.categories.index(c)]) / 1000.0, 3) for c in ov.visible]]
            for k, s in enumerate(ov.steps)]
    rows.append(pre + ["average", round(ov.average_ns.get("Total", 0.0) / 1000.0, 3),
                       *[round(ov.average_ns.get(c, 0.0) / 1000.0, 3) for c in ov.visible]])
    return csv_text(head, rows)


def render(ov: "Overview", fmt: str, title: str | None = None, width: int | None = None) -> str:
    if fmt == "csv":
        return render_csv(ov, title)
    if fmt == "markdown":
        from trntui.report.format import markdown_safe

        return markdown_safe(render_table(ov, title, markdown=True))
    return render_table(ov, title, width=width)


def json_document(ov: "Overview", title: str | None = None) -> dict[str, Any]:
    doc = ov.to_dict()
    if title:
        doc = {"run": title, **doc}
    return doc
