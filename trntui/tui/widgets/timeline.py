"""The timeline pane: one text row per lane (and nesting sub-row), grouped by tier, drawn with the Line API.

Each cell shows how much of its time span is busy (`GLYPHS`); the selected op's instances are highlighted.
The view state is `t0` (ns at the first cell), `ns_per_cell`, the cursor row and the cursor time; every frame
asks `trntui.analysis.timeline` for the visible rows only and caches strips per (row, window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from trntui.analysis.counters import counters, sparkline
from trntui.analysis.counters import format_value as format_counter
from trntui.analysis.timeline import (
    ALL,
    FIT,
    LANES,
    Intervals,
    TimelineRow,
    bar_labels,
    build_rows,
    busy_fraction,
    cell_bounds,
    display_lanes,
    count_matches,
    depths_ready,
    display_span,
    event_at,
    event_span,
    format_absolute,
    format_ns,
    format_offset,
    idle_gaps,
    lane_groups,
    merged_row,
    next_event,
    plan_rows,
    row_cells,
    ruler_marks,
    search_events,
    selected_intervals,
)
from trntui.model.profile import Tier
from trntui.tui.messages import PaneTitleChanged
from trntui.textsafe import safe_text, truncate

PATH_WALK = "critical path"
"""What the timeline's title calls the marked events of `m`."""

if TYPE_CHECKING:
    from trntui.model.profile import Profile
    from trntui.tui.panes import LoadedRun

MAX_SUBROWS = 4
"""Nesting depths drawn per lane; deeper events share the last sub-row."""

HEADER_LINES = 2
"""Ruler line and cursor-status line above the lane rows."""


_PAN = Binding.Group("Pan", compact=True)
_ZOOM = Binding.Group("Zoom", compact=True)
_STEP = Binding.Group("Event", compact=True)
_INSTANCE = Binding.Group("Instance", compact=True)
_GAP = Binding.Group("Idle gap", compact=True)


TIER_TAGS = {Tier.DISPATCH: "cpu", Tier.DEVICE: "dev", Tier.RUNTIME: "rt", Tier.HARDWARE: "hw"}
"""Short tier names in front of lane labels when the rows are too few for tier headings."""


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


class Timeline(Widget, can_focus=True):
    """Lanes × time, navigated with the keyboard; Enter opens the chain of the event under the cursor."""

    ALLOW_MAXIMIZE = True

    HELP = "Timeline: busy time per cell (░▒▓█); highlighted cells are instances of the selected op."

    BINDINGS = [
        Binding("left,h", "pan(-1)", "Pan left", id="timeline-pan-left", group=_PAN),
        Binding("right,l", "pan(1)", "Pan right", id="timeline-pan-right", group=_PAN),
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in", id="timeline-zoom-in", group=_ZOOM),
        Binding("minus", "zoom(2)", "Zoom out", id="timeline-zoom-out", group=_ZOOM),
        Binding("slash", "search", "Search", id="timeline-search"),
        Binding("f", "zoom_selection", "Fit event", id="timeline-zoom-selection"),
        Binding("0", "fit", "Fit all", show=False, id="timeline-fit"),
        Binding("home,g", "edge(-1)", "Trace start", show=False, id="timeline-start"),
        Binding("end,G", "edge(1)", "Trace end", show=False, id="timeline-end"),
        Binding("left_square_bracket", "step(-1)", "Prev event", show=False, id="timeline-prev-event", group=_STEP),
        Binding("right_square_bracket", "step(1)", "Next event", show=False, id="timeline-next-event", group=_STEP),
        Binding("n", "instance(1)", "Next instance / match", id="timeline-next-instance", group=_INSTANCE),
        Binding("N", "instance(-1)", "Prev instance / match", id="timeline-prev-instance", group=_INSTANCE),
        Binding("L", "longest", "Longest instance (again: next longest)", show=False, id="timeline-longest"),
        Binding("i", "instance_list", "Instance list", show=False, id="timeline-instances"),
        Binding("right_curly_bracket", "gap(1)", "Next idle gap (hardware)", show=False, id="timeline-next-gap", group=_GAP),
        Binding("left_curly_bracket", "gap(-1)", "Prev idle gap", show=False, id="timeline-prev-gap", group=_GAP),
        Binding("greater_than_sign", "largest_gap", "Largest idle gap (again: next largest)", show=False, id="timeline-largest-gap"),
        Binding("down,j", "lane(1)", "Lane down", show=False, id="timeline-lane-down"),
        Binding("up,k", "lane(-1)", "Lane up", show=False, id="timeline-lane-up"),
        Binding("pagedown,ctrl+d", "lane_page(1)", "Lanes page down", show=False, id="timeline-page-down"),
        Binding("pageup,ctrl+u", "lane_page(-1)", "Lanes page up", show=False, id="timeline-page-up"),
        Binding("comma", "nudge(-1)", "Cursor left one cell", show=False, id="timeline-cursor-left"),
        Binding("full_stop", "nudge(1)", "Cursor right one cell", show=False, id="timeline-cursor-right"),
        Binding("enter", "choose", "Chain", id="timeline-chain"),
        Binding("d", "toggle_subrows", "Rows: fit / every lane / every depth", show=False, id="timeline-subrows"),
        Binding("t", "call_tree", "Call tree", id="timeline-calltree"),
        Binding("A", "toggle_clock", "Absolute / relative time", show=False, id="timeline-clock"),
        Binding("y", "copy_name", "Copy the event's name", show=False, id="timeline-copy"),
        Binding("m", "mark_path", "Mark the critical path (again: clear)", id="timeline-critical-path"),
    ]

    COMPONENT_CLASSES = {
        "timeline--label",
        "timeline--tier",
        "timeline--busy",
        "timeline--selected",
        "timeline--cursor",
        "timeline--ruler",
    }

    DEFAULT_CSS = """
    Timeline > .timeline--label { color: $text-muted; }
    Timeline > .timeline--tier { color: $text-accent; text-style: bold; }
    Timeline > .timeline--busy { color: $primary-lighten-1; }
    Timeline > .timeline--selected { color: $text-warning; text-style: bold; }
    Timeline > .timeline--cursor { text-style: reverse; }
    Timeline > .timeline--ruler { color: $text-muted; }
    """

    class EventChosen(Message):
        """Enter on the timeline: show the chain of event `event`."""

        def __init__(self, timeline: "Timeline", event: int) -> None:
            self.timeline = timeline
            self.event = event
            super().__init__()

        @property
        def control(self) -> "Timeline":
            return self.timeline

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile: Profile | None = None
        self.display_rows: list[DisplayRow] = []
        self.origin = 0
        """Absolute ns shown as +0 (start of the fitted span)."""
        self.t0 = 0.0
        """ns after `origin` at the left edge of the first cell (relative: absolute ns overflow float64's
        mantissa)."""
        self.ns_per_cell = 1.0
        self.cursor_t = 0.0
        """ns after `origin` at the cursor (the cursor cell is the cell that holds it)."""
        self.cursor_row = 0
        """Index into `display` (never a tier heading)."""
        self.cursor_event = -1
        """The event the cursor was put on by `[`/`]`/`n`/`N`, while it stays under the cursor."""
        self.first_row = 0
        """First display row drawn (vertical scroll)."""
        self.absolute_time = False
        """The status line shows absolute times (UTC on epoch clocks) instead of offsets from the origin."""
        self.row_mode = FIT
        """`fit` (rows fitted to the height), `lanes` (one row per lane) or `all` (one per lane and depth); `d`."""
        self.pinned: tuple[int, ...] = ()
        """Lanes that keep a row of their own when rows are summarised (the cursor's, jump targets)."""
        self.selection = np.empty(0, np.int64)
        """Highlighted events (the selected op's instances and what they launched)."""
        self.instances = np.empty(0, np.int64)
        """The selected op's own instances, or the search's matches, sorted by start (`n`/`N` walk them)."""
        self.walking = ""
        """What `instances` are, for the title: an op's name or `/pattern/`."""
        self.search_pattern = ""
        self._ranked_walk = False
        """`L` was the last walk (so pressing it again goes to the next longest)."""
        self._ranked_gap = False
        """`>` was the last gap key (so pressing it again goes to the next largest)."""
        self.gap: tuple[tuple[int, ...] | None, int] | None = None
        """The idle gap the cursor was put on: (hardware lanes it is for, None = all; index in time order)."""
        self._selected: dict[int, Intervals | None] = {}
        """Per drawn TimelineRow (by id): the union of its highlighted events, computed when first drawn."""
        self._selection_sorted = np.empty(0, np.int64)
        self._selection_version = 0
        self._summaries: dict[tuple[int, ...], TimelineRow] = {}
        self._plan_key: object = None
        self._bar_names: dict[int, str] = {}
        self._device_rows: dict[tuple[int, ...], bool] = {}
        self._fitted = True
        self._fit_span: tuple[int, int] | None = None
        self._cache: LRUCache[tuple, Strip] = LRUCache(2048)
        self._style_cache: tuple[object, dict[str, Style]] = (None, {})
        self._label_width: tuple[object, int] = (None, 8)
        self._bounds: tuple[object, np.ndarray] = (None, np.empty(0, np.int64))
        self._width = 0
        self._height = 0
        """The widget's size, kept from the last Resize (`Widget.size` costs a DOM walk per call)."""

    # -- model -----------------------------------------------------------------------------------
    def show_run(self, run: "LoadedRun") -> None:
        """The `Pane` interface (trntui/tui/panes.py): show the loaded run, on its view, from its origin."""
        self.set_profile(run.profile, run.view, run.origin)

    def set_profile(self, profile: "Profile", view: tuple[int, int] | None = None, origin: int | None = None) -> None:
        """Show `profile` fitted to its span (or to the absolute `view`, e.g. `--steps`), cursor on the first
        lane row. Times are shown from `origin` (default: the start of the trace; `--steps`: of the step)."""
        self.profile = profile
        self.origin = origin if origin is not None else display_span(profile)[0]
        self.selection = np.empty(0, np.int64)
        self.instances = np.empty(0, np.int64)
        self._selection_sorted = self.selection
        self._selected = {}
        self._selection_version += 1
        self._summaries = {}
        self._bar_names = {}
        self._device_rows = {}
        self.gap = None
        self.pinned = ()
        self._plan_key = None
        self.cursor_row = 0
        self._build_display()
        self.cursor_row = self._first_lane_row()
        self.first_row = 0
        self.cursor_event = -1
        self.fit(view)

    def _build_display(self, target: int | None = None) -> None:
        """Rows for the current mode and height (`plan_rows`); the cursor stays on its lane. The `target` lane
        (a jump's) or else the cursor's gets its own row first, then the lanes of earlier jumps."""
        profile = self.profile
        if profile is None:
            return
        current = self.display_rows[self.cursor_row] if 0 <= self.cursor_row < len(self.display_rows) else None
        cursor_lanes = current.lanes if current is not None else ()
        cursor_depth = current.row.depth if current is not None and current.row is not None else 0
        own = cursor_lanes if len(cursor_lanes) == 1 else ()
        first = (target,) if target is not None else own
        pinned = tuple(dict.fromkeys((*first, *self.pinned, *own)))
        ready = depths_ready(profile)
        key = (self.row_mode, self.visible_rows, pinned, ready)
        if key == self._plan_key and self.display_rows:
            return
        self._plan_key = key
        groups = lane_groups(profile, MAX_SUBROWS)
        series = counters(profile)
        room = self.visible_rows - (len(series) + 1 if series else 0)  # counter lanes keep their rows on screen
        plan = plan_rows(groups, max(room, 1), self.row_mode, pinned)
        by_depth = {(r.lane, r.depth): r for r in build_rows(profile, MAX_SUBROWS)} if ready else {}
        merged = {r.lane: r for r in build_rows(profile, 1)}
        headings = any(p.is_heading for p in plan)
        rows: list[DisplayRow] = []
        for p in plan:
            tier = Tier(p.tier)
            if p.is_heading:
                rows.append(DisplayRow(tier.title))
                continue
            tag = "" if headings else TIER_TAGS.get(tier, "")
            if len(p.lanes) > 1:
                row = self._summaries.get(p.lanes)
                if row is None:
                    row = self._summaries[p.lanes] = merged_row([merged[l] for l in p.lanes])
                rows.append(DisplayRow(f"+{len(p.lanes)} lanes", row, p.lanes, tag))
                continue
            lane = profile.lanes[p.lanes[0]]
            if p.depth is None or (lane.id, p.depth) not in by_depth:
                rows.append(DisplayRow(safe_text(lane.label), merged[lane.id], p.lanes, tag))
            else:
                title = safe_text(lane.label) if p.depth == 0 else f"+{p.depth}"
                rows.append(DisplayRow(title, by_depth[(lane.id, p.depth)], p.lanes, tag))
        if series:
            rows.append(DisplayRow("counters"))
            rows += [DisplayRow(safe_text(c.label or c.name), counter=i) for i, c in enumerate(series)]
        self.display_rows = rows
        self._cache.clear()
        if own:
            self.cursor_row = self._row_of_lane(own[0], cursor_depth)
        elif cursor_lanes:
            self.cursor_row = self._row_of_lane(cursor_lanes[0], cursor_depth)
        self.cursor_row = min(self.cursor_row, max(len(rows) - 1, 0))
        if rows and rows[self.cursor_row].row is None:
            self.cursor_row = self._first_lane_row()
        self.first_row = min(self.first_row, max(len(rows) - self.visible_rows, 0))

    def depths_arrived(self) -> None:
        """The nesting was computed in the background: draw the sub-rows that fit now."""
        self._plan_key = None
        self._build_display()
        self._scroll_to_cursor()
        self._changed()

    def _row_of_lane(self, lane: int, depth: int = 0) -> int:
        """The display row drawing `lane` (at `depth` when it has depth rows), or the first lane row."""
        first = -1
        for k, d in enumerate(self.display_rows):
            if d.row is not None and lane in d.lanes:
                if d.row.depth == depth:
                    return k
                if first < 0:
                    first = k
        return first if first >= 0 else self._first_lane_row()

    def select(self, highlight: np.ndarray, instances: np.ndarray, what: str = "") -> None:
        """Highlight `highlight`; `instances` (an op's own events, or search matches) are what `n`/`N` step
        through; `what` names them in the title."""
        self.walking = what
        self.selection = np.asarray(highlight, np.int64)
        if self.profile is not None and len(instances):
            inst = np.asarray(instances, np.int64)
            self.instances = inst[np.argsort(self.profile.start[inst], kind="stable")]
        else:
            self.instances = np.empty(0, np.int64)
        self._selection_sorted = np.unique(self.selection)
        self._selected = {}
        self._selection_version += 1
        self._changed()

    def _selection_in(self, row: TimelineRow) -> Intervals | None:
        """The union of `row`'s highlighted events (None when it has none), computed once per selection."""
        if len(self._selection_sorted) == 0:
            return None
        key = id(row)
        if key not in self._selected:
            self._selected[key] = selected_intervals([row], self._selection_sorted)[0]
        return self._selected[key]

    # -- geometry --------------------------------------------------------------------------------
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

    @property
    def cells(self) -> int:
        return max((self._width or 80) - self.label_width - 1, 1)

    @property
    def visible_rows(self) -> int:
        return max((self._height or 10) - HEADER_LINES, 1)

    @property
    def cursor_col(self) -> int:
        return int(math.floor((self.cursor_t - self.t0) / self.ns_per_cell))

    @property
    def window(self) -> tuple[float, float]:
        """(first, last) ns after `origin` shown."""
        return (self.t0, self.t0 + self.cells * self.ns_per_cell)

    def _abs(self, offset: float) -> int:
        """Absolute ns of an offset after `origin`."""
        return self.origin + int(math.floor(offset))

    def _cell_span(self, col: int) -> tuple[int, int]:
        """Absolute [lo, hi) ns of cell `col`."""
        lo = self._abs(self.t0) + int(math.floor(col * self.ns_per_cell))
        hi = self._abs(self.t0) + int(math.floor((col + 1) * self.ns_per_cell))
        return lo, max(hi, lo + 1)

    def _first_lane_row(self) -> int:
        """The first row that is not a trace-window marker lane (else the first row)."""
        first = -1
        for k, d in enumerate(self.display_rows):
            if d.row is not None:
                if first < 0:
                    first = k
                if self.profile is not None and any(self.profile.lanes[l].subsystem != "markers" for l in d.lanes):
                    return k
        return max(first, 0)

    def fit(self, span: tuple[int, int] | None = None) -> None:
        """Zoom so the whole span (or the absolute `span`, e.g. `--steps`) fits; cursor in the middle.
        A resize fits the same span again until the user pans or zooms."""
        if self.profile is None:
            return
        self._fit_span = span
        a, b = span if span is not None else display_span(self.profile)
        self.ns_per_cell = max((b - a) / self.cells, 1.0)
        self.t0 = float(a - self.origin)
        self.cursor_t = self.t0 + (self.cells // 2 + 0.5) * self.ns_per_cell
        self.cursor_event = -1
        self._fitted = True
        self._changed()

    def set_window(self, t0: int, ns_per_cell: float) -> None:
        """Show cells of `ns_per_cell` from absolute time `t0` (tests, bench); the cursor goes to the middle."""
        self.ns_per_cell = max(float(ns_per_cell), 1.0)
        self.t0 = float(int(t0) - self.origin)
        self.cursor_t = self.t0 + (self.cells // 2 + 0.5) * self.ns_per_cell
        self._fitted = False
        self._changed()

    def _changed(self) -> None:
        self.post_message(PaneTitleChanged(self))
        self.refresh()

    @property
    def title(self) -> str:
        if self.profile is None:
            return "Timeline"
        a, b = self.window
        unit = max(abs(a), abs(b))
        span = f"{format_offset(a, self.ns_per_cell, unit)} … {format_offset(b, self.ns_per_cell, unit)}"
        text = f"Timeline · {span} · {format_ns(self.ns_per_cell)}/cell"
        if self.walking:
            n = len(self.instances)
            kind = "match" if self.walking.startswith("/") else ("event" if self.walking.startswith(PATH_WALK) else "instance")
            text += f" · {self.walking}: {n:,} {kind}{'es' if kind == 'match' and n != 1 else ('s' if n != 1 else '')}"
        if self.row_mode == FIT and any(d.is_summary for d in self.display_rows):
            drawn = sum(1 for d in self.display_rows if d.row is not None and not d.is_summary)
            lanes = {lane for d in self.display_rows for lane in d.lanes}
            text += f" · {drawn}/{len(lanes)} lanes (d: all)"
        return text

    # -- cursor helpers --------------------------------------------------------------------------
    def _center_on(self, t: float) -> None:
        """Move the cursor to `t` ns after `origin`, panning only when it leaves the window."""
        self.cursor_t = float(t)
        col = self.cursor_col
        if col < 0 or col >= self.cells:
            self.t0 = self.cursor_t - (self.cells // 2 + 0.5) * self.ns_per_cell
            self._fitted = False

    def _scroll_to_cursor(self) -> None:
        if self.cursor_row < self.first_row:
            self.first_row = self.cursor_row
        elif self.cursor_row >= self.first_row + self.visible_rows:
            self.first_row = self.cursor_row - self.visible_rows + 1
        if self.first_row > 0 and self.display_rows[self.first_row - 1].row is None and self.cursor_row >= self.first_row:
            # keep the tier heading of the cursor's group in view when there is room
            if self.cursor_row - (self.first_row - 1) < self.visible_rows:
                self.first_row -= 1

    def _row_for_event(self, event: int) -> int:
        """The display row that draws `event` (its lane's own row before a summary row), or -1."""
        if self.profile is None:
            return -1
        lane = int(self.profile.lane[event])
        start = self.profile.start[event]
        found = -1
        for k, d in enumerate(self.display_rows):
            if d.row is not None and lane in d.lanes:
                pos = np.searchsorted(d.row.starts, start, side="left")
                end = np.searchsorted(d.row.starts, start, side="right")
                if np.any(d.row.events[pos:end] == event):
                    if not d.is_summary:
                        return k
                    found = k
        return found

    def go_to_event(self, event: int) -> None:
        """Put the cursor on `event` (its lane sub-row and start), panning if needed; a lane drawn in a summary
        row gets a row of its own, and the rows scroll so the cursor's is in view."""
        if self.profile is None:
            return
        row = self._row_for_event(event)
        if row < 0 or self.display_rows[row].is_summary:
            lane = int(self.profile.lane[event])
            self.pinned = tuple(dict.fromkeys((lane, *self.pinned)))[:4]
            self._build_display(lane)
            row = self._row_for_event(event)
            if row < 0:
                return
        self.cursor_row = row
        self.cursor_event = event
        start = float(int(self.profile.start[event]) - self.origin)
        end = float(int(self.profile.end[event]) - self.origin)
        self._center_on(start + min(end - start, self.ns_per_cell) / 2)
        self._scroll_to_cursor()
        self._changed()

    def event_under_cursor(self) -> int:
        """The event at the cursor cell on the cursor row, or -1."""
        if not self.display_rows or self.profile is None:
            return -1
        item = self.display_rows[self.cursor_row]
        row = item.row
        if row is None:
            return -1
        lo, hi = self._cell_span(self.cursor_col)
        if self.cursor_event >= 0 and int(self.profile.lane[self.cursor_event]) in item.lanes:
            s, e = int(self.profile.start[self.cursor_event]), int(self.profile.end[self.cursor_event])
            if s < hi and max(e, s + 1) > lo:
                return self.cursor_event
        return event_at(row, lo, hi)

    # -- actions ---------------------------------------------------------------------------------
    def action_pan(self, direction: int) -> None:
        step = max(self.cells // 8, 1) * self.ns_per_cell * direction
        self.t0 += step
        self.cursor_t += step
        self.cursor_event = -1
        self._fitted = False
        self._changed()

    def action_nudge(self, direction: int) -> None:
        self.cursor_event = -1
        self._center_on(self.cursor_t + direction * self.ns_per_cell)
        self._changed()

    def action_zoom(self, factor: float) -> None:
        col = self.cursor_t - self.t0
        new = max(self.ns_per_cell * factor, 1.0)
        if self.profile is not None:
            a, b = display_span(self.profile)
            new = min(new, max((b - a) / self.cells * 4, 1.0))
        self.t0 = self.cursor_t - col * (new / self.ns_per_cell)
        self.ns_per_cell = new
        self._fitted = False
        self._changed()

    def action_fit(self) -> None:
        self.fit()

    def action_edge(self, side: int) -> None:
        """Jump the cursor to the start (side < 0) or end of the trace, keeping the zoom."""
        if self.profile is None:
            return
        a, b = display_span(self.profile)
        self.cursor_event = -1
        self._center_on(float((a if side < 0 else b - 1) - self.origin))
        self._changed()

    def action_lane(self, delta: int) -> None:
        k = self.cursor_row + delta
        while 0 <= k < len(self.display_rows) and self.display_rows[k].row is None:
            k += delta
        if 0 <= k < len(self.display_rows):
            self.cursor_row = k
            self.cursor_event = -1
            self._scroll_to_cursor()
            self.refresh()

    def action_lane_page(self, direction: int) -> None:
        for _ in range(max(self.visible_rows - 1, 1)):
            before = self.cursor_row
            self.action_lane(direction)
            if self.cursor_row == before:
                break

    def action_step(self, direction: int) -> None:
        if not self.display_rows or self.profile is None:
            return
        row = self.display_rows[self.cursor_row].row
        if row is None:
            return
        current = self.event_under_cursor()
        t = int(self.profile.start[current]) if current >= 0 else self._abs(self.cursor_t)
        if current < 0 and direction < 0:
            t += 1
        event = next_event(row, t, current, forward=direction > 0)
        if event >= 0:
            self.go_to_event(event)

    def action_instance(self, direction: int) -> None:
        self._ranked_walk = False
        if len(self.instances) == 0 or self.profile is None:
            self.notify("Nothing to walk: Enter on an op in the ops table, or / to search", severity="warning")
            return
        starts = self.profile.start[self.instances]
        current = self.event_under_cursor()
        pos = -1
        if current >= 0:
            hits = np.nonzero(self.instances == current)[0]
            pos = int(hits[0]) if len(hits) else -1
        if pos >= 0:
            k = pos + direction
        elif direction > 0:
            k = int(np.searchsorted(starts, self._abs(self.cursor_t), side="right"))
        else:
            k = int(np.searchsorted(starts, self._abs(self.cursor_t), side="left")) - 1
        k %= len(self.instances)
        self.go_to_event(int(self.instances[k]))

    def action_longest(self) -> None:
        """Go to the longest instance (or match); pressed again on it, to the next longest, and so on."""
        if len(self.instances) == 0 or self.profile is None:
            self.notify("Nothing to rank: Enter on an op in the ops table, or / to search", severity="warning")
            return
        inst = self.instances
        dur = self.profile.end[inst] - self.profile.start[inst]
        ranked = inst[np.lexsort((self.profile.start[inst], -dur))]
        current = self.event_under_cursor()
        hits = np.nonzero(ranked == current)[0]
        k = int(hits[0]) + 1 if len(hits) and self._ranked_walk else 0
        self.zoom_to_event(int(ranked[k % len(ranked)]))
        self._ranked_walk = True

    def action_instance_list(self) -> None:
        if len(self.instances) == 0 or self.profile is None:
            self.notify("No instances: Enter on an op in the ops table, or / to search", severity="warning")
            return
        self.show_instance_list()

    def show_instance_list(self) -> None:
        """The instances (or matches), longest first; the chosen one is zoomed to."""
        from trntui.tui.screens.instances import InstancesScreen

        def chosen(event: int | None) -> None:
            if event is not None:
                self.zoom_to_event(event)

        what = self.walking or "instances"
        self.app.push_screen(InstancesScreen(self.profile, self.instances, self.origin, what), chosen)

    # -- idle gaps ----------------------------------------------------------------------------------
    def _hardware(self, lanes: tuple[int, ...]) -> bool:
        return bool(lanes) and all(self.profile.lanes[l].tier == Tier.HARDWARE for l in lanes)

    def _gap_scope(self) -> tuple[int, ...] | None:
        """The hardware lanes gap keys look at: those of the gap the cursor is on, else the cursor row's when it
        is a hardware row, else all of them."""
        if self.gap is not None and self._current_gap(self.gap[0]) >= 0:
            return self.gap[0]
        item = self.display_rows[self.cursor_row] if self.display_rows else None
        if item is not None and self._hardware(item.lanes):
            return tuple(sorted(item.lanes))
        return None

    def _current_gap(self, scope: tuple[int, ...] | None) -> int:
        """Index of the gap (of `scope`) the cursor is on, or -1."""
        if self.gap is None or self.gap[0] != scope:
            return -1
        gaps = idle_gaps(self.profile, scope)
        k = self.gap[1]
        t = self._abs(self.cursor_t)
        return k if k < len(gaps) and gaps.starts[k] <= t < gaps.ends[k] else -1

    def _gaps_or_warn(self, scope: tuple[int, ...] | None):
        if self.profile is None:
            return None
        gaps = idle_gaps(self.profile, scope)
        if len(gaps) == 0:
            has_hw = any(l.tier == Tier.HARDWARE for l in self.profile.lanes)
            self.notify("no idle gap between hardware executions" if has_hw else "no hardware lanes in this profile",
                        severity="warning")
            return None
        return gaps

    def action_gap(self, direction: int) -> None:
        """Go to the next (previous) idle gap of the cursor's hardware lane(s), or of all hardware lanes."""
        scope = self._gap_scope()
        gaps = self._gaps_or_warn(scope)
        if gaps is None:
            return
        k = self._current_gap(scope)
        t = self._abs(self.cursor_t)
        if k >= 0:
            k += direction
        elif direction > 0:
            k = int(np.searchsorted(gaps.starts, t, side="right"))
        else:
            k = int(np.searchsorted(gaps.ends, t, side="left")) - 1
        if not 0 <= k < len(gaps):
            self.notify("no more idle gaps that way", severity="information")
            return
        self.show_gap(scope, k)
        self._ranked_gap = False

    def action_largest_gap(self) -> None:
        """Go to the largest idle gap; pressed again on it, to the next largest, and so on."""
        scope = self._gap_scope()
        gaps = self._gaps_or_warn(scope)
        if gaps is None:
            return
        ranked = gaps.ranked()
        k = self._current_gap(scope) if self._ranked_gap else -1
        r = int(np.nonzero(ranked == k)[0][0]) + 1 if k >= 0 else 0
        self.show_gap(scope, int(ranked[r % len(ranked)]))
        self._ranked_gap = True

    def show_gap(self, scope: tuple[int, ...] | None, k: int) -> None:
        """Zoom to gap `k` of `scope` with the executions on both sides in view, cursor in the gap."""
        gaps = idle_gaps(self.profile, scope)
        a, b = int(gaps.starts[k]), int(gaps.ends[k])
        if scope is None:  # all hardware lanes: the cursor goes to the lane that runs next
            lane = int(self.profile.lane[gaps.after[k]])
            row = self._row_of_lane(lane)
            if not self._hardware(self.display_rows[row].lanes if self.display_rows else ()):
                self.pinned = tuple(dict.fromkeys((lane, *self.pinned)))[:4]
                self._build_display(lane)
                row = self._row_of_lane(lane)
            self.cursor_row = row
        self.zoom_to_span(a, b)
        self.gap = (scope, k)
        self.cursor_event = -1
        self.cursor_t = (a + b) / 2 - self.origin
        self._scroll_to_cursor()
        self._changed()

    def _gap_status(self) -> str:
        """The status line for the gap under the cursor, or ""."""
        scope = self.gap[0] if self.gap is not None else None
        k = self._current_gap(scope) if self.gap is not None else -1
        if k < 0:
            return ""
        gaps = idle_gaps(self.profile, scope)
        rank = int(np.nonzero(gaps.ranked() == k)[0][0]) + 1
        p = self.profile
        where = "all hardware lanes" if scope is None else (
            safe_text(p.lanes[scope[0]].label) if len(scope) == 1 else f"{len(scope)} hardware lanes")
        return (
            f"▸ idle {format_ns(int(gaps.ends[k] - gaps.starts[k]))} · gap {k + 1:,}/{len(gaps):,}"
            f" (#{rank:,} largest) · after {safe_text(p.name_of(int(gaps.before[k])))}"
            f" · before {safe_text(p.name_of(int(gaps.after[k])))} · {where}"
        )

    def action_toggle_subrows(self) -> None:
        """Cycle the rows: fitted to the height → one row per lane → one row per lane and nesting depth; the
        cursor stays on its lane."""
        if self.profile is None:
            return
        self.row_mode = {FIT: LANES, LANES: ALL, ALL: FIT}[self.row_mode]
        self._build_display()
        self._scroll_to_cursor()
        self._changed()

    def zoom_to_span(self, a: int, b: int) -> None:
        """Show the absolute span [a, b) over about 70% of the cells, centred (context on both sides)."""
        length = max(b - a, 1)
        self.ns_per_cell = max(length / max(self.cells * 0.7, 1.0), 1.0)
        self.t0 = (a + b) / 2 - self.origin - self.cells * self.ns_per_cell / 2
        self._fitted = False
        self._changed()

    def zoom_to_event(self, event: int) -> None:
        """Fit `event` and what it launched (runtime calls, kernels) with context; cursor on it."""
        if self.profile is None:
            return
        from trntui.analysis.links import build_links

        links = build_links(self.profile)
        launched = np.concatenate([links.launched_by(event, "op"), links.launched_by(event, "runtime")])
        self.zoom_to_span(*event_span(self.profile, event, launched))
        self.go_to_event(event)

    def action_zoom_selection(self) -> None:
        event = self.event_under_cursor()
        if event < 0:
            self.notify("No event under the cursor to zoom to", severity="warning")
            return
        self.zoom_to_event(event)

    def search(self, pattern: str) -> int:
        """Highlight the events whose name matches the regex `pattern` (case-insensitive) and put the cursor on
        the first one at or after it; n/N walk them. Returns the number of matches (raises `re.error`)."""
        if self.profile is None:
            return 0
        matches = search_events(self.profile, pattern) if pattern else np.empty(0, np.int64)
        self.search_pattern = pattern
        self.select(matches, matches, f"/{safe_text(pattern)}/" if pattern else "")
        if len(matches):
            starts = self.profile.start[matches]
            k = int(np.searchsorted(starts, self._abs(self.cursor_t), side="left"))
            self.go_to_event(int(matches[k % len(matches)]))
        return len(matches)

    def action_search(self) -> None:
        if self.profile is None:
            return
        from trntui.tui.screens.search import SearchPrompt

        profile = self.profile

        def done(pattern: str | None) -> None:
            if pattern is None:
                return
            n = self.search(pattern)
            if pattern and n == 0:
                self.notify(f"no event name matches /{safe_text(pattern)}/", severity="warning", markup=False)
            self.focus()

        self.app.push_screen(SearchPrompt(self.search_pattern, lambda p: count_matches(profile, p)), done)

    class PathMarked(Message):
        """The critical path's events, computed off the UI thread for `m`."""

        def __init__(self, events: np.ndarray, what: str, error: str = "") -> None:
            self.events = events
            self.what = what
            self.error = error
            super().__init__()

    def action_mark_path(self) -> None:
        """`m`: highlight every event on the critical path of the longest step (`n`/`N` walk them in time
        order); again: clear the marks."""
        if self.profile is None:
            return
        if self.walking.startswith(PATH_WALK):
            self.select(np.empty(0, np.int64), np.empty(0, np.int64))
            self.notify("critical path marks cleared", markup=False)
            return
        self._compute_path(self.profile)

    @work(thread=True, exclusive=True, group="timeline-critical-path", exit_on_error=False)
    def _compute_path(self, profile: "Profile") -> None:
        from trntui.analysis.critical_path import step_path
        from trntui.errors import TrntuiError

        try:
            cp = step_path(profile)
        except TrntuiError as exc:
            self.post_message(self.PathMarked(np.empty(0, np.int64), "", str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - a notice, never a traceback
            self.post_message(self.PathMarked(np.empty(0, np.int64), "", f"unexpected {type(exc).__name__}: {exc}"))
            return
        what = f"{PATH_WALK} of step {cp.step}" if len(cp.steps) == 1 else PATH_WALK
        self.post_message(self.PathMarked(cp.on_path, what))

    def on_timeline_path_marked(self, message: "Timeline.PathMarked") -> None:
        message.stop()
        if message.error:
            self.notify(f"no critical path: {message.error}", severity="warning", markup=False)
            return
        if not len(message.events):
            self.notify("the critical path is empty", severity="warning", markup=False)
            return
        self.select(message.events, message.events, message.what)
        self.notify(f"{message.what}: {len(message.events):,} events marked (n/N walk them, m clears)", markup=False)

    def action_copy_name(self) -> None:
        """Copy the name of the event under the cursor to the terminal's clipboard (OSC 52)."""
        event = self.event_under_cursor()
        if event < 0 or self.profile is None:
            self.notify("No event under the cursor", severity="warning")
            return
        name = self.profile.name_of(event)
        self.app.copy_to_clipboard(name)
        self.notify(f"copied {truncate(safe_text(name), 60)}", markup=False)

    # -- mouse (a bonus: every action has a key) -----------------------------------------------------
    def _cell_at(self, event: events.MouseEvent) -> tuple[int, int] | None:
        """(display row or -1 for the ruler/status lines, cell column or -1 on the labels) under the mouse."""
        offset = event.get_content_offset(self)
        if offset is None or self.profile is None:
            return None
        row = self.first_row + offset.y - HEADER_LINES if offset.y >= HEADER_LINES else -1
        col = offset.x - self.label_width - 1
        return row, (col if 0 <= col < self.cells else -1)

    def on_click(self, event: events.Click) -> None:
        """Click: cursor to that lane and time; double click: the chain of the event there."""
        where = self._cell_at(event)
        if where is None:
            return
        row, col = where
        if 0 <= row < len(self.display_rows) and self.display_rows[row].row is not None:
            self.cursor_row = row
        if col >= 0:
            self.cursor_t = self.t0 + (col + 0.5) * self.ns_per_cell
        self.cursor_event = -1
        self.focus()
        self._changed()
        if event.chain >= 2:
            self.action_choose()

    def _wheel(self, event: events.MouseEvent, zoom: float = 1.0, pan: int = 0) -> None:
        event.stop()
        event.prevent_default()
        if self.profile is None:
            return
        if pan:
            self.t0 += max(self.cells // 16, 1) * self.ns_per_cell * pan
            self._fitted = False
            self._changed()
            return
        where = self._cell_at(event)
        col = where[1] if where is not None and where[1] >= 0 else self.cells // 2
        anchor = self.t0 + (col + 0.5) * self.ns_per_cell  # the time under the mouse stays put
        new = max(self.ns_per_cell * zoom, 1.0)
        a, b = display_span(self.profile)
        new = min(new, max((b - a) / self.cells * 4, 1.0))
        self.t0 = anchor - (col + 0.5) * new
        self.ns_per_cell = new
        self._fitted = False
        self._changed()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        """Wheel up: zoom in around the mouse (shift: pan left)."""
        self._wheel(event, pan=-1) if event.shift else self._wheel(event, zoom=0.8)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        """Wheel down: zoom out around the mouse (shift: pan right)."""
        self._wheel(event, pan=1) if event.shift else self._wheel(event, zoom=1.25)

    def on_mouse_scroll_left(self, event: events.MouseScrollLeft) -> None:
        self._wheel(event, pan=-1)

    def on_mouse_scroll_right(self, event: events.MouseScrollRight) -> None:
        self._wheel(event, pan=1)

    def action_call_tree(self) -> None:
        """The call tree of the step under the cursor (a device or runtime event: of the op that launched it)."""
        event = self.event_under_cursor()
        if event < 0 or self.profile is None:
            self.notify("No event under the cursor: put it on an op (or a kernel) first", severity="warning")
            return
        self.show_call_tree(event)

    def show_call_tree(self, event: int) -> None:
        """Open the call-tree screen on the step enclosing `event` (its launching op for device rows); the
        node chosen there is highlighted and zoomed to here."""
        from trntui.analysis.calltree import enclosing_step
        from trntui.analysis.links import launching_op
        from trntui.tui.screens.calltree import CallTreeScreen

        profile = self.profile
        if profile.lane_of(event).tier != Tier.DISPATCH:
            op = launching_op(profile, event)
            if op < 0:
                self.notify("This event has no launching op on a host thread: no call tree", severity="warning")
                return
            event = op

        def chosen(events: list[int] | None) -> None:
            if events:
                self.show_events(events)

        self.app.push_screen(CallTreeScreen(profile, enclosing_step(profile, event), event), chosen)

    def show_events(self, events: list[int]) -> None:
        """Highlight `events` (a call-tree node's calls) and zoom to the first one, focused."""
        if self.profile is None or not events:
            return
        ev = np.asarray(events, np.int64)
        self.select(ev, ev, safe_text(self.profile.name_of(int(ev[0]))))
        self.zoom_to_event(int(ev[np.argmin(self.profile.start[ev])]))
        self.focus()

    def action_toggle_clock(self) -> None:
        self.absolute_time = not self.absolute_time
        self.refresh()

    def action_choose(self) -> None:
        event = self.event_under_cursor()
        if event < 0:
            self.notify("No event under the cursor", severity="warning")
            return
        self.post_message(self.EventChosen(self, event))

    # -- rendering -------------------------------------------------------------------------------
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

    def on_resize(self, event: events.Resize) -> None:
        # the content area: `event.size` is the whole region, border included (one row too many)
        self._width, self._height = self.size.width, self.size.height
        self._cache.clear()
        self._build_display()
        if self._fitted and self.profile is not None:
            cursor_t, cursor_event = self.cursor_t, self.cursor_event
            self.fit(self._fit_span)
            self.cursor_t, self.cursor_event = cursor_t, cursor_event  # the cursor stays where it was
        self._scroll_to_cursor()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
