"""One base for the app's keyboard lists: a virtualised Line-API view of rows with a cursor.

`RowList` owns what every list does the same way: the cursor (clamped to the rows), paging, jumping to the
first/last row, scrolling the cursor into view under the header lines, the virtual height, a repaint on focus
and blur. `Column` and `fit` are the columns that fit a width (a cell cut with `…`, numbers right-aligned), and
`filter_pattern` the `/` filter's regex. A list says how many rows it has (`row_count`), how many lines its
header takes (`HEADER_LINES`), and draws its lines (`render_line`); `cursor_moved()` and `resized()` are its
hooks (Textual calls every class's `on_resize`, so a list overrides the hook, not the handler). `cursor_bindings(prefix)` gives the movement keys with ids under the list's prefix.

Subclasses: the ops table (`op_table.py`), the overview's kernels (`kernel_table.py`), the call tree
(`calltree.py`), the chain (`chain.py`), the ranks heatmap (`rank_heatmap.py`) and the instance list
(`screens/instances.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView


@dataclass(frozen=True)
class Column:
    """One table column: the field it shows, its header and its width (0: a name column, sharing what is left)."""

    key: str
    title: str
    width: int
    numeric: bool = True
    """Right-aligned (and sorted descending first)."""


def fit(text: str, width: int, right: bool) -> str:
    """`text` in exactly `width` cells: cut with `…` when longer, padded left (`right`) or right."""
    if len(text) > width:
        text = text[: max(width - 1, 0)] + "…" if width > 1 else text[:width]
    return text.rjust(width) if right else text.ljust(width)


def filter_pattern(text: str) -> re.Pattern[str] | None:
    """The `/` filter's regex (case-insensitive); None for an empty filter. A bad regex raises `re.error`."""
    return re.compile(text, re.IGNORECASE) if text else None


def cursor_bindings(
    prefix: str | None, *, down: str = "Down", up: str = "Up", first: str = "First row", last: str = "Last row",
    paging: bool = True,
) -> list[Binding]:
    """j/k (and the arrows), PageDown/PageUp (ctrl+d/u), Home/End (g/G) for a list, with ids `<prefix>-down` …
    (`prefix` None: no ids)."""
    def ident(name: str) -> str | None:
        return f"{prefix}-{name}" if prefix else None

    keys = [
        Binding("down,j", "cursor(1)", down, show=False, id=ident("down")),
        Binding("up,k", "cursor(-1)", up, show=False, id=ident("up")),
    ]
    if paging:
        keys += [
            Binding("pagedown,ctrl+d", "page(1)", "Page down", show=False, id=ident("page-down")),
            Binding("pageup,ctrl+u", "page(-1)", "Page up", show=False, id=ident("page-up")),
            Binding("home,g", "jump(0)", first, show=False, id=ident("top")),
            Binding("end,G", "jump(-1)", last, show=False, id=ident("bottom")),
        ]
    return keys


class RowList(ScrollView, can_focus=True):
    """Rows under `HEADER_LINES` fixed lines, one of them under the cursor."""

    HEADER_LINES = 1
    """Lines drawn above the rows (they do not scroll with them)."""

    cursor: int = 0
    """Row of the cursor (0 … row_count() - 1)."""

    def row_count(self) -> int:
        """Rows in the list as shown (after sorting and filtering)."""
        raise NotImplementedError

    def cursor_moved(self) -> None:
        """Called after the cursor moved (a list posts what follows it)."""

    # -- the cursor ------------------------------------------------------------------------------
    def move_cursor(self, row: int) -> None:
        """The cursor to `row` (clamped), scrolled into view; nothing when the list is empty."""
        n = self.row_count()
        if n == 0:
            return
        self.cursor = max(0, min(int(row), n - 1))
        self.scroll_cursor_visible()
        self.refresh()
        self.cursor_moved()

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self._height() - 2, 1))

    def action_jump(self, where: int) -> None:
        self.move_cursor(0 if where == 0 else self.row_count() - 1)

    # -- scrolling -------------------------------------------------------------------------------
    def _height(self) -> int:
        return self.scrollable_content_region.height or self.size.height

    def visible_rows(self) -> int:
        """Rows that fit under the header."""
        return max(self._height() - self.HEADER_LINES, 1)

    def scroll_cursor_visible(self) -> None:
        """Scroll (at once) so that the cursor's row is on screen."""
        visible = self.visible_rows()
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            top = self.cursor
        elif self.cursor >= top + visible:
            top = self.cursor - visible + 1
        if top != int(self.scroll_offset.y):
            self.scroll_to(y=top, animate=False, immediate=True)

    def row_at(self, y: int) -> int:
        """The row drawn on line `y` of the widget (below the header; may be past the last row)."""
        return int(self.scroll_offset.y) + y - self.HEADER_LINES

    def update_extent(self) -> None:
        """The scrollable height: the rows plus the header."""
        self.virtual_size = Size(self.size.width, self.row_count() + self.HEADER_LINES)

    # -- events ----------------------------------------------------------------------------------
    def on_resize(self) -> None:
        self.update_extent()
        self.resized()

    def resized(self) -> None:
        """Called on a resize, after the extent (a list drops what it drew at the old width)."""

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
