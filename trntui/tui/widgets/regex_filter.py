"""The regex filter box of the ops pane and the compare view: one behaviour, written once.

Hidden (and disabled, so focus never lands on it) until `open()`. While typing, every valid pattern is posted as
`Applied` (live filtering) and an invalid one gets the `-invalid` class (the last valid pattern stays applied).
Enter on an invalid regex is an error notice; on a valid one it returns the focus to the pane the box filters
(`return_focus`, a selector on the same screen), hiding the box when the pattern is empty. Esc in the box, or
`clear_filter()`, empties it, posts `Cleared`, returns the focus and hides the box. The host only applies
patterns.
"""

from __future__ import annotations

import re

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class RegexFilterInput(Input):
    """A one-line regex filter (case-insensitive patterns) that validates as you type."""

    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=False)]

    class Applied(Message):
        """A valid pattern to filter by (`""`: no filter); posted on every valid edit and on Enter."""

        def __init__(self, filter_input: RegexFilterInput, pattern: str) -> None:
            super().__init__()
            self.filter_input = filter_input
            self.pattern = pattern

        @property
        def control(self) -> RegexFilterInput:
            return self.filter_input

    class Cleared(Message):
        """The box was emptied with Esc (or `clear_filter()`): drop the filter."""

        def __init__(self, filter_input: RegexFilterInput) -> None:
            super().__init__()
            self.filter_input = filter_input

        @property
        def control(self) -> RegexFilterInput:
            return self.filter_input

    def __init__(self, *, return_focus: str, placeholder: str = "regex on op names · Enter: apply · Esc: clear",
                 id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id, disabled=True)
        self.return_focus = return_focus
        """Selector (on this screen) of the pane that gets the focus back after Enter or Esc."""

    @staticmethod
    def error(pattern: str) -> re.error | None:
        """Why `pattern` is not a valid regex, or None."""
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            return exc
        return None

    def open(self, pattern: str = "") -> None:
        """Show the box holding `pattern` (the filter in force) and focus it."""
        self.disabled = False
        self.add_class("-active")
        self.value = pattern
        self.focus()

    def clear_filter(self) -> None:
        """Empty the box, drop the filter (`Cleared`), give the focus back and hide the box."""
        self.value = ""
        self.remove_class("-invalid")
        self.post_message(self.Cleared(self))
        self._done(hide=True)

    def action_clear_filter(self) -> None:
        self.clear_filter()

    def _done(self, hide: bool) -> None:
        self.screen.query_one(self.return_focus).focus()
        if hide:
            self.remove_class("-active")
            self.disabled = True

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if event.input is not self:
            return
        event.stop()
        if self.error(event.value) is not None:
            self.add_class("-invalid")
            return
        self.remove_class("-invalid")
        self.post_message(self.Applied(self, event.value))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if event.input is not self:
            return
        event.stop()
        exc = self.error(event.value)
        if exc is not None:
            self.notify(f"invalid regex {event.value!r}: {exc}", severity="error", markup=False)
            return
        self.remove_class("-invalid")
        self.post_message(self.Applied(self, event.value))
        self._done(hide=not event.value)
