"""Pick one run when a directory holds several (variants of `trntui profile`, ranks)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from trntui.textsafe import safe_text


class RunPicker(ModalScreen["str | None"]):
    """An OptionList of run names; Enter opens one, Escape keeps the current one."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="runs-cancel")]

    DEFAULT_CSS = """
    RunPicker { align: center middle; }
    RunPicker > Vertical {
        width: 80%; max-width: 90; height: auto; max-height: 80%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    RunPicker OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, names: list[str], current: str | None = None) -> None:
        super().__init__()
        self.names = names
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"{len(self.names)} runs here; pick one (Enter), Esc to cancel"), markup=False)
            yield OptionList(*[Option(Text(safe_text(n)), id=str(k)) for k, n in enumerate(self.names)], id="run-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.names:
            options.highlighted = self.names.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.names[int(event.option.id or 0)])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
