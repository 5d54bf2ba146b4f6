"""Drawing the ops pane (trntui/tui/widgets/op_table.py): which columns fit the width, the names shortened to
their cells, the header and each row as a Line-API strip, cached. A mixin of `OpTableView`, which holds the
table, the view and the cursor."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from trntui.analysis.surprises import MARK
from trntui.textsafe import safe_text
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.op_columns import NAME_MIN, PRIORITY, format_cell
from trntui.tui.widgets.rows import fit


class OpTableDrawing:
    """The rendering of `OpTableView`."""

    # provided by OpTableView (and its RowList, ScrollView bases)
    table: Any
    columns: Any
    view: Any
    cursor: Any

    def layout(self, width: int) -> list[tuple[int, int]]:
        """(column index, cells) of the columns drawn at `width`: when the names would get fewer than
        `NAME_MIN` cells, the least important columns give way (never the sorted one); the name column takes
        what is left, so it widens with the terminal."""
        key = (width, tuple(c.width for c in self.columns), self.sort_index, self.show_spread)
        if self._columns_cache[0] == key:
            return self._columns_cache[1]
        shown = list(range(len(self.columns)))
        order = PRIORITY
        if self.show_spread:  # asked for with `m`: they stay before the others
            order = ("name", "instance_min", "instance_avg", "instance_max", *[k for k in PRIORITY if not k.startswith("instance_") and k != "name"])
        rank = {k: i for i, k in enumerate(order)}

        def fixed() -> int:
            return sum(self.columns[i].width + 1 for i in shown if self.columns[i].width)

        droppable = sorted((i for i in shown if self.columns[i].width and i != self.sort_index),
                           key=lambda i: -rank.get(self.columns[i].key, len(rank)))
        while width - fixed() < NAME_MIN and droppable:
            shown.remove(droppable.pop(0))
        name_width = max(width - fixed(), 8)
        out = [(i, self.columns[i].width or name_width) for i in shown]
        self._columns_cache = (key, out)
        return out

    def _widths(self, width: int) -> list[int]:
        return [w for _, w in self.layout(width)]

    @property
    def hidden_columns(self) -> list[str]:
        """Titles of the columns that gave way at the current width."""
        shown = {i for i, _ in self.layout(self.size.width or 80)}
        return [c.title for i, c in enumerate(self.columns) if i not in shown]

    def action_scroll_names(self, delta: int) -> None:
        """Scroll every name horizontally (the other columns stay put)."""
        if self.table is None:
            return
        longest = max((len(n) for n in self.table.name), default=0)
        self.name_offset = max(0, min(self.name_offset + delta, max(longest - 8, 0)))
        self._cache.clear()
        self.refresh()

    def _name_cell(self, k: int, width: int = 0) -> str:
        text = safe_text(self.table.name[k]) + self.twins.get(k, "")
        if self.name_offset:
            text = "…" + text[self.name_offset + 1 :] if len(text) > self.name_offset else ""
        elif width and len(text) > width:
            text = self._short_names(width).get(k, text)
        return text

    def _short_names(self, width: int) -> dict[int, str]:
        """Row → its name shortened to `width` cells (`report.format.short_names`: template arguments elided,
        what tells the names apart kept), for the rows whose names are longer; `f` shows a name in full."""
        if self._short[0] != (width, self._version_table):
            from trntui.report.format import short_names

            full = [safe_text(n) + self.twins.get(k, "") for k, n in enumerate(self.table.name)]
            short = short_names(full, width)  # all of them: a short name must not read as another's whole name
            self._short = ((width, self._version_table), {k: s for k, s in enumerate(short) if len(full[k]) > width})
        return self._short[1]

    def _styles(self) -> dict[str, Style]:
        """Widget and component styles, computed once per theme and focus state (`rich_style` walks the DOM)."""
        key = (self.app.theme, self.has_focus)
        if self._style_cache[0] != key:
            base = self.rich_style
            styles = {"base": base}
            for part in ("header", "cursor", "selected"):
                styles[part] = base + self.get_component_rich_style(f"op-table--{part}")
            styles["selected-cursor"] = styles["selected"] + self.get_component_rich_style("op-table--cursor")
            self._style_cache = (key, styles)
        return self._style_cache[1]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache = (None, {})
        self._cache.clear()

    def _line(self, cells: list[str], style: Style) -> Strip:
        return Strip([Segment(" ".join(cells), style)])

    def _header(self, width: int) -> Strip:
        cells = []
        for i, w in self.layout(width):
            col = self.columns[i]
            title = col.title
            if i == self.sort_index:
                title = f"{title}{'↓' if self.descending else '↑'}"
            cells.append(fit(title, w, col.numeric))
        styles = self._styles()
        return self._line(cells, styles["header"]).crop_extend(0, width, styles["base"])

    def _render_row(self, position: int, width: int) -> Strip:
        table = self.table
        styles = self._styles()
        if table is None or position >= len(self.view):
            return Strip.blank(width, styles["base"])
        k = int(self.view[position])
        cells = []
        for i, w in self.layout(width):
            c = self.columns[i]
            text = self._name_cell(k, w) if c.key == "name" else format_cell(table, c.key, k, self.spread)
            if c.key in self._marked_fields:
                text += MARK if (k, c.key) in self.marks else " "
            cells.append(fit(text, w, c.numeric))
        role = "selected" if k == self.selected_row else "base"
        if position == self.cursor:
            role = "selected-cursor" if role == "selected" else "cursor"
        style = styles[role]
        return self._line(cells, style).crop_extend(0, width, style)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        if self.table is None:
            base = self._styles()["base"]
            text = "no profile loaded" if y == 0 else ""
            return Strip([Segment(text, base)]).crop_extend(0, width, base)
        if y == 0:
            return self._header(width)
        position = self.row_at(y)
        focused = self.has_focus
        key = (position, position == self.cursor, focused, width, self._version, self.selected_row)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(position, width)
            self._cache[key] = strip
        return strip

    def resized(self) -> None:
        self._cache.clear()
        self.post_message(PaneTitleChanged(self))
