"""The overview's read-only panels, each a `Static` drawn from the `Overview` data: the per-step stacked bar
chart (Unicode blocks, one colour per category), the device metrics, the recommendations and the memory curve.
Names from the trace are made terminal-safe and never parsed as markup (`rich.text.Text` only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from trntui.analysis.overview.bars import stack_cells
from trntui.textsafe import safe_text
from trntui.units import format_us

if TYPE_CHECKING:
    from trntui.analysis.overview import Overview

COLOURS = {
    "Kernel": "green3",
    "NeuronCore": "green3",
    "Memcpy": "yellow3",
    "Memset": "dark_orange",
    "Communication": "magenta",
    "Runtime": "red3",
    "DataLoader": "cyan",
    "CPU Exec": "dodger_blue2",
    "Framework": "dodger_blue2",
    "Other": "grey50",
}
BLOCK = "█"
SPARK = "▁▂▃▄▅▆▇█"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:.2f}%"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f} B"


def breakdown_text(ov: "Overview", width: int, max_steps: int | None = None) -> Text:
    """Legend, the average bar, then one bar per step; bars are scaled to the longest step so their lengths
    compare, each part coloured by category."""
    out = Text()
    total = ov.average_ns.get("Total", 0.0)
    used = 0
    for c in ov.visible:  # the legend, wrapped by item (an item is never split)
        share = ov.average_ns.get(c, 0.0) / total if total else 0.0
        item = f" {c} {100 * share:.1f}%"
        if used and used + len(item) + 3 > width:
            out.append("\n")
            used = 0
        elif used:
            out.append("  ")
            used += 2
        out.append(BLOCK, style=COLOURS.get(c, "white"))
        out.append(item)
        used += len(item) + 1
    out.append("\n")
    label_w = 18
    bar_w = max(width - label_w - 1, 10)
    longest = max([s.duration for s in ov.steps] + [total, 1])

    def bar(label: str, values: list[float], length: float) -> None:
        out.append(label[:label_w].ljust(label_w) + " ")
        for c, n in zip(ov.visible, stack_cells(values, bar_w, longest if length else None)):
            if n:
                out.append(BLOCK * n, style=COLOURS.get(c, "white"))
        out.append("\n")

    bar(f"avg {format_us(total)}", [ov.average_ns.get(c, 0.0) for c in ov.visible], total)
    shown = ov.steps if max_steps is None else ov.steps[:max_steps]
    for k, s in enumerate(shown):
        bar(f"step {s.number} {format_us(s.duration)}", [float(ov.costs[k, ov.categories.index(c)]) for c in ov.visible], s.duration)
    if len(shown) < len(ov.steps):
        out.append(f"… {len(ov.steps) - len(shown):,} more steps (trntui overview --format csv lists every one)\n",
                   style="dim")
    notes = ov.notes()
    for n in notes:
        out.append(f"{n}\n", style="dim")
    out.rstrip()
    return out


MAX_DEVICE_LINES = 64
"""Devices listed in the metrics panel (a trace may name 20,000; `trntui overview --format json` has them all)."""
MAX_MEMORY_CURVES = 16
"""Memory curves drawn (one per device)."""


def _more(out: Text, total: int, shown: int, what: str) -> None:
    if total > shown:
        out.append(f"… {total - shown:,} more {what} (trntui overview lists every one)\n", style="dim")


def metrics_text(ov: "Overview", width: int = 80) -> Text:
    out = Text()
    d = ov.devices
    if d is None or not d.devices:
        out.append("No device work in this profile (CPU only).\n")
    elif ov.neuron:
        out.append("NeuronCore busy", style="bold")
        out.append(f"  {_pct(d.utilization)}\n")
        for m in d.devices[:MAX_DEVICE_LINES]:
            out.append(f"  {safe_text(m.label)}  {_pct(m.utilization)}  ({m.kernels} executions, {format_us(m.busy_ns)})\n")
        _more(out, len(d.devices), MAX_DEVICE_LINES, "devices")
    else:
        for label, value in (
            ("GPU utilization", _pct(d.utilization)),
            ("Est. SM efficiency", _pct(d.sm_efficiency)),
            ("Est. achieved occupancy", "-" if d.occupancy is None else f"{d.occupancy:.2f}%"),
            ("Kernel time using Tensor Cores", _pct(d.tensor_core)),
        ):
            if width < 40:  # narrow: "Tensor Cores" instead of the long label
                label = label.replace("Kernel time using ", "")
            label_w = min(31, max(width - 9, 10))
            out.append(f"{label[:label_w]:<{label_w}}", style="bold")
            out.append(f"{value:>8}\n")
        if len(d.devices) > 1 or d.devices[0].name:
            for m in d.devices[:MAX_DEVICE_LINES]:
                extra = " · ".join(x for x in (safe_text(m.name), _bytes(m.memory_bytes) if m.memory_bytes else "",
                                               f"cc {m.compute_capability}" if m.compute_capability else "") if x)
                out.append(f"{safe_text(m.label)}: util {_pct(m.utilization)}" + (f" · {extra}" if extra else "") + "\n")
            _more(out, len(d.devices), MAX_DEVICE_LINES, "devices")
    c = ov.communication
    if c is not None and len(ov.steps):
        n = len(ov.steps)
        out.append("Per step (avg): ", style="bold")
        out.append(
            f"computation {format_us(c.computation.sum() / n)} · communication {format_us(c.communication.sum() / n)}"
            f" · overlap {format_us(c.overlap.sum() / n)} · other {format_us(c.other.sum() / n)}\n"
        )
    out.rstrip()
    return out


def recommendations_text(ov: "Overview") -> Text:
    out = Text()
    if not ov.recommendations:
        out.append("No recommendation: no rule fired on these figures.")
        return out
    for r in ov.recommendations:
        out.append("• ", style="bold")
        out.append(f"[{r.rule}] ", style="bold yellow" if r.source == "plugin" else "bold cyan")
        out.append(safe_text(r.message) + "\n")
    out.rstrip()
    return out


def memory_text(ov: "Overview", width: int) -> Text:
    out = Text()
    if not ov.memory.curves:
        out.append("No [memory] records: capture with profile_memory=True to see the memory curve.")
        return out
    origin = ov.steps[0].start if ov.steps else 0
    for cv in ov.memory.curves[:MAX_MEMORY_CURVES]:
        out.append(f"{safe_text(cv.device)}", style="bold")
        out.append(f"  peak {_bytes(cv.peak_allocated)} allocated (reserved up to {_bytes(cv.peak_reserved)})")
        out.append(f" at {format_us(cv.peak_t - origin) if cv.peak_t >= origin else '-' + format_us(origin - cv.peak_t)}")
        if cv.peak_op:
            out.append(" in ")
            out.append(safe_text(cv.peak_op), style="bold")
        out.append("\n")
        out.append(sparkline(cv.allocated, max(width - 2, 10)) + "\n", style="green3")
    _more(out, len(ov.memory.curves), MAX_MEMORY_CURVES, "devices' memory curves")
    out.rstrip()
    return out


def sparkline(values, width: int) -> str:
    """The curve in `width` cells: per cell the highest value of its slice of the samples (a step curve)."""
    import numpy as np

    v = np.asarray(values, np.float64)
    if not len(v):
        return ""
    width = min(width, len(v))
    edges = np.linspace(0, len(v), width + 1).astype(np.int64)
    top = np.array([v[a:max(b, a + 1)].max() for a, b in zip(edges[:-1], edges[1:])])
    hi = float(v.max())
    lo = 0.0
    if hi <= lo:
        return SPARK[0] * width
    levels = np.clip(((top - lo) / (hi - lo) * (len(SPARK) - 1)).round().astype(int), 0, len(SPARK) - 1)
    return "".join(SPARK[k] for k in levels)


MAX_STEP_BARS = 200
"""Step bars the app draws (the first ones; a line says how many more): Textual lays out every line of a Static,
and 100k steps' bars kept the screen from answering a key for minutes (issue 28 class 3)."""


class OverviewPanel(Static):
    """A Static that redraws its text from the overview at its current width."""

    DEFAULT_CSS = "OverviewPanel { height: auto; padding: 0 1; }"

    def __init__(self, kind: str, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.kind = kind
        self.overview: Overview | None = None

    def show(self, ov: "Overview") -> None:
        self.overview = ov
        self._draw()

    def _draw(self) -> None:
        ov = self.overview
        if ov is None:
            return
        width = max((self.content_region.width or self.size.width or 80), 20)
        text = {
            "breakdown": lambda: breakdown_text(ov, width, MAX_STEP_BARS),
            "metrics": lambda: metrics_text(ov, width),
            "recommendations": lambda: recommendations_text(ov),
            "memory": lambda: memory_text(ov, width),
        }[self.kind]()
        self.update(text)

    def on_resize(self) -> None:
        self._draw()
