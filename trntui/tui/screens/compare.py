"""The compare view: a side-by-side run summary over an op-level diff; Enter opens an op in a run's timeline.

`CompareScreen` shows already-loaded `trntui.analysis.compare.ComparedRun`s (the command loads them before the app
starts, so the screen never blocks). Keys: `/` filter (regex on op names), `s`/`S` cycle the sort
(|Δ Self device|, |Δ Self CPU|, |Δ Calls|, name), `c` changed ops only, `1`…`9` pick the run Enter opens,
Enter opens the op under the cursor in that run's timeline (`OpTimelineScreen`, reusing the explorer's
Timeline and Chain panes), Esc goes back, `?` lists these keys. `CompareApp` hosts the screen on its own
(`trntui compare`, `trntui profile --variant all`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from trntui.textsafe import safe_text, truncate
from trntui.tui.screens.timeline_requests import TimelineRequests
from trntui.tui.widgets.regex_filter import RegexFilterInput

if TYPE_CHECKING:
    from trntui.analysis.compare import ComparedRun, OpDiff, OpDiffRow

NAME_WIDTH = 56
"""Op names are cut to this many cells in the diff table (the full name is in the timeline title)."""
SORTS = ("self_device", "self_cpu", "calls", "name")
SORT_TITLES = {"self_device": "|Δ Self {dev}|", "self_cpu": "|Δ Self CPU|", "calls": "|Δ Calls|", "name": "name"}


class CompareScreen(Screen[None]):
    """Summary (one row per run) above the op diff (one row per op matched across runs)."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="compare-filter"),
        Binding("s", "cycle_sort(1)", "Sort", id="compare-sort"),
        Binding("S", "cycle_sort(-1)", "Sort back", show=False, id="compare-sort-back"),
        Binding("c", "toggle_changed", "Changed only", id="compare-changed"),
        Binding("g", "gaps", "Gaps", id="compare-gaps"),
        Binding("enter", "open_op", "Open in timeline", id="compare-open", priority=False),
        Binding("escape", "escape", "Clear filter / back", show=False, id="compare-escape"),
        Binding("question_mark,f1", "help", "Help", id="compare-help"),
        *[Binding(str(k), f"target_run({k - 1})", f"Enter opens run #{k}", show=False, id=f"compare-run-{k}")
          for k in range(1, 10)],
    ]

    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen #compare-title { height: 1; background: $panel; padding: 0 1; }
    CompareScreen #compare-summary { height: auto; max-height: 12; border-top: solid $panel-lighten-2; }
    CompareScreen #compare-diff-title { height: 1; padding: 0 1; color: $text-muted; }
    CompareScreen #compare-diff { height: 1fr; border-top: solid $panel-lighten-2; }
    CompareScreen #compare-diff:focus { border-top: solid $accent; }
    CompareScreen #compare-filter { display: none; height: 1; border: none; padding: 0 1; }
    CompareScreen #compare-filter.-active { display: block; }
    CompareScreen #compare-filter.-invalid { color: $text-error; }
    """

    def __init__(self, runs: Sequence["ComparedRun"], *, by_shapes: bool = False, title: str = "", closable: bool = False) -> None:
        super().__init__()
        from trntui.analysis.compare import diff_ops

        self.closable = closable
        """Esc (with no filter to clear) returns to the screen below (when opened from the explorer)."""
        self.runs = list(runs)
        self.by_shapes = by_shapes
        self.heading = title
        self.diff: OpDiff = diff_ops([r.table for r in self.runs], [r.name for r in self.runs], by_shapes=by_shapes)
        self.sort = self.diff.default_sort
        self.pattern: str = ""
        self.changed_only = False
        self.target = 1 if len(self.runs) > 1 else 0
        """Index of the run Enter opens (default: the first run after the baseline)."""
        self.view: list[OpDiffRow] = []

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="compare-title", markup=False)
        yield DataTable(id="compare-summary", cursor_type="none", zebra_stripes=False, show_cursor=False)
        yield Static(id="compare-diff-title", markup=False)
        yield DataTable(id="compare-diff", cursor_type="row", zebra_stripes=True)
        yield RegexFilterInput(id="compare-filter", return_focus="#compare-diff")
        yield Footer()

    @property
    def table(self) -> DataTable:
        return self.query_one("#compare-diff", DataTable)

    def on_mount(self) -> None:
        self._fill_summary()
        self._rebuild()
        self.table.focus()

    # -- summary ---------------------------------------------------------------------------------
    def _fill_summary(self) -> None:
        from trntui.report.compare import summary_cells, summary_columns

        t = self.query_one("#compare-summary", DataTable)
        t.clear(columns=True)
        cols = summary_columns(self.runs)
        for k, (title, key) in enumerate(cols):
            t.add_column(Text(title, justify="left" if k < 2 else "right"), key=key)
        for k, row in enumerate(summary_cells(self.runs)):
            t.add_row(*[Text(c, justify="left" if j < 2 else "right") for j, c in enumerate(row)], key=str(k))
        names = ", ".join(f"#{k + 1} {safe_text(r.name)}" for k, r in enumerate(self.runs))
        head = self.heading or "trntui compare"
        self.query_one("#compare-title", Static).update(Text(f"{safe_text(head)} · baseline #1 · {names}"))

    # -- diff --------------------------------------------------------------------------------------
    def summary_text(self) -> str:
        """The summary table as plain text rows (tests)."""
        t = self.query_one("#compare-summary", DataTable)
        out = [" | ".join(str(c.label) for c in t.columns.values())]
        for r in range(t.row_count):
            out.append(" | ".join(str(v) for v in t.get_row_at(r)))
        return "\n".join(out)

    def diff_title(self) -> str:
        dev = self.diff.backend or "device"
        sort = SORT_TITLES[self.sort].format(dev=dev)
        total = len(self.diff.rows)
        text = f"Op diff · matched by {'name + input shapes' if self.by_shapes else 'name'} · sort: {sort}"
        text += f" · {len(self.view)}/{total} ops"
        if self.pattern:
            text += f" · filter: /{safe_text(self.pattern)}/"
        if self.changed_only:
            text += " · changed only"
        if self.runs:
            text += f" · Enter opens in #{self.target + 1} {safe_text(self.runs[self.target].name)} (1-9: run)"
        return text

    def _rebuild(self) -> None:
        from trntui.report.compare import diff_cell, diff_columns

        rows = self.diff.sorted_rows(self.sort, self.pattern or None)
        if self.changed_only:
            rows = [r for r in rows if r.status != "same"]
        self.view = rows
        t = self.table
        t.clear(columns=True)
        cols = diff_columns(self.diff)
        # the sorted metric (its per-run values and Δ) comes right after Name, so it is in view at 80 columns
        if self.sort != "name":
            first = [c for c in cols if c[1] in (self.sort, f"d_{self.sort}")]
            cols = [cols[0], *first, *[c for c in cols[1:] if c not in first]]
        table_rows = [[diff_cell(r, field, k) for _, field, k in cols] for r in rows]
        widths = [max([Text(title).cell_len, *(len(row[j]) for row in table_rows)]) for j, (title, _, _) in enumerate(cols)]
        # the name column gives way (down to 16 cells) so the sorted group fits beside it on a narrow terminal
        group = sum(w + 2 for w, (_, field, _) in zip(widths, cols) if field.endswith(self.sort) and field != "name")
        room = (t.size.width or self.app.size.width) - group - 2 - 1
        name_width = max(16, min(NAME_WIDTH, room))
        styled_rows = []
        for r, texts in zip(rows, table_rows):
            cells = []
            for (_, field, k), text in zip(cols, texts):
                if field == "name":
                    text = truncate(text, name_width)
                style = ""
                if field.startswith("d_"):
                    delta = r.delta(field[2:], k)
                    style = "red" if delta > 0 else ("green" if delta < 0 else "")
                elif field == "status":
                    style = {"new": "yellow", "removed": "magenta", "changed": "", "same": "dim"}[text]
                cells.append(Text(text, style=style, justify="left" if field == "name" else "right"))
            styled_rows.append(cells)
        table_rows = styled_rows
        # explicit widths (the widest cell): DataTable sizes auto-width columns only when idle, and a table
        # re-sorted under load was drawn, and read by tests, with its columns as narrow as their headers
        for j, (title, field, k) in enumerate(cols):
            width = max([Text(title).cell_len, *(row[j].cell_len for row in table_rows)])
            t.add_column(Text(title, justify="left" if field == "name" else "right"), key=f"{field}:{k}", width=width)
        for i, cells in enumerate(table_rows):
            t.add_row(*cells, key=str(i))
        self.query_one("#compare-diff-title", Static).update(Text(self.diff_title()))

    def diff_lines(self) -> list[str]:
        """Visible op names in order (tests)."""
        return [r.name for r in self.view]

    # -- actions -----------------------------------------------------------------------------------
    def action_cycle_sort(self, step: int) -> None:
        options = [s for s in SORTS if s != "self_device" or self.diff.has_device]
        k = options.index(self.sort) if self.sort in options else 0
        self.sort = options[(k + step) % len(options)]
        self._rebuild()

    def set_sort(self, sort: str) -> None:
        self.sort = sort
        self._rebuild()

    def set_filter(self, pattern: str) -> None:
        """Filter op names by the regex `pattern` (case-insensitive); raises `re.error` when invalid."""
        if pattern:
            re.compile(pattern)
        self.pattern = pattern
        self._rebuild()

    def action_toggle_changed(self) -> None:
        self.changed_only = not self.changed_only
        self._rebuild()

    def action_target_run(self, k: int) -> None:
        if 0 <= k < len(self.runs):
            self.target = k
            self.query_one("#compare-diff-title", Static).update(Text(self.diff_title()))
            self.notify(f"Enter opens ops in run #{k + 1} {safe_text(self.runs[k].name)}", markup=False)

    def action_help(self) -> None:
        """`?`: this screen's keys, then the host app's (the explorer or `CompareApp`), from their BINDINGS."""
        from trntui.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(compare_key_reference(type(self.app)), "trntui compare keys"))

    def action_gaps(self) -> None:
        self.app.push_screen(GapsScreen(self.runs))

    def action_filter(self) -> None:
        self.query_one("#compare-filter", RegexFilterInput).open(self.pattern)

    def action_escape(self) -> None:
        # (Esc in the filter box clears it: RegexFilterInput's own binding; here the table has the focus)
        if self.pattern:
            self.query_one("#compare-filter", RegexFilterInput).clear_filter()
        elif self.closable:
            self.app.pop_screen()

    @on(RegexFilterInput.Applied, "#compare-filter")
    def _filter_applied(self, event: RegexFilterInput.Applied) -> None:
        self.set_filter(event.pattern)

    @on(RegexFilterInput.Cleared, "#compare-filter")
    def _filter_cleared(self) -> None:
        self.set_filter("")

    @on(DataTable.RowSelected, "#compare-diff")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_op(event.cursor_row)

    def action_open_op(self) -> None:
        self.open_op(self.table.cursor_row)

    def open_op(self, position: int, run: int | None = None) -> bool:
        """Open the op at display position `position` in run `run` (default: the target run); when the op is
        not in that run, in the first run that has it (with a notice)."""
        if not (0 <= position < len(self.view)):
            return False
        row = self.view[position]
        k = self.target if run is None else run
        if row.table_rows[k] < 0:
            present = [j for j, r in enumerate(row.table_rows) if r >= 0]
            if not present:
                return False
            j = present[0]
            self.notify(
                f"{safe_text(row.name)} is not in run #{k + 1}; showing it in #{j + 1} "
                f"{safe_text(self.runs[j].name)} (1-9 picks the run Enter opens)",
                severity="warning",
                markup=False,
            )
            k = j
        self.app.push_screen(OpTimelineScreen(self.runs[k], row.table_rows[k], k + 1))
        return True


class GapsScreen(ModalScreen[None]):
    """Per run: busy/idle per hardware lane and the largest gaps between executions (`trntui summary --gaps`)."""

    BINDINGS = [Binding("escape,q,g", "dismiss", "Close", id="gaps-close")]

    DEFAULT_CSS = """
    GapsScreen { align: center middle; }
    GapsScreen > VerticalScroll { width: 95%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, runs: Sequence["ComparedRun"]) -> None:
        super().__init__()
        self.runs = list(runs)

    def gaps_text(self) -> str:
        from trntui.report.gaps import render_gaps

        parts = []
        for k, run in enumerate(self.runs):
            parts.append(f"#{k + 1} {safe_text(run.name)}\n{render_gaps(run.gaps)}")
        return "\n".join(parts)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(self.gaps_text() + "\n(Esc closes)", no_wrap=True), markup=False, id="gaps-text")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class OpTimelineScreen(Screen[None]):
    """One run's timeline with an op's instances (and what they launched) highlighted; Esc returns."""

    BINDINGS = [Binding("escape,q", "back", "Back to compare", id="op-timeline-back")]

    DEFAULT_CSS = """
    OpTimelineScreen { layout: vertical; }
    OpTimelineScreen #op-title { height: 1; background: $panel; padding: 0 1; }
    OpTimelineScreen Timeline { height: 3fr; border-top: solid $panel-lighten-2; }
    OpTimelineScreen ChainView { height: 2fr; border-top: solid $panel-lighten-2; }
    OpTimelineScreen Timeline:focus, OpTimelineScreen ChainView:focus { border-top: solid $accent; }
    """

    def __init__(self, run: "ComparedRun", table_row: int, number: int) -> None:
        super().__init__()
        self.run = run
        self.table_row = table_row
        self.number = number
        self.first_event = -1

    def compose(self) -> ComposeResult:
        from trntui.tui.widgets.chain import ChainView
        from trntui.tui.widgets.timeline import Timeline

        yield Static(id="op-title", markup=False)
        with Vertical():
            yield Timeline(id="op-timeline")
            yield ChainView(id="op-chain")
        yield Footer()

    def on_mount(self) -> None:
        from trntui.analysis.links import launching_ops
        from trntui.tui.widgets.chain import ChainView
        from trntui.tui.widgets.timeline import Timeline

        profile = self.run.profile
        table = self.run.table
        timeline = self.query_one(Timeline)
        chain = self.query_one(ChainView)
        timeline.set_profile(profile)
        chain.set_profile(profile, timeline.origin)
        events = np.asarray(table.rows_events[self.table_row], np.int64)
        name = safe_text(table.name[self.table_row])
        self.query_one("#op-title", Static).update(
            Text(f"#{self.number} {safe_text(self.run.name)} · {name} · {len(events)} instance(s) · n/N: next/prev · Esc: back")
        )
        if len(events):
            launched = np.nonzero(np.isin(launching_ops(profile), events))[0]
            timeline.select(np.concatenate([events, launched]), events)
            self.first_event = int(events[np.argmin(profile.start[events])])
            chain.show_event(self.first_event)
        timeline.focus()
        self.call_after_refresh(self._go_to_first)

    def _go_to_first(self) -> None:
        """After the first layout (the timeline refits on its first resize): cursor on the first instance."""
        from trntui.tui.widgets.chain import ChainView
        from trntui.tui.widgets.timeline import Timeline

        timeline = self.query_one(Timeline)
        chain = self.query_one(ChainView)
        if self.first_event >= 0:
            timeline.go_to_event(self.first_event)
        timeline.border_title = Text(timeline.title)
        chain.border_title = Text(chain.title)

    def on_timeline_event_chosen(self, message) -> None:  # Timeline.EventChosen
        from trntui.tui.widgets.chain import ChainView

        chain = self.query_one(ChainView)
        chain.show_event(message.event)
        chain.border_title = Text(chain.title)

    def on_pane_title_changed(self, message) -> None:  # PaneTitleChanged: this screen's panes show their titles
        message.pane.border_title = Text(message.pane.title)

    def action_back(self) -> None:
        self.app.pop_screen()


class CompareApp(TimelineRequests, App[None]):
    """The compare view on its own (for `trntui compare` and `trntui profile --variant all`)."""

    TITLE = "trntui compare"
    BINDINGS = [Binding("q", "quit", "Quit", id="compare-quit")]

    def __init__(self, runs: Sequence["ComparedRun"], *, by_shapes: bool = False, title: str = "") -> None:
        super().__init__()
        self.runs = list(runs)
        self.by_shapes = by_shapes
        self.heading = title

    def on_mount(self) -> None:
        self.push_screen(CompareScreen(self.runs, by_shapes=self.by_shapes, title=self.heading))

    @property
    def compare(self) -> CompareScreen:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, CompareScreen):
                return screen
        raise LookupError("no compare screen")


def open_compare(app: App, path: str | Path, *, by_shapes: bool = False) -> None:
    """Load every run under `path` in a thread worker, then push a closable `CompareScreen` onto `app`
    (the explorer's `c` key). A load failure is a notification, never a traceback."""

    def load() -> None:
        from trntui.compare_runs import load_runs
        from trntui.errors import TrntuiError
        from trntui.tui.loader import in_app

        try:
            runs = load_runs([path], by_shapes=by_shapes, options=in_app(getattr(app, "load_options", None)))
        except TrntuiError as exc:
            app.call_from_thread(app.notify, f"compare: {safe_text(exc)}", severity="error", markup=False)
            return
        except Exception as exc:  # noqa: BLE001 - never take the app down
            app.call_from_thread(
                app.notify, f"compare: unexpected {type(exc).__name__}: {safe_text(exc)}", severity="error", markup=False
            )
            return
        screen = CompareScreen(runs, by_shapes=by_shapes, title=f"trntui compare · {path}", closable=True)
        app.call_from_thread(app.push_screen, screen)

    app.notify("loading every run to compare…", markup=False)
    app.run_worker(load, thread=True, exclusive=True, group="compare", exit_on_error=False)


KEY_SECTIONS = [("Compare view", CompareScreen)]
"""The compare view's keys, for docs/tui.md (trntui/tui/screens/__init__.py)."""


def open_screen(app: App) -> None:
    """`c` in the explorer: compare every run under the opened path."""
    open_compare(app, app.path)  # type: ignore[attr-defined]


def run_compare_app(runs: Sequence["ComparedRun"], *, paths: Sequence[str] = (), by_shapes: bool = False) -> int:
    title = "trntui compare · " + " ".join(paths) if paths else "trntui compare"
    CompareApp(runs, by_shapes=by_shapes, title=title).run()
    return 0


def compare_key_reference(app_class: type | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """The compare view's keys (`CompareScreen.BINDINGS`), then the keys of the app hosting it (`app_class`:
    the explorer or `CompareApp`) that still work there."""
    from trntui.tui.keys import key_reference

    section_list: list[tuple[str, type]] = list(KEY_SECTIONS)
    if app_class is not None:
        section_list.append(("Everywhere", app_class))
    return key_reference(section_list, shadowing=CompareScreen)
