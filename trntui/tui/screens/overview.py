"""The Overview screen (`o`): why the step is slow. Step-time breakdown bars, device metrics, the kernel table,
recommendations and the memory curve of the loaded run (trntui.analysis.overview).

The figures are computed in a thread worker (the kernels' args of a big trace take a moment the first time) that
only posts a message; the screen fills its panels when it arrives. Enter on a kernel row closes the screen with
that row's longest instance, which the app shows on the timeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from trntui.textsafe import safe_text
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.kernel_table import KernelTableView
from trntui.tui.widgets.overview_panels import OverviewPanel
from trntui.tui.widgets.regex_filter import RegexFilterInput

if TYPE_CHECKING:
    from trntui.analysis.overview import Overview
    from trntui.model.profile import Profile


class OverviewScreen(Screen[int | None]):
    """Dismissed with an event index (show it on the timeline) or None."""

    HELP = "Overview: step-time breakdown, device metrics, kernels, recommendations, memory."

    BINDINGS = [
        Binding("escape,o", "close", "Back", id="overview-close"),
        Binding("tab", "focus_next", "Next panel", show=False),
    ]

    DEFAULT_CSS = """
    OverviewScreen { layout: vertical; }
    OverviewScreen #ov-header { height: 1; background: $panel; padding: 0 1; }
    OverviewScreen #ov-top { height: auto; max-height: 45%; }
    OverviewScreen #ov-bars-scroll { width: 3fr; height: auto; max-height: 100%; }
    OverviewScreen #ov-metrics-scroll { width: 2fr; height: auto; max-height: 100%; }
    OverviewScreen #ov-kernels-pane { height: 1fr; }
    OverviewScreen #ov-kernels { height: 1fr; min-height: 5; border-top: solid $panel-lighten-2;
        border-title-align: left; border-title-color: $text-muted; background: $surface; }
    OverviewScreen #ov-kernels:focus { border-top: solid $accent; border-title-color: $text; }
    OverviewScreen #ov-bottom { height: auto; max-height: 35%; border-top: solid $panel-lighten-2; }
    OverviewScreen #ov-recs-scroll { width: 3fr; height: auto; max-height: 100%; }
    OverviewScreen #ov-memory-scroll { width: 2fr; height: auto; max-height: 100%; }
    OverviewScreen VerticalScroll { scrollbar-size-vertical: 1; }
    OverviewScreen #ov-filter { display: none; height: 1; border: none; padding: 0 1; }
    OverviewScreen #ov-filter.-active { display: block; }
    OverviewScreen #ov-filter.-invalid { color: $text-error; }
    """

    class Ready(Message):
        def __init__(self, overview: "Overview") -> None:
            super().__init__()
            self.overview = overview

    class Failed(Message):
        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    def __init__(self, profile: "Profile", run_name: str = "", steps: str | None = None) -> None:
        super().__init__()
        self.profile = profile
        self.run_name = run_name
        self.steps_spec = steps
        self.overview: Overview | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Overview · computing…"), id="ov-header", markup=False)
        with Horizontal(id="ov-top"):
            with VerticalScroll(id="ov-bars-scroll"):
                yield OverviewPanel("breakdown", id="ov-bars")
            with VerticalScroll(id="ov-metrics-scroll"):
                yield OverviewPanel("metrics", id="ov-metrics")
        with Vertical(id="ov-kernels-pane"):
            yield KernelTableView(id="ov-kernels")
            yield RegexFilterInput(id="ov-filter", return_focus="#ov-kernels", placeholder="regex on kernel / op names · Enter: apply · Esc: clear")
        with Horizontal(id="ov-bottom"):
            with VerticalScroll(id="ov-recs-scroll"):
                yield OverviewPanel("recommendations", id="ov-recs")
            with VerticalScroll(id="ov-memory-scroll"):
                yield OverviewPanel("memory", id="ov-memory")
        yield Footer()

    @property
    def kernels(self) -> KernelTableView:
        return self.query_one("#ov-kernels", KernelTableView)

    def on_mount(self) -> None:
        self.kernels.focus()
        self.kernels.border_title = Text("Kernels")
        self.compute()

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def compute(self) -> None:
        """Compute the overview off the UI thread; posts `Ready` or `Failed` only."""
        from trntui.analysis.overview import overview
        from trntui.errors import TrntuiError

        try:
            self.post_message(self.Ready(overview(self.profile, self.steps_spec)))
        except TrntuiError as exc:
            self.post_message(self.Failed(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a notice, never a traceback
            self.post_message(self.Failed(f"unexpected {type(exc).__name__}: {exc}"))

    @on(Ready)
    def _ready(self, message: Ready) -> None:
        ov = self.overview = message.overview
        total = ov.average_ns.get("Total", 0.0)
        device = ov.backend or "CPU"
        what = f"steps {ov.selected}" if ov.selected else f"{len(ov.steps)} step{'s' if len(ov.steps) != 1 else ''}"
        from trntui.units import format_us

        head = f"Overview · {self.run_name} · {device} · {what} · avg step {format_us(total)}" if self.run_name else \
            f"Overview · {device} · {what} · avg step {format_us(total)}"
        self.query_one("#ov-header", Static).update(Text(safe_text(head)))
        for pid in ("#ov-bars", "#ov-metrics", "#ov-recs", "#ov-memory"):
            self.query_one(pid, OverviewPanel).show(ov)
        self.kernels.set_tables(ov.kernel_tables)
        self.kernels.border_title = Text(self.kernels.title)
        if ov.kernel_tables is None or not ov.kernel_tables.by_name:  # CPU only: room for the rest
            self.query_one("#ov-kernels-pane").display = False

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.query_one("#ov-header", Static).update(Text(f"Overview · error: {safe_text(message.reason)}"))
        self.notify(message.reason, severity="error", markup=False)

    @on(PaneTitleChanged)
    def _title(self, message: PaneTitleChanged) -> None:
        message.stop()
        message.pane.border_title = Text(message.pane.title)

    @on(KernelTableView.KernelChosen)
    def _chosen(self, message: KernelTableView.KernelChosen) -> None:
        self.dismiss(message.event)

    @on(KernelTableView.FilterRequested)
    def _filter_requested(self) -> None:
        pattern = self.kernels.pattern.pattern if self.kernels.pattern is not None else ""
        self.query_one("#ov-filter", RegexFilterInput).open(pattern)

    @on(RegexFilterInput.Applied, "#ov-filter")
    def _filter_applied(self, event: RegexFilterInput.Applied) -> None:
        self.kernels.set_filter(event.pattern)

    @on(RegexFilterInput.Cleared, "#ov-filter")
    def _filter_cleared(self) -> None:
        self.kernels.set_filter("")

    def action_close(self) -> None:
        self.dismiss(None)


KEY_SECTIONS = [("Overview (o)", OverviewScreen), ("Overview: kernels", KernelTableView)]
"""The overview's keys, for the help screen and docs/tui.md (trntui/tui/screens/__init__.py)."""


def open_screen(app: Any) -> None:
    """`o` in the explorer: why the step is slow (breakdown, device metrics, kernels, recommendations); a kernel
    chosen there is shown on the timeline."""
    if app.profile is None:
        app.notify("No profile loaded yet", severity="warning")
        return

    def chosen(event: int | None) -> None:
        if event is not None and event >= 0:
            app.show_event(event)

    app.push_screen(OverviewScreen(app.profile, app.run_name or "", app.steps_spec), chosen)
