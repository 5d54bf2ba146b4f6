"""The timeline's navigation and search (a mixin of `Timeline`, trntui/tui/widgets/timeline.py): pan, zoom, lanes,
stepping from event to event, the selection and its instances (`n`/`N`, `L`, `i`), the name search (`/`), the
critical-path marks (`m`) and the call tree (`t`). The screens these open (instance list, search prompt, call
tree) are asked for with the `Timeline.*Requested` messages, which the app handles
(trntui/tui/screens/timeline_requests.py): this widget imports no screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from textual import work

from trntui.analysis.timeline import (
    Intervals,
    TimelineRow,
    display_span,
    event_span,
    next_event,
    search_events,
    selected_intervals,
)
from trntui.model.profile import Tier
from trntui.textsafe import safe_text
if TYPE_CHECKING:
    from trntui.model.profile import Profile


PATH_WALK = "critical path"
"""What the timeline's title calls the marked events of `m`."""


class TimelineNavigation:
    """Navigation, selection and search (see the module docstring)."""

    def action_pan(self, direction: int) -> None:
        step = max(self.cells // 8, 1) * self.ns_per_cell * direction
        self.t0 += step
        self.cursor_t += step
        self.cursor_event = -1
        self._fitted = False
        self._changed()

    def action_range(self) -> None:
        """`x`: mark one end of a time range at the cursor; `x` again, with the cursor moved: zoom to the range."""
        if self.profile is None:
            return
        if self.range_mark is None:
            self.range_mark = self.cursor_t
            self.notify("range start marked: move the cursor, x again zooms to the range", markup=False)
            self._changed()
            return
        a, b = sorted((self.range_mark, self.cursor_t))
        self.range_mark = None
        if b - a < self.ns_per_cell:
            self.notify("range cleared (move the cursor between the two x)", markup=False)
            self._changed()
            return
        self.zoom_to_range(a, b)

    def zoom_to_range(self, a: float, b: float) -> None:
        """Show the range [a, b) (relative ns, like `cursor_t`) across every cell; the cursor in its middle."""
        self.ns_per_cell = max((b - a) / self.cells, 1.0)
        self.t0 = a
        self.cursor_t = (a + b) / 2
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
        """Ask for the instance list (or matches), longest first; the chosen one is zoomed to."""
        self.post_message(self.InstancesRequested(self, self.instances, self.walking or "instances"))

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
        """Ask for a search pattern (`SearchRequested`); the app calls `searched` with it."""
        if self.profile is None:
            return
        self.post_message(self.SearchRequested(self))

    def searched(self, pattern: str | None) -> None:
        """The pattern the search prompt returned (None: cancelled): search, say when nothing matches."""
        if pattern is None:
            return
        n = self.search(pattern)
        if pattern and n == 0:
            self.notify(f"no event name matches /{safe_text(pattern)}/", severity="warning", markup=False)
        elif pattern:
            self.notify(f"{n:,} match{'es' if n != 1 else ''} · n / N: next / previous · i: list them all",
                        markup=False)
        self.focus()

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

    def action_call_tree(self) -> None:
        """The call tree of the step under the cursor (a device or runtime event: of the op that launched it)."""
        event = self.event_under_cursor()
        if event < 0 or self.profile is None:
            self.notify("No event under the cursor: put it on an op (or a kernel) first", severity="warning")
            return
        self.show_call_tree(event)

    def show_call_tree(self, event: int) -> None:
        """Ask for the call tree of the step enclosing `event` (its launching op for device rows); the node
        chosen there comes back to `show_events`."""
        from trntui.analysis.calltree import enclosing_step
        from trntui.analysis.links import launching_op

        profile = self.profile
        if profile.lane_of(event).tier != Tier.DISPATCH:
            op = launching_op(profile, event)
            if op < 0:
                self.notify("This event has no launching op on a host thread: no call tree", severity="warning")
                return
            event = op
        self.post_message(self.CallTreeRequested(self, enclosing_step(profile, event), event))

    def show_events(self, events: list[int]) -> None:
        """Highlight `events` (a call-tree node's calls) and zoom to the first one, focused."""
        if self.profile is None or not events:
            return
        ev = np.asarray(events, np.int64)
        self.select(ev, ev, safe_text(self.profile.name_of(int(ev[0]))))
        self.zoom_to_event(int(ev[np.argmin(self.profile.start[ev])]))
        self.focus()
