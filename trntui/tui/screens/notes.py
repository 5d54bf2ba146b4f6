"""The notes screen (`!`): what the CLI prints under its table, in the app. The ops row under the cursor's
surprising numbers first (the cells marked `!`), then every note of the load: skipped records, truncation,
link rules, torch's rules that make numbers look wrong (`report/summary.footer_lines`, the CLI's own lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from trntui.textsafe import safe_text

if TYPE_CHECKING:
    from trntui.analysis.key_averages import OpTable
    from trntui.model.profile import Profile


def notes_text(profile: "Profile | None", table: "OpTable | None", row: int = -1) -> Text:
    """The notes as styled text: the surprises of table row `row` (if any), then the CLI's footer lines."""
    text = Text()
    text.append("Notes", style="bold")
    text.append("   (esc, q or ! closes)\n")
    if profile is None:
        text.append("\nNo profile is loaded.\n")
        return text
    if table is not None and row >= 0:
        from trntui.analysis.surprises import of_row, surprises

        mine = of_row(surprises(profile, table), row)
        if mine:
            text.append(f"\nThe numbers marked ! on {safe_text(table.name[row])}\n", style="bold underline")
            for s in mine:
                text.append(f"  {safe_text(s.note)}\n")
    lines = load_notes(profile, table)
    text.append("\nWhat the CLI says under the table\n", style="bold underline")
    if not lines:
        text.append("  nothing: no records skipped, no notes\n")
    for line in lines:
        text.append(f"  {safe_text(line)}\n")
    return text


def load_notes(profile: "Profile", table: "OpTable | None") -> list[str]:
    """The lines `trntui summary` prints under its table (the footer aside), for this profile and table."""
    from trntui.report.summary import footer_lines

    if table is not None:
        return footer_lines(profile, table)
    lines = []
    if profile.meta.skipped:
        parts = ", ".join(f"{v} {k}" for k, v in profile.meta.skipped.items())
        lines.append(f"Skipped {profile.meta.skipped_total} input record(s): {parts}")
    lines += [f"Note: {n}" for n in profile.meta.notes]
    return lines


class NotesScreen(ModalScreen[None]):
    """A scrollable list of the loaded run's notes over the app."""

    BINDINGS = [
        Binding("escape,q,exclamation_mark", "dismiss", "Close", id="notes-close"),
        Binding("down,j", "scroll('down')", "Down", show=False, id="notes-down"),
        Binding("up,k", "scroll('up')", "Up", show=False, id="notes-up"),
    ]

    DEFAULT_CSS = """
    NotesScreen { align: center middle; }
    NotesScreen > VerticalScroll {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, profile: "Profile | None", table: "OpTable | None", row: int = -1) -> None:
        super().__init__()
        self.profile = profile
        self.table = table
        self.row = row

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="notes-scroll"):
            yield Static(notes_text(self.profile, self.table, self.row), id="notes-text", markup=False)

    def action_scroll(self, direction: str) -> None:
        scroll = self.query_one("#notes-scroll", VerticalScroll)
        if direction == "down":
            scroll.scroll_down(animate=False)
        else:
            scroll.scroll_up(animate=False)


class TextScreen(ModalScreen[None]):
    """A titled text over the app (an op's or a kernel's full name); Esc, q or Enter closes it."""

    BINDINGS = [Binding("escape,q,enter,f", "dismiss", "Close", id="text-close")]

    DEFAULT_CSS = """
    TextScreen { align: center middle; }
    TextScreen > VerticalScroll {
        width: 90%; max-width: 120; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.heading = title
        self.body = body

    def compose(self) -> ComposeResult:
        text = Text()
        text.append(self.heading, style="bold")
        text.append("   (esc, q or enter closes)\n\n")
        text.append(self.body)
        with VerticalScroll(id="text-scroll"):
            yield Static(text, id="text-body", markup=False)
