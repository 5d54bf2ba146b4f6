"""The Critical path screen (`P`): what bounds the longest step (trntui.analysis.critical_path; docs/overview.md
"Critical path"). The breakdown by bound type as a bar, the path's length against the step, the events on the
path ranked by their time on it, the longest waits and the notes on what could not be linked. Enter on an event
closes the screen and shows it on the timeline; `m` on the timeline marks every event of this path.

The path is computed in a thread worker that only posts a message (on a big trace it takes a moment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:
    from trntui.analysis.critical_path import CriticalPath
    from trntui.model.profile import Profile

TOP_EVENTS = 200
"""Events the table lists (the path of a big step has thousands)."""

BOUND_STYLES = {
    "cpu_bound": "bold #4e9ad4", "framework_cpu": "bold #4e9ad4",
    "data_loading": "bold #c7a000",
    "gpu_compute_bound": "bold #3fa34d", "neuroncore_compute": "bold #3fa34d",
    "gpu_communication_bound": "bold #a35fc9", "neuroncore_communication": "bold #a35fc9",
    "gpu_kernel_kernel_overhead": "bold #d4704e", "neuroncore_idle": "bold #d4704e",
    "gpu_kernel_launch_overhead": "bold #d44e8a", "runtime_queue_delay": "bold #d44e8a",
    "dispatch_overhead": "bold #e0a050", "runtime_overhead": "bold #7fb8b0",
}


def breakdown_text(cp: "CriticalPath", width: int) -> Text:
    """One bar of the breakdown (each bound type's share of the path), then a legend line per bound type."""
    total = sum(cp.breakdown_ns.values())
    shown = [b for b in cp.bounds if cp.breakdown_ns.get(b)]
    text = Text()
    if not total:
        text.append("The path is empty: nothing to break down.")
        return text
    width = max(width, 10)
    cells = [max(1, round(width * cp.breakdown_ns[b] / total)) for b in shown]
    while sum(cells) > width:
        cells[cells.index(max(cells))] -= 1
    for b, n in zip(shown, cells):
        text.append("█" * n, style=BOUND_STYLES.get(b, "bold"))
    pct = cp.breakdown_pct()
    for b in shown:
        text.append("\n")
        text.append("█ ", style=BOUND_STYLES.get(b, "bold"))
        text.append(f"{b} {pct[b]:.1f}% · {cp.breakdown_ns[b] / 1000:,.1f} us")
    return text


class CriticalPathScreen(Screen[int | None]):
    """Dismissed with an event index (show it on the timeline) or None."""

    HELP = "Critical path: what bounds the longest step, by bound type, and the events on the path."

    BINDINGS = [
        Binding("escape,P", "close", "Back", id="critical-path-close"),
        Binding("enter", "choose", "Show on the timeline", id="critical-path-show"),
    ]

    DEFAULT_CSS = """
    CriticalPathScreen { layout: vertical; }
    CriticalPathScreen #cp-header { height: auto; background: $panel; padding: 0 1; }
    CriticalPathScreen #cp-bar { height: auto; padding: 0 1; margin: 1 0 0 0; }
    CriticalPathScreen #cp-events { height: 1fr; border-top: solid $panel-lighten-2; }
    CriticalPathScreen #cp-notes { height: auto; max-height: 8; color: $text-muted; padding: 0 1; }
    """

    class Ready(Message):
        def __init__(self, cp: "CriticalPath") -> None:
            super().__init__()
            self.cp = cp

    class Failed(Message):
        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    def __init__(self, profile: "Profile", run_name: str = "") -> None:
        super().__init__()
        self.profile = profile
        self.run_name = run_name
        self.cp: CriticalPath | None = None
        self.row_events: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("Critical path · computing…"), id="cp-header")
        yield Static(Text(""), id="cp-bar")
        yield DataTable(id="cp-events", cursor_type="row", zebra_stripes=True)
        yield Static(Text(""), id="cp-notes")
        yield Footer()

    @property
    def table(self) -> DataTable:
        return self.query_one("#cp-events", DataTable)

    def on_mount(self) -> None:
        self.table.focus()
        self.compute()

    @work(thread=True, exclusive=True, group="critical-path", exit_on_error=False)
    def compute(self) -> None:
        from trntui.analysis.critical_path import step_path
        from trntui.errors import TrntuiError

        try:
            self.post_message(self.Ready(step_path(self.profile)))
        except TrntuiError as exc:
            self.post_message(self.Failed(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a notice, never a traceback
            self.post_message(self.Failed(f"unexpected {type(exc).__name__}: {exc}"))

    @on(Ready)
    def _ready(self, message: Ready) -> None:
        from trntui.report.critical_path import headline

        cp = self.cp = message.cp
        head = headline(cp)
        if self.run_name:
            head = f"{self.run_name} · {head}"
        floor = cp.floor_ns()
        head += f" · floor {floor / 1000:,.1f} us"
        self.query_one("#cp-header", Static).update(Text(safe_text(head)))
        self.query_one("#cp-bar", Static).update(breakdown_text(cp, (self.size.width or 80) - 2))
        t = self.table
        t.clear(columns=True)
        t.add_columns("Event", "On path", "% path", "Duration", "Bound type", "Lane")
        self.row_events = []
        for ev in cp.top_events(TOP_EVENTS):
            share = 100.0 * ev.ns / cp.length_ns if cp.length_ns else 0.0
            # Text cells: a str cell would be read as Textual markup, and names come from the trace
            t.add_row(Text(truncate(safe_text(ev.name), 44)), Text(f"{ev.ns / 1000:,.1f} us", justify="right"),
                      Text(f"{share:.1f}%", justify="right"), Text(f"{ev.duration_ns / 1000:,.1f} us", justify="right"),
                      Text(ev.bound), Text(truncate(safe_text(ev.lane), 36)))
            self.row_events.append(ev.event)
        t.border_title = Text(f"Events on the path · {len(cp.on_path):,} events · Enter: show on the timeline")
        notes = [f"Note: {safe_text(n)}" for n in cp.notes]
        waits = [s for s in cp.stretches(3) if s.ns]
        if waits:
            notes.insert(0, "Longest waits: " + "; ".join(
                f"{s.ns / 1000:,.1f} us at +{(s.start - cp.start) / 1000:,.1f} us ({', '.join(sorted(s.bounds))})"
                for s in waits))
        self.query_one("#cp-notes", Static).update(Text("\n".join(notes)))

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.query_one("#cp-header", Static).update(Text(f"Critical path · {safe_text(message.reason)}"))
        self.notify(message.reason, severity="warning", markup=False)

    @on(DataTable.RowSelected, "#cp-events")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self._choose(event.cursor_row)

    def action_choose(self) -> None:
        self._choose(self.table.cursor_row)

    def _choose(self, row: int) -> None:
        if 0 <= row < len(self.row_events):
            self.dismiss(self.row_events[row])

    def action_close(self) -> None:
        self.dismiss(None)


KEY_SECTIONS = [("Critical path (P)", CriticalPathScreen)]
"""The screen's keys, for the help screen and docs/tui.md (trntui/tui/screens/__init__.py)."""


def open_screen(app: Any) -> None:
    """`P` in the explorer: the critical path of the longest step; an event chosen there is shown on the
    timeline."""
    if app.profile is None:
        app.notify("No profile loaded yet", severity="warning")
        return

    def chosen(event: int | None) -> None:
        if event is not None and event >= 0:
            app.show_event(event)
        else:
            app.chain.redraw()  # the chain shown before now says whether its op is on the path

    app.push_screen(CriticalPathScreen(app.profile, app.run_name or ""), chosen)
