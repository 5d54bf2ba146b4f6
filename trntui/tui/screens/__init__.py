"""Screens of the explorer: the feature screens one key opens (`SCREENS`), and the modal helpers (help, run
picker, load error, search, instances) the app and panes push themselves.

A feature screen is one module here (e.g. `screens/compare.py`) that provides

- `open_screen(app)`: push the screen (or start a worker that pushes it when its data is ready); a load or an
  analysis never runs on the UI thread;
- `available(app) -> bool` (optional): the conditions on its key that need the module itself (e.g. device: not
  from its own screens); the footer and the palette leave the key out when it says no. What needs nothing from
  the module (compare needs two runs) is the spec line's `ready` instead, so that asking does not import it;
- `KEY_SECTIONS` (optional): `[(section title, class with BINDINGS), ...]` of the screen's own keys, listed
  in docs/tui.md (trntui/tui/keys.py);

and ONE `ScreenSpec` line in `SCREENS` below: the app binds its key (footer, help, palette and docs follow).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable


@dataclass(frozen=True)
class ScreenSpec:
    """A screen the explorer opens with one key."""

    id: str
    """Binding id and the `open_screen` action's argument (`open_screen('compare')`)."""
    key: str
    """Its key (Textual key names, comma-separated alternatives)."""
    description: str
    """What the footer, help screen and palette call it."""
    module: str
    """The module that opens it (imported on first use, so the explorer starts without it)."""
    ready: Callable[[Any], bool] | None = None
    """Whether its key can work now, asked without importing `module`: the footer asks on every bindings change
    from the first frame on, and importing the four screens' modules then took ~0.1-0.2 s of a core from the
    decode of a big trace. While `module` is not imported this is the whole answer (the module's own
    `available` can only add conditions on its screens, none of which exists yet). None: import and ask it."""

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def open(self, app: Any) -> None:
        self.load().open_screen(app)

    def available(self, app: Any) -> bool:
        if self.ready is not None:
            if not self.ready(app):
                return False
            module = sys.modules.get(self.module)
            if module is None:
                return True
        else:
            module = self.load()
        check = getattr(module, "available", None)
        return True if check is None else bool(check(app))

    def key_sections(self) -> list[tuple[str, type]]:
        return list(getattr(self.load(), "KEY_SECTIONS", []))


def _several_runs(app: Any) -> bool:
    return len(getattr(app, "runs", ())) > 1


def _neuron_profile(app: Any) -> bool:
    profile = getattr(app, "profile", None)
    return profile is not None and profile.meta.device_kind == "neuron"


SCREENS: list[ScreenSpec] = [
    ScreenSpec("compare", "c", "Compare runs", "trntui.tui.screens.compare", ready=_several_runs),
    ScreenSpec("overview", "o", "Overview", "trntui.tui.screens.overview", ready=lambda app: True),
    ScreenSpec("device", "D", "Device view", "trntui.tui.screens.device", ready=_neuron_profile),
    ScreenSpec("ranks", "R", "Ranks", "trntui.tui.screens.ranks", ready=_several_runs),
    ScreenSpec("query", "colon", "SQL query", "trntui.tui.screens.query", ready=lambda app: True),
    ScreenSpec("critical_path", "P", "Critical path", "trntui.tui.screens.critical_path", ready=lambda app: True),
]
"""Every feature screen of the explorer, in the order the footer and help list their keys."""


def screen_spec(screen_id: str) -> ScreenSpec:
    return next(s for s in SCREENS if s.id == screen_id)
