"""The timeline pane: one text row per lane (and nesting sub-row), grouped by tier, drawn with the Line API.

Each cell shows how much of its time span is busy (`GLYPHS`); the selected op's instances are highlighted.
The view state is `t0` (ns at the first cell), `ns_per_cell`, the cursor row and the cursor time; every frame
asks `trntui.analysis.timeline` for the visible rows only and caches strips per (row, window).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from trntui.analysis.counters import counters
from trntui.analysis.timeline import (
    ALL,
    FIT,
    LANES,
    Intervals,
    TimelineRow,
    build_rows,
    depths_ready,
    display_span,
    event_at,
    format_ns,
    format_offset,
    lane_groups,
    merged_row,
    plan_rows,
)
from trntui.model.profile import Tier
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.timeline_draw import HEADER_LINES, DisplayRow, TimelineDrawing
from trntui.tui.widgets.timeline_gaps import TimelineGaps
from trntui.tui.widgets.timeline_mouse import TimelineMouse
from trntui.tui.widgets.timeline_navigate import PATH_WALK, TimelineNavigation
from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:
    from trntui.model.profile import Profile
    from trntui.tui.messages import LoadedRun

MAX_SUBROWS = 4
"""Nesting depths drawn per lane; deeper events share the last sub-row."""


_PAN = Binding.Group("Pan", compact=True)
_ZOOM = Binding.Group("Zoom", compact=True)
_STEP = Binding.Group("Event", compact=True)
_INSTANCE = Binding.Group("Instance", compact=True)
_GAP = Binding.Group("Idle gap", compact=True)


TIER_TAGS = {Tier.DISPATCH: "cpu", Tier.DEVICE: "dev", Tier.RUNTIME: "rt", Tier.HARDWARE: "hw"}
"""Short tier names in front of lane labels when the rows are too few for tier headings."""


class Timeline(TimelineDrawing, TimelineNavigation, TimelineGaps, TimelineMouse, Widget, can_focus=True):
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
        Binding("i", "instance_list", "Instance list / every search match", show=False, id="timeline-instances"),
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
        Binding("x", "range", "Mark a range start (again: zoom to the range)", show=False, id="timeline-range"),
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

    class InstancesRequested(Message):
        """`i`: the app should show `events` (the instances or matches) longest first; the one chosen is zoomed
        to (`zoom_to_event`)."""

        def __init__(self, timeline: "Timeline", events: np.ndarray, what: str) -> None:
            self.timeline = timeline
            self.events = events
            self.what = what
            super().__init__()

    class SearchRequested(Message):
        """`/`: the app should ask for a pattern (the last one given first) and call `search` with it."""

        def __init__(self, timeline: "Timeline") -> None:
            self.timeline = timeline
            super().__init__()

    class CallTreeRequested(Message):
        """`t`: the app should show the call tree of `step` with `event` under the cursor; the node chosen there
        comes back to `show_events`."""

        def __init__(self, timeline: "Timeline", step: int, event: int) -> None:
            self.timeline = timeline
            self.step = step
            self.event = event
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile: Profile | None = None
        self.range_mark: float | None = None
        """`x`: the time (relative, like `cursor_t`) one end of a range was marked at; None: no range."""
        self._drag_t: float | None = None
        """A mouse drag on the ruler: the time it started at."""
        self._dragged = False
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

    # -- geometry --------------------------------------------------------------------------------
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

    # -- rows ------------------------------------------------------------------------------------
    def action_toggle_subrows(self) -> None:
        """Cycle the rows: fitted to the height → one row per lane → one row per lane and nesting depth; the
        cursor stays on its lane."""
        if self.profile is None:
            return
        self.row_mode = {FIT: LANES, LANES: ALL, ALL: FIT}[self.row_mode]
        self._build_display()
        self._scroll_to_cursor()
        self._changed()

    class PathMarked(Message):
        """The critical path's events, computed off the UI thread for `m`."""

        def __init__(self, events: np.ndarray, what: str, error: str = "") -> None:
            self.events = events
            self.what = what
            self.error = error
            super().__init__()

    def action_copy_name(self) -> None:
        """Copy the name of the event under the cursor to the terminal's clipboard (OSC 52)."""
        event = self.event_under_cursor()
        if event < 0 or self.profile is None:
            self.notify("No event under the cursor", severity="warning")
            return
        name = self.profile.name_of(event)
        self.app.copy_to_clipboard(name)
        self.notify(f"copied {truncate(safe_text(name), 60)}", markup=False)

    def action_toggle_clock(self) -> None:
        self.absolute_time = not self.absolute_time
        self.refresh()

    def action_choose(self) -> None:
        event = self.event_under_cursor()
        if event < 0:
            self.notify("No event under the cursor", severity="warning")
            return
        self.post_message(self.EventChosen(self, event))

    # -- size and focus --------------------------------------------------------------------------
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
