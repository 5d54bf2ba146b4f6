"""App-level messages posted by the load worker (workers never touch widgets; the App handles these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.widget import Widget

    from trntui.analysis.key_averages import OpTable
    from trntui.loaders.discover import Run
    from trntui.model.profile import Profile


@dataclass(frozen=True)
class LoadedRun:
    """What every pane is shown when a run has been loaded and analysed (trntui/tui/panes.py)."""

    name: str
    """The run's name (variant, rank, file)."""
    profile: "Profile"
    table: "OpTable | None"
    """key_averages over the events shown (`--steps` / `--window` restrict it); None while it is computed (only
    panes registered `before_table` are shown such a run)."""
    view: tuple[int, int] | None = None
    """Absolute [t0, t1) the timeline opens on (`--steps` / `--window`); None: fitted to the whole span."""
    origin: int = 0
    """Absolute ns that times are shown from (the start of the trace, or of the first selected step)."""


@dataclass
class LoadProgress(Message):
    """A load stage started (`step` of `total`), or moved on (`fraction` of it done, when it has a size)."""

    stage: str
    step: int
    total: int
    fraction: float | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


@dataclass
class LoadCancelled(Message):
    """The user cancelled the load (Esc); the worker stopped at its next chunk."""


@dataclass
class RunsFound(Message):
    """The path holds several runs and none was named: the user picks one."""

    runs: list["Run"]


@dataclass
class ProfileShown(Message):
    """The run's profile was read and its timeline rows built; its key_averages table is still being computed
    (`ProfileLoaded` follows). Panes that draw from the profile alone show it now."""

    run: "Run"
    profile: "Profile"
    view: tuple[int, int] | None = None
    """As `ProfileLoaded.view`."""


@dataclass
class ProfileLoaded(Message):
    """A run was loaded and analysed (key_averages, links, timeline rows are cached on the profile)."""

    run: "Run"
    runs: list["Run"]
    profile: "Profile"
    table: "OpTable"
    seconds: float
    extra: dict[str, Any] | None = None
    view: tuple[int, int] | None = None
    """Absolute [t0, t1) the timeline opens on (`--steps` / `--window`); None: fitted to the whole span."""
    subset: str = ""
    """What the ops table covers when not the whole profile, e.g. `steps 3-5: 1,234 events`."""
    cpu_seconds: float = 0.0
    """CPU time the load worker's thread spent (the load without waiting for a busy machine)."""
    header: str = ""
    """The header line (`app.describe`), made by the worker; "": the app makes it."""


@dataclass
class DepthsReady(Message):
    """The nesting of a big profile was computed after its first frame: the timeline can draw sub-rows."""

    profile: "Profile"


@dataclass
class LoadFailed(Message):
    """Loading failed; `reason` is one line for the user."""

    reason: str


class PaneTitleChanged(Message):
    """A pane's `title` changed (sort/filter, window/scale, chained event); the App shows it in the border."""

    def __init__(self, pane: "Widget") -> None:
        self.pane = pane
        """The widget whose `title` changed."""
        super().__init__()

    @property
    def control(self) -> "Widget":
        return self.pane
