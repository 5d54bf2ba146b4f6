"""A pane is one widget module + one `PANES` line (trntui/tui/panes.py): a stand-in pane registered that way is
composed, shown every loaded run, focusable with Tab, titled, and its keys are in the help and the palette."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

import trntui.tui.app as app_module
import trntui.tui.panes as panes
from trntui.tui.keys import key_reference
from trntui.tui.keys import sections as explorer_sections
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.panes import LoadedRun, Pane, PaneSpec

from .conftest import opened


class EventCountPane(Widget, can_focus=True):
    """The stand-in: how many events the loaded run has, and how many times `x` was pressed."""

    BINDINGS = [Binding("x", "poke", "Poke the stand-in", id="standin-poke")]
    DEFAULT_CSS = "EventCountPane { height: 3; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events = -1
        self.pokes = 0

    @property
    def title(self) -> str:
        return f"Stand-in · {self.events:,} events" if self.events >= 0 else "Stand-in"

    def show_run(self, run: LoadedRun) -> None:
        self.events = len(run.profile)
        self.refresh()
        self.post_message(PaneTitleChanged(self))

    def action_poke(self) -> None:
        self.pokes += 1
        self.refresh()

    def render(self) -> Text:
        return Text(f"{self.events} events in {self.app.run_name}; poked {self.pokes}")


def register(monkeypatch) -> None:
    """The one line: the app, the help and the palette read `PANES`."""
    registry = [*panes.PANES, PaneSpec("standin", "Stand-in", EventCountPane)]
    monkeypatch.setattr(panes, "PANES", registry)
    monkeypatch.setattr(app_module, "PANES", registry)


async def test_a_registered_pane_is_composed_shown_focused_and_documented(monkeypatch, corpus_dir) -> None:
    register(monkeypatch)
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(100, 40)) as (app, pilot):
        pane = app.query_one("#standin", EventCountPane)
        assert isinstance(pane, Pane) and pane.has_class("pane")
        assert pane.events == len(app.profile) > 0
        assert str(pane.border_title) == f"Stand-in · {len(app.profile):,} events"
        assert pane.render_line(0).text.startswith(f"{len(app.profile)} events in ")
        for _ in range(3):  # ops → timeline → chain → the stand-in (Tab order is PANES order)
            await pilot.press("tab")
            await pilot.pause()
        assert app.focused is pane
        await pilot.press("x")
        await pilot.pause()
        assert pane.pokes == 1
        titles = [title for title, _, _ in app.palette_commands()]
        assert "Standin: Poke the stand-in" in titles
        sections = dict(key_reference(explorer_sections(app_module.TrntuiApp)))
        assert ("x", "Poke the stand-in") in sections["Stand-in"]
