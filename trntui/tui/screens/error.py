"""A load error: the one-line reason, never a traceback; closing it leaves the rest of the app usable."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from trntui.textsafe import safe_text


class ErrorScreen(ModalScreen[None]):
    """Shows why a profile could not be loaded."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close", id="error-close")]

    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical {
        width: 80%; max-width: 100; height: auto;
        border: round $error; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Could not load the profile", style="bold"), markup=False)
            yield Static(Text(safe_text(self.reason)), id="error-reason", markup=False)
            yield Static(Text("Esc/Enter: close   r: pick another run   q (again): quit", style="dim"), markup=False)
