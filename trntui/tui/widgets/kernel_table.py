"""The overview's kernel table: per kernel name, or per kernel × launching op, as a virtualised Line-API view.

Sortable (`s` cycles the column, `S` reverses, digits pick a column), filterable (`/`, a regex on kernel and op
names), `v` switches between the two tables, Enter asks to show the row's longest instance on the timeline.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip

from trntui.textsafe import safe_text
from trntui.units import format_us
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.rows import Column, RowList, cursor_bindings, filter_pattern, fit

if TYPE_CHECKING:
    from trntui.analysis.overview.kernels import KernelRow, KernelTables


def _value(row: "KernelRow", key: str):
    if key == "mean_ns":
        return row.mean_ns
    return getattr(row, key)


def _cell(row: "KernelRow", key: str) -> str:
    v = _value(row, key)
    if key in ("name", "op"):
        return safe_text(v)
    if key == "calls":
        return f"{v:,}"
    if key.endswith("_ns"):
        return format_us(v)
    if key == "tensor_cores":
        return "yes" if v else "no"
    if v is None:
        return "-"
    return f"{v:.2f}"


NAME_MIN = 32
"""Columns give way until each name column gets this many cells."""

GIVE_WAY = ("tensor_cores", "blocks_per_sm", "occupancy", "min_ns", "max_ns", "mean_ns")
"""The kernel table's columns in the order they give way on a narrow terminal."""


class KernelTableView(RowList):
    """Kernel rows drawn line by line from `KernelTables`."""

    ALLOW_MAXIMIZE = True
    HELP = "Kernels: per kernel name, or per kernel × op (v). Enter shows the longest instance on the timeline."

    BINDINGS = [
        *cursor_bindings("kernels"),
        Binding("enter", "choose", "Show longest on timeline", id="kernels-choose"),
        Binding("s", "cycle_sort", "Sort column", id="kernels-sort-next"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="kernels-sort-reverse"),
        Binding("v", "toggle_by_op", "By name / by op", id="kernels-by-op"),
        Binding("slash", "filter", "Filter", id="kernels-filter"),
        Binding("f", "full_name", "The kernel's full name", show=False, id="kernels-full-name"),
    ] + [
        Binding(str(k + 1), f"sort_by_column({k})", f"Sort by column {k + 1}", show=False, id=f"kernels-sort-{k + 1}")
        for k in range(9)
    ]

    COMPONENT_CLASSES = {"kernel-table--header", "kernel-table--cursor"}
    DEFAULT_CSS = """
    KernelTableView { scrollbar-size-vertical: 1; overflow-x: hidden; }
    KernelTableView > .kernel-table--header { text-style: bold; color: $text-accent; }
    KernelTableView > .kernel-table--cursor { background: $block-cursor-blurred-background; }
    KernelTableView:focus > .kernel-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    """

    class KernelChosen(Message):
        """Enter on a row: show event `event` (the row's longest instance) on the timeline."""

        def __init__(self, view: "KernelTableView", event: int, row: "KernelRow") -> None:
            super().__init__()
            self.view = view
            self.event = event
            self.row = row

        @property
        def control(self) -> "KernelTableView":
            return self.view

    class FilterRequested(Message):
        """`/` pressed: the screen should open its filter box."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tables: KernelTables | None = None
        self.by_op = False
        self.columns: list[Column] = []
        self.sort_index = 0
        self.descending = True
        self.pattern: re.Pattern[str] | None = None
        self.view: list[int] = []
        self.cursor = 0
        self._version = 0
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles_of: tuple[object, dict[str, Style]] = (None, {})
        self._short: dict[tuple, dict[str, str]] = {}
        """(column, width, rows) → each long name of that column shortened (distinct names stay distinct)."""

    # -- data ------------------------------------------------------------------------------------
    def row_count(self) -> int:
        return len(self.view)

    @property
    def rows(self) -> list["KernelRow"]:
        if self.tables is None:
            return []
        return self.tables.by_op if self.by_op else self.tables.by_name

    def set_tables(self, tables: "KernelTables | None") -> None:
        self.tables = tables
        self._short.clear()
        self._columns()
        self.sort_index = next(i for i, c in enumerate(self.columns) if c.key == "total_ns")
        self.descending = True
        self._rebuild()

    def _columns(self) -> None:
        cols = [Column("name", "Kernel", 0, numeric=False)]
        if self.by_op:
            cols.append(Column("op", "Op", 0, numeric=False))
        cols += [
            Column("calls", "Calls", 8),
            Column("total_ns", "Total", 10),
            Column("mean_ns", "Mean", 10),
            Column("max_ns", "Max", 10),
            Column("min_ns", "Min", 10),
        ]
        t = self.tables
        if t is not None and t.has_blocks_per_sm:
            cols.append(Column("blocks_per_sm", "Blk/SM", 7))
        if t is not None and t.has_occupancy:
            cols.append(Column("occupancy", "Occ %", 6))
        if t is not None and t.tensor_cores_known:
            cols.append(Column("tensor_cores", "TC", 3))
        self.columns = cols

    @property
    def title(self) -> str:
        if self.tables is None:
            return "Kernels"
        col = self.columns[self.sort_index]
        what = "Kernels × op" if self.by_op else "Kernels"
        text = f"{what} · sort: {col.title} {'↓' if self.descending else '↑'} · {len(self.view)}/{len(self.rows)} rows"
        if self.pattern is not None:
            text += f" · filter: /{safe_text(self.pattern.pattern)}/"
        return text

    def _rebuild(self) -> None:
        rows = self.rows
        order = list(range(len(rows)))
        if rows and self.columns:
            col = self.columns[self.sort_index]
            if col.numeric:
                vals = np.array([(_value(r, col.key) if _value(r, col.key) is not None else -1.0) for r in rows], np.float64)
                idx = np.argsort(-vals if self.descending else vals, kind="stable")
            else:
                keys = np.array([str(_value(r, col.key)).lower() for r in rows], dtype=object)
                idx = np.argsort(keys, kind="stable")
                if self.descending:
                    idx = idx[::-1]
            order = idx.tolist()
        if self.pattern is not None:
            s = self.pattern.search
            order = [k for k in order if s(rows[k].name) or (self.by_op and s(rows[k].op))]
        self.view = order
        self.cursor = min(self.cursor, max(len(order) - 1, 0))
        self._version += 1
        self._cache.clear()
        self.update_extent()
        self.post_message(PaneTitleChanged(self))
        self.scroll_cursor_visible()
        self.refresh()

    def set_filter(self, pattern: str) -> None:
        self.pattern = filter_pattern(pattern)
        self.cursor = 0
        self._rebuild()

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        keys = [c.key for c in self.columns]
        if key in keys:
            self.sort_index = keys.index(key)
            self.descending = (key not in ("name", "op")) if descending is None else descending
            self.cursor = 0
            self._rebuild()

    def row_text(self, position: int) -> str:
        return self._render_row(position, self.size.width or 100).text

    # -- actions ---------------------------------------------------------------------------------
    def action_choose(self) -> None:
        if self.view:
            row = self.rows[self.view[self.cursor]]
            if row.longest >= 0:
                self.post_message(self.KernelChosen(self, row.longest, row))

    def action_cycle_sort(self) -> None:
        if self.columns:
            self.sort_by(self.columns[(self.sort_index + 1) % len(self.columns)].key)

    def action_reverse_sort(self) -> None:
        self.descending = not self.descending
        self._rebuild()

    def action_sort_by_column(self, index: int) -> None:
        if 0 <= index < len(self.columns):
            self.sort_by(self.columns[index].key)

    def action_toggle_by_op(self) -> None:
        key = self.columns[self.sort_index].key if self.columns else "total_ns"
        self.by_op = not self.by_op
        self._columns()
        keys = [c.key for c in self.columns]
        self.sort_index = keys.index(key) if key in keys else keys.index("total_ns")
        self.cursor = 0
        self._rebuild()

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    # -- rendering -------------------------------------------------------------------------------
    def _widths(self, width: int) -> list[int]:
        """Cells per column at `width`; 0: the column gives way (least important first, never the sorted one)
        until the names get `NAME_MIN` cells, so that kernel names stay readable at 80 columns."""
        shown = [c for c in self.columns]
        sort_key = self.columns[self.sort_index].key if self.columns else ""
        droppable = [c for k in GIVE_WAY for c in self.columns if c.key == k and c.key != sort_key]
        names_count = len([c for c in self.columns if not c.width])

        def free_cells() -> int:
            return width - sum(c.width + 1 for c in shown if c.width) - (names_count - 1)

        while droppable and free_cells() < NAME_MIN * names_count:
            shown.remove(droppable.pop(0))
        widths = self._name_widths(width, shown)
        return [widths.get(id(c), 0) for c in self.columns]

    def _name_widths(self, width: int, columns: list) -> dict[int, int]:
        fixed = sum(c.width + 1 for c in columns if c.width)
        names = [c for c in columns if not c.width]
        free = max(width - fixed - (len(names) - 1), 8 * len(names))
        if len(names) == 2:  # kernel and op: the op gets a third
            op = max(free // 3, 8)
            return {id(c): c.width or (free - op if c.key == "name" else op) for c in columns}
        return {id(c): c.width or free for c in columns}

    def _styles(self) -> dict[str, Style]:
        key = (self.app.theme, self.has_focus)
        if self._styles_of[0] != key:
            base = self.rich_style
            self._styles_of = (key, {"base": base,
                                     "header": base + self.get_component_rich_style("kernel-table--header"),
                                     "cursor": base + self.get_component_rich_style("kernel-table--cursor")})
        return self._styles_of[1]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles_of = (None, {})
        self._cache.clear()

    def action_full_name(self) -> None:
        """Show the whole name of the kernel under the cursor (and its op, per kernel × op)."""
        if not self.view:
            return
        from trntui.tui.screens.notes import TextScreen

        row = self.rows[self.view[self.cursor]]
        body = safe_text(row.name)
        op = getattr(row, "op", None)
        if op:
            body += f"\n\nlaunched by: {safe_text(op)}"
        self.app.push_screen(TextScreen("Full name", body))

    def _short_text(self, row: "KernelRow", key: str, width: int) -> str:
        """The row's kernel or op name in `width` cells: long C++ names shortened (`report.format.short_names`:
        template arguments elided, what tells the column's names apart kept); `f` shows them whole."""
        text = _cell(row, key)
        if len(text) <= width:
            return text
        cache = (key, width, id(self.rows))
        if cache not in self._short:
            from trntui.report.format import short_names

            names = sorted({_cell(r, key) for r in self.rows})
            if len(self._short) > 8:
                self._short.clear()
            self._short[cache] = dict(zip(names, short_names(names, width)))
        return self._short[cache].get(text, text)

    def _render_row(self, position: int, width: int) -> Strip:
        styles = self._styles()
        if position >= len(self.view):
            return Strip.blank(width, styles["base"])
        row = self.rows[self.view[position]]
        cells = [fit(self._short_text(row, c.key, w) if c.key in ("name", "op") else _cell(row, c.key), w, c.numeric)
                 for c, w in zip(self.columns, self._widths(width)) if w]
        style = styles["cursor"] if position == self.cursor else styles["base"]
        return Strip([Segment(" ".join(cells), style)]).crop_extend(0, width, style)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        styles = self._styles()
        if self.tables is None or not self.columns:
            text = "no kernels in this profile" if y == 0 else ""
            return Strip([Segment(text, styles["base"])]).crop_extend(0, width, styles["base"])
        if y == 0:
            cells = []
            for i, (c, w) in enumerate(zip(self.columns, self._widths(width))):
                if not w:
                    continue
                t = c.title + (("↓" if self.descending else "↑") if i == self.sort_index else "")
                cells.append(fit(t, w, c.numeric))
            return Strip([Segment(" ".join(cells), styles["header"])]).crop_extend(0, width, styles["base"])
        position = self.row_at(y)
        key = (position, position == self.cursor, self.has_focus, width, self._version)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(position, width)
            self._cache[key] = strip
        return strip

    def resized(self) -> None:
        self._cache.clear()
