"""A one-line question over the app (e.g. where to save a CSV): Enter returns the text, Esc returns None."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen["str | None"]):
    """`question` above an input holding `default`."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False, id="prompt-cancel")]

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical { width: 80%; max-width: 100; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    PromptScreen Input { border: none; height: 1; padding: 0; }
    """

    def __init__(self, question: str, default: str = "") -> None:
        super().__init__()
        self.question = question
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question), markup=False)
            yield Input(self.default, id="prompt-input")
            yield Static(Text("Enter: OK · Esc: cancel", style="dim"), markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question (e.g. replace an existing file): `y` answers yes; `n`, Esc or Enter answer no."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", show=False, id="confirm-yes"),
        Binding("n,escape,enter", "answer(False)", "No", show=False, id="confirm-no"),
    ]

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 80%; max-width: 100; height: auto; border: round $warning; background: $surface; padding: 0 1; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question), markup=False)
            yield Static(Text("y: yes · n / Esc: no", style="dim"), markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
