"""The explorer's panes: what the app asks of a pane (`Pane`) and the ONE list of them (`PANES`).

The app composes the panes in `PANES` order (which is also the Tab order), shows every loaded run in each, sets
their loading indicator and border title, lists their keys in the palette, the help screen and docs/tui.md
(trntui/tui/keys.py), all by iterating `PANES`. Adding a pane:

1. write the widget (its own module under tui/widgets/): a `title` (the border title; post
   `PaneTitleChanged(self)` when it changes), `BINDINGS` with descriptions, and `show_run(run: LoadedRun)`;
2. add one `PaneSpec` line to `PANES` below (`before_table=True` when it draws from the profile alone: it is then
   shown the run as soon as the profile is read, with `run.table` None, while the key_averages table is still
   being computed, and not shown it again once the table is there).

Styles: every pane gets the `pane` CSS class (border, focus colour; trntui.tcss); size and place it in the
stylesheet by its id, or in the widget's DEFAULT_CSS. Panes talk to each other through messages that the app
handles (e.g. `OpTableView.OpSelected` → timeline and chain); a pane that only shows the run needs no app code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

from textual import on
from textual.containers import Vertical
from textual.widget import Widget

from trntui.tui.messages import LoadedRun
from trntui.tui.widgets.calltree import CallTreeView
from trntui.tui.widgets.chain import ChainView
from trntui.tui.widgets.op_table import OpTableView
from trntui.tui.widgets.regex_filter import RegexFilterInput
from trntui.tui.widgets.timeline import Timeline


@runtime_checkable
class Pane(Protocol):
    """What the app asks of a pane widget (besides being a focusable Textual widget with BINDINGS)."""

    loading: bool
    """Textual's loading indicator: on while a run loads."""

    @property
    def title(self) -> str:
        """The border title (what the pane shows: sort and filter, window and scale, the chained event...)."""
        ...

    def show_run(self, run: LoadedRun) -> None:
        """A run was loaded: show it."""
        ...


def same_view(a: LoadedRun | None, b: LoadedRun | None) -> bool:
    """Whether `a` and `b` show the same profile the same way (the table aside): a pane shown `a` before the
    table arrived needs nothing more for `b`."""
    return (a is not None and b is not None and a.profile is b.profile and a.name == b.name and a.view == b.view
            and a.origin == b.origin)


class OpsPane(Vertical):
    """The ops table with its regex filter box under it (`/` opens it; Enter applies, Esc clears)."""

    def __init__(self) -> None:
        super().__init__(OpTableView(id="ops"), RegexFilterInput(id="filter", return_focus="#ops"), id="ops-pane")

    @on(OpTableView.FilterRequested)
    def _filter_requested(self, event: OpTableView.FilterRequested) -> None:
        event.stop()
        ops = self.query_one("#ops", OpTableView)
        self.query_one("#filter", RegexFilterInput).open(ops.pattern.pattern if ops.pattern is not None else "")

    @on(RegexFilterInput.Applied, "#filter")
    def _filter_applied(self, event: RegexFilterInput.Applied) -> None:
        event.stop()
        self._filter(event.pattern)

    @on(RegexFilterInput.Cleared, "#filter")
    def _filter_cleared(self, event: RegexFilterInput.Cleared) -> None:
        event.stop()
        self._filter("")

    def _filter(self, pattern: str) -> None:
        ops = self.query_one("#ops", OpTableView)
        # run as the table's own work: a message it posts from a call made here would stop bubbling at this
        # container (Textual stops a message at its sender's parent), and the app would miss its new title
        ops.call_later(ops.set_filter, pattern)


@dataclass(frozen=True)
class PaneSpec:
    """One pane of the explorer."""

    id: str
    """The pane widget's DOM id (`#ops`); `z` maximizes it, the palette calls it `Ops: <action>`."""
    section: str
    """Its section in the help screen and docs/tui.md."""
    widget: type[Widget]
    """The pane's widget class (its BINDINGS are the pane's keys)."""
    compose: Callable[[], Widget] | None = None
    """What the app composes for the pane when not just `widget(id=id)` (e.g. a container around it)."""
    before_table: bool = False
    """It draws from the profile alone (not the key_averages table): shown the run as soon as the profile is read,
    while the table is computed (a big trace's loader process spends ~1 s on it), so that when the table comes
    only the panes that need it are drawn."""

    def make(self) -> Widget:
        return self.compose() if self.compose is not None else self.widget(id=self.id)


PANES: list[PaneSpec] = [
    PaneSpec("ops", "Ops table", OpTableView, OpsPane),
    PaneSpec("timeline", "Timeline", Timeline, before_table=True),
    PaneSpec("chain", "Chain", ChainView, before_table=True),
    PaneSpec("calltree", "Call tree", CallTreeView, before_table=True),
]
"""Every pane of the explorer, in layout and Tab order."""
