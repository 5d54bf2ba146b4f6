"""The timeline's mouse (a mixin of `Timeline`, trntui/tui/widgets/timeline.py; a bonus: every action has a
key): a click moves the cursor, a double click chains the event there, the wheel zooms around the mouse (shift:
pans), a drag on the ruler zooms to the dragged range."""

from __future__ import annotations

from textual import events

from trntui.analysis.timeline import display_span
from trntui.tui.widgets.timeline_draw import HEADER_LINES


class TimelineMouse:
    """Mouse handlers (Textual's naming convention: `on_mouse_down` ...; no `@on`, which a mixin cannot hold)."""

    def _cell_at(self, event: events.MouseEvent) -> tuple[int, int] | None:
        """(display row or -1 for the ruler/status lines, cell column or -1 on the labels) under the mouse."""
        offset = event.get_content_offset(self)
        if offset is None or self.profile is None:
            return None
        row = self.first_row + offset.y - HEADER_LINES if offset.y >= HEADER_LINES else -1
        col = offset.x - self.label_width - 1
        return row, (col if 0 <= col < self.cells else -1)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A press on the ruler starts a range drag (released elsewhere on the ruler: zoom to that range)."""
        where = self._cell_at(event)
        offset = event.get_content_offset(self)
        if where is None or offset is None or offset.y != 0 or where[1] < 0:
            return
        self._drag_t = self.t0 + where[1] * self.ns_per_cell
        self.capture_mouse()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._drag_t is None:
            return
        start, self._drag_t = self._drag_t, None
        self.release_mouse()
        col = event.get_content_offset_capture(self).x - self.label_width - 1
        col = min(max(col, 0), self.cells - 1)
        end = self.t0 + (col + 1) * self.ns_per_cell
        if abs(end - start) > 1.5 * self.ns_per_cell:  # a drag, not a click
            self._dragged = True
            a, b = sorted((start, end))
            self.zoom_to_range(a, b)

    def on_click(self, event: events.Click) -> None:
        """Click: cursor to that lane and time; double click: the chain of the event there."""
        if self._dragged:  # the end of a drag on the ruler
            self._dragged = False
            return
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
