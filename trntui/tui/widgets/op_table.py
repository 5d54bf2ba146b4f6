"""The ops pane: torch's key_averages table as a virtualised Line-API `ScrollView` (10k+ rows stay instant)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip

from trntui.analysis.surprises import MARK
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.op_columns import (
    SPREAD_COLUMNS, format_cell, instance_spread, table_columns, table_csv, twin_suffixes,
)
from trntui.tui.widgets.op_table_draw import OpTableDrawing
from trntui.tui.widgets.rows import Column, RowList, cursor_bindings, filter_pattern
from trntui.textsafe import safe_text

if TYPE_CHECKING:
    from trntui.analysis.key_averages import OpTable
    from trntui.model.profile import Profile
    from trntui.tui.messages import LoadedRun


class OpTableView(OpTableDrawing, RowList):
    """Sortable, filterable op table drawn line by line from the `OpTable` columns."""

    ALLOW_MAXIMIZE = True

    HELP = "Ops: torch's key_averages table. Enter selects an op everywhere."

    BINDINGS = [
        *cursor_bindings("ops"),
        Binding("enter", "select", "Select op", id="ops-select"),
        Binding("s", "cycle_sort", "Sort column", id="ops-sort-next"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="ops-sort-reverse"),
        Binding("1", "sort_column(0)", "Sort by column 1 (Name)", show=False, id="ops-sort-1"),
        Binding("2", "sort_column(1)", "Sort by column 2 (# Calls)", show=False, id="ops-sort-2"),
        Binding("3", "sort_column(2)", "Sort by column 3 (Self CPU)", show=False, id="ops-sort-3"),
        Binding("4", "sort_column(3)", "Sort by column 4 (CPU total)", show=False, id="ops-sort-4"),
        Binding("5", "sort_column(4)", "Sort by column 5 (Self <DEV>)", show=False, id="ops-sort-5"),
        Binding("6", "sort_column(5)", "Sort by column 6 (<DEV> total)", show=False, id="ops-sort-6"),
        Binding("7", "sort_column(6)", "Sort by column 7 (% <DEV>)", show=False, id="ops-sort-7"),
        Binding("slash", "filter", "Filter", id="ops-filter"),
        Binding("m", "toggle_spread", "Min / avg / max columns", show=False, id="ops-spread"),
        Binding("L", "select('longest')", "Longest instance", show=False, id="ops-longest"),
        Binding("i", "select('instances')", "Instance list", show=False, id="ops-instances"),
        Binding("t", "select('tree')", "Call tree of the first instance", show=False, id="ops-calltree"),
        Binding("y", "copy_name", "Copy the op's name", show=False, id="ops-copy"),
        Binding("f", "full_name", "The op's full name", show=False, id="ops-full-name"),
        Binding("left,h", "scroll_names(-8)", "Scroll names left", show=False, id="ops-names-left"),
        Binding("right,l", "scroll_names(8)", "Scroll names right", show=False, id="ops-names-right"),
        Binding("w", "save_csv", "Save the rows shown as CSV", show=False, id="ops-save-csv"),
    ]

    COMPONENT_CLASSES = {"op-table--header", "op-table--cursor", "op-table--selected"}

    DEFAULT_CSS = """
    OpTableView {
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
    }
    OpTableView > .op-table--header { text-style: bold; color: $text-accent; }
    OpTableView > .op-table--cursor { background: $block-cursor-blurred-background; }
    OpTableView:focus > .op-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    OpTableView > .op-table--selected { color: $text-warning; text-style: bold; }
    """

    class OpSelected(Message):
        """Enter on a row: the op (row `row` of the OpTable) becomes the selection everywhere; `then` says what
        to show next: its first instance (""), its longest instance ("longest") or its instance list
        ("instances")."""

        def __init__(self, table: "OpTableView", row: int, then: str = "") -> None:
            self.table = table
            self.row = row
            self.then = then
            super().__init__()

        @property
        def control(self) -> "OpTableView":
            return self.table

    class FilterRequested(Message):
        """`/` pressed: the pane should show its filter input."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table: OpTable | None = None
        self.columns: list[Column] = []
        self.sort_index = 0
        """Index into `columns` of the sort column."""
        self.descending = True
        self.pattern: re.Pattern[str] | None = None
        self.view = np.empty(0, np.int64)
        """Table rows in display order (sorted, filtered)."""
        self.cursor = 0
        """Position of the cursor in `view`."""
        self.selected_row = -1
        """The OpTable row selected with Enter (highlighted)."""
        self.profile: Profile | None = None
        """The profile the table was built from (for the instance-duration columns)."""
        self.show_spread = False
        self.spread: dict[str, np.ndarray] | None = None
        self.name_offset = 0
        """Characters of every name scrolled off to the left (`←`/`→`: long C++ names read in full)."""
        self.marks: dict[tuple[int, str], list] = {}
        """(OpTable row, field) → the `Surprise`s (trntui/analysis/surprises.py) that make that cell look wrong:
        drawn with `MARK` after it; `!` explains them."""
        self.surprises: list = []
        self.twins: dict[int, str] = {}
        """Row → suffix marking the device-side row of a name that has a CPU row too (`twin_suffixes`)."""
        self._marked_fields: set[str] = set()
        self._short: tuple[object, dict[int, str]] = (None, {})
        self._version_table = 0
        """Counts the tables shown (the shortened names are per table and width)."""
        self._columns_cache: tuple[object, list[tuple[int, int]]] = (None, [])
        self._version = 0
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._style_cache: tuple[object, dict[str, Style]] = (None, {})

    # -- data ------------------------------------------------------------------------------------
    def show_run(self, run: "LoadedRun") -> None:
        """The `Pane` interface (trntui/tui/panes.py): show the loaded run's key_averages table."""
        self.set_table(run.table, run.profile)

    def set_table(self, table: "OpTable", profile: "Profile | None" = None) -> None:
        """Show `table`, sorted by device time when there is some (like torch's examples), else self CPU."""
        self.table = table
        self.profile = profile
        self._version_table += 1
        self.twins = twin_suffixes(table)
        from trntui.analysis.surprises import marked_cells, surprises

        self.surprises = surprises(profile, table) if profile is not None else []
        self.marks = marked_cells(self.surprises)
        self._marked_fields = {name for _, name in self.marks}
        self.name_offset = 0
        self.spread = instance_spread(table, profile) if profile is not None and self.show_spread else None
        if self.spread is None:
            self.show_spread = False
        self.columns = self._columns()
        keys = [c.key for c in self.columns]
        self.sort_index = keys.index("self_device_time_total") if table.has_device else keys.index("self_cpu_time_total")
        self.descending = True
        self.pattern = None
        self.selected_row = -1
        self._rebuild()

    @property
    def sort_column(self) -> Column | None:
        return self.columns[self.sort_index] if self.columns else None

    @property
    def title(self) -> str:
        """Pane title: what the table shows and how it is sorted/filtered."""
        if self.table is None:
            return "Ops"
        col = self.sort_column
        arrow = "↓" if self.descending else "↑"
        text = f"Ops · sort: {col.title} {arrow} · {len(self.view)}/{len(self.table)} rows"
        hidden = self.hidden_columns
        if hidden:
            text += f" · {len(hidden)} column{'s' if len(hidden) > 1 else ''} hidden (narrow)"
        if self.pattern is not None:
            text += f" · filter: /{safe_text(self.pattern.pattern)}/"
        if self.marks:
            rows = len({k for k, _ in self.marks})
            text += f" · {MARK} {rows} row{'s' if rows > 1 else ''} marked: {MARK} says why"
        return text

    def row_text(self, position: int) -> str:
        """Plain text of display row `position` at the current width (tests, docs)."""
        return self._render_row(position, self.size.width or 80).text

    def _rebuild(self) -> None:
        table = self.table
        if table is None:
            self.view = np.empty(0, np.int64)
        else:
            col = self.columns[self.sort_index]
            if col.key == "name":
                keys = np.array([n.lower() for n in table.name], dtype=object)
                order = np.argsort(keys, kind="stable")
                if self.descending:
                    order = order[::-1]
            else:
                values = self._values(col.key)
                order = np.argsort(-values if self.descending else values, kind="stable")
            if self.pattern is not None:
                search = self.pattern.search
                keep = np.fromiter((search(table.name[k]) is not None for k in order.tolist()), bool, len(order))
                order = order[keep]
            self.view = np.asarray(order, np.int64)
        self._version += 1
        self._cache.clear()
        self.cursor = min(self.cursor, max(len(self.view) - 1, 0))
        self.update_extent()
        self.post_message(PaneTitleChanged(self))
        self.scroll_cursor_visible()
        self.refresh()

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by the column whose field is `key`; numbers default to descending, names to ascending."""
        keys = [c.key for c in self.columns]
        if key not in keys:
            return
        self.sort_index = keys.index(key)
        self.descending = (key != "name") if descending is None else descending
        self.cursor = 0
        self._rebuild()

    def set_filter(self, pattern: str) -> None:
        """Keep rows whose name matches the regex `pattern` (case-insensitive); raises `re.error` if invalid."""
        self.pattern = filter_pattern(pattern)
        self.cursor = 0
        self._rebuild()

    def move_to_row(self, row: int) -> None:
        """Put the cursor on OpTable row `row` if it is visible."""
        hits = np.nonzero(self.view == row)[0]
        if len(hits):
            self.cursor = int(hits[0])
            self.scroll_cursor_visible()
            self.refresh()

    # -- actions ---------------------------------------------------------------------------------
    def row_count(self) -> int:
        return len(self.view)

    def action_select(self, then: str = "") -> None:
        if len(self.view) == 0:
            return
        self.selected_row = int(self.view[self.cursor])
        self._cache.clear()
        self.refresh()
        self.post_message(self.OpSelected(self, self.selected_row, then))

    def action_copy_name(self) -> None:
        """Copy the name of the op under the cursor to the terminal's clipboard (OSC 52)."""
        if self.table is None or len(self.view) == 0:
            return
        name = self.table.name[int(self.view[self.cursor])]
        self.app.copy_to_clipboard(name)
        self.notify(f"copied {safe_text(name)[:60]}", markup=False)

    def action_full_name(self) -> None:
        """Show the whole name of the op under the cursor (the table shortens long C++ names)."""
        if self.table is None or len(self.view) == 0:
            return
        from trntui.tui.screens.notes import TextScreen

        k = int(self.view[self.cursor])
        self.app.push_screen(TextScreen("Full name", safe_text(self.table.name[k]) + self.twins.get(k, "")))

    def action_save_csv(self) -> None:
        """Ask for a file name, then write the rows shown (filtered, in their order) as CSV."""
        if self.table is None:
            return
        from trntui.tui.screens.prompt import PromptScreen

        def save(path: str | None) -> None:
            if path:
                self.save_csv(path)

        what = f"{len(self.view):,} rows" + (f" matching /{self.pattern.pattern}/" if self.pattern else "")
        self.app.push_screen(PromptScreen(f"Save the {safe_text(what)} as CSV to:", str(self.default_csv_path())), save)

    def default_csv_path(self) -> "Path":
        """Where `w` offers to save: a file named after the run, in the directory trntui was started from (the
        whole path shown, so the user sees where it goes)."""
        from pathlib import Path

        run = getattr(self.app, "run_name", None) or "trntui"
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", run).strip("._")[:60] or "trntui"
        return Path.cwd() / f"{stem}-ops.csv"

    def save_csv(self, path: str, force: bool = False) -> bool:
        """Write the rows shown to `path` as CSV; a notice says where (or why not).

        Through trntui/fsio.py: whole or not at all, never through a symbolic link, never into a FIFO or a
        device (refused at once, the app does not freeze); an existing file is replaced only after a yes."""
        from pathlib import Path

        from trntui import fsio

        target = Path(path).expanduser()
        try:
            fsio.atomic_write(target, table_csv(self.table, self.view, self.columns, self.spread), force=force,
                              hint="replace it?")
        except fsio.FileExists:
            from trntui.tui.screens.prompt import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.save_csv(path, force=True)
                else:
                    self.notify(f"not saved: {safe_text(str(target))} exists", markup=False)

            self.app.push_screen(ConfirmScreen(f"{safe_text(str(target))} exists. Replace it?"), answered)
            return False
        except fsio.FileRefused as exc:
            self.notify(f"could not save {safe_text(str(target))}: {safe_text(exc.problem)}",
                        severity="error", markup=False)
            return False
        self.notify(f"saved {len(self.view):,} rows to {safe_text(str(target))}", markup=False)
        return True

    def on_click(self, event) -> None:  # events.Click
        """Click: cursor to that row; double click: select it (Enter)."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0 or self.table is None:
            return
        position = int(self.scroll_offset.y) + offset.y - 1
        if 0 <= position < len(self.view):
            self.cursor = position
            self.focus()
            self.refresh()
            if event.chain >= 2:
                self.action_select()

    def action_toggle_spread(self) -> None:
        """Show or hide the Min / Avg / Max instance-duration columns (after # Calls)."""
        if self.table is None:
            return
        if self.profile is None:
            self.notify("instance durations need the loaded profile", severity="warning")
            return
        if self.spread is None:
            self.spread = instance_spread(self.table, self.profile)
        sort_key = self.sort_column.key if self.sort_column else ""
        self.show_spread = not self.show_spread
        self.columns = self._columns()
        keys = [c.key for c in self.columns]
        self.sort_index = keys.index(sort_key) if sort_key in keys else keys.index("self_cpu_time_total")
        self._rebuild()

    def _columns(self) -> list[Column]:
        cols = table_columns(self.table)
        if self.show_spread:
            cols[2:2] = SPREAD_COLUMNS
        return [self._fitted(c) for c in cols]

    def _fitted(self, column: Column) -> Column:
        """`column` made wide enough for its widest value (a number is never cut: e.g. a negative Self CPU
        `-5576.313us`); the widest text is that of the largest or the smallest value."""
        if not column.numeric or len(self.table) == 0:
            return column
        values = np.asarray(self._values(column.key))
        rows = (int(np.argmax(values)), int(np.argmin(values)))
        widest = max(len(format_cell(self.table, column.key, k, self.spread)) for k in rows)
        widest += column.key in self._marked_fields  # room for the MARK
        return column if widest <= column.width else replace(column, width=widest)

    def _values(self, key: str) -> np.ndarray:
        if self.spread is not None and key in self.spread:
            return self.spread[key]
        return np.asarray(getattr(self.table, key), dtype=np.float64)

    def action_cycle_sort(self) -> None:
        if self.columns:
            self.sort_by(self.columns[(self.sort_index + 1) % len(self.columns)].key)

    def action_reverse_sort(self) -> None:
        if self.columns:
            self.descending = not self.descending
            self._rebuild()

    def action_sort_column(self, index: int) -> None:
        """Sort by the n-th of torch's columns (the digits keep their meaning when Min/Avg/Max are shown)."""
        base = table_columns(self.table) if self.table is not None else []
        if 0 <= index < len(base):
            self.sort_by(base[index].key)

    def action_filter(self) -> None:
        self.post_message(self.FilterRequested())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "sort_column" and parameters:
            return int(parameters[0]) < len(self.columns) or not self.columns
        return True
