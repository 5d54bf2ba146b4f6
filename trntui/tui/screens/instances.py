"""The instance list (`i`): every instance of the selected op, longest first, or every match of the timeline's
search, in time order with their names; `o` switches the order; Enter shows one on the timeline. A Line-API
list, so an op with 100k instances opens at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Static

from trntui.analysis.timeline import format_ns, format_offset
from trntui.textsafe import safe_text
from trntui.tui.widgets.rows import RowList, cursor_bindings

if TYPE_CHECKING:
    from trntui.model.profile import Profile


class InstanceList(RowList):
    """Rows `rank · duration · start · lane` (and the event's name, for search matches) of `events`, sorted by
    duration (longest first) or by start time."""

    BINDINGS = [
        *cursor_bindings(None, first="First", last="Last"),
    ]

    COMPONENT_CLASSES = {"instance-list--header", "instance-list--cursor"}

    DEFAULT_CSS = """
    InstanceList { scrollbar-size-vertical: 1; overflow-x: hidden; }
    InstanceList > .instance-list--header { text-style: bold; color: $text-accent; }
    InstanceList > .instance-list--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    """

    def __init__(self, profile: "Profile", events: np.ndarray, origin: int, *, id: str | None = None,
                 by_time: bool = False, names: bool = False) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.origin = origin
        self.names = names
        """Show each event's name (search matches have many)."""
        self.events = np.asarray(events, np.int64)
        self.by_time = not by_time
        self.order(by_time)
        self.cursor = 0

    def order(self, by_time: bool) -> None:
        """Sort by start time (ties: longest first) or by duration, longest first (ties: earliest first); the
        cursor stays on its event."""
        if by_time == self.by_time:
            return
        p, ev = self.profile, self.events
        current = int(ev[self.cursor]) if len(ev) and 0 <= getattr(self, "cursor", 0) < len(ev) else -1
        dur = p.end[ev] - p.start[ev]
        self.events = ev[np.lexsort((-dur, p.start[ev])) if by_time else np.lexsort((p.start[ev], -dur))]
        self.by_time = by_time
        hits = np.nonzero(self.events == current)[0]
        self.cursor = int(hits[0]) if len(hits) else 0
        if self.is_mounted:
            self.scroll_cursor_visible()
            self.refresh()

    def row_count(self) -> int:
        return len(self.events)

    def on_mount(self) -> None:
        self.update_extent()

    def row_text(self, k: int) -> str:
        """Plain text of instance `k` (0 = the longest)."""
        p = self.profile
        e = int(self.events[k])
        dur = format_ns(int(p.end[e] - p.start[e]))
        start = format_offset(int(p.start[e]) - self.origin)
        name = f"{safe_text(p.name_of(e))[:40]:<40}  " if self.names else ""
        return f"{k + 1:>7}  {dur:>9}  {start:>14}  {name}{safe_text(p.lane_of(e).label)}"

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("instance-list--header")
            name = f"{'name':<40}  " if self.names else ""
            head = f"{'#':>7}  {'duration':>9}  {'start':>14}  {name}lane"
            return Strip([Segment(head, style)]).crop_extend(0, width, base)
        k = self.row_at(y)
        if k >= len(self.events):
            return Strip.blank(width, base)
        style = base + self.get_component_rich_style("instance-list--cursor") if k == self.cursor else base
        return Strip([Segment(self.row_text(k), style)]).crop_extend(0, width, style)


class InstancesScreen(ModalScreen["int | None"]):
    """The instance list over the app; Enter returns the chosen event, Esc None."""

    BINDINGS = [
        Binding("escape,q,i", "dismiss_none", "Close", id="instances-close"),
        Binding("enter", "choose", "Show on timeline", id="instances-show"),
        Binding("o", "order", "Order: in time / longest first", id="instances-order"),
    ]

    DEFAULT_CSS = """
    InstancesScreen { align: center middle; }
    InstancesScreen > Vertical { width: 95%; height: 90%; border: round $accent; background: $surface; }
    InstancesScreen #instances-title { height: 1; padding: 0 1; }
    InstancesScreen InstanceList { height: 1fr; }
    """

    def __init__(self, profile: "Profile", events: np.ndarray, origin: int, what: str) -> None:
        super().__init__()
        matches = what.startswith("/")
        self.list = InstanceList(profile, events, origin, id="instances", by_time=matches, names=matches)
        self.what = what

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(), id="instances-title", markup=False)
            yield self.list

    def _title(self) -> Text:
        n = len(self.list.events)
        kind = ("match" if n == 1 else "matches") if self.what.startswith("/") else ("instance" + ("s" if n != 1 else ""))
        order = "in time order" if self.list.by_time else "longest first"
        return Text(f"{self.what}: {n:,} {kind}, {order} · Enter: show on the timeline · o: order · Esc: close")

    def action_order(self) -> None:
        self.list.order(not self.list.by_time)
        self.query_one("#instances-title", Static).update(self._title())

    def on_mount(self) -> None:
        self.list.focus()

    def action_choose(self) -> None:
        if len(self.list.events):
            self.dismiss(int(self.list.events[self.list.cursor]))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
