"""The timeline's drawing (a mixin of `Timeline`, trntui/tui/widgets/timeline.py): the ruler, the cursor's status
line and each row's cells (busy glyphs, the highlighted selection, bar labels, counter sparklines), strips
cached per (row, window); `fit_cells`, `left_truncate` for text laid over glyphs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from trntui.analysis.counters import counters, sparkline
from trntui.analysis.counters import format_value as format_counter
from trntui.analysis.timeline import (
    bar_labels,
    busy_fraction,
    cell_bounds,
    format_absolute,
    format_ns,
    format_offset,
    row_cells,
    ruler_marks,
)
from trntui.model.profile import Tier
from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:
    from trntui.analysis.timeline import TimelineRow

HEADER_LINES = 2
"""Ruler line and cursor-status line above the lane rows."""


@dataclass(frozen=True)
class DisplayRow:
    """A drawn row: a tier heading (`row` is None), one lane (at one depth or all), or several lanes in one."""

    title: str
    row: TimelineRow | None = None
    lanes: tuple[int, ...] = ()
    """The lanes drawn in the row (several: a summary row)."""
    tag: str = ""
    """Tier tag drawn before the title when there are no tier headings (`hw`, `rt`, ...)."""
    counter: int = -1
    """A counter lane (index into `analysis.counters.counters(profile)`): a one-row sparkline, not navigable."""

    @property
    def is_summary(self) -> bool:
        return len(self.lanes) > 1


class TimelineDrawing:
    """Rendering: `render_line` and what it draws (see the module docstring)."""

    @property
    def label_width(self) -> int:
        width = self._width or 80
        key = (width, len(self.display_rows))
        if self._label_width[0] != key:
            longest = max(
                (len(d.title) + (len(d.tag) + 1 if d.tag else 0) + (5 if self._device_row(d) else 0)
                 for d in self.display_rows if d.row),
                default=8,
            )
            self._label_width = (key, max(8, min(longest, 28, width // 4)))
        return self._label_width[1]

    def _styles(self) -> dict[str, Style]:
        """Rich styles of the component classes, combined with the widget style (computed once per theme and
        focus state: `rich_style` walks the DOM and costs more than drawing a row)."""
        key = (self.app.theme, self.has_focus)
        if self._style_cache[0] != key:
            base = self.rich_style
            styles = {"base": base}
            for part in ("label", "tier", "busy", "selected", "cursor", "ruler"):
                styles[part] = base + self.get_component_rich_style(f"timeline--{part}")
            # a name inside a bar: the bar's colour as background, so shades keep their meaning
            styles["busy-label"] = styles["busy"] + Style(reverse=True)
            styles["selected-label"] = styles["selected"] + Style(reverse=True)
            self._style_cache = (key, styles)
        return self._style_cache[1]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache = (None, {})
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        width = self._width
        base = self._styles()["base"]
        if self.profile is None:
            text = "no profile loaded" if y == 0 else ""
            return Strip([Segment(text, base)]).crop_extend(0, width, base)
        if y == 0:
            return self._ruler(width)
        if y == 1:
            return self._status(width)
        k = self.first_row + y - HEADER_LINES
        if k >= len(self.display_rows):
            return Strip.blank(width, base)
        is_cursor = k == self.cursor_row
        key = (
            k,
            self.t0,
            self.ns_per_cell,
            width,
            self._selection_version,
            self.cursor_col if is_cursor or self.display_rows[k].counter >= 0 else None,  # counters: value at cursor
            is_cursor and self.has_focus,
        )
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(k, width, is_cursor)
            self._cache[key] = strip
        return strip

    def _render_row(self, k: int, width: int, is_cursor: bool) -> Strip:
        styles = self._styles()
        base = styles["base"]
        item = self.display_rows[k]
        lw = self.label_width
        if item.counter >= 0:
            return self._counter_row(item, width)
        if item.row is None:
            style = styles["tier"]
            text = f"── {item.title} "
            return Strip([Segment(text + "─" * max(width - len(text), 0), style)]).crop_extend(0, width, base)
        label_style = styles["label"]
        if is_cursor:
            label_style = label_style + Style(reverse=self.has_focus, bold=True)
        room = lw - 1 if is_cursor else lw
        cells = self.cells
        t0 = self._abs(self.t0)
        bounds_key = (t0, self.ns_per_cell, cells)
        if self._bounds[0] != bounds_key:
            self._bounds = (bounds_key, cell_bounds(t0, self.ns_per_cell, cells))
        bounds = self._bounds[1]
        busy_pct = ""
        if self._device_row(item):  # how busy the device was over the window
            pct = 100.0 * busy_fraction(item.row.busy, int(bounds[0]), int(bounds[-1]))
            busy_pct = f" {pct:.0f}%" if pct >= 0.5 or pct == 0 else " <1%"
            room -= len(busy_pct)
        if item.tag:
            label = f"{item.tag} {left_truncate(item.title, room - len(item.tag) - 1)}".ljust(room)
        else:
            label = left_truncate(item.title, room)
            label = label.rjust(room) if item.row.depth else label.ljust(room)
        if is_cursor:
            label = "▸" + label
        label += busy_pct
        segments = [Segment(label, label_style), Segment(" ", base)]
        glyphs, marked = row_cells(item.row, t0, self.ns_per_cell, cells, self._selection_in(item.row), bounds)
        cursor_col = self.cursor_col if is_cursor else -1
        labels = bar_labels(item.row, bounds)
        spans: list[tuple[int, int]] = []
        if labels:
            pieces: list[str] = []
            done = 0
            for first, end, event in labels:  # in start order, so `first` never decreases
                if first < done:
                    continue  # inside a bar whose name is drawn already (one-row-per-lane view)
                text = self._bar_text(event, end - first)
                pieces += (glyphs[done:first], text)
                done = first + len(text)
                spans.append((first, done))
            pieces.append(glyphs[done:])
            glyphs = "".join(pieces)
        if marked is None and not 0 <= cursor_col < cells:
            busy, named = styles["busy"], styles["busy-label"]
            done = 0
            for first, end in spans:
                segments += (Segment(glyphs[done:first], busy), Segment(glyphs[first:end], named))
                done = end
            segments.append(Segment(glyphs[done:], busy))
            return Strip(segments).crop_extend(0, width, base)
        # kinds: bit 0 = highlighted (selected op), bit 1 = a name drawn inside its bar
        kinds = marked.astype(np.int8) if marked is not None else np.zeros(cells, np.int8)
        for first, end in spans:
            kinds[first:end] |= 2
        palette = (styles["busy"], styles["selected"], styles["busy-label"], styles["selected-label"])
        start = 0
        if 0 <= cursor_col < cells:
            cuts = sorted({*(np.nonzero(np.diff(kinds))[0] + 1).tolist(), cursor_col, cursor_col + 1, cells})
        else:
            cuts = (np.nonzero(np.diff(kinds))[0] + 1).tolist() + [cells]
        for cut in cuts:
            if cut <= start:
                continue
            kind = int(kinds[start])
            text = glyphs[start:cut]
            if start == cursor_col:
                if kind & 2:
                    style = palette[kind & 1] + Style(underline=True, bold=True)
                elif text == " ":
                    text = "│"
                    style = styles["cursor"]
                else:
                    style = palette[kind & 1] + Style(reverse=True)
            else:
                style = palette[kind]
            segments.append(Segment(text, style))
            start = cut
        return Strip(segments).crop_extend(0, width, base)

    def _counter_row(self, item: DisplayRow, width: int) -> Strip:
        """A counter lane: its label with the value at the cursor, then one sparkline glyph per cell."""
        styles = self._styles()
        base = styles["base"]
        series = counters(self.profile)[item.counter]
        cells = self.cells
        t0 = self._abs(self.t0)
        bounds_key = (t0, self.ns_per_cell, cells)
        if self._bounds[0] != bounds_key:
            self._bounds = (bounds_key, cell_bounds(t0, self.ns_per_cell, cells))
        value = f" {format_counter(series.at(self._abs(self.cursor_t)), series.unit)}"
        room = max(self.label_width - len(value), 1)
        label = left_truncate(item.title, room).ljust(room) + value
        return Strip([Segment(label[: self.label_width], styles["label"]), Segment(" ", base),
                      Segment(sparkline(series, self._bounds[1]), styles["busy"])]).crop_extend(0, width, base)

    def _device_row(self, item: DisplayRow) -> bool:
        """Whether the row draws hardware or framework-device lanes (whose busy % its label shows)."""
        key = item.lanes
        cached = self._device_rows.get(key)
        if cached is None:
            tiers = {self.profile.lanes[l].tier for l in item.lanes}
            cached = self._device_rows[key] = bool(tiers) and tiers <= {Tier.HARDWARE, Tier.DEVICE} and item.row.depth == 0
        return cached

    def _bar_text(self, event: int, width: int) -> str:
        """The name of `event` fitted to `width` cells (terminal-safe names cached per interned name)."""
        name_id = int(self.profile.name[event])
        name = self._bar_names.get(name_id)
        if name is None:
            name = self._bar_names[name_id] = fit_cells(safe_text(self.profile.names[name_id]), 10**9)
        return name if len(name) <= width else name[: width - 1] + "…"

    def _ruler(self, width: int) -> Strip:
        base = self._styles()["base"]
        style = self._styles()["ruler"]
        lw = self.label_width
        head = f"{format_ns(self.ns_per_cell)}/cell".ljust(lw)[:lw] + " "
        cells = self.cells
        line = [" "] * cells
        cursor = self.cursor_col
        for col, text in ruler_marks(self.t0, self.ns_per_cell, cells):
            mark = "|" + text
            if col < cursor < col + len(mark):
                mark = "|"  # the cursor would land inside the label's text: the tick stays, its text gives way
            if 0 <= col and col + len(mark) <= cells:
                line[col : col + len(mark)] = list(mark)
        if 0 <= cursor < cells:
            line[cursor] = "▼"
        return Strip([Segment(head + "".join(line), style)]).crop_extend(0, width, base)

    def _when(self, absolute_ns: int) -> str:
        """A time for the status line: relative to the origin, or absolute (`t` toggles)."""
        if self.absolute_time:
            return format_absolute(absolute_ns)
        return format_offset(absolute_ns - self.origin)

    def _status(self, width: int) -> Strip:
        base = self._styles()["base"]
        profile = self.profile
        event = self.event_under_cursor() if profile is not None else -1
        lane = ""
        item = self.display_rows[self.cursor_row] if self.display_rows else None
        if item is not None and item.row is not None and profile is not None:
            if event >= 0:
                lane = f" · {safe_text(profile.lane_of(event).label)}"
            elif item.is_summary:
                lane = f" · {len(item.lanes)} lanes in one row (d: all lanes)"
            else:
                lane = f" · {safe_text(profile.lanes[item.lanes[0]].label)}"
        if self.range_mark is not None:
            a, b = sorted((self.range_mark, self.cursor_t))
            text = (f"▸ range {format_offset(a)} … {format_offset(b)} ({format_ns(int(b - a))}) · "
                    "x: zoom to it")
            return Strip([Segment(text, base + Style(bold=True))]).crop_extend(0, width, base)
        gap = self._gap_status() if event < 0 and profile is not None else ""
        if gap:
            return Strip([Segment(gap, base + Style(bold=True))]).crop_extend(0, width, base)
        if event >= 0 and profile is not None:
            dur = int(profile.end[event] - profile.start[event])
            tail = f" · {format_ns(dur)} · start {self._when(int(profile.start[event]))}"
            if len(self.instances):
                hits = np.nonzero(self.instances == event)[0]
                if len(hits):
                    tail += f" · {int(hits[0]) + 1:,}/{len(self.instances):,}"
            text = f"▸ {truncate(safe_text(profile.name_of(event)), max(width - 2 - len(tail), 16))}{tail}"
        else:
            at = self._when(self._abs(self.cursor_t)) if self.absolute_time else format_offset(self.cursor_t)
            text = f"▸ (no event under cursor) · @{at}"
        segments = [Segment(text, base + Style(bold=True)), Segment(lane, self._styles()["label"])]
        return Strip(segments).crop_extend(0, width, base)

    def lane_text(self, k: int) -> str:
        """Plain text of display row `k` (tests, docs)."""
        return self._render_row(k, self._width or 80, k == self.cursor_row).text


def fit_cells(text: str, width: int) -> str:
    """`text` cut to at most `width` cells, ending in `…` when cut; one character per cell (a character that is
    not one cell wide, e.g. CJK, becomes `?`), so it can be laid over a row of glyphs."""
    if not text.isascii():
        text = "".join(ch if cell_len(ch) == 1 else "?" for ch in text)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def left_truncate(text: str, width: int) -> str:
    """Keep the end of a label (`…/framework/TID:1`): the identifying part of Explorer labels is last."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else text[-1:]
