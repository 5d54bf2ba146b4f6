"""The call-tree screen (`t` on the timeline or the ops table): the step under the cursor as a call tree (ops,
annotations, Python frames and nn.Module scopes merged by call path, with calls, inclusive and exclusive time),
its icicle graph and the Python stack / module path of the node under the cursor. Enter shows the node's events
on the timeline; Esc goes back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from trntui.textsafe import safe_text
from trntui.tui.widgets.calltree import CallTreeView, Icicle

if TYPE_CHECKING:
    from trntui.model.profile import Profile


class CallTreeScreen(Screen["list[int] | None"]):
    """Call tree above its icicle graph; dismissed with the chosen node's events (Enter) or None (Esc)."""

    BINDINGS = [
        Binding("escape,q", "back", "Back", id="calltree-back"),
        Binding("g", "toggle_icicle", "Icicle graph", id="calltree-icicle"),
    ]

    DEFAULT_CSS = """
    CallTreeScreen { layout: vertical; }
    CallTreeScreen #calltree-title { height: 1; background: $panel; padding: 0 1; }
    CallTreeScreen CallTreeView { height: 1fr; border-top: solid $accent; }
    CallTreeScreen Icicle { height: 40%; min-height: 5; border-top: solid $panel-lighten-2; }
    CallTreeScreen Icicle.-hidden { display: none; }
    """

    def __init__(self, profile: "Profile", root_event: int, focus_event: int = -1) -> None:
        super().__init__()
        self.profile = profile
        self.root_event = root_event
        self.focus_event = focus_event

    def compose(self) -> ComposeResult:
        yield Static(id="calltree-title", markup=False)
        yield CallTreeView(id="calltree-screen-tree")
        yield Icicle(id="icicle")
        yield Footer()

    @property
    def tree_view(self) -> CallTreeView:
        return self.query_one(CallTreeView)

    @property
    def icicle(self) -> Icicle:
        return self.query_one(Icicle)

    def on_mount(self) -> None:
        self.tree_view.show(self.profile, self.root_event, self.focus_event)
        self.tree_view.focus()

    @on(CallTreeView.CursorMoved)
    def _moved(self, message: CallTreeView.CursorMoved) -> None:
        view = self.tree_view
        if view.calltree is None or view.node < 0:
            return
        self.icicle.show(self.profile, view.calltree, view.node)
        self.query_one("#calltree-title", Static).update(Text(view.title))

    @on(CallTreeView.NodeChosen)
    def _chosen(self, message: CallTreeView.NodeChosen) -> None:
        self.dismiss(message.events)

    def action_toggle_icicle(self) -> None:
        self.icicle.toggle_class("-hidden")

    def action_back(self) -> None:
        self.dismiss(None)

    def text(self) -> str:
        """The screen's tree lines (tests)."""
        view = self.tree_view
        return "\n".join(safe_text(view.line_text(k)) for k in range(len(view.line_nodes)))
