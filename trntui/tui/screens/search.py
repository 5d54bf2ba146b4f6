"""The timeline's search prompt (`/`): a regex on event names, with the number of matching events as you type."""

from __future__ import annotations

import re
from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from trntui.textsafe import safe_text


class SearchPrompt(ModalScreen["str | None"]):
    """One line at the bottom of the screen; Enter returns a valid pattern, Esc returns None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False, id="search-cancel")]

    DEFAULT_CSS = """
    SearchPrompt { align: center bottom; background: $background 30%; }
    SearchPrompt > Vertical { height: auto; width: 100%; background: $surface; border-top: solid $accent; }
    SearchPrompt #search-count { height: 1; padding: 0 1; color: $text-muted; }
    SearchPrompt #search-input { border: none; height: 1; padding: 0 1; }
    SearchPrompt #search-input.-invalid { color: $text-error; }
    """

    def __init__(self, pattern: str, count: Callable[[str], int]) -> None:
        super().__init__()
        self.pattern = pattern
        self.count = count
        """Number of events whose name matches a (valid) pattern."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="search-count", markup=False)
            yield Input(
                self.pattern,
                placeholder="regex on event names (case-insensitive) · Enter: find · Esc: cancel",
                id="search-input",
            )

    def on_mount(self) -> None:
        self._update(self.pattern)
        self.query_one(Input).focus()

    def _update(self, pattern: str) -> bool:
        """Show how many events match; False when the pattern is not a valid regex."""
        box = self.query_one(Input)
        line = self.query_one("#search-count", Static)
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            box.add_class("-invalid")
            line.update(Text(f"invalid regex: {safe_text(str(exc))}"))
            return False
        box.remove_class("-invalid")
        if pattern:
            n = self.count(pattern)
            line.update(Text(f"/{safe_text(pattern)}/ · {n:,} event{'s' if n != 1 else ''} match · Enter: go to the next one"))
        else:
            line.update(Text("search event names on the timeline (regex); n / N then walk the matches"))
        return True

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._update(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._update(event.value):
            self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
