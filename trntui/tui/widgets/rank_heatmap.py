"""The ranks × steps heatmap: one line per rank, one cell per step, shaded by step time (Line API).

The shade is on one scale for the whole job (the shortest step time light, the longest dark), as a character
(`░▒▓█`, so it reads without colour too; a blank cell: the rank has no such step) and as a colour from green to red. A straggler's label carries `*`.
The cursor is a cell (rank, step); marks (space) pick ranks to compare.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip

from trntui.textsafe import safe_text
from trntui.units import format_ms
from trntui.tui.widgets.rows import RowList, cursor_bindings

if TYPE_CHECKING:
    from trntui.analysis.ranks import RanksReport

SHADES = "░▒▓█"
CELL = 3
"""Characters per step cell at least (wider when the step labels are longer, up to `MAX_CELL`)."""
MAX_CELL = 6
LOW = Color.from_rgb(46, 125, 50)
HIGH = Color.from_rgb(198, 40, 40)


def shade_levels(matrix: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(level 0-4 per cell, -1 where missing; the low and high step time of the scale)."""
    finite = matrix[~np.isnan(matrix)]
    if not len(finite):
        return np.full(matrix.shape, -1, np.int8), math.nan, math.nan
    lo, hi = float(finite.min()), float(finite.max())
    span = hi - lo
    levels = np.zeros(matrix.shape, np.int8) if span <= 0 else np.clip(
        np.floor((np.nan_to_num(matrix, nan=lo) - lo) / span * len(SHADES)), 0, len(SHADES) - 1).astype(np.int8)
    levels[np.isnan(matrix)] = -1
    return levels, lo, hi


class RankHeatmap(RowList):
    """Ranks (lines) × steps (cells), shaded by step time; the cursor picks a rank and a step."""

    ALLOW_MAXIMIZE = True

    BINDINGS = [
        *cursor_bindings("ranks", first="First rank", last="Last rank")[:2],
        Binding("right,l", "move(0, 1)", "Next step", show=False, id="ranks-right"),
        Binding("left,h", "move(0, -1)", "Previous step", show=False, id="ranks-left"),
        *cursor_bindings("ranks", first="First rank", last="Last rank")[2:],
        Binding("enter", "open", "Open rank", id="ranks-open"),
        Binding("space", "mark", "Mark to compare", id="ranks-mark"),
        Binding("s", "cycle_sort", "Sort", id="ranks-sort"),
    ]

    COMPONENT_CLASSES = {"rank-heatmap--header", "rank-heatmap--cursor", "rank-heatmap--straggler",
                         "rank-heatmap--marked"}

    DEFAULT_CSS = """
    RankHeatmap { scrollbar-size-vertical: 1; overflow-x: hidden; }
    RankHeatmap > .rank-heatmap--header { text-style: bold; color: $text-accent; }
    RankHeatmap > .rank-heatmap--cursor { text-style: reverse; }
    RankHeatmap > .rank-heatmap--straggler { color: $text-warning; text-style: bold; }
    RankHeatmap > .rank-heatmap--marked { color: $text-accent; text-style: bold underline; }
    """

    SORTS = ("rank", "step time", "working time")

    class CursorMoved(Message):
        def __init__(self, heatmap: "RankHeatmap") -> None:
            self.heatmap = heatmap
            super().__init__()

    class Opened(Message):
        """Enter on a rank."""

        def __init__(self, heatmap: "RankHeatmap", row: int) -> None:
            self.heatmap = heatmap
            self.row = row
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: RanksReport | None = None
        self.order: list[int] = []
        """Report rows in display order."""
        self.cursor = 0
        """Position in `order`."""
        self.col = 0
        self.first_col = 0
        self.sort = "rank"
        self.marked: list[int] = []
        """Report rows marked with space (at most two, oldest first)."""
        self.levels = np.zeros((0, 0), np.int8)
        self.lo = self.hi = math.nan

    # -- data --------------------------------------------------------------------------------------
    def set_report(self, report: "RanksReport") -> None:
        self.report = report
        self.levels, self.lo, self.hi = shade_levels(report.matrix)
        self.marked = []
        self._reorder()

    def row_count(self) -> int:
        return len(self.order)

    def cursor_moved(self) -> None:
        self.post_message(self.CursorMoved(self))

    @property
    def row(self) -> int:
        """The report row under the cursor (-1 when empty)."""
        return self.order[self.cursor] if self.order else -1

    def _reorder(self) -> None:
        rep = self.report
        current = self.row
        n = len(rep.rows) if rep else 0
        if self.sort == "step time" and rep:
            self.order = sorted(range(n), key=lambda i: -np.nan_to_num(rep.rows[i].step_mean, nan=-1))
        elif self.sort == "working time" and rep:
            self.order = sorted(range(n), key=lambda i: -np.nan_to_num(rep.rows[i].working, nan=-1))
        else:
            self.order = list(range(n))
        self.cursor = self.order.index(current) if current in self.order else 0
        self.update_extent()
        self.scroll_cursor_visible()
        self.refresh()
        self.cursor_moved()

    # -- actions -----------------------------------------------------------------------------------
    def action_move(self, drow: int, dcol: int) -> None:
        """The cursor `drow` ranks down and `dcol` steps right."""
        if not self.order:
            return
        steps = len(self.report.step_labels) if self.report else 0
        self.col = int(np.clip(self.col + dcol, 0, max(steps - 1, 0)))
        self.move_cursor(self.cursor + drow)

    def scroll_cursor_visible(self) -> None:
        """The cursor's rank on screen, and its step among the columns shown."""
        super().scroll_cursor_visible()
        fit = self._columns_fit(self.size.width or 80)
        if self.col < self.first_col:
            self.first_col = self.col
        elif self.col >= self.first_col + fit:
            self.first_col = self.col - fit + 1

    def action_open(self) -> None:
        if self.order:
            self.post_message(self.Opened(self, self.row))

    def action_mark(self) -> None:
        r = self.row
        if r < 0:
            return
        if r in self.marked:
            self.marked.remove(r)
        else:
            self.marked = (self.marked + [r])[-2:]
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def action_cycle_sort(self) -> None:
        self.sort = self.SORTS[(self.SORTS.index(self.sort) + 1) % len(self.SORTS)]
        self._reorder()

    # -- layout ------------------------------------------------------------------------------------
    def _label_width(self) -> int:
        if not self.report:
            return 6
        return max(6, *(len(safe_text(r.label)) + 2 for r in self.report.rows))

    @property
    def cell(self) -> int:
        """Characters per step cell: room for the step labels (`551` → 4)."""
        labels = self.report.step_labels if self.report else []
        longest = max((len(safe_text(x)) for x in labels), default=2)
        return max(CELL, min(longest + 1, MAX_CELL))

    def _columns_fit(self, width: int) -> int:
        return max((width - self._label_width() - 12) // self.cell, 1)

    # -- rendering ---------------------------------------------------------------------------------
    def _style(self, part: str) -> Style:
        return self.rich_style + self.get_component_rich_style(f"rank-heatmap--{part}")

    def line_text(self, y: int) -> str:
        """Plain text of line `y` (0 = header) at the current width (tests)."""
        return self._render(y, self.size.width or 80).text

    def render_line(self, y: int) -> Strip:
        return self._render(y, self.scrollable_content_region.width or self.size.width)

    def _render(self, y: int, width: int) -> Strip:
        base = self.rich_style
        rep = self.report
        if rep is None:
            return Strip([Segment("summarising the ranks…" if y == 0 else "", base)]).crop_extend(0, width, base)
        lw = self._label_width()
        fit = self._columns_fit(width)
        cell = self.cell
        labels = rep.step_labels[self.first_col : self.first_col + fit]
        if y == 0:
            head = "rank".ljust(lw) + "mean ms".rjust(10) + " │"
            for lab in labels:
                head += safe_text(lab)[-(cell - 1):].rjust(cell)
            return Strip([Segment(head, self._style("header"))]).crop_extend(0, width, base)
        pos = self.row_at(y)
        if pos >= len(self.order):
            return Strip.blank(width, base)
        i = self.order[pos]
        r = rep.rows[i]
        label = safe_text(r.label) + (" *" if r.straggler else "")
        lstyle = self._style("straggler") if r.straggler else base
        if i in self.marked:
            lstyle = lstyle + self._style("marked")
        segs = [Segment(label.ljust(lw), lstyle), Segment(format_ms(r.step_mean).rjust(10) + " │", base)]
        for j in range(len(labels)):
            k = self.first_col + j
            lvl = int(self.levels[i, k])
            style = base if lvl < 0 else base + Style(color=Color.from_triplet(_blend(lvl)))
            if pos == self.cursor and k == self.col:
                style = style + self._style("cursor")
            segs.append(Segment(" " * cell if lvl < 0 else " " + SHADES[lvl] * (cell - 1), style))
        return Strip(segs).crop_extend(0, width, base)

    def legend(self) -> str:
        """`░ 771.300 ms … █ 809.800 ms` (the scale) for the screen's footer line."""
        if math.isnan(self.lo):
            return ""
        return f"shade: {SHADES[0]} {format_ms(self.lo)} ms … {SHADES[-1]} {format_ms(self.hi)} ms (step time)"

    def resized(self) -> None:
        self.scroll_cursor_visible()


def _blend(level: int):
    from rich.color_triplet import ColorTriplet

    t = level / (len(SHADES) - 1)
    a, b = LOW.get_truecolor(), HIGH.get_truecolor()
    return ColorTriplet(int(a.red + (b.red - a.red) * t), int(a.green + (b.green - a.green) * t),
                        int(a.blue + (b.blue - a.blue) * t))
