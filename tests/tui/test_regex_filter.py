"""The regex filter box shared by the ops pane and the compare view (trntui/tui/widgets/regex_filter.py)."""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from trntui.tui.widgets.regex_filter import RegexFilterInput


class Host(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        yield DataTable(id="pane")
        yield RegexFilterInput(id="box", return_focus="#pane")

    @on(RegexFilterInput.Applied, "#box")
    def _applied(self, event: RegexFilterInput.Applied) -> None:
        self.events.append(("applied", event.pattern))

    @on(RegexFilterInput.Cleared, "#box")
    def _cleared(self) -> None:
        self.events.append(("cleared", ""))


async def test_validates_live_applies_valid_patterns_and_clears_on_escape() -> None:
    app = Host()
    async with app.run_test() as pilot:
        box = app.query_one("#box", RegexFilterInput)
        pane = app.query_one("#pane")
        assert box.disabled and not box.has_class("-active")
        box.open("ad")
        await pilot.pause()
        assert app.focused is box and box.has_class("-active") and not box.disabled
        await pilot.press("end", "d", "(")  # (focus selects the text: End keeps it)
        await pilot.pause()
        assert box.has_class("-invalid")
        assert app.events[-1] == ("applied", "add")  # the invalid "add(" is never applied
        await pilot.press("enter")
        await pilot.pause()
        assert any("invalid regex 'add('" in n.message for n in app._notifications)
        assert app.focused is box
        await pilot.press("backspace", "enter")
        await pilot.pause()
        assert not box.has_class("-invalid") and app.events[-1] == ("applied", "add")
        assert app.focused is pane and box.has_class("-active")  # a pattern in force: the box stays shown
        box.open("add")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert ("cleared", "") in app.events and box.value == ""
        assert app.focused is pane and not box.has_class("-active") and box.disabled


async def test_enter_on_empty_pattern_hides_the_box() -> None:
    app = Host()
    async with app.run_test() as pilot:
        box = app.query_one("#box", RegexFilterInput)
        box.open("")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.events[-1] == ("applied", "")
        assert app.focused is app.query_one("#pane") and not box.has_class("-active") and box.disabled
