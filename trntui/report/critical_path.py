"""Text of the critical path (trntui.analysis.critical_path): the section of `trntui overview` (table, Markdown)
and the per-run rows of `trntui compare`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trntui.report.format import fitted_table, fold_legend, markdown_table, text_table
from trntui.textsafe import safe_text

if TYPE_CHECKING:
    from trntui.analysis.critical_path import CriticalPath, WhatIf

TOP_EVENTS = 10


def _us(ns: float) -> str:
    return f"{ns / 1000.0:,.1f}"


def _clip(s: str, width: int = 60) -> str:
    s = safe_text(s)
    return s if len(s) <= width else s[: width - 1] + "…"


def bar(cp: "CriticalPath", width: int = 50) -> tuple[str, str]:
    """The breakdown as a bar of letters (a = the first bound type with time, …) and its key."""
    total = sum(cp.breakdown_ns.values())
    shown = [b for b in cp.bounds if cp.breakdown_ns.get(b)]
    letters = {b: "abcdefghij"[k] for k, b in enumerate(shown)}
    if not total:
        return "[]", ""
    cells = [round(width * cp.breakdown_ns[b] / total) for b in shown]
    return ("[" + "".join(letters[b] * n for b, n in zip(shown, cells)) + "]",
            "  ".join(f"{letters[b]}={b}" for b in shown))


def headline(cp: "CriticalPath") -> str:
    what = "steps " + ",".join(str(s) for s in cp.steps) if len(cp.steps) > 1 else f"step {cp.step}"
    share = f" ({100.0 * cp.length_ns / cp.span_ns:.1f}% of the step's {_us(cp.span_ns)} us)" if cp.span_ns else ""
    return f"Critical path of {what}: {_us(cp.length_ns)} us{share}, bound by {cp.bound_by or '—'}"


def section_lines(cp: "CriticalPath", markdown: bool = False, what_ifs: "list[WhatIf] | None" = None,
                  top: int = TOP_EVENTS, width: int | None = None) -> list[str]:
    """The section for one path; `width`: the text tables fit it (lane, duration and share give way, names
    shortened as `report.format.short_names` does), None: everything in full."""
    grid = markdown_table if markdown else (lambda header, rows: text_table(header, rows, align="l"))
    out = [headline(cp), ""]
    pct = cp.breakdown_pct()
    rows = [[b, _us(cp.breakdown_ns[b]), f"{pct[b]:.1f}"] for b in cp.bounds if cp.breakdown_ns.get(b)]
    if rows:
        out += grid(["bound type", "on path (us)", "% of path"], rows)
        if not markdown:
            b, key = bar(cp)
            out += ["", f"  {b}", *fold_legend(f"  {key}", width)]
    events = cp.top_events(top)
    if events:
        out += ["", "Events on the path (by time on it)" if not markdown else "**Events on the path (by time on it)**",
                ""]
        head = ["event", "on path (us)", "% of path", "duration (us)", "bound type", "lane"]
        cells = [[_clip(t.name) if width is None else safe_text(t.name), _us(t.ns),
                  f"{100.0 * t.ns / cp.length_ns:.1f}" if cp.length_ns else "0.0", _us(t.duration_ns), t.bound,
                  _clip(t.lane, 40)] for t in events]
        out += grid(head, cells) if markdown or width is None else \
            fitted_table(head, cells, 0, width, align="l", give_way=(5, 3, 2))
    stretches = [s for s in cp.stretches() if s.ns]
    if stretches:
        out += ["", "Longest waits on the path" if not markdown else "**Longest waits on the path**", ""]
        out += grid(["from (us)", "to (us)", "waiting (us)", "as"],
                    [[_us(s.start - cp.start), _us(s.end - cp.start), _us(s.ns),
                      ", ".join(f"{b} {_us(v)}" for b, v in sorted(s.bounds.items(), key=lambda x: -x[1]))]
                     for s in stretches])
    for w in what_ifs or []:
        d = w.to_dict(cp)
        out += ["", f"What if {', '.join(safe_text(s) for s in w.specs)} ({w.matched} event(s)): path "
                    f"{_us(w.length_ns)} us, predicted step {_us(w.predicted_step_ns)} us "
                    f"({'saves' if w.saved_ns >= 0 else 'adds'} {_us(abs(w.saved_ns))} us, "
                    f"{abs(d['saved_pct_of_step']):.1f}% of the step), then bound by "
                    f"{d['bound_after'] or '—'}"]
        out += ["  " + ", ".join(f"{b} {v:.1f}%" for b, v in d["breakdown_pct"].items() if v)]
    for n in cp.notes:
        out.append(f"Note: {safe_text(n)}")
    return out


def overview_section(cps: "list[CriticalPath]", what_ifs: "list[list[WhatIf]]", error: str | None,
                     markdown: bool = False, shown: int = 8, width: int | None = None) -> str:
    """The critical-path section that `trntui overview` appends to its table or Markdown; `width`: the cells
    its text fits (None: full)."""
    out = ["", "## Critical path" if markdown else "Critical path", ""]
    if error:
        out.append(safe_text(error))
    for k, (cp, w) in enumerate(zip(cps[:shown], what_ifs[:shown])):
        if k:
            out.append("")
        out += section_lines(cp, markdown, w, width=None if markdown else width)
    if len(cps) > shown:
        out += ["", f"({len(cps) - shown} more step(s) in --format json)"]
    text = "\n".join(out) + "\n"
    if markdown:
        from trntui.report.format import markdown_safe

        text = markdown_safe(text)
    return text
