"""The help screen (`?`): every key, generated from the BINDINGS so it cannot drift from the code (the explorer's
panes, or the compare view's keys when `?` is pressed there)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KeyReference = list[tuple[str, list[tuple[str, str]]]]


def help_text(reference: KeyReference, title: str = "trntui keys") -> Text:
    """The key list as styled text, one section per pane (`reference`: trntui/tui/keys.py `key_reference`)."""
    text = Text()
    text.append(title, style="bold")
    text.append("   (esc, q or ? closes)\n")
    for section, entries in reference:
        text.append(f"\n{section}\n", style="bold underline")
        for keys, description in entries:
            text.append(f"  {keys:<22}", style="bold")
            text.append(f"{description}\n")
    return text


class HelpScreen(ModalScreen[None]):
    """A scrollable key list over the app: `reference`, the explorer's keys or a screen's (e.g. the compare
    view's)."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help-close"),
        Binding("down,j", "scroll('down')", "Down", show=False),
        Binding("up,k", "scroll('up')", "Up", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, reference: KeyReference, title: str = "trntui keys") -> None:
        super().__init__()
        self.reference = reference
        self.heading = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Static(help_text(self.reference, self.heading), id="help-text", markup=False)

    def action_scroll(self, direction: str) -> None:
        scroll = self.query_one("#help-scroll", VerticalScroll)
        if direction == "down":
            scroll.scroll_down(animate=False)
        else:
            scroll.scroll_up(animate=False)
