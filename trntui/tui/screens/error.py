"""A load error: the one-line reason, never a traceback; closing it leaves the rest of the app usable."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from trntui.textsafe import safe_text

ERROR_EXIT_CODE = 2
"""What `trntui open` exits with when quit from a load error (the CLI's code for bad input)."""


def error_hints(several_runs: bool) -> str:
    """The keys line under the reason: only keys that do something here (`r` only when there is another run)."""
    keys = ["Esc/Enter: close"]
    if several_runs:
        keys.append("r: pick another run")
    keys.append(f"q: quit (exit code {ERROR_EXIT_CODE})")
    return "   ".join(keys)


class ErrorScreen(ModalScreen[None]):
    """Shows why a profile could not be loaded."""

    BINDINGS = [
        Binding("escape,enter", "dismiss", "Close", id="error-close"),
        Binding("r", "pick_run", "Pick another run", id="error-pick-run"),
        Binding("q", "quit_error", "Quit", id="error-quit"),
    ]

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

    def several_runs(self) -> bool:
        return len(getattr(self.app, "runs", ())) > 1

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Could not load the profile", style="bold"), markup=False)
            yield Static(Text(safe_text(self.reason)), id="error-reason", markup=False)
            yield Static(Text(error_hints(self.several_runs()), style="dim"), id="error-keys", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pick_run":
            return self.several_runs()
        return True

    def action_pick_run(self) -> None:
        self.dismiss()
        self.app.call_later(self.app.run_action, "pick_run")

    def action_quit_error(self) -> None:
        self.app.exit(return_code=ERROR_EXIT_CODE)
